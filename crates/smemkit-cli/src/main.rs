//! The `smemkit` binary: parse the command line, run one command, and turn any failure into one
//! `error:` line and a non-zero exit status.

mod bench;
mod bench_cuda;
mod bench_first_call;
mod bench_multi;
mod bench_ops;
mod bench_plot;
mod bench_sgemm;
mod bench_stream;
mod cli;
mod commit;
mod compile_notice;
mod device;
mod hist;
mod input;
mod lab_cmd;
mod lab_plot;
mod matmul_cmd;
mod ops_cmd;
mod output;
mod plan_cmd;
mod warmup;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match &cli.command {
        Command::Hist(a) => hist::run(a, &mut out),
        Command::Plan(a) => plan_cmd::run(a, &mut out),
        Command::Bench(a) => bench::run(a, &mut out),
        Command::Stencil(a) => ops_cmd::stencil(a),
        Command::Transpose(a) => ops_cmd::transpose(a),
        Command::Reverse(a) => ops_cmd::reverse(a),
        Command::Matmul(a) => matmul_cmd::run(a),
        Command::Lab(a) => lab_cmd::run(a, &mut out),
        Command::PlotBench(a) => bench_plot::run(a),
        Command::Warmup(a) => warmup::run(a, &mut out),
    }
    .and_then(|()| Ok(out.flush()?));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`smemkit hist ... | head`) is the reader's choice, not a failure.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            let line = format!("{e:#}").replace('\n', " ");
            eprintln!("error: {line}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
