//! The statistics numpy's bin estimators take from the data, computed as numpy computes them:
//! outer edges and their span in numpy's types, the data trimmed to a range, peak-to-peak,
//! means and standard deviations with numpy's pairwise summation (integer data summed as float64
//! in buffers of 8192, as numpy's casting reduction does; ml_dtypes' bfloat16 one element after
//! another, each sum rounded to bfloat16), and `linear` percentiles.

use std::any::Any;

use crate::error::{Error, Result};
use rayon::prelude::*;

use crate::histogram::bins::{BinSpec, Binning, Slot};
use crate::sample::{Sample, SampleType, Samples};

/// How numpy computes with a sample type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// float16: every operation rounded to float16 (sums accumulate in float32).
    F16,
    /// ml_dtypes' bfloat16: its own operations rounded to bfloat16 (sums too, one element at a
    /// time); beside Python floats float32, beside float64 scalars float64.
    BF16,
    F32,
    F64,
    Int,
}

/// The class of `ty`.
pub(crate) fn class_of(ty: SampleType) -> Class {
    match ty {
        SampleType::F16 => Class::F16,
        SampleType::BF16 => Class::BF16,
        SampleType::F32 => Class::F32,
        SampleType::F64 => Class::F64,
        _ => Class::Int,
    }
}

/// `x` rounded to float16 (held in an f32, which holds every float16 exactly). Rounding an f32
/// result of one operation on float16 values is the operation's correct float16 rounding (float32
/// has more than twice float16's precision, plus two bits), which is how numpy computes float16.
#[inline]
pub(crate) fn r16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// A Python float (or float64) meeting float16 data: converted to float16 once, as numpy does.
pub(crate) fn py_to_16(x: f64) -> f32 {
    crate::histogram::bins::half::f16_from_f64(x).to_f32()
}

/// `x` rounded to bfloat16 (held in an f32), as ml_dtypes rounds each of its operations, which
/// it computes in float32.
#[inline]
pub(crate) fn rbf(x: f32) -> f32 {
    half::bf16::from_f32(x).to_f32()
}

/// A float64 (or a Python int) becoming a bfloat16 as ml_dtypes converts it (through float32).
pub(crate) fn py_to_bf16(x: f64) -> f32 {
    crate::histogram::bins::half::bf16_from_f64(x).to_f32()
}

/// `last_edge - first_edge` in numpy's type for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Span {
    /// float16 extremes of float16 data (the value, held in an f32).
    F16(f32),
    /// bfloat16 extremes of bfloat16 data (the value, held in an f32).
    BF16(f32),
    /// float32 extremes of float32 data.
    F32(f32),
    /// float64 extremes (float64 data; integer data widened by 0.5).
    F64(f64),
    /// Integer extremes, subtracted exactly as unsigned.
    Unsigned(u128),
    /// A range given by the caller (Python floats).
    Python(f64),
}

/// numpy's outer edges (for trimming) and their span.
pub(crate) struct Outer {
    pub lo: f64,
    pub hi: f64,
    pub span: Span,
}

/// numpy's `_get_outer_edges`: the range (checked, widened by 0.5 when empty), or the data's
/// minimum and maximum (an error when not finite; `[0, 1]` for no data).
pub(crate) fn outer_edges<T: Sample>(s: &[T], range: Option<(f64, f64)>) -> Result<Outer> {
    outer_of(range, || extremes(s))
}

/// [`outer_edges`] from the samples' extremes (`extremes` is called only without a range; NaN
/// extremes for data holding NaN, `None` for no data).
pub(crate) fn outer_of<T: Sample>(
    range: Option<(f64, f64)>,
    extremes: impl FnOnce() -> Option<(T, T)>,
) -> Result<Outer> {
    if let Some((mut lo, mut hi)) = range {
        if lo > hi {
            return Err(Error::InvertedRange { lo, hi });
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::NonFiniteRange { lo, hi });
        }
        if lo == hi {
            lo -= 0.5;
            hi += 0.5;
        }
        return Ok(Outer {
            lo,
            hi,
            span: Span::Python(hi - lo),
        });
    }
    let Some((min, max)) = extremes() else {
        return Ok(Outer {
            lo: 0.0,
            hi: 1.0,
            span: Span::Unsigned(1),
        });
    };
    let (lo, hi) = (min.to_f64(), max.to_f64());
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(Error::NonFiniteData { lo, hi });
    }
    let span = match class_of(T::TYPE) {
        Class::F16 if lo == hi => {
            let (a, b) = (r16(lo as f32 - 0.5), r16(hi as f32 + 0.5));
            Span::F16(r16(b - a))
        }
        Class::F16 => Span::F16(r16(max.to_f32() - min.to_f32())),
        // A bfloat16 minus a Python float is a float32 in ml_dtypes.
        Class::BF16 if lo == hi => Span::F32((hi as f32 + 0.5) - (lo as f32 - 0.5)),
        Class::BF16 => Span::BF16(rbf(max.to_f32() - min.to_f32())),
        Class::F32 if lo == hi => Span::F32((hi as f32 + 0.5) - (lo as f32 - 0.5)),
        Class::F32 => Span::F32(max.to_f32() - min.to_f32()),
        Class::F64 | Class::Int if lo == hi => Span::F64((hi + 0.5) - (lo - 0.5)),
        Class::F64 => Span::F64(hi - lo),
        Class::Int => Span::Unsigned((max.to_i128() - min.to_i128()) as u128),
    };
    Ok(Outer { lo, hi, span })
}

/// Smallest and largest sample (NaN makes both NaN); `None` for no samples.
fn extremes<T: Sample>(s: &[T]) -> Option<(T, T)> {
    let mut it = s.iter().copied();
    let first = it.next()?;
    let mut acc = (first, first);
    for x in it {
        if x.is_nan() {
            return Some((x, x));
        }
        if x < acc.0 {
            acc.0 = x;
        }
        if x > acc.1 {
            acc.1 = x;
        }
    }
    if first.is_nan() {
        return Some((first, first));
    }
    Some(acc)
}

/// The samples an estimator sees: all of them, or those inside the range (numpy compares float32
/// data with the Python-float range in float32, as ml_dtypes compares bfloat16 data, float16
/// data in float16, other data in float64).
pub(crate) struct Trimmed<T> {
    pub v: Vec<T>,
}

pub(crate) fn trim<T: Sample>(s: &[T], range: Option<(f64, f64)>, outer: &Outer) -> Trimmed<T> {
    let v = match range {
        None => s.to_vec(),
        Some(_) if class_of(T::TYPE) == Class::F16 => {
            // numpy compares float16 data with the Python-float range in float16.
            let (lo, hi) = (py_to_16(outer.lo), py_to_16(outer.hi));
            s.iter()
                .copied()
                .filter(|x| x.to_f32() >= lo && x.to_f32() <= hi)
                .collect()
        }
        Some(_) if matches!(class_of(T::TYPE), Class::F32 | Class::BF16) => {
            let (lo, hi) = (outer.lo as f32, outer.hi as f32);
            s.iter()
                .copied()
                .filter(|x| x.to_f32() >= lo && x.to_f32() <= hi)
                .collect()
        }
        Some(_) => s
            .iter()
            .copied()
            .filter(|x| x.to_f64() >= outer.lo && x.to_f64() <= outer.hi)
            .collect(),
    };
    Trimmed { v }
}

impl<T: Sample> Trimmed<T>
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    pub fn len(&self) -> usize {
        self.v.len()
    }
    pub fn class(&self) -> Class {
        class_of(T::TYPE)
    }
    /// The samples when they are float32.
    pub fn f32(&self) -> Option<&[f32]> {
        (&self.v as &dyn Any)
            .downcast_ref::<Vec<f32>>()
            .map(Vec::as_slice)
    }
    fn min_max(&self) -> (T, T) {
        extremes(&self.v).expect("an estimator never sees an empty array")
    }
    /// numpy's `_ptp` for float32 data (a float32 difference).
    pub fn ptp_f32(&self) -> Option<f32> {
        let v = self.f32()?;
        let (lo, hi) = extremes(v)?;
        Some(hi - lo)
    }
    /// The samples' values when they are float16 (each exact in f32).
    pub fn f16_values(&self) -> Option<Vec<f32>> {
        (self.class() == Class::F16).then(|| self.v.iter().map(|x| x.to_f32()).collect())
    }
    /// numpy's `_ptp` for float16 data (a float16 difference, held in an f32).
    pub fn ptp_f16(&self) -> Option<f32> {
        if self.class() != Class::F16 {
            return None;
        }
        let (lo, hi) = self.min_max();
        Some(r16(hi.to_f32() - lo.to_f32()))
    }
    /// The samples' values when they are bfloat16 (each exact in f32).
    pub fn bf16_values(&self) -> Option<Vec<f32>> {
        (self.class() == Class::BF16).then(|| self.v.iter().map(|x| x.to_f32()).collect())
    }
    /// numpy's `_ptp` for bfloat16 data (a bfloat16 difference, held in an f32).
    pub fn ptp_bf16(&self) -> Option<f32> {
        if self.class() != Class::BF16 {
            return None;
        }
        let (lo, hi) = self.min_max();
        Some(rbf(hi.to_f32() - lo.to_f32()))
    }
    /// numpy's `_ptp` as the float64 it becomes when divided by a float64.
    pub fn ptp_f64(&self) -> f64 {
        if let Some(p) = self.ptp_f32().or(self.ptp_f16()).or(self.ptp_bf16()) {
            return p as f64;
        }
        let (lo, hi) = self.min_max();
        match self.class() {
            Class::Int => (hi.to_i128() - lo.to_i128()) as u128 as f64,
            _ => hi.to_f64() - lo.to_f64(),
        }
    }
    pub fn to_f64_values(&self) -> Vec<f64> {
        self.v.iter().map(|x| x.to_f64()).collect()
    }
    /// `np.mean` of float64 or integer data.
    pub fn mean_f64(&self) -> f64 {
        let n = self.len() as f64;
        match self.class() {
            Class::Int => buffered_sum(&self.v) / n,
            _ => pairwise_f64(&self.to_f64_values()) / n,
        }
    }
    /// `np.std` of float64 or integer data.
    pub fn std_f64(&self) -> f64 {
        let mean = self.mean_f64();
        let squares: Vec<f64> = self
            .v
            .iter()
            .map(|x| {
                let d = x.to_f64() - mean;
                d * d
            })
            .collect();
        (pairwise_f64(&squares) / self.len() as f64).sqrt()
    }
    /// `np.percentile(x, [75, 25])` with the default `linear` method.
    pub fn quartiles(&self) -> (f64, f64) {
        let mut sorted = self.v.clone();
        sorted.sort_unstable_by(|a, b| a.partial_cmp(b).expect("finite samples"));
        (percentile(&sorted, 0.75), percentile(&sorted, 0.25))
    }
    /// numpy's histogram of these samples into `nbins` equal bins over `range`.
    pub fn uniform_counts(&self, nbins: usize, range: Option<(f64, f64)>) -> Result<Vec<u64>> {
        let samples: Samples<'_> = self.v.as_slice().into();
        let binning = Binning::resolve(&BinSpec::Uniform { nbins, range }, samples)?;
        // Binning::locate is the rule every engine agrees with; counting here keeps the bins
        // independent of the engines that use them.
        let count = |chunk: &[T]| {
            let mut c = vec![0u64; nbins];
            for &x in chunk {
                if let Slot::Bin(i) = binning.locate(x) {
                    c[i] += 1;
                }
            }
            c
        };
        Ok(self.v.par_chunks(1 << 16).map(count).reduce(
            || vec![0u64; nbins],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        ))
    }
}

/// numpy's linear percentile `q` of sorted samples: `_lerp` of the two neighbours of the virtual
/// index `(n - 1) * q`, their difference taken in the samples' own type (wrapping for integers,
/// as numpy's array subtraction does).
fn percentile<T: Sample>(sorted: &[T], q: f64) -> f64 {
    percentile_at(sorted.len(), q, |i| sorted[i])
}

/// The ranks (0-based, in sorted order) [`percentile_at`] reads for `n` samples: the two
/// neighbours of the virtual index (the last sample twice at the top).
pub(crate) fn percentile_ranks(n: usize, q: f64) -> (usize, usize) {
    let virtual_index = (n - 1) as f64 * q;
    if virtual_index >= (n - 1) as f64 {
        return (n - 1, n - 1);
    }
    let prev = virtual_index.floor() as usize;
    (prev, prev + 1)
}

/// [`percentile`] of `n` sorted samples, reading the samples of [`percentile_ranks`] with `at`.
pub(crate) fn percentile_at<T: Sample>(n: usize, q: f64, at: impl Fn(usize) -> T) -> f64 {
    let virtual_index = (n - 1) as f64 * q;
    let prev = virtual_index.floor();
    if virtual_index >= (n - 1) as f64 {
        return at(n - 1).to_f64() + 0.0;
    }
    let gamma = virtual_index - prev;
    let (a, b) = (at(prev as usize), at(prev as usize + 1));
    let diff = match class_of(T::TYPE) {
        Class::F16 => r16(b.to_f32() - a.to_f32()) as f64,
        Class::BF16 => rbf(b.to_f32() - a.to_f32()) as f64,
        Class::F32 => (b.to_f32() - a.to_f32()) as f64,
        Class::F64 => b.to_f64() - a.to_f64(),
        Class::Int => wrap(b.to_i128() - a.to_i128(), T::TYPE) as f64,
    };
    if gamma >= 0.5 {
        b.to_f64() - diff * (1.0 - gamma)
    } else {
        a.to_f64() + diff * gamma
    }
}

/// `d` wrapped to the integer type `ty`.
fn wrap(d: i128, ty: SampleType) -> i128 {
    let bits = 8 * ty.size() as u32;
    let m = 1i128 << bits;
    let signed = matches!(
        ty,
        SampleType::I8 | SampleType::I16 | SampleType::I32 | SampleType::I64
    );
    let r = d.rem_euclid(m);
    if signed && r >= m / 2 {
        r - m
    } else {
        r
    }
}

/// The float64 running total of numpy's casting reduction adds blocks of this many values.
pub(crate) const CAST_BUFFER: usize = 8192;

/// numpy's pairwise summation (`pairwise_sum` of its add loops), generic over the float type.
macro_rules! pairwise {
    ($name:ident, $t:ty) => {
        pub(crate) fn $name(a: &[$t]) -> $t {
            let n = a.len();
            if n < 8 {
                let mut res: $t = -0.0;
                for &x in a {
                    res += x;
                }
                0.0 + res
            } else if n <= 128 {
                let mut r = [0.0 as $t; 8];
                r.copy_from_slice(&a[..8]);
                let mut i = 8;
                while i < n - n % 8 {
                    for j in 0..8 {
                        r[j] += a[i + j];
                    }
                    i += 8;
                }
                let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
                while i < n {
                    res += a[i];
                    i += 1;
                }
                res
            } else {
                let mut n2 = n / 2;
                n2 -= n2 % 8;
                $name(&a[..n2]) + $name(&a[n2..])
            }
        }
    };
}
pairwise!(pairwise_f32, f32);
pairwise!(pairwise_f64, f64);

/// numpy's float64 sum of integer data: cast in buffers of 8192, each summed pairwise and added
/// to the running total.
fn buffered_sum<T: Sample>(v: &[T]) -> f64 {
    let mut acc = 0.0f64;
    let mut buf = Vec::with_capacity(CAST_BUFFER);
    for chunk in v.chunks(CAST_BUFFER) {
        buf.clear();
        buf.extend(chunk.iter().map(|x| x.to_f64()));
        acc += pairwise_f64(&buf);
    }
    acc
}

/// `np.mean` of float32 data (a float32 sum divided in float64, rounded to float32).
pub(crate) fn mean_f32(v: &[f32]) -> f32 {
    (pairwise_f32(v) as f64 / v.len() as f64) as f32
}

/// `np.std` of float32 data, all in float32 as numpy computes it.
pub(crate) fn std_f32(v: &[f32]) -> f32 {
    let mean = mean_f32(v);
    let squares: Vec<f32> = v
        .iter()
        .map(|&x| {
            let d = x - mean;
            d * d
        })
        .collect();
    ((pairwise_f32(&squares) as f64 / v.len() as f64) as f32).sqrt()
}

/// `np.mean` of float16 data: numpy sums it as float32 (a casting reduction: buffers of 8192,
/// each summed pairwise into a float32 total), divides in float64, rounds to float32, then to
/// float16.
pub(crate) fn mean_f16(v: &[f32]) -> f32 {
    let mut total = 0.0f32;
    for chunk in v.chunks(CAST_BUFFER) {
        total += pairwise_f32(chunk);
    }
    r16((total as f64 / v.len() as f64) as f32)
}

/// numpy's sum of float16 data in its own type: pairwise in float32, rounded once to float16.
fn sum_in_f16(v: &[f32]) -> f32 {
    r16(pairwise_f32(v))
}

/// `np.std` of float16 data: numpy's variance in float16 (the mean of a float16 sum divided in
/// float64, each deviation and square rounded to float16, their float16 sum divided in float64),
/// its square root rounded to float16.
pub(crate) fn std_f16(v: &[f32]) -> f32 {
    let n = v.len() as f64;
    let mean = r16((sum_in_f16(v) as f64 / n) as f32);
    let squares: Vec<f32> = v
        .iter()
        .map(|&x| {
            let d = r16(x - mean);
            r16(d * d)
        })
        .collect();
    r16(r16((sum_in_f16(&squares) as f64 / n) as f32).sqrt())
}

/// ml_dtypes' sum of bfloat16 values: numpy's reduction calls its add loop with the running
/// total as one operand, so each sum is rounded to bfloat16 before the next value is added.
pub(crate) fn sequential_sum_bf16(v: &[f32]) -> f32 {
    v.iter().skip(1).fold(v[0], |acc, &x| rbf(acc + x))
}

/// `np.mean` (and the variance's sums divided) of bfloat16 data: the bfloat16 sum divided by the
/// count in float64, rounded to bfloat16 (through float32, as ml_dtypes converts).
pub(crate) fn mean_of_bf16_sum(sum: f32, n: usize) -> f32 {
    py_to_bf16(sum as f64 / n as f64)
}

/// `np.mean` of bfloat16 data (non-empty).
pub(crate) fn mean_bf16(v: &[f32]) -> f32 {
    mean_of_bf16_sum(sequential_sum_bf16(v), v.len())
}

/// `np.std` of bfloat16 data: the mean, each deviation and square rounded to bfloat16, their
/// bfloat16 sum divided as the mean's, its square root rounded to bfloat16.
pub(crate) fn std_bf16(v: &[f32]) -> f32 {
    let mean = mean_bf16(v);
    let squares: Vec<f32> = v
        .iter()
        .map(|&x| {
            let d = rbf(x - mean);
            rbf(d * d)
        })
        .collect();
    rbf(mean_of_bf16_sum(sequential_sum_bf16(&squares), v.len()).sqrt())
}

/// `np.mean` of a float64 array.
pub(crate) fn mean_of_f64(v: &[f64]) -> f64 {
    pairwise_f64(v) / v.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_sums_in_numpys_blocks() {
        // Below 8 values: in order; from 8 to 128: eight lanes; beyond: halves at multiples of 8.
        let v: Vec<f64> = (0..300).map(|i| 1.0 + (i as f64) * 1e-17).collect();
        assert_eq!(pairwise_f64(&v[..5]), 5.0);
        assert_eq!(
            pairwise_f64(&v),
            pairwise_f64(&v[..144]) + pairwise_f64(&v[144..])
        );
    }

    #[test]
    fn integer_differences_wrap_in_their_type() {
        assert_eq!(wrap(255, SampleType::I8), -1);
        assert_eq!(wrap(255, SampleType::U8), 255);
        assert_eq!(wrap(-1, SampleType::U16), 65535);
    }
}
