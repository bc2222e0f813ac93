//! One plan builder per strategy family (shared, packed, cluster, partition, sliced, global) and
//! the shared-memory arithmetic they share.

use super::*;

/// Bytes of shared memory for `nbins` counters of `bits` bits packed into 32-bit words, and the
/// 32 per-lane u32 counters of the block's hot bin behind them (`PACKED_HOT_LANES` in
/// kernels/histogram.cu).
pub fn packed_bytes(nbins: usize, bits: u32) -> usize {
    nbins.div_ceil((32 / bits) as usize) * 4 + 32 * 4
}

/// The counter width `auto` gives a one-block histogram: u32 counters while they fit one block,
/// then the widest packed counters that do; `None` when not even 8-bit counters fit. Weighted sums
/// always take their f64 counters (32 here means "plain counters").
///
/// Narrower counters for more blocks per SM paid only while a lone block ran 512 threads; since a
/// lone block runs 1024 threads and every plan of at most 1024 threads per SM prefetches its
/// loads, the widest counters that fit win. See bench/NOTES.md, "Measured thresholds".
pub(super) fn counter_bits(w: &Workload, limits: &DeviceLimits) -> Option<u32> {
    let smem = counter_capacity(limits);
    if w.weighted {
        return (w.nbins * w.counter_bytes() <= smem).then_some(32);
    }
    if w.nbins * 4 <= smem {
        return Some(32);
    }
    [16u32, 8]
        .into_iter()
        .find(|&bits| packed_bytes(w.nbins, bits) <= smem)
}

/// Threads per SM up to which the host launches the prefetching build of the shared-memory kernels
/// (the next pair of 16-byte loads issued before the current pair is counted): with 8-14 more
/// registers (48-64) it fits 1024 threads per SM, and below 48 warps per SM the load latency is
/// what stalls the warps (bench/NOTES.md, run 9).
pub const PREFETCH_MAX_THREADS_PER_SM: u32 = 1024;

/// Whether a plan runs the prefetching build of its kernel: counts (not weighted sums) in shared
/// memory, u32 or packed, with at most [`PREFETCH_MAX_THREADS_PER_SM`] threads per SM.
pub fn prefetch_build(plan: &Plan, limits: &DeviceLimits, weighted: bool) -> bool {
    // 4-bit counters and the sliced counts have no other build; sliced weighted sums no such one.
    match plan.strategy {
        Strategy::Sliced { bits: 64, .. } => return false,
        Strategy::Packed { bits: 4 } | Strategy::Sliced { .. } | Strategy::Spill { .. } => {
            return true
        }
        _ => {}
    }
    let counts_in_shared = match plan.strategy {
        Strategy::Packed { .. } => true,
        Strategy::Shared => !weighted,
        _ => false,
    };
    counts_in_shared
        && blocks_per_sm(limits, plan.shared_bytes) * plan.block <= PREFETCH_MAX_THREADS_PER_SM
}

pub(super) fn plan_partition_ok(w: &Workload) -> bool {
    !w.weighted && w.nbins.div_ceil(1 << PARTITION_BITS) <= PARTITION_MAX_BUCKETS
}

pub(super) fn smallest_cluster(bytes: usize, smem: usize, max: u32) -> Option<u32> {
    (2..=max).find(|&k| {
        bytes.div_ceil(k as usize) <= smem && (bytes / 4).div_ceil(k as usize) * 4 <= smem
    })
}

/// Blocks that fit one SM at once for a given shared-memory footprint (at most 2048 threads / SM).
pub(super) fn blocks_per_sm(limits: &DeviceLimits, shared_bytes: u32) -> u32 {
    // The driver reserves 1 KiB of shared memory per block.
    let by_smem = if shared_bytes == 0 {
        u32::MAX
    } else {
        limits.smem_per_sm / (shared_bytes + 1024)
    };
    by_smem.clamp(1, 2048 / BLOCK_THREADS)
}

/// Threads per block of a shared-memory plan with `per_sm` blocks per SM: a lone block that counts
/// samples (u32 or packed counters, not weighted sums) takes [`ONE_BLOCK_THREADS`] and the
/// prefetching build (see [`prefetch_build`]), every other one [`BLOCK_THREADS`].
pub(super) fn counting_block_threads(per_sm: u32, counts: bool) -> u32 {
    if per_sm == 1 && counts {
        ONE_BLOCK_THREADS
    } else {
        BLOCK_THREADS
    }
}

pub(super) fn shared_plan(w: &Workload, limits: &DeviceLimits, reason: String) -> Plan {
    let shared_bytes = (w.nbins * w.counter_bytes()) as u32;
    let per_sm = blocks_per_sm(limits, shared_bytes);
    Plan {
        strategy: Strategy::Shared,
        grid: limits.sm_count * per_sm,
        block: counting_block_threads(per_sm, !w.weighted),
        shared_bytes,
        bins_per_block: w.nbins,
        reason,
    }
}

pub(super) fn packed_plan(w: &Workload, limits: &DeviceLimits, bits: u32, reason: String) -> Plan {
    let shared_bytes = packed_bytes(w.nbins, bits) as u32;
    let per_sm = blocks_per_sm(limits, shared_bytes);
    Plan {
        strategy: Strategy::Packed { bits },
        grid: limits.sm_count * per_sm,
        // 4-bit counters have only the 1024-thread build (they serve bins beyond 8-bit's reach).
        block: if bits == 4 {
            ONE_BLOCK_THREADS
        } else {
            counting_block_threads(per_sm, true)
        },
        shared_bytes,
        bins_per_block: w.nbins,
        reason,
    }
}

pub(super) fn cluster_plan(w: &Workload, limits: &DeviceLimits, size: u32, reason: String) -> Plan {
    let per_block = w.nbins.div_ceil(size as usize);
    let shared_bytes = (per_block * w.counter_bytes()) as u32;
    // The CUDA layer refines the grid with the driver's active-cluster occupancy.
    let blocks = limits.sm_count * blocks_per_sm(limits, shared_bytes);
    let grid = (blocks / size).max(1) * size;
    Plan {
        strategy: Strategy::Cluster { size },
        grid,
        block: BLOCK_THREADS,
        shared_bytes,
        bins_per_block: per_block,
        reason,
    }
}

pub(super) fn partition_plan(
    w: &Workload,
    limits: &DeviceLimits,
    reason: String,
) -> Result<Plan, crate::Error> {
    let unsupported = |reason: String| crate::Error::StrategyUnsupported {
        strategy: "partition".into(),
        reason,
    };
    if w.weighted {
        return Err(unsupported(
            "the partition passes count samples; weighted sums use the other strategies".into(),
        ));
    }
    let buckets = w.nbins.div_ceil(1 << PARTITION_BITS);
    if buckets > PARTITION_MAX_BUCKETS {
        return Err(unsupported(format!(
            "{} bins make {} buckets of {} bins, more than {}",
            w.nbins,
            buckets,
            1 << PARTITION_BITS,
            PARTITION_MAX_BUCKETS
        )));
    }
    let shared_bytes = 4u32 << PARTITION_BITS;
    Ok(Plan {
        strategy: Strategy::Partition,
        grid: limits.sm_count * blocks_per_sm(limits, shared_bytes),
        block: BLOCK_THREADS,
        shared_bytes,
        bins_per_block: 1 << PARTITION_BITS,
        reason,
    })
}

/// Most bins one block holds as `bits`-wide packed counters (beside its hot bin's lane counters).
pub fn packed_max_bins_per_block(limits: &DeviceLimits, bits: u32) -> usize {
    (counter_capacity(limits) - packed_bytes(0, bits)) / 4 * (32 / bits) as usize
}

/// The sliced strategy with `bits`-wide counters (8 unless asked; weighted sums 64) in `slices`
/// slices, or the fewest that hold the bins; counts in blocks of [`ONE_BLOCK_THREADS`] threads (the
/// prefetching loop), weighted sums in blocks of [`BLOCK_THREADS`]. The CUDA layer sizes the grid by
/// occupancy, cut to a multiple of the slice count.
pub(super) fn sliced_choice(
    w: &Workload,
    limits: &DeviceLimits,
    bits: Option<u32>,
    slices: Option<u32>,
) -> Result<Plan, crate::Error> {
    let unsupported = |reason: String| crate::Error::StrategyUnsupported {
        strategy: "sliced".into(),
        reason,
    };
    let bits = bits.unwrap_or(if w.weighted { 64 } else { 8 });
    match (w.weighted, bits) {
        (false, 8 | 4) | (true, 64) => {}
        (false, _) => {
            return Err(unsupported(format!(
                "sliced counts are 8 or 4 bits wide, not {bits} (64: weighted sums)"
            )))
        }
        (true, _) => {
            return Err(unsupported(format!(
                "weighted sums are sliced as 64-bit sums (sliced64), not {bits}-bit counters"
            )))
        }
    }
    let max_per_block = if bits == 64 {
        counter_capacity(limits) / 8
    } else {
        packed_max_bins_per_block(limits, bits)
    };
    let fewest = w.nbins.div_ceil(max_per_block).max(1);
    let slices = slices.map_or(fewest, |k| k as usize);
    if slices < fewest {
        return Err(unsupported(format!(
            "{} bins in {slices} slices need more than the {max_per_block} {bits}-bit counters \
             one block holds; at least {fewest} slices",
            w.nbins
        )));
    }
    // The kernels' slice test relies on it (`slice_bin` in kernels/histogram.cu); the slice count's
    // own limit (one per SM) keeps real devices far below it.
    if w.nbins >= 1 << 30 {
        return Err(unsupported(format!(
            "{} bins: the sliced kernels take fewer than 2^30",
            w.nbins
        )));
    }
    if slices > w.nbins.max(1) || slices > limits.sm_count as usize {
        return Err(unsupported(format!(
            "{slices} slices: at most one per bin ({}) and one per SM ({})",
            w.nbins, limits.sm_count
        )));
    }
    let per_block = w.nbins.div_ceil(slices).max(1);
    // The kernel derives the slice count from the bins per slice: 10 bins asked in 6 slices are 5
    // slices of 2.
    let slices = w.nbins.div_ceil(per_block).max(1);
    let (shared_bytes, block) = if bits == 64 {
        ((per_block * 8) as u32, BLOCK_THREADS)
    } else {
        (packed_bytes(per_block, bits) as u32, ONE_BLOCK_THREADS)
    };
    let blocks = limits.sm_count * blocks_per_sm(limits, shared_bytes);
    Ok(Plan {
        strategy: Strategy::Sliced {
            slices: slices as u32,
            bits,
        },
        grid: blocks / slices as u32 * slices as u32,
        block,
        shared_bytes,
        bins_per_block: per_block,
        reason: "forced".into(),
    })
}

/// Words of the spill kernel's shared memory its window's placement borrows before counting
/// (`SPILL_PLACEMENT_WORDS` in kernels/hist_spill.cuh): wherever the window is smaller than the
/// bins, its counters must take at least that many.
pub const SPILL_PLACEMENT_WORDS: usize = 2 * 1024 + 33;

/// The spill strategy: one block of 1024 threads per SM, each keeping the window of as many
/// `bits`-wide counters as one block holds (all the bins, where they fit) and sending the samples
/// of the other bins to global counters. Counts only. Without `bits`, the kernel chooses 8- or
/// 4-bit counters from its probe ([`SPILL_KERNEL_CHOOSES`]); the plan is then the 8-bit window's,
/// whose words hold the 4-bit window of twice its bins.
pub(super) fn spill_choice(
    w: &Workload,
    limits: &DeviceLimits,
    bits: Option<u32>,
) -> Result<Plan, crate::Error> {
    let unsupported = |reason: String| crate::Error::StrategyUnsupported {
        strategy: "spill".into(),
        reason,
    };
    if w.weighted {
        return Err(unsupported(
            "the spill strategy counts samples in narrow counters; weighted sums need f64 ones"
                .into(),
        ));
    }
    // The kernel runs the sliced kernels' 32-bit step (`slice_bin`), which needs it.
    if w.nbins >= 1 << 30 {
        return Err(unsupported(format!(
            "{} bins: the spill kernels take fewer than 2^30",
            w.nbins
        )));
    }
    let bits = bits.unwrap_or(SPILL_KERNEL_CHOOSES);
    if bits != 8 && bits != 4 && bits != SPILL_KERNEL_CHOOSES {
        return Err(unsupported(format!(
            "spill counters are 8 or 4 bits wide, not {bits}"
        )));
    }
    let planned_bits = if bits == SPILL_KERNEL_CHOOSES {
        8
    } else {
        bits
    };
    let per_block = w
        .nbins
        .min(packed_max_bins_per_block(limits, planned_bits))
        .max(1);
    let words = per_block.div_ceil((32 / planned_bits) as usize);
    if per_block < w.nbins && words < SPILL_PLACEMENT_WORDS {
        return Err(unsupported(format!(
            "a window of {per_block} bins is {words} words, below the {SPILL_PLACEMENT_WORDS} its \
             placement needs"
        )));
    }
    let shared_bytes = packed_bytes(per_block, planned_bits) as u32;
    Ok(Plan {
        strategy: Strategy::Spill { bits },
        grid: limits.sm_count * blocks_per_sm(limits, shared_bytes),
        block: ONE_BLOCK_THREADS,
        shared_bytes,
        bins_per_block: per_block,
        reason: "forced".into(),
    })
}

pub(super) fn global_plan(limits: &DeviceLimits, reason: String) -> Plan {
    Plan {
        strategy: Strategy::Global,
        grid: limits.sm_count * (2048 / BLOCK_THREADS),
        block: BLOCK_THREADS,
        shared_bytes: 0,
        bins_per_block: 0,
        reason,
    }
}
