//! `smemkit bench --backend cuda --op hist-half`: float16 and bfloat16 histograms of normal
//! samples (what torch users histogram: activations, for quantization) already on the GPU, against
//! a device-to-device copy of the same bytes (issue 23's target: at least 90 % of the copy's
//! speed from 256 to 4096 bins). Bins are uniform over [-4, 4] where numpy's rule gives distinct
//! edges in the samples' precision (float16 cannot beyond 4096 bins: those rows use the same bins
//! as explicit float64 edges). Every row's result is checked against the CPU engine first.

use anyhow::{bail, Context, Result};
use rand::SeedableRng;
use rand_distr::Distribution;
use rayon::prelude::*;
use serde_json::json;
use smemkit::internals::histogram::cuda::bench::{self as dev, median, DeviceSamples};
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, WeightKind};
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::{Counts, StrategyChoice},
    sample::{SampleType, Samples},
    Error,
};

use crate::bench::{rows, MIN_RUNS};
use crate::cli::BenchArgs;

/// Warm-up runs before the timed ones.
const WARMUP: usize = 3;
/// The range of the bins: about all of a standard normal.
const RANGE: (f64, f64) = (-4.0, 4.0);

/// `n` standard normal samples as 16-bit codes of `t` (the same seed gives the same codes).
fn normal_codes(t: SampleType, n: usize, seed: u64) -> Vec<u16> {
    const CHUNK: usize = 1 << 20;
    let mut codes = vec![0u16; n];
    codes
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(
                seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            let normal = rand_distr::StandardNormal;
            for c in chunk {
                let x: f32 = normal.sample(&mut r);
                *c = match t {
                    SampleType::F16 => half::f16::from_f32(x).to_bits(),
                    _ => half::bf16::from_f32(x).to_bits(),
                };
            }
        });
    codes
}

fn as_samples(t: SampleType, codes: &[u16]) -> Samples<'_> {
    use half::slice::HalfBitsSliceExt;
    match t {
        SampleType::F16 => Samples::F16(codes.reinterpret_cast()),
        _ => Samples::BF16(codes.reinterpret_cast()),
    }
}

/// Uniform bins over [`RANGE`], or the same bins as explicit edges where the samples' precision
/// cannot hold them as numpy's uniform bins; with the name of the form used.
fn bins_for(t: SampleType, nbins: usize, samples: Samples<'_>) -> Result<(Binning, &'static str)> {
    let uniform = BinSpec::Uniform {
        nbins,
        range: Some(RANGE),
    };
    if let Ok(b) = Binning::resolve(&uniform, samples) {
        return Ok((b, "uniform"));
    }
    let step = (RANGE.1 - RANGE.0) / nbins as f64;
    let edges = (0..=nbins).map(|i| RANGE.0 + i as f64 * step).collect();
    let b = Binning::resolve(&BinSpec::Edges(edges), samples)
        .with_context(|| format!("{nbins} bins of {t}"))?;
    Ok((b, "edges"))
}

pub fn run(args: &BenchArgs, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    if args.log2_n > 31 {
        bail!(
            "--log2-n {}: the float16 benchmark draws at most 2^31 samples",
            args.log2_n
        );
    }
    let types = args
        .dtype
        .iter()
        .map(|d| d.parse::<SampleType>().context("--dtype"))
        .collect::<Result<Vec<_>>>()?;
    if let Some(t) = types
        .iter()
        .find(|t| !matches!(t, SampleType::F16 | SampleType::BF16))
    {
        bail!("--op hist-half histograms f16 and bf16 samples (--dtype f16,bf16), not {t}");
    }
    let gpu = smemkit::internals::gpu::gpu().context("the float16 benchmark needs a GPU")?;
    let n = 1usize << args.log2_n;
    let bytes = n * 2;
    let copy_ms = median(&dev::time_device_copy(&gpu, bytes, WARMUP, args.runs)?) as f64;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let stamp = rows::Stamp::new(commit, &gpu.name);
    let base = |dtype: SampleType| {
        stamp.row(json!({
            "op": "hist-half",
            "dtype": dtype.name(),
            "dist": "normal",
            "n": n,
        }))
    };
    let row = json!({
        "impl": "device-copy",
        "dtype": "2-byte",
        "ms": copy_ms,
        "gbps": rows::gbps(bytes, copy_ms),
        "correct": true,
    });
    rows::emit(&mut out, &rows::with(base(SampleType::BF16), row))?;
    for &t in &types {
        let codes = normal_codes(t, n, args.seed);
        let data = DeviceSamples::upload(&gpu, as_samples(t, &codes))?;
        for &nbins in &args.bins {
            let (binning, form) = bins_for(t, nbins, as_samples(t, &codes))?;
            let reference = smemkit::histogram::histogram(
                as_samples(t, &codes),
                None,
                &smemkit::histogram::HistogramOptions::new(match &binning {
                    Binning::Edges(e) => BinSpec::Edges(e.clone()),
                    _ => BinSpec::Uniform {
                        nbins,
                        range: Some(RANGE),
                    },
                })
                .backend(smemkit::Backend::Cpu),
            )?;
            for choice in [
                StrategyChoice::Auto,
                StrategyChoice::Shared,
                StrategyChoice::Packed(16),
                StrategyChoice::Global,
            ] {
                let engine = match DeviceEngine::new(
                    &gpu,
                    Counting {
                        sample_type: t,
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
                    Err(e) => return Err(e).context(format!("{choice:?} for {nbins} bins")),
                };
                let measured = dev::run_once(&engine, &data)
                    .and_then(|r| Ok((r, dev::time(&engine, &data, WARMUP, args.runs)?)));
                let (result, times) = match measured {
                    Ok(m) => m,
                    Err(e) => {
                        eprintln!("{t} {choice:?} on {nbins} bins: {e}");
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
                let row = json!({
                    "impl": format!("smemkit/{name}"),
                    "nbins": nbins,
                    "bins": form,
                    "ms": ms,
                    "gbps": rows::gbps(bytes, ms),
                    "of_copy": copy_ms / ms,
                    "correct": correct,
                    "plan": engine.detail(),
                });
                rows::emit(&mut out, &rows::with(base(t), row))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_falls_back_to_edges_where_its_uniform_bins_collapse() {
        let codes = normal_codes(SampleType::F16, 1000, 3);
        let f16 = as_samples(SampleType::F16, &codes);
        // Every edge of 4096 bins over [-4, 4] is a multiple of 2^-9: a float16 in [2, 4).
        assert_eq!(bins_for(SampleType::F16, 4096, f16).unwrap().1, "uniform");
        let (b, form) = bins_for(SampleType::F16, 8192, f16).unwrap();
        assert_eq!((form, b.nbins()), ("edges", 8192));
        let bf16 = as_samples(SampleType::BF16, &codes);
        assert_eq!(bins_for(SampleType::BF16, 4096, bf16).unwrap().1, "uniform");
        // Normal samples: most within [-4, 4], and the same seed gives the same codes.
        assert_eq!(codes, normal_codes(SampleType::F16, 1000, 3));
        let inside = codes
            .iter()
            .filter(|&&c| half::f16::from_bits(c).to_f32().abs() < 4.0)
            .count();
        assert!(inside > 990, "{inside}");
    }
}
