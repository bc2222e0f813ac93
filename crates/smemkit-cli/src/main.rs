//! The `smemkit` binary: parse the command line, run one command, and turn any failure into one
//! `error:` line and a non-zero exit status.

mod bench;
mod cli;
mod commands;
mod commit;
mod compile_notice;
mod device;
mod input;
mod limits;
mod oom;
mod output;
mod sigbus;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use commands::{digitize, hist, histdd, lab, matmul, ops, plan, warmup};

#[global_allocator]
static ALLOCATOR: oom::ExitOnFailure = oom::ExitOnFailure;

fn main() -> ExitCode {
    // Our kernels reach the driver as CUBINs for the device: its own module cache would only
    // copy them (smemkit::internals::gpu::driver_cache).
    // SAFETY: first thing in main: no other thread runs yet and CUDA is not initialised.
    unsafe { smemkit::internals::gpu::driver_cache::disable_unless_needed() };
    // SMEMKIT_TRACE=1: per-phase wall milliseconds on stderr (smemkit::internals::gpu::trace).
    let epoch = smemkit::internals::gpu::trace::epoch();
    if let Some(d) = smemkit::internals::gpu::trace::enabled()
        .then(smemkit::internals::gpu::trace::since_process_start)
        .flatten()
    {
        smemkit::internals::gpu::trace::record("process start to main (10 ms resolution)", d);
    }
    let parse = smemkit::internals::gpu::trace::span("argument parsing");
    let cli = Cli::parse();
    drop(parse);
    output::partial::install_signal_cleanup();
    sigbus::install();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match &cli.command {
        Command::Hist(a) => hist::run(a, &mut out),
        Command::Hist2d(a) => histdd::run_2d(a, &mut out),
        Command::Histdd(a) => histdd::run_dd(a, &mut out),
        Command::Plan(a) => plan::run(a, &mut out),
        Command::Bench(a) => bench::run(a, &mut out),
        Command::Stencil(a) => ops::stencil(a),
        Command::Transpose(a) => ops::transpose(a),
        Command::Reverse(a) => ops::reverse(a),
        Command::Matmul(a) => matmul::run(a),
        Command::Lab(a) => lab::run(a, &mut out),
        Command::PlotBench(a) => bench::plot::run(a),
        Command::Digitize(a) => digitize::run(a, &mut out),
        Command::Warmup(a) => warmup::run(a, &mut out),
    }
    .and_then(|()| Ok(out.flush()?));
    smemkit::internals::gpu::trace::record("main, in all", epoch.elapsed());
    let failed = match result {
        Ok(()) => false,
        // A closed pipe (`smemkit hist ... | head`) is the reader's choice, not a failure.
        Err(e) if is_broken_pipe(&e) => false,
        Err(e) => {
            let _ = out.flush();
            let line = format!("{e:#}").replace('\n', " ");
            eprintln!("error: {line}");
            true
        }
    };
    drop(out);
    // One status for both ways out, so that skipping the teardown cannot change it.
    let status = u8::from(failed);
    // Setup time is counted from the first attempt to open a GPU (driver start, context): any
    // time at all means the driver's exit handlers have a context to tear down.
    if smemkit::internals::gpu::setup_time() > std::time::Duration::ZERO {
        skip_driver_teardown(status);
    }
    ExitCode::from(status)
}

/// Ends a process that opened a GPU without the CUDA driver's user-space exit handlers (its
/// context teardown, run by `exit` after `main`); the kernel driver frees the GPU's memory of an
/// ended process either way. `std::process::exit` would still run them: `_exit` does not. On the
/// H100 a process holding a primary context took 114-133 ms to exit normally and 88-104 ms with
/// `_exit`, some 20 ms of a warm call's 300 (bench/NOTES.md, "Session 13 predictions (caches)").
/// Nothing is lost: every output file was written whole and renamed into place and `main`'s
/// buffered stdout flushed and dropped before this; std's stdout and stderr are flushed here.
fn skip_driver_teardown(status: u8) -> ! {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once; nothing of this process is left to run that the
    // results depend on (outputs closed and renamed, streams flushed above).
    unsafe { libc::_exit(i32::from(status)) }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
