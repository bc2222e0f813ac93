//! The one launch path of a GPU histogram: what a run enqueues (the checks, clearing the output,
//! `auto`'s skew verdict, the planned kernels, or the deterministic sums) on device memory and a
//! stream, without waiting. Every entry point goes through it: the device-resident API
//! ([`super::device_histogram::DeviceHistogram`]), the host-slice engine
//! ([`super::prepared::histogram`], which copies batches in), the streamed inputs
//! ([`super::stream::Streamer`], one run per chunk) and each GPU of the multi-GPU paths
//! ([`super::multi::MultiPrepared`]), the kernel benchmark ([`super::bench`]), and, in its window
//! mode ([`DeviceEngine::window`]), the passes of bins sharded over ranks (`super::sharded`),
//! which count one window of the bins at a time. It borrows the bins when built and keeps only
//! what the kernels need, so the host path does not copy the binning (8 MB of edges at 1M bins)
//! into every call's engine.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::device_histogram::RawBuffers;
use super::exact_sums::ExactSums;
use super::numpy_sums::NumpySums;
use super::prepared::{Counting, Prepared, Run, WeightKind};
use super::window::WindowCounter;
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, Gpu};
use crate::histogram::plan::{Plan, StrategyChoice};
pub use crate::histogram::sums::WeightSums;
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

/// The sums a planned engine launches instead of its strategy's kernels.
enum OwnSums {
    Exact(ExactSums),
    Numpy(NumpySums),
}

/// What an engine launches.
enum Kernels {
    /// The planned strategy over every bin (or, with `sums`, the deterministic sums or numpy's
    /// order).
    Planned {
        prepared: Box<Prepared>,
        sums: Option<OwnSums>,
    },
    /// One window of the bins per run, counters in global memory: no plan, no limit on the bins
    /// beyond the window's length.
    Window(Box<WindowCounter>),
}

/// A planned, compiled histogram with its scratch, ready to enqueue runs of up to `max_samples`.
pub struct DeviceEngine {
    kernels: Kernels,
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
        let sums = if deterministic {
            WeightSums::Deterministic
        } else {
            WeightSums::Fast
        };
        Self::with_sums(gpu, what, strategy, sums, max_samples, plan_samples)
    }

    /// [`DeviceEngine::new`] with float weights added as `sums` says.
    pub fn with_sums(
        gpu: &Arc<Gpu>,
        what: Counting<'_>,
        strategy: StrategyChoice,
        sums: WeightSums,
        max_samples: usize,
        plan_samples: Option<usize>,
    ) -> Result<DeviceEngine> {
        // Integer sums do not depend on the order of the atomics: deterministic as they are.
        let own = match (sums, what.weights) {
            (WeightSums::Fast, _) | (_, WeightKind::None | WeightKind::I64) => None,
            (WeightSums::Deterministic, w) => Some(OwnSums::Exact(ExactSums::new(
                gpu,
                what.sample_type,
                w,
                what.binning,
                strategy,
            )?)),
            (WeightSums::Numpy, _) if strategy != StrategyChoice::Auto => {
                return Err(Error::InvalidArgument(format!(
                    "weights summed in numpy's order run kernels of their own: no strategy \
                     ({strategy:?}) can be forced with them"
                )))
            }
            (WeightSums::Numpy, w) => Some(OwnSums::Numpy(NumpySums::new(
                gpu,
                what.sample_type,
                w,
                what.binning,
                max_samples,
            )?)),
        };
        // The own sums take only the binning's kernel parameters from the plan.
        let choice = if own.is_some() {
            StrategyChoice::Global
        } else {
            strategy
        };
        let prepared = Prepared::sized(gpu.clone(), what, choice, plan_samples)?;
        prepared.reserve(max_samples)?;
        Ok(DeviceEngine {
            kernels: Kernels::Planned {
                prepared: Box::new(prepared),
                sums: own,
            },
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

    /// The window mode: an engine whose runs ([`DeviceEngine::enqueue_window`]) count the
    /// samples falling in one window of the bins into that window's counters (global memory,
    /// u64 counts or f64 sums), for bins sharded over ranks; runs of any length. Its kernel is
    /// compiled for `what` alone: no plan, so bins too many for one GPU's counters are fine.
    pub fn window(gpu: &Arc<Gpu>, what: Counting<'_>) -> Result<DeviceEngine> {
        Ok(DeviceEngine {
            kernels: Kernels::Window(Box::new(WindowCounter::new(gpu, what)?)),
            sample_type: what.sample_type,
            weights: what.weights,
            max_samples: usize::MAX,
        })
    }

    /// How many bins.
    pub fn nbins(&self) -> usize {
        match &self.kernels {
            Kernels::Planned { prepared, .. } => prepared.nbins,
            Kernels::Window(w) => w.nbins(),
        }
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
        match &self.kernels {
            Kernels::Planned { prepared, .. } => prepared.params,
            Kernels::Window(w) => w.params(),
        }
    }

    /// The GPU it runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        match &self.kernels {
            Kernels::Planned { prepared, .. } => &prepared.gpu,
            Kernels::Window(w) => w.gpu(),
        }
    }

    /// The plan its runs launch (`None` in the window mode, which has none).
    pub fn plan(&self) -> Option<&Plan> {
        match &self.kernels {
            Kernels::Planned { prepared, .. } => Some(&prepared.plan),
            Kernels::Window(_) => None,
        }
    }

    /// Whether the planned kernel aggregates equal bins within a warp before its atomics.
    pub fn aggregates(&self) -> bool {
        matches!(&self.kernels, Kernels::Planned { prepared, .. } if prepared.params.aggregate != 0)
    }

    /// Benchmarks only: turns the planned kernel's warp aggregation the other way (the gated
    /// global plan of `auto`'s skew verdict keeps its own), so that both ways stay measurable.
    pub fn flip_aggregation(&mut self) -> Result<()> {
        match &mut self.kernels {
            Kernels::Planned { prepared, .. } => {
                prepared.params.aggregate ^= 1;
                Ok(())
            }
            Kernels::Window(_) => Err(Error::InvalidArgument(
                "the window kernels never aggregate (their bins are too wide for the warp key)"
                    .into(),
            )),
        }
    }

    /// One line on the plan, for reports (reads the last skew verdict back, waiting for the GPU).
    pub fn detail(&self) -> String {
        match &self.kernels {
            Kernels::Planned {
                prepared,
                sums: Some(OwnSums::Exact(e)),
            } => format!(
                "{}, deterministic sums in {} memory",
                prepared.gpu.name,
                if e.in_shared() { "shared" } else { "global" }
            ),
            Kernels::Planned {
                prepared,
                sums: Some(OwnSums::Numpy(_)),
            } => format!("{}, sums in numpy's order", prepared.gpu.name),
            Kernels::Planned { prepared, .. } => prepared.detail(),
            Kernels::Window(w) => w.detail(),
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
        let (p, own) = match &self.kernels {
            Kernels::Planned { prepared, sums } => (prepared, sums.as_ref()),
            Kernels::Window(_) => {
                return Err(Error::InvalidArgument(
                    "internal: a window engine's runs name their window (enqueue_window)".into(),
                ))
            }
        };
        let probe = probing == Probing::PerRun;
        let w_ptr = self.check(stream, buffers, weights)?;
        if buffers.tallies == 0 {
            return Err(Error::InvalidArgument(
                "the tallies' address is 0: a run needs 3 u64 of device memory for them".into(),
            ));
        }
        let RawBuffers {
            input,
            n,
            bins,
            tallies,
            ..
        } = *buffers;
        p.gpu.bind()?;
        // Where the counting run writes every bin and tally itself (global-memory counts: its
        // fold writes rather than adds), nothing needs clearing: the memset (a launch) and the
        // fold's reading the bins back are saved.
        let overwrite = !accumulate && own.is_none() && p.writes_every_bin(n, probe);
        if !accumulate && !overwrite {
            // SAFETY: `tallies` holds 3 u64 and `bins` nbins words (the caller's guarantee).
            unsafe { self.clear(stream, bins, self.nbins(), tallies)? };
        }
        let run = Run {
            stream,
            input,
            n,
            weights: w_ptr,
            out: bins,
            tallies,
        };
        match own {
            // SAFETY: forwarded from the caller; the sums are written (or added), not cleared.
            Some(OwnSums::Exact(exact)) => {
                return unsafe { exact.enqueue(&run, &p.params, accumulate) }
            }
            // SAFETY: forwarded from the caller; the bins were cleared above or hold the total
            // to add onto.
            Some(OwnSums::Numpy(numpy)) => return unsafe { numpy.enqueue(&run, &p.params) },
            None => {}
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

    /// The run of a window engine ([`DeviceEngine::window`]): counts the `buffers.n` samples
    /// whose bin lies in `window` (of the whole binning) into the `window.len()` counters at
    /// `buffers.bins` (u64 counts or f64 sums, the window's first bin first), the others
    /// skipped; the tallies are added to the 3 u64 at `buffers.tallies`, or not counted where
    /// it is 0 (every pass of a sharded run but one, so that each sample is tallied once).
    /// Without `accumulate` the window's counters (and the tallies, where counted) are cleared
    /// first. The same checks as [`DeviceEngine::enqueue`].
    ///
    /// # Safety
    /// As [`DeviceEngine::enqueue`], with `buffers.bins` holding `window.len()` counters.
    pub unsafe fn enqueue_window(
        &self,
        stream: &Arc<CudaStream>,
        buffers: &RawBuffers,
        weights: Option<(usize, WeightKind)>,
        window: Range<usize>,
        accumulate: bool,
    ) -> Result<()> {
        let Kernels::Window(counter) = &self.kernels else {
            return Err(Error::InvalidArgument(
                "internal: a window run on an engine built for every bin (DeviceEngine::window)"
                    .into(),
            ));
        };
        counter.check_window(&window)?;
        let w_ptr = self.check(stream, buffers, weights)?;
        counter.gpu().bind()?;
        let RawBuffers {
            input,
            n,
            bins,
            tallies,
            ..
        } = *buffers;
        if !accumulate {
            // SAFETY: `bins` holds window.len() counters and `tallies` 3 u64 where not 0 (the
            // caller's guarantee).
            unsafe { self.clear(stream, bins, window.len(), tallies)? };
        }
        let run = Run {
            stream,
            input,
            n,
            weights: w_ptr,
            out: bins,
            tallies,
        };
        // SAFETY: forwarded from the caller; the window was checked against the bins.
        unsafe { counter.launch(&run, window) }
    }

    /// The host-side checks of a run's buffers against what the engine was built for; the
    /// weights' address to launch with (0 without weights).
    fn check(
        &self,
        stream: &Arc<CudaStream>,
        buffers: &RawBuffers,
        weights: Option<(usize, WeightKind)>,
    ) -> Result<u64> {
        let RawBuffers {
            input,
            n,
            sample_type,
            bins,
            ..
        } = *buffers;
        let weights = weights.map(|(len, kind)| (buffers.weights, len, kind));
        let gpu = self.gpu();
        if bins == 0 {
            return Err(Error::InvalidArgument(
                "the bins' address is 0: a run needs device memory for its counts or sums".into(),
            ));
        }
        if stream.context().cu_ctx() != gpu.ctx.cu_ctx() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to another CUDA context than device {}'s",
                gpu.ordinal
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
        match (weights, self.weights) {
            (None, WeightKind::None) => Ok(0),
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
                Ok(ptr)
            }
            (got, want) => Err(Error::InvalidArgument(format!(
                "this histogram was built with weights {want:?}, the run passes {:?}",
                got.map_or(WeightKind::None, |g| g.2)
            ))),
        }
    }

    /// Zeroes `words` counters at `bins` and, unless `tallies` is 0, the 3 tallies at `tallies`,
    /// on `stream`.
    ///
    /// # Safety
    /// `tallies` must be 0 or hold 3 u64 and `bins` `words` words of this context, alive until
    /// the stream has run the memsets.
    unsafe fn clear(
        &self,
        stream: &Arc<CudaStream>,
        bins: u64,
        words: usize,
        tallies: u64,
    ) -> Result<()> {
        use cudarc::driver::result::memset_d8_async;
        use cudarc::driver::sys;
        let s = stream.cu_stream();
        let bins_bytes = words * 8;
        if tallies == 0 {
            if bins_bytes == 0 {
                return Ok(());
            }
            // SAFETY: the caller's `words` counters.
            return unsafe { memset_d8_async(bins, 0, bins_bytes, s) }
                .map_err(cuda_err("clearing the histogram output"));
        }
        // Where the output's tallies and bins lie back to back (in either order) in ONE
        // allocation: one memset (a launch less for small inputs). Two allocations may also lie
        // back to back (a stream-ordered pool hands out neighbours), and a memset may not cross
        // from one into the other: the driver says whether both are one allocation.
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
        // SAFETY: the ranges are the caller's 3 tallies and `words` counters (or both at once
        // where they are one allocation, checked above).
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
