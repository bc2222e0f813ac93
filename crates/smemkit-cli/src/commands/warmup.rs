//! `smemkit warmup`: builds ahead of time (for images and CI) the GPU kernels that the planner
//! picks for the given sample types at the standard bin counts, so that the first histogram of
//! each loads them from the cache instead of compiling them.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, WeightKind};
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::StrategyChoice,
    sample::{SampleType, Samples},
};

#[derive(Debug, Args)]
pub struct WarmupArgs {
    /// Sample types, comma-separated: u8, u16, u32, u64, i8, i16, i32, i64, f32, f64.
    #[arg(long, value_delimiter = ',', required = true)]
    pub dtype: Vec<String>,
    /// Bin counts, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "256,1000,4096,32768,131072,1048576,16777216"
    )]
    pub bins: Vec<usize>,
    /// Also the kernels of weighted histograms (float32 and float64 weights).
    #[arg(long)]
    pub weighted: bool,
}

/// One sample of type `t`: the bins below fix their ranges, so its value does not matter.
fn one_sample(t: SampleType) -> Samples<'static> {
    match t {
        SampleType::U8 => Samples::U8(&[0]),
        SampleType::U16 => Samples::U16(&[0]),
        SampleType::U32 => Samples::U32(&[0]),
        SampleType::U64 => Samples::U64(&[0]),
        SampleType::I8 => Samples::I8(&[0]),
        SampleType::I16 => Samples::I16(&[0]),
        SampleType::I32 => Samples::I32(&[0]),
        SampleType::I64 => Samples::I64(&[0]),
        SampleType::F32 => Samples::F32(&[0.0]),
        SampleType::F64 => Samples::F64(&[0.0]),
        // Counted through a table of their codes: one kernel per strategy whatever the bins.
        SampleType::F16 => Samples::F16(&[half::f16::ZERO]),
        SampleType::BF16 => Samples::BF16(&[half::bf16::ZERO]),
    }
}

/// The bins `smemkit hist` makes of `--bins N`: integer bins for integer samples, uniform bins
/// over a range (a general one, and [0, N), which float32 counts with its own kernels).
fn binnings(t: SampleType, nbins: usize) -> Result<Vec<Binning>> {
    let mut specs = vec![BinSpec::Uniform {
        nbins,
        range: Some((0.0, 1.0)),
    }];
    if t.is_float() {
        specs.push(BinSpec::Uniform {
            nbins,
            range: Some((0.0, nbins as f64)),
        });
    } else {
        specs.push(BinSpec::Integer { nbins });
    }
    // float16 cannot hold the distinct edges of many bins over a small range (numpy's uniform
    // bins are refused there), and the same table kernels serve every bin count anyway.
    let half = matches!(t, SampleType::F16 | SampleType::BF16);
    specs
        .iter()
        .map(|s| Binning::resolve(s, one_sample(t)))
        .filter(|b| !half || b.is_ok())
        .map(|b| b.map_err(Into::into))
        .collect()
}

/// Bytes of the files in `dir` (not recursive: the cache is flat).
pub fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

pub fn run(args: &WarmupArgs, out: &mut dyn Write) -> Result<()> {
    let types = args
        .dtype
        .iter()
        .map(|d| {
            d.parse::<SampleType>()
                .with_context(|| format!("--dtype {d}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let gpu = smemkit::internals::gpu::gpu().context("warmup builds kernels for a GPU")?;
    let weights: &[WeightKind] = if args.weighted {
        &[WeightKind::None, WeightKind::F32, WeightKind::F64]
    } else {
        &[WeightKind::None]
    };
    let start = Instant::now();
    let before = smemkit::internals::gpu::compile::build_stats();
    for &t in &types {
        // One line per sample type: what a process needing a new type waits for.
        let (t_start, t_before) = (
            Instant::now(),
            smemkit::internals::gpu::compile::build_stats(),
        );
        for &nbins in &args.bins {
            for binning in binnings(t, nbins)? {
                for &w in weights {
                    // As the host-slice engine builds it: planned for a large input (`None`).
                    let what = Counting {
                        sample_type: t,
                        weights: w,
                        binning: &binning,
                        policy: OutOfRange::Ignore,
                    };
                    DeviceEngine::new(&gpu, what, StrategyChoice::Auto, false, 0, None)
                        .with_context(|| format!("{t}, {nbins} bins"))?;
                }
            }
        }
        let t_after = smemkit::internals::gpu::compile::build_stats();
        writeln!(
            out,
            "{t}: {} kernels compiled, {} read from the cache, in {:.2} s",
            t_after.compiled - t_before.compiled,
            t_after.from_disk - t_before.from_disk,
            t_start.elapsed().as_secs_f64()
        )?;
    }
    let after = smemkit::internals::gpu::compile::build_stats();
    let place = match smemkit::internals::gpu::compile::disk_cache_dir() {
        Some(d) => format!(
            "cached in {} ({:.1} MB)",
            d.display(),
            folder_bytes(&d) as f64 / 1e6
        ),
        None => "not cached on disk (set SMEMKIT_CACHE_DIR)".into(),
    };
    writeln!(
        out,
        "{}: {} kernels compiled, {} read from the cache, in {:.1} s; {place}",
        gpu.name,
        after.compiled - before.compiled,
        after.from_disk - before.from_disk,
        start.elapsed().as_secs_f64()
    )?;
    Ok(())
}
