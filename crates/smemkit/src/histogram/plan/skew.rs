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
/// Each strategy's time is modelled as linear in the hot share between uniform data and the
/// standard hot workload; the thresholds sit a little above the crossovers, because a wrong global
/// choice on near-uniform data costs more than a wrong partition choice on skewed data. Beyond
/// 16 MiB of u32 counters (no longer sharing the L2 comfortably with the samples) global needs a
/// far larger share. The measured lines are in bench/NOTES.md, "Measured thresholds".
pub fn hot_share_for_global(nbins: usize) -> f64 {
    // u32 counters of up to 16 MiB share the L2 with the samples streaming through it.
    if nbins * 4 <= 16 << 20 {
        0.35
    } else {
        0.82
    }
}

/// The hot share from which global beats `auto`'s sliced plan of `slices` slices. Modelled as for
/// [`hot_share_for_global`]; each threshold sits a little above the lowest crossover of its slice
/// count. See bench/NOTES.md, "Measured thresholds".
pub fn hot_share_for_global_sliced(slices: u32) -> f64 {
    match slices {
        0..=2 => 0.75,
        3 => 0.66,
        _ => 0.55,
    }
}

/// The share of the probed samples in the busiest slice from which global beats `auto`'s sliced
/// plan of `slices` slices of 4-bit counters: every slice's blocks read the whole input, but the
/// busiest slice's blocks count its samples, and their counters wrap every 16 counts. (Slices of
/// 8-bit counters are not switched on crowding: five of them at 1M bins took 2.2 ms on normal data
/// and 2.3 on uniform data, bench/NOTES.md, "Session 17".) Modelled from one H100 measurement
/// (bench/NOTES.md, "Session 13"): int32 normal samples at 1M bins in 3 slices of 4-bit counters
/// took 10.4 ms with 82 % in the middle slice, 1.45 ms uniform (a third each), global 3.2 ms;
/// time linear in the busiest share puts the crossover near 1.3 / slices, far above a uniform
/// probe's share (1 / slices, within 0.035 at three standard deviations of 2048 probes); at least
/// 0.1 above that share, so that many slices' uniform probes stay clear of it too.
pub fn busiest_slice_share_for_global(slices: u32) -> f64 {
    let uniform = 1.0 / slices.max(1) as f64;
    (1.3 * uniform).max(uniform + 0.1).min(1.0)
}

/// Most slices of 8-bit counters the crowded-slice alternative ([`crowded_alternative`]) takes:
/// each slice reads the input once more (at 1M bins, 2^28 float32 samples: five slices 2.2-2.6 ms
/// on every distribution tried, six 2.6-2.9, global 3.0-3.3; bench/NOTES.md, "Session 17").
pub const CROWDED_SLICED8_MAX_SLICES: usize = 5;

/// The busiest slice's share of the probed samples from which the crowded-slice alternative
/// replaces `auto`'s slices of 4-bit counters. Their counters wrap every 16 counts, and the time
/// grows with the crowding (at 1M bins in three slices: a third each 1.83 ms, half in the middle
/// slice 2.0, 82 % 3.9, 99 % 5.1), while five slices of 8-bit counters took 2.2-2.6 ms whatever
/// the data; the crossover lies between a half and 82 %.
pub const CROWDED_SLICE_SHARE: f64 = 0.6;

/// Pairs of probed samples sharing a bin from which the data count as crowded before `slices`
/// slices of 4-bit counters that have a crowded-slice alternative: data piled on many bins but on
/// no hot one, whose 4-bit counters wrap in every block whichever slice they fall in. 2048 probes
/// expect C(2048, 2) times the chance that two samples share a bin.
///
/// Three or more slices (1M bins and up): 16. Uniform data expect about 2 pairs (16 or more far
/// under once in 10^8 probes), normal data over [-4, 4] 4.5 (their crowded middle slice decides
/// instead), data on 10-10000 values hundreds or more (at 1M bins, 2^28 float32 samples on 10,
/// 100 or 1000 values: three slices of 4-bit counters 6.2, 3.9 and 3.7 ms, five of 8-bit ones
/// 2.3-2.5).
///
/// Two slices (464609 to 929216 bins): 6. Each block of two slices reads twice the samples of a
/// block of three, so its counters wrap at half the crowding: normal data over [-4, 4] at 2^19
/// bins (9 pairs expected) took 2.10 ms in two 4-bit slices, 1.17 in three 8-bit ones; uniform
/// data (4 pairs expected, so often above 6) 1.21 against 1.22, where the switch costs nothing.
pub fn crowded_probe_pairs(slices: u32) -> u32 {
    if slices <= 2 {
        6
    } else {
        16
    }
}

/// Where `auto` planned slices of 4-bit counters, the plan that runs instead when the skew probe
/// finds one slice crowded (but no bin hot): slices of 8-bit counters, where at most
/// [`CROWDED_SLICED8_MAX_SLICES`] hold the bins. `None` for every other plan (a crowded slice then
/// sends the run to global).
pub fn crowded_alternative(plan: &Plan, w: &Workload, limits: &DeviceLimits) -> Option<Plan> {
    if !matches!(plan.strategy, Strategy::Sliced { bits: 4, .. }) {
        return None;
    }
    let p = sliced_choice(w, limits, Some(8), None).ok()?;
    match p.strategy {
        Strategy::Sliced { slices, .. } if slices as usize <= CROWDED_SLICED8_MAX_SLICES => {
            Some(Plan {
                reason: format!(
                    "one slice crowded: {} bins in {slices} slices of 8-bit counters",
                    w.nbins
                ),
                ..p
            })
        }
        _ => None,
    }
}

/// The busiest slice's share from which a sliced plan of `slices` slices gives way, and to what:
/// the crowded alternative where there is one ([`CROWDED_SLICE_SHARE`]), else global
/// ([`busiest_slice_share_for_global`]).
pub fn crowded_slice_share(slices: u32, has_alternative: bool) -> f64 {
    if has_alternative {
        CROWDED_SLICE_SHARE.max(busiest_slice_share_for_global(slices))
    } else {
        busiest_slice_share_for_global(slices)
    }
}

/// Where `auto`'s plan is worth a skew probe (skewed data runs faster on the global strategy,
/// whose per-block hot bin absorbs it), the share of the commonest bin from which to switch: the
/// partition passes (far slower than global on hot data at every bin count they serve) and
/// the sliced plans (their thresholds' arithmetic is on [`hot_share_for_global_sliced`]). `None`
/// for every other plan, for a forced strategy, and for a workload known to be shorter than
/// [`SKEW_PROBE_MIN_SAMPLES`]. The CUDA engine builds its probe from this, and
/// `smemkit plan` reports it.
///
/// One block of 8-bit counters per SM is not probed: running 1024 threads with prefetched loads it
/// beats global at every share of the hot bin, so a probe there would only cost time. See
/// bench/NOTES.md, "Measured thresholds".
pub fn skew_probe_threshold(plan: &Plan, w: &Workload, choice: StrategyChoice) -> Option<f64> {
    if choice != StrategyChoice::Auto || w.samples.is_some_and(|n| n < SKEW_PROBE_MIN_SAMPLES) {
        return None;
    }
    match plan.strategy {
        Strategy::Partition => Some(hot_share_for_global(w.nbins)),
        // Weighted sums are never sent to global: its float atomics on one hot bin cost far more.
        Strategy::Sliced { bits: 64, .. } => None,
        Strategy::Sliced { slices, .. } => Some(hot_share_for_global_sliced(slices)),
        _ => None,
    }
}

/// Milliseconds one sliced pass over 2^28 samples of cheap bins takes on the H100 (float32 on the
/// grid, integer bins: about 0.29; float64 on the grid: about 0.46; bench/NOTES.md, sessions 17-19).
fn sliced_pass_ms(w: &Workload) -> f64 {
    if w.sample_type.size() > 4 {
        0.46
    } else {
        0.29
    }
}

/// Milliseconds of 2^28 global atomics on the H100's L2 (global at 1M bins, bench/NOTES.md).
const GLOBAL_ATOMICS_MS: f64 = 3.2;
/// Milliseconds of the spill plan's flush of its window (about 7.7 M 64-bit atomics at 132 blocks).
const SPILL_FLUSH_MS: f64 = 0.1;

/// Where `auto` planned slices of cheap bins (counts), the share of the probed samples the best
/// spill window must hold for the spill plan ([`spill_choice`]) to run instead: the slices read the
/// input once each, the spill plan once with its spilled share going through L2 atomics, so with
/// `t` a slice's pass, spill wins where `(1 - share) * GLOBAL + FLUSH < slices * t`. `None` where no
/// share reachable would pay (one slice, weighted sums, costly bins that `auto` spills outright, a
/// forced plan). The probe counts only the window's whole buckets, a lower bound of its share.
pub fn spill_share_for_sliced(plan: &Plan, w: &Workload) -> Option<f64> {
    let Strategy::Sliced {
        slices,
        bits: 8 | 4,
    } = plan.strategy
    else {
        return None;
    };
    if w.weighted || slices < 2 || !w.cheap_binning() {
        return None;
    }
    let share = 1.0 - (slices as f64 * sliced_pass_ms(w) - SPILL_FLUSH_MS) / GLOBAL_ATOMICS_MS;
    (share <= SPILL_SHARE_MOST).then_some(share.max(SPILL_SHARE_LEAST))
}

/// The highest threshold worth probing for: above it (two slices of cheap bins) what spill could
/// gain is within the model's error.
pub const SPILL_SHARE_MOST: f64 = 0.8;
/// The lowest threshold used: below it the probe's error (about 0.035 at three standard
/// deviations of 2048 probes) and the model's are as large as the margin.
pub const SPILL_SHARE_LEAST: f64 = 0.3;
