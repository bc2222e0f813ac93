//! One axis of a joint histogram: numpy.histogramdd's edges for it and where a coordinate lands.
//!
//! numpy.histogramdd does not use numpy.histogram's estimate-and-correct rule: it builds each axis's
//! edges with `linspace` (in float32 only for float32 samples with no range, in float64 otherwise,
//! since a caller's range is Python floats) and bins with `searchsorted(edges, x, side='right')`,
//! comparing in the common type of samples and edges. Every such comparison is exact on `x` and the
//! edges widened to f64, so an axis keeps its edges as f64 and compares there. The arithmetic
//! estimate below is only a starting point: the search is finished against the edges, so the result
//! is always the bin the edges define, as numpy's.

use crate::error::{Error, Result};
use crate::histogram::bins::int_edges::{locate_in_int_edges, IntEdges};
use crate::histogram::bins::{linspace_f32, linspace_f64, locate_in_edges, BinSpec, Slot};
use crate::sample::{Sample, SampleType};

use super::layout::AxisView;

/// A resolved axis: numpy's edges (widened to f64 without rounding) and each bin's width as numpy's
/// `np.diff(edges)` computes it, in the edges' own precision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub edges: Vec<f64>,
    pub widths: Vec<f64>,
    /// `(first edge, bins per unit)` for an index estimate on finite, linearly spaced edges.
    estimate: Option<(f64, f64)>,
    /// Integer edges numpy compares integer samples with in integers, where float64 would merge
    /// neighbours (beyond 2^53: see [`IntEdges`]); `edges` then holds them rounded, for the
    /// report only. CPU engine.
    int_edges: Option<Vec<i128>>,
}

impl Axis {
    pub fn nbins(&self) -> usize {
        self.edges.len() - 1
    }

    /// `(first edge, bins per unit)` when the edges are finite and spread: the engines' first guess
    /// of a bin, always checked against the edges.
    pub fn estimate(&self) -> Option<(f64, f64)> {
        self.estimate
    }

    /// Resolves `spec` for the coordinates of this axis, as numpy.histogramdd does.
    pub fn resolve<T: Sample>(spec: &BinSpec, view: &AxisView<'_, T>, axis: usize) -> Result<Axis> {
        match spec {
            BinSpec::Uniform { nbins, range: None } if *nbins > 0 => Axis::from_data(*nbins, view),
            BinSpec::IntEdges(edges) => Axis::from_int_edges(edges, T::TYPE, axis),
            other => Axis::resolve_without_data(other, axis),
        }
    }

    /// Integer edges for samples of type `ty`: exact where numpy compares in integers and
    /// float64 would not, else as float64 edges (numpy's comparison in float64).
    fn from_int_edges(edges: &IntEdges, ty: SampleType, axis: usize) -> Result<Axis> {
        let Some(exact) = edges.resolve(ty)? else {
            let beyond = edges.to_i128().iter().any(|e| e.abs() >= 1 << 53);
            if !ty.is_float() && beyond {
                // numpy.histogramdd searches such edges in float64 but tests the last edge
                // exactly (NumPy 2 compares int64 with uint64 exactly): no rule to follow.
                return Err(Error::NotImplemented(format!(
                    "axis {axis}: {ty} samples with integer edges of the other signedness beyond 2^53 (numpy.histogramdd compares them in float64 but its last edge exactly); give the edges in the samples' signedness"
                )));
            }
            return Axis::from_edges(&edges.to_f64(), axis);
        };
        // numpy's np.diff of integer edges, exact, then float64 in the density's division.
        let widths = exact.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let rounded = exact.iter().map(|&e| e as f64).collect();
        Ok(Axis {
            edges: rounded,
            widths,
            estimate: None,
            int_edges: Some(exact),
        })
    }

    /// Whether the axis compares integer samples with exact integer edges (the CPU engine only).
    pub fn has_int_edges(&self) -> bool {
        self.int_edges.is_some()
    }

    /// Resolves `spec` without the data (the device engine's samples stay on the device): a bin
    /// count needs a range, edges are taken as they are.
    pub fn resolve_without_data(spec: &BinSpec, axis: usize) -> Result<Axis> {
        match spec {
            BinSpec::Integer { .. } => Err(Error::InvalidArgument(format!(
                "axis {axis}: a joint histogram has no integer bins (numpy.histogramdd takes a bin count or edges per axis); give a bin count with a range, or edges"
            ))),
            BinSpec::Edges(edges) => Axis::from_edges(edges, axis),
            BinSpec::UniformInSampleType { .. }
            | BinSpec::UniformInRangeType { .. }
            | BinSpec::UniformIntRange { .. } => Err(Error::NotImplemented(format!(
                "axis {axis}: a range typed beside the samples (numpy scalars of their type, integers for bfloat16) is taken by 1-D histograms only; give it as floats"
            ))),
            BinSpec::IntEdges(_) => Err(Error::NotImplemented(format!(
                "axis {axis}: integer edges held exactly (beyond 2^53) on the GPU engine; give the edges as floats or use the CPU engine"
            ))),
            BinSpec::Estimated { .. } => Err(Error::InvalidArgument(format!(
                "axis {axis}: bin estimators ('auto', 'fd', ...) apply to 1-D histograms (numpy.histogramdd takes a bin count or edges per axis)"
            ))),
            BinSpec::Uniform { nbins: 0, .. } => Err(Error::ZeroBins),
            BinSpec::Uniform {
                nbins,
                range: Some((lo, hi)),
            } => Axis::with_range(*nbins, *lo, *hi),
            BinSpec::Uniform { range: None, .. } => Err(Error::InvalidArgument(format!(
                "axis {axis}: give a range or edges: the device engine does not read the data's minimum and maximum"
            ))),
        }
    }

    /// numpy's float64 edges of `nbins` bins over a caller's range (a range of one value widened
    /// by half on each side).
    fn with_range(nbins: usize, lo: f64, hi: f64) -> Result<Axis> {
        if lo > hi {
            return Err(Error::InvertedRange { lo, hi });
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::NonFiniteRange { lo, hi });
        }
        let (lo, hi) = if lo == hi {
            (lo - 0.5, hi + 0.5)
        } else {
            (lo, hi)
        };
        Ok(Axis::linspace64(lo, hi, nbins))
    }

    fn from_edges(edges: &[f64], axis: usize) -> Result<Axis> {
        if edges.len() < 2 {
            return Err(Error::TooFewEdges(edges.len()));
        }
        for (index, &value) in edges.iter().enumerate() {
            if value.is_nan() {
                return Err(Error::NonFiniteEdge { index, value });
            }
            // numpy asks only for monotonically increasing edges: equal neighbours (a bin of zero
            // width) and infinite ends are accepted.
            if index > 0 && value < edges[index - 1] {
                return Err(Error::InvalidArgument(format!(
                    "axis {axis}: bin edges must be monotonically increasing: edge {index} ({value}) is below the one before it ({})",
                    edges[index - 1]
                )));
            }
        }
        let widths = edges.windows(2).map(|w| w[1] - w[0]).collect();
        Ok(Axis::with_estimate(edges.to_vec(), widths))
    }

    /// numpy's edges of `nbins` bins over the data's own range.
    fn from_data<T: Sample>(nbins: usize, view: &AxisView<'_, T>) -> Result<Axis> {
        let extremes = view.min_max().map(|(min, max)| {
            // Integers and float64: numpy compares the extremes in their own type.
            let equal = min.partial_cmp(&max) == Some(std::cmp::Ordering::Equal);
            (min.to_f64(), max.to_f64(), equal)
        });
        Axis::from_extremes(nbins, T::TYPE, extremes)
    }

    /// numpy's edges of `nbins` bins over data of `sample_type` whose extremes are `(min, max,
    /// min == max in the data's own type)` (`None`: no data).
    pub fn from_extremes(
        nbins: usize,
        sample_type: SampleType,
        extremes: Option<(f64, f64, bool)>,
    ) -> Result<Axis> {
        let Some((lo, hi, equal)) = extremes else {
            // numpy takes the range (0, 1), Python integers, so float64 edges for every type.
            return Ok(Axis::linspace64(0.0, 1.0, nbins));
        };
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::NonFiniteData { lo, hi });
        }
        if sample_type == SampleType::F32 {
            // numpy 2 keeps float32 scalars in float32: widening, linspace and np.diff. The
            // extremes are float32 values, exact in f64.
            let (mut lo, mut hi) = (lo as f32, hi as f32);
            if lo == hi {
                lo -= 0.5;
                hi += 0.5;
            }
            let e = linspace_f32(lo, hi, nbins + 1);
            let widths = e.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            return Ok(Axis::with_estimate(
                e.into_iter().map(f64::from).collect(),
                widths,
            ));
        }
        // Integers and float64: an empty range widens, then the edges are built in float64.
        if equal {
            return Ok(Axis::linspace64(lo - 0.5, hi + 0.5, nbins));
        }
        Ok(Axis::linspace64(lo, hi, nbins))
    }

    fn linspace64(lo: f64, hi: f64, nbins: usize) -> Axis {
        let e = linspace_f64(lo, hi, nbins + 1);
        let widths = e.windows(2).map(|w| w[1] - w[0]).collect();
        Axis::with_estimate(e, widths)
    }

    fn with_estimate(edges: Vec<f64>, widths: Vec<f64>) -> Axis {
        let n = edges.len() - 1;
        let (first, last) = (edges[0], edges[n]);
        let scale = n as f64 / (last - first);
        let estimate = (first.is_finite() && last.is_finite() && scale.is_finite() && scale > 0.0)
            .then_some((first, scale));
        Axis {
            edges,
            widths,
            estimate,
            int_edges: None,
        }
    }

    /// Where sample coordinate `x` lands: [`Axis::locate`], or among the exact integer edges.
    #[inline(always)]
    pub fn locate_sample<T: Sample>(&self, x: T) -> Slot {
        match &self.int_edges {
            Some(edges) => locate_in_int_edges(edges, x.to_i128()),
            None => self.locate(x.to_f64()),
        }
    }

    /// Where coordinate `x` lands: the `i` with `edges[i] <= x < edges[i + 1]`, the last bin also
    /// taking `x == edges[n]` (numpy's `searchsorted(..., 'right') - 1` and its right-edge shift).
    #[inline(always)]
    pub fn locate(&self, x: f64) -> Slot {
        let e = &self.edges;
        let n = e.len() - 1;
        if x.is_nan() {
            return Slot::Nan;
        }
        if x < e[0] {
            return Slot::Below;
        }
        if x > e[n] {
            return Slot::Above;
        }
        if x == e[n] {
            return Slot::Bin(n - 1);
        }
        // Here e[0] <= x < e[n]: the bin is the one `i` with e[i] <= x < e[i + 1]. The estimate
        // is right or one off on linearly spaced edges; anything else is searched.
        if let Some((first, scale)) = self.estimate {
            let i = (((x - first) * scale) as usize).min(n - 1);
            if e[i] <= x {
                if x < e[i + 1] {
                    return Slot::Bin(i);
                }
                if i + 2 <= n && x < e[i + 2] {
                    return Slot::Bin(i + 1);
                }
            } else if i > 0 && e[i - 1] <= x {
                return Slot::Bin(i - 1);
            }
        }
        locate_in_edges(e, x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(edges: &[f64]) -> Axis {
        Axis::from_edges(edges, 0).unwrap()
    }

    #[test]
    fn edges_rule_matches_searchsorted() {
        let a = axis(&[0.0, 1.0, 1.0, 2.0, 4.0]);
        assert_eq!(a.locate(-0.1), Slot::Below);
        assert_eq!(a.locate(0.0), Slot::Bin(0));
        // equal edges: the zero-width bin 1 gets nothing, 1.0 goes to bin 2
        assert_eq!(a.locate(1.0), Slot::Bin(2));
        assert_eq!(a.locate(3.9), Slot::Bin(3));
        assert_eq!(a.locate(4.0), Slot::Bin(3));
        assert_eq!(a.locate(4.1), Slot::Above);
        assert_eq!(a.locate(f64::NAN), Slot::Nan);
    }

    #[test]
    fn infinite_edges_are_searched() {
        let a = axis(&[f64::NEG_INFINITY, 0.0, f64::INFINITY]);
        assert_eq!(a.locate(-1e300), Slot::Bin(0));
        assert_eq!(a.locate(0.0), Slot::Bin(1));
        assert_eq!(a.locate(f64::INFINITY), Slot::Bin(1));
    }

    #[test]
    fn decreasing_edges_are_refused() {
        assert!(Axis::from_edges(&[0.0, 2.0, 1.0], 1).is_err());
        assert!(Axis::from_edges(&[0.0], 1).is_err());
        assert!(Axis::from_edges(&[0.0, f64::NAN], 1).is_err());
    }
}
