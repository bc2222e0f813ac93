//! The native half of the `smemkit` Python package: numpy's histogram functions over the smemkit
//! engines, and the readers of the array-interchange protocols (DLPack, the CUDA array interface).
//! The Python half (python/smemkit/__init__.py) owns numpy's argument handling and result types;
//! this module only counts, and reads foreign arrays in place.

mod arrays;
mod cuda_interface;
mod device;
mod device_digitize;
mod device_estimate;
mod device_joint;
mod dlpack;
mod errors;
mod fast;
mod histogram;
mod joint;
mod plan;
mod stream;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::stream::Stream;

/// What `obj.__cuda_array_interface__` describes, checked (a dict; for tests and error messages).
#[pyfunction]
fn cuda_array_interface<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    cuda_interface::CudaArray::of(obj)?.to_dict(obj.py())
}

/// What `obj.__dlpack__()` describes, without consuming the capsule (a dict).
#[pyfunction]
fn dlpack_info<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let capsule = dlpack::capsule_of(obj)?;
    dlpack::Tensor::from_capsule(&capsule)?.to_dict(obj.py())
}

/// What a DLPack capsule (from `__dlpack__(stream=...)`) describes, without consuming it (a dict).
#[pyfunction]
fn dlpack_capsule_info<'py>(capsule: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let capsule = capsule.cast::<pyo3::types::PyCapsule>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("__dlpack__() did not return a capsule")
    })?;
    dlpack::Tensor::from_capsule(capsule)?.to_dict(capsule.py())
}

/// A host DLPack tensor as a numpy array over the same memory (a copy if it is not compact).
#[pyfunction]
fn dlpack_host_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let capsule = dlpack::capsule_of(obj)?;
    dlpack::Tensor::from_capsule(&capsule)?.host_array(&capsule)
}

/// The name of a `DLDeviceType` number.
#[pyfunction]
fn dlpack_device_name(device_type: i32) -> String {
    dlpack::device_name(device_type)
}

/// `(kind, handle)` of a DLPack consumer's `stream` argument.
#[pyfunction]
fn dlpack_stream(value: &Bound<'_, PyAny>) -> PyResult<(&'static str, Option<usize>)> {
    Ok(Stream::from_dlpack_arg(value)?.describe())
}

/// `(kind, handle)` of a `__cuda_array_interface__` `stream` field.
#[pyfunction]
fn cuda_array_interface_stream(
    value: &Bound<'_, PyAny>,
) -> PyResult<(&'static str, Option<usize>)> {
    Ok(Stream::from_cuda_array_interface(Some(value))?.describe())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(histogram::histogram, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_bin_edges, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::typed_bin_edges, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::data_bin_edges, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::bincount, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::estimate_bins, m)?)?;
    m.add_function(wrap_pyfunction!(plan::plan, m)?)?;
    m.add_function(wrap_pyfunction!(joint::histogramdd, m)?)?;
    m.add_function(wrap_pyfunction!(joint::digitize, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_cache_size, m)?)?;
    m.add_function(wrap_pyfunction!(device_joint::device_joint, m)?)?;
    m.add_function(wrap_pyfunction!(device_joint::device_joint_data_edges, m)?)?;
    m.add_class::<device_joint::DeviceJointCall>()?;
    m.add_function(wrap_pyfunction!(device_digitize::device_digitize, m)?)?;
    m.add_class::<device_digitize::DeviceDigitizeCall>()?;
    m.add_function(wrap_pyfunction!(device_estimate::device_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(fast::fast_call, m)?)?;
    m.add_function(wrap_pyfunction!(fast::trace_native, m)?)?;
    m.add_class::<fast::FastCall>()?;
    m.add_function(wrap_pyfunction!(cuda_array_interface, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_info, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_capsule_info, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_host_array, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_device_name, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_stream, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_array_interface_stream, m)?)?;
    Ok(())
}
