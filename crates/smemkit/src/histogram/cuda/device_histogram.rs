//! Histograms of data already in GPU memory, on the caller's stream. A [`DeviceHistogram`] is built
//! once for a device, sample type, bins, weights, policy and strategy: it plans, compiles the
//! kernels and allocates every scratch buffer a run up to its `max_samples` can need. Its `run`
//! takes device memory (a cudarc slice or view, or raw pointers of memory another framework owns)
//! and a stream, enqueues the whole histogram there (zeroing the output unless the kernels write
//! all of it, `auto`'s skew verdict, the kernels) and returns without waiting: nothing is
//! allocated and nothing synchronises, so a run can be captured in a CUDA graph. The launches are
//! the `device_engine` module's, which the host-slice engine shares. [`DeviceOutput::read`] brings a
//! result to the host.
//!
//! Counts are u64 and exact whatever the order of the atomics. Weighted sums are f64; with
//! [`DeviceHistogramSpec::deterministic`] they are also bit-identical on every run and strategy
//! (see [`super::exact_sums`]), and with [`WeightSums::Numpy`] numpy's own (see
//! [`super::numpy_sums`]). int64 weights ([`WeightKind::I64`]) sum as exact 64-bit integers,
//! wrapping modulo 2^64 as numpy's int64 sums do, bit-identical on every run and strategy whatever
//! `deterministic` says (integer addition does not depend on the order).

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr};

use super::device_engine::{DeviceEngine, WeightSums};
use super::prepared::{Counting, WeightKind};
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, Gpu};
use crate::histogram::bins::{BinSpec, Binning, OutOfRange};
use crate::histogram::plan::StrategyChoice;
use crate::histogram::result::{Counts, Tallies};
use crate::sample::{Sample, SampleType, Samples};

/// Where the memory of one [`DeviceHistogram::run_raw`] lies: device addresses of another
/// framework's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBuffers {
    /// The first of `n` samples (16-byte aligned).
    pub input: u64,
    /// How many samples.
    pub n: usize,
    /// The samples' type: the one the histogram was built for.
    pub sample_type: SampleType,
    /// `n` weights of the histogram's weight kind, or 0 without weights.
    pub weights: u64,
    /// nbins u64 counts, f64 sums, or i64 sums (int64 weights).
    pub bins: u64,
    /// 3 u64: below, above and NaN.
    pub tallies: u64,
}

/// What a [`DeviceHistogram`] computes.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceHistogramSpec {
    /// The samples' type.
    pub sample_type: SampleType,
    /// Uniform bins need their range, or [`DeviceHistogramSpec::extremes`].
    pub bins: BinSpec,
    /// For uniform bins without a range: the data's minimum and maximum (`Some(None)`: no
    /// samples), which the caller reads on the device (a reduction and a synchronisation); the
    /// bins are then numpy's from the data ([`crate::histogram::bins::extremes`]).
    pub extremes: Option<Option<(f64, f64)>>,
    /// The weights' kind (`None`: counts).
    pub weights: WeightKind,
    /// What happens to samples outside the bins.
    pub policy: OutOfRange,
    /// The GPU strategy.
    pub strategy: StrategyChoice,
    /// The most samples one run may take (scratch is sized for it; the plan too).
    pub max_samples: usize,
    /// How float weights are added (counts and integer sums are exact in any order).
    pub sums: WeightSums,
}

impl DeviceHistogramSpec {
    /// Unweighted, out-of-range samples ignored, the planner's strategy, up to 2^31 samples.
    pub fn new(sample_type: SampleType, bins: BinSpec) -> Self {
        DeviceHistogramSpec {
            sample_type,
            bins,
            extremes: None,
            weights: WeightKind::None,
            policy: OutOfRange::Ignore,
            strategy: StrategyChoice::Auto,
            max_samples: 1 << 31,
            sums: WeightSums::Fast,
        }
    }
    /// With weights of this kind.
    pub fn weights(mut self, weights: WeightKind) -> Self {
        self.weights = weights;
        self
    }
    /// With this out-of-range policy.
    pub fn policy(mut self, policy: OutOfRange) -> Self {
        self.policy = policy;
        self
    }
    /// With this strategy.
    pub fn strategy(mut self, strategy: StrategyChoice) -> Self {
        self.strategy = strategy;
        self
    }
    /// For runs of at most this many samples.
    pub fn max_samples(mut self, max_samples: usize) -> Self {
        self.max_samples = max_samples;
        self
    }
    /// With bit-identical weighted sums ([`WeightSums::Deterministic`]; false:
    /// [`WeightSums::Fast`]).
    pub fn deterministic(mut self, deterministic: bool) -> Self {
        self.sums = if deterministic {
            WeightSums::Deterministic
        } else {
            WeightSums::Fast
        };
        self
    }
    /// With float weights added as `sums` says.
    pub fn sums(mut self, sums: WeightSums) -> Self {
        self.sums = sums;
        self
    }
    /// Uniform bins without a range resolved from the data's extremes (`None`: no samples).
    pub fn extremes(mut self, extremes: Option<(f64, f64)>) -> Self {
        self.extremes = Some(extremes);
        self
    }
}

/// Weights in device memory, one per sample.
#[derive(Debug, Clone, Copy)]
pub enum DeviceWeights<'a> {
    /// float32 weights.
    F32(&'a CudaView<'a, f32>),
    /// float64 weights.
    F64(&'a CudaView<'a, f64>),
    /// int64 weights (other integer types: widen them to int64 first; uint64 as their bits).
    I64(&'a CudaView<'a, i64>),
}

/// A histogram's result in device memory: one allocation of 3 + nbins u64 words, the tallies
/// (below, above, NaN) first and then the counts (u64) or the sums (f64 bits, or i64 of int64
/// weights), so that one memset clears it.
pub struct DeviceOutput {
    words: CudaSlice<u64>,
    nbins: usize,
    weights: WeightKind,
    policy: OutOfRange,
}

impl DeviceOutput {
    /// The whole buffer: tallies, then counts or sums.
    pub fn words(&self) -> &CudaSlice<u64> {
        &self.words
    }
    /// How many bins.
    pub fn nbins(&self) -> usize {
        self.nbins
    }
    /// Device address of the 3 tallies.
    pub fn tallies_ptr(&self, stream: &CudaStream) -> u64 {
        self.words.device_ptr(stream).0
    }
    /// Device address of the nbins counts (u64) or sums (f64).
    pub fn bins_ptr(&self, stream: &CudaStream) -> u64 {
        self.tallies_ptr(stream) + 24
    }

    /// A zeroed output for `engine`'s bins (allocated on its GPU's own stream).
    pub(crate) fn zeroed(engine: &DeviceEngine, policy: OutOfRange) -> Result<DeviceOutput> {
        let words = engine
            .gpu()
            .stream
            .alloc_zeros::<u64>(3 + engine.nbins())
            .map_err(cuda_err("allocating a histogram output"))?;
        Ok(Self::of(engine, policy, words))
    }

    /// An output for `engine`'s bins left as the allocator gives it (on the GPU's own stream),
    /// for a first run that clears or overwrites it (`accumulate` false).
    pub(crate) fn uncleared(engine: &DeviceEngine, policy: OutOfRange) -> Result<DeviceOutput> {
        // SAFETY: the caller's first run clears or overwrites every word before anything reads
        // them (DeviceEngine::enqueue without `accumulate`).
        let words = unsafe { engine.gpu().stream.alloc::<u64>(3 + engine.nbins()) }
            .map_err(cuda_err("allocating a histogram output"))?;
        Ok(Self::of(engine, policy, words))
    }

    fn of(engine: &DeviceEngine, policy: OutOfRange, words: CudaSlice<u64>) -> DeviceOutput {
        DeviceOutput {
            words,
            nbins: engine.nbins(),
            weights: engine.weight_kind(),
            policy,
        }
    }

    /// Waits for `stream` and copies the result to the host. With [`OutOfRange::Error`], samples
    /// outside the bins fail here (the run itself cannot report them without a host round trip).
    pub fn read(&self, stream: &Arc<CudaStream>) -> Result<(Counts, Tallies)> {
        let (counts, tallies) = self.read_unchecked(stream)?;
        if self.policy == OutOfRange::Error
            && (tallies.below > 0 || tallies.above > 0 || tallies.nan > 0)
        {
            return Err(Error::OutOfRange {
                below: tallies.below,
                above: tallies.above,
                nan: tallies.nan,
            });
        }
        Ok((counts, tallies))
    }

    /// [`DeviceOutput::read`] without the out-of-range policy's check (for callers that check it
    /// themselves). Two copies, the tallies and the bins, so that neither is moved on the host.
    pub(crate) fn read_unchecked(&self, stream: &Arc<CudaStream>) -> Result<(Counts, Tallies)> {
        let t = stream
            .clone_dtoh(&self.words.slice(0..3))
            .map_err(cuda_err(
                "reading a histogram back (a kernel may have failed)",
            ))?;
        let bins = stream
            .clone_dtoh(&self.words.slice(3..3 + self.nbins))
            .map_err(cuda_err("reading the bins back"))?;
        let tallies = Tallies {
            below: t[0],
            above: t[1],
            nan: t[2],
        };
        let counts = match self.weights {
            // Collected in place: the u64 allocation becomes the f64 one.
            WeightKind::F32 | WeightKind::F64 => {
                Counts::Weighted(bins.into_iter().map(f64::from_bits).collect())
            }
            // The two's-complement sums modulo 2^64, as int64.
            WeightKind::I64 => Counts::Integer {
                sums: bins.into_iter().map(|b| b as i64).collect(),
                dtype: crate::int_weights::IntType::I64,
            },
            WeightKind::None => Counts::Unweighted(bins),
        };
        Ok((counts, tallies))
    }
}

/// A histogram built once and run many times on device memory (see the module documentation).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use smemkit::device::{DeviceHistogram, DeviceHistogramSpec};
/// use smemkit::{bins::BinSpec, histogram::Counts, sample::SampleType};
///
/// let gpu = smemkit::gpu()?;
/// let stream = gpu.ctx.new_stream()?;
/// let samples = stream.clone_htod(&[0i32, 1, 1, 3, 7, 255])?;
/// let spec = DeviceHistogramSpec::new(SampleType::I32, BinSpec::Integer { nbins: 256 })
///     .max_samples(1 << 20);
/// let hist = DeviceHistogram::new(&gpu, &spec)?;
/// let mut out = hist.output()?;
/// hist.run(&samples.as_view(), None, &mut out, &stream)?;
/// let (counts, tallies) = out.read(&stream)?;
/// assert!(matches!(counts, Counts::Unweighted(ref c) if c[1] == 2 && c[255] == 1));
/// assert_eq!(tallies.above, 0);
/// # Ok(())
/// # }
/// ```
pub struct DeviceHistogram {
    engine: DeviceEngine,
    binning: Binning,
    spec: DeviceHistogramSpec,
    /// The one-launch kernel of small runs, made on request (see [`super::small`]).
    small: super::small::SmallSlot,
}

/// Empty samples of a type, to resolve bins that need no data.
fn no_samples(t: SampleType) -> Samples<'static> {
    match t {
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
    }
}

/// Resolves the bins of a device histogram: as the host engines do, except that uniform bins
/// must name their range.
pub fn resolve_bins(spec: &BinSpec, sample_type: SampleType) -> Result<Binning> {
    resolve_bins_from(spec, sample_type, None)
}

/// [`resolve_bins`], uniform bins without a range taken from the data's `extremes` where given
/// ([`DeviceHistogramSpec::extremes`]).
pub fn resolve_bins_from(
    spec: &BinSpec,
    sample_type: SampleType,
    extremes: Option<Option<(f64, f64)>>,
) -> Result<Binning> {
    let binning = match (spec, extremes) {
        (BinSpec::Uniform { range: None, .. }, Some(e)) => {
            crate::histogram::bins::extremes::resolve_from_extremes(spec, sample_type, e)?
        }
        (BinSpec::Uniform { range: None, .. }, None) => {
            return Err(Error::InvalidArgument(
                "a device histogram's uniform bins need a range, or the data's extremes \
                 (DeviceHistogramSpec::extremes, read on the device)"
                    .into(),
            ))
        }
        _ => Binning::resolve(spec, no_samples(sample_type))?,
    };
    // What the CUDA kernels do not reproduce yet (16-bit float samples, exact integer edges).
    if let Some(what) = crate::histogram::engine_support::cuda_gap(&binning, sample_type) {
        return Err(Error::NotImplemented(format!(
            "{what} in a device histogram (the CUDA engine does not take them yet)"
        )));
    }
    Ok(binning)
}

impl DeviceHistogram {
    /// Plans and compiles the histogram and allocates its scratch on `gpu`; returns once the GPU
    /// has made the scratch ready, so that runs may come on any stream.
    pub fn new(gpu: &Arc<Gpu>, spec: &DeviceHistogramSpec) -> Result<DeviceHistogram> {
        let binning = resolve_bins_from(&spec.bins, spec.sample_type, spec.extremes)?;
        let engine = DeviceEngine::with_sums(
            gpu,
            Counting {
                sample_type: spec.sample_type,
                weights: spec.weights,
                binning: &binning,
                policy: spec.policy,
            },
            spec.strategy,
            spec.sums,
            spec.max_samples,
            Some(spec.max_samples.max(1)),
        )?;
        // The scratch was allocated (stream-ordered) and cleared on the library's own stream,
        // and the runs come on the caller's, which need not wait for that one (a non-blocking
        // stream does not): building waits for it here, so that a run never races the clearing.
        gpu.stream
            .synchronize()
            .map_err(cuda_err("preparing a device histogram"))?;
        Ok(DeviceHistogram {
            engine,
            binning,
            spec: spec.clone(),
            small: Default::default(),
        })
    }

    /// How many bins.
    pub fn nbins(&self) -> usize {
        self.binning.nbins()
    }
    /// The resolved bins.
    pub fn binning(&self) -> &Binning {
        &self.binning
    }
    /// What it was built for.
    pub fn spec(&self) -> &DeviceHistogramSpec {
        &self.spec
    }
    /// The GPU it runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        self.engine.gpu()
    }
    pub(super) fn small_kernel(&self) -> &super::small::SmallSlot {
        &self.small
    }
    pub(super) fn kernel_params(&self) -> super::params::KernelBinParams {
        self.engine.kernel_params()
    }

    /// One line on the plan, for reports (reads the last skew verdict back, waiting for the GPU).
    pub fn detail(&self) -> String {
        self.engine.detail()
    }

    /// A zeroed output for this histogram (allocated on the GPU's own stream, once; runs reuse
    /// it), ready for a run on any stream when this returns.
    pub fn output(&self) -> Result<DeviceOutput> {
        let out = DeviceOutput::zeroed(&self.engine, self.spec.policy)?;
        // Zeroed on the library's stream: waited for, as the scratch is in `new`, so that a run
        // on another stream cannot race the memset (late zeros would wipe what the run's first
        // blocks added).
        self.gpu()
            .stream
            .synchronize()
            .map_err(cuda_err("preparing a histogram output"))?;
        Ok(out)
    }

    /// Histograms `input` (with `weights` where the histogram was built weighted) into `out`,
    /// overwriting it, on `stream`; returns once everything is enqueued. The input, weights and
    /// output must stay alive and unmodified until the stream has run it (the borrows end when
    /// this returns: order later writes after it on the stream). Runs of one histogram share its
    /// scratch: on different streams, order them (events) or build one histogram per stream.
    pub fn run<T: Sample + DeviceRepr>(
        &self,
        input: &CudaView<'_, T>,
        weights: Option<DeviceWeights<'_>>,
        out: &mut DeviceOutput,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        self.run_impl(input, T::TYPE, weights, out, stream, false)
    }

    /// [`DeviceHistogram::run`] for a float16 or bfloat16 histogram, its samples viewed as their
    /// 16-bit codes (cudarc's views of the `half` types need its `f16` feature, which pulls in
    /// dependencies this crate does not otherwise need; raw pointers go to
    /// [`DeviceHistogram::run_raw`]).
    pub fn run_bits(
        &self,
        input: &CudaView<'_, u16>,
        weights: Option<DeviceWeights<'_>>,
        out: &mut DeviceOutput,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        let t = self.spec.sample_type;
        if !crate::histogram::cuda::half_table::is_half(t) {
            return Err(Error::InvalidArgument(format!(
                "run_bits takes the 16-bit codes of float16 or bfloat16 samples; this histogram is of {t} (use run)"
            )));
        }
        self.run_impl(input, t, weights, out, stream, false)
    }

    /// [`DeviceHistogram::run`] adding into `out` instead of overwriting it (chunks of one
    /// histogram).
    pub fn run_accumulate<T: Sample + DeviceRepr>(
        &self,
        input: &CudaView<'_, T>,
        weights: Option<DeviceWeights<'_>>,
        out: &mut DeviceOutput,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        self.run_impl(input, T::TYPE, weights, out, stream, true)
    }

    fn run_impl<T: DeviceRepr>(
        &self,
        input: &CudaView<'_, T>,
        sample_type: SampleType,
        weights: Option<DeviceWeights<'_>>,
        out: &mut DeviceOutput,
        stream: &Arc<CudaStream>,
        accumulate: bool,
    ) -> Result<()> {
        if out.nbins != self.nbins() || out.weights != self.spec.weights {
            return Err(Error::InvalidArgument(format!(
                "the output was made for {} bins with weights {:?}, this histogram has {} with {:?}",
                out.nbins,
                out.weights,
                self.nbins(),
                self.spec.weights
            )));
        }
        let (w, _w_guard32, _w_guard64, _w_guard_i64);
        match weights {
            None => {
                w = None;
                (_w_guard32, _w_guard64, _w_guard_i64) = (None, None, None);
            }
            Some(DeviceWeights::F32(v)) => {
                let (p, g) = v.device_ptr(stream);
                w = Some((p, v.len(), WeightKind::F32));
                (_w_guard32, _w_guard64, _w_guard_i64) = (Some(g), None, None);
            }
            Some(DeviceWeights::F64(v)) => {
                let (p, g) = v.device_ptr(stream);
                w = Some((p, v.len(), WeightKind::F64));
                (_w_guard32, _w_guard64, _w_guard_i64) = (None, Some(g), None);
            }
            Some(DeviceWeights::I64(v)) => {
                let (p, g) = v.device_ptr(stream);
                w = Some((p, v.len(), WeightKind::I64));
                (_w_guard32, _w_guard64, _w_guard_i64) = (None, None, Some(g));
            }
        }
        let (in_ptr, _in_guard) = input.device_ptr(stream);
        let base = out.words.device_ptr(stream).0;
        // SAFETY: the view holds input.len() samples of T, the weights view its length, and the
        // output 3 + nbins words, all borrowed for this call; the caller keeps them alive until
        // the stream has run (documented above).
        unsafe {
            self.enqueue(
                stream,
                &RawBuffers {
                    input: in_ptr,
                    n: input.len(),
                    sample_type,
                    weights: w.map_or(0, |w| w.0),
                    bins: base + 24,
                    tallies: base,
                },
                w.map(|w| (w.1, w.2)),
                accumulate,
            )
        }
    }

    /// [`DeviceHistogram::run`] on memory and a stream that another framework owns (torch, CuPy,
    /// JAX): `buffers` says where the samples, weights, bins and tallies lie. With `accumulate`
    /// the result is added to what the bins and tallies hold.
    ///
    /// # Safety
    /// Every address must be device memory of this GPU's context (the primary context, which
    /// torch and CuPy use) holding what [`RawBuffers`] says, and stay valid and unwritten by
    /// others until `stream` has run the histogram; `stream` must be a live stream of that
    /// context (or the legacy or per-thread default stream).
    pub unsafe fn run_raw(
        &self,
        buffers: &RawBuffers,
        stream: sys::CUstream,
        accumulate: bool,
    ) -> Result<()> {
        let gpu = self.engine.gpu();
        gpu.bind()?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `stream` is a live stream (the caller's guarantee); `ctx` a valid out pointer.
        unsafe {
            crate::gpu::launch::check(
                sys::cuStreamGetCtx(stream, &mut ctx),
                "asking which context the stream belongs to",
            )?
        };
        if ctx != gpu.ctx.cu_ctx() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to another CUDA context than device {}'s primary context",
                gpu.ordinal
            )));
        }
        // SAFETY: the stream is the caller's and of this context; the wrapper does not own it.
        let stream = unsafe { gpu.ctx.wrap_borrowed_stream(stream) };
        let w = (buffers.weights != 0).then_some((buffers.n, self.spec.weights));
        // SAFETY: forwarded from the caller.
        unsafe { self.enqueue(&stream, buffers, w, accumulate) }
    }

    /// The launches of one run, through the engine the host-slice path shares.
    ///
    /// # Safety
    /// As [`DeviceHistogram::run_raw`], with `stream` of this context.
    unsafe fn enqueue(
        &self,
        stream: &Arc<CudaStream>,
        buffers: &RawBuffers,
        weights: Option<(usize, WeightKind)>,
        accumulate: bool,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.engine.enqueue(stream, buffers, weights, accumulate) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_resolve_without_data_as_with_it() {
        let data = [0.25f32, 3.5, 9.0];
        for spec in [
            BinSpec::Uniform {
                nbins: 100,
                range: Some((0.0, 1.0)),
            },
            BinSpec::Uniform {
                nbins: 4096,
                range: Some((0.0, 4096.0)),
            },
            BinSpec::Edges(vec![0.0, 0.5, 2.0, 10.0]),
        ] {
            assert_eq!(
                resolve_bins(&spec, SampleType::F32).unwrap(),
                Binning::resolve(&spec, Samples::F32(&data)).unwrap(),
                "{spec:?}"
            );
        }
        let ints = [1i32, 70, -3];
        let spec = BinSpec::Uniform {
            nbins: 7,
            range: Some((0.0, 70.0)),
        };
        assert_eq!(
            resolve_bins(&spec, SampleType::I32).unwrap(),
            Binning::resolve(&spec, Samples::I32(&ints)).unwrap()
        );
        assert!(resolve_bins(&BinSpec::Integer { nbins: 10 }, SampleType::U8).is_ok());
        // Refused on the host, before any GPU work: no range, integer bins of floats, no bins.
        let no_range = BinSpec::Uniform {
            nbins: 10,
            range: None,
        };
        assert!(resolve_bins(&no_range, SampleType::F32)
            .unwrap_err()
            .to_string()
            .contains("range"));
        assert!(resolve_bins(&BinSpec::Integer { nbins: 10 }, SampleType::F64).is_err());
        assert!(resolve_bins(&BinSpec::Integer { nbins: 0 }, SampleType::I32).is_err());
        let half = BinSpec::Uniform {
            nbins: 4,
            range: Some((0.0, 1.0)),
        };
        // 16-bit floats resolve as the host engines resolve them (numpy's float16 linspace).
        assert_eq!(
            resolve_bins(&half, SampleType::F16).unwrap(),
            Binning::resolve(&half, Samples::F16(&[])).unwrap()
        );
    }
}
