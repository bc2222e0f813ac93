//! Weighted sums in numpy's order. numpy.histogram over equal bins sums float weights per block of
//! 65536 samples (np.bincount: float64, one sample after another), casts each block's sums to the
//! weights' type and adds them in that type, block after block. With float32 weights those
//! roundings are part of the answer: f64 atomics (any order, one rounding at the end) give sums a
//! few float32 ulps away from numpy's. This mode repeats numpy's order on the GPU, bit for bit
//! (`kernels/hist_numpy_sums.cuh` says how), for uniform bins, where numpy takes that path; the
//! CPU engine sums in the same order ([`crate::histogram::cpu`]), which the GPU tests compare
//! against.
//!
//! The blocks' partial sums wait in a scratch buffer between the two kernels; inputs of more
//! blocks than it holds run in waves, each wave's chain adding onto the total of the ones before.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use super::params::{mode_name, KernelBinParams};
use super::prepared::{sample_defines, Run, WeightKind};
use crate::error::{Error, Result};
use crate::gpu::compile::HISTOGRAM;
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::Binning;
use crate::histogram::sums::{numpy_blocks_apply, NUMPY_BLOCK};
use crate::sample::SampleType;

/// Threads per block of the summing kernel (its `__launch_bounds__(1024)`); each block owns one
/// (numpy block, slice of bins) pair. Slices of up to [`SMALL_SLICE`] bins take blocks of 256, so
/// that eight run on an SM: a block whose bins need redoing waits on one warp's walk, and eight
/// walks an SM redo weights of a wide range 3.5x faster than two (bench/NOTES.md, session 29); the
/// atomics' path runs as fast either way there. Larger slices fill an SM with one block of 1024.
const THREADS_SMALL: u32 = 256;
const THREADS_LARGE: u32 = 1024;
const SMALL_SLICE: usize = 2304;
/// Most bins of one slice: 12 bytes each (a float64 sum and a float32 magnitude), 192 KiB (bins
/// beyond it are summed in more slices, each walking its numpy block again).
const SLICE_MAX: usize = 16384;
/// Most bytes of the partial sums of one wave.
const WAVE_BYTES: usize = 64 << 20;
/// Bins per block of the chaining kernel (`NP_CHAIN_COLS`).
const CHAIN_COLS: usize = 32;

/// The kernels and scratch of one histogram's sums in numpy's order.
pub(crate) struct NumpySums {
    sums: CudaFunction,
    chain: CudaFunction,
    /// `wave_blocks` rows of `nbins` partial sums of the weights' type.
    partial: CudaSlice<u8>,
    wave_blocks: usize,
    slice_bins: usize,
    nbins: usize,
}

impl NumpySums {
    /// Compiles the mode for `sample_type` samples and float `weights` over `binning` (uniform)
    /// and allocates the partial sums of runs up to `max_samples` (in waves beyond 64 MiB).
    pub(crate) fn new(
        gpu: &Arc<Gpu>,
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        max_samples: usize,
    ) -> Result<NumpySums> {
        let (wname, wsize) = match weights {
            WeightKind::F32 => ("f32", 4),
            WeightKind::F64 => ("f64", 8),
            WeightKind::None | WeightKind::I64 => {
                return Err(Error::InvalidArgument(
                    "sums in numpy's order need float weights: counts and integer sums do not \
                     depend on the order"
                        .into(),
                ))
            }
        };
        if !numpy_blocks_apply(binning) {
            return Err(Error::InvalidArgument(
                "sums in numpy's order need uniform bins (numpy adds the weights of explicit \
                 edges in sorted order, and np.bincount over the whole input)"
                    .into(),
            ));
        }
        let nbins = binning.nbins();
        let slices = nbins.div_ceil(SLICE_MAX).max(1);
        let slice_bins = nbins.div_ceil(slices).max(1);
        let row_bytes = nbins * wsize;
        let wave_blocks = max_samples
            .div_ceil(NUMPY_BLOCK)
            .clamp(1, (WAVE_BYTES / row_bytes).max(1));
        let defines = sample_defines(sample_type);
        let names = [
            format!("hist_np_sums_{}_{wname}", mode_name(binning, sample_type)),
            format!("hist_np_chain_{wname}"),
        ];
        gpu.prepare(&HISTOGRAM, &defines, &names.each_ref().map(String::as_str))?;
        let sums = gpu.function(&HISTOGRAM, &defines, &names[0])?;
        let chain = gpu.function(&HISTOGRAM, &defines, &names[1])?;
        launch::prepare_function(
            &sums,
            &LaunchShape {
                grid: 1,
                block: threads(slice_bins),
                shared_bytes: shared_bytes(slice_bins),
                cluster: 1,
            },
            gpu.limits.smem_per_block_optin,
        )?;
        // SAFETY: every partial sum a chain reads was written by the summing kernel of its wave.
        let partial = unsafe { gpu.stream.alloc::<u8>(wave_blocks * row_bytes) }
            .map_err(cuda_err("allocating the partial sums in numpy's order"))?;
        Ok(NumpySums {
            sums,
            chain,
            partial,
            wave_blocks,
            slice_bins,
            nbins,
        })
    }

    /// Enqueues `run`: adds the sums of its weights, in numpy's order, onto `out` (nbins f64,
    /// which the caller cleared, or holds an earlier run's total to continue: numpy's order
    /// where that run's length was a multiple of 65536), and the tallies onto `tallies`.
    ///
    /// # Safety
    /// `input` holds `n` samples of the compiled type and `weights` `n` weights of the compiled
    /// kind, `out` and `tallies` as above, all device memory of this context valid until `stream`
    /// has finished the run; runs sharing this scratch must not overlap.
    pub(crate) unsafe fn enqueue(&self, run: &Run<'_>, params: &KernelBinParams) -> Result<()> {
        let Run {
            stream,
            input,
            n,
            weights,
            out,
            tallies,
        } = *run;
        let partial = self.partial.device_ptr(stream).0;
        let slices = self.nbins.div_ceil(self.slice_bins);
        let total_blocks = n.div_ceil(NUMPY_BLOCK);
        let mut first = 0usize;
        while first < total_blocks {
            let blocks = self.wave_blocks.min(total_blocks - first);
            let pairs = blocks * slices;
            let shape = LaunchShape {
                grid: u32::try_from(pairs).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "{pairs} (block, slice) pairs of sums in numpy's order exceed a grid"
                    ))
                })?,
                block: threads(self.slice_bins),
                shared_bytes: shared_bytes(self.slice_bins),
                cluster: 1,
            };
            let (mut in_ptr, mut len, mut w_ptr, mut p) = (input, n as u64, weights, *params);
            let (mut first64, mut blocks64, mut slice32) =
                (first as u64, blocks as u64, self.slice_bins as u32);
            let (mut part_ptr, mut t_ptr) = (partial, tallies);
            let mut args: [*mut c_void; 9] = [
                &mut in_ptr as *mut u64 as *mut c_void,
                &mut len as *mut u64 as *mut c_void,
                &mut w_ptr as *mut u64 as *mut c_void,
                &mut p as *mut KernelBinParams as *mut c_void,
                &mut first64 as *mut u64 as *mut c_void,
                &mut blocks64 as *mut u64 as *mut c_void,
                &mut slice32 as *mut u32 as *mut c_void,
                &mut part_ptr as *mut u64 as *mut c_void,
                &mut t_ptr as *mut u64 as *mut c_void,
            ];
            // SAFETY: hist_np_sums_*(in, n, w, BinParams, first_block, blocks, slice_bins,
            // partial, tallies): the caller's buffers; `partial` holds wave_blocks >= blocks rows.
            unsafe { launch::launch(&self.sums, stream, &shape, &mut args)? };
            let cfg = LaunchConfig {
                grid_dim: (self.nbins.div_ceil(CHAIN_COLS) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let (nbins64, blocks64) = (self.nbins as u64, blocks as u64);
            let mut b = stream.launch_builder(&self.chain);
            b.arg(&partial).arg(&blocks64).arg(&nbins64).arg(&out);
            // SAFETY: hist_np_chain_*(partial, blocks, nbins, out): the wave's rows, written by
            // the launch above on this stream; `out` holds nbins f64.
            unsafe { b.launch(cfg) }.map_err(cuda_err("launching the chain of block sums"))?;
            first += blocks;
        }
        Ok(())
    }
}

/// Dynamic shared memory of the summing kernel: a float64 sum and a float32 magnitude per bin of
/// the slice, then the slice's lowest set bit (an int).
fn shared_bytes(slice_bins: usize) -> u32 {
    (slice_bins * 12 + 16) as u32
}

/// Threads per block of the summing kernel for slices of `slice_bins` (see [`THREADS_SMALL`]).
fn threads(slice_bins: usize) -> u32 {
    if slice_bins <= SMALL_SLICE {
        THREADS_SMALL
    } else {
        THREADS_LARGE
    }
}
