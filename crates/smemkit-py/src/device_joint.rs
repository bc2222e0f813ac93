//! Joint histograms (`histogramdd`, `histogram2d`) of GPU arrays, read in place through the
//! library's [`DeviceJoint`] on the stream the Python layer names, into outputs its framework
//! allocated. A [`DeviceJointCall`] holds one resolved joint histogram (axes' tables on the
//! device, kernels compiled on first run); the Python layer caches them per device, sample type,
//! bins, weights and strategy, so a repeated call only checks and enqueues.

use numpy::PyArray1;
use pyo3::prelude::*;
use smemkit::cudarc::driver::sys;
use smemkit::internals::histogramdd::cuda::{
    data_range_bins, DeviceAxis, DeviceJoint, JointRun, JointSpec,
};
use smemkit::{bins::BinSpec, device::WeightKind, histogram::StrategyChoice, sample::SampleType};

use crate::errors::IntoPy;
use crate::joint::{axis_spec, AxisBins};

/// One joint histogram resolved for a device (see the module documentation).
#[pyclass(frozen)]
pub struct DeviceJointCall {
    joint: DeviceJoint,
    weighted: bool,
}

#[pymethods]
impl DeviceJointCall {
    /// Joint bins (the product of the axes' bins).
    #[getter]
    fn nbins(&self) -> usize {
        self.joint.nbins()
    }

    /// Bins per axis.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.joint.shape()
    }

    /// Each axis's edges (float64), as numpy.histogramdd builds them.
    fn edges<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyArray1<f64>>> {
        self.joint
            .edges()
            .into_iter()
            .map(|e| PyArray1::from_vec(py, e))
            .collect()
    }

    /// Enqueues one run on `stream` (a `cudaStream_t`): `axes` the `(address, stride in
    /// elements)` of each axis's coordinate of sample 0, `n` samples, `weights` their address (0
    /// without), `out` nbins u64 counts (f64 sums with weights) in C order, `tallies` 3 u64 words.
    /// Returns without waiting for the GPU.
    #[pyo3(signature = (stream, axes, n, weights, out, tallies))]
    fn run(
        &self,
        stream: usize,
        axes: Vec<(u64, u64)>,
        n: usize,
        weights: u64,
        out: u64,
        tallies: u64,
    ) -> PyResult<()> {
        if (weights != 0) != self.weighted {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "internal: the weights' address does not match the call's weights",
            ));
        }
        let axes: Vec<DeviceAxis> = axes
            .into_iter()
            .map(|(ptr, stride)| DeviceAxis { ptr, stride })
            .collect();
        // SAFETY: the Python layer passes addresses of live device memory of this call's device
        // holding `n` samples along each axis (its address and stride), `n` weights, nbins and 3
        // words of output, kept alive by their framework until the stream has run the histogram
        // (stream-ordered allocators, or its keep-alive list), and a live stream of the device.
        unsafe {
            self.joint.run_raw(
                &JointRun {
                    axes: &axes,
                    n,
                    weights,
                    out,
                    tallies,
                    accumulate: false,
                },
                stream as sys::CUstream,
            )
        }
        .py_err()?;
        Ok(())
    }
}

/// Resolves a joint histogram of `dtype` samples on CUDA device `device`: one `(nbins, range,
/// edges)` per axis (a range is needed: bins from the data's extremes come through
/// [`device_joint_data_edges`]), weights of `weights_dtype` (None without), a strategy name.
/// Compiles nothing yet; copies the axes' tables to the device.
#[pyfunction]
#[pyo3(signature = (device, dtype, weights_dtype, bins, strategy))]
pub fn device_joint(
    py: Python<'_>,
    device: usize,
    dtype: &str,
    weights_dtype: Option<&str>,
    bins: Vec<AxisBins<'_>>,
    strategy: Option<&str>,
) -> PyResult<DeviceJointCall> {
    let sample_type = dtype.parse::<SampleType>().py_err()?;
    let weights = match weights_dtype {
        None => WeightKind::None,
        Some("float32") => WeightKind::F32,
        Some("float64") => WeightKind::F64,
        Some(other) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "internal: device weights of {other} (expected float32 or float64)"
            )))
        }
    };
    let strategy = match strategy {
        None => StrategyChoice::Auto,
        Some(s) => s.parse::<StrategyChoice>().py_err()?,
    };
    let bins = bins
        .into_iter()
        .map(axis_spec)
        .collect::<PyResult<Vec<BinSpec>>>()?;
    if bins
        .iter()
        .any(|b| matches!(b, BinSpec::Uniform { range: None, .. }))
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "internal: device joint bins need a range or edges",
        ));
    }
    let spec = JointSpec {
        sample_type,
        bins,
        weights,
        strategy,
    };
    let gpu = smemkit::internals::gpu::device::gpu_at(device).py_err()?;
    let joint = py.detach(|| DeviceJoint::new(&gpu, &spec)).py_err()?;
    Ok(DeviceJointCall {
        joint,
        weighted: weights != WeightKind::None,
    })
}

/// numpy.histogramdd's edges of one axis of `nbins` bins over its data's extremes `(lo, hi,
/// equal)` (None: no samples), which the Python layer read from the device.
#[pyfunction]
#[pyo3(signature = (dtype, nbins, extremes))]
pub fn device_joint_data_edges<'py>(
    py: Python<'py>,
    dtype: &str,
    nbins: usize,
    extremes: Option<(f64, f64, bool)>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let sample_type = dtype.parse::<SampleType>().py_err()?;
    match data_range_bins(sample_type, nbins, extremes).py_err()? {
        BinSpec::Edges(e) => Ok(PyArray1::from_vec(py, e)),
        _ => Err(pyo3::exceptions::PyValueError::new_err(
            "internal: the data's bins are edges",
        )),
    }
}
