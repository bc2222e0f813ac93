//! numpy's `density=True`: each bin's count divided by the bin's width and by the sum of all counts,
//! `n / db / n.sum()` in float64, with the widths taken as numpy takes them (`np.diff` of the
//! edges in the edges' own type: float32 for the uniform bins of float32 samples, exact for integer
//! edges) and the sum of float weights added pairwise (float32 weights summed in float32, as numpy
//! keeps float32 sums in float32). Empty bins of zero width give NaN, as in numpy.

use crate::histogram::bins::Binning;
use crate::histogram::result::Counts;

/// The widths numpy divides by (`np.diff(bin_edges)` as float64).
pub fn bin_widths(binning: &Binning) -> Vec<f64> {
    match binning {
        Binning::Integer { nbins } => vec![1.0; *nbins],
        Binning::UniformF32(u) => u.edges.windows(2).map(|w| (w[1] - w[0]) as f64).collect(),
        Binning::UniformF64(u) => u.edges.windows(2).map(|w| w[1] - w[0]).collect(),
        Binning::Edges(e) => e.windows(2).map(|w| w[1] - w[0]).collect(),
        Binning::IntEdges(e) => e.windows(2).map(|w| (w[1] - w[0]) as f64).collect(),
        // np.diff of half edges is computed in the half type.
        Binning::UniformHalf(u) => u
            .edges
            .windows(2)
            .map(|w| u.format.round(w[1] - w[0]) as f64)
            .collect(),
    }
}

/// numpy's density of `counts` over bins of `widths`; `f32_weights` when the weights were float32
/// (numpy's sums are then float32).
pub fn density(counts: &Counts, widths: &[f64], f32_weights: bool) -> Vec<f64> {
    match counts {
        Counts::Unweighted(c) => {
            let total: u64 = c.iter().sum();
            let total = total as f64;
            c.iter()
                .zip(widths)
                .map(|(&n, &w)| n as f64 / w / total)
                .collect()
        }
        Counts::Weighted(c) if f32_weights => {
            let c32: Vec<f32> = c.iter().map(|&x| x as f32).collect();
            let total = crate::histogram::bins::stats::pairwise_f32(&c32) as f64;
            c32.iter()
                .zip(widths)
                .map(|(&n, &w)| n as f64 / w / total)
                .collect()
        }
        Counts::Integer { sums, .. } => crate::histogram::int_sums::density(sums, widths),
        Counts::Weighted(c) => {
            let total = crate::histogram::bins::stats::pairwise_f64(c);
            c.iter().zip(widths).map(|(&n, &w)| n / w / total).collect()
        }
    }
}
