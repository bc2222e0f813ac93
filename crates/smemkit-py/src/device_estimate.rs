//! numpy's bin estimators for GPU arrays, read in place by the library's device estimate
//! ([`smemkit::device::estimate_bins_raw`]) on the stream the Python layer names. It synchronises that
//! stream: the number of bins is the shape of the result.

use numpy::{PyArray1, ToPyArray};
use pyo3::prelude::*;
use smemkit::cudarc::driver::sys;
use smemkit::{bins::BinRule, sample::SampleType};

use crate::errors::IntoPy;

/// A GPU array as the Python layer describes it: `(device, stream, ptr, n, dtype)`, the `n`
/// samples of `dtype` at device address `ptr` on device `device`, read on `stream` (a
/// `cudaStream_t`).
#[derive(FromPyObject)]
pub struct DeviceArrayArg(usize, usize, u64, usize, String);

/// The number of bins, their float64 edges, and the data's extremes (no range given).
type Estimate<'py> = (usize, Bound<'py, PyArray1<f64>>, Option<(f64, f64)>);

/// numpy's number of bins and their edges (float64) for the estimator `rule` on the samples of
/// `array`, over `range` (the data's extremes when `None`), computed on the array's stream, and
/// the data's extremes when no range was given (so that the histogram can take uniform bins over
/// them, as numpy does, rather than the edges).
#[pyfunction]
#[pyo3(signature = (array, rule, range))]
pub fn device_estimate<'py>(
    py: Python<'py>,
    array: DeviceArrayArg,
    rule: &str,
    range: Option<(f64, f64)>,
) -> PyResult<Estimate<'py>> {
    let DeviceArrayArg(device, stream, input, n, dtype) = array;
    let sample_type = dtype.parse::<SampleType>().py_err()?;
    let rule = rule.parse::<BinRule>().py_err()?;
    let gpu = smemkit::internals::gpu::device::gpu_at(device).py_err()?;
    let estimate = py
        .detach(|| {
            // SAFETY: the Python layer passes the address of live device memory of this device
            // holding `n` samples of `dtype`, kept alive by its framework for this call (which
            // waits for the stream), and a live stream of the device.
            unsafe {
                smemkit::device::estimate_bins_raw(
                    &gpu,
                    input,
                    n,
                    sample_type,
                    rule,
                    range,
                    stream as sys::CUstream,
                )
            }
        })
        .py_err()?;
    Ok((
        estimate.nbins,
        estimate.edges.to_pyarray(py),
        estimate.extremes,
    ))
}
