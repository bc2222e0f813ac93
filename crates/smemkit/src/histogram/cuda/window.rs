//! Counting one window of the bins on the GPU, for bins sharded over ranks ([`super::bin_shards`]):
//! each pass of a sharded run counts the bins `lo..hi` of a group of owners' slices, so that no
//! GPU ever holds every counter. Samples are binned against the whole binning (numpy's rule and
//! the policy, as every other kernel) and counted at `bin - lo` where their bin lies in the
//! window; the others are skipped, not tallied. The tallies are counted only when asked (the
//! first pass), so that every sample is tallied once. The kernels are `hist_window_*` of
//! `kernels/hist_window.cuh`, counters in global memory (u64 counts, f64 sums).

use std::ffi::c_void;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DeviceRepr};

use super::device_engine::DeviceEngine;
use super::device_histogram::RawBuffers;
use super::half_table;
use super::host_stage::{with_codes, HostStage};
use super::params::{kernel_params, mode_name, KernelBinParams};
use super::prepared::{sample_defines, Counting, Run, WeightKind};
use crate::error::{Error, Result};
use crate::gpu::compile::HISTOGRAM;
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::Binning;
use crate::histogram::result::{Counts, Tallies};
use crate::sample::{Sample, SampleType, Samples, Weights};

/// Threads per block (the kernels' launch bound).
const BLOCK: u32 = 512;
/// Samples copied to the device at a time: the staging buffer beside the window's counters.
const STAGE: usize = 1 << 24;

/// The window kernel for what is counted, or an error for a binning the GPU has no kernel for.
pub fn window_kernel_name(what: &Counting<'_>) -> Result<String> {
    let mode = mode_name(what.binning, what.sample_type);
    if matches!(mode, "int_edges" | "uniform_half") {
        return Err(Error::NotImplemented(format!(
            "counting a window of {mode} bins of {} samples on the GPU",
            what.sample_type
        )));
    }
    let w = match what.weights {
        WeightKind::None => "none",
        WeightKind::F32 => "f32",
        WeightKind::F64 => "f64",
        // Bins sharded over ranks take integer weights widened to float64 on the host.
        WeightKind::I64 => {
            return Err(Error::NotImplemented(
                "int64 weights in a window of sharded bins (they are summed as float64 there)"
                    .into(),
            ))
        }
    };
    Ok(format!("hist_window_{mode}_{w}"))
}

/// A window's counters on the device: u64 counts, or f64 sums of weights.
pub enum WindowCounts {
    Counts(CudaSlice<u64>),
    Sums(CudaSlice<f64>),
}

impl WindowCounts {
    /// `len` zeroed counters (sums when `weighted`).
    pub fn zeroed(gpu: &Gpu, len: usize, weighted: bool) -> Result<WindowCounts> {
        gpu.bind()?;
        let s = &gpu.stream;
        Ok(if weighted {
            WindowCounts::Sums(
                s.alloc_zeros::<f64>(len.max(1))
                    .map_err(cuda_err("allocating a window's sums"))?,
            )
        } else {
            WindowCounts::Counts(
                s.alloc_zeros::<u64>(len.max(1))
                    .map_err(cuda_err("allocating a window's counters"))?,
            )
        })
    }

    /// How many counters (at least one: an empty window still allocates one).
    pub fn len(&self) -> usize {
        match self {
            WindowCounts::Counts(c) => c.len(),
            WindowCounts::Sums(c) => c.len(),
        }
    }

    /// Never: see [`WindowCounts::len`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Zeroes every counter (on the GPU's stream).
    pub fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        let s = &gpu.stream;
        match self {
            WindowCounts::Counts(c) => s.memset_zeros(c),
            WindowCounts::Sums(c) => s.memset_zeros(c),
        }
        .map_err(cuda_err("zeroing a window's counters"))
    }

    /// The device address of the first counter.
    pub fn ptr(&self, gpu: &Gpu) -> u64 {
        match self {
            WindowCounts::Counts(c) => c.device_ptr(&gpu.stream).0,
            WindowCounts::Sums(c) => c.device_ptr(&gpu.stream).0,
        }
    }

    /// Counters `range`, read back (waits for the stream).
    pub fn read(&self, gpu: &Gpu, range: Range<usize>) -> Result<Counts> {
        if range.is_empty() {
            return Ok(match self {
                WindowCounts::Counts(_) => Counts::Unweighted(Vec::new()),
                WindowCounts::Sums(_) => Counts::Weighted(Vec::new()),
            });
        }
        let s = &gpu.stream;
        let what = cuda_err("reading a window's counters back (a kernel may have failed)");
        Ok(match self {
            WindowCounts::Counts(c) => {
                Counts::Unweighted(s.clone_dtoh(&c.slice(range)).map_err(what)?)
            }
            WindowCounts::Sums(c) => Counts::Weighted(s.clone_dtoh(&c.slice(range)).map_err(what)?),
        })
    }
}

/// Reads three tallies (below, above, NaN) back from the device (waits for the stream).
pub fn read_tallies(gpu: &Gpu, t: &CudaSlice<u64>) -> Result<Tallies> {
    let v = gpu.stream.clone_dtoh(t).map_err(cuda_err(
        "reading the tallies back (a kernel may have failed)",
    ))?;
    Ok(Tallies {
        below: v[0],
        above: v[1],
        nan: v[2],
    })
}

/// The window kernel of one sample type, weight kind and binning, compiled and sized: what a
/// window engine ([`DeviceEngine::window`]) launches.
pub(crate) struct WindowCounter {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    params: KernelBinParams,
    grid: u32,
    nbins: usize,
    sample_type: SampleType,
    _edges: Option<CudaSlice<f64>>,
    _lut: Option<CudaSlice<u32>>,
}

impl WindowCounter {
    /// Compiles (or loads) the window kernel for `what` on `gpu` and copies the bins' tables.
    pub(crate) fn new(gpu: &Arc<Gpu>, what: Counting<'_>) -> Result<WindowCounter> {
        let name = window_kernel_name(&what)?;
        gpu.bind()?;
        let func = gpu.function(&HISTOGRAM, &sample_defines(what.sample_type), &name)?;
        let shape = LaunchShape {
            grid: 1,
            block: BLOCK,
            shared_bytes: 0,
            cluster: 1,
        };
        launch::prepare_function(&func, &shape, gpu.limits.smem_per_block_optin)?;
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
            .map_err(cuda_err("querying occupancy"))?;
        if per_sm == 0 {
            return Err(Error::StrategyUnsupported {
                strategy: "window".into(),
                reason: format!("{name}: a block of {BLOCK} threads does not fit an SM"),
            });
        }
        let edges = match what.binning {
            Binning::Edges(e) => Some(
                gpu.stream
                    .clone_htod(e)
                    .map_err(cuda_err("copying the bin edges"))?,
            ),
            _ => None,
        };
        let edges_ptr = edges.as_ref().map_or(0, |e| e.device_ptr(&gpu.stream).0);
        // Aggregation off: its warp key is a 32-bit bin, and a window is wide.
        let mut params = kernel_params(what.binning, what.policy, false, edges_ptr);
        let lut = if half_table::is_half(what.sample_type) {
            let table = half_table::slot_table32(what.binning, what.sample_type);
            let t = gpu
                .stream
                .clone_htod(&table)
                .map_err(cuda_err("copying the 16-bit float slot table"))?;
            params.lut = t.device_ptr(&gpu.stream).0;
            Some(t)
        } else {
            None
        };
        Ok(WindowCounter {
            gpu: gpu.clone(),
            func,
            params,
            grid: per_sm * gpu.limits.sm_count,
            nbins: what.binning.nbins(),
            sample_type: what.sample_type,
            _edges: edges,
            _lut: lut,
        })
    }

    /// How many bins the whole binning has (a window is a range of them).
    pub(crate) fn nbins(&self) -> usize {
        self.nbins
    }
    /// The bin parameters the kernel takes.
    pub(crate) fn params(&self) -> KernelBinParams {
        self.params
    }
    /// The GPU it runs on.
    pub(crate) fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }
    /// One line for reports.
    pub(crate) fn detail(&self) -> String {
        format!(
            "{}, one window of the bins per pass, {} blocks x {BLOCK} threads, counters in global memory",
            self.gpu.name, self.grid
        )
    }

    /// Enqueues on `run.stream` the counting of `run.n` samples at `run.input` (weights at
    /// `run.weights`, or 0) into the bins `window`, at `run.out` (`window.len()` u64 counts or
    /// f64 sums), adding the tallies to the three u64 at `run.tallies` unless it is 0. The
    /// checks are the engine's ([`DeviceEngine::enqueue_window`]).
    ///
    /// # Safety
    /// `run.input` (16-byte aligned) and `run.weights` must hold `n` samples and weights of this
    /// counter's types, `run.out` `window.len()` counters and `run.tallies` three, all device
    /// memory of this GPU alive until the stream has run the kernel; `window` lies within the
    /// bins ([`WindowCounter::check_window`]).
    pub(crate) unsafe fn launch(&self, run: &Run<'_>, window: Range<usize>) -> Result<()> {
        let n = run.n;
        if n == 0 {
            return Ok(());
        }
        let per_block = BLOCK as usize * (16 / self.sample_type.size());
        let shape = LaunchShape {
            grid: n.div_ceil(per_block).min(self.grid as usize).max(1) as u32,
            block: BLOCK,
            shared_bytes: 0,
            cluster: 1,
        };
        let (mut in_ptr, mut n64, mut w_ptr) = (run.input, n as u64, run.weights);
        let mut params = self.params;
        let (mut lo, mut len) = (window.start as u64, window.len() as u64);
        let (mut out_ptr, mut t_ptr) = (run.out, run.tallies);
        let mut args: [*mut c_void; 8] = [
            &mut in_ptr as *mut u64 as *mut c_void,
            &mut n64 as *mut u64 as *mut c_void,
            &mut w_ptr as *mut u64 as *mut c_void,
            &mut params as *mut KernelBinParams as *mut c_void,
            &mut lo as *mut u64 as *mut c_void,
            &mut len as *mut u64 as *mut c_void,
            &mut out_ptr as *mut u64 as *mut c_void,
            &mut t_ptr as *mut u64 as *mut c_void,
        ];
        // SAFETY: the list matches hist_window_*(in, n, w, p, lo, len, out, t); the caller
        // guarantees the pointers; the tables `params` points to live as long as `self`.
        unsafe { launch::launch(&self.func, run.stream, &shape, &mut args) }
    }

    /// Whether `window` lies within the bins (or one clear error).
    pub(crate) fn check_window(&self, window: &Range<usize>) -> Result<()> {
        if window.start > window.end || window.end > self.nbins {
            return Err(Error::InvalidArgument(format!(
                "the window {}..{} of {} bins",
                window.start, window.end, self.nbins
            )));
        }
        Ok(())
    }
}

/// Counts host samples (and weights) into the bins `window`, at the start of `out`, through
/// `engine` (a window engine, [`DeviceEngine::window`]): copied to the device in batches of at
/// most `STAGE`, each batch one run of the engine adding into `out`; adds the tallies to
/// `tallies` when given. Returns once the GPU has counted them.
pub fn count_host(
    engine: &DeviceEngine,
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    window: Range<usize>,
    out: &WindowCounts,
    tallies: Option<&CudaSlice<u64>>,
) -> Result<()> {
    if window.len() > out.len() {
        return Err(Error::InvalidArgument(format!(
            "a window of {} bins into {} counters",
            window.len(),
            out.len()
        )));
    }
    with_codes!(samples, s => count_typed(engine, s, samples.sample_type(), weights, window, out, tallies))
}

fn count_typed<T: Sample + DeviceRepr>(
    engine: &DeviceEngine,
    samples: &[T],
    sample_type: SampleType,
    weights: Option<Weights<'_>>,
    window: Range<usize>,
    out: &WindowCounts,
    tallies: Option<&CudaSlice<u64>>,
) -> Result<()> {
    let gpu = engine.gpu();
    gpu.bind()?;
    let stream = &gpu.stream;
    let empty = RawBuffers {
        input: 0,
        n: 0,
        sample_type,
        weights: 0,
        bins: out.ptr(gpu),
        tallies: tallies.map_or(0, |t| t.device_ptr(stream).0),
    };
    if samples.is_empty() {
        // The engine's checks (the window, the types) still apply to an empty input.
        let w = weights
            .map(|w| weight_kind(w).map(|k| (w.len(), k)))
            .transpose()?;
        // SAFETY: no samples: nothing is read or written (the run adds, clearing nothing).
        return unsafe { engine.enqueue_window(stream, &empty, w, window, true) };
    }
    let mut stage = HostStage::<T>::new(stream, samples.len(), weights, samples.len().min(STAGE))?;
    let mut start = 0;
    while start < samples.len() {
        let len = (samples.len() - start).min(stage.batch());
        let staged = stage.load(stream, samples, start..start + len)?;
        let buffers = RawBuffers {
            input: staged.input,
            n: len,
            weights: staged.weights,
            ..empty
        };
        // SAFETY: the stage holds `len` samples and weights, `out` at least window.len()
        // counters (checked by count_host), `tallies` three; the next copy into the stage waits
        // for this kernel on the same stream, and all are freed after the synchronisation below.
        unsafe { engine.enqueue_window(stream, &buffers, staged.kind, window.clone(), true)? };
        start += len;
    }
    // The stage is freed on return: the kernels that read it end first (and a kernel's failure
    // is seen here, by the pass that caused it).
    stream
        .synchronize()
        .map_err(cuda_err("counting a window of the bins"))
}

fn weight_kind(w: Weights<'_>) -> Result<WeightKind> {
    match w {
        Weights::F32(_) => Ok(WeightKind::F32),
        Weights::F64(_) => Ok(WeightKind::F64),
        Weights::Int(_) => Err(crate::histogram::int_sums::unwidened()),
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
