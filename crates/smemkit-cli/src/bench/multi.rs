//! `smemkit bench --backend cuda --op hist --devices all|0,1,...`: histogram throughput per GPU
//! count (1, 2, 4, ... and the whole set), weak scaling: every GPU holds 2^log2-n samples of its
//! own, drawn on it. Three inputs per count:
//!
//! - `device`: each GPU's samples where they were drawn (kernels, then the NCCL all-reduce);
//! - `pinned`: each GPU's samples in a page-locked host buffer, streamed by its pipeline;
//! - `pageable`: the same from an ordinary `Vec` (CPU threads fill the staging buffers).
//!
//! Wall-clock time from zeroed counters to the reduced counters on every GPU (all GPUs' streams
//! finished), the read-back excluded; `gbps` counts the samples of every GPU. Each count's result
//! is checked against the CPU engine's histograms of the GPUs' data, summed. One JSON line per
//! (input, count) with `devices`, `n` (all GPUs) and `n_per_gpu`.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use smemkit::internals::gpu::host_memory::PinnedBuffer;
use smemkit::internals::gpu::Gpu;
use smemkit::internals::histogram::cuda::bench::{self as dev, median, DeviceSamples, HostSamples};
use smemkit::internals::histogram::cuda::multi::{open, MultiPrepared};
use smemkit::internals::histogram::cuda::prepared::{EngineOutput, WeightKind};
use smemkit::internals::histogram::cuda::stream::{StreamInput, StreamOptions};
use smemkit::{
    bins::{Binning, OutOfRange},
    histogram::{Counts, DeviceSet, StrategyChoice, Tallies},
    sample::{SampleType, Weights},
};

use crate::bench::{rows, workload_spec, MIN_RUNS};
use crate::cli::BenchArgs;

const WARMUP: usize = 2;

/// 1, 2, 4, ... below `n`, then `n`.
pub fn counts_up_to(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |k| Some(k * 2))
        .take_while(|&k| k < n)
        .collect();
    v.push(n.max(1));
    v
}

/// Pinned host copy of one GPU's samples.
enum Pinned {
    I32(PinnedBuffer<i32>),
    U8(PinnedBuffer<u8>),
    F32(PinnedBuffer<f32>),
}

impl Pinned {
    fn of(gpu: &Gpu, h: &HostSamples) -> Result<Pinned> {
        Ok(match h {
            HostSamples::I32(v) => Pinned::I32(PinnedBuffer::from_slice(gpu, v)?),
            HostSamples::U8(v) => Pinned::U8(PinnedBuffer::from_slice(gpu, v)?),
            HostSamples::F32(v) => Pinned::F32(PinnedBuffer::from_slice(gpu, v)?),
        })
    }
    fn input(&self) -> StreamInput<'_> {
        StreamInput::Locked(match self {
            Pinned::I32(b) => b.locked(),
            Pinned::U8(b) => b.locked(),
            Pinned::F32(b) => b.locked(),
        })
    }
}

fn matches(r: &EngineOutput, counts: &[u64], tallies: &Tallies) -> bool {
    r.tallies == *tallies && matches!(&r.counts, Counts::Unweighted(c) if c == counts)
}

pub fn run(args: &BenchArgs, devices: &str, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    if args.log2_n > 32 {
        bail!(
            "--log2-n {} is too large here (at most 32 per GPU)",
            args.log2_n
        );
    }
    let set = devices.parse::<DeviceSet>().context("--devices")?;
    let ordinals = set.resolve().context("--devices")?;
    let gpus = open(&ordinals).context("opening the GPUs")?;
    let n = 1usize << args.log2_n;
    let choice = match args.strategies.as_slice() {
        [] => StrategyChoice::Auto,
        [one] => one.parse::<StrategyChoice>().context("--strategies")?,
        _ => bail!("--devices times one strategy (give at most one with --strategies)"),
    };
    let opts = StreamOptions::default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for dtype in &args.dtype {
        let ty = dtype.parse::<SampleType>().context("--dtype")?;
        for &nbins in &args.bins {
            for dist in &args.dist {
                let hot = match dist.as_str() {
                    "uniform" => 0.0,
                    "hot" => dev::BENCH_HOT_SHARE,
                    d => bail!("--dist {d}: the GPU benchmark draws uniform or hot data"),
                };
                // Every GPU draws its own samples (a different seed each); the host keeps copies
                // for the reference and the host-resident runs.
                let mut shards: Vec<DeviceSamples> = Vec::new();
                let mut hosts: Vec<HostSamples> = Vec::new();
                for (i, g) in gpus.iter().enumerate() {
                    let d = dev::generate(g, ty, n, nbins, hot, args.seed + i as u64)?;
                    hosts.push(d.to_host(g)?);
                    shards.push(d);
                }
                let binning = Binning::resolve(&workload_spec(ty, nbins), hosts[0].as_samples())?;
                // Reference per GPU, summed over the first k below.
                let refs: Vec<(Vec<u64>, Tallies)> = hosts
                    .iter()
                    .map(|h| {
                        let r = smemkit::sample::with_samples!(h.as_samples(), s =>
                            smemkit::internals::histogram::cpu::histogram(s, None, &binning, OutOfRange::Ignore));
                        match r.counts {
                            Counts::Unweighted(c) => (c, r.tallies),
                            _ => unreachable!("no weights"),
                        }
                    })
                    .collect();
                let pinned: Vec<Pinned> = gpus
                    .iter()
                    .zip(&hosts)
                    .map(|(g, h)| Pinned::of(g, h))
                    .collect::<Result<_>>()?;
                for k in counts_up_to(gpus.len()) {
                    let mut expected = vec![0u64; nbins];
                    let mut tallies = Tallies::default();
                    for (c, t) in &refs[..k] {
                        expected.iter_mut().zip(c).for_each(|(e, x)| *e += x);
                        tallies.add(t);
                    }
                    let t0 = Instant::now();
                    let mut m = MultiPrepared::new(
                        &gpus[..k],
                        ty,
                        WeightKind::None,
                        &binning,
                        OutOfRange::Ignore,
                        choice,
                    )
                    .with_context(|| format!("preparing {k} GPU(s)"))?;
                    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
                    let base = rows::Stamp::new(commit, &gpus[0].name).row(json!({
                        "op": "hist",
                        "devices": k,
                        "dist": dist,
                        "nbins": nbins,
                        "n": n * k,
                        "n_per_gpu": n,
                        "dtype": ty.name(),
                        "setup_ms": setup_ms,
                    }));
                    let mut emit = |memory: &str, times: &[f32], correct: bool, detail: String| {
                        let ms = median(times) as f64;
                        let extra = json!({
                            "impl": format!("smemkit/auto-x{k}-{memory}"),
                            "memory": memory,
                            "ms": ms,
                            "gbps": rows::gbps(n * k * ty.size(), ms),
                            "correct": correct,
                            "runs": times.len(),
                            "plan": detail,
                        });
                        rows::emit(&mut out, &rows::with(base.clone(), extra))
                    };
                    // Device-resident.
                    let refs_k: Vec<&DeviceSamples> = shards[..k].iter().collect();
                    let r = m.run_device(&refs_k)?;
                    let ok = matches(&r, &expected, &tallies);
                    let times = m.time_device(&refs_k, WARMUP, args.runs)?;
                    emit("device", &times, ok, r.detail)?;
                    // Host-resident: pinned, then pageable.
                    let no_weights: Vec<Option<Weights<'_>>> = vec![None; k];
                    let pinned_in: Vec<StreamInput<'_>> =
                        pinned[..k].iter().map(Pinned::input).collect();
                    let pageable_in: Vec<StreamInput<'_>> = hosts[..k]
                        .iter()
                        .map(|h| StreamInput::Host(h.as_samples()))
                        .collect();
                    for (memory, inputs) in [("pinned", &pinned_in), ("pageable", &pageable_in)] {
                        let mut times = Vec::with_capacity(args.runs);
                        let mut ok = true;
                        for i in 0..WARMUP + args.runs {
                            let t = Instant::now();
                            m.accumulate_inputs(inputs, &no_weights, &opts, None)?;
                            m.reduce()?;
                            let ms = t.elapsed().as_secs_f32() * 1e3;
                            if i == 0 {
                                let (c, t) = m.read()?;
                                ok &= matches(
                                    &EngineOutput {
                                        counts: c,
                                        tallies: t,
                                        detail: String::new(),
                                    },
                                    &expected,
                                    &tallies,
                                );
                            }
                            if i >= WARMUP {
                                times.push(ms);
                            }
                            // SMEMKIT_PROFILE_MULTI: this run's phases, outside the timed span.
                            m.report_profile();
                        }
                        emit(
                            memory,
                            &times,
                            ok,
                            format!("streamed; {}", m.detail(&vec![n; k])),
                        )?;
                    }
                }
                // The samples themselves are needed only for this workload.
                drop((shards, pinned));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_counts_double_then_take_the_whole_set() {
        assert_eq!(counts_up_to(1), vec![1]);
        assert_eq!(counts_up_to(2), vec![1, 2]);
        assert_eq!(counts_up_to(4), vec![1, 2, 4]);
        assert_eq!(counts_up_to(6), vec![1, 2, 4, 6]);
        assert_eq!(counts_up_to(8), vec![1, 2, 4, 8]);
    }
}
