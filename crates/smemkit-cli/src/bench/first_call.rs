//! `smemkit bench --op first-call`: what a new user waits for. Runs `smemkit hist` on 10^6 samples
//! and 1000 bins in fresh child processes, per sample type, first with empty kernel caches (a new
//! `SMEMKIT_CACHE_DIR` and `CUDA_CACHE_PATH`), then with the caches that first run filled, and
//! prints one JSON line per sample type and cache state: the child's wall time, its GPU setup
//! time (from its summary) and what the caches hold.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use npyz::WriterBuilder;
use serde_json::json;

use crate::bench::rows;
use crate::cli::BenchArgs;
use crate::commands::warmup::folder_bytes;

/// Samples per input, as the issue measured.
const SAMPLES: usize = 1_000_000;
const BINS: usize = 1000;

/// Writes the input of one sample type: values spread over the bins (floats over [0, 1)).
fn write_input(path: &Path, dtype: &str) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let shape = [SAMPLES as u64];
    let spread = |i: usize| (i * 7919) % 100_000;
    match dtype {
        "u8" => {
            let mut o = npyz::WriteOptions::<u8>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut w)
                .begin_nd()?;
            o.extend((0..SAMPLES).map(|i| (spread(i) % 256) as u8))?;
            o.finish()?;
        }
        "i32" => {
            let mut o = npyz::WriteOptions::<i32>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut w)
                .begin_nd()?;
            o.extend((0..SAMPLES).map(|i| (spread(i) % BINS) as i32))?;
            o.finish()?;
        }
        "f32" => {
            let mut o = npyz::WriteOptions::<f32>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut w)
                .begin_nd()?;
            o.extend((0..SAMPLES).map(|i| spread(i) as f32 / 1e5))?;
            o.finish()?;
        }
        "f64" => {
            let mut o = npyz::WriteOptions::<f64>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut w)
                .begin_nd()?;
            o.extend((0..SAMPLES).map(|i| spread(i) as f64 / 1e5))?;
            o.finish()?;
        }
        other => bail!("--dtype {other}: the first-call benchmark takes u8, i32, f32, f64"),
    }
    w.flush()?;
    Ok(())
}

/// The GPU setup milliseconds of a `smemkit hist` summary (its `time` line), if it shows them.
fn setup_ms(summary: &str) -> Option<f64> {
    let line = summary.lines().find(|l| l.starts_with("time "))?;
    let after = line.split("GPU setup ").nth(1)?;
    after.split(" ms").next()?.trim().parse().ok()
}

/// One `smemkit hist` in a fresh process with these cache folders: its wall milliseconds and
/// summary.
fn run_child(input: &Path, dtype: &str, kernels: &Path, driver: &Path) -> Result<(f64, String)> {
    let exe = std::env::current_exe().context("finding the smemkit executable")?;
    let mut cmd = Command::new(exe);
    cmd.arg("hist")
        .arg(input)
        .args([
            "--bins",
            &BINS.to_string(),
            "--backend",
            "cuda",
            "--no-chart",
        ])
        .env(smemkit::internals::config::CACHE_DIR, kernels)
        .env("CUDA_CACHE_PATH", driver);
    if dtype.starts_with('f') {
        cmd.args(["--range", "0:1"]);
    }
    let start = Instant::now();
    let output = cmd.output().context("running smemkit hist")?;
    let wall = start.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "smemkit hist ({dtype}) failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok((wall, text))
}

pub fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    let gpu = smemkit::internals::gpu::gpu().context("the first-call benchmark needs a GPU")?;
    let stamp = rows::Stamp::new(&rows::commit(), &gpu.name);
    let dtypes: Vec<String> = if args.dtype == ["i32", "f32"] {
        // The default of --dtype: take the four instead.
        ["u8", "i32", "f32", "f64"].map(String::from).to_vec()
    } else {
        args.dtype.clone()
    };
    let scratch = tempfile::tempdir().context("creating a scratch folder")?;
    for dtype in &dtypes {
        let input = scratch.path().join(format!("{dtype}.npy"));
        write_input(&input, dtype)?;
        // Fresh, empty caches per sample type.
        let kernels = scratch.path().join(format!("kernels-{dtype}"));
        let driver = scratch.path().join(format!("driver-{dtype}"));
        std::fs::create_dir_all(&kernels)?;
        std::fs::create_dir_all(&driver)?;
        let mut row = |caches: &str, wall: f64, summary: &str| -> Result<()> {
            let line = stamp.row(json!({
                "op": "first_call",
                "impl": "smemkit/cli",
                "dtype": dtype,
                "samples": SAMPLES,
                "bins": BINS,
                "caches": caches,
                "wall_ms": wall,
                "setup_ms": setup_ms(summary),
                "kernel_cache_bytes": folder_bytes(&kernels),
                "driver_cache_bytes": dir_bytes_deep(&driver),
            }));
            rows::emit(out, &line)
        };
        let (wall, summary) = run_child(&input, dtype, &kernels, &driver)?;
        row("cold", wall, &summary)?;
        // Warm: the median of the runs (at least three).
        let mut warm = Vec::new();
        for _ in 0..args.runs.max(3) {
            warm.push(run_child(&input, dtype, &kernels, &driver)?);
        }
        warm.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (wall, summary) = &warm[warm.len() / 2];
        row("warm", *wall, summary)?;
    }
    Ok(())
}

/// Bytes under `dir`, recursively (the driver's cache has subfolders).
fn dir_bytes_deep(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes_deep(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_is_read_from_the_summary_time_line() {
        let s = "backend     cuda (x)\ntime        12.500 ms: GPU setup 10.250 ms (context, kernels compiled or loaded), transfer and kernels 2.250 ms\n";
        assert_eq!(setup_ms(s), Some(10.25));
        assert_eq!(setup_ms("time        1.000 ms\n"), None);
    }
}
