//! The automatic choice: which strategy family the planner picks for a workload on a device.

use super::*;

pub(super) fn auto_plan(w: &Workload, limits: &DeviceLimits) -> Plan {
    let p = auto_plan_large(w, limits);
    if small_shard_prefers_global(w, &p) {
        return global_plan(
            limits,
            format!(
                "a shard of {} samples: under one sample per counter in each {} block, flushing \
                 per-block counters would cost as many global atomics as counting in global memory",
                w.samples.unwrap_or(0),
                p.strategy
            ),
        );
    }
    p
}

/// The planner's choice for a large input (or one of unknown size).
pub(super) fn auto_plan_large(w: &Workload, limits: &DeviceLimits) -> Plan {
    let bytes = w.nbins * w.counter_bytes();
    let smem = counter_capacity(limits);
    match counter_bits(w, limits) {
        Some(32) => {
            return shared_plan(
                w,
                limits,
                format!(
                    "{} bytes of counters fit one block's {} bytes of shared memory",
                    bytes, smem
                ),
            )
        }
        Some(bits) => {
            let packed = packed_bytes(w.nbins, bits);
            return packed_plan(
                w,
                limits,
                bits,
                format!(
                    "{} bytes of {bits}-bit counters fit one block (blocks per SM: {}; u32 counters \
                     would need {} bytes)",
                    packed,
                    blocks_per_sm(limits, packed as u32),
                    bytes
                ),
            );
        }
        _ => {}
    }
    if let Some(p) = auto_spill_plan(w, limits) {
        return p;
    }
    if let Some(p) = auto_sliced_plan(w, limits) {
        return p;
    }
    // Counts of integer samples: the partition passes beat every other strategy beyond the 4-bit
    // counters' reach (auto_sliced_plan) and beyond one block before them (sorting each scatter
    // tile in shared memory and storing 16-bit indices is what makes them win at 1M bins too).
    // Float samples locate each sample twice in the partition passes, which costs more than it
    // saves while the counters stay in L2; beyond 2^22 bins the counters leave L2 and partition
    // wins for them too. Figures in bench/NOTES.md and bench/results/.
    let bucketable = plan_partition_ok(w);
    // Float64 samples on a grid bin cheaply too, but the partition passes read their 8 bytes
    // twice: measured for samples of at most 4 bytes only.
    if bucketable && w.cheap_binning() && w.sample_type.size() <= 4 {
        return partition_plan(
            w,
            limits,
            format!(
                "{} bins of {} beyond one block: partition passes measured fastest",
                w.nbins,
                if w.sample_type.is_float() {
                    "float samples in bins that need no correction"
                } else {
                    "integer samples"
                }
            ),
        )
        .expect("checked by plan_partition_ok");
    }
    if bucketable && w.nbins > AUTO_PARTITION_LARGE_MIN {
        return partition_plan(w, limits, format!("{} bins of counters would not stay in L2: partition passes measured fastest beyond {} bins", w.nbins, AUTO_PARTITION_LARGE_MIN))
            .expect("checked by plan_partition_ok");
    }
    if let Some(p) = auto_sliced_sums_plan(w, limits) {
        return p;
    }
    if w.weighted && limits.has_clusters() {
        if let Some(k) = smallest_cluster(
            bytes,
            smem,
            AUTO_CLUSTER_MAX.min(limits.max_cluster_nonportable),
        ) {
            return cluster_plan(
                w,
                limits,
                k,
                format!(
                    "{} bytes of weight sums fit a cluster of {} blocks",
                    bytes, k
                ),
            );
        }
    }
    global_plan(
        limits,
        format!(
            "{} bins: global atomics in L2, with warp aggregation and a per-block hot bin",
            w.nbins
        ),
    )
}

/// Most bins `auto` gives the spill strategy: beyond them the counters the spilled samples reach
/// leave L2 (as [`AUTO_PARTITION_LARGE_MIN`] for global).
pub const AUTO_SPILL_MAX_BINS: usize = AUTO_PARTITION_LARGE_MIN;

/// Most bins `auto` gives the spill strategy for float samples on a grid of bins (no correction):
/// measured up to 2^20 bins (H100, 2^28 float32 normal and uniform samples over [-4, 4]: at
/// 262144 bins spill 0.46 / 0.52 ms against two slices' 0.80 / 0.77, at 1048576 0.61 / 1.82
/// against three slices' 1.47 / 1.81; bench/NOTES.md, session 24); beyond, the slices and the
/// partition passes stay, unmeasured against it.
pub const AUTO_SPILL_GRID_MAX_BINS: usize = 1 << 20;

/// Counts of samples whose bins cost more than a subtraction (float bins that need numpy's
/// correction, integer samples in computed bins) beyond one block of 8-bit counters: the spill
/// strategy locates each sample once, where the sliced passes locate it once per slice and global
/// sends every sample through an L2 atomic. Its spilled share is a subset of global's atomics, so
/// it beats global whatever the data; against sliced it gains the slices' repeated binning. Float
/// samples on a grid of bins too, up to [`AUTO_SPILL_GRID_MAX_BINS`]: their slices each still
/// read and convert every sample, where integer samples' slices are measured ahead.
pub(super) fn auto_spill_plan(w: &Workload, limits: &DeviceLimits) -> Option<Plan> {
    if w.weighted || w.nbins > AUTO_SPILL_MAX_BINS {
        return None;
    }
    let grid_floats = w.sample_type.is_float() && w.cheap_binning();
    if grid_floats && w.nbins > AUTO_SPILL_GRID_MAX_BINS {
        return None;
    }
    if w.cheap_binning() && !grid_floats {
        return None;
    }
    let p = spill_choice(w, limits, None).ok()?;
    Some(Plan {
        reason: format!(
            "{} bins of {}, beyond one block: \
             each block keeps the busiest {} bins in 8-bit counters or {} in 4-bit ones (width and \
             place chosen from a probe of the input) and sends the other samples to global \
             atomics, locating each sample once",
            w.nbins,
            if grid_floats {
                "float samples on a grid of bins"
            } else {
                "samples whose bins are computed with numpy's correction"
            },
            p.bins_per_block,
            (2 * p.bins_per_block).min(w.nbins)
        ),
        ..p
    })
}

/// Most slices of 8-bit counters `auto` plans before 4-bit ones take over: a third slice of
/// 8-bit counters loses to two of 4-bit ones. See bench/NOTES.md, "Measured thresholds".
pub const AUTO_SLICED8_MAX_SLICES: usize = 2;
/// Most slices of 4-bit counters `auto` plans: each slice reads the input once more, and a fifth
/// would fall below the partition passes. See bench/NOTES.md, "Measured thresholds".
pub const AUTO_SLICED4_MAX_SLICES: usize = 4;

/// `auto`'s plan from where one block of 8-bit counters no longer holds the bins (232304) to four
/// slices of 4-bit counters (1858432 bins): the sliced strategy, two slices of 8-bit counters, then
/// 4-bit ones, which beat the partition passes over that range (bench/NOTES.md, "Measured
/// thresholds"). Counts of samples with cheap binning only: the sliced kernels bin every sample
/// once per slice, and samples whose bins cost more are spilled ([`auto_spill_plan`]). A 4-bit
/// counter wraps every 16 counts and each wrap costs a few global atomics, so they assume spread
/// data (2^28 samples over 1M bins in three slices: ~6 counts per bin and block); data piled on few
/// bins goes to global, and data a spill window holds to spill, through the skew probe
/// ([`skew_probe_threshold`], [`spill_share_for_sliced`]).
pub(super) fn auto_sliced_plan(w: &Workload, limits: &DeviceLimits) -> Option<Plan> {
    if w.weighted || !w.cheap_binning() {
        return None;
    }
    let bits = [(8, AUTO_SLICED8_MAX_SLICES), (4, AUTO_SLICED4_MAX_SLICES)]
        .iter()
        .find(|&&(bits, most)| w.nbins.div_ceil(packed_max_bins_per_block(limits, bits)) <= most)?
        .0;
    let p = sliced_choice(w, limits, Some(bits), None).ok()?;
    let Strategy::Sliced { slices, .. } = p.strategy else {
        return None;
    };
    Some(Plan {
        reason: format!(
            "{} bins in {slices} slices of {bits}-bit counters, one block each: every block reads \
             the input and counts its slice (measured ahead of partition up to \
             {AUTO_SLICED4_MAX_SLICES} slices of 4-bit counters)",
            w.nbins
        ),
        ..p
    })
}

/// Most slices of weighted sums `auto` plans beyond one block's shared memory. See bench/NOTES.md,
/// "Session 16".
pub const AUTO_SLICED_SUMS_MAX_SLICES: u32 = 3;

/// Weighted sums just beyond one block: slices of 64-bit sums small enough that two blocks share an
/// SM, up to [`AUTO_SLICED_SUMS_MAX_SLICES`] slices. The weighted kernels wait on their shared
/// atomics, so a second block per SM pays for a third reading of the input there; with one block
/// per SM, or more slices, the cluster does as well or better. No skew probe: global's float
/// atomics on one hot bin cost more still.
fn auto_sliced_sums_plan(w: &Workload, limits: &DeviceLimits) -> Option<Plan> {
    if !w.weighted {
        return None;
    }
    let p = (2..=AUTO_SLICED_SUMS_MAX_SLICES)
        .filter_map(|k| sliced_choice(w, limits, Some(64), Some(k)).ok())
        .find(|p| blocks_per_sm(limits, p.shared_bytes) >= 2)?;
    let Strategy::Sliced { slices, .. } = p.strategy else {
        return None;
    };
    Some(Plan {
        reason: format!(
            "{} bins of weight sums in {slices} slices, two blocks an SM: every block reads the \
             input and sums its slice (measured ahead of cluster and global at 32768 bins)",
            w.nbins
        ),
        ..p
    })
}

/// Beyond this many bins the counters leave L2 and the partition passes take over for float samples.
pub const AUTO_PARTITION_LARGE_MIN: usize = 1 << 22;
