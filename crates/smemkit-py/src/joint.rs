//! The counting entry points behind `smemkit.histogramdd`, `histogram2d` and `digitize`. The
//! Python layer (python/smemkit/_joint.py) applies numpy's argument rules and result types; these
//! functions take flat host arrays and plain values and run the library's CPU engine (the joint
//! histogram's GPU engine runs only with backend='cuda') with the interpreter released.

use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use smemkit::{
    bins::{BinSpec, IntEdges},
    histogram::Counts,
    histogramdd::{JointOptions, JointSamples},
    Backend,
};

use crate::arrays::{Held, HeldWeights};
use crate::errors::IntoPy;
use crate::histogram::Edges;

/// One axis's bins as the Python layer passes them: a count with an optional range, or edges
/// (integer ones kept exact, for the CPU engine).
pub(crate) type AxisBins<'py> = (Option<usize>, Option<(f64, f64)>, Option<Edges<'py>>);

pub(crate) fn axis_spec(bins: AxisBins<'_>) -> PyResult<BinSpec> {
    match bins {
        (Some(nbins), range, None) => Ok(BinSpec::Uniform { nbins, range }),
        (None, None, Some(Edges::Float(edges))) => Ok(BinSpec::Edges(edges.as_array().to_vec())),
        (None, None, Some(Edges::Signed(edges))) => {
            Ok(BinSpec::IntEdges(IntEdges::I64(edges.as_array().to_vec())))
        }
        (None, None, Some(Edges::Unsigned(edges))) => {
            Ok(BinSpec::IntEdges(IntEdges::U64(edges.as_array().to_vec())))
        }
        _ => Err(PyValueError::new_err(
            "internal: each axis takes a bin count (and a range) or edges",
        )),
    }
}

/// `(counts, density, edges, shape)` of the joint histogram of `data`: one C-order (N, D) array
/// flattened (`layout` 'rows'), one Fortran-order one ('columns'), or D arrays ('separate').
/// Counts are u64 (f64 sums with weights) in C order of `shape`; density is None unless asked.
#[pyfunction]
#[pyo3(signature = (data, layout, weights, bins, density, backend))]
#[allow(clippy::type_complexity)]
pub fn histogramdd<'py>(
    py: Python<'py>,
    data: Vec<Bound<'py, PyAny>>,
    layout: &str,
    weights: Option<&Bound<'py, PyAny>>,
    bins: Vec<AxisBins<'py>>,
    density: bool,
    backend: &str,
) -> PyResult<(
    Bound<'py, PyAny>,
    Option<Bound<'py, PyArray1<f64>>>,
    Vec<Bound<'py, PyArray1<f64>>>,
    Vec<usize>,
)> {
    let held = data
        .iter()
        .map(|a| Held::of(a, "sample"))
        .collect::<PyResult<Vec<_>>>()?;
    let columns = held
        .iter()
        .map(Held::samples)
        .collect::<PyResult<Vec<_>>>()?;
    let dims = bins.len();
    let samples = match (layout, columns.as_slice()) {
        ("rows", [flat]) => JointSamples::rows(*flat, dims),
        ("columns", [flat]) => JointSamples::columns(*flat, dims),
        ("separate", _) => JointSamples::separate(columns.clone()),
        _ => {
            return Err(PyValueError::new_err(format!(
                "internal: layout {layout:?} with {} arrays",
                columns.len()
            )))
        }
    }
    .py_err()?;
    let held_weights = weights.map(HeldWeights::of).transpose()?;
    let w = held_weights.as_ref().map(|w| w.weights()).transpose()?;
    let specs = bins
        .into_iter()
        .map(axis_spec)
        .collect::<PyResult<Vec<_>>>()?;
    let opts = JointOptions::new(specs)
        .density(density)
        .backend(backend.parse::<Backend>().py_err()?);
    let h = py
        .detach(|| smemkit::histogramdd::histogramdd(&samples, w, &opts))
        .py_err()?;
    let counts = match h.counts {
        Counts::Unweighted(c) => PyArray1::from_vec(py, c).into_any(),
        Counts::Weighted(c) => PyArray1::from_vec(py, c).into_any(),
        // Integer weights reach the library from the Python side as float64 (the package casts
        // the result back to the weights' dtype): int64 sums if they ever come.
        Counts::Integer { sums, .. } => PyArray1::from_vec(py, sums).into_any(),
    };
    let density = h.density.map(|d| PyArray1::from_vec(py, d));
    let edges = h
        .edges
        .into_iter()
        .map(|e| PyArray1::from_vec(py, e))
        .collect();
    Ok((counts, density, edges, h.shape))
}

/// numpy's `digitize` of a flat array: int64 bin indices. Integer bins stay exact where numpy
/// compares in integers.
#[pyfunction]
#[pyo3(signature = (x, bins, right))]
pub fn digitize<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    bins: Edges<'py>,
    right: bool,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let held = Held::of(x, "x")?;
    let samples = held.samples()?;
    let out = match bins {
        Edges::Float(bins) => {
            let bins = bins
                .as_slice()
                .map_err(|_| PyValueError::new_err("internal: the bins are not contiguous"))?;
            py.detach(|| smemkit::digitize::digitize(samples, bins, right))
        }
        Edges::Signed(bins) => {
            let bins = IntEdges::I64(bins.as_array().to_vec());
            py.detach(|| smemkit::digitize::digitize_int_edges(samples, &bins, right))
        }
        Edges::Unsigned(bins) => {
            let bins = IntEdges::U64(bins.as_array().to_vec());
            py.detach(|| smemkit::digitize::digitize_int_edges(samples, &bins, right))
        }
    }
    .py_err()?;
    Ok(PyArray1::from_vec(py, out))
}
