//! The samples and weights every operation takes (histograms, joint histograms, digitize). The
//! engines are generic over [`Sample`]; the public API takes a [`Samples`] slice enum so that
//! callers holding data of a type known only at run time (a `.npy` file, a `--dtype` flag) can pass
//! it without generics ([`with_samples!`] opens one again).

use crate::error::Error;

/// The element type of a sample array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleType {
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
    /// float32
    F32,
    /// float64
    F64,
    /// IEEE half precision (numpy's float16), histogrammed in float16 arithmetic as numpy does.
    F16,
    /// bfloat16 (torch's, ml_dtypes' for numpy), histogrammed as numpy with ml_dtypes does.
    BF16,
}

impl SampleType {
    /// Every type of the contract but the 16-bit floats, in a fixed order (for tests and help
    /// texts; the CUDA engine takes all of these, not [`SampleType::F16`] or [`SampleType::BF16`]).
    pub const ALL: [SampleType; 10] = [
        SampleType::U8,
        SampleType::U16,
        SampleType::U32,
        SampleType::U64,
        SampleType::I8,
        SampleType::I16,
        SampleType::I32,
        SampleType::I64,
        SampleType::F32,
        SampleType::F64,
    ];

    /// The numpy-style name (`u8` style names are accepted by [`str::parse`] too).
    pub fn name(self) -> &'static str {
        match self {
            SampleType::U8 => "uint8",
            SampleType::U16 => "uint16",
            SampleType::U32 => "uint32",
            SampleType::U64 => "uint64",
            SampleType::I8 => "int8",
            SampleType::I16 => "int16",
            SampleType::I32 => "int32",
            SampleType::I64 => "int64",
            SampleType::F32 => "float32",
            SampleType::F64 => "float64",
            SampleType::F16 => "float16",
            SampleType::BF16 => "bfloat16",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            SampleType::U8 | SampleType::I8 => 1,
            SampleType::U16 | SampleType::I16 | SampleType::F16 | SampleType::BF16 => 2,
            SampleType::U32 | SampleType::I32 | SampleType::F32 => 4,
            SampleType::U64 | SampleType::I64 | SampleType::F64 => 8,
        }
    }

    /// Whether it is a float type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            SampleType::F32 | SampleType::F64 | SampleType::F16 | SampleType::BF16
        )
    }
}

impl std::str::FromStr for SampleType {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = match text.to_ascii_lowercase().as_str() {
            "u8" | "uint8" => SampleType::U8,
            "u16" | "uint16" => SampleType::U16,
            "u32" | "uint32" => SampleType::U32,
            "u64" | "uint64" => SampleType::U64,
            "i8" | "int8" => SampleType::I8,
            "i16" | "int16" => SampleType::I16,
            "i32" | "int32" => SampleType::I32,
            "i64" | "int64" => SampleType::I64,
            "f32" | "float32" => SampleType::F32,
            "f64" | "float64" => SampleType::F64,
            "f16" | "float16" => SampleType::F16,
            "bf16" | "bfloat16" => SampleType::BF16,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "unknown sample type `{text}` (expected one of u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64)"
                )))
            }
        };
        Ok(t)
    }
}

impl std::fmt::Display for SampleType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A numeric sample type the engines can histogram.
pub trait Sample: Copy + Send + Sync + PartialOrd + 'static {
    /// The type's tag.
    const TYPE: SampleType;
    /// The value as f64 (exact for every type but 64-bit integers beyond 2^53, where numpy rounds too).
    fn to_f64(self) -> f64;
    /// The value rounded to f32 (numpy computes float32 histograms in float32).
    fn to_f32(self) -> f32;
    /// Whether the value is NaN (never for integers).
    fn is_nan(self) -> bool;
    /// For integer types: the value as a non-negative bin candidate, or `None` when negative.
    /// Float types return `None` (they never take integer bins).
    fn to_bin_candidate(self) -> Option<u64>;
    /// The value as i128 (integers exactly; floats truncated, only used for integer types).
    fn to_i128(self) -> i128;
}

macro_rules! impl_int_sample {
    ($t:ty, $tag:ident, signed) => {
        impl Sample for $t {
            const TYPE: SampleType = SampleType::$tag;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn to_bin_candidate(self) -> Option<u64> {
                if self < 0 {
                    None
                } else {
                    Some(self as u64)
                }
            }
        }
    };
    ($t:ty, $tag:ident, unsigned) => {
        impl Sample for $t {
            const TYPE: SampleType = SampleType::$tag;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn to_bin_candidate(self) -> Option<u64> {
                Some(self as u64)
            }
        }
    };
}

impl_int_sample!(u8, U8, unsigned);
impl_int_sample!(u16, U16, unsigned);
impl_int_sample!(u32, U32, unsigned);
impl_int_sample!(u64, U64, unsigned);
impl_int_sample!(i8, I8, signed);
impl_int_sample!(i16, I16, signed);
impl_int_sample!(i32, I32, signed);
impl_int_sample!(i64, I64, signed);

impl Sample for f32 {
    const TYPE: SampleType = SampleType::F32;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline(always)]
    fn to_bin_candidate(self) -> Option<u64> {
        None
    }
    #[inline(always)]
    fn to_i128(self) -> i128 {
        self as i128
    }
}

impl Sample for f64 {
    const TYPE: SampleType = SampleType::F64;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline(always)]
    fn to_bin_candidate(self) -> Option<u64> {
        None
    }
    #[inline(always)]
    fn to_i128(self) -> i128 {
        self as i128
    }
}

macro_rules! impl_half_sample {
    ($t:ty, $tag:ident) => {
        impl Sample for $t {
            const TYPE: SampleType = SampleType::$tag;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn to_bin_candidate(self) -> Option<u64> {
                None
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                <$t>::to_f32(self) as i128
            }
        }
    };
}

impl_half_sample!(half::f16, F16);
impl_half_sample!(half::bf16, BF16);

/// A borrowed sample array whose element type is chosen at run time.
#[derive(Debug, Clone, Copy)]
pub enum Samples<'a> {
    /// uint8 samples.
    U8(&'a [u8]),
    /// uint16 samples.
    U16(&'a [u16]),
    /// uint32 samples.
    U32(&'a [u32]),
    /// uint64 samples.
    U64(&'a [u64]),
    /// int8 samples.
    I8(&'a [i8]),
    /// int16 samples.
    I16(&'a [i16]),
    /// int32 samples.
    I32(&'a [i32]),
    /// int64 samples.
    I64(&'a [i64]),
    /// float32 samples.
    F32(&'a [f32]),
    /// float64 samples.
    F64(&'a [f64]),
    /// float16 samples.
    F16(&'a [half::f16]),
    /// bfloat16 samples.
    BF16(&'a [half::bf16]),
}

/// Runs `$body` with `$s` bound to the typed slice inside a [`Samples`] value.
///
/// Its one public path is `smemkit::sample::with_samples!` (`#[macro_export]` also puts it at the
/// crate root, hidden there).
#[doc(hidden)]
#[macro_export]
macro_rules! with_samples {
    ($samples:expr, $s:ident => $body:expr) => {
        match $samples {
            $crate::sample::Samples::U8($s) => $body,
            $crate::sample::Samples::U16($s) => $body,
            $crate::sample::Samples::U32($s) => $body,
            $crate::sample::Samples::U64($s) => $body,
            $crate::sample::Samples::I8($s) => $body,
            $crate::sample::Samples::I16($s) => $body,
            $crate::sample::Samples::I32($s) => $body,
            $crate::sample::Samples::I64($s) => $body,
            $crate::sample::Samples::F32($s) => $body,
            $crate::sample::Samples::F64($s) => $body,
            $crate::sample::Samples::F16($s) => $body,
            $crate::sample::Samples::BF16($s) => $body,
        }
    };
}

#[doc(inline)]
pub use crate::with_samples;

pub use crate::int_weights::{IntType, IntWeights};

impl<'a> Samples<'a> {
    /// How many samples.
    pub fn len(&self) -> usize {
        with_samples!(*self, s => s.len())
    }
    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Their type.
    pub fn sample_type(&self) -> SampleType {
        match self {
            Samples::U8(_) => SampleType::U8,
            Samples::U16(_) => SampleType::U16,
            Samples::U32(_) => SampleType::U32,
            Samples::U64(_) => SampleType::U64,
            Samples::I8(_) => SampleType::I8,
            Samples::I16(_) => SampleType::I16,
            Samples::I32(_) => SampleType::I32,
            Samples::I64(_) => SampleType::I64,
            Samples::F32(_) => SampleType::F32,
            Samples::F64(_) => SampleType::F64,
            Samples::F16(_) => SampleType::F16,
            Samples::BF16(_) => SampleType::BF16,
        }
    }
    /// Bytes of sample data (for throughput figures).
    pub fn byte_len(&self) -> usize {
        self.len() * self.sample_type().size()
    }
}

macro_rules! impl_from_slice {
    ($t:ty, $tag:ident) => {
        impl<'a> From<&'a [$t]> for Samples<'a> {
            fn from(s: &'a [$t]) -> Self {
                Samples::$tag(s)
            }
        }
    };
}
impl_from_slice!(u8, U8);
impl_from_slice!(u16, U16);
impl_from_slice!(u32, U32);
impl_from_slice!(u64, U64);
impl_from_slice!(i8, I8);
impl_from_slice!(i16, I16);
impl_from_slice!(i32, I32);
impl_from_slice!(i64, I64);
impl_from_slice!(f32, F32);
impl_from_slice!(f64, F64);
impl_from_slice!(half::f16, F16);
impl_from_slice!(half::bf16, BF16);

/// Bool samples histogram as uint8 (0 and 1), as numpy converts them before its histogram; the
/// bytes are the same, so every engine takes them as they are.
impl<'a> From<&'a [bool]> for Samples<'a> {
    fn from(s: &'a [bool]) -> Self {
        // SAFETY: `bool` is one byte holding 0 or 1, every one of which is a valid `u8`; the view
        // covers exactly the slice's bytes and borrows it for the same lifetime.
        Samples::U8(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len()) })
    }
}

/// Optional per-sample weights, accumulated in f64 whatever their type.
#[derive(Debug, Clone, Copy)]
pub enum Weights<'a> {
    /// float32 weights.
    F32(&'a [f32]),
    /// float64 weights.
    F64(&'a [f64]),
    /// Integer or bool weights: a histogram keeps their type, as numpy's does
    /// ([`crate::histogram::int_sums`]); the API widens them to [`Weights::F64`] before any
    /// engine sees them.
    Int(crate::int_weights::IntWeights<'a>),
}

impl<'a> Weights<'a> {
    /// How many weights.
    pub fn len(&self) -> usize {
        match self {
            Weights::F32(w) => w.len(),
            Weights::F64(w) => w.len(),
            Weights::Int(w) => w.len(),
        }
    }
    /// No weights.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline(always)]
    /// Weight `i` as f64.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Weights::F32(w) => w[i] as f64,
            Weights::F64(w) => w[i],
            Weights::Int(w) => w.get_f64(i),
        }
    }
}

impl<'a> From<&'a [f32]> for Weights<'a> {
    fn from(w: &'a [f32]) -> Self {
        Weights::F32(w)
    }
}

impl<'a> From<&'a [f64]> for Weights<'a> {
    fn from(w: &'a [f64]) -> Self {
        Weights::F64(w)
    }
}

impl<'a> From<crate::int_weights::IntWeights<'a>> for Weights<'a> {
    fn from(w: crate::int_weights::IntWeights<'a>) -> Self {
        Weights::Int(w)
    }
}
