//! Weighted histograms: per-block sums of weights in float64 (integer weights: in int64, modulo
//! 2^64), added in a fixed order; in numpy's order, the blocks are numpy's 65536 samples and
//! float32 weights' block sums are cast to float32 and added in float32, as numpy.histogram's
//! `n += np.bincount(...).astype(ntype)` does.

use super::*;
use crate::histogram::sums::NUMPY_BLOCK;

/// Weighted sums, deterministic: fixed blocks summed in sample order, added in block order
/// (`numpy`: numpy's blocks, and float32 weights' sums kept in float32 between blocks).
/// Integer weights sum as exact 64-bit integers modulo 2^64 (uint64 as its bits), returned as
/// int64 [`Counts::Integer`] for the caller to wrap into their type ([`crate::histogram::int_sums`]).
pub(super) fn run_weighted<T: Sample, C: Codes<T>>(
    samples: &[T],
    weights: Weights<'_>,
    nbins: usize,
    clamp: bool,
    codes: &C,
    numpy: bool,
) -> EngineOutput {
    // Blocks are never shorter than the bins they fill (keeps the merge cost below the count
    // cost), except in numpy's order, whose blocks are numpy's.
    let block = if numpy {
        NUMPY_BLOCK
    } else {
        WEIGHTED_BLOCK * nbins.div_ceil(WEIGHTED_BLOCK).max(1)
    };
    let (counts, tallies) = match weights {
        Weights::F32(w) if numpy => {
            let (sums, tallies) = block_sums(samples, nbins, block, clamp, codes, |i| {
                F32Total(f64::from(w[i]))
            });
            (
                Counts::Weighted(sums.iter().map(|s| s.0).collect()),
                tallies,
            )
        }
        Weights::Int(w) => {
            let (sums, tallies) = block_sums(samples, nbins, block, clamp, codes, |i| w.get_i64(i));
            let counts = Counts::Integer {
                sums,
                dtype: crate::int_weights::IntType::I64,
            };
            (counts, tallies)
        }
        w => {
            let (sums, tallies) = block_sums(samples, nbins, block, clamp, codes, |i| w.get(i));
            (Counts::Weighted(sums), tallies)
        }
    };
    EngineOutput {
        counts,
        tallies,
        detail: detail(),
    }
}

/// What the sums are kept in: f64, i64 that wraps modulo 2^64, or numpy's float32 total.
trait Sum: Copy + Default + Send + Sync {
    /// One weight into a block's sum.
    fn add(&mut self, v: Self);
    /// A block's sum into the total.
    #[inline(always)]
    fn merge(&mut self, block: Self) {
        self.add(block)
    }
}
/// A float32 weight's sum: float64 within a block (np.bincount), float32 between blocks (numpy
/// casts each block's sums to float32 and adds them in float32). The total holds a float32 value.
#[derive(Clone, Copy, Default)]
struct F32Total(f64);
impl Sum for F32Total {
    #[inline(always)]
    fn add(&mut self, v: F32Total) {
        self.0 += v.0;
    }
    #[inline(always)]
    fn merge(&mut self, block: F32Total) {
        // `as f32` rounds to nearest, ties to even, as numpy's astype does.
        self.0 = f64::from(self.0 as f32 + block.0 as f32);
    }
}
impl Sum for f64 {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        *self += v;
    }
}
impl Sum for i64 {
    #[inline(always)]
    fn add(&mut self, v: i64) {
        *self = self.wrapping_add(v);
    }
}

/// The bins' sums of `weight(i)` and the tallies, in blocks of `block` samples in a fixed order.
fn block_sums<T: Sample, C: Codes<T>, A: Sum>(
    samples: &[T],
    nbins: usize,
    block: usize,
    clamp: bool,
    codes: &C,
    weight: impl Fn(usize) -> A + Sync,
) -> (Vec<A>, Tallies) {
    let workers = rayon::current_num_threads().max(1);
    // How many blocks are summed at once; it changes the memory used, never the result.
    let group = 2 * workers;
    let mut sums = vec![A::default(); nbins];
    let mut tallies = Tallies::default();
    for (g, group_samples) in samples.chunks(block * group).enumerate() {
        let base = g * block * group;
        let parts: Vec<(Vec<A>, Tallies)> = group_samples
            .par_chunks(block)
            .enumerate()
            .map(|(k, chunk)| {
                let start = base + k * block;
                let mut s = vec![A::default(); nbins];
                let mut t = Tallies::default();
                for (j, &x) in chunk.iter().enumerate() {
                    let c = codes.code(x) as usize;
                    let bin = if c < nbins {
                        c
                    } else if c == nbins {
                        t.below += 1;
                        if !clamp {
                            continue;
                        }
                        0
                    } else if c == nbins + 1 {
                        t.above += 1;
                        if !clamp {
                            continue;
                        }
                        nbins - 1
                    } else {
                        t.nan += 1;
                        continue;
                    };
                    s[bin].add(weight(start + j));
                }
                (s, t)
            })
            .collect();
        // Block order, for every bin: the same additions whatever the thread count.
        sums.par_chunks_mut(1 << 14)
            .enumerate()
            .for_each(|(j, out)| {
                let lo = j << 14;
                let len = out.len();
                for (p, _) in &parts {
                    for (o, &v) in out.iter_mut().zip(&p[lo..lo + len]) {
                        o.merge(v);
                    }
                }
            });
        for (_, t) in &parts {
            tallies.add(t);
        }
    }
    (sums, tallies)
}
