//! numpy's bin estimators (`bins='auto'`, `'fd'`, `'doane'`, `'scott'`, `'stone'`, `'rice'`,
//! `'sturges'`, `'sqrt'`) for samples already in GPU memory, computed where the samples are: the statistics
//! come from device passes (`estimate_passes`) and the widths and the bin count from the
//! same code as the CPU engine's ([`crate::histogram::bins::estimators`]), so both engines give
//! the same bins bit for bit.
//!
//! The number of bins decides the shape of the result, so the host must learn it: these functions
//! synchronise the stream (after the first pass, which brings the count and the extremes; after
//! each further sum; for the quartiles after the first digits are chosen and once at the end)
//! and return when the bins are known. Only a few numbers cross to the host, never the samples.
//! Their cost in passes over the samples (without a range): `sqrt`, `sturges` and `rice` one
//! (the extremes); `scott` two (the extremes with the sum of the samples, then the squared
//! deviations); `doane` three (and the cubes, which need the standard deviation); `fd` and
//! `auto` about one: up to a million evenly spaced samples, selected on the device, place two key
//! windows around the quartiles, one pass finds the extremes, counts the samples below the windows
//! and copies those inside, and the quartiles' neighbours are selected in the copy
//! ([`super::estimate_window`]);
//! when the windows miss (or for fewer than a few million samples), a radix select whose first
//! pass also finds the extremes, then either one pass that copies out the samples agreeing with
//! the quartiles' first digits (when few do: the later digit passes read only them) or one pass
//! per further 11 bits of the sample type. With a
//! range, `scott` and `doane` find the extremes with the count of the samples inside the range in
//! each tile, then pack those samples (one more pass), since numpy sums the trimmed array, whose
//! summation tree differs; their sums read only the packed samples. bfloat16 sums are ml_dtypes'
//! (one value after another, each total rounded to bfloat16): each is a pass that finds the
//! extremes of each chunk's values and one warp walking the chain, skipping the chunks too small
//! to move the total ([`Passes::chain`]): fast where the total stalls (squares, data of one
//! sign), a value at a time on mean-zero data, whose ml_dtypes total keeps moving.
//!
//! `'stone'` histograms the data at every bin count up to `max(100, sqrt(n))`, each a device
//! histogram (a full pass) whose counts come back to the host, where the same code as the CPU
//! engine's scores them: thousands of passes for large inputs (numpy's own cost is the same
//! number of histograms, on the CPU).
//!
//! Doane's skew cubes each standardised sample; the device rounds the cube correctly, the host's
//! libm `pow` (which numpy and the CPU engine call) within an ulp of it, so the two skews can
//! differ in their last bits in rare cases; the bin count differs only if the quotient of the span
//! by the width falls within that difference of an integer.

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr};

use super::device_histogram::{DeviceHistogram, DeviceHistogramSpec, RawBuffers};
use super::estimate_passes::{Kind, Passes, Tiles};
use super::estimate_window::Quartiles;
use crate::error::{Error, Result};
use crate::gpu::device::Gpu;
use crate::histogram::bins::estimators::{
    bins_from_width, stone_from_counts, width_of, BinRule, EstimatorStats, Narrow, Width,
};
use crate::histogram::bins::stats::{self, py_to_16, r16, rbf, Class};
use crate::histogram::bins::{BinSpec, Binning};
use crate::histogram::result::Counts;
use crate::sample::{Sample, SampleType, Samples};

/// What an estimator decided for samples on the GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceEstimate {
    /// numpy's number of equal bins.
    pub nbins: usize,
    /// numpy's `histogram_bin_edges` of those bins (float32 edges of float32 samples widened
    /// exactly to f64): hand them to a [`super::device_histogram::DeviceHistogram`] as
    /// [`BinSpec::Edges`] when no range was given.
    pub edges: Vec<f64>,
    /// The data's smallest and largest sample as f64, when no range was given and there are
    /// samples (integers beyond 2^53 rounded).
    pub extremes: Option<(f64, f64)>,
}

/// numpy's bins for `rule` on the samples of `input` over `range` (the data's minimum and
/// maximum when `None`), computed on `stream` (see the module documentation: this synchronises
/// `stream`).
pub fn estimate_bins<T: Sample + DeviceRepr>(
    gpu: &Arc<Gpu>,
    input: &CudaView<'_, T>,
    rule: BinRule,
    range: Option<(f64, f64)>,
    stream: &Arc<CudaStream>,
) -> Result<DeviceEstimate> {
    let (ptr, _guard) = input.device_ptr(stream);
    // SAFETY: the view holds input.len() samples of T, borrowed until this call returns, which
    // is after the stream has run every kernel of the estimate.
    unsafe { estimate_on(gpu, stream.clone(), ptr, input.len(), T::TYPE, rule, range) }
}

/// [`estimate_bins`] on memory and a stream another framework owns: `input` holds `n` samples of
/// `sample_type` (aligned to their size).
///
/// # Safety
/// `input` must be device memory of `gpu`'s (primary) context holding what is said above, valid
/// until this call returns; `stream` a live stream of that context.
pub unsafe fn estimate_bins_raw(
    gpu: &Arc<Gpu>,
    input: u64,
    n: usize,
    sample_type: SampleType,
    rule: BinRule,
    range: Option<(f64, f64)>,
    stream: sys::CUstream,
) -> Result<DeviceEstimate> {
    gpu.bind()?;
    // SAFETY: the caller's stream of this context; the wrapper does not own it.
    let stream = unsafe { gpu.ctx.wrap_borrowed_stream(stream) };
    // SAFETY: forwarded from the caller.
    unsafe { estimate_on(gpu, stream, input, n, sample_type, rule, range) }
}

/// # Safety
/// As [`estimate_bins_raw`], with `stream` of `gpu`'s context.
unsafe fn estimate_on(
    gpu: &Arc<Gpu>,
    stream: Arc<CudaStream>,
    input: u64,
    n: usize,
    sample_type: SampleType,
    rule: BinRule,
    range: Option<(f64, f64)>,
) -> Result<DeviceEstimate> {
    if stream.context().cu_ctx() != gpu.ctx.cu_ctx() {
        return Err(Error::InvalidArgument(format!(
            "the stream belongs to another CUDA context than device {}'s",
            gpu.ordinal
        )));
    }
    if input % sample_type.size() as u64 != 0 {
        return Err(Error::InvalidArgument(format!(
            "samples at {input:#x}: {sample_type} samples must be aligned to {} bytes",
            sample_type.size()
        )));
    }
    let passes = Passes::new(gpu, stream, sample_type)?;
    macro_rules! typed {
        ($t:ty) => {
            // SAFETY: forwarded from the caller; the type is the samples'.
            unsafe { estimate_typed::<$t>(&passes, input, n, rule, range) }
        };
    }
    match sample_type {
        SampleType::U8 => typed!(u8),
        SampleType::U16 => typed!(u16),
        SampleType::U32 => typed!(u32),
        SampleType::U64 => typed!(u64),
        SampleType::I8 => typed!(i8),
        SampleType::I16 => typed!(i16),
        SampleType::I32 => typed!(i32),
        SampleType::I64 => typed!(i64),
        SampleType::F32 => typed!(f32),
        SampleType::F64 => typed!(f64),
        SampleType::F16 => typed!(half::f16),
        SampleType::BF16 => typed!(half::bf16),
    }
}

/// The sample of an order-preserving key of `estimate.cu` (`key_of`).
pub(crate) fn value_of<T: Sample>(kind: Kind, key: u64) -> T {
    let size = std::mem::size_of::<T>();
    let bits = match kind {
        Kind::F32 => {
            let k = key as u32;
            (if k & 0x8000_0000 != 0 {
                k ^ 0x8000_0000
            } else {
                !k
            }) as u64
        }
        Kind::F64 => {
            if key & (1 << 63) != 0 {
                key ^ (1 << 63)
            } else {
                !key
            }
        }
        Kind::F16 | Kind::BF16 => {
            let k = key as u16;
            (if k & 0x8000 != 0 { k ^ 0x8000 } else { !k }) as u64
        }
        Kind::Signed => key ^ (1u64 << (8 * size - 1)),
        Kind::Unsigned => key,
    };
    let (bytes, at) = if cfg!(target_endian = "little") {
        (bits.to_le_bytes(), 0)
    } else {
        (bits.to_be_bytes(), 8 - size)
    };
    // SAFETY: T is one of the sample types, a plain number of `size` <= 8 bytes for which every
    // bit pattern is valid; `bytes[at..]` holds its `size` bytes in native order.
    unsafe { std::ptr::read_unaligned(bytes[at..].as_ptr() as *const T) }
}

/// # Safety
/// As [`estimate_bins_raw`], with `T` the samples' type.
unsafe fn estimate_typed<T: Sample>(
    passes: &Passes,
    input: u64,
    n: usize,
    rule: BinRule,
    range: Option<(f64, f64)>,
) -> Result<DeviceEstimate>
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    // The range's checks come first, as on the CPU.
    let checked = match range {
        Some(_) => Some(stats::outer_of::<T>(range, || None)?),
        None => None,
    };
    // numpy compares float16 samples with the range rounded to float16: the kernels take those
    // values.
    let trim = checked.as_ref().map(|o| match stats::class_of(T::TYPE) {
        Class::F16 => (py_to_16(o.lo) as f64, py_to_16(o.hi) as f64),
        _ => (o.lo, o.hi),
    });
    // The first pass finds the count and the extremes, and with them what the rule needs first.
    let (mut total, mut selection, mut tiles) = (None, None, None);
    let [count, lo_key, hi_key, nans] = match first_pass(rule, trim.is_some(), passes.kind) {
        // SAFETY: forwarded from the caller.
        First::Extremes => unsafe { passes.extremes(input, n, trim)? },
        First::Tiles => {
            let range = trim.expect("tiles only with a range");
            // SAFETY: forwarded from the caller.
            let (ext, t) = unsafe { passes.extremes_and_tiles(input, n, range)? };
            tiles = Some(t);
            ext
        }
        First::Sum => {
            // SAFETY: forwarded from the caller.
            let (ext, sum) = unsafe { passes.extremes_and_sum(input, n)? };
            total = Some(sum);
            ext
        }
        First::Digits => {
            // SAFETY: forwarded from the caller (the selection reads the samples until the
            // quartiles are known, within this call).
            let (ext, q) = unsafe { passes.extremes_for_quartiles(input, n, trim)? };
            selection = Some(q);
            ext
        }
    };
    if range.is_none() && nans > 0 {
        return Err(Error::NonFiniteData {
            lo: f64::NAN,
            hi: f64::NAN,
        });
    }
    let count = count as usize;
    let minmax = (count > 0).then(|| {
        (
            value_of::<T>(passes.kind, lo_key),
            value_of::<T>(passes.kind, hi_key),
        )
    });
    let outer = match checked {
        Some(o) => o,
        None => stats::outer_of::<T>(None, || minmax)?,
    };
    let nbins = if count == 0 {
        1
    } else {
        let (min, max) = minmax.expect("samples");
        let mut x = DeviceStats {
            passes,
            input,
            n,
            trim,
            count,
            min,
            max,
            packed: None,
            tiles,
            total,
            selection,
            moments: None,
        };
        let width = width_of(&mut x, rule, range)?;
        bins_from_width(outer.span, width, stats::class_of(T::TYPE) == Class::Int)?
    };
    let lo_hi: Vec<T> = match (range, minmax) {
        (None, Some((min, max))) => vec![min, max],
        _ => Vec::new(),
    };
    let samples: Samples<'_> = lo_hi.as_slice().into();
    let edges = Binning::resolve(&BinSpec::Uniform { nbins, range }, samples)?.edges();
    Ok(DeviceEstimate {
        nbins,
        edges,
        extremes: lo_hi.first().map(|lo| (lo.to_f64(), lo_hi[1].to_f64())),
    })
}

/// What the first pass over the samples computes besides their count and extremes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    /// Nothing: the rule needs no more.
    Extremes,
    /// The samples inside the range in each tile, for packing the trimmed array that `scott` and
    /// `doane` sum.
    Tiles,
    /// numpy's sum of the samples, for the mean of `scott` and `doane` (no range: every sample
    /// is summed, in the tree of the whole array).
    Sum,
    /// The first pass of the quartiles' selection, for `fd` and `auto` (see
    /// [`Passes::extremes_for_quartiles`]).
    Digits,
}

/// The first pass for `rule`, with or without a range, on samples of `kind` (bfloat16 sums are
/// chains of their own, [`Passes::chain`], which no first pass can start).
fn first_pass(rule: BinRule, trimmed: bool, kind: Kind) -> First {
    match rule {
        BinRule::Fd | BinRule::Auto => First::Digits,
        BinRule::Scott | BinRule::Doane if !trimmed && kind == Kind::BF16 => First::Extremes,
        BinRule::Scott | BinRule::Doane if !trimmed => First::Sum,
        BinRule::Scott | BinRule::Doane => First::Tiles,
        _ => First::Extremes,
    }
}

/// The trimmed samples' statistics, computed on the device as they are asked for.
struct DeviceStats<'p, T> {
    passes: &'p Passes,
    input: u64,
    n: usize,
    /// The outer edges the samples are trimmed to, when a range was given.
    trim: Option<(f64, f64)>,
    count: usize,
    min: T,
    max: T,
    /// The trimmed samples packed in order (for the sums), once packed.
    packed: Option<CudaSlice<u8>>,
    /// The first pass's tile counts of the trimmed samples, until they are packed.
    tiles: Option<Tiles>,
    /// numpy's sum of the samples, when the first pass computed it.
    total: Option<f64>,
    /// The selection of the quartiles, its first pass done with the extremes.
    selection: Option<Quartiles>,
    /// (mean, standard deviation) in numpy's types, held in f64 (float32 exactly).
    moments: Option<(f64, f64)>,
}

impl<T: Sample> DeviceStats<'_, T> {
    fn is_f32(&self) -> bool {
        T::TYPE == SampleType::F32
    }
    fn is_f16(&self) -> bool {
        T::TYPE == SampleType::F16
    }
    fn is_bf16(&self) -> bool {
        T::TYPE == SampleType::BF16
    }

    /// The trimmed samples in order: the input itself without a range, else packed.
    fn summed(&mut self) -> Result<u64> {
        let Some((lo, hi)) = self.trim else {
            return Ok(self.input);
        };
        if self.count == self.n {
            // The range keeps every sample (none NaN): the trimmed array is the input.
            return Ok(self.input);
        }
        if self.packed.is_none() {
            // SAFETY: the input's `n` samples are valid for the whole estimate (the caller's
            // promise); the packed buffer is owned here.
            let tiles = self.tiles.take();
            self.packed = Some(unsafe {
                self.passes
                    .pack(self.input, self.n, (lo, hi), self.count, tiles)?
            });
        }
        let packed = self.packed.as_ref().expect("packed above");
        Ok(packed.device_ptr(&self.passes.stream).0)
    }

    /// numpy's pairwise sum of `term` of the trimmed samples (see [`Passes::pairwise`]).
    fn sum(&mut self, term: (i32, f64, f64)) -> Result<f64> {
        let at = self.summed()?;
        // SAFETY: `at` holds the `count` trimmed samples (the input, or the packed buffer).
        unsafe { self.passes.pairwise(at, self.count, term) }
    }

    /// ml_dtypes' sum of `term` of the trimmed bfloat16 samples (see [`Passes::chain`]), a
    /// bfloat16 value.
    fn chain(&mut self, term: (i32, f64, f64)) -> Result<f32> {
        let at = self.summed()?;
        // SAFETY: as in `sum`.
        Ok(unsafe { self.passes.chain(at, self.count, term)? } as f32)
    }

    /// `np.mean` and `np.std` as the CPU engine computes them (stats.rs).
    fn moments(&mut self) -> Result<(f64, f64)> {
        if let Some(m) = self.moments {
            return Ok(m);
        }
        let n = self.count as f64;
        let m = if self.is_bf16() {
            // stats::std_bf16: ml_dtypes' sums, each divided by the count in float64 and rounded
            // to bfloat16; the square root in float32, rounded to bfloat16.
            let mean = stats::mean_of_bf16_sum(self.chain((0, 0.0, 0.0))?, self.count);
            let squares = self.chain((1, mean as f64, 0.0))?;
            let var = stats::mean_of_bf16_sum(squares, self.count);
            (mean as f64, rbf(var.sqrt()) as f64)
        } else if self.is_f16() {
            // stats::std_f16: float32 sums of the whole array rounded to float16, divided in
            // float64, each step rounded to float16.
            let total = match self.total {
                Some(t) => t,
                None => self.sum((0, 0.0, 0.0))?,
            };
            let mean = r16((r16(total as f32) as f64 / n) as f32);
            let squares = r16(self.sum((1, mean as f64, 0.0))? as f32);
            let var = r16((squares as f64 / n) as f32);
            (mean as f64, r16(var.sqrt()) as f64)
        } else if self.is_f32() {
            let total = match self.total {
                Some(t) => t,
                None => self.sum((0, 0.0, 0.0))?,
            };
            let mean = (total / n) as f32;
            let squares = self.sum((1, mean as f64, 0.0))?;
            (mean as f64, ((squares / n) as f32).sqrt() as f64)
        } else {
            let total = if let Some(t) = self.total {
                t
            } else if stats::class_of(T::TYPE) == Class::Int {
                let at = self.summed()?;
                // SAFETY: as in `sum`.
                unsafe { self.passes.buffered(at, self.count, (0, 0.0, 0.0))? }
            } else {
                self.sum((0, 0.0, 0.0))?
            };
            let mean = total / n;
            let squares = self.sum((1, mean, 0.0))?;
            (mean, (squares / n).sqrt())
        };
        self.moments = Some(m);
        Ok(m)
    }
}

impl<T: Sample> EstimatorStats for DeviceStats<'_, T> {
    fn len(&self) -> usize {
        self.count
    }
    fn ptp_f32(&self) -> Option<f32> {
        self.is_f32().then(|| self.max.to_f32() - self.min.to_f32())
    }
    fn ptp_f16(&self) -> Option<f32> {
        self.is_f16()
            .then(|| r16(self.max.to_f32() - self.min.to_f32()))
    }
    fn ptp_bf16(&self) -> Option<f32> {
        self.is_bf16()
            .then(|| rbf(self.max.to_f32() - self.min.to_f32()))
    }
    fn ptp_f64(&self) -> f64 {
        if let Some(p) = self.ptp_f32().or(self.ptp_f16()).or(self.ptp_bf16()) {
            return p as f64;
        }
        match stats::class_of(T::TYPE) {
            Class::Int => (self.max.to_i128() - self.min.to_i128()) as u128 as f64,
            _ => self.max.to_f64() - self.min.to_f64(),
        }
    }
    fn std(&mut self) -> Result<Width> {
        let (_, std) = self.moments()?;
        Ok(if self.is_f16() {
            Width::F16(std as f32)
        } else if self.is_bf16() {
            Width::BF16(std as f32)
        } else if self.is_f32() {
            Width::F32(std as f32)
        } else {
            Width::F64(std)
        })
    }
    fn skew(&mut self) -> Result<Option<f64>> {
        let (mean, sigma) = self.moments()?;
        if sigma.is_nan() || sigma <= 0.0 {
            return Ok(None);
        }
        if self.is_bf16() {
            // estimators::skew_bf16: the cubes' ml_dtypes sum divided as the mean's.
            let cubes = self.chain((2, mean, sigma))?;
            return Ok(Some(stats::mean_of_bf16_sum(cubes, self.count) as f64));
        }
        if self.is_f16() {
            // estimators::skew_f16: np.mean of float16 sums float32 blocks of 8192 in turn,
            // the mean rounded to float16, for the deviations and for the cubes' mean.
            let n = self.count as f64;
            let at = self.summed()?;
            let mean_of = |total: f64| r16((total / n) as f32) as f64;
            // SAFETY: as in `sum`.
            let buffered_mean =
                mean_of(unsafe { self.passes.buffered(at, self.count, (0, 0.0, 0.0))? });
            // SAFETY: as in `sum`.
            let cubes = unsafe {
                self.passes
                    .buffered(at, self.count, (2, buffered_mean, sigma))?
            };
            return Ok(Some(mean_of(cubes)));
        }
        let cubes = self.sum((2, mean, sigma))?;
        let n = self.count as f64;
        Ok(Some(if self.is_f32() {
            (cubes / n) as f32 as f64
        } else {
            cubes / n
        }))
    }
    fn quartiles(&mut self) -> Result<(f64, f64)> {
        let n = self.count;
        let (a75, b75) = stats::percentile_ranks(n, 0.75);
        let (a25, b25) = stats::percentile_ranks(n, 0.25);
        let ranks = [a75, b75, a25, b25].map(|r| r as u64);
        let q = match self.selection.take() {
            Some(q) => q,
            // SAFETY: the input's `n` samples are valid for the whole estimate.
            None => unsafe {
                self.passes
                    .extremes_for_quartiles(self.input, self.n, self.trim)?
                    .1
            },
        };
        // SAFETY: as above.
        let (keys, _) = unsafe { self.passes.select_quartiles(q, ranks)? };
        let kind = self.passes.kind;
        let at = |i: usize| {
            let slot = ranks
                .iter()
                .position(|&r| r == i as u64)
                .expect("a selected rank");
            value_of::<T>(kind, keys[slot])
        };
        Ok((
            stats::percentile_at(n, 0.75, at),
            stats::percentile_at(n, 0.25, at),
        ))
    }
    fn stone(&mut self, range: Option<(f64, f64)>) -> Result<Option<Width>> {
        let (passes, input, n) = (self.passes, self.input, self.n);
        let extremes = (self.min.to_f64(), self.max.to_f64());
        let narrow = match (self.ptp_f16(), self.ptp_bf16(), self.ptp_f32()) {
            (Some(p), _, _) => Some(Narrow::F16(p)),
            (None, Some(p), _) => Some(Narrow::BF16(p)),
            (None, None, p) => p.map(Narrow::F32),
        };
        stone_from_counts(self.count, self.ptp_f64(), narrow, |nbins| {
            // SAFETY: the input's `n` samples are valid for the whole estimate.
            unsafe { candidate_counts(passes, input, n, T::TYPE, nbins, range, extremes) }
        })
    }
}

/// numpy's histogram of the samples at `nbins` equal bins over `range` (over the data's
/// `extremes` without one), counted on the device and read back: one of `stone`'s candidates.
/// Samples outside the range are outside its bins too, so the whole input gives the trimmed
/// samples' counts.
///
/// # Safety
/// `input` holds `n` samples of `ty` in device memory of the passes' context until this returns.
unsafe fn candidate_counts(
    passes: &Passes,
    input: u64,
    n: usize,
    ty: SampleType,
    nbins: usize,
    range: Option<(f64, f64)>,
    extremes: (f64, f64),
) -> Result<Vec<u64>> {
    let mut spec =
        DeviceHistogramSpec::new(ty, BinSpec::Uniform { nbins, range }).max_samples(n.max(1));
    if range.is_none() {
        spec = spec.extremes(Some(extremes));
    }
    let hist = DeviceHistogram::new(&passes.gpu, &spec)?;
    let out = hist.output()?;
    let buffers = RawBuffers {
        input,
        n,
        sample_type: ty,
        weights: 0,
        bins: out.bins_ptr(&passes.stream),
        tallies: out.tallies_ptr(&passes.stream),
    };
    // SAFETY: the samples as the caller promises; the output is owned here and read back (a
    // synchronisation of the stream) before it is dropped.
    unsafe { hist.run_raw(&buffers, passes.stream.cu_stream(), false)? };
    match out.read_unchecked(&passes.stream)?.0 {
        Counts::Unweighted(counts) => Ok(counts),
        other => Err(Error::InvalidArgument(format!(
            "internal: stone's candidate histogram gave {other:?} instead of counts"
        ))),
    }
}

#[cfg(test)]
#[path = "estimate_tests.rs"]
mod tests;
