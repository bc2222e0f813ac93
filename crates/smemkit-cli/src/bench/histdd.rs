//! `smemkit bench --backend cuda --op histdd`: issue 24's joint histogram rows on device-resident
//! data. Three workloads: 2-D, 256 x 256 bins over [-4, 4] of 2^log2_n normal (x, y) pairs
//! (numpy's correction is needed: the bin width 1/32 is exact, but the edges compare in float64
//! against float32 samples); 3-D, 64 x 64 x 64 bins over [-4, 4] of normal triples; and the colour
//! histogram of an interleaved 8-bit RGB image of 2^log2_n pixels in 32 x 32 x 32 bins, with the
//! device copy of the image's bytes as its anchor (`copy_d2d`). The float workloads are timed as an
//! (N, D) array in C order (`rows`) and as D separate arrays (`columns`). Each strategy (the
//! planner's `auto`, then every joint strategy that holds the bins, or those `--strategies` names)
//! is timed with CUDA events around one call of `DeviceJoint::enqueue` (memsets included), the
//! median of `--runs` after warm-up, and checked against the CPU engine on the same data. Without
//! `--strategies`, `auto` is also timed with each kernel variant of `JointVariant::sweep` (rows
//! `smemkit/auto+<variant>`, their `variant` field the variant's name), so that one GPU call
//! compares them; every row names its variant.

use std::io::Write;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde_json::{json, Value};
use smemkit::cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use smemkit::internals::histogram::cuda::bench::median;
use smemkit::internals::histogramdd::cuda::{
    DeviceAxis, DeviceJoint, JointRun, JointSpec, JointVariant,
};
use smemkit::{
    bins::BinSpec,
    device::WeightKind,
    histogram::{Counts, StrategyChoice},
    histogramdd::{histogramdd, JointOptions, JointSamples},
    sample::{SampleType, Samples},
    Backend, Error,
};

use crate::bench::MIN_RUNS;
use crate::cli::BenchArgs;

/// Warm-up calls before the timed ones.
const WARMUP: usize = 3;

/// The joint strategies timed when `--strategies` names none (those that cannot hold a
/// workload's bins are skipped).
fn default_choices() -> Vec<StrategyChoice> {
    let mut v = vec![
        StrategyChoice::Auto,
        StrategyChoice::Shared,
        StrategyChoice::Packed(16),
        StrategyChoice::Packed(8),
        StrategyChoice::Packed(4),
    ];
    v.extend([2, 4, 8, 16].map(|k| StrategyChoice::Cluster(Some(k))));
    v.push(StrategyChoice::Global);
    v
}

fn choices(names: &[String]) -> Result<Vec<StrategyChoice>> {
    if names.is_empty() {
        return Ok(default_choices());
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

fn name(choice: StrategyChoice) -> String {
    match choice {
        StrategyChoice::Auto => "auto".into(),
        StrategyChoice::Shared => "shared".into(),
        StrategyChoice::Packed(b) => format!("shared{b}"),
        StrategyChoice::Cluster(Some(k)) => format!("cluster{k}"),
        StrategyChoice::Cluster(None) => "cluster".into(),
        StrategyChoice::Global => "global".into(),
        other => format!("{other:?}"),
    }
}

/// `count` standard normal float32 values, drawn in parallel from `seed` (chunks of fixed size,
/// so the values do not depend on the thread count).
pub(crate) fn normals(count: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0f32; count];
    v.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut r = Xoshiro256PlusPlus::seed_from_u64(
                seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            for x in chunk {
                *x = StandardNormal.sample(&mut r);
            }
        });
    v
}

fn bytes(count: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; count];
    v.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut r = Xoshiro256PlusPlus::seed_from_u64(
                seed ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
            );
            rand::RngCore::fill_bytes(&mut r, chunk);
        });
    v
}

/// Median milliseconds of `runs` calls of `call` after the warm-up, CUDA events around each.
fn time(
    stream: &Arc<CudaStream>,
    runs: usize,
    mut call: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let ctx = stream.context();
    let flags = Some(smemkit::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    let mut times = Vec::with_capacity(runs);
    for i in 0..WARMUP + runs {
        start.record(stream)?;
        call()?;
        end.record(stream)?;
        end.synchronize()?;
        if i >= WARMUP {
            times.push(start.elapsed_ms(&end)?);
        }
    }
    Ok(median(&times) as f64)
}

/// One workload: its samples on the device (and on the host for the reference), its axes.
struct Workload<'a> {
    op: &'static str,
    ty: SampleType,
    dims: usize,
    nbins_per_axis: usize,
    range: (f64, f64),
    n: usize,
    layout: &'static str,
    dist: &'static str,
    /// Each axis's coordinates on the device.
    axes: Vec<DeviceAxis>,
    host: JointSamples<'a>,
    extra: Value,
}

struct Bench<'a> {
    gpu: &'a Arc<smemkit::internals::gpu::Gpu>,
    stream: &'a Arc<CudaStream>,
    commit: &'a str,
    runs: usize,
    choices: &'a [StrategyChoice],
    /// Variants `auto` is timed with beside the default one.
    variants: &'a [JointVariant],
}

fn run_workload(c: &Bench<'_>, w: &Workload<'_>, out: &mut dyn Write) -> Result<()> {
    let bins = vec![
        BinSpec::Uniform {
            nbins: w.nbins_per_axis,
            range: Some(w.range),
        };
        w.dims
    ];
    let reference = histogramdd(
        &w.host,
        None,
        &JointOptions::new(bins.clone()).backend(Backend::Cpu),
    )?;
    let Counts::Unweighted(want) = &reference.counts else {
        bail!("the CPU engine returned sums for counts");
    };
    let nbins = reference.shape.iter().product::<usize>();
    let s = c.stream;
    let d_out: CudaSlice<u64> = s.alloc_zeros(nbins)?;
    let d_tallies: CudaSlice<u64> = s.alloc_zeros(3)?;
    let (o, t) = (d_out.device_ptr(s).0, d_tallies.device_ptr(s).0);
    let runs = c
        .choices
        .iter()
        .map(|&ch| (ch, None))
        .chain(c.variants.iter().map(|&v| (StrategyChoice::Auto, Some(v))));
    for (choice, variant) in runs {
        let spec = JointSpec {
            sample_type: w.ty,
            bins: bins.clone(),
            weights: WeightKind::None,
            strategy: choice,
        };
        let mut joint = DeviceJoint::new(c.gpu, &spec)?;
        if let Some(v) = variant {
            joint.set_variant(v);
        }
        match joint.plan(w.n) {
            Ok(_) => {}
            Err(Error::StrategyUnsupported { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
        let run = JointRun {
            axes: &w.axes,
            n: w.n,
            weights: 0,
            out: o,
            tallies: t,
            accumulate: false,
        };
        // SAFETY: the axes address n coordinates of device buffers alive for this function, `out`
        // nbins u64 and `tallies` 3; the stream is this context's and is synchronised below.
        let launched = match unsafe { joint.enqueue(&run, s) } {
            Ok(l) => l,
            Err(e) => {
                eprintln!("{} {:?}: {e}", w.op, choice);
                continue;
            }
        };
        s.synchronize()?;
        let got = s.clone_dtoh(&d_out)?;
        let tallies = s.clone_dtoh(&d_tallies)?;
        let correct = &got == want
            && tallies[0] == reference.tallies.outside
            && tallies[2] == reference.tallies.nan;
        // SAFETY: as above, once per timed call.
        let ms = time(s, c.runs, || {
            unsafe { joint.enqueue(&run, s) }?;
            Ok(())
        })?;
        let sample_bytes = w.n * w.dims * w.ty.size();
        let mut row = json!({
            "op": w.op,
            "impl": match variant {
                Some(v) => format!("smemkit/{}+{}", name(choice), v.name()),
                None => format!("smemkit/{}", name(choice)),
            },
            "variant": launched.variant.name(),
            "dims": w.dims,
            "nbins": nbins,
            "shape": reference.shape,
            "n": w.n,
            "ms": ms,
            "gbps": sample_bytes as f64 / (ms / 1e3) / 1e9,
            "correct": correct,
            "dtype": w.ty.name(),
            "dist": w.dist,
            "layout": w.layout,
            "range": [w.range.0, w.range.1],
            "plan": launched.tier(),
            "kernel": launched.kernel,
            "grid": launched.grid,
            "block": launched.plan.block,
            "commit": c.commit,
            "gpu": c.gpu.name,
        });
        if let (Some(r), Value::Object(extra)) = (row.as_object_mut(), &w.extra) {
            r.extend(extra.clone());
            if let Some(copy_ms) = extra.get("copy_ms").and_then(Value::as_f64) {
                r.insert("vs_copy".into(), json!(copy_ms / ms));
            }
        }
        writeln!(out, "{row}")?;
        out.flush()?;
    }
    Ok(())
}

pub fn run(args: &BenchArgs, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    if args.log2_n > 30 {
        bail!(
            "--log2-n {} is too large for --op histdd (at most 30)",
            args.log2_n
        );
    }
    let n = 1usize << args.log2_n;
    let gpu =
        smemkit::internals::gpu::gpu().context("the joint histogram benchmark needs a GPU")?;
    let stream = gpu.ctx.new_stream().context("creating a stream")?;
    let choices = choices(&args.strategies)?;
    let variants = if args.strategies.is_empty() {
        JointVariant::sweep()
    } else {
        Vec::new()
    };
    let c = Bench {
        gpu: &gpu,
        stream: &stream,
        commit,
        runs: args.runs,
        choices: &choices,
        variants: &variants,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let s = &stream;
    for (op, dims, per_axis) in [("hist2d", 2usize, 256usize), ("histdd", 3, 64)] {
        let values = normals(dims * n, args.seed);
        let d_values: CudaSlice<f32> = s.clone_htod(&values)?;
        let base = d_values.device_ptr(s).0;
        // (N, D) in C order: axis j at base + 4j, D apart.
        let rows = Workload {
            op,
            ty: SampleType::F32,
            dims,
            nbins_per_axis: per_axis,
            range: (-4.0, 4.0),
            n,
            layout: "rows",
            dist: "normal",
            axes: (0..dims)
                .map(|j| DeviceAxis {
                    ptr: base + 4 * j as u64,
                    stride: dims as u64,
                })
                .collect(),
            host: JointSamples::rows(Samples::F32(&values), dims)?,
            extra: json!({}),
        };
        run_workload(&c, &rows, &mut out)?;
        // The same values as D separate arrays (Fortran order of an (N, D) array).
        let columns = Workload {
            layout: "columns",
            axes: (0..dims)
                .map(|j| DeviceAxis {
                    ptr: base + 4 * (j * n) as u64,
                    stride: 1,
                })
                .collect(),
            host: JointSamples::columns(Samples::F32(&values), dims)?,
            ..rows
        };
        run_workload(&c, &columns, &mut out)?;
    }
    // The RGB image and the device copy of its bytes.
    let pixels = bytes(3 * n, args.seed);
    let d_pixels: CudaSlice<u8> = s.clone_htod(&pixels)?;
    let mut d_copy: CudaSlice<u8> = s.alloc_zeros(3 * n)?;
    let copy_ms = time(s, args.runs, || {
        s.memcpy_dtod(&d_pixels, &mut d_copy)?;
        Ok(())
    })?;
    let copy_bytes = 3 * n;
    writeln!(
        out,
        "{}",
        json!({
            "op": "copy_d2d",
            "impl": "cuMemcpyDtoDAsync",
            "n": copy_bytes,
            "ms": copy_ms,
            "gbps": 2.0 * copy_bytes as f64 / (copy_ms / 1e3) / 1e9,
            "gbps_read": copy_bytes as f64 / (copy_ms / 1e3) / 1e9,
            "correct": true,
            "note": "the RGB image's bytes; gbps counts read + write as shared/BENCH.md does",
            "commit": commit,
            "gpu": gpu.name,
        })
    )?;
    drop(d_copy);
    let base = d_pixels.device_ptr(s).0;
    let rgb = Workload {
        op: "histdd",
        ty: SampleType::U8,
        dims: 3,
        nbins_per_axis: 32,
        range: (0.0, 256.0),
        n,
        layout: "interleaved",
        dist: "uniform",
        axes: (0..3)
            .map(|j| DeviceAxis {
                ptr: base + j,
                stride: 3,
            })
            .collect(),
        host: JointSamples::interleaved(Samples::U8(&pixels), 3)?,
        extra: json!({ "copy_ms": copy_ms }),
    };
    run_workload(&c, &rgb, &mut out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_data_is_fixed_by_the_seed() {
        let a = normals(3 << 20, 5);
        assert_eq!(a, normals(3 << 20, 5));
        assert_ne!(a, normals(3 << 20, 6));
        let mean = a.iter().map(|&x| x as f64).sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / a.len() as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.01,
            "{mean} {var}"
        );
        let b = bytes(1 << 21, 1);
        assert_eq!(b, bytes(1 << 21, 1));
        let ones = b.iter().map(|x| x.count_ones() as u64).sum::<u64>();
        assert!((ones as f64 / (8 << 21) as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn strategy_names_round_trip() {
        let c = choices(&["auto".into(), "cluster8".into(), "shared16".into()]).unwrap();
        assert_eq!(
            c.iter().map(|&x| name(x)).collect::<Vec<_>>(),
            ["auto", "cluster8", "shared16"]
        );
        assert_eq!(default_choices().len(), 10);
    }
}
