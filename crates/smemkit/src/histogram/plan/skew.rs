//! The skew probe: when a sample of the input decides between the planned strategy and global
//! atomics, and the share of the commonest bin that tips it.

use super::*;

/// Samples the skew probe reads (spread evenly over the input) before `auto` commits to the
/// partition passes: enough that a share near the thresholds is known to about +-1 % (one
/// standard error at 2048 samples).
pub const SKEW_PROBE_SAMPLES: usize = 2048;
/// Inputs shorter than this are not probed: the probe's round trip to the host (~20-40 us) would
/// cost more than the choice can save.
pub const SKEW_PROBE_MIN_SAMPLES: usize = 1 << 22;

/// The share of `bins` (the probe's bin numbers, `u32::MAX` for a sample counted in no bin) held
/// by the commonest bin, exact whenever it exceeds a third (every threshold of
/// [`hot_share_for_global`] does); below that, some share no larger than a third. One pass of the
/// Misra-Gries summary with two candidates (any value in more than a third of the list survives
/// it) and one pass counting them: linear, where sorting the probe costs tens of microseconds on
/// every probed run.
pub fn commonest_share(bins: &[u32]) -> f64 {
    let mut cand = [(u32::MAX, 0usize); 2];
    for &b in bins.iter().filter(|&&b| b != u32::MAX) {
        if let Some(c) = cand.iter_mut().find(|c| c.1 > 0 && c.0 == b) {
            c.1 += 1;
        } else if let Some(c) = cand.iter_mut().find(|c| c.1 == 0) {
            *c = (b, 1);
        } else {
            cand.iter_mut().for_each(|c| c.1 -= 1);
        }
    }
    let longest = cand
        .iter()
        .filter(|c| c.1 > 0)
        .map(|c| bins.iter().filter(|&&b| b == c.0).count())
        .max()
        .unwrap_or(0);
    if bins.is_empty() {
        0.0
    } else {
        longest as f64 / bins.len() as f64
    }
}

/// The share of the samples in one bin from which the global strategy (whose per-block hot bin
/// absorbs that bin's updates) beats the partition passes, where `auto` chose partition.
///
/// From the H100 measurements of 2^28 int32 samples (bench/results/*-c68d5a2.jsonl), modelling
/// each strategy's time as linear in the hot share f between uniform data (f = 0) and the standard
/// hot workload (f = 7/8): at 131072 bins global takes 3.45 - 3.14 f ms and partition 2.27 +
/// 0.75 f, equal at f = 0.30; at 1M bins 3.22 - 2.87 f against 2.28 + 0.74 f, f = 0.26; at 16M
/// bins, where the u32 counters (64 MB) no longer fit the 50 MB L2, 12.2 - 11.6 f against 2.66 +
/// 0.70 f, f = 0.78. The thresholds sit a little above those crossovers, because a wrong global
/// choice on near-uniform data costs more than a wrong partition choice on skewed data.
pub fn hot_share_for_global(nbins: usize) -> f64 {
    // u32 counters of up to 16 MiB share the L2 with the samples streaming through it.
    if nbins * 4 <= 16 << 20 {
        0.35
    } else {
        0.82
    }
}

/// The hot share from which global beats `auto`'s sliced plan of `slices` slices. Modelled as for
/// [`hot_share_for_global`] from the H100 figures of f8eb8bb (time linear in the share f between
/// uniform and 7/8 hot): two slices 0.884 - 0.01 f ms against global's 3.17 - 2.83 f at 262144 bins
/// (f = 0.81), 1.155 - 0.15 f against 3.2 - 2.86 f at 524288 (0.75), 1.366 - 0.365 f at 786432
/// (0.73); three slices 1.447 - 0.149 f against 3.22 - 2.87 f at 1M (0.65); four 1.823 - 0.157 f
/// against 3.13 - 2.77 f at 1572864 (0.50). Each threshold sits a little above the lowest crossover
/// of its slice count.
pub fn hot_share_for_global_sliced(slices: u32) -> f64 {
    match slices {
        0..=2 => 0.75,
        3 => 0.66,
        _ => 0.55,
    }
}

/// Where `auto`'s plan is worth a skew probe (skewed data runs faster on the global strategy,
/// whose per-block hot bin absorbs it), the share of the commonest bin from which to switch: the
/// partition passes (367 GB/s on hot data against global's ~1520 at every bin count they serve) and
/// the sliced plans (their thresholds' arithmetic is on [`hot_share_for_global_sliced`]). `None`
/// for every other plan, for a forced strategy, and for a workload known to be shorter than
/// [`SKEW_PROBE_MIN_SAMPLES`]. The CUDA engine builds its probe from this, and
/// `smemkit plan` reports it.
///
/// One block of 8-bit counters per SM was probed too (from a 0.8 share) while it ran 512 threads:
/// since it runs 1024 with prefetched loads it beats global at every share of the hot bin from 0
/// to 1 (H100, 182fad3, int32 GB/s at shares 0 / 0.8 / 0.875 / 0.95 / 1: 131072 bins 1681 / 1697 /
/// 1743 / 1934 / 2447 against global's 316 / 1223 / 1536 / 1681 / 1903; 232304 bins 1351 / 1451 /
/// 1555 / 1838 / 2450 against 318 / 1232 / 1545 / 1685 / 1909, the closest at 0.9: 1609 against
/// 1629), so the probe there only cost time (8 % on uniform data at 131072 bins).
pub fn skew_probe_threshold(plan: &Plan, w: &Workload, choice: StrategyChoice) -> Option<f64> {
    if choice != StrategyChoice::Auto || w.samples.is_some_and(|n| n < SKEW_PROBE_MIN_SAMPLES) {
        return None;
    }
    match plan.strategy {
        Strategy::Partition => Some(hot_share_for_global(w.nbins)),
        Strategy::Sliced { slices, .. } => Some(hot_share_for_global_sliced(slices)),
        _ => None,
    }
}
