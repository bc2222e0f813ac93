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

/// The bins' direction, where numpy's search over them is defined: numpy searches in its sort
/// order (NaN after every number), so NaN bins must come after the numbers of increasing bins and
/// before those of decreasing ones. Elsewhere (`[0, nan]`, which numpy's rule calls decreasing,
/// or `[1, nan, 3]`) numpy's binary search runs over an unsorted array and its answer for a
/// sample depends on the samples searched before it: refused rather than answered otherwise.
fn direction(bins: &[f64]) -> Result<Direction> {
    let dir = ordered_direction(bins)?;
    let searchable = match dir {
        Direction::Increasing => {
            let first_nan = bins.iter().position(|b| b.is_nan()).unwrap_or(bins.len());
            bins[first_nan..].iter().all(|b| b.is_nan())
        }
        Direction::Decreasing => match bins.iter().rposition(|b| b.is_nan()) {
            Some(last_nan) => bins[..=last_nan].iter().all(|b| b.is_nan()),
            None => true,
        },
    };
    if searchable {
        return Ok(dir);
    }
    let (order, place) = match dir {
        Direction::Increasing => ("increasing", "after every number"),
        Direction::Decreasing => ("decreasing", "before every number"),
    };
    Err(Error::InvalidArgument(format!(
        "NaN bins where numpy's search is not defined: numpy takes these bins as {order}, so \
         their NaN must come {place} (numpy's answers for them depend on the order of the \
         samples)"
    )))
}

/// The direction of `bins` as numpy's `_monotonicity` finds it: repeated leading values
/// skipped, then the first change decides, every later pair checked with plain comparisons (so NaN,
/// which compares false, passes: numpy takes `[1, 3, nan]` as increasing and `[nan, 3, 1]` or
/// all-NaN bins as decreasing, and orders NaN after every number when it searches).
fn ordered_direction<B: PartialOrd>(bins: &[B]) -> Result<Direction> {
    let Some(first) = bins.first() else {
        return Ok(Direction::Increasing);
    };
    let Some(change) = bins[1..].iter().position(|b| b != first).map(|i| i + 1) else {
        // One value, or all equal: numpy calls these increasing.
        return Ok(Direction::Increasing);
    };
    let rest = &bins[change - 1..];
    if bins[change - 1] < bins[change] {
        // `w[0] > w[1]` is false for NaN: numpy's plain comparison lets the pair pass.
        let descends = |w: &[B]| w[0].partial_cmp(&w[1]) == Some(std::cmp::Ordering::Greater);
        if !rest.windows(2).skip(1).any(descends) {
            return Ok(Direction::Increasing);
        }
    } else if !rest
        .windows(2)
        .skip(1)
        .any(|w| w[0].partial_cmp(&w[1]) == Some(std::cmp::Ordering::Less))
    {
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
    let keyed: Vec<NanLast> = bins.iter().map(|&b| NanLast(b)).collect();
    let mut out = vec![0i64; x.len()];
    out.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .for_each(|(o, xs)| {
            for (o, &v) in o.iter_mut().zip(xs) {
                *o = search(&keyed, NanLast(v.to_f64()), right, dir) as i64;
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

/// A float64 ordered as numpy's `searchsorted` orders it: NaN after every number.
#[derive(Debug, Clone, Copy)]
struct NanLast(f64);

impl PartialEq for NanLast {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(std::cmp::Ordering::Equal)
    }
}

impl PartialOrd for NanLast {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering::*;
        Some(match (self.0.is_nan(), other.0.is_nan()) {
            (true, true) => Equal,
            (true, false) => Greater,
            (false, true) => Less,
            _ => self.0.partial_cmp(&other.0).expect("numbers"),
        })
    }
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
        // NaN compares false: numpy's rule takes these as they come.
        let nan = f64::NAN;
        assert_eq!(direction(&[1.0, 3.0, nan]).unwrap(), Direction::Increasing);
        assert_eq!(direction(&[nan, 3.0, 1.0]).unwrap(), Direction::Decreasing);
        assert_eq!(direction(&[nan, nan]).unwrap(), Direction::Decreasing);
    }

    #[test]
    fn nan_bins_out_of_numpys_search_order_are_refused() {
        let nan = f64::NAN;
        // [0, nan] and [1, 1, nan] are decreasing by numpy's rule, [1, 2, nan, 0] increasing.
        for bins in [
            &[0.0, nan][..],
            &[1.0, 1.0, nan],
            &[1.0, nan, 3.0],
            &[1.0, nan, 0.0],
            &[1.0, 2.0, nan, 0.0],
            &[nan, 3.0, nan, 1.0],
        ] {
            let err = digitize(Samples::F64(&[0.5]), bins, false).unwrap_err();
            assert!(err.to_string().contains("NaN bins"), "{bins:?}: {err}");
        }
    }

    /// numpy's answers (numpy 2.4) with NaN bins, which it orders after every number.
    #[test]
    fn nan_bins_as_numpy() {
        let nan = f64::NAN;
        let x = [0.0, 2.0, 4.0, nan];
        let cases: [(&[f64], [i64; 4], [i64; 4]); 4] = [
            (&[1.0, 3.0, nan], [0, 1, 2, 3], [0, 1, 2, 2]),
            (&[nan, 3.0, 1.0], [3, 2, 1, 0], [3, 2, 1, 1]),
            (&[nan, nan], [2, 2, 2, 0], [2, 2, 2, 2]),
            (&[1.0, 3.0, nan, nan], [0, 1, 2, 4], [0, 1, 2, 2]),
        ];
        for (bins, left, right) in cases {
            assert_eq!(
                digitize(Samples::F64(&x), bins, false).unwrap(),
                left,
                "{bins:?}"
            );
            assert_eq!(
                digitize(Samples::F64(&x), bins, true).unwrap(),
                right,
                "{bins:?}"
            );
        }
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
