//! `smemkit bench --backend cuda`: the standard histogram workloads of shared/BENCH.md on the GPU.
//! The data is drawn on the device, every strategy that can hold the bins is timed (forced, plus the
//! planner's `auto`, each as planned and with warp aggregation flipped), and every result is checked against
//! the CPU engine on a copy of the same data before its line is printed. `--dist normal` is issue
//! 23's realistic float workload instead: standard normal float32 samples (drawn on the host,
//! copied to the device before timing) in bins over [-4, 4].

use anyhow::{bail, Context, Result};
use serde_json::json;
use smemkit::internals::histogram::cuda::bench::{self as dev, median};
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, WeightKind};
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::{Counts, StrategyChoice},
    sample::SampleType,
    Error,
};

use crate::bench::{rows, workload_spec, MIN_RUNS};
use crate::cli::BenchArgs;

/// Warm-up runs before the timed ones.
const WARMUP: usize = 3;

/// Every strategy worth timing for a bin count: the planner's, shared, each cluster size, global.
fn all_choices() -> Vec<StrategyChoice> {
    let mut v = vec![
        StrategyChoice::Auto,
        StrategyChoice::Shared,
        StrategyChoice::Packed(16),
        StrategyChoice::Packed(8),
    ];
    v.extend([2, 4, 8, 16].map(|k| StrategyChoice::Cluster(Some(k))));
    v.push(StrategyChoice::Global);
    v.push(StrategyChoice::Partition);
    v.push(StrategyChoice::Exchange {
        bits: None,
        size: None,
    });
    v.push(StrategyChoice::ClusterPacked {
        bits: None,
        size: None,
    });
    v.push(StrategyChoice::Packed(4));
    for bits in [8, 4] {
        v.push(StrategyChoice::Sliced {
            bits: Some(bits),
            slices: None,
        });
    }
    v.push(StrategyChoice::Spill(Some(8)));
    v.push(StrategyChoice::Spill(Some(4)));
    v
}

/// Whether a strategy of the default set is worth a row at `nbins`: 4-bit counters in one block
/// and clusterpacked only beyond what 8-bit counters in one block hold (4-bit ones wrap every 16
/// counts, for nothing below that), and
/// `sliced` (the fewest slices) only beyond what one block of its counters holds (below that it is
/// `shared8` / `shared4` with a slice test per sample) and up to 2^22 bins (every slice reads the
/// whole input, so beyond that it only slows down).
fn worth_timing(choice: StrategyChoice, nbins: usize, gpu: &smemkit::internals::gpu::Gpu) -> bool {
    let one_block =
        |bits| smemkit::internals::histogram::plan::packed_max_bins_per_block(&gpu.limits, bits);
    match choice {
        StrategyChoice::Packed(4) => nbins > one_block(8),
        // Bins split over a cluster only pay where one block holds no 8-bit counters of them all.
        StrategyChoice::ClusterPacked { .. } => nbins > one_block(8),
        StrategyChoice::Sliced {
            bits: Some(bits),
            slices: None,
        } => nbins > one_block(bits) && nbins <= 1 << 22,
        // Below one block's 8-bit counters spill is shared8 with a window test per sample.
        StrategyChoice::Spill(_) => nbins > one_block(8) && nbins <= 1 << 22,
        _ => true,
    }
}

/// The strategies named by `--strategies` (all when none is named).
fn choices(names: &[String]) -> Result<Vec<StrategyChoice>> {
    if names.is_empty() {
        return Ok(all_choices());
    }
    names
        .iter()
        .map(
            |name| match name.strip_prefix("cluster").map(str::parse::<u32>) {
                Some(Ok(k)) => Ok(StrategyChoice::Cluster(Some(k))),
                _ => name
                    .parse::<StrategyChoice>()
                    .with_context(|| format!("--strategies {name}")),
            },
        )
        .collect()
}

/// The range of `--dist normal`'s bins: about all of a standard normal.
const NORMAL_RANGE: (f64, f64) = (-4.0, 4.0);

/// The device data and bins of one `--dist`: the generator's uniform or hot samples in the
/// standard workload's bins, or standard normal float32 samples in bins over [`NORMAL_RANGE`].
fn workload(
    gpu: &std::sync::Arc<smemkit::internals::gpu::Gpu>,
    ty: SampleType,
    n: usize,
    nbins: usize,
    dist: &str,
    seed: u64,
) -> Result<(dev::DeviceSamples, BinSpec)> {
    if dist != "normal" {
        let data = dev::generate(gpu, ty, n, nbins, hot_share(dist)?, seed)?;
        return Ok((data, workload_spec(ty, nbins)));
    }
    if ty != SampleType::F32 {
        bail!("--dist normal draws float32 samples: use --dtype f32 (not {ty})");
    }
    let values = crate::bench::histdd::normals(n, seed);
    let data = dev::DeviceSamples::upload(gpu, smemkit::sample::Samples::F32(&values))?;
    let spec = BinSpec::Uniform {
        nbins,
        range: Some(NORMAL_RANGE),
    };
    Ok((data, spec))
}

/// Powers of two and the 1.5x steps between them, from 2 to 2^24 bins.
/// The share of samples in the hot bin that `--dist` names: `uniform` 0, `hot` shared/BENCH.md's 7/8,
/// `hot:F` any fraction F in [0, 1] (a skew sweep for the planner's crossovers; GPU only).
fn hot_share(dist: &str) -> Result<f64> {
    Ok(match dist {
        "uniform" => 0.0,
        "hot" => dev::BENCH_HOT_SHARE,
        d => match d.strip_prefix("hot:").map(str::parse::<f64>) {
            Some(Ok(f)) if (0.0..=1.0).contains(&f) => f,
            _ => bail!(
                "--dist {d}: the GPU benchmark draws uniform, hot or hot:F data (F a fraction in [0, 1]), \
                 or normal float32 samples"
            ),
        },
    })
}

pub fn sweep_bins() -> Vec<usize> {
    let mut v = Vec::new();
    for k in 1..=24 {
        v.push(1usize << k);
        if k < 24 {
            v.push(3usize << (k - 1));
        }
    }
    v
}

fn short_name(t: SampleType) -> &'static str {
    match t {
        SampleType::I32 => "i32",
        SampleType::F32 => "f32",
        SampleType::U8 => "u8",
        _ => t.name(),
    }
}

/// The commit measured: `SMEMKIT_COMMIT` when set (the device machine has the tree without git).
fn commit() -> String {
    crate::bench::rows::commit()
}

pub fn bench_cuda(args: &BenchArgs) -> Result<()> {
    if let Some(devices) = &args.devices {
        if args.op != "hist" {
            bail!("--devices applies to --op hist");
        }
        return crate::bench::multi::run(args, devices, &commit());
    }
    if args.op == "hist-device" {
        return crate::bench::device::run(args, &commit());
    }
    if args.op == "histdd" {
        return crate::bench::histdd::run(args, &commit());
    }
    if args.op == "hist-half" {
        return crate::bench::half::run(args, &commit());
    }
    if args.op == "digitize" {
        return crate::bench::digitize::run(args, &commit());
    }
    if matches!(args.op.as_str(), "h2d" | "hist-stream") {
        return crate::bench::stream::run(args, &commit());
    }
    if args.op != "hist" {
        return crate::bench::ops::bench_ops(args, &commit());
    }
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    let gpu = smemkit::internals::gpu::gpu().context("the CUDA benchmark needs a GPU")?;
    let n = 1usize
        .checked_shl(args.log2_n)
        .filter(|_| args.log2_n <= 34)
        .context("--log2-n must be at most 34")?;
    let stamp = rows::Stamp::new(&commit(), &gpu.name);
    let strategies = choices(&args.strategies)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for dtype in &args.dtype {
        let ty = dtype.parse::<SampleType>().context("--dtype")?;
        let bins = if args.sweep {
            sweep_bins()
        } else {
            args.bins.clone()
        };
        for &nbins in &bins {
            for dist in &args.dist {
                let (data, spec) = workload(&gpu, ty, n, nbins, dist, args.seed)?;
                let host = data.to_host(&gpu)?;
                let binning = Binning::resolve(&spec, host.as_samples())?;
                let reference = smemkit::sample::with_samples!(host.as_samples(), s =>
                    smemkit::internals::histogram::cpu::histogram(s, None, &binning, OutOfRange::Ignore));
                drop(host);
                for &choice in &strategies {
                    if args.strategies.is_empty() && !worth_timing(choice, nbins, &gpu) {
                        continue;
                    }
                    for flipped in [false, true] {
                        if flipped && !args.flip_aggregation {
                            continue;
                        }
                        // Planned for a large input (`None`), as the host-slice engine plans.
                        let mut engine = match DeviceEngine::new(
                            &gpu,
                            Counting {
                                sample_type: ty,
                                weights: WeightKind::None,
                                binning: &binning,
                                policy: OutOfRange::Ignore,
                            },
                            choice,
                            false,
                            n,
                            None,
                        ) {
                            Ok(p) => p,
                            Err(Error::StrategyUnsupported { .. }) => continue,
                            Err(e) => {
                                return Err(e).context(format!("{choice:?} for {nbins} bins"))
                            }
                        };
                        // The strategy's own choice first, then the other way (kept measurable).
                        if flipped {
                            engine.flip_aggregation()?;
                        }
                        // A strategy that fails is reported and skipped: the other rows still count.
                        let measured = dev::run_once(&engine, &data)
                            .and_then(|r| Ok((r, dev::time(&engine, &data, WARMUP, args.runs)?)));
                        let (result, times) = match measured {
                            Ok(m) => m,
                            Err(e) => {
                                eprintln!("{choice:?} on {nbins} bins ({dist}): {e}");
                                continue;
                            }
                        };
                        let correct = result.tallies == reference.tallies
                            && matches!((&result.counts, &reference.counts), (Counts::Unweighted(a), Counts::Unweighted(b)) if a == b);
                        let ms = median(&times) as f64;
                        let name = match (choice, engine.plan()) {
                            (StrategyChoice::Auto, _) | (_, None) => "auto".to_string(),
                            (_, Some(plan)) => plan.strategy.name(),
                        };
                        let suffix = match (flipped, engine.aggregates()) {
                            (false, _) => "",
                            (true, true) => "-agg",
                            (true, false) => "-noagg",
                        };
                        let row = stamp.row(json!({
                            "impl": format!("smemkit/{name}{suffix}"),
                            "op": "hist",
                            "ms": ms,
                            "gbps": rows::gbps(n * ty.size(), ms),
                            "correct": correct,
                            "dist": dist,
                            "nbins": nbins,
                            "n": n,
                            "dtype": short_name(ty),
                            "plan": engine.detail(),
                        }));
                        rows::emit(&mut out, &row)?;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_shares_parse() {
        assert_eq!(hot_share("uniform").unwrap(), 0.0);
        assert_eq!(hot_share("hot").unwrap(), 0.875);
        assert_eq!(hot_share("hot:0.95").unwrap(), 0.95);
        assert_eq!(hot_share("hot:1").unwrap(), 1.0);
        for bad in ["hot:1.5", "hot:-0.1", "hot:x", "hot:", "zipf", "hot:NaN"] {
            assert!(hot_share(bad).is_err(), "{bad}");
        }
    }
}
