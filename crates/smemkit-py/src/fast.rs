//! The per-call fast path of GPU histograms from Python. The general path (`device_histogram`)
//! parses a dozen arguments, builds a cache key and looks it up on every call; a [`FastCall`] is
//! that parsing and lookup done once, held by the Python layer under a key of the call's own
//! arguments, so that a repeated call is one method call with six integers: it clears the output,
//! copies the edges numpy returns from a device copy made once, and enqueues the histogram. Inputs
//! of up to [`SMALL_MAX_SAMPLES`] samples (fewer beyond a million bins: `small_takes`), where those
//! three enqueues are the call's whole cost,
//! take one launch of the library's small kernel instead, which writes every count and copies the
//! edges itself ([`smemkit::device::DeviceHistogram::run_small_raw`]).
//!
//! Outputs are exactly the result's size (no tallies after the counts, no slicing in Python): the
//! tallies go to a scratch buffer that is never cleared nor read, which is why policies that read
//! them (`error`) take the general path. Buffers made here are never freed (as the cached
//! histograms are not), so a kernel still running when the Python layer drops its `FastCall`
//! never reads freed memory.
//!
//! With `SMEMKIT_PY_TRACE=1` every run records how long its phases took on the host (see
//! [`trace_native`]), for measuring the call's cost where it is spent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use smemkit::cudarc::driver::{result, sys, CudaSlice, DevicePtr};

use smemkit::internals::histogram::cuda::small::{EdgesCopy, SMALL_MAX_SAMPLES};

use crate::device::{bins_of, capturing, Buffers, Call, Entry, Key, RunArg, SMALLEST_CLASS};
use crate::errors::{to_py, IntoPy};

/// Device memory of one fast call's bins: the edges numpy returns (as bytes of their dtype) and
/// the tallies scratch. Kept for the process.
struct Parts {
    _edges: Option<CudaSlice<u8>>,
    edges_ptr: u64,
    edges_bytes: usize,
    _tallies: CudaSlice<u64>,
    tallies_ptr: u64,
}

/// Parts by the call's key and its edges' bytes.
type PartsCache = Mutex<HashMap<(Key, Vec<u8>), Arc<Parts>>>;

fn parts_cache() -> &'static PartsCache {
    static PARTS: OnceLock<PartsCache> = OnceLock::new();
    PARTS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn trace_on() -> bool {
    smemkit::internals::config::py_trace()
}

/// Nanoseconds of each traced run's phases: histogram lookup, clearing the counts, copying the
/// edges, enqueueing the histogram (ordering, launches, event).
type Phases = [u64; 4];

fn trace_log() -> &'static Mutex<Vec<Phases>> {
    static LOG: OnceLock<Mutex<Vec<Phases>>> = OnceLock::new();
    LOG.get_or_init(|| Mutex::new(Vec::new()))
}

/// One GPU histogram call, parsed and resolved once (see the module documentation).
#[pyclass(frozen, module = "smemkit._native")]
pub struct FastCall {
    call: Call,
    /// The call's device (its context is bound for `copy_edges`).
    device: usize,
    parts: Arc<Parts>,
    nbins: usize,
    /// The histogram of the size class used last, and whether its small runs are ready.
    last: Mutex<Option<(Arc<Entry>, Small)>>,
    /// How many runs took the one-launch small kernel (for tests).
    small_runs: AtomicU64,
}

/// Whether a size class's runs take the one-launch small kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Small {
    Yes,
    No,
    /// Not made yet because the stream was being captured: asked again on the next run.
    Later,
}

/// A [`FastCall`] for these bins and options: `edges` are the bytes of the edges the call
/// returns (empty for bincount), copied to the device once. Builds no histogram yet (the first
/// run of each size class does).
#[pyfunction]
#[pyo3(signature = (device, dtype, weights_dtype, bins, run, edges))]
pub fn fast_call(
    device: usize,
    dtype: &str,
    weights_dtype: Option<&str>,
    bins: (usize, Option<(f64, f64)>, bool),
    run: RunArg,
    edges: &[u8],
) -> PyResult<FastCall> {
    let (nbins, range, integer_bins) = bins;
    let out_of_range = run.0.as_str();
    if out_of_range == "error" {
        return Err(PyValueError::new_err(
            "internal: out_of_range='error' reads the tallies back: the general path runs it",
        ));
    }
    let bins = bins_of(Some(nbins), range, None, integer_bins, None)?;
    let call = Call::new(device, dtype, weights_dtype, bins, &run)?;
    let key = (call.key.clone(), edges.to_vec());
    let cached = parts_cache().lock().expect("parts").get(&key).cloned();
    let parts = match cached {
        Some(p) => p,
        None => {
            let gpu = smemkit::internals::gpu::device::gpu_at(device).py_err()?;
            gpu.bind().py_err()?;
            let err = |what: &'static str| move |e| cuda(what, e);
            let tallies = gpu
                .stream
                .alloc_zeros::<u64>(3)
                .map_err(err("allocating the tallies scratch"))?;
            let tallies_ptr = tallies.device_ptr(&gpu.stream).0;
            let (dev_edges, edges_ptr) = if edges.is_empty() {
                (None, 0)
            } else {
                let d = gpu
                    .stream
                    .clone_htod(edges)
                    .map_err(err("copying the bin edges to the device"))?;
                let ptr = d.device_ptr(&gpu.stream).0;
                (Some(d), ptr)
            };
            gpu.stream
                .synchronize()
                .map_err(err("preparing the bin edges"))?;
            let p = Arc::new(Parts {
                _edges: dev_edges,
                edges_ptr,
                edges_bytes: edges.len(),
                _tallies: tallies,
                tallies_ptr,
            });
            parts_cache()
                .lock()
                .expect("parts")
                .entry(key)
                .or_insert(p)
                .clone()
        }
    };
    Ok(FastCall {
        call,
        device,
        parts,
        nbins,
        last: Mutex::new(None),
        small_runs: AtomicU64::new(0),
    })
}

#[pymethods]
impl FastCall {
    /// The number of counts (or sums) a run writes.
    #[getter]
    fn nbins(&self) -> usize {
        self.nbins
    }

    /// How many runs so far took the one-launch small kernel.
    #[getter]
    fn small_runs(&self) -> u64 {
        self.small_runs.load(Ordering::Relaxed)
    }

    /// Histograms `n` samples at device address `input` (weights at `weights`, 0 without) into
    /// `counts` (nbins int64 or float64 words, overwritten) and writes the edges to `edges` (0:
    /// none), on `stream` (a `cudaStream_t` of the call's device). Enqueues and returns; the
    /// caller keeps every buffer alive until the stream has run it (its framework's
    /// stream-ordered allocator does).
    #[pyo3(signature = (stream, input, n, weights, counts, edges))]
    fn run(
        &self,
        stream: usize,
        input: u64,
        n: usize,
        weights: u64,
        counts: u64,
        edges: u64,
    ) -> PyResult<()> {
        let trace = trace_on();
        let t0 = trace.then(Instant::now);
        let size_class = n.max(SMALLEST_CLASS).next_power_of_two();
        let last = self.last.lock().expect("fast call").clone();
        let (entry, small) = match last {
            Some((e, Small::Later)) if e.size_class == size_class => {
                let small = Python::attach(|py| small_kernel(py, &e, stream))?;
                *self.last.lock().expect("fast call") = Some((e.clone(), small));
                (e, small)
            }
            Some(e) if e.0.size_class == size_class => e,
            _ => {
                let (e, small) = Python::attach(|py| {
                    let e = self.call.entry(py, n, stream)?;
                    let small = if n <= SMALL_MAX_SAMPLES && weights == 0 {
                        small_kernel(py, &e, stream)?
                    } else {
                        Small::No
                    };
                    Ok::<_, PyErr>((e, small))
                })?;
                *self.last.lock().expect("fast call") = Some((e.clone(), small));
                (e, small)
            }
        };
        if small == Small::Yes && entry.hist.small_takes(n) {
            let t1 = trace.then(Instant::now);
            let copy = (edges != 0 && self.parts.edges_bytes > 0).then_some(EdgesCopy {
                from: self.parts.edges_ptr,
                to: edges,
                bytes: self.parts.edges_bytes,
            });
            // SAFETY: `input` holds n samples and `counts` nbins words (the caller's guarantee),
            // `edges` the edges' bytes; the source is this call's device copy, never freed. The
            // small kernel writes every count and uses no scratch of the cached histogram.
            unsafe {
                entry
                    .hist
                    .run_small_raw(input, n, counts, copy, stream as sys::CUstream)
            }
            .py_err()?;
            self.small_runs.fetch_add(1, Ordering::Relaxed);
            if let (Some(t0), Some(t1)) = (t0, t1) {
                let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
                trace_log()
                    .lock()
                    .expect("trace")
                    .push([ns(t0, t1), 0, 0, ns(t1, Instant::now())]);
            }
            return Ok(());
        }
        entry.hist.gpu().bind().py_err()?;
        let cu_stream = stream as sys::CUstream;
        let t1 = trace.then(Instant::now);
        // SAFETY: `counts` holds nbins 8-byte words of device memory (the caller's guarantee),
        // alive until the stream has run this; the context is bound.
        unsafe { result::memset_d8_async(counts, 0, self.nbins * 8, cu_stream) }
            .map_err(|e| cuda("clearing the counts", e))?;
        let t2 = trace.then(Instant::now);
        let buffers = Buffers {
            input,
            n,
            weights,
            bins: counts,
            tallies: self.parts.tallies_ptr,
        };
        // SAFETY: the caller's guarantees above; the tallies scratch is this call's, never freed
        // and never read (runs on several streams may add to it at once: it only collects).
        unsafe { entry.run(stream, buffers, false) }?;
        let t3 = trace.then(Instant::now);
        // After the launch: the kernel does not wait for the host's time enqueuing the copy.
        self.enqueue_edges(stream, edges)?;
        if let (Some(t0), Some(t1), Some(t2), Some(t3)) = (t0, t1, t2, t3) {
            let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
            trace_log().lock().expect("trace").push([
                ns(t0, t1),
                ns(t1, t2),
                ns(t3, Instant::now()),
                ns(t2, t3),
            ]);
        }
        Ok(())
    }

    /// Writes the edges to `edges` (0: none) on `stream`: for a caller that allocates the edges'
    /// array after [`FastCall::run`] launched the histogram, so that neither the allocation nor
    /// the copy delays the launch.
    #[pyo3(signature = (stream, edges))]
    fn copy_edges(&self, stream: usize, edges: u64) -> PyResult<()> {
        let gpu = smemkit::internals::gpu::device::gpu_at(self.device).py_err()?;
        gpu.bind().py_err()?;
        self.enqueue_edges(stream, edges)
    }
}

impl FastCall {
    fn enqueue_edges(&self, stream: usize, edges: u64) -> PyResult<()> {
        if edges == 0 || self.parts.edges_bytes == 0 {
            return Ok(());
        }
        // SAFETY: `edges` holds the edges' bytes, alive until the stream has run the copy (the
        // caller's guarantee); the source is this call's device copy, never freed; the caller
        // bound the context.
        unsafe {
            result::memcpy_dtod_async(
                edges,
                self.parts.edges_ptr,
                self.parts.edges_bytes,
                stream as sys::CUstream,
            )
        }
        .map_err(|e| cuda("copying the bin edges", e))
    }
}

/// Whether `entry` runs small inputs in one launch ([`DeviceHistogram::prepare_small`]), making
/// its kernel where needed, except while `stream` is being captured (making it may load a
/// module): that call then takes the usual launches, and a later one makes it.
///
/// [`DeviceHistogram::prepare_small`]: smemkit::device::DeviceHistogram::prepare_small
fn small_kernel(py: Python<'_>, entry: &Entry, stream: usize) -> PyResult<Small> {
    if entry.hist.small_ready() {
        return Ok(Small::Yes);
    }
    entry.hist.gpu().bind().py_err()?;
    if capturing(stream as sys::CUstream)? {
        return Ok(Small::Later);
    }
    let ready = py.detach(|| entry.hist.prepare_small()).py_err()?;
    Ok(if ready { Small::Yes } else { Small::No })
}

fn cuda(what: &str, e: smemkit::cudarc::driver::DriverError) -> PyErr {
    to_py(smemkit::Error::Cuda {
        context: what.into(),
        message: format!("{e:?}"),
    })
}

/// The phases of the traced runs so far (ns: lookup, clear, edges, enqueue), and forgets them.
#[pyfunction]
pub fn trace_native() -> Vec<Phases> {
    std::mem::take(&mut *trace_log().lock().expect("trace"))
}
