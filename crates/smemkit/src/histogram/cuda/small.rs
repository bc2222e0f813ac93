//! Small inputs in one launch. Below a few thousand samples a device histogram's cost is what the
//! host spends enqueueing it, and a run of [`DeviceHistogram::run_raw`] is a memset of the output
//! and the histogram's kernels; a caller that also returns numpy's edges adds a copy. The
//! `hist_small_*` kernels (`kernels/hist_small.cuh`) do all of it in one launch: each block counts
//! one slice of the bins in shared memory over the whole input and stores every bin of its slice
//! (so nothing needs clearing first), copying its share of the edges on the way. They use no
//! scratch of the histogram, so runs on different streams need no ordering between them, and they
//! write no tallies (the out-of-range policy `error`, which reads them, is not offered here).

use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::driver::{sys, CudaFunction};

use super::device_histogram::DeviceHistogram;
use super::half_table;
use super::params::{mode_name, KernelBinParams};
use super::prepared::{sample_defines, WeightKind};
use crate::error::{Error, Result};
use crate::gpu::compile::HISTOGRAM;
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::OutOfRange;
use crate::histogram::plan::StrategyChoice;

/// The most samples a small run takes: each block reads all of them.
pub const SMALL_MAX_SAMPLES: usize = 1 << 14;
/// The most bins a small run counts (slices of `SLICE_BINS`, one block each).
pub const SMALL_MAX_BINS: usize = 1 << 22;
/// The most samples a small run's blocks read together (the samples times the slices): beyond it
/// the usual launches (a memset of the counts, kernels that read each sample once) cost the GPU
/// less.
const SMALL_MAX_READS: usize = 1 << 22;
/// Bins per block: 16 KiB of u32 counters, under the default shared memory limit.
const SLICE_BINS: usize = 4096;
// A slice's counters fit the shared memory a block gets without opting in.
const _: () = assert!(SLICE_BINS * 4 <= 48 * 1024);
const BLOCK: u32 = 512;

/// The kernel of a histogram's small runs, built by [`DeviceHistogram::prepare_small`].
pub struct SmallKernel {
    func: CudaFunction,
    /// The histogram's bin parameters: their tables (explicit edges, float32 edges, 16-bit slot
    /// tables) belong to the histogram's prepared kernels, which live as long as it does.
    params: KernelBinParams,
}

/// The edges a small run copies on the device: `bytes` (a multiple of 4) from `from` to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgesCopy {
    /// Device address of the edges to copy.
    pub from: u64,
    /// Device address they go to.
    pub to: u64,
    /// How many bytes.
    pub bytes: usize,
}

/// Where the small kernels apply: counts (no weights, no deterministic sums), the planner's own
/// strategy (a forced one is launched as asked), a policy that does not read the tallies, at
/// most [`SMALL_MAX_BINS`] bins, and samples other than 16-bit floats (whose prepared slot table
/// may be the shared-memory kernel's u16 one, which the generic table lookup does not read).
fn applies(hist: &DeviceHistogram) -> bool {
    let spec = hist.spec();
    !half_table::is_half(spec.sample_type)
        && spec.weights == WeightKind::None
        && spec.strategy == StrategyChoice::Auto
        && spec.policy != OutOfRange::Error
        && (1..=SMALL_MAX_BINS).contains(&hist.nbins())
}

fn small_takes(n: usize, nbins: usize) -> bool {
    n <= SMALL_MAX_SAMPLES && n.max(1).saturating_mul(grid(nbins) as usize) <= SMALL_MAX_READS
}

/// The grid of a small run: one block per slice of the bins.
fn grid(nbins: usize) -> u32 {
    nbins.div_ceil(SLICE_BINS) as u32
}

impl DeviceHistogram {
    /// Compiles (or finds) the kernel of this histogram's small runs; false where they do not
    /// apply (weights, a forced strategy, `error`'s tallies, too many bins, 16-bit floats). Once
    /// it returned true, [`DeviceHistogram::run_small_raw`] takes the runs that
    /// [`DeviceHistogram::small_takes`] accepts. Not while a stream of the caller is being
    /// captured (it may compile and load a module).
    pub fn prepare_small(&self) -> Result<bool> {
        if !applies(self) {
            return Ok(false);
        }
        if self.small_kernel().get().is_some() {
            return Ok(true);
        }
        let t = self.spec().sample_type;
        let name = format!("hist_small_{}_none", mode_name(self.binning(), t));
        let gpu = self.gpu();
        gpu.bind()?;
        let func = gpu.function(&HISTOGRAM, &sample_defines(t), &name)?;
        let mut params = self.kernel_params();
        params.gate = 0;
        params.gate_want = 0;
        let _ = self.small_kernel().set(SmallKernel { func, params });
        Ok(true)
    }

    /// Whether [`DeviceHistogram::prepare_small`] has made the small kernel.
    pub fn small_ready(&self) -> bool {
        self.small_kernel().get().is_some()
    }

    /// Whether a small run takes `n` samples: at most [`SMALL_MAX_SAMPLES`], and few enough that
    /// every slice's block reading them all stays cheap.
    pub fn small_takes(&self, n: usize) -> bool {
        small_takes(n, self.nbins())
    }

    /// One launch on `stream` that writes all `nbins` u64 counts of the `n` samples at `input`
    /// to `counts` (nothing needs clearing first) and copies `edges` (if any). No tallies are
    /// written. Enqueues and returns, as [`DeviceHistogram::run_raw`].
    ///
    /// # Safety
    /// As [`DeviceHistogram::run_raw`]: `input` holds `n` samples of the histogram's type (16-byte
    /// aligned where `n` > 0), `counts` nbins u64 words, the edges' source and destination their
    /// bytes (4-byte aligned), all device memory of this GPU's context that stays valid until the
    /// stream has run the launch; `stream` is a live stream of that context.
    pub unsafe fn run_small_raw(
        &self,
        input: u64,
        n: usize,
        counts: u64,
        edges: Option<EdgesCopy>,
        stream: sys::CUstream,
    ) -> Result<()> {
        let Some(small) = self.small_kernel().get() else {
            return Err(Error::InvalidArgument(
                "run_small_raw before prepare_small returned true".into(),
            ));
        };
        if !small_takes(n, self.nbins()) {
            return Err(Error::InvalidArgument(format!(
                "{n} samples in {} bins: more than a small run takes (DeviceHistogram::small_takes)",
                self.nbins()
            )));
        }
        if n > 0 && input % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "the samples start at {input:#x}, which is not 16-byte aligned"
            )));
        }
        let edges = edges.unwrap_or(EdgesCopy {
            from: 0,
            to: 0,
            bytes: 0,
        });
        if edges.bytes % 4 != 0 || (edges.bytes > 0 && (edges.from | edges.to) % 4 != 0) {
            return Err(Error::InvalidArgument(format!(
                "the edges copy of {} bytes from {:#x} to {:#x} is not in aligned 32-bit words",
                edges.bytes, edges.from, edges.to
            )));
        }
        let Ok(mut edge_words) = u32::try_from(edges.bytes / 4) else {
            return Err(Error::InvalidArgument(format!(
                "{} bytes of edges: more than a small run copies",
                edges.bytes
            )));
        };
        let gpu = self.gpu();
        gpu.bind()?;
        let shape = LaunchShape {
            grid: grid(self.nbins()),
            block: BLOCK,
            shared_bytes: (SLICE_BINS.min(self.nbins()) * 4) as u32,
            cluster: 1,
        };
        // SAFETY: the stream is the caller's live stream of this context; the wrapper does not
        // own it.
        let stream = unsafe { gpu.ctx.wrap_borrowed_stream(stream) };
        let (mut in_ptr, mut n64, mut params, mut slice) =
            (input, n as u64, small.params, SLICE_BINS as u32);
        let (mut out, mut from, mut to) = (counts, edges.from, edges.to);
        let mut args: [*mut c_void; 8] = [
            &mut in_ptr as *mut u64 as *mut c_void,
            &mut n64 as *mut u64 as *mut c_void,
            &mut params as *mut KernelBinParams as *mut c_void,
            &mut slice as *mut u32 as *mut c_void,
            &mut out as *mut u64 as *mut c_void,
            &mut from as *mut u64 as *mut c_void,
            &mut to as *mut u64 as *mut c_void,
            &mut edge_words as *mut u32 as *mut c_void,
        ];
        // SAFETY: the list matches hist_small_* (in, n, BinParams, slice_bins, out, edges_src,
        // edges_dst, edge_words); the pointers are the caller's guarantee, and the parameters'
        // tables live as long as this histogram.
        unsafe { launch::launch(&small.func, &stream, &shape, &mut args) }
    }
}

/// The lazily built kernel slot of a [`DeviceHistogram`].
pub(crate) type SmallSlot = OnceLock<SmallKernel>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::bins::{BinSpec, Binning};
    use crate::histogram::cuda::kernel_builds_tests::check_one_kernel_cubin;
    use crate::sample::{SampleType, Samples};

    /// The name `prepare_small` gives the small kernel of every binning each sample type can
    /// have on the device (integer bins, uniform bins, float32's exact uniform bins, edges).
    fn small_kernel_names(t: SampleType) -> std::collections::BTreeSet<String> {
        let specs = [
            BinSpec::Integer { nbins: 1000 },
            BinSpec::Uniform {
                nbins: 1000,
                range: Some((-1.5, 7.25)),
            },
            BinSpec::Uniform {
                nbins: 1024,
                range: Some((0.0, 1024.0)),
            },
            BinSpec::Edges(vec![0.0, 0.5, 2.0]),
        ];
        let none: Samples<'_> = match t {
            SampleType::U8 => Samples::U8(&[]),
            SampleType::U16 => Samples::U16(&[]),
            SampleType::U32 => Samples::U32(&[]),
            SampleType::U64 => Samples::U64(&[]),
            SampleType::I8 => Samples::I8(&[]),
            SampleType::I16 => Samples::I16(&[]),
            SampleType::I32 => Samples::I32(&[]),
            SampleType::I64 => Samples::I64(&[]),
            SampleType::F32 => Samples::F32(&[]),
            SampleType::F64 => Samples::F64(&[]),
            SampleType::F16 => Samples::F16(&[]),
            SampleType::BF16 => Samples::BF16(&[]),
        };
        specs
            .iter()
            .filter_map(|s| Binning::resolve(s, none).ok())
            .filter(|b| crate::histogram::engine_support::cuda_gap(b, t).is_none())
            .map(|b| format!("hist_small_{}_none", mode_name(&b, t)))
            .collect()
    }

    #[test]
    fn small_kernels_compile_alone_as_cubin_for_sm_90a() {
        if !crate::gpu::compile::tests::toolchain() {
            return;
        }
        for t in SampleType::ALL {
            if half_table::is_half(t) {
                continue; // not offered (see `applies`)
            }
            let names = small_kernel_names(t);
            assert!(!names.is_empty(), "{t}: no binning");
            for name in names {
                check_one_kernel_cubin(t, &name);
            }
        }
    }

    #[test]
    fn the_grid_covers_every_bin_once() {
        for nbins in [1usize, 2, 4095, 4096, 4097, 32768, 100_000, SMALL_MAX_BINS] {
            let g = grid(nbins) as usize;
            assert!(g * SLICE_BINS >= nbins, "{nbins}");
            assert!((g - 1) * SLICE_BINS < nbins, "{nbins}");
        }
    }

    #[test]
    fn small_runs_take_few_samples_times_slices() {
        assert!(small_takes(0, 1));
        assert!(small_takes(SMALL_MAX_SAMPLES, 1000));
        assert!(!small_takes(SMALL_MAX_SAMPLES + 1, 1000));
        assert!(small_takes(SMALL_MAX_SAMPLES, 1 << 20));
        assert!(small_takes(4096, SMALL_MAX_BINS));
        assert!(!small_takes(4097, SMALL_MAX_BINS));
    }
}
