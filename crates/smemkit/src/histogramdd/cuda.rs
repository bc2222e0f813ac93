//! The GPU engine of joint histograms (`kernels/histdd.cu`): the samples and every axis's edges go
//! to the device, one kernel finds each sample's joint bin in registers and counts it, in a private
//! histogram per block in shared memory when the joint bins fit there, else in global memory.
//! Counts only: weighted sums stay on the CPU engine, whose sums add in numpy's order (GPU atomics
//! would add them in any order, which rounds differently).
//!
//! It does not go through the 1-D planner's strategies yet (packed counters, clusters, partition):
//! the joint bin count picks shared or global counters, nothing else.

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::error::{Error, Result};
use crate::gpu::compile::KernelSource;
use crate::gpu::device::{cuda_err, gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::cuda::prepared::sample_defines;
use crate::histogram::Counts;
use crate::sample::SampleType;

use super::axis::Axis;
use super::layout::{AxisView, Pick};
use super::tallies::JointTallies;

/// The joint histogram kernels.
pub const HISTDD: KernelSource = KernelSource {
    name: "histdd.cu",
    text: include_str!("../../kernels/histdd.cu"),
    headers: &[],
    one_kernel: false,
};

/// Axes one launch takes (`HISTDD_MAX_DIMS` in `kernels/histdd.cu`).
pub const HISTDD_MAX_DIMS: usize = 8;

/// Threads per block (the kernels' launch bounds).
const BLOCK: u32 = 512;

/// Field for field `struct Axis` of `kernels/histdd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct KernelAxis {
    base: u64,
    stride: u64,
    edges: u64,
    nbins: u32,
    has_estimate: i32,
    first: f64,
    scale: f64,
}

/// Field for field `struct Joint` of `kernels/histdd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct KernelJoint {
    axis: [KernelAxis; HISTDD_MAX_DIMS],
    n: u64,
    nbins: u64,
    dims: i32,
}

// SAFETY: plain old data with the C layout of the kernel's `Joint`; passed by value.
unsafe impl DeviceRepr for KernelJoint {}

/// What the GPU engine did, for the engine report.
pub(crate) struct GpuRun {
    pub counts: Counts,
    pub tallies: JointTallies,
    pub elapsed: Duration,
    pub detail: String,
}

/// Refuses what the GPU engine cannot do, before any device work.
pub(crate) fn check(dims: usize, weighted: bool) -> Result<()> {
    if weighted {
        return Err(Error::NotImplemented(
            "weighted joint histograms run on the CPU engine only (use the cpu or auto backend): \
             its sums add in numpy's order, GPU atomics would not"
                .into(),
        ));
    }
    if dims > HISTDD_MAX_DIMS {
        return Err(Error::InvalidArgument(format!(
            "the GPU engine of joint histograms takes up to {HISTDD_MAX_DIMS} axes (got {dims}); use the cpu backend"
        )));
    }
    Ok(())
}

/// Counts the samples seen through `views` into the joint bins of `axes` on the GPU.
pub(crate) fn run<T: Pick + DeviceRepr>(
    views: &[AxisView<'_, T>],
    axes: &[Axis],
    nbins: usize,
    n: usize,
    ty: SampleType,
) -> Result<GpuRun> {
    check(views.len(), false)?;
    let g = gpu()?;
    g.bind()?;
    if n == 0 {
        // Nothing to copy (the driver refuses empty allocations) or count.
        return Ok(GpuRun {
            counts: Counts::Unweighted(vec![0; nbins]),
            tallies: JointTallies::default(),
            elapsed: Duration::ZERO,
            detail: format!("CUDA engine on {}: no samples, nothing launched", g.name),
        });
    }
    // Each distinct slice once: the axes of an (N, D) array share one.
    let mut uploads: Vec<(*const T, usize, CudaSlice<T>)> = Vec::new();
    let mut bases = Vec::with_capacity(views.len());
    for v in views {
        let (data, start, stride) = v.parts();
        let found = uploads
            .iter()
            .position(|(p, len, _)| *p == data.as_ptr() && *len == data.len());
        let k = match found {
            Some(k) => k,
            None => {
                let d = g
                    .stream
                    .clone_htod(data)
                    .map_err(cuda_err("copying the samples"))?;
                uploads.push((data.as_ptr(), data.len(), d));
                uploads.len() - 1
            }
        };
        let ptr = uploads[k].2.device_ptr(&g.stream).0;
        bases.push((
            ptr + (start * std::mem::size_of::<T>()) as u64,
            stride as u64,
        ));
    }
    let all_edges: Vec<f64> = axes.iter().flat_map(|a| a.edges.iter().copied()).collect();
    let d_edges = g
        .stream
        .clone_htod(&all_edges)
        .map_err(cuda_err("copying the edges"))?;
    let edges_ptr = d_edges.device_ptr(&g.stream).0;
    let mut params = KernelJoint {
        n: n as u64,
        nbins: nbins as u64,
        dims: axes.len() as i32,
        ..KernelJoint::default()
    };
    let mut offset = 0u64;
    for (j, (axis, (base, stride))) in axes.iter().zip(bases).enumerate() {
        let (has_estimate, first, scale) = match axis.estimate() {
            Some((first, scale)) => (1, first, scale),
            None => (0, 0.0, 0.0),
        };
        params.axis[j] = KernelAxis {
            base,
            stride,
            edges: edges_ptr + offset * 8,
            nbins: axis.nbins() as u32,
            has_estimate,
            first,
            scale,
        };
        offset += axis.edges.len() as u64;
    }
    let counts = g
        .stream
        .alloc_zeros::<u64>(nbins)
        .map_err(cuda_err("allocating the joint counts"))?;
    let tallies = g
        .stream
        .alloc_zeros::<u64>(2)
        .map_err(cuda_err("allocating the tallies"))?;
    let shared_bytes = nbins * 4;
    let shared = shared_bytes <= g.limits.smem_per_block_optin as usize;
    let (name, shared_bytes) = if shared {
        ("histdd_shared", shared_bytes as u32)
    } else {
        ("histdd_global", 0)
    };
    let f = g.function(&HISTDD, &sample_defines(ty), name)?;
    let per_sm = if shared {
        (g.limits.smem_per_sm / shared_bytes.max(1)).clamp(1, 4)
    } else {
        4
    };
    let grid = (n as u64)
        .div_ceil(BLOCK as u64)
        .clamp(1, (g.limits.sm_count * per_sm) as u64) as u32;
    launch::prepare_function(
        &f,
        &LaunchShape {
            grid,
            block: BLOCK,
            shared_bytes,
            cluster: 1,
        },
        g.limits.smem_per_block_optin,
    )?;
    let start = Instant::now();
    {
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: shared_bytes,
        };
        let mut b = g.stream.launch_builder(&f);
        b.arg(&params).arg(&counts).arg(&tallies);
        // SAFETY: histdd_{shared,global}(Joint p, u64* out, u64* tallies): every axis's base and
        // stride address n coordinates inside a device copy of its samples, its edges nbins + 1
        // values of `d_edges`; `counts` holds the joint bins, `tallies` two counters; the shared
        // kernel gets nbins * 4 bytes of dynamic shared memory.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching the joint histogram"))?;
    }
    g.stream
        .synchronize()
        .map_err(cuda_err("running the joint histogram"))?;
    let elapsed = start.elapsed();
    let c = g
        .stream
        .clone_dtoh(&counts)
        .map_err(cuda_err("copying the joint counts back"))?;
    let t = g
        .stream
        .clone_dtoh(&tallies)
        .map_err(cuda_err("copying the tallies back"))?;
    drop(uploads);
    Ok(GpuRun {
        counts: Counts::Unweighted(c),
        tallies: JointTallies {
            outside: t[0],
            nan: t[1],
        },
        elapsed,
        detail: format!(
            "CUDA engine on {}, {} counters, grid {grid} x {BLOCK} (not yet through the 1-D planner)",
            g.name,
            if shared { "shared-memory" } else { "global-memory" }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compile::{compile_uncached, options};

    #[test]
    fn the_parameter_structs_have_the_kernels_layout() {
        // struct Axis: 3 pointers/u64, u32, int, 2 doubles; struct Joint: 8 axes, 2 u64, int.
        assert_eq!(std::mem::size_of::<KernelAxis>(), 48);
        assert_eq!(std::mem::size_of::<KernelJoint>(), 8 * 48 + 24);
    }

    #[test]
    fn weighted_and_too_many_axes_are_refused() {
        assert!(check(2, true)
            .unwrap_err()
            .to_string()
            .contains("CPU engine only"));
        assert!(check(9, false)
            .unwrap_err()
            .to_string()
            .contains("up to 8 axes"));
        assert!(check(8, false).is_ok());
    }

    /// The joint histogram kernels compile for Hopper for every sample type (NVRTC, no GPU).
    #[test]
    fn histdd_kernels_compile_for_hopper() {
        if !crate::gpu::compile::tests::toolchain() {
            return;
        }
        for t in SampleType::ALL {
            let opts = options("compute_90a", &sample_defines(t));
            let ptx = compile_uncached(&HISTDD, &opts).unwrap_or_else(|e| panic!("{t}: {e}"));
            for k in ["histdd_shared", "histdd_global"] {
                assert!(ptx.contains(&format!(".entry {k}(")), "{t}: {k} missing");
            }
        }
    }
}
