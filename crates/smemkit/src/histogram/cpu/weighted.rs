//! Weighted histograms: per-block sums of weights in float64, added in a fixed order.

use super::*;

/// Weighted sums, deterministic: fixed blocks summed in sample order, added in block order.
pub(super) fn run_weighted<T: Sample, C: Codes<T>>(
    samples: &[T],
    weights: Weights<'_>,
    nbins: usize,
    clamp: bool,
    codes: &C,
) -> EngineOutput {
    // Blocks are never shorter than the bins they fill (keeps the merge cost below the count cost).
    let block = WEIGHTED_BLOCK * nbins.div_ceil(WEIGHTED_BLOCK).max(1);
    let workers = rayon::current_num_threads().max(1);
    // How many blocks are summed at once; it changes the memory used, never the result.
    let group = 2 * workers;
    let mut sums = vec![0.0f64; nbins];
    let mut tallies = Tallies::default();
    for (g, group_samples) in samples.chunks(block * group).enumerate() {
        let base = g * block * group;
        let parts: Vec<(Vec<f64>, Tallies)> = group_samples
            .par_chunks(block)
            .enumerate()
            .map(|(k, chunk)| {
                let start = base + k * block;
                let mut s = vec![0.0f64; nbins];
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
                    s[bin] += weights.get(start + j);
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
                    for (o, v) in out.iter_mut().zip(&p[lo..lo + len]) {
                        *o += v;
                    }
                }
            });
        for (_, t) in &parts {
            tallies.add(t);
        }
    }
    EngineOutput {
        counts: Counts::Weighted(sums),
        tallies,
        detail: detail(),
    }
}
