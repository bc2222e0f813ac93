//! The GPU engine of joint histograms (`kernels/histdd.cu`): one pass over the samples, each
//! sample's joint bin found in registers and counted through the 1-D strategies' counting code,
//! the tier (shared, packed, cluster, global) chosen by the planner for the joint bin count
//! ([`plan`]). [`device`] is the device-resident entry point; this module runs it on host data
//! (samples and weights copied to the device, the result copied back).
//!
//! Weighted sums are f64 atomics: they add in whatever order the threads reach them, so a sum can
//! differ from the CPU engine's (numpy's order) in its last bits, unless every partial sum is
//! exact (weights on a coarse enough binary grid).

pub mod device;
mod interior;
pub mod linear;
pub mod params;
pub mod plan;
pub mod variant;

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr};

use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, gpu};
use crate::histogram::bins::BinSpec;
use crate::histogram::cuda::prepared::WeightKind;
use crate::histogram::plan::StrategyChoice;
use crate::histogram::Counts;
use crate::sample::Weights;

use super::axis::Axis;
use super::layout::{AxisView, Pick};
use super::tallies::JointTallies;
pub use device::{
    data_range_bins, DeviceJoint, JointLaunch, JointRun, JointSpec, HISTDD, JOINT_TALLY_WORDS,
};
pub use params::{DeviceAxis, JointLayout, HISTDD_MAX_DIMS};
pub use plan::JointWindow;
pub use variant::{EdgeCheck, JointVariant, Window};

/// What the GPU engine did, for the engine report.
pub(crate) struct GpuRun {
    pub counts: Counts,
    pub tallies: JointTallies,
    pub elapsed: Duration,
    pub detail: String,
}

/// Refuses what the GPU engine cannot do, before any device work.
pub(crate) fn check(dims: usize) -> Result<()> {
    if dims > HISTDD_MAX_DIMS {
        return Err(Error::InvalidArgument(format!(
            "the GPU engine of joint histograms takes up to {HISTDD_MAX_DIMS} axes (got {dims}); use the cpu backend"
        )));
    }
    Ok(())
}

/// Counts (or sums the weights of) the samples seen through `views` into the joint bins of `axes`
/// on the GPU.
pub(crate) fn run<T: Pick + DeviceRepr>(
    views: &[AxisView<'_, T>],
    axes: &[Axis],
    nbins: usize,
    n: usize,
    weights: Option<Weights<'_>>,
    strategy: StrategyChoice,
) -> Result<GpuRun> {
    check(views.len())?;
    let g = gpu()?;
    g.bind()?;
    let weight_kind = match &weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
        Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
    };
    let spec = JointSpec {
        sample_type: T::TYPE,
        bins: axes
            .iter()
            .map(|a| BinSpec::Edges(a.edges.clone()))
            .collect(),
        weights: weight_kind,
        strategy,
    };
    let joint = DeviceJoint::with_axes(&g, spec, axes.to_vec(), nbins)?;
    let s = &g.stream;
    if n == 0 {
        return Ok(GpuRun {
            counts: if weights.is_some() {
                Counts::Weighted(vec![0.0; nbins])
            } else {
                Counts::Unweighted(vec![0; nbins])
            },
            tallies: JointTallies::default(),
            elapsed: Duration::ZERO,
            detail: format!("CUDA engine on {}: no samples, nothing launched", g.name),
        });
    }
    // Each distinct slice once: the axes of an (N, D) array share one.
    let mut uploads: Vec<(*const T, usize, CudaSlice<T>)> = Vec::new();
    let mut device_axes = Vec::with_capacity(views.len());
    for v in views {
        let (data, start, stride) = v.parts();
        let found = uploads
            .iter()
            .position(|(p, len, _)| *p == data.as_ptr() && *len == data.len());
        let k = match found {
            Some(k) => k,
            None => {
                let d = s
                    .clone_htod(data)
                    .map_err(cuda_err("copying the samples"))?;
                uploads.push((data.as_ptr(), data.len(), d));
                uploads.len() - 1
            }
        };
        let ptr = uploads[k].2.device_ptr(s).0;
        device_axes.push(DeviceAxis {
            ptr: ptr + (start * std::mem::size_of::<T>()) as u64,
            stride: stride as u64,
        });
    }
    let (_w32, _w64, wptr): (Option<CudaSlice<f32>>, Option<CudaSlice<f64>>, u64) = match weights {
        None => (None, None, 0),
        Some(Weights::F32(w)) => {
            let d = s.clone_htod(w).map_err(cuda_err("copying the weights"))?;
            let p = d.device_ptr(s).0;
            (Some(d), None, p)
        }
        Some(Weights::F64(w)) => {
            let d = s.clone_htod(w).map_err(cuda_err("copying the weights"))?;
            let p = d.device_ptr(s).0;
            (None, Some(d), p)
        }
        Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
    };
    let out = s
        .alloc_zeros::<u64>(nbins)
        .map_err(cuda_err("allocating the joint counts"))?;
    let tallies = s
        .alloc_zeros::<u64>(JOINT_TALLY_WORDS)
        .map_err(cuda_err("allocating the tallies"))?;
    s.synchronize().map_err(cuda_err("copying the samples"))?;
    let start = Instant::now();
    // SAFETY: every axis addresses n coordinates inside a device copy above (its slice's start and
    // stride), the weights n values of their kind, `out` nbins words and `tallies` three; all
    // live until the synchronisation below; the stream is the GPU's own.
    let launched = unsafe {
        joint.enqueue(
            &JointRun {
                axes: &device_axes,
                n,
                weights: wptr,
                out: out.device_ptr(s).0,
                tallies: tallies.device_ptr(s).0,
                accumulate: false,
            },
            s,
        )?
    };
    s.synchronize()
        .map_err(cuda_err("running the joint histogram"))?;
    let elapsed = start.elapsed();
    let words = s
        .clone_dtoh(&out)
        .map_err(cuda_err("copying the joint counts back"))?;
    let t = s
        .clone_dtoh(&tallies)
        .map_err(cuda_err("copying the tallies back"))?;
    drop(uploads);
    let counts = if weights.is_some() {
        Counts::Weighted(words.into_iter().map(f64::from_bits).collect())
    } else {
        Counts::Unweighted(words)
    };
    Ok(GpuRun {
        counts,
        tallies: JointTallies {
            outside: t[0],
            nan: t[2],
        },
        elapsed,
        detail: format!("CUDA engine on {}: {}", g.name, launched.describe()),
    })
}

/// The joint kernels compile for Hopper (NVRTC, no GPU), one-kernel builds as the engine loads
/// them: every strategy and layout for float32 and 8-bit samples (the tables), a spread of entry
/// points for the other sample types, weighted sums included.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compile::{compile_uncached, Build};
    use crate::histogram::cuda::prepared::sample_defines;
    use crate::sample::SampleType;

    fn build(t: SampleType, kernel: &str) {
        build_variant(t, kernel, JointVariant::LEGACY);
    }

    fn build_variant(t: SampleType, kernel: &str, v: JointVariant) {
        let mut defines = sample_defines(t);
        defines.extend(v.defines());
        let b = Build {
            src: &HISTDD,
            defines: &defines,
            kernel,
        };
        let ptx = compile_uncached(&HISTDD, &b.options("compute_90a"))
            .unwrap_or_else(|e| panic!("{t} {kernel} {}: {e}", v.name()));
        assert!(
            ptx.contains(&format!(".entry {kernel}(")),
            "{t}: {kernel} missing"
        );
    }

    #[test]
    fn histdd_kernels_compile_for_hopper() {
        if !crate::gpu::compile::tests::toolchain() {
            return;
        }
        let layouts = [
            "strided", "rows2", "rows3", "rows4", "cols2", "cols3", "cols4",
        ];
        let strategies = [
            "shared", "shared16", "shared8", "cluster", "global", "shared4", "window8", "window16",
        ];
        for (t, l) in [(SampleType::F32, "rows2"), (SampleType::U8, "rows3")] {
            for s in strategies {
                build(t, &format!("histdd_{s}_{l}_none"));
            }
        }
        for (i, l) in layouts.into_iter().enumerate() {
            build(
                SampleType::F32,
                &format!("histdd_{}_{l}_none", strategies[i % strategies.len()]),
            );
        }
        for (i, t) in SampleType::ALL.into_iter().enumerate() {
            if matches!(t, SampleType::F16 | SampleType::BF16) {
                continue;
            }
            build(t, &format!("histdd_shared_{}_none", layouts[i % 7]));
            build(t, &format!("histdd_cluster_{}_f64", layouts[(i + 3) % 7]));
            build(t, &format!("histdd_global_{}_f32", layouts[(i + 5) % 7]));
        }
    }

    /// Every variant the benchmark sweeps builds, for the 2-D and 3-D float32 workloads' kernels
    /// (rows and columns, packed, window and global counters), 8-bit samples and weighted sums.
    #[test]
    fn histdd_variants_compile_for_hopper() {
        if !crate::gpu::compile::tests::toolchain() {
            return;
        }
        for (i, v) in JointVariant::sweep().into_iter().enumerate() {
            let l = ["rows2", "cols2", "rows3", "cols3"][i % 4];
            build_variant(SampleType::F32, &format!("histdd_shared16_{l}_none"), v);
            build_variant(SampleType::F32, "histdd_window8_cols3_none", v);
        }
        let d = JointVariant::DEFAULT;
        for k in [
            "histdd_shared4_rows3_none",
            "histdd_window16_rows3_none",
            "histdd_global_rows2_f32",
            "histdd_shared_strided_f64",
            "histdd_cluster_cols2_none",
        ] {
            build_variant(SampleType::F32, k, d);
        }
        build_variant(SampleType::U8, "histdd_window8_rows3_none", d);
        build_variant(SampleType::F64, "histdd_shared8_cols2_none", d);
    }
}
