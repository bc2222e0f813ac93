//! `numpy.digitize`: the index of the bin each sample falls in, for monotonic bins (increasing or
//! decreasing, equal neighbours allowed). numpy answers with `searchsorted` (`side='right'`, or
//! `'left'` with `right=True`; decreasing bins through the reversed array), comparing in float64
//! for float64 bins, and places NaN after every bin (`len(bins)` for increasing bins, 0 for
//! decreasing ones). The CPU engine runs it with rayon ([`digitize`]); the GPU with a kernel of
//! the same rule ([`cuda`], [`digitize_on`] to choose).

#[doc(hidden)]
pub mod cuda;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::histogram::bins::int_edges::IntEdges;
use crate::sample::{Sample, Samples};

/// Direction of the bins, found as numpy's `_monotonicity` finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Increasing,
    Decreasing,
}

fn direction(bins: &[f64]) -> Result<Direction> {
    if let Some(index) = bins.iter().position(|b| b.is_nan()) {
        return Err(Error::NonFiniteEdge {
            index,
            value: f64::NAN,
        });
    }
    ordered_direction(bins)
}

/// The direction of bins with no NaN (numbers that all compare).
fn ordered_direction<B: PartialOrd>(bins: &[B]) -> Result<Direction> {
    let Some(first_change) = bins.windows(2).position(|w| w[0] != w[1]) else {
        // Empty, one value, or all equal: numpy calls these increasing.
        return Ok(Direction::Increasing);
    };
    let rest = &bins[first_change..];
    if bins[first_change] < bins[first_change + 1] {
        if rest.windows(2).all(|w| w[0] <= w[1]) {
            return Ok(Direction::Increasing);
        }
    } else if rest.windows(2).all(|w| w[0] >= w[1]) {
        return Ok(Direction::Decreasing);
    }
    Err(Error::InvalidArgument(
        "bins must be monotonically increasing or decreasing".into(),
    ))
}

/// numpy's `digitize(x, bins, right)`: for increasing bins, `i` such that
/// `bins[i-1] <= x < bins[i]` (`bins[i-1] < x <= bins[i]` with `right`), 0 below and `len(bins)`
/// above; for decreasing bins the mirror image.
pub fn digitize(x: Samples<'_>, bins: &[f64], right: bool) -> Result<Vec<i64>> {
    let dir = direction(bins)?;
    Ok(crate::sample::with_samples!(x, s => run(s, bins, right, dir)))
}

/// [`digitize`] for integer `bins` kept exact: where numpy compares the samples with them in an
/// integer type (integer samples the edges' type holds: see [`IntEdges`]), the comparison and the
/// bins' direction are exact in integers, even beyond 2^53 where float64 merges neighbours
/// (numpy itself finds the direction in float64 there, a known bug of its own); every other
/// pairing compares in float64, as numpy does.
pub fn digitize_int_edges(x: Samples<'_>, bins: &IntEdges, right: bool) -> Result<Vec<i64>> {
    if !bins.compares_exactly_with(x.sample_type()) {
        return digitize(x, &bins.to_f64(), right);
    }
    let bins = bins.to_i128();
    let dir = ordered_direction(&bins)?;
    Ok(crate::sample::with_samples!(x, s => run_exact(s, &bins, right, dir)))
}

/// [`digitize`] on the engine `backend` names: the CPU under [`Backend::Auto`](crate::Backend::Auto) (the GPU's host
/// entry copies every sample in and an int64 per sample back, which the CPU's rayon loop has not
/// been measured against yet), the GPU's kernel ([`cuda::digitize`]) under [`Backend::Cuda`](crate::Backend::Cuda).
pub fn digitize_on(
    x: Samples<'_>,
    bins: &[f64],
    right: bool,
    backend: crate::backend::Backend,
) -> Result<Vec<i64>> {
    match backend {
        crate::backend::Backend::Cuda => cuda::digitize(x, bins, right),
        _ => digitize(x, bins, right),
    }
}

fn run<T: Sample>(x: &[T], bins: &[f64], right: bool, dir: Direction) -> Vec<i64> {
    let n = bins.len();
    let mut out = vec![0i64; x.len()];
    out.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .for_each(|(o, xs)| {
            for (o, &v) in o.iter_mut().zip(xs) {
                *o = index(bins, n, v.to_f64(), right, dir) as i64;
            }
        });
    out
}

fn run_exact<T: Sample>(x: &[T], bins: &[i128], right: bool, dir: Direction) -> Vec<i64> {
    let mut out = vec![0i64; x.len()];
    out.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .for_each(|(o, xs)| {
            for (o, &v) in o.iter_mut().zip(xs) {
                *o = search(bins, v.to_i128(), right, dir) as i64;
            }
        });
    out
}

#[inline(always)]
fn index(bins: &[f64], n: usize, x: f64, right: bool, dir: Direction) -> usize {
    if x.is_nan() {
        // numpy orders NaN after every number.
        return match dir {
            Direction::Increasing => n,
            Direction::Decreasing => 0,
        };
    }
    search(bins, x, right, dir)
}

/// numpy's `searchsorted` rule for a number that compares with every bin.
#[inline(always)]
fn search<B: PartialOrd + Copy>(bins: &[B], x: B, right: bool, dir: Direction) -> usize {
    match (dir, right) {
        // searchsorted(bins, x, 'right') / 'left'
        (Direction::Increasing, false) => bins.partition_point(|&b| b <= x),
        (Direction::Increasing, true) => bins.partition_point(|&b| b < x),
        // len - searchsorted(bins[::-1], x, 'right') / 'left'
        (Direction::Decreasing, false) => bins.partition_point(|&b| b > x),
        (Direction::Decreasing, true) => bins.partition_point(|&b| b >= x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_as_numpy_finds_it() {
        assert_eq!(direction(&[]).unwrap(), Direction::Increasing);
        assert_eq!(direction(&[2.0, 2.0]).unwrap(), Direction::Increasing);
        assert_eq!(direction(&[2.0, 2.0, 1.0]).unwrap(), Direction::Decreasing);
        assert!(direction(&[0.0, 2.0, 1.0]).is_err());
        assert!(direction(&[0.0, f64::NAN]).is_err());
    }

    #[test]
    fn integer_bins_beyond_2_53_compare_exactly() {
        let big = 1i64 << 54;
        let x = [big - 1, big, big + 1, big + 2];
        let up = IntEdges::I64(vec![big - 1, big + 1]);
        let down = IntEdges::I64(vec![big + 1, big - 1]);
        let got =
            |bins: &IntEdges, right| digitize_int_edges(Samples::I64(&x), bins, right).unwrap();
        assert_eq!(got(&up, false), [1, 1, 2, 2]);
        assert_eq!(got(&up, true), [0, 1, 1, 2]);
        assert_eq!(got(&down, false), [1, 1, 0, 0]);
        assert_eq!(got(&down, true), [2, 1, 1, 0]);
        // int64 samples with uint64 bins: numpy compares in float64, where 2^54 - 1 is 2^54.
        let unsigned = IntEdges::U64(vec![(big + 1) as u64, (big + 4) as u64]);
        assert_eq!(got(&unsigned, false), [1, 1, 1, 1]);
        assert!(
            digitize_int_edges(Samples::I64(&x), &IntEdges::I64(vec![0, 2, 1]), false).is_err()
        );
    }
}
