//! The counting entry points behind `smemkit.histogram`, `histogram_bin_edges` and `bincount`.
//! The Python layer (python/smemkit/__init__.py) parses numpy's arguments and shapes the results
//! (dtypes, density); these functions take flat arrays and plain values, run the library with the
//! interpreter released, and return the counts and edges as numpy arrays that own the library's
//! vectors (no copy).

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use smemkit::internals::histogram::bins::half::HalfFormat;
use smemkit::{
    bins::{BinSpec, Binning, IntEdges, OutOfRange},
    histogram::{Counts, HistogramOptions, StrategyChoice, WeightSums},
    sample::{IntType, SampleType, Samples},
    Backend,
};

use crate::arrays::{Held, HeldWeights};
use crate::errors::IntoPy;

/// The library options from the Python keywords.
fn options(
    bins: BinSpec,
    out_of_range: &str,
    backend: &str,
    strategy: Option<&str>,
) -> PyResult<HistogramOptions> {
    let strategy = match strategy {
        None => StrategyChoice::Auto,
        Some(s) => s.parse::<StrategyChoice>().py_err()?,
    };
    Ok(HistogramOptions::new(bins)
        .policy(out_of_range.parse::<OutOfRange>().py_err()?)
        .backend(backend.parse::<Backend>().py_err()?)
        .strategy(strategy))
}

fn spec(nbins: Option<usize>, range: Option<RangeArg>, edges: Option<Edges>) -> PyResult<BinSpec> {
    match (nbins, edges) {
        (Some(nbins), None) => uniform(nbins, range),
        (None, Some(Edges::Float(e))) => Ok(BinSpec::Edges(e.as_array().to_vec())),
        (None, Some(Edges::Signed(e))) => {
            Ok(BinSpec::IntEdges(IntEdges::I64(e.as_array().to_vec())))
        }
        (None, Some(Edges::Unsigned(e))) => {
            Ok(BinSpec::IntEdges(IntEdges::U64(e.as_array().to_vec())))
        }
        _ => Err(PyValueError::new_err(
            "internal: give exactly one of nbins and edges",
        )),
    }
}

/// A range as the Python layer hands it over: `(lo, hi)`, widened to float64 as numpy widens
/// Python numbers, or `('sample', lo, hi)`, values of the samples' own float type that numpy
/// computes the bins in.
#[derive(FromPyObject)]
pub enum RangeArg {
    Floats(f64, f64),
    /// `('int', lo, hi)`: a range of Python ints (see [`BinSpec::UniformIntRange`]).
    Ints(String, i64, i64),
    InSampleType(String, f64, f64),
    /// `('narrow', lo, hi, type)`: values of float32 or float16 for samples numpy bins in
    /// float64 (see [`BinSpec::UniformInRangeType`]).
    InRangeType(String, f64, f64, String),
}

fn uniform(nbins: usize, range: Option<RangeArg>) -> PyResult<BinSpec> {
    let tagged = match &range {
        Some(RangeArg::InSampleType(tag, ..)) => Some((tag, "sample")),
        Some(RangeArg::Ints(tag, ..)) => Some((tag, "int")),
        Some(RangeArg::InRangeType(tag, ..)) => Some((tag, "narrow")),
        _ => None,
    };
    if let Some((tag, want)) = tagged {
        if tag != want {
            return Err(PyValueError::new_err(format!(
                "internal: a typed range is ('sample', lo, hi) of floats or ('int', lo, hi) of \
                 ints, not {tag:?} with these values"
            )));
        }
    }
    Ok(match range {
        None => BinSpec::Uniform { nbins, range: None },
        Some(RangeArg::Floats(lo, hi)) => BinSpec::Uniform {
            nbins,
            range: Some((lo, hi)),
        },
        Some(RangeArg::InSampleType(_, lo, hi)) => BinSpec::UniformInSampleType {
            nbins,
            range: (lo, hi),
        },
        Some(RangeArg::Ints(_, lo, hi)) => BinSpec::UniformIntRange {
            nbins,
            range: (lo, hi),
        },
        Some(RangeArg::InRangeType(_, lo, hi, range_type)) => BinSpec::UniformInRangeType {
            nbins,
            range: (lo, hi),
            range_type: match range_type.as_str() {
                "float32" => SampleType::F32,
                "float16" => SampleType::F16,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "internal: a narrow range is float32 or float16, not {other}"
                    )))
                }
            },
        },
    })
}

/// Explicit edges as numpy holds them: float64, or int64 / uint64 kept exact (numpy compares
/// integer samples with integer edges in integers, beyond 2^53 too).
#[derive(FromPyObject)]
pub enum Edges<'py> {
    Float(PyReadonlyArray1<'py, f64>),
    Signed(PyReadonlyArray1<'py, i64>),
    Unsigned(PyReadonlyArray1<'py, u64>),
}

/// numpy's dtype of the edges of `binning` (the type numpy computes them in): the samples' own
/// 16-bit type or float32 where numpy keeps it, float64 otherwise.
fn edges_dtype(binning: &Binning) -> &'static str {
    match binning {
        Binning::UniformHalf(u) => match u.format {
            HalfFormat::F16 => "float16",
            HalfFormat::BF16 => "bfloat16",
        },
        Binning::UniformF32(_) => "float32",
        _ => "float64",
    }
}

fn counts_array(py: Python<'_>, counts: Counts) -> Bound<'_, PyAny> {
    match counts {
        Counts::Unweighted(c) => PyArray1::from_vec(py, c).into_any(),
        Counts::Weighted(c) => PyArray1::from_vec(py, c).into_any(),
        // Sums of integer weights in their dtype (each sum lies in its range: exact casts).
        Counts::Integer { sums, dtype } => {
            let s = sums.iter();
            match dtype {
                IntType::Bool => PyArray1::from_iter(py, s.map(|&v| v != 0)).into_any(),
                IntType::U8 => PyArray1::from_iter(py, s.map(|&v| v as u8)).into_any(),
                IntType::U16 => PyArray1::from_iter(py, s.map(|&v| v as u16)).into_any(),
                IntType::U32 => PyArray1::from_iter(py, s.map(|&v| v as u32)).into_any(),
                IntType::U64 => PyArray1::from_iter(py, s.map(|&v| v as u64)).into_any(),
                IntType::I8 => PyArray1::from_iter(py, s.map(|&v| v as i8)).into_any(),
                IntType::I16 => PyArray1::from_iter(py, s.map(|&v| v as i16)).into_any(),
                IntType::I32 => PyArray1::from_iter(py, s.map(|&v| v as i32)).into_any(),
                IntType::I64 => PyArray1::from_vec(py, sums).into_any(),
            }
        }
    }
}

/// The bins of a call, the tuple `(nbins, range, edges)`: `nbins` (with an optional range) or
/// `edges`.
#[derive(FromPyObject)]
pub struct BinsArg<'py>(Option<usize>, Option<RangeArg>, Option<Edges<'py>>);

/// The run's choices, the tuple `(out_of_range, backend, strategy)`.
#[derive(FromPyObject)]
pub struct RunArg(String, String, Option<String>);

/// `(counts, edges, edges_dtype)`: counts as uint64 (float64 sums with weights), edges as float64
/// (exact) and the dtype numpy gives them. `half` names the 16-bit float type whose bits `a`
/// holds (see [`Held::of_typed`]).
#[pyfunction]
#[pyo3(signature = (a, weights, bins, run, half=None))]
#[allow(clippy::type_complexity)]
pub fn histogram<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    weights: Option<&Bound<'py, PyAny>>,
    bins: BinsArg<'py>,
    run: RunArg,
    half: Option<&str>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<f64>>, &'static str)> {
    let BinsArg(nbins, range, edges) = bins;
    let RunArg(out_of_range, backend, strategy) = run;
    let held = Held::of_typed(a, "a", half)?;
    let held_weights = weights.map(HeldWeights::of).transpose()?;
    let samples = held.samples()?;
    let w = held_weights.as_ref().map(|w| w.weights()).transpose()?;
    // numpy's equal bins sum float weights in its blocks and the weights' type: so do these
    // (explicit edges: numpy's sorted cumulative sums, not repeated; integer weights are exact;
    // a forced strategy runs its own kernels).
    let sums = if edges.is_none() && strategy.is_none() {
        WeightSums::Numpy
    } else {
        WeightSums::Fast
    };
    let opts = options(
        spec(nbins, range, edges)?,
        &out_of_range,
        &backend,
        strategy.as_deref(),
    )?
    .sums(sums);
    let spec = opts.bins.clone();
    let (h, dtype) = py
        .detach(|| {
            let h = smemkit::histogram::histogram(samples, w, &opts)?;
            // The 16-bit types' edges take a type that can depend on the data (a one-value
            // bfloat16 range widens to float32): resolved again, a pass over the samples.
            let dtype = match (&spec, samples) {
                (
                    BinSpec::Uniform { .. }
                    | BinSpec::UniformInSampleType { .. }
                    | BinSpec::UniformInRangeType { .. }
                    | BinSpec::UniformIntRange { .. },
                    Samples::F16(_) | Samples::BF16(_),
                ) => edges_dtype(&Binning::resolve(&spec, samples)?),
                (
                    BinSpec::Uniform { .. }
                    | BinSpec::UniformInSampleType { .. }
                    | BinSpec::UniformInRangeType { .. }
                    | BinSpec::UniformIntRange { .. },
                    Samples::F32(_),
                ) => "float32",
                _ => "float64",
            };
            Ok::<_, smemkit::Error>((h, dtype))
        })
        .py_err()?;
    Ok((
        counts_array(py, h.counts),
        PyArray1::from_vec(py, h.edges),
        dtype,
    ))
}

/// The edges `histogram` would use, without counting (as float64, exact).
#[pyfunction]
#[pyo3(signature = (a, nbins, range))]
pub fn histogram_bin_edges<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    nbins: usize,
    range: Option<(f64, f64)>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    Ok(typed_bin_edges(
        py,
        a,
        nbins,
        range.map(|(lo, hi)| RangeArg::Floats(lo, hi)),
        None,
    )?
    .0)
}

/// The edges `histogram` would use, without counting, and numpy's dtype of them; `half` as for
/// [`histogram`].
#[pyfunction]
#[pyo3(signature = (a, nbins, range, half=None))]
pub fn typed_bin_edges<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    nbins: usize,
    range: Option<RangeArg>,
    half: Option<&str>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, &'static str)> {
    let held = Held::of_typed(a, "a", half)?;
    let samples = held.samples()?;
    let spec = uniform(nbins, range)?;
    let binning = py.detach(|| Binning::resolve(&spec, samples)).py_err()?;
    Ok((
        PyArray1::from_vec(py, binning.edges()),
        edges_dtype(&binning),
    ))
}

/// numpy's `nbins + 1` edges over the data's range for samples of `dtype` whose minimum and
/// maximum are `extremes` (`[]`: no samples), read on the device by the caller; with the dtype
/// numpy gives them (`float16` / `bfloat16` in their own arithmetic; `float32` for a one-value
/// bfloat16 range, `float64` ...). The values are exact in float64.
#[pyfunction]
#[pyo3(signature = (dtype, nbins, extremes))]
pub fn data_bin_edges<'py>(
    py: Python<'py>,
    dtype: &str,
    nbins: usize,
    extremes: Vec<f64>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, &'static str)> {
    let ty = dtype.parse::<smemkit::sample::SampleType>().py_err()?;
    let extremes = match extremes[..] {
        [] => None,
        [lo, hi] => Some((lo, hi)),
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "internal: the extremes are [] or [min, max]",
            ))
        }
    };
    let spec = BinSpec::Uniform { nbins, range: None };
    let binning =
        smemkit::internals::histogram::bins::extremes::resolve_from_extremes(&spec, ty, extremes)
            .py_err()?;
    Ok((
        PyArray1::from_vec(py, binning.edges()),
        edges_dtype(&binning),
    ))
}

/// numpy's number of equal bins for the estimator `rule` (`'auto'`, `'fd'`, ...) on `a`, over
/// `range` or the data's extremes.
#[pyfunction]
#[pyo3(signature = (a, rule, range, half=None))]
pub fn estimate_bins(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    rule: &str,
    range: Option<(f64, f64)>,
    half: Option<&str>,
) -> PyResult<usize> {
    let held = Held::of_typed(a, "a", half)?;
    let samples = held.samples()?;
    let rule = rule.parse::<smemkit::bins::BinRule>().py_err()?;
    py.detach(|| smemkit::bins::estimate_bin_count(samples, rule, range))
        .py_err()
}

/// Smallest and largest value of integer samples (`None` when empty); floats are a TypeError.
fn integer_extent(samples: Samples<'_>) -> PyResult<Option<(i128, i128)>> {
    fn extent<T: Copy + Into<i128>>(s: &[T]) -> Option<(i128, i128)> {
        s.iter().fold(None, |acc, &x| {
            let x: i128 = x.into();
            Some(match acc {
                None => (x, x),
                Some((lo, hi)) => (x.min(lo), x.max(hi)),
            })
        })
    }
    Ok(match samples {
        Samples::U8(s) => extent(s),
        Samples::U16(s) => extent(s),
        Samples::U32(s) => extent(s),
        Samples::U64(s) => extent(s),
        Samples::I8(s) => extent(s),
        Samples::I16(s) => extent(s),
        Samples::I32(s) => extent(s),
        Samples::I64(s) => extent(s),
        Samples::F32(_) | Samples::F64(_) | Samples::F16(_) | Samples::BF16(_) => {
            return Err(PyTypeError::new_err(format!(
                "Cannot cast array data from dtype('{}') to dtype('int64') according to the rule 'safe'",
                samples.sample_type().name()
            )))
        }
    })
}

/// numpy's bincount: counts as uint64 (float64 sums with weights), `max(x) + 1` long, at least
/// `minlength`. With `out_of_range` (smemkit's option), exactly `minlength` long instead, values
/// outside `[0, minlength)` handled by that policy (no pass to find the extent).
#[pyfunction]
#[pyo3(signature = (x, weights, minlength, backend, strategy, out_of_range=None))]
pub fn bincount<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    weights: Option<&Bound<'py, PyAny>>,
    minlength: usize,
    backend: &str,
    strategy: Option<&str>,
    out_of_range: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let held = Held::of(x, "x")?;
    let held_weights = weights.map(HeldWeights::of).transpose()?;
    let samples = held.samples()?;
    let w = held_weights.as_ref().map(|w| w.weights()).transpose()?;
    if let Some(w) = &w {
        if w.len() != samples.len() {
            return Err(PyValueError::new_err(
                "The weights and list don't have the same length.",
            ));
        }
    }
    if let Some(policy) = out_of_range {
        if samples.is_empty() {
            return Ok(match w {
                Some(_) => PyArray1::from_vec(py, vec![0f64; minlength]).into_any(),
                None => PyArray1::from_vec(py, vec![0u64; minlength]).into_any(),
            });
        }
        let opts = options(
            BinSpec::Integer { nbins: minlength },
            policy,
            backend,
            strategy,
        )?;
        let h = py
            .detach(|| smemkit::histogram::histogram(samples, w, &opts))
            .py_err()?;
        return Ok(counts_array(py, h.counts));
    }
    let extent = py.detach(|| integer_extent(samples))?;
    let nbins = match extent {
        Some((lo, _)) if lo < 0 => {
            return Err(PyValueError::new_err(
                "'list' argument must have no negative elements",
            ))
        }
        Some((_, hi)) => usize::try_from(hi + 1)
            .map_err(|_| {
                PyValueError::new_err(format!(
                    "bincount: the largest value {hi} needs more bins than this machine can address"
                ))
            })?
            .max(minlength),
        None => minlength,
    };
    if samples.is_empty() {
        return Ok(match w {
            Some(_) => PyArray1::from_vec(py, vec![0f64; nbins]).into_any(),
            None => PyArray1::from_vec(py, vec![0u64; nbins]).into_any(),
        });
    }
    let opts = options(BinSpec::Integer { nbins }, "ignore", backend, strategy)?;
    let h = py
        .detach(|| smemkit::histogram::histogram(samples, w, &opts))
        .py_err()?;
    Ok(counts_array(py, h.counts))
}
