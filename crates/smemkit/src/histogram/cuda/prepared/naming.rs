//! Kernel names and compile defines per sample type, strategy and weights.

use super::*;

/// The NVRTC defines that specialise `histogram.cu` for a sample type.
pub fn sample_defines(t: SampleType) -> Vec<(&'static str, String)> {
    let half = matches!(t, SampleType::F16 | SampleType::BF16);
    let c_type = match t {
        SampleType::U8 => "unsigned char",
        // 16-bit codes: the kernels look their slots up (MODE_LUT), they never compute with them.
        SampleType::U16 | SampleType::F16 | SampleType::BF16 => "unsigned short",
        SampleType::U32 => "unsigned int",
        SampleType::U64 => "unsigned long long",
        SampleType::I8 => "signed char",
        SampleType::I16 => "short",
        SampleType::I32 => "int",
        SampleType::I64 => "long long",
        SampleType::F32 => "float",
        SampleType::F64 => "double",
    };
    let signed = matches!(
        t,
        SampleType::I8 | SampleType::I16 | SampleType::I32 | SampleType::I64
    );
    let mut defines = vec![
        ("SAMPLE_T", c_type.to_string()),
        (
            "SAMPLE_IS_FLOAT",
            ((t.is_float() && !half) as u8).to_string(),
        ),
        ("SAMPLE_IS_F32", ((t == SampleType::F32) as u8).to_string()),
        ("SAMPLE_IS_SIGNED", (signed as u8).to_string()),
    ];
    // Only where set, so that the other types' builds (and their cache keys) stay as they were.
    if half {
        defines.push(("SAMPLE_IS_HALF", "1".to_string()));
    }
    defines
}

/// The kernel for a strategy, binning and weight kind.
pub fn kernel_name(plan: &Plan, limits: &DeviceLimits, what: &Counting<'_>) -> String {
    let (weights, mode) = (what.weights, mode_name(what.binning, what.sample_type));
    let s = match plan.strategy {
        // u32 counts with at most 1024 threads per SM: the prefetching build.
        Strategy::Shared if plan::prefetch_build(plan, limits, weights != WeightKind::None) => {
            return format!("hist_sharedp_{}_none", mode);
        }
        Strategy::Shared => "shared",
        // Counts only (the planner refuses weights): one kernel per width, in two builds (4-bit
        // counters: the prefetching one only, which plan::prefetch_build says).
        Strategy::Packed { bits } => {
            let build = if plan::prefetch_build(plan, limits, false) {
                "p"
            } else {
                ""
            };
            return format!("hist_shared{bits}{build}_{}_none", mode);
        }
        Strategy::Cluster { .. } => "cluster",
        // Counts only, one kernel per counter width.
        Strategy::Exchange { bits, .. } => return format!("hist_exchange{bits}_{}_none", mode),
        Strategy::ClusterPacked { bits, .. } => {
            return format!("hist_clusterpacked{bits}_{}_none", mode)
        }
        // Weighted sums: 512-thread blocks, one kernel per weight type.
        Strategy::Sliced { bits: 64, .. } => "slicedsums",
        // Counts, one kernel per counter width: 1024-thread blocks, prefetching.
        Strategy::Sliced { bits, .. } => return format!("hist_sliced{bits}_{}_none", mode),
        // Counts only, 1024-thread blocks, prefetching.
        // Counts only, 1024-thread blocks, prefetching. Where the kernels choose the width, the
        // 8-bit one first and the 4-bit one after it (`spill_second_kernel`).
        Strategy::Spill { bits } => {
            let bits = if bits == plan::SPILL_KERNEL_CHOOSES {
                8
            } else {
                bits
            };
            return format!("hist_spill{bits}_{}_none", mode);
        }
        Strategy::Global => "global",
        // The first of the partition passes; the others are looked up beside it.
        Strategy::Partition => return format!("hist_part_count_{}", mode),
    };
    format!("hist_{s}_{}_{}", mode, weights.suffix())
}

/// The kernels a prepared histogram launches besides its plan's own: the fold of global u32
/// counters, the later partition passes, and where `auto` probes for skew, the verdict and the
/// global plan it may switch to.
pub fn companions(plan: &Plan, what: &Counting<'_>, probed: bool) -> Vec<String> {
    let (weights, mode) = (what.weights, mode_name(what.binning, what.sample_type));
    let mut names = Vec::new();
    let global_counts = weights == WeightKind::None;
    if plan.strategy == Strategy::Global && global_counts {
        names.push("hist_fold_u32".to_string());
    }
    // The launch grid decides whether the lanes are used (`lanes16_fit`); the kernel is built
    // for every sliced count plan.
    if matches!(
        plan.strategy,
        Strategy::Sliced { bits: 8 | 4, .. } | Strategy::Spill { .. }
    ) && global_counts
    {
        names.push("hist_fold_lanes16".to_string());
    }
    if let Some(second) = spill_second_kernel(plan, what) {
        names.push(second);
    }
    if plan.strategy == Strategy::Partition {
        names.push(format!("hist_part_scatter_{mode}"));
        names.push("hist_part_bins".to_string());
        names.push("hist_part_scan".to_string());
    }
    if probed {
        names.push(format!("hist_verdict_{mode}"));
        names.push(format!("hist_global_{mode}_{}", weights.suffix()));
        if global_counts {
            names.push("hist_fold_u32".to_string());
        }
    }
    names.dedup();
    names
}

/// The kernel launched after the plan's own where the spill kernels choose their width: the 4-bit
/// one (`spill_kernel` in `kernels/hist_spill.cuh`; the one not chosen returns before counting).
pub fn spill_second_kernel(plan: &Plan, what: &Counting<'_>) -> Option<String> {
    (plan.strategy
        == Strategy::Spill {
            bits: plan::SPILL_KERNEL_CHOOSES,
        })
    .then(|| {
        format!(
            "hist_spill4_{}_none",
            mode_name(what.binning, what.sample_type)
        )
    })
}

/// Whether the sliced counts of `plan` flush into 16-bit lanes (`flush_packed_lanes16` in
/// `kernels/hist_packed.cuh`): counts, not sums, and few enough blocks per slice that a lane's
/// leftovers, at most 2^bits - 1 from each, stay below 2^16.
pub fn lanes16_fit(plan: &Plan, weights: WeightKind) -> bool {
    match plan.strategy {
        Strategy::Sliced {
            bits: bits @ (8 | 4),
            slices,
        } if weights == WeightKind::None => {
            let members = plan.grid.div_ceil(slices.max(1)) as u64;
            members * ((1u64 << bits) - 1) <= u16::MAX as u64
        }
        // Every block flushes the same window; a width the kernel chooses may be 8 bits.
        Strategy::Spill { bits } if weights == WeightKind::None => {
            let widest = if bits == plan::SPILL_KERNEL_CHOOSES {
                8
            } else {
                bits
            };
            plan.grid as u64 * ((1u64 << widest) - 1) <= u16::MAX as u64
        }
        _ => false,
    }
}

/// Bytes of shared memory that a sliced count of float32 bins off the grid (mode `uniform32w`,
/// ignore policy, no weights) gives its warps' staging rings (`wide_ring_loop` in
/// kernels/hist_walk.cuh), after its counters and hot lanes, where they fit the block's opt-in
/// limit beside them; `None` otherwise, and the kernel bins every sample in every slice.
pub fn stage_ring_bytes(
    plan: &Plan,
    mode: &str,
    policy: OutOfRange,
    weights: WeightKind,
    limits: &DeviceLimits,
) -> Option<u32> {
    match plan.strategy {
        Strategy::Sliced { bits: 8 | 4, .. }
            if stages_slices(mode, policy, weights)
                && plan::stage_rings_fit(plan.shared_bytes, plan.block, limits) =>
        {
            Some(plan::stage_ring_bytes(plan.block))
        }
        _ => None,
    }
}

/// Whether sliced passes of this binning stage their samples (see [`stage_ring_bytes`]).
pub fn stages_slices(mode: &str, policy: OutOfRange, weights: WeightKind) -> bool {
    mode == "uniform32w" && policy == OutOfRange::Ignore && weights == WeightKind::None
}

/// Whether warps combine equal bins before their atomics. Shared-memory atomics on one address are
/// cheap enough that `__match_any_sync` only costs, while remote (cluster) and global atomics on one
/// address serialise without it (figures in bench/NOTES.md). The cluster_packed kernels' loop without
/// it sends a batch of returning remote atomics before waiting on any (kernels/
/// hist_cluster_packed.cuh), and their hot bins take the data piled on one bin. Weighted sums never
/// aggregate.
pub fn aggregate_default(strategy: &Strategy, weights: WeightKind) -> bool {
    weights == WeightKind::None
        && !matches!(
            strategy,
            Strategy::Shared
                | Strategy::Packed { .. }
                | Strategy::Sliced { .. }
                | Strategy::Spill { .. }
                | Strategy::ClusterPacked { .. }
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sliced(bits: u32, slices: u32, grid: u32) -> Plan {
        Plan {
            strategy: Strategy::Sliced { slices, bits },
            grid,
            block: 1024,
            shared_bytes: 0,
            bins_per_block: 1,
            reason: String::new(),
        }
    }

    #[test]
    fn lanes16_hold_every_block_of_a_slice() {
        // 8-bit leftovers: 257 blocks of a slice fit 16 bits (257 * 255 = 65535), 258 do not.
        assert!(lanes16_fit(&sliced(8, 3, 132), WeightKind::None));
        assert!(lanes16_fit(&sliced(8, 1, 257), WeightKind::None));
        assert!(!lanes16_fit(&sliced(8, 1, 258), WeightKind::None));
        // 4-bit: 4369 * 15 = 65535.
        assert!(lanes16_fit(&sliced(4, 2, 2 * 4369), WeightKind::None));
        assert!(!lanes16_fit(&sliced(4, 2, 2 * 4370), WeightKind::None));
        // Sums and the other strategies keep their own flush.
        assert!(!lanes16_fit(&sliced(64, 3, 132), WeightKind::F32));
        assert!(!lanes16_fit(&sliced(8, 3, 132), WeightKind::F32));
        let mut global = sliced(8, 3, 132);
        global.strategy = Strategy::Global;
        assert!(!lanes16_fit(&global, WeightKind::None));
    }

    #[test]
    fn staging_rings_only_for_sliced_float32_bins_off_the_grid_where_they_fit() {
        let limits = DeviceLimits::H100;
        let optin = limits.smem_per_block_optin;
        let mut plan = sliced(8, 3, 132);
        plan.shared_bytes = 166_795;
        let ring =
            |p: &Plan, mode, policy, weights| stage_ring_bytes(p, mode, policy, weights, &limits);
        let (ignore, none) = (OutOfRange::Ignore, WeightKind::None);
        // 32 warps of 64 floats.
        assert_eq!(ring(&plan, "uniform32w", ignore, none), Some(8192));
        assert_eq!(ring(&plan, "uniform32x", ignore, none), None);
        assert_eq!(ring(&plan, "uniform32w", OutOfRange::Clamp, none), None);
        assert_eq!(ring(&plan, "uniform32w", ignore, WeightKind::F32), None);
        // Up to the opt-in limit with the static reserve, not past it.
        plan.shared_bytes = optin - 8192 - plan::STATIC_SHARED_RESERVE as u32;
        assert_eq!(ring(&plan, "uniform32w", ignore, none), Some(8192));
        plan.shared_bytes += 1;
        assert_eq!(ring(&plan, "uniform32w", ignore, none), None);
        let mut packed = sliced(8, 3, 132);
        packed.strategy = Strategy::Packed { bits: 8 };
        assert_eq!(ring(&packed, "uniform32w", ignore, none), None);
    }
}
