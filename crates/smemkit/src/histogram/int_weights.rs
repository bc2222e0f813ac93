//! Integer and bool weights, whose histogram keeps the weights' type as `numpy.histogram`'s does.
//!
//! numpy sums integer weights into a result of the weights' dtype: with uniform bins it adds each
//! 65536-sample block's `bincount` (float64) cast to that dtype, with explicit edges it takes
//! cumulative sums in integers; either way the sums wrap around in the dtype (`int8` weights
//! `100 + 100 + 3` give `-53`). Both engines compute such a histogram through their float64 sums:
//! the weights are widened to float64, which holds every partial sum exactly as long as the
//! absolute values add up to at most 2^53 (checked first), so the sums are exact integers whatever
//! the order of the additions (GPU atomics included) and equal on every engine; they are then
//! wrapped into the dtype. Beyond 2^53 exact sums cannot be promised and the call is refused.
//!
//! Where numpy's own result is not a wrapped sum it is refused too: bool weights with explicit
//! edges (numpy raises a type error), and uniform bins with `uint16` or `int32` weights where one
//! block's bin sum could leave the int32 range (numpy's float-to-integer cast then overflows and
//! gives `INT_MIN`-derived values with "invalid value encountered in cast"). int8, uint8, int16,
//! uint32 and 64-bit block sums stay where numpy's cast wraps (x86-64 numpy, the platform checked).
//!
//! numpy's `bincount` and `histogramdd` return float64 sums for integer weights: those take
//! [`IntWeights::to_f64`] and keep their float results.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::histogram::bins::BinSpec;
use crate::histogram::result::Counts;

/// The type of integer (or bool) weights, which their histogram keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntType {
    /// bool (numpy: the bins that receive any true weight are true)
    Bool,
    /// uint8
    U8,
    /// uint16
    U16,
    /// uint32
    U32,
    /// uint64
    U64,
    /// int8
    I8,
    /// int16
    I16,
    /// int32
    I32,
    /// int64
    I64,
}

impl IntType {
    /// numpy's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            IntType::Bool => "bool",
            IntType::U8 => "uint8",
            IntType::U16 => "uint16",
            IntType::U32 => "uint32",
            IntType::U64 => "uint64",
            IntType::I8 => "int8",
            IntType::I16 => "int16",
            IntType::I32 => "int32",
            IntType::I64 => "int64",
        }
    }

    /// `sum` wrapped into this type as numpy's integer arithmetic wraps it (bool: nonzero), as
    /// an i64 (every value of every type here but uint64 above 2^63, which exact sums never reach).
    pub fn wrap(self, sum: i64) -> i64 {
        match self {
            IntType::Bool => (sum != 0) as i64,
            IntType::U8 => sum as u8 as i64,
            IntType::U16 => sum as u16 as i64,
            IntType::U32 => sum as u32 as i64,
            IntType::U64 | IntType::I64 => sum,
            IntType::I8 => sum as i8 as i64,
            IntType::I16 => sum as i16 as i64,
            IntType::I32 => sum as i32 as i64,
        }
    }
}

impl std::fmt::Display for IntType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Borrowed integer or bool weights, one per sample.
#[derive(Debug, Clone, Copy)]
pub enum IntWeights<'a> {
    /// bool weights.
    Bool(&'a [bool]),
    /// uint8 weights.
    U8(&'a [u8]),
    /// uint16 weights.
    U16(&'a [u16]),
    /// uint32 weights.
    U32(&'a [u32]),
    /// uint64 weights.
    U64(&'a [u64]),
    /// int8 weights.
    I8(&'a [i8]),
    /// int16 weights.
    I16(&'a [i16]),
    /// int32 weights.
    I32(&'a [i32]),
    /// int64 weights.
    I64(&'a [i64]),
}

/// Runs `$body` with `$w` bound to the typed slice inside an [`IntWeights`] value.
macro_rules! with_ints {
    ($weights:expr, $w:ident => $body:expr) => {
        match $weights {
            IntWeights::Bool($w) => $body,
            IntWeights::U8($w) => $body,
            IntWeights::U16($w) => $body,
            IntWeights::U32($w) => $body,
            IntWeights::U64($w) => $body,
            IntWeights::I8($w) => $body,
            IntWeights::I16($w) => $body,
            IntWeights::I32($w) => $body,
            IntWeights::I64($w) => $body,
        }
    };
}

/// An integer weight's value as i128 and its magnitude.
trait IntWeight: Copy + Send + Sync {
    fn value(self) -> i128;
}
macro_rules! int_weight {
    ($($t:ty),*) => {$(
        impl IntWeight for $t {
            #[inline(always)]
            fn value(self) -> i128 {
                self as i128
            }
        }
    )*};
}
int_weight!(bool, u8, u16, u32, u64, i8, i16, i32, i64);

/// The most the absolute values may add up to: every partial sum is then an exact float64.
pub const EXACT_SUM_LIMIT: u128 = 1 << 53;
/// numpy's block of samples in its uniform-bins loop.
const NUMPY_BLOCK: usize = 1 << 16;

impl<'a> IntWeights<'a> {
    /// How many weights.
    pub fn len(&self) -> usize {
        with_ints!(*self, w => w.len())
    }
    /// No weights.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Their type.
    pub fn int_type(&self) -> IntType {
        match self {
            IntWeights::Bool(_) => IntType::Bool,
            IntWeights::U8(_) => IntType::U8,
            IntWeights::U16(_) => IntType::U16,
            IntWeights::U32(_) => IntType::U32,
            IntWeights::U64(_) => IntType::U64,
            IntWeights::I8(_) => IntType::I8,
            IntWeights::I16(_) => IntType::I16,
            IntWeights::I32(_) => IntType::I32,
            IntWeights::I64(_) => IntType::I64,
        }
    }
    /// Weight `i` as f64 (rounded to nearest beyond 2^53, as numpy's cast to double).
    pub fn get_f64(&self, i: usize) -> f64 {
        with_ints!(*self, w => w[i].value() as f64)
    }
    /// Every weight as f64 (rounded to nearest beyond 2^53, as numpy's cast to double): what
    /// numpy's `bincount` and `histogramdd` sum.
    pub fn to_f64(&self) -> Vec<f64> {
        with_ints!(*self, w => w.par_iter().map(|&x| x.value() as f64).collect())
    }
    /// The sum of the weights' absolute values.
    fn magnitude(&self) -> u128 {
        with_ints!(*self, w => w.par_iter().map(|&x| x.value().unsigned_abs()).sum())
    }
    /// The largest sum of absolute values any `NUMPY_BLOCK` weights can have (the largest ones'):
    /// a bound on one numpy block's bin sum whatever the order the samples are read in.
    /// Each piece keeps its largest `NUMPY_BLOCK` (a bounded memory whatever the length).
    fn block_magnitude(&self) -> u128 {
        if self.len() <= NUMPY_BLOCK {
            return self.magnitude();
        }
        let top = |mut v: Vec<u64>| {
            if v.len() > NUMPY_BLOCK {
                v.select_nth_unstable_by(NUMPY_BLOCK - 1, |a, b| b.cmp(a));
                v.truncate(NUMPY_BLOCK);
            }
            v
        };
        // Every magnitude fits u64 (the largest is |i64::MIN| = 2^63).
        let kept: Vec<u64> = with_ints!(*self, w => w
        .par_chunks(1 << 18)
        .map(|c| top(c.iter().map(|&x| x.value().unsigned_abs() as u64).collect()))
        .reduce(Vec::new, |mut a, b| {
            a.extend(b);
            top(a)
        }));
        kept.iter().map(|&v| v as u128).sum()
    }
}

/// Checks that integer weights of this type histogram under `bins` as numpy does (see the
/// module documentation) and returns them widened to f64 for the engines.
pub fn exact_f64(weights: &IntWeights<'_>, bins: &BinSpec) -> Result<Vec<f64>> {
    let ty = weights.int_type();
    // numpy's cumulative-sum path: explicit edges (a number of bins, or an estimator's, takes the
    // uniform path).
    let edges = matches!(bins, BinSpec::Edges(_) | BinSpec::IntEdges(_));
    if ty == IntType::Bool && edges {
        return Err(Error::InvalidArgument(
            "bool weights with explicit bin edges: numpy's histogram refuses them (\"Cannot cast \
             ufunc 'add' output from dtype('int64') to dtype('bool')\"); pass the weights as \
             integers, or give a number of bins"
                .into(),
        ));
    }
    let total = weights.magnitude();
    if total > EXACT_SUM_LIMIT {
        return Err(Error::NotImplemented(format!(
            "{ty} weights whose absolute values add up to {total}, more than 2^53: their sums \
             cannot be promised exact (numpy adds uniform bins' in float64 too); scale them down or pass \
             float64 weights"
        )));
    }
    if !edges && matches!(ty, IntType::U16 | IntType::I32) && total > i32::MAX as u128 {
        let block = weights.block_magnitude();
        if block > i32::MAX as u128 {
            return Err(Error::NotImplemented(format!(
                "{ty} weights with uniform bins where 65536 of them add up to {block} in absolute \
                 value, beyond the int32 range: numpy casts each 65536-sample block's sums from \
                 float64 to {ty} there, and that cast overflows (\"invalid value encountered in \
                 cast\"), so its result is not a wrapped sum; pass int64 weights (the same sums, \
                 kept exact) or explicit edges"
            )));
        }
    }
    Ok(weights.to_f64())
}

/// The engines' float64 sums (exact integers, [`exact_f64`]'s guarantee) as sums wrapped into
/// `ty`. A sum that is not an exact integer within 2^53 is an internal error, never a wrong value.
pub fn wrap_sums(sums: &[f64], ty: IntType) -> Result<Vec<i64>> {
    sums.iter()
        .map(|&s| {
            if s.fract() != 0.0 || s.abs() > EXACT_SUM_LIMIT as f64 {
                return Err(Error::InvalidArgument(format!(
                    "internal: a sum of integer weights came back as {s}, not an exact integer"
                )));
            }
            Ok(ty.wrap(s as i64))
        })
        .collect()
}

/// numpy's density of integer sums: `n / width / n.sum()` in float64, `n.sum()` of the wrapped
/// values in 64-bit integers (bool: the number of true bins).
pub fn density(sums: &[i64], widths: &[f64]) -> Vec<f64> {
    let total = sums.iter().map(|&s| s as i128).sum::<i128>() as f64;
    sums.iter()
        .zip(widths)
        .map(|(&n, &w)| n as f64 / w / total)
        .collect()
}

macro_rules! impl_from_ints {
    ($t:ty, $tag:ident) => {
        impl<'a> From<&'a [$t]> for IntWeights<'a> {
            fn from(w: &'a [$t]) -> Self {
                IntWeights::$tag(w)
            }
        }
    };
}
impl_from_ints!(bool, Bool);
impl_from_ints!(u8, U8);
impl_from_ints!(u16, U16);
impl_from_ints!(u32, U32);
impl_from_ints!(u64, U64);
impl_from_ints!(i8, I8);
impl_from_ints!(i16, I16);
impl_from_ints!(i32, I32);
impl_from_ints!(i64, I64);

impl<'a> IntWeights<'a> {
    /// The weights of the samples `range`.
    pub fn slice(&self, range: std::ops::Range<usize>) -> IntWeights<'a> {
        with_ints!(*self, w => IntWeights::from(&w[range]))
    }
}

/// The error of an engine handed integer weights that the API did not widen first (a bug).
pub(crate) fn unwidened() -> Error {
    Error::InvalidArgument(
        "internal: integer weights reached a GPU engine without being widened to float64 \
         (histogram, histogram_file_with_progress, bincount and histogramdd widen them)"
            .into(),
    )
}

/// What the weights of a call were, for its result: float32 weights (numpy's density sums them in
/// float32), integer weights of a type (the sums keep it), or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WeightClass {
    Float32,
    Int(IntType),
    Other,
}

impl WeightClass {
    pub(crate) fn of(weights: &Option<crate::sample::Weights<'_>>) -> WeightClass {
        match weights {
            Some(crate::sample::Weights::F32(_)) => WeightClass::Float32,
            Some(crate::sample::Weights::Int(w)) => WeightClass::Int(w.int_type()),
            _ => WeightClass::Other,
        }
    }

    /// The engine's counts as the call returns them: integer weights' float64 sums wrapped into
    /// their type.
    pub(crate) fn counts(self, counts: Counts) -> Result<Counts> {
        match (self, counts) {
            (WeightClass::Int(dtype), Counts::Weighted(s)) => Ok(Counts::Integer {
                sums: wrap_sums(&s, dtype)?,
                dtype,
            }),
            (WeightClass::Int(_), other) => Err(Error::InvalidArgument(format!(
                "internal: integer weights gave {} bins of another kind than weighted sums",
                other.len()
            ))),
            (_, counts) => Ok(counts),
        }
    }
}

/// Integer weights widened for the engines (`wide`, which must outlive the returned view), other
/// weights as they are.
pub(crate) fn widen<'a>(
    weights: Option<crate::sample::Weights<'a>>,
    bins: &BinSpec,
    wide: &'a mut Vec<f64>,
) -> Result<Option<crate::sample::Weights<'a>>> {
    match weights {
        Some(crate::sample::Weights::Int(w)) => {
            *wide = exact_f64(&w, bins)?;
            Ok(Some(crate::sample::Weights::F64(wide)))
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_magnitude_is_the_largest_blocks_sum() {
        let w: Vec<i32> = (0..700_000i64)
            .map(|i| ((i * 7919 + 13) % 200_003 - 100_000) as i32)
            .collect();
        let mut m: Vec<u64> = w.iter().map(|&x| x.unsigned_abs() as u64).collect();
        m.sort_unstable_by(|a, b| b.cmp(a));
        let want: u128 = m[..NUMPY_BLOCK].iter().map(|&v| v as u128).sum();
        assert_eq!(IntWeights::I32(&w).block_magnitude(), want);
        let small = [3i32, -4, 5];
        assert_eq!(IntWeights::I32(&small).block_magnitude(), 12);
    }

    #[test]
    fn wrapping_follows_each_type() {
        assert_eq!(IntType::I8.wrap(203), -53);
        assert_eq!(IntType::U8.wrap(-1), 255);
        assert_eq!(IntType::I32.wrap(1 << 33), 0);
        assert_eq!(IntType::U16.wrap(65536 + 7), 7);
        assert_eq!(IntType::Bool.wrap(5), 1);
        assert_eq!(IntType::Bool.wrap(0), 0);
        assert!(wrap_sums(&[0.5], IntType::I64).is_err());
    }
}
