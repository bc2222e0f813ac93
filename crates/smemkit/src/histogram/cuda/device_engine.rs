//! The one launch path of a GPU histogram: what a run enqueues (the checks, clearing the output,
//! `auto`'s skew verdict, the planned kernels, or the deterministic sums) on device memory and a
//! stream, without waiting. Every entry point goes through it: the device-resident API
//! ([`super::device_histogram::DeviceHistogram`]), the host-slice engine
//! ([`super::prepared::histogram`], which copies batches in), the streamed inputs
//! ([`super::stream::Streamer`], one run per chunk) and each GPU of the multi-GPU paths
//! ([`super::multi::MultiPrepared`]). It borrows the bins when built and keeps only what the
//! kernels need, so the host path does not copy the binning (8 MB of edges at 1M bins) into every
//! call's engine.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::device_histogram::RawBuffers;
use super::exact_sums::ExactSums;
use super::prepared::{Counting, Prepared, Run, WeightKind};
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, Gpu};
use crate::histogram::plan::StrategyChoice;
use crate::sample::SampleType;

/// Whether a run lets `auto`'s skew probe choose its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probing {
    /// Where the plan has a probe and the run is long enough: the verdict (one launch) and both
    /// gated plans (the one not chosen returns at once).
    PerRun,
    /// The planned strategy whatever the data, as many launches as a plan without a probe: for
    /// the chunks of a stream, where the bus rather than the strategy bounds the time and a
    /// verdict per chunk would add a launch and a gated plan to every chunk.
    AsPlanned,
}

/// A planned, compiled histogram with its scratch, ready to enqueue runs of up to `max_samples`.
pub struct DeviceEngine {
    prepared: Prepared,
    exact: Option<ExactSums>,
    sample_type: SampleType,
    weights: WeightKind,
    max_samples: usize,
}

impl DeviceEngine {
    /// Plans and compiles `what` on `gpu` with `strategy` and allocates the scratch of runs up to
    /// `max_samples`. `plan_samples` is what the planner sizes the grid for (`None`: a large input,
    /// the persistent grid; see [`Prepared::sized`]). With `deterministic` and weights, the sums go
    /// through [`ExactSums`].
    pub fn new(
        gpu: &Arc<Gpu>,
        what: Counting<'_>,
        strategy: StrategyChoice,
        deterministic: bool,
        max_samples: usize,
        plan_samples: Option<usize>,
    ) -> Result<DeviceEngine> {
        // Integer sums do not depend on the order of the atomics: deterministic as they are.
        let exact = match (deterministic, what.weights) {
            (false, _) | (true, WeightKind::None | WeightKind::I64) => None,
            (true, w) => Some(ExactSums::new(
                gpu,
                what.sample_type,
                w,
                what.binning,
                strategy,
            )?),
        };
        // The deterministic mode takes only the binning's kernel parameters from the plan.
        let choice = if exact.is_some() {
            StrategyChoice::Global
        } else {
            strategy
        };
        let prepared = Prepared::sized(gpu.clone(), what, choice, plan_samples)?;
        prepared.reserve(max_samples)?;
        Ok(DeviceEngine {
            prepared,
            exact,
            sample_type: what.sample_type,
            weights: what.weights,
            max_samples,
        })
    }

    /// [`DeviceEngine::new`] for runs of any length, whose scratch (the partition strategy's
    /// index array) is made by the first run that needs it, on that run's stream, for its
    /// length: for the streamed and multi-GPU layers, whose chunk and shard sizes are known only
    /// when they run (reserving for a whole shard would take memory the device budget of a stream
    /// does not count).
    pub fn unbounded(
        gpu: &Arc<Gpu>,
        what: Counting<'_>,
        strategy: StrategyChoice,
        plan_samples: Option<usize>,
    ) -> Result<DeviceEngine> {
        let mut engine = Self::new(gpu, what, strategy, false, 0, plan_samples)?;
        engine.max_samples = usize::MAX;
        Ok(engine)
    }

    /// How many bins.
    pub fn nbins(&self) -> usize {
        self.prepared.nbins
    }
    /// Whether it sums weights (f64, or i64 of integer weights) rather than counting (u64).
    pub fn weighted(&self) -> bool {
        self.weights != WeightKind::None
    }
    /// The kind of weights it takes.
    pub fn weight_kind(&self) -> WeightKind {
        self.weights
    }
    /// The samples' type.
    pub fn sample_type(&self) -> SampleType {
        self.sample_type
    }
    /// The bin parameters its kernels take (the one-launch small kernels reuse them).
    pub(crate) fn kernel_params(&self) -> super::params::KernelBinParams {
        self.prepared.params
    }

    /// The GPU it runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.prepared.gpu
    }

    /// One line on the plan, for reports (reads the last skew verdict back, waiting for the GPU).
    pub fn detail(&self) -> String {
        match &self.exact {
            Some(e) => format!(
                "{}, deterministic sums in {} memory",
                self.prepared.gpu.name,
                if e.in_shared() { "shared" } else { "global" }
            ),
            None => self.prepared.detail(),
        }
    }

    /// The checks (all on the host) and the launches of one run, the skew probe included where
    /// the plan has one ([`Probing::PerRun`]). `weights` is the length and kind of the weights at
    /// `buffers.weights`, `None` without weights. Without `accumulate` the bins and tallies are
    /// cleared first (or, where the kernels write every one of them, overwritten); with it the
    /// run adds into them.
    ///
    /// # Safety
    /// Every address in `buffers` must be device memory of this GPU's context holding what
    /// [`RawBuffers`] says, and stay valid and unwritten by others until `stream` has run the
    /// launches; `stream` must be a stream of that context.
    pub unsafe fn enqueue(
        &self,
        stream: &Arc<CudaStream>,
        buffers: &RawBuffers,
        weights: Option<(usize, WeightKind)>,
        accumulate: bool,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.enqueue_with(stream, buffers, weights, accumulate, Probing::PerRun) }
    }

    /// [`DeviceEngine::enqueue`] with the skew probe's use chosen by `probing`.
    ///
    /// # Safety
    /// As [`DeviceEngine::enqueue`].
    pub unsafe fn enqueue_with(
        &self,
        stream: &Arc<CudaStream>,
        buffers: &RawBuffers,
        weights: Option<(usize, WeightKind)>,
        accumulate: bool,
        probing: Probing,
    ) -> Result<()> {
        let probe = probing == Probing::PerRun;
        let RawBuffers {
            input,
            n,
            sample_type,
            bins,
            tallies,
            ..
        } = *buffers;
        let weights = weights.map(|(len, kind)| (buffers.weights, len, kind));
        let p = &self.prepared;
        if stream.context().cu_ctx() != p.gpu.ctx.cu_ctx() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to another CUDA context than device {}'s",
                p.gpu.ordinal
            )));
        }
        if sample_type != self.sample_type {
            return Err(Error::InvalidArgument(format!(
                "this histogram was built for {} samples, the input holds {sample_type}",
                self.sample_type
            )));
        }
        if n > self.max_samples {
            return Err(Error::InvalidArgument(format!(
                "{n} samples: this histogram was built for at most {} (DeviceHistogramSpec::max_samples)",
                self.max_samples
            )));
        }
        // The kernels read samples 16 bytes at a time.
        if n > 0 && input % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "the samples start at {input:#x}, which is not 16-byte aligned (cudarc allocations and tensors at offset 0 are)"
            )));
        }
        let w_ptr = match (weights, self.weights) {
            (None, WeightKind::None) => 0,
            (Some((ptr, len, kind)), want) if kind == want => {
                if len != n {
                    return Err(Error::WeightsLength {
                        samples: n,
                        weights: len,
                    });
                }
                let size = kind.size() as u64;
                if n > 0 && ptr % size != 0 {
                    return Err(Error::InvalidArgument(format!(
                        "the weights start at {ptr:#x}, not aligned to their {size}-byte type"
                    )));
                }
                ptr
            }
            (got, want) => {
                return Err(Error::InvalidArgument(format!(
                    "this histogram was built with weights {want:?}, the run passes {:?}",
                    got.map_or(WeightKind::None, |g| g.2)
                )))
            }
        };
        p.gpu.bind()?;
        // Where the counting run writes every bin and tally itself (global-memory counts: its
        // fold writes rather than adds), nothing needs clearing: the memset (a launch) and the
        // fold's reading the bins back are saved.
        let overwrite = !accumulate && self.exact.is_none() && p.writes_every_bin(n, probe);
        if !accumulate && !overwrite {
            // SAFETY: `tallies` holds 3 u64 and `bins` nbins words (the caller's guarantee).
            unsafe { self.clear(stream, bins, tallies)? };
        }
        let run = Run {
            stream,
            input,
            n,
            weights: w_ptr,
            out: bins,
            tallies,
        };
        if let Some(exact) = &self.exact {
            // SAFETY: forwarded from the caller; the sums are written (or added), not cleared.
            return unsafe { exact.enqueue(&run, &p.params, accumulate) };
        }
        if n == 0 {
            return Ok(());
        }
        // SAFETY: forwarded from the caller; `reserve` made the partition buffers for
        // max_samples, so nothing is allocated (an unbounded engine makes them on the first run
        // that needs them); with `overwrite` the bins were not cleared and the run writes every
        // one of them.
        unsafe { p.enqueue(&run, overwrite, probe) }
    }

    /// Zeroes the bins and tallies of a run on `stream`.
    ///
    /// # Safety
    /// `tallies` must hold 3 u64 and `bins` nbins words of this context, alive until the stream
    /// has run the memsets.
    unsafe fn clear(&self, stream: &Arc<CudaStream>, bins: u64, tallies: u64) -> Result<()> {
        use cudarc::driver::result::memset_d8_async;
        use cudarc::driver::sys;
        let s = stream.cu_stream();
        // Where the output's tallies and bins lie back to back (in either order) in ONE
        // allocation: one memset (a launch less for small inputs). Two allocations may also lie
        // back to back (a stream-ordered pool hands out neighbours), and a memset may not cross
        // from one into the other: the driver says whether both are one allocation.
        let bins_bytes = self.nbins() * 8;
        let (lo, hi) = if bins < tallies {
            (bins, tallies + 24)
        } else {
            (tallies, bins + bins_bytes as u64)
        };
        let (mut base, mut size) = (0, 0usize);
        // SAFETY: plain out-parameters; an address the driver does not know is an error code.
        let one_allocation = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, lo) }
            == sys::CUresult::CUDA_SUCCESS
            && hi <= base + size as u64;
        // SAFETY: the ranges are the caller's 3 tallies and nbins words (or both at once where
        // they are one allocation, checked above).
        let cleared = unsafe {
            if one_allocation && bins == tallies + 24 {
                memset_d8_async(tallies, 0, 24 + bins_bytes, s)
            } else if one_allocation && tallies == bins + bins_bytes as u64 {
                // Tallies after the bins (the Python binding's layout: counts at the start).
                memset_d8_async(bins, 0, bins_bytes + 24, s)
            } else {
                memset_d8_async(tallies, 0, 24, s)
                    .and_then(|_| memset_d8_async(bins, 0, bins_bytes, s))
            }
        };
        cleared.map_err(cuda_err("clearing the histogram output"))
    }
}
