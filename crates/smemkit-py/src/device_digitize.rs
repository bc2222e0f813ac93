//! `digitize` of GPU arrays, read in place through the library's [`DeviceDigitize`] on the stream
//! the Python layer names, into an int64 output its framework allocated. A [`DeviceDigitizeCall`]
//! holds the compiled kernel and the bins on the device; the Python layer caches them per device,
//! sample type, bins and side, so a repeated call only enqueues.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use smemkit::cudarc::driver::sys;
use smemkit::internals::digitize::cuda::DeviceDigitize;
use smemkit::sample::SampleType;

use crate::errors::IntoPy;

/// One digitize resolved for a device (see the module documentation).
#[pyclass(frozen)]
pub struct DeviceDigitizeCall {
    digitize: DeviceDigitize,
}

#[pymethods]
impl DeviceDigitizeCall {
    /// Enqueues the indices of the `n` samples at `input` into the `n` int64 at `out`, on
    /// `stream` (a `cudaStream_t`); returns without waiting for the GPU.
    #[pyo3(signature = (stream, input, n, out))]
    fn run(&self, stream: usize, input: u64, n: usize, out: u64) -> PyResult<()> {
        let sample_type = self.digitize.sample_type();
        // SAFETY: the Python layer passes addresses of live device memory of this call's device
        // holding `n` samples of the call's type and `n` int64, kept alive by their framework
        // until the stream has run the kernel, and a live stream of the device.
        unsafe {
            self.digitize
                .run_raw(input, n, sample_type, out, stream as sys::CUstream)
        }
        .py_err()
    }
}

/// Compiles digitize for `dtype` samples against `bins` (monotonic, float64) on CUDA device
/// `device`, and copies the bins there (waiting for the copy, so any stream can run it).
#[pyfunction]
#[pyo3(signature = (device, dtype, bins, right))]
pub fn device_digitize(
    py: Python<'_>,
    device: usize,
    dtype: &str,
    bins: PyReadonlyArray1<'_, f64>,
    right: bool,
) -> PyResult<DeviceDigitizeCall> {
    let sample_type = dtype.parse::<SampleType>().py_err()?;
    let bins = bins.as_array().to_vec();
    let gpu = smemkit::internals::gpu::device::gpu_at(device).py_err()?;
    // Building waits for the bins' copy on the library's stream (the runs are on the caller's).
    let digitize = py
        .detach(|| DeviceDigitize::new(&gpu, sample_type, &bins, right))
        .py_err()?;
    Ok(DeviceDigitizeCall { digitize })
}
