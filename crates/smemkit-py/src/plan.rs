//! `smemkit.plan`: the GPU launch plan the planner would choose for a histogram, as plain values,
//! with the device limits it used (the GPU's when one can be opened, an H100's otherwise).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use smemkit::internals::histogram::plan::{plan as make_plan, DeviceLimits, Workload};
use smemkit::{histogram::StrategyChoice, sample::SampleType};

use crate::errors::IntoPy;

#[pyfunction]
#[pyo3(signature = (bins, dtype, weighted, samples, strategy))]
pub fn plan<'py>(
    py: Python<'py>,
    bins: usize,
    dtype: &str,
    weighted: bool,
    samples: Option<usize>,
    strategy: &str,
) -> PyResult<Bound<'py, PyDict>> {
    if bins == 0 {
        return Err(smemkit::Error::ZeroBins).py_err();
    }
    let sample_type = dtype.parse::<SampleType>().py_err()?;
    let choice = strategy.parse::<StrategyChoice>().py_err()?;
    let (limits, device) = match smemkit::internals::gpu::gpu() {
        Ok(gpu) => (gpu.limits, gpu.name.clone()),
        Err(e) => (
            DeviceLimits::H100,
            format!("no GPU found ({e}): the limits of an H100 80GB HBM3"),
        ),
    };
    let workload = Workload::new(bins, sample_type, weighted).with_samples(samples);
    let p = make_plan(&workload, &limits, choice).py_err()?;
    let d = PyDict::new(py);
    d.set_item("device", device)?;
    d.set_item("bins", bins)?;
    d.set_item("dtype", sample_type.name())?;
    d.set_item("weighted", weighted)?;
    d.set_item("samples", samples)?;
    d.set_item("strategy", p.strategy.name())?;
    d.set_item("grid", p.grid)?;
    d.set_item("block", p.block)?;
    d.set_item("shared_bytes", p.shared_bytes)?;
    d.set_item("bins_per_block", p.bins_per_block)?;
    d.set_item("reason", p.reason)?;
    d.set_item("sm_count", limits.sm_count)?;
    d.set_item(
        "compute_capability",
        (limits.compute_capability.0, limits.compute_capability.1),
    )?;
    Ok(d)
}
