//! GPU arrays of other frameworks (torch, CuPy, JAX, anything with DLPack or the CUDA array
//! interface) histogrammed in place through the library's [`DeviceHistogram`], on the stream the
//! Python layer names (the producer's current stream), into an output the framework allocated.
//! Building a histogram plans, compiles and allocates, so built histograms are cached for the
//! process, per device, sample type, bins, weights, policy, strategy, determinism and size class;
//! a repeated call only checks and enqueues. Calls never wait for the GPU.
//!
//! One cached histogram's scratch is shared by every stream that runs it: a run on a stream other
//! than the previous run's waits (on the device, through an event) for that previous run, so two
//! streams never use the scratch at once. Inside CUDA graph capture that ordering is left out (a
//! captured stream cannot wait on an event recorded outside the capture); the graph's replays are
//! ordered by the code that launches them, as every captured torch kernel's are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use smemkit::cudarc::driver::sys;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec, RawBuffers, WeightKind, WeightSums},
    histogram::StrategyChoice,
    sample::SampleType,
};

use crate::errors::IntoPy;

/// The smallest size class: inputs up to this many samples share one plan (launch-bound anyway).
pub(crate) const SMALLEST_CLASS: usize = 1 << 12;

/// Bins as a hashable key (floats by their bits).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum BinsKey {
    Uniform(usize, u64, u64),
    /// Uniform bins over the data's range: the number of bins and the extremes read on the
    /// device (none: no samples).
    Data(usize, Vec<u64>),
    Edges(Vec<u64>),
    Integer(usize),
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    device: usize,
    sample_type: SampleType,
    bins: BinsKey,
    weights: u8,
    policy: String,
    strategy: Option<String>,
    deterministic: bool,
    size_class: usize,
}

/// The stream ordering of one cached histogram's runs (see the module documentation).
struct Order {
    last_stream: Option<usize>,
    /// Recorded on `last_stream` after its last run (outside capture); created on first use.
    event: sys::CUevent,
    recorded: bool,
}

// SAFETY: a CUevent is a driver handle usable from any thread; it is only touched under the mutex.
unsafe impl Send for Order {}

pub(crate) struct Entry {
    pub hist: DeviceHistogram,
    /// The most samples a run may take.
    pub size_class: usize,
    order: Mutex<Order>,
}

type Cache = Mutex<HashMap<Key, Arc<Entry>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn check(result: sys::CUresult, what: &str) -> PyResult<()> {
    if result == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(PyRuntimeError::new_err(format!(
            "CUDA error while {what}: {result:?}"
        )))
    }
}

/// Whether `stream` is being captured into a CUDA graph.
pub(crate) fn capturing(stream: sys::CUstream) -> PyResult<bool> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `stream` is a live stream of the current context (the caller's guarantee); `status`
    // is a valid out pointer.
    check(
        unsafe { sys::cuStreamIsCapturing(stream, &mut status) },
        "asking whether the stream is being captured",
    )?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// The kernels' weight kind for the Python layer's dtype: int64 weights (uint64 as their bits;
/// narrower integers are widened to int64 before the call) sum as exact 64-bit integers.
fn weight_kind(dtype: Option<&str>) -> PyResult<WeightKind> {
    match dtype {
        None => Ok(WeightKind::None),
        Some("float32") => Ok(WeightKind::F32),
        Some("float64") => Ok(WeightKind::F64),
        Some("int64" | "uint64") => Ok(WeightKind::I64),
        Some(other) => Err(PyValueError::new_err(format!(
            "internal: device weights of {other} (expected float32, float64 or int64)"
        ))),
    }
}

/// The bins of a device call and their cache key, from the Python layer's values; `extremes`
/// (the data's minimum and maximum, or none for no samples) asks for uniform bins over the
/// data's range.
pub(crate) fn bins_of(
    nbins: Option<usize>,
    range: Option<(f64, f64)>,
    edges: Option<Vec<f64>>,
    integer_bins: bool,
    extremes: Option<Vec<f64>>,
) -> PyResult<(BinSpec, BinsKey)> {
    if let Some(ex) = extremes {
        return match (nbins, range, edges, integer_bins, ex.len()) {
            (Some(nbins), None, None, false, 0 | 2) => Ok((
                BinSpec::Uniform { nbins, range: None },
                BinsKey::Data(nbins, ex.iter().map(|x| x.to_bits()).collect()),
            )),
            _ => Err(PyValueError::new_err(
                "internal: the data's extremes go with a number of bins alone",
            )),
        };
    }
    Ok(match (nbins, range, edges, integer_bins) {
        (Some(nbins), None, None, true) => (BinSpec::Integer { nbins }, BinsKey::Integer(nbins)),
        (Some(nbins), Some((lo, hi)), None, false) => (
            BinSpec::Uniform {
                nbins,
                range: Some((lo, hi)),
            },
            BinsKey::Uniform(nbins, lo.to_bits(), hi.to_bits()),
        ),
        (None, None, Some(e), false) => {
            let key = BinsKey::Edges(e.iter().map(|x| x.to_bits()).collect());
            (BinSpec::Edges(e), key)
        }
        _ => {
            return Err(PyValueError::new_err(
                "internal: give integer bins, uniform bins with a range, or edges",
            ))
        }
    })
}

/// Everything a cached histogram is built from, but the size class (see [`Call::entry`]).
pub(crate) struct Call {
    pub key: Key,
    pub spec: DeviceHistogramSpec,
}

impl Call {
    /// Parses the Python layer's values into a call (no GPU work).
    pub fn new(
        device: usize,
        dtype: &str,
        weights_dtype: Option<&str>,
        bins: (BinSpec, BinsKey),
        run: &RunArg,
    ) -> PyResult<Call> {
        let RunArg(out_of_range, strategy, deterministic) = run;
        let (out_of_range, strategy, deterministic) =
            (out_of_range.as_str(), strategy.as_deref(), *deterministic);
        let sample_type = dtype.parse::<SampleType>().py_err()?;
        let weight = weight_kind(weights_dtype)?;
        let policy = out_of_range.parse::<OutOfRange>().py_err()?;
        let choice = match strategy {
            None => StrategyChoice::Auto,
            Some(s) => s.parse::<StrategyChoice>().py_err()?,
        };
        let (bins, bins_key) = bins;
        // numpy's equal bins sum float weights in its blocks and the weights' type: so do these
        // unless asked for the deterministic sums or a strategy's own kernels (bincount's and
        // explicit edges' orders are not repeated; counts and integer sums do not depend on the
        // order).
        let sums = match (&bins, weight) {
            _ if deterministic => WeightSums::Deterministic,
            _ if choice != StrategyChoice::Auto => WeightSums::Fast,
            (
                BinSpec::Uniform { .. }
                | BinSpec::UniformInSampleType { .. }
                | BinSpec::UniformInRangeType { .. }
                | BinSpec::UniformIntRange { .. },
                WeightKind::F32 | WeightKind::F64,
            ) => WeightSums::Numpy,
            _ => WeightSums::Fast,
        };
        let mut spec = DeviceHistogramSpec::new(sample_type, bins)
            .weights(weight)
            .policy(policy)
            .strategy(choice)
            .sums(sums);
        if let BinsKey::Data(_, ex) = &bins_key {
            let v: Vec<f64> = ex.iter().map(|&b| f64::from_bits(b)).collect();
            spec = spec.extremes(if v.len() == 2 {
                Some((v[0], v[1]))
            } else {
                None
            });
        }
        Ok(Call {
            key: Key {
                device,
                sample_type,
                bins: bins_key,
                weights: weight as u8,
                policy: out_of_range.to_string(),
                strategy: strategy.map(str::to_string),
                deterministic,
                size_class: 0,
            },
            spec,
        })
    }

    /// The cached histogram for `n` samples (built on the first call of its size class).
    pub fn entry(&self, py: Python<'_>, n: usize, stream: usize) -> PyResult<Arc<Entry>> {
        let size_class = n.max(SMALLEST_CLASS).next_power_of_two();
        let mut key = self.key.clone();
        key.size_class = size_class;
        if let Some(e) = cache().lock().expect("histogram cache").get(&key) {
            return Ok(e.clone());
        }
        let gpu = smemkit::internals::gpu::device::gpu_at(self.key.device).py_err()?;
        gpu.bind().py_err()?;
        if capturing(stream as sys::CUstream)? {
            return Err(PyRuntimeError::new_err(
                "smemkit: the first call for these bins, dtype, options and size class is being \
                 captured into a CUDA graph, but it builds the histogram (compiles kernels, \
                 allocates scratch), which capture forbids: make the same call once before \
                 capturing (a warm-up, as torch.cuda.graphs asks for)",
            ));
        }
        let spec = self.spec.clone().max_samples(size_class);
        // Building waits for its scratch's clearing on the library's stream (the runs are on
        // the caller's).
        let hist = py.detach(|| DeviceHistogram::new(&gpu, &spec)).py_err()?;
        let entry = Arc::new(Entry {
            hist,
            size_class,
            order: Mutex::new(Order {
                last_stream: None,
                event: std::ptr::null_mut(),
                recorded: false,
            }),
        });
        Ok(cache()
            .lock()
            .expect("histogram cache")
            .entry(key)
            .or_insert(entry)
            .clone())
    }
}

/// Device addresses of one run: samples, weights (0 without), the counts or sums, the 3 tallies.
#[derive(Clone, Copy)]
pub(crate) struct Buffers {
    pub input: u64,
    pub n: usize,
    pub weights: u64,
    pub bins: u64,
    pub tallies: u64,
}

impl Entry {
    /// Enqueues one run on `stream`, ordered after this histogram's previous run on another
    /// stream (see the module documentation). `clear`: zero the bins and tallies first (else the
    /// caller has cleared what it reads).
    ///
    /// # Safety
    /// The buffers must be live device memory of this device holding what [`Buffers`] says, kept
    /// alive until the stream has run the histogram; `stream` a live stream of the device.
    pub unsafe fn run(&self, stream: usize, b: Buffers, clear: bool) -> PyResult<()> {
        let cu_stream = stream as sys::CUstream;
        self.hist.gpu().bind().py_err()?;
        let mut order = self.order.lock().expect("histogram order");
        let captured = capturing(cu_stream)?;
        if !captured && order.recorded && order.last_stream != Some(stream) {
            // SAFETY: the event is live (created below, never destroyed while cached); the stream
            // is the caller's live stream.
            check(
                unsafe { sys::cuStreamWaitEvent(cu_stream, order.event, 0) },
                "ordering this run after the previous run on another stream",
            )?;
        }
        // SAFETY: forwarded from the caller.
        unsafe {
            self.hist.run_raw(
                &RawBuffers {
                    input: b.input,
                    n: b.n,
                    sample_type: self.hist.spec().sample_type,
                    weights: b.weights,
                    bins: b.bins,
                    tallies: b.tallies,
                },
                cu_stream,
                !clear,
            )
        }
        .py_err()?;
        if !captured {
            if order.event.is_null() {
                let mut event: sys::CUevent = std::ptr::null_mut();
                // SAFETY: valid out pointer; the context is bound.
                check(
                    unsafe {
                        sys::cuEventCreate(
                            &mut event,
                            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
                        )
                    },
                    "creating an event",
                )?;
                order.event = event;
            }
            // SAFETY: a live event and the caller's live stream.
            check(
                unsafe { sys::cuEventRecord(order.event, cu_stream) },
                "recording the run's event",
            )?;
            order.recorded = true;
            order.last_stream = Some(stream);
        }
        Ok(())
    }
}

/// The samples of a call, the tuple `(input, n, dtype, weights, weights_dtype)`: `n` samples of
/// `dtype` at device address `input`, with `weights` at their address (0 without).
#[derive(FromPyObject)]
pub struct SamplesArg(u64, usize, String, u64, Option<String>);

/// The bins of a call, the tuple `(nbins, range, edges, integer_bins, extremes)`: `extremes`
/// the data's `[min, max]` read on the device (`[]`: no samples) for bins over its range.
#[derive(FromPyObject)]
pub struct BinsArg<'py>(
    Option<usize>,
    Option<(f64, f64)>,
    Option<PyReadonlyArray1<'py, f64>>,
    bool,
    Option<Vec<f64>>,
);

/// The run's choices, the tuple `(out_of_range, strategy, deterministic)`.
#[derive(FromPyObject)]
pub struct RunArg(pub String, pub Option<String>, pub bool);

/// Histograms the samples into `out`, a device buffer of nbins + 3 64-bit words (the u64 counts or
/// f64 sums, then the tallies below, above and NaN: the counts start where the buffer does,
/// aligned as frameworks that import it require), on `stream` (a `cudaStream_t`; 0 the legacy
/// default stream) of device `device`. Enqueues and returns; the caller keeps every buffer alive
/// until the stream has run it.
#[pyfunction]
#[pyo3(signature = (device, stream, samples, out, bins, run))]
pub fn device_histogram<'py>(
    py: Python<'py>,
    device: usize,
    stream: usize,
    samples: SamplesArg,
    out: u64,
    bins: BinsArg<'py>,
    run: RunArg,
) -> PyResult<()> {
    let SamplesArg(input, n, dtype, weights, weights_dtype) = samples;
    let BinsArg(nbins, range, edges, integer_bins, extremes) = bins;
    if (weights != 0) != weights_dtype.is_some() {
        return Err(PyValueError::new_err(
            "internal: a weights address needs its dtype",
        ));
    }
    let edges = edges.map(|e| e.as_array().to_vec());
    let bins = bins_of(nbins, range, edges, integer_bins, extremes)?;
    let call = Call::new(device, &dtype, weights_dtype.as_deref(), bins, &run)?;
    let entry = call.entry(py, n, stream)?;
    let nb = entry.hist.nbins() as u64;
    let buffers = Buffers {
        input,
        n,
        weights,
        bins: out,
        tallies: out + 8 * nb,
    };
    // SAFETY: the Python layer passes addresses of live device memory of this device holding `n`
    // samples of `dtype`, `n` weights and nbins + 3 words, kept alive by its framework until the
    // stream has run the histogram (stream-ordered allocators), and a live stream of the device.
    unsafe { entry.run(stream, buffers, true) }
}

/// How many device histograms are cached (for tests).
#[pyfunction]
pub fn device_cache_size() -> usize {
    cache().lock().expect("histogram cache").len()
}
