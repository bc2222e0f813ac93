//! CUDA stream values as the two array-interchange protocols pass them. They differ: DLPack's
//! `__dlpack__(stream=...)` is the consumer's stream, where the array API gives `None` the meaning
//! "the legacy default stream" and `-1` "no synchronisation"; the `stream` field of
//! `__cuda_array_interface__` v3 is the producer's stream, where `None` (or no field, v2) means the
//! data needs no synchronisation. Both refuse 0, which would be ambiguous between the legacy and
//! the per-thread default stream.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A stream named by one of the protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The legacy default stream (`cudaStreamLegacy`).
    Legacy,
    /// The calling thread's per-thread default stream (`cudaStreamPerThread`).
    PerThread,
    /// A `cudaStream_t` handle.
    Handle(usize),
    /// No ordering asked for: the data is ready, or the caller orders the work itself.
    NoSync,
}

impl Stream {
    /// The consumer's `stream` argument of `__dlpack__`, per the array API standard.
    pub fn from_dlpack_arg(value: &Bound<'_, PyAny>) -> PyResult<Stream> {
        if value.is_none() {
            return Ok(Stream::Legacy);
        }
        Self::from_int(value, "the DLPack stream argument", -1)
    }

    /// The producer's `stream` field of `__cuda_array_interface__` (v3; absent in v2).
    pub fn from_cuda_array_interface(value: Option<&Bound<'_, PyAny>>) -> PyResult<Stream> {
        match value {
            None => Ok(Stream::NoSync),
            Some(v) if v.is_none() => Ok(Stream::NoSync),
            Some(v) => Self::from_int(v, "__cuda_array_interface__['stream']", 0),
        }
    }

    /// 1, 2, a handle above 2, or `no_sync` (a value only DLPack gives a meaning: -1).
    fn from_int(value: &Bound<'_, PyAny>, what: &str, no_sync: i64) -> PyResult<Stream> {
        if value.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err(format!(
                "{what} must be an integer or None, not bool"
            )));
        }
        let n: i128 = value.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be an integer or None, not {}",
                value
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        match n {
            1 => Ok(Stream::Legacy),
            2 => Ok(Stream::PerThread),
            n if no_sync != 0 && n == no_sync as i128 => Ok(Stream::NoSync),
            n if n > 2 && n <= usize::MAX as i128 => Ok(Stream::Handle(n as usize)),
            0 => Err(PyValueError::new_err(format!(
                "{what} is 0, which is ambiguous (use 1 for the legacy default stream, 2 for the per-thread default stream)"
            ))),
            n => Err(PyValueError::new_err(format!(
                "{what} {n} is not a stream (expected 1, 2, a stream handle above 2{})",
                if no_sync != 0 { ", -1 or None" } else { " or None" }
            ))),
        }
    }

    /// `(kind, handle)`: `("legacy", None)`, `("per-thread", None)`, `("handle", n)`, `("none", None)`.
    pub fn describe(self) -> (&'static str, Option<usize>) {
        match self {
            Stream::Legacy => ("legacy", None),
            Stream::PerThread => ("per-thread", None),
            Stream::Handle(h) => ("handle", Some(h)),
            Stream::NoSync => ("none", None),
        }
    }
}
