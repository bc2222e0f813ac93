//! Integer and bool weights: their types and borrowed slices. A histogram of such weights keeps
//! their type, as numpy's does ([`crate::histogram::int_sums`] sums them); this module holds only
//! the data types, so that the sample types and the results can name them without depending on
//! the histogram code.

use rayon::prelude::*;

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

    /// Bytes per weight (bool: one byte of 0 or 1).
    pub fn bytes(self) -> usize {
        match self {
            IntType::Bool | IntType::U8 | IntType::I8 => 1,
            IntType::U16 | IntType::I16 => 2,
            IntType::U32 | IntType::I32 => 4,
            IntType::U64 | IntType::I64 => 8,
        }
    }

    /// Whether the type is signed.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            IntType::I8 | IntType::I16 | IntType::I32 | IntType::I64
        )
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
pub(crate) const NUMPY_BLOCK: usize = 1 << 16;

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
    /// Weight `i` as i64, uint64 above 2^63 as its two's-complement bits (exact sums modulo
    /// 2^64 are the same either way).
    pub fn get_i64(&self, i: usize) -> i64 {
        with_ints!(*self, w => w[i].value() as i64)
    }
    /// The weights' bytes as they lie in memory (native endianness; bool as bytes of 0 or 1), for
    /// a copy to the device.
    pub fn as_bytes(&self) -> &'a [u8] {
        // SAFETY: every type here is a plain integer (or bool: one byte of 0 or 1) without padding,
        // so its slice is `size_of_val` initialised bytes, borrowed for the slice's lifetime 'a.
        with_ints!(*self, w => unsafe {
            std::slice::from_raw_parts(w.as_ptr().cast::<u8>(), std::mem::size_of_val(w))
        })
    }
    /// Every weight as f64 (rounded to nearest beyond 2^53, as numpy's cast to double): what
    /// numpy's `bincount` and `histogramdd` sum.
    pub fn to_f64(&self) -> Vec<f64> {
        with_ints!(*self, w => w.par_iter().map(|&x| x.value() as f64).collect())
    }
    /// The sum of the weights' absolute values.
    pub(crate) fn magnitude(&self) -> u128 {
        with_ints!(*self, w => w.par_iter().map(|&x| x.value().unsigned_abs()).sum())
    }
    /// The largest sum of absolute values any `NUMPY_BLOCK` weights can have (the largest ones'):
    /// a bound on one numpy block's bin sum whatever the order the samples are read in.
    /// Each piece keeps its largest `NUMPY_BLOCK` (a bounded memory whatever the length).
    pub(crate) fn block_magnitude(&self) -> u128 {
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
