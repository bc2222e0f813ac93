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
use half::slice::HalfFloatSliceExt;

use super::half_table;
use super::params::{kernel_params, mode_name, KernelBinParams};
use super::prepared::{sample_defines, Counting, WeightKind};
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

/// The window kernel of one sample type, weight kind and binning, compiled and sized.
pub struct WindowCounter {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    params: KernelBinParams,
    grid: u32,
    nbins: usize,
    sample_type: SampleType,
    weights: WeightKind,
    _edges: Option<CudaSlice<f64>>,
    _lut: Option<CudaSlice<u32>>,
}

impl WindowCounter {
    /// Compiles (or loads) the window kernel for `what` on `gpu` and copies the bins' tables.
    pub fn new(gpu: &Arc<Gpu>, what: Counting<'_>) -> Result<WindowCounter> {
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
            weights: what.weights,
            _edges: edges,
            _lut: lut,
        })
    }

    /// Enqueues the counting of `n` samples at `input` (weights at `weights`, or 0) into the
    /// bins `window`, at `out` (`window.len()` u64 counts or f64 sums), adding the tallies to
    /// the three u64 at `tallies` unless it is 0.
    ///
    /// # Safety
    /// `input` (16-byte aligned) and `weights` must hold `n` samples and weights of this counter's
    /// types, `out` `window.len()` counters and `tallies` three, all device memory of this GPU
    /// alive until the stream has run the kernel.
    pub unsafe fn enqueue(
        &self,
        input: u64,
        n: usize,
        weights: u64,
        window: Range<usize>,
        out: u64,
        tallies: u64,
    ) -> Result<()> {
        self.check_window(&window)?;
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
        let (mut in_ptr, mut n64, mut w_ptr) = (input, n as u64, weights);
        let mut params = self.params;
        let (mut lo, mut len) = (window.start as u64, window.len() as u64);
        let (mut out_ptr, mut t_ptr) = (out, tallies);
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
        unsafe { launch::launch(&self.func, &self.gpu.stream, &shape, &mut args) }
    }

    fn check_window(&self, window: &Range<usize>) -> Result<()> {
        if window.start > window.end || window.end > self.nbins {
            return Err(Error::InvalidArgument(format!(
                "the window {}..{} of {} bins",
                window.start, window.end, self.nbins
            )));
        }
        Ok(())
    }

    /// Counts host samples (and weights) into the bins `window`, at the start of `out`, copying
    /// them to the device in batches; adds the tallies to `tallies` when given. Returns once the
    /// GPU has counted them.
    pub fn count_host(
        &self,
        samples: Samples<'_>,
        weights: Option<Weights<'_>>,
        window: Range<usize>,
        out: &WindowCounts,
        tallies: Option<&CudaSlice<u64>>,
    ) -> Result<()> {
        self.check_window(&window)?;
        if samples.sample_type() != self.sample_type {
            return Err(Error::InvalidArgument(format!(
                "this window counter counts {} samples, not {}",
                self.sample_type,
                samples.sample_type()
            )));
        }
        let kind = match weights {
            None => WeightKind::None,
            Some(Weights::F32(_)) => WeightKind::F32,
            Some(Weights::F64(_)) => WeightKind::F64,
            Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
        };
        if kind != self.weights || weights.is_some_and(|w| w.len() != samples.len()) {
            return Err(Error::InvalidArgument(format!(
                "{} samples with {} weights: this window counter was built for {:?} weights",
                samples.len(),
                weights.map_or(0, |w| w.len()),
                self.weights
            )));
        }
        if window.len() > out.len() {
            return Err(Error::InvalidArgument(format!(
                "a window of {} bins into {} counters",
                window.len(),
                out.len()
            )));
        }
        match samples {
            // The kernels read 16-bit floats as their codes (half_table.rs).
            Samples::F16(s) => {
                self.count_typed(s.reinterpret_cast(), weights, window, out, tallies)
            }
            Samples::BF16(s) => {
                self.count_typed(s.reinterpret_cast(), weights, window, out, tallies)
            }
            Samples::U8(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::U16(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::U32(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::U64(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::I8(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::I16(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::I32(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::I64(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::F32(s) => self.count_typed(s, weights, window, out, tallies),
            Samples::F64(s) => self.count_typed(s, weights, window, out, tallies),
        }
    }

    fn count_typed<T: Sample + DeviceRepr>(
        &self,
        samples: &[T],
        weights: Option<Weights<'_>>,
        window: Range<usize>,
        out: &WindowCounts,
        tallies: Option<&CudaSlice<u64>>,
    ) -> Result<()> {
        let gpu = &self.gpu;
        gpu.bind()?;
        let stream = &gpu.stream;
        let batch = samples.len().min(STAGE);
        if batch == 0 {
            return Ok(());
        }
        // SAFETY: uninitialised device memory; every batch is copied in before a kernel reads it.
        let buf = unsafe { stream.alloc::<T>(batch) };
        let mut buf = buf.map_err(cuda_err("allocating a sample buffer"))?;
        let wlen = |k| if self.weights == k { batch } else { 0 };
        let mut w32 = stream
            .alloc_zeros::<f32>(wlen(WeightKind::F32))
            .map_err(cuda_err("allocating a weight buffer"))?;
        let mut w64 = stream
            .alloc_zeros::<f64>(wlen(WeightKind::F64))
            .map_err(cuda_err("allocating a weight buffer"))?;
        let out_ptr = out.ptr(gpu);
        let t_ptr = tallies.map_or(0, |t| t.device_ptr(stream).0);
        let mut start = 0;
        while start < samples.len() {
            let len = (samples.len() - start).min(batch);
            let at = start..start + len;
            stream
                .memcpy_htod(&samples[at.clone()], &mut buf.slice_mut(0..len))
                .map_err(cuda_err("copying samples to the device"))?;
            let w_ptr = match weights {
                None => 0,
                Some(Weights::F32(w)) => {
                    stream
                        .memcpy_htod(&w[at.clone()], &mut w32.slice_mut(0..len))
                        .map_err(cuda_err("copying weights"))?;
                    w32.device_ptr(stream).0
                }
                Some(Weights::F64(w)) => {
                    stream
                        .memcpy_htod(&w[at.clone()], &mut w64.slice_mut(0..len))
                        .map_err(cuda_err("copying weights"))?;
                    w64.device_ptr(stream).0
                }
                Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
            };
            let in_ptr = buf.device_ptr(stream).0;
            // SAFETY: the buffers hold `len` samples and weights, `out` at least window.len()
            // counters (checked by count_host), `tallies` three; the next copy into them waits
            // for this kernel on the same stream, and they are freed in stream order.
            unsafe { self.enqueue(in_ptr, len, w_ptr, window.clone(), out_ptr, t_ptr)? };
            start += len;
        }
        // The staging buffers are freed on return: the kernels that read them end first (and a
        // kernel's failure is seen here, by the pass that caused it).
        stream
            .synchronize()
            .map_err(cuda_err("counting a window of the bins"))
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
