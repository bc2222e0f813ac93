//! The CPU engine of joint histograms. Each sample's joint bin is found axis by axis
//! ([`Axis::locate`]) and flattened in C order, as `numpy.ravel_multi_index` does. Counts go into
//! per-thread private counters while the joint bin count is small, into shared atomics beyond.
//! Weighted sums must equal numpy's `bincount`, which adds each bin's weights in sample order: the
//! joint bins are computed in parallel, then each thread owns a range of bins and adds its weights in
//! sample order, so every sum is bit-identical to numpy's whatever the thread count.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::histogram::bins::Slot;
use crate::histogram::Counts;
use crate::sample::{Sample, Weights};

use super::axis::Axis;
use super::layout::AxisView;
use super::tallies::JointTallies;

/// Up to this many joint bins each thread counts into its own copy (8 MiB of u64 each).
pub(crate) const PRIVATE_COUNTERS_MAX_BINS: usize = 1 << 20;

/// Where one sample lands in the joint histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joint {
    Bin(usize),
    Outside,
    Nan,
}

/// The joint bin of sample `i`: NaN on any axis makes it NaN, else outside any axis makes it outside.
#[inline(always)]
fn joint_bin<T: Sample>(views: &[AxisView<'_, T>], axes: &[Axis], i: usize) -> Joint {
    let mut index = 0usize;
    let mut outside = false;
    for (view, axis) in views.iter().zip(axes) {
        match axis.locate_sample(view.get(i)) {
            Slot::Bin(b) => index = index * axis.nbins() + b,
            Slot::Nan => return Joint::Nan,
            Slot::Below | Slot::Above => outside = true,
        }
    }
    if outside {
        Joint::Outside
    } else {
        Joint::Bin(index)
    }
}

/// A zeroed vector, or an error naming the size when the memory cannot be had.
pub(crate) fn try_zeroed<T: Clone + Default>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::InvalidArgument(format!(
            "cannot allocate {what}: {len} elements of {} bytes",
            std::mem::size_of::<T>()
        ))
    })?;
    v.resize(len, T::default());
    Ok(v)
}

/// Sample ranges, one per worker.
fn ranges(n: usize) -> Vec<std::ops::Range<usize>> {
    let parts = rayon::current_num_threads().max(1).min(n.max(1));
    let per = n.div_ceil(parts);
    (0..parts)
        .map(|p| (p * per).min(n)..((p + 1) * per).min(n))
        .collect()
}

/// Counts (or sums the weights of) the samples seen through `views` into `nbins` joint bins.
pub(crate) fn run<T: Sample>(
    views: &[AxisView<'_, T>],
    axes: &[Axis],
    nbins: usize,
    n: usize,
    weights: Option<Weights<'_>>,
) -> Result<(Counts, JointTallies)> {
    match weights {
        None if nbins <= PRIVATE_COUNTERS_MAX_BINS => count_private(views, axes, nbins, n),
        None => count_atomic(views, axes, nbins, n),
        Some(w) => sum_weights(views, axes, nbins, n, w),
    }
}

fn tally(t: &mut JointTallies, j: Joint) {
    match j {
        Joint::Outside => t.outside += 1,
        Joint::Nan => t.nan += 1,
        Joint::Bin(_) => {}
    }
}

fn count_private<T: Sample>(
    views: &[AxisView<'_, T>],
    axes: &[Axis],
    nbins: usize,
    n: usize,
) -> Result<(Counts, JointTallies)> {
    let parts: Vec<Result<(Vec<u64>, JointTallies)>> = ranges(n)
        .into_par_iter()
        .map(|r| {
            let mut c = try_zeroed::<u64>(nbins, "per-thread joint counters")?;
            let mut t = JointTallies::default();
            for i in r {
                match joint_bin(views, axes, i) {
                    Joint::Bin(b) => c[b] += 1,
                    other => tally(&mut t, other),
                }
            }
            Ok((c, t))
        })
        .collect();
    let mut counts = try_zeroed::<u64>(nbins, "joint counts")?;
    let mut tallies = JointTallies::default();
    for part in parts {
        let (c, t) = part?;
        counts
            .par_iter_mut()
            .zip(c.par_iter())
            .for_each(|(a, b)| *a += b);
        tallies.outside += t.outside;
        tallies.nan += t.nan;
    }
    Ok((Counts::Unweighted(counts), tallies))
}

fn count_atomic<T: Sample>(
    views: &[AxisView<'_, T>],
    axes: &[Axis],
    nbins: usize,
    n: usize,
) -> Result<(Counts, JointTallies)> {
    let mut shared: Vec<AtomicU64> = Vec::new();
    shared.try_reserve_exact(nbins).map_err(|_| {
        Error::InvalidArgument(format!(
            "cannot allocate joint counts: {nbins} elements of 8 bytes"
        ))
    })?;
    shared.extend((0..nbins).map(|_| AtomicU64::new(0)));
    let tallies = ranges(n)
        .into_par_iter()
        .map(|r| {
            let mut t = JointTallies::default();
            for i in r {
                match joint_bin(views, axes, i) {
                    Joint::Bin(b) => {
                        shared[b].fetch_add(1, Ordering::Relaxed);
                    }
                    other => tally(&mut t, other),
                }
            }
            t
        })
        .reduce(JointTallies::default, |a, b| JointTallies {
            outside: a.outside + b.outside,
            nan: a.nan + b.nan,
        });
    let counts = shared.into_iter().map(AtomicU64::into_inner).collect();
    Ok((Counts::Unweighted(counts), tallies))
}

fn sum_weights<T: Sample>(
    views: &[AxisView<'_, T>],
    axes: &[Axis],
    nbins: usize,
    n: usize,
    w: Weights<'_>,
) -> Result<(Counts, JointTallies)> {
    const NONE: usize = usize::MAX;
    let mut index = try_zeroed::<usize>(n, "joint bin indices")?;
    let tallies = index
        .par_chunks_mut(1 << 16)
        .enumerate()
        .map(|(c, chunk)| {
            let mut t = JointTallies::default();
            for (k, slot) in chunk.iter_mut().enumerate() {
                *slot = match joint_bin(views, axes, (c << 16) + k) {
                    Joint::Bin(b) => b,
                    other => {
                        tally(&mut t, other);
                        NONE
                    }
                };
            }
            t
        })
        .reduce(JointTallies::default, |a, b| JointTallies {
            outside: a.outside + b.outside,
            nan: a.nan + b.nan,
        });
    let mut sums = try_zeroed::<f64>(nbins, "joint weight sums")?;
    let owners = rayon::current_num_threads().max(1).min(nbins);
    let per = nbins.div_ceil(owners);
    sums.par_chunks_mut(per).enumerate().for_each(|(o, mine)| {
        let lo = o * per;
        let hi = lo + mine.len();
        for (i, &b) in index.iter().enumerate() {
            if b >= lo && b < hi {
                mine[b - lo] += w.get(i);
            }
        }
    });
    Ok((Counts::Weighted(sums), tallies))
}
