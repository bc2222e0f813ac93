//! `smemkit bench --backend cuda --op h2d|hist-stream`: what page-locked memory buys on the bus.
//!
//! - `h2d`: host-to-device copy bandwidth from pageable memory, a pinned buffer, a registered
//!   slice, and mapped memory (read by a device copy through its device address), CUDA events
//!   around each copy, every copy checked byte for byte.
//! - `hist-stream`: the streaming histogram from a pinned buffer, a registered `Vec`, a pageable
//!   `Vec`, a file in the page cache, and zero-copy from mapped memory, timed end to end by the
//!   wall clock (the CPU threads filling staging buffers are part of the work), checked against the
//!   CPU engine; each row also carries the pinned copy bandwidth measured in the same call
//!   (`pinned_copy_gbps`) and its share of it, the yardstick. `--chunk-mib` and `--depth`
//!   time every combination of chunk size and pipeline depth (rows carry `chunk_bytes` and
//!   `depth`), the measurements the library's defaults come from.
//!
//! One JSON line per row (shared/BENCH.md): `op` is `copy_h2d` or `hist_stream`, `gbps` the bytes of
//! input moved per second / 1e9.

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use smemkit::internals::gpu::host_memory::{
    time_copy, CopySource, MappedBuffer, PinnedBuffer, Registered,
};
use smemkit::internals::gpu::Gpu;
use smemkit::internals::histogram::cuda::bench::median;
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, EngineOutput, WeightKind};
use smemkit::internals::histogram::cuda::stream::{
    self, FileInput, StreamInput, StreamOptions, Streamer,
};
use smemkit::{
    bins::{Binning, OutOfRange},
    histogram::{Counts, StrategyChoice},
    sample::{SampleType, Samples},
};

use crate::bench::{rows, workload_spec, MIN_RUNS};
use crate::cli::BenchArgs;
use crate::input::generate::{generate, Dist, GenSpec};

/// Untimed runs before the timed ones.
const WARMUP: usize = 1;

pub fn run(args: &BenchArgs, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    if args.log2_n > 32 {
        bail!(
            "--log2-n {} is too large for host memory benchmarks (at most 32)",
            args.log2_n
        );
    }
    let gpu = smemkit::internals::gpu::gpu().context("the host-memory benchmark needs a GPU")?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.op.as_str() {
        "h2d" => h2d(&gpu, args, &rows::Stamp::new(commit, &gpu.name), &mut out),
        "hist-stream" => hist_stream(&gpu, args, &rows::Stamp::new(commit, &gpu.name), &mut out),
        other => bail!("--op {other}: expected h2d or hist-stream"),
    }
}

/// Bytes of int32 samples the benchmark moves: 4 << log2_n.
fn bytes_of(args: &BenchArgs) -> usize {
    4usize << args.log2_n
}

/// A row of the schema with the common keys.
fn row(
    op: &str,
    memory: &str,
    bytes: usize,
    times_ms: &[f32],
    correct: bool,
    stamp: &rows::Stamp,
) -> serde_json::Value {
    let ms = median(times_ms) as f64;
    stamp.row(json!({
        "impl": format!("smemkit/{op}-{memory}"),
        "op": op,
        "memory": memory,
        "bytes": bytes,
        "ms": ms,
        "gbps": rows::gbps(bytes, ms),
        "correct": correct,
        "runs": times_ms.len(),
    }))
}

fn pattern(bytes: usize, seed: u64) -> Vec<u8> {
    use rayon::prelude::*;
    let mut v = vec![0u8; bytes];
    v.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (i, b) in chunk.iter_mut().enumerate() {
                let x = ((c << 20) + i) as u64 ^ seed;
                *b = (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
            }
        });
    v
}

fn h2d(gpu: &Gpu, args: &BenchArgs, stamp: &rows::Stamp, out: &mut dyn Write) -> Result<()> {
    let bytes = bytes_of(args);
    let data = pattern(bytes, args.seed);
    let time = |src: CopySource<'_>| time_copy(gpu, &src, WARMUP, args.runs);
    let mut emit = |memory: &str, (times, ok): (Vec<f32>, bool), extra: serde_json::Value| {
        let r = row("copy_h2d", memory, bytes, &times, ok, stamp);
        rows::emit(out, &rows::with(r, extra))
    };
    emit("pageable", time(CopySource::Pageable(&data))?, json!({}))?;
    let t0 = Instant::now();
    let pinned = PinnedBuffer::from_slice(gpu, &data)?;
    let alloc_ms = t0.elapsed().as_secs_f64() * 1e3;
    let measured = time(CopySource::Pinned(&pinned))?;
    drop(pinned);
    emit("pinned", measured, json!({"alloc_and_fill_ms": alloc_ms}))?;
    // The same Vec, page-locked in place; registering and unregistering are timed apart.
    let t0 = Instant::now();
    let reg = Registered::new(gpu, &data)?;
    let reg_ms = t0.elapsed().as_secs_f64() * 1e3;
    let measured = time(CopySource::Registered(&reg))?;
    let t0 = Instant::now();
    drop(reg);
    let unreg_ms = t0.elapsed().as_secs_f64() * 1e3;
    emit(
        "registered",
        measured,
        json!({"register_ms": reg_ms, "unregister_ms": unreg_ms}),
    )?;
    let mapped = MappedBuffer::from_slice(gpu, &data)?;
    let measured = time(CopySource::Mapped(&mapped))?;
    emit(
        "mapped",
        measured,
        json!({"how": "device copy from the mapped address"}),
    )?;
    Ok(())
}

/// Pinned copy bandwidth in GB/s of the samples (the anchor of the hist-stream rows).
fn pinned_copy_gbps(gpu: &Gpu, data: &[i32], runs: usize) -> Result<f64> {
    let bytes = smemkit::internals::gpu::host_memory::sample_bytes(Samples::I32(data));
    let pinned = PinnedBuffer::from_slice(gpu, bytes)?;
    let (t, ok) = time_copy(gpu, &CopySource::Pinned(&pinned), WARMUP, runs)?;
    if !ok {
        bail!("the pinned anchor copy did not arrive intact");
    }
    Ok(bytes.len() as f64 / (median(&t) as f64 / 1e3) / 1e9)
}

fn hist_stream(
    gpu: &std::sync::Arc<Gpu>,
    args: &BenchArgs,
    stamp: &rows::Stamp,
    out: &mut dyn Write,
) -> Result<()> {
    gpu.bind()?;
    let n = 1usize << args.log2_n;
    let bytes = n * 4;
    let dir = smemkit::internals::config::bench_dir().unwrap_or_else(std::env::temp_dir);
    for &nbins in &args.bins {
        for dist in &args.dist {
            let dist = Dist::parse(dist)?;
            let data = generate(&GenSpec {
                dist,
                count: n,
                seed: args.seed,
                ty: SampleType::I32,
                nbins,
                lo: 0.0,
                hi: nbins as f64,
            })?;
            let crate::input::data::OwnedSamples::I32(data) = data else {
                bail!("the generator gave another type than int32");
            };
            let host = Samples::I32(&data);
            let binning = Binning::resolve(&workload_spec(SampleType::I32, nbins), host)?;
            let want = smemkit::internals::histogram::cpu::histogram(
                &data[..],
                None,
                &binning,
                OutOfRange::Ignore,
            );
            let check = |r: &EngineOutput| {
                r.tallies == want.tallies
                    && matches!((&r.counts, &want.counts), (Counts::Unweighted(a), Counts::Unweighted(b)) if a == b)
            };
            // The engine every GPU entry point runs through; sized by each run (chunks, or the
            // whole zero-copy input).
            let what = Counting {
                sample_type: SampleType::I32,
                weights: WeightKind::None,
                binning: &binning,
                policy: OutOfRange::Ignore,
            };
            let prepared = DeviceEngine::unbounded(gpu, what, StrategyChoice::Auto, None)?;
            let pinned = PinnedBuffer::from_slice(gpu, &data)?;
            let anchor = pinned_copy_gbps(gpu, &data, args.runs)?;
            // A file in the page cache: written here, so its pages are cached.
            let path = dir.join(format!("smemkit-bench-{}.i32", std::process::id()));
            let file_bytes = smemkit::internals::gpu::host_memory::sample_bytes(host);
            std::fs::write(&path, file_bytes)
                .with_context(|| format!("writing {}", path.display()))?;
            let file = FileInput::open(&path, 0, SampleType::I32, None);
            let options = pipeline_options(args)?;
            let sweeping = options.len() > 1;
            for opts in &options {
                let mut streamer =
                    Streamer::new(gpu.clone(), SampleType::I32, WeightKind::None, n, opts)?;
                let chunk = streamer.chunk_samples();
                // Wall-clock timing of whole runs; `correct` holds for every run.
                let mut timed = |memory: &str,
                                 run: &mut dyn FnMut() -> smemkit::Result<EngineOutput>|
                 -> Result<()> {
                    let mut times = Vec::with_capacity(args.runs);
                    let mut ok = true;
                    for i in 0..WARMUP + args.runs {
                        let t0 = Instant::now();
                        let r = run().with_context(|| format!("streaming from {memory}"))?;
                        let ms = t0.elapsed().as_secs_f64() * 1e3;
                        ok &= check(&r);
                        if i >= WARMUP {
                            times.push(ms as f32);
                        }
                    }
                    let r = row("hist_stream", memory, bytes, &times, ok, stamp);
                    let gbps = r["gbps"].as_f64().unwrap_or(0.0);
                    let r = rows::with(
                        r,
                        json!({
                            "dist": dist.name(),
                            "nbins": nbins,
                            "n": n,
                            "dtype": "i32",
                            "timing": "wall clock, end to end",
                            "pinned_copy_gbps": anchor,
                            "of_pinned_copy": gbps / anchor,
                            "chunk_samples": if memory == "mapped-zero-copy" { 0 } else { chunk },
                            "chunk_bytes": if memory == "mapped-zero-copy" { 0 } else { chunk * 4 },
                            "depth": opts.depth,
                            "plan": prepared.detail(),
                        }),
                    );
                    rows::emit(out, &r)
                };
                timed("pinned", &mut || {
                    streamer.run(&prepared, &StreamInput::Locked(pinned.locked()), None, None)
                })?;
                timed("pageable", &mut || {
                    streamer.run(&prepared, &StreamInput::Host(host), None, None)
                })?;
                // A sweep times the sources the pipeline's sizes matter for; the registered slice
                // behaves like the pinned buffer.
                if !sweeping {
                    let reg = Registered::new(gpu, &data)?;
                    timed("registered", &mut || {
                        streamer.run(&prepared, &StreamInput::Locked(reg.locked()), None, None)
                    })?;
                }
                let result = match &file {
                    Ok(file) => timed("file", &mut || {
                        streamer.run(&prepared, &StreamInput::File(file), None, None)
                    }),
                    Err(e) => Err(anyhow::anyhow!("opening the benchmark's file: {e}")),
                };
                if result.is_err() {
                    let _ = std::fs::remove_file(&path);
                }
                result?;
                // Zero-copy does not use the pipeline.
                if !sweeping {
                    let mapped = MappedBuffer::from_slice(gpu, &data)?;
                    timed("mapped-zero-copy", &mut || {
                        stream::run_zero_copy(&prepared, &mapped.zero_copy())
                    })?;
                }
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(())
}

/// The pipeline sizes to time: every `--chunk-mib` with every `--depth` (the library's defaults
/// for what is not given).
fn pipeline_options(args: &BenchArgs) -> Result<Vec<StreamOptions>> {
    let base = StreamOptions::default();
    if args.chunk_mib.contains(&0) {
        bail!("--chunk-mib 0: a chunk needs at least 1 MiB");
    }
    if let Some(&d) = args.depth.iter().find(|&&d| d < 2) {
        bail!("--depth {d}: the pipeline needs at least 2 chunk slots");
    }
    let chunks: Vec<usize> = if args.chunk_mib.is_empty() {
        vec![base.chunk_bytes]
    } else {
        args.chunk_mib.iter().map(|&m| m << 20).collect()
    };
    let depths = if args.depth.is_empty() {
        vec![base.depth]
    } else {
        args.depth.clone()
    };
    Ok(chunks
        .iter()
        .flat_map(|&chunk_bytes| {
            depths.iter().map(move |&depth| StreamOptions {
                chunk_bytes,
                depth,
                ..base
            })
        })
        .collect())
}
