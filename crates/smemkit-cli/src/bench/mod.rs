//! `smemkit bench --backend cpu`: the standard histogram workloads of shared/BENCH.md on the CPU
//! engine, one JSON line per workload. Every measured result is checked against a plain
//! sequential loop over `Binning::locate`, so `correct` means what the schema says.

pub mod cuda;
pub mod device;
pub mod digitize;
pub mod first_call;
pub mod half;
pub mod histdd;
pub mod multi;
pub mod ops;
pub mod plot;
pub mod rows;
pub mod sgemm;
pub mod stream;

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use smemkit::{
    bins::{BinSpec, Binning, Slot},
    histogram::{histogram, Counts, HistogramOptions, Tallies},
    sample::{SampleType, Samples},
    Backend,
};

use crate::cli::BenchArgs;
use crate::input::generate::{generate, Dist, GenSpec};

/// The smallest number of timed runs the schema accepts.
pub const MIN_RUNS: usize = 7;

pub fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    // The CLI in child processes on the GPU, whatever --backend says; its sizes are fixed.
    if args.op == "first-call" {
        return first_call::run(args, out);
    }
    check_sizes(args)?;
    match args.backend.as_str() {
        "cpu" if args.devices.is_some() => bail!("--devices applies to --backend cuda"),
        "cpu" if args.op != "hist" => bail!(
            "--op {}: the array operations are benchmarked on the GPU (--backend cuda)",
            args.op
        ),
        "cpu" => bench_cpu(args, out),
        "cuda" if args.op == "sgemm" => crate::bench::sgemm::run(args, out),
        "cuda" => crate::bench::cuda::bench_cuda(args),
        other => bail!("--backend {other}: the benchmark runs on cpu or cuda"),
    }
}

/// The binning rule of the standard workloads: integer bins for integers, uniform bins over
/// `[0, nbins)` for floats.
pub fn workload_spec(ty: SampleType, nbins: usize) -> BinSpec {
    if ty.is_float() {
        BinSpec::Uniform {
            nbins,
            range: Some((0.0, nbins as f64)),
        }
    } else {
        BinSpec::Integer { nbins }
    }
}

/// The reference: one sample at a time, in order, with the library's own binning rule.
pub fn reference(samples: Samples<'_>, binning: &Binning) -> (Vec<u64>, Tallies) {
    let mut counts = vec![0u64; binning.nbins()];
    let mut tallies = Tallies::default();
    smemkit::sample::with_samples!(samples, s => {
        for &x in s {
            match binning.locate(x) {
                Slot::Bin(i) => counts[i] += 1,
                Slot::Below => tallies.below += 1,
                Slot::Above => tallies.above += 1,
                Slot::Nan => tallies.nan += 1,
            }
        }
    });
    (counts, tallies)
}

/// The most timed runs a workload takes: the median of more would not change, and their times
/// are kept in memory.
pub const MAX_RUNS: usize = 1_000_000;

/// Refuses benchmark sizes this process cannot hold (samples, counters, timings), before any
/// data is generated.
pub fn check_sizes(args: &BenchArgs) -> Result<()> {
    if args.runs > MAX_RUNS {
        bail!(
            "--runs {} is too many (at most {MAX_RUNS}: the median does not move, and the run would take days)",
            args.runs
        );
    }
    let size = args
        .dtype
        .iter()
        .filter_map(|t| t.parse::<SampleType>().ok())
        .map(|t| t.size())
        .max()
        .unwrap_or(4) as u128;
    let nbins = args.bins.iter().copied().max().unwrap_or(0) as u128;
    let n = 1u128 << args.log2_n.min(127);
    // The samples, the reference counts and the engine's result, and the timings.
    let bytes = n * size + 2 * crate::limits::histogram_bytes(nbins) + args.runs as u128 * 8;
    crate::limits::check(
        format_args!(
            "--log2-n {} ({n} samples of {size} bytes) with --bins up to {nbins}",
            args.log2_n
        ),
        bytes,
    )
}

fn bench_cpu(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    if args.log2_n > 40 {
        bail!("--log2-n {} is too large (at most 40)", args.log2_n);
    }
    if args.bins.contains(&0) {
        bail!("--bins must be at least 1 (got 0)");
    }
    let types: Vec<SampleType> = args
        .dtype
        .iter()
        .map(|t| t.parse::<SampleType>().context("--dtype"))
        .collect::<Result<_>>()?;
    let dists: Vec<Dist> = args
        .dist
        .iter()
        .map(|d| Dist::parse(d))
        .collect::<Result<_>>()?;
    let n = 1usize << args.log2_n;
    let stamp = rows::Stamp::new(&rows::commit(), "none");
    for &ty in &types {
        for &dist in &dists {
            for &nbins in &args.bins {
                let spec = GenSpec {
                    dist,
                    count: n,
                    seed: args.seed,
                    ty,
                    nbins,
                    lo: 0.0,
                    hi: nbins as f64,
                };
                let data = generate(&spec)?;
                let samples = data.samples();
                let bins = workload_spec(ty, nbins);
                let binning = Binning::resolve(&bins, samples)?;
                let expected = reference(samples, &binning);
                let options = HistogramOptions::new(bins).backend(Backend::Cpu);
                let check = |h: &smemkit::histogram::Histogram| {
                    h.counts == Counts::Unweighted(expected.0.clone()) && h.tallies == expected.1
                };
                let warm = histogram(samples, None, &options)?;
                let mut correct = check(&warm);
                let mut times = Vec::with_capacity(args.runs);
                for _ in 0..args.runs {
                    let start = Instant::now();
                    let h = histogram(samples, None, &options)?;
                    times.push(start.elapsed().as_secs_f64());
                    correct &= check(&h);
                }
                times.sort_by(f64::total_cmp);
                let median = times[times.len() / 2];
                let row = stamp.row(json!({
                    "impl": "smemkit/cpu",
                    "op": "hist",
                    "ms": median * 1e3,
                    "gbps": rows::gbps(n * ty.size(), median * 1e3),
                    "correct": correct,
                    "dist": dist.name(),
                    "nbins": nbins,
                    "n": n,
                    "dtype": ty.name(),
                    "threads": rayon::current_num_threads(),
                }));
                rows::emit(out, &row)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_counts_by_the_rule() {
        let data = [0i32, 1, 1, 5, -1];
        let b = Binning::resolve(&BinSpec::Integer { nbins: 3 }, Samples::I32(&data)).unwrap();
        let (c, t) = reference(Samples::I32(&data), &b);
        assert_eq!(c, vec![1, 2, 0]);
        assert_eq!((t.below, t.above, t.nan), (1, 1, 0));
    }
}
