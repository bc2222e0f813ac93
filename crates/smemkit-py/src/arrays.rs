//! numpy arrays as the library's borrowed slices. The Python layer hands over 1-D contiguous
//! arrays of native byte order (a view of the caller's array wherever its memory allows); here
//! they are borrowed read-only, with no copy, for as long as the call runs.

use half::slice::HalfBitsSliceExt;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use smemkit::sample::{IntWeights, Samples, Weights};

/// A read-only borrow of a 1-D numpy array of one of the library's sample types.
pub enum Held<'py> {
    U8(PyReadonlyArray1<'py, u8>),
    U16(PyReadonlyArray1<'py, u16>),
    U32(PyReadonlyArray1<'py, u32>),
    U64(PyReadonlyArray1<'py, u64>),
    I8(PyReadonlyArray1<'py, i8>),
    I16(PyReadonlyArray1<'py, i16>),
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
    F32(PyReadonlyArray1<'py, f32>),
    F64(PyReadonlyArray1<'py, f64>),
    /// float16 samples, handed over as their bits (a uint16 view: numpy's float16 is not a type
    /// the binding's array crate maps).
    F16(PyReadonlyArray1<'py, u16>),
    /// bfloat16 samples (ml_dtypes' for numpy), handed over as their bits.
    BF16(PyReadonlyArray1<'py, u16>),
}

fn dtype_name(obj: &Bound<'_, PyAny>) -> String {
    obj.getattr("dtype")
        .and_then(|d| d.str())
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "an object without a dtype".into())
}

/// Slices of misaligned memory would be undefined behaviour: the Python layer copies such arrays
/// first, and this check keeps a direct caller of the extension from getting that far.
fn check_aligned(address: usize, align: usize, what: &str) -> PyResult<()> {
    if address % align == 0 {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{what} is not aligned for its type (copy it first, e.g. with numpy.array)"
        )))
    }
}

macro_rules! try_hold {
    ($obj:expr, $what:expr, $($t:ty => $tag:ident),*) => {
        $(if let Ok(a) = $obj.cast::<PyArray1<$t>>() {
            check_aligned(a.data() as usize, std::mem::align_of::<$t>(), $what)?;
            return Ok(Held::$tag(a.try_readonly()?));
        })*
    };
}

impl<'py> Held<'py> {
    /// Borrows `obj`, a 1-D numpy array of u8..u64, i8..i64, f32 or f64 in native byte order.
    pub fn of(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Held<'py>> {
        try_hold!(obj, what, u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16,
                  i32 => I32, i64 => I64, f32 => F32, f64 => F64);
        Err(PyTypeError::new_err(format!(
            "{what} must be a 1-D numpy array of an integer type, float32 or float64 in native byte order, not {}",
            dtype_name(obj)
        )))
    }

    /// Borrows `obj` as [`Held::of`] does, or, with `half` (`"float16"` or `"bfloat16"`), a 1-D
    /// uint16 array holding the bits of samples of that 16-bit float type.
    pub fn of_typed(
        obj: &Bound<'py, PyAny>,
        what: &str,
        half: Option<&str>,
    ) -> PyResult<Held<'py>> {
        let Some(half) = half else {
            return Held::of(obj, what);
        };
        let bits = obj.cast::<PyArray1<u16>>().map_err(|_| {
            PyTypeError::new_err(format!(
                "internal: {what} as {half} must be a 1-D uint16 view of the samples' bits, not {}",
                dtype_name(obj)
            ))
        })?;
        check_aligned(bits.data() as usize, 2, what)?;
        let bits = bits.try_readonly()?;
        match half {
            "float16" => Ok(Held::F16(bits)),
            "bfloat16" => Ok(Held::BF16(bits)),
            other => Err(PyValueError::new_err(format!(
                "internal: unknown 16-bit float type {other:?} (expected float16 or bfloat16)"
            ))),
        }
    }

    /// The borrowed elements (the array must be contiguous).
    pub fn samples(&self) -> PyResult<Samples<'_>> {
        let not_contiguous = |_| PyValueError::new_err("internal: the samples are not contiguous");
        Ok(match self {
            Held::U8(a) => Samples::U8(a.as_slice().map_err(not_contiguous)?),
            Held::U16(a) => Samples::U16(a.as_slice().map_err(not_contiguous)?),
            Held::U32(a) => Samples::U32(a.as_slice().map_err(not_contiguous)?),
            Held::U64(a) => Samples::U64(a.as_slice().map_err(not_contiguous)?),
            Held::I8(a) => Samples::I8(a.as_slice().map_err(not_contiguous)?),
            Held::I16(a) => Samples::I16(a.as_slice().map_err(not_contiguous)?),
            Held::I32(a) => Samples::I32(a.as_slice().map_err(not_contiguous)?),
            Held::I64(a) => Samples::I64(a.as_slice().map_err(not_contiguous)?),
            Held::F32(a) => Samples::F32(a.as_slice().map_err(not_contiguous)?),
            Held::F64(a) => Samples::F64(a.as_slice().map_err(not_contiguous)?),
            Held::F16(a) => Samples::F16(a.as_slice().map_err(not_contiguous)?.reinterpret_cast()),
            Held::BF16(a) => {
                Samples::BF16(a.as_slice().map_err(not_contiguous)?.reinterpret_cast())
            }
        })
    }
}

/// A read-only borrow of 1-D float32, float64, integer or bool weights (integer and bool weights
/// give sums of their own type, as numpy's histogram does).
pub enum HeldWeights<'py> {
    F32(PyReadonlyArray1<'py, f32>),
    F64(PyReadonlyArray1<'py, f64>),
    Bool(PyReadonlyArray1<'py, bool>),
    U8(PyReadonlyArray1<'py, u8>),
    U16(PyReadonlyArray1<'py, u16>),
    U32(PyReadonlyArray1<'py, u32>),
    U64(PyReadonlyArray1<'py, u64>),
    I8(PyReadonlyArray1<'py, i8>),
    I16(PyReadonlyArray1<'py, i16>),
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

impl<'py> HeldWeights<'py> {
    pub fn of(obj: &Bound<'py, PyAny>) -> PyResult<HeldWeights<'py>> {
        if let Ok(a) = obj.cast::<PyArray1<f32>>() {
            check_aligned(a.data() as usize, 4, "weights")?;
            return Ok(HeldWeights::F32(a.try_readonly()?));
        }
        if let Ok(a) = obj.cast::<PyArray1<f64>>() {
            check_aligned(a.data() as usize, 8, "weights")?;
            return Ok(HeldWeights::F64(a.try_readonly()?));
        }
        macro_rules! int {
            ($t:ty, $tag:ident) => {
                if let Ok(a) = obj.cast::<PyArray1<$t>>() {
                    check_aligned(a.data() as usize, std::mem::size_of::<$t>(), "weights")?;
                    return Ok(HeldWeights::$tag(a.try_readonly()?));
                }
            };
        }
        int!(bool, Bool);
        int!(u8, U8);
        int!(u16, U16);
        int!(u32, U32);
        int!(u64, U64);
        int!(i8, I8);
        int!(i16, I16);
        int!(i32, I32);
        int!(i64, I64);
        Err(PyTypeError::new_err(format!(
            "weights must be a 1-D numpy array of a float32, float64, integer or bool dtype in \
             native byte order, not {}",
            dtype_name(obj)
        )))
    }

    pub fn weights(&self) -> PyResult<Weights<'_>> {
        let not_contiguous = |_| PyValueError::new_err("internal: the weights are not contiguous");
        Ok(match self {
            HeldWeights::F32(a) => Weights::F32(a.as_slice().map_err(not_contiguous)?),
            HeldWeights::F64(a) => Weights::F64(a.as_slice().map_err(not_contiguous)?),
            HeldWeights::Bool(a) => {
                Weights::Int(IntWeights::Bool(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::U8(a) => {
                Weights::Int(IntWeights::U8(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::U16(a) => {
                Weights::Int(IntWeights::U16(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::U32(a) => {
                Weights::Int(IntWeights::U32(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::U64(a) => {
                Weights::Int(IntWeights::U64(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::I8(a) => {
                Weights::Int(IntWeights::I8(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::I16(a) => {
                Weights::Int(IntWeights::I16(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::I32(a) => {
                Weights::Int(IntWeights::I32(a.as_slice().map_err(not_contiguous)?))
            }
            HeldWeights::I64(a) => {
                Weights::Int(IntWeights::I64(a.as_slice().map_err(not_contiguous)?))
            }
        })
    }
}
