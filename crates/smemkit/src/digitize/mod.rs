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

#[inline(always)]
fn index(bins: &[f64], n: usize, x: f64, right: bool, dir: Direction) -> usize {
    if x.is_nan() {
        // numpy orders NaN after every number.
        return match dir {
            Direction::Increasing => n,
            Direction::Decreasing => 0,
        };
    }
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
}
