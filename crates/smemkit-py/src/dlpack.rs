//! DLPack: the C structures behind `__dlpack__`'s capsule (legacy `dltensor` and versioned
//! `dltensor_versioned`), read without consuming the capsule, so the producer keeps ownership and
//! frees the tensor when the capsule goes. Host tensors (CPU and CUDA-pinned memory) become numpy
//! arrays over the same memory; device tensors are described, and refused by the caller until the
//! device-resident engine exists.

use std::ffi::{c_void, CStr};

use numpy::ndarray::ArrayView1;
use numpy::{Element, PyArray1};
use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

/// `DLDeviceType` values this binding names (the others are reported by number).
pub const CPU: i32 = 1;
pub const CUDA: i32 = 2;
pub const CUDA_HOST: i32 = 3;
pub const CUDA_MANAGED: i32 = 13;

/// The name of a `DLDeviceType`.
pub fn device_name(device_type: i32) -> String {
    match device_type {
        CPU => "cpu".into(),
        CUDA => "cuda".into(),
        CUDA_HOST => "cuda_host".into(),
        4 => "opencl".into(),
        7 => "vulkan".into(),
        8 => "metal".into(),
        10 => "rocm".into(),
        11 => "rocm_host".into(),
        CUDA_MANAGED => "cuda_managed".into(),
        14 => "oneapi".into(),
        n => format!("device type {n}"),
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const FLAG_READ_ONLY: u64 = 1;
const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// The element type of a tensor, as the binding knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    Int(u8),
    UInt(u8),
    Float(u8),
    Bool,
    Other { code: u8, bits: u8, lanes: u16 },
}

impl ElementType {
    fn from_dl(t: DLDataType) -> ElementType {
        match (t.code, t.bits, t.lanes) {
            (0, b @ (8 | 16 | 32 | 64), 1) => ElementType::Int(b),
            (1, b @ (8 | 16 | 32 | 64), 1) => ElementType::UInt(b),
            (2, b @ (16 | 32 | 64), 1) => ElementType::Float(b),
            (6, 8, 1) => ElementType::Bool,
            (code, bits, lanes) => ElementType::Other { code, bits, lanes },
        }
    }

    /// numpy's name of the type (`int32`, `float64`, `bool`), or a DLPack description.
    pub fn name(self) -> String {
        match self {
            ElementType::Int(b) => format!("int{b}"),
            ElementType::UInt(b) => format!("uint{b}"),
            ElementType::Float(b) => format!("float{b}"),
            ElementType::Bool => "bool".into(),
            ElementType::Other {
                code: 4,
                bits: 16,
                lanes: 1,
            } => "bfloat16".into(),
            ElementType::Other {
                code: 5,
                bits,
                lanes: 1,
            } => format!("complex{bits}"),
            ElementType::Other { code, bits, lanes } => {
                format!("DLPack type code {code}, {bits} bits, {lanes} lanes")
            }
        }
    }

    fn bytes(self) -> usize {
        match self {
            ElementType::Int(b) | ElementType::UInt(b) | ElementType::Float(b) => b as usize / 8,
            ElementType::Bool => 1,
            ElementType::Other { bits, lanes, .. } => (bits as usize * lanes as usize).div_ceil(8),
        }
    }
}

/// One tensor as a DLPack capsule describes it (the memory stays the producer's).
pub struct Tensor {
    pub device_type: i32,
    pub device_id: i32,
    pub element: ElementType,
    pub shape: Vec<i64>,
    /// Strides in elements; `None` when the producer left them out (compact row-major).
    pub strides: Option<Vec<i64>>,
    pub byte_offset: u64,
    pub data: usize,
    pub read_only: bool,
    pub versioned: bool,
}

impl Tensor {
    /// Reads the tensor of a `__dlpack__` capsule without consuming it.
    pub fn from_capsule(capsule: &Bound<'_, PyCapsule>) -> PyResult<Tensor> {
        let name = capsule.name()?;
        // SAFETY: the name pointer comes from the live capsule and is NUL-terminated.
        let name = name.map(|n| unsafe { n.as_cstr() }.to_owned());
        let versioned = match name.as_deref() {
            Some(n) if n == LEGACY => false,
            Some(n) if n == VERSIONED => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "not an unconsumed DLPack capsule (its name is {other:?}, expected \"dltensor\" or \"dltensor_versioned\"); was it used already?"
                )))
            }
        };
        let pointer = capsule.pointer_checked(Some(if versioned { VERSIONED } else { LEGACY }))?;
        // SAFETY: a capsule of this name holds a DLManagedTensor(Versioned) that stays valid while
        // the capsule is alive and unconsumed; it is only read here, and `capsule` is borrowed
        // for the whole call.
        let (tensor, read_only) = unsafe {
            if versioned {
                let m = &*(pointer.as_ptr() as *const DLManagedTensorVersioned);
                if m.version.major != 1 {
                    return Err(PyValueError::new_err(format!(
                        "DLPack version {}.{} is not supported (expected 1.x)",
                        m.version.major, m.version.minor
                    )));
                }
                (&m.dl_tensor, m.flags & FLAG_READ_ONLY != 0)
            } else {
                let m = &*(pointer.as_ptr() as *const DLManagedTensor);
                (&m.dl_tensor, false)
            }
        };
        if tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape.is_null()) {
            return Err(PyValueError::new_err(format!(
                "malformed DLPack tensor: ndim {} with {} shape",
                tensor.ndim,
                if tensor.shape.is_null() { "no" } else { "a" }
            )));
        }
        let ndim = tensor.ndim as usize;
        // SAFETY: `shape` (and `strides` where not NULL) point to `ndim` int64 values (DLPack).
        let shape = unsafe { slice_or_empty(tensor.shape, ndim) }.to_vec();
        let strides = (!tensor.strides.is_null())
            .then(|| unsafe { slice_or_empty(tensor.strides, ndim) }.to_vec());
        if let Some(d) = shape.iter().find(|&&d| d < 0) {
            return Err(PyValueError::new_err(format!(
                "malformed DLPack tensor: negative extent {d} in shape {shape:?}"
            )));
        }
        Ok(Tensor {
            device_type: tensor.device.device_type,
            device_id: tensor.device.device_id,
            element: ElementType::from_dl(tensor.dtype),
            shape,
            strides,
            byte_offset: tensor.byte_offset,
            data: tensor.data as usize,
            read_only,
            versioned,
        })
    }

    pub fn is_host(&self) -> bool {
        matches!(self.device_type, CPU | CUDA_HOST)
    }

    pub fn len(&self) -> usize {
        self.shape.iter().map(|&d| d as usize).product()
    }

    /// Whether the elements lie in row-major order without gaps (or the strides are irrelevant).
    fn is_compact(&self) -> bool {
        let Some(strides) = &self.strides else {
            return true;
        };
        let mut expected = 1i64;
        for (&d, &s) in self.shape.iter().zip(strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    /// The capsule's description as a dict (for tests and error messages).
    pub fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("device", device_name(self.device_type))?;
        d.set_item("device_type", self.device_type)?;
        d.set_item("device_id", self.device_id)?;
        d.set_item("dtype", self.element.name())?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item(
            "strides",
            match &self.strides {
                Some(s) => PyTuple::new(py, s)?.into_any(),
                None => py.None().into_bound(py),
            },
        )?;
        d.set_item("byte_offset", self.byte_offset)?;
        d.set_item("data", self.data)?;
        d.set_item("read_only", self.read_only)?;
        d.set_item("versioned", self.versioned)?;
        Ok(d)
    }

    /// A numpy array of the host tensor in its shape: over the same memory (kept alive by the
    /// capsule, read-only) when it is compact, else a copy in logical order.
    pub fn host_array<'py>(&self, capsule: &Bound<'py, PyCapsule>) -> PyResult<Bound<'py, PyAny>> {
        if !self.is_host() {
            return Err(PyNotImplementedError::new_err(format!(
                "GPU arrays are not supported yet: this DLPack tensor lives on {} {}; the \
                 device-resident engine (issue 21) will read it in place",
                device_name(self.device_type),
                self.device_id
            )));
        }
        let flat = match self.element {
            ElementType::Int(8) => self.flat::<i8>(capsule),
            ElementType::Int(16) => self.flat::<i16>(capsule),
            ElementType::Int(32) => self.flat::<i32>(capsule),
            ElementType::Int(64) => self.flat::<i64>(capsule),
            ElementType::UInt(8) => self.flat::<u8>(capsule),
            ElementType::UInt(16) => self.flat::<u16>(capsule),
            ElementType::UInt(32) => self.flat::<u32>(capsule),
            ElementType::UInt(64) => self.flat::<u64>(capsule),
            ElementType::Float(32) => self.flat::<f32>(capsule),
            ElementType::Float(64) => self.flat::<f64>(capsule),
            ElementType::Bool => self.flat::<bool>(capsule),
            // numpy has float16 (the bits viewed as it); bfloat16 is ml_dtypes' type for numpy.
            ElementType::Float(16) => self
                .flat::<u16>(capsule)
                .and_then(|a| a.call_method1("view", ("float16",))),
            ElementType::Other {
                code: 4,
                bits: 16,
                lanes: 1,
            } => {
                let py = capsule.py();
                let bf16 = py
                    .import("ml_dtypes")
                    .and_then(|m| m.getattr("bfloat16"))
                    .map_err(|_| {
                        PyNotImplementedError::new_err(
                            "bfloat16 host tensors need the ml_dtypes package (numpy's bfloat16 \
                             type, which numpy lacks): pip install ml_dtypes",
                        )
                    })?;
                self.flat::<u16>(capsule)
                    .and_then(|a| a.call_method1("view", (bf16,)))
            }
            other => Err(PyTypeError::new_err(format!(
                "DLPack tensors of {} are not supported (expected an integer, bool, float32 or float64 type)",
                other.name()
            ))),
        }?;
        flat.call_method1("reshape", (PyTuple::new(capsule.py(), &self.shape)?,))
    }

    fn flat<'py, T: Element + Copy>(
        &self,
        capsule: &Bound<'py, PyCapsule>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = capsule.py();
        let n = self.len();
        let base = self.data.wrapping_add(self.byte_offset as usize);
        if n == 0 {
            return Ok(PyArray1::<T>::from_vec(py, Vec::new()).into_any());
        }
        if self.data == 0 {
            return Err(PyValueError::new_err(format!(
                "malformed DLPack tensor: a NULL data pointer for {n} elements"
            )));
        }
        if base % std::mem::align_of::<T>() != 0 {
            return Err(PyValueError::new_err(format!(
                "DLPack tensor data at {base:#x} is not aligned for {}",
                self.element.name()
            )));
        }
        debug_assert_eq!(self.element.bytes(), std::mem::size_of::<T>());
        if self.is_compact() {
            // SAFETY: a compact host tensor holds `n` initialised elements of T from `base`, alive
            // while the capsule is (the array keeps the capsule as its base object), and the array
            // is made read-only below so it is not written through.
            let view = unsafe { ArrayView1::from_shape_ptr(n, base as *const T) };
            let array = unsafe { PyArray1::borrow_from_array(&view, capsule.clone().into_any()) };
            array.call_method1("setflags", (false,))?;
            return Ok(array.into_any());
        }
        let strides = self.strides.as_deref().expect("compact without strides");
        let mut out = Vec::with_capacity(n);
        let mut index = vec![0i64; self.shape.len()];
        let mut offset = 0i64;
        for _ in 0..n {
            // SAFETY: every offset is `sum(index[k] * strides[k])` with `index[k] < shape[k]`,
            // which DLPack guarantees addresses an element of the tensor.
            out.push(unsafe { *(base as *const T).offset(offset as isize) });
            for k in (0..index.len()).rev() {
                index[k] += 1;
                offset += strides[k];
                if index[k] < self.shape[k] {
                    break;
                }
                offset -= strides[k] * self.shape[k];
                index[k] = 0;
            }
        }
        Ok(PyArray1::from_vec(py, out).into_any())
    }
}

/// `std::slice::from_raw_parts` that accepts a NULL pointer for zero elements.
///
/// # Safety
/// When `len > 0`, `p` must point to `len` readable values of T that outlive the slice.
unsafe fn slice_or_empty<'a, T>(p: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// `obj.__dlpack__()` for a host consumer: the versioned capsule where the producer offers it
/// (`max_version=(1, 0)`), the legacy one otherwise. A host tensor takes no stream.
pub fn capsule_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => obj.call_method0("__dlpack__")?,
        Err(e) => return Err(e),
    };
    capsule.cast_into::<PyCapsule>().map_err(|e| {
        PyTypeError::new_err(format!(
            "__dlpack__() returned {}, not a capsule",
            e.into_inner()
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}
