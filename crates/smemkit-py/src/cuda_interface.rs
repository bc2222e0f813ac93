//! `__cuda_array_interface__` (version 3, and 2 which has no stream): a device pointer, shape,
//! strides in bytes, a numpy type string and the producer's stream. Parsed and checked here so
//! the device-resident engine can take such arrays in place; until it exists the caller refuses
//! them with a clear error.

use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::stream::Stream;

/// One array as the interface describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaArray {
    pub data: usize,
    pub read_only: bool,
    pub shape: Vec<usize>,
    /// Strides in bytes; `None`: C-contiguous.
    pub strides: Option<Vec<isize>>,
    /// numpy's type string, e.g. `<f4`.
    pub typestr: String,
    pub version: u32,
    pub stream: Stream,
}

fn bad(message: String) -> PyErr {
    PyValueError::new_err(format!("__cuda_array_interface__: {message}"))
}

impl CudaArray {
    /// Reads `obj.__cuda_array_interface__`.
    pub fn of(obj: &Bound<'_, PyAny>) -> PyResult<CudaArray> {
        let interface = obj.getattr("__cuda_array_interface__")?;
        let d = interface.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err("__cuda_array_interface__ must be a dict".to_string())
        })?;
        let get = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> { d.get_item(key) };
        let need = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            get(key)?.ok_or_else(|| bad(format!("the required key '{key}' is missing")))
        };
        let version: u32 = need("version")?
            .extract()
            .map_err(|_| bad("'version' must be an integer".into()))?;
        if !(2..=3).contains(&version) {
            return Err(bad(format!(
                "version {version} is not supported (expected 2 or 3)"
            )));
        }
        let shape: Vec<usize> = need("shape")?
            .extract()
            .map_err(|_| bad("'shape' must be a tuple of non-negative integers".into()))?;
        let typestr: String = need("typestr")?
            .extract()
            .map_err(|_| bad("'typestr' must be a string".into()))?;
        let data = need("data")?;
        let data = data
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| bad("'data' must be a tuple (pointer, read_only)".into()))?;
        let pointer: usize = data
            .get_item(0)?
            .extract()
            .map_err(|_| bad("the data pointer must be a non-negative integer".into()))?;
        let read_only: bool = data
            .get_item(1)?
            .extract()
            .map_err(|_| bad("the data's read-only flag must be a bool".into()))?;
        let count: usize = shape.iter().product();
        if pointer == 0 && count > 0 {
            return Err(bad(format!("a NULL data pointer for {count} elements")));
        }
        let strides = match get("strides")? {
            Some(s) if !s.is_none() => {
                let s: Vec<isize> = s
                    .extract()
                    .map_err(|_| bad("'strides' must be None or a tuple of integers".into()))?;
                if s.len() != shape.len() {
                    return Err(bad(format!(
                        "{} strides for a shape of {} dimensions",
                        s.len(),
                        shape.len()
                    )));
                }
                Some(s)
            }
            _ => None,
        };
        if let Some(mask) = get("mask")? {
            if !mask.is_none() {
                return Err(PyNotImplementedError::new_err(
                    "masked CUDA arrays (__cuda_array_interface__ 'mask') are not supported",
                ));
            }
        }
        let stream = if version >= 3 {
            Stream::from_cuda_array_interface(get("stream")?.as_ref())?
        } else {
            Stream::NoSync
        };
        check_typestr(&typestr)?;
        Ok(CudaArray {
            data: pointer,
            read_only,
            shape,
            strides,
            typestr,
            version,
            stream,
        })
    }

    pub fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("data", self.data)?;
        d.set_item("read_only", self.read_only)?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item(
            "strides",
            match &self.strides {
                Some(s) => PyTuple::new(py, s)?.into_any(),
                None => py.None().into_bound(py),
            },
        )?;
        d.set_item("typestr", &self.typestr)?;
        d.set_item("version", self.version)?;
        d.set_item("stream", self.stream.describe())?;
        Ok(d)
    }
}

/// A numpy type string: byte order (`<`, `>`, `|`, `=`), kind letter, size in bytes.
fn check_typestr(t: &str) -> PyResult<()> {
    let b = t.as_bytes();
    let ok = b.len() >= 3
        && matches!(b[0], b'<' | b'>' | b'|' | b'=')
        && b[1].is_ascii_alphabetic()
        && t[2..].parse::<u32>().is_ok_and(|n| n > 0);
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "'typestr' {t:?} is not a numpy type string such as '<f4'"
        )))
    }
}
