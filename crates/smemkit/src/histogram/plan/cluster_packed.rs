//! The cluster_packed strategy: the bins split across the blocks of a thread block cluster as
//! packed 16- or 8-bit counters, for bin counts that no block holds even as 8-bit counters and no
//! cluster holds as u32 counters (about 1M bins). `auto` does not choose it: the rule it would use
//! ([`cluster_packed_candidate`]) waits on a GPU measurement against the global kernel.

use super::*;

/// Threads per block of the cluster_packed kernels (`__launch_bounds__(1024)`, the prefetching
/// loop): one block per SM where the counters take 128 KiB.
pub const CLUSTER_PACKED_THREADS: u32 = 1024;

/// The kernels find a bin's owner by a float32 estimate of `bin / bins_per_block` (`owner_of` in
/// kernels/hist_exchange.cuh), exact for bins below 2^24.
pub const CLUSTER_PACKED_MAX_BINS: usize = 1 << 24;

/// Bins each block of a cluster of `size` owns: a multiple of 32, so that no packed word spans two
/// owners.
pub fn cluster_packed_bins_per_block(nbins: usize, size: u32) -> usize {
    nbins.div_ceil(size as usize).max(1).next_multiple_of(32)
}

/// Dynamic shared memory of a cluster_packed block: its packed counters and the 32 lane counters
/// of its hot bin ([`packed_bytes`]).
pub fn cluster_packed_shared_bytes(nbins: usize, size: u32, bits: u32) -> usize {
    packed_bytes(cluster_packed_bins_per_block(nbins, size), bits)
}

/// Whether `nbins` bins fit a cluster of `size` blocks as `bits`-bit counters.
pub fn cluster_packed_fits(nbins: usize, size: u32, bits: u32, limits: &DeviceLimits) -> bool {
    cluster_packed_shared_bytes(nbins, size, bits) <= counter_capacity(limits)
}

/// A forced cluster_packed plan: the given width and size, or the smallest cluster (then the
/// widest counters) that holds the bins.
pub(super) fn cluster_packed_choice(
    w: &Workload,
    limits: &DeviceLimits,
    bits: Option<u32>,
    size: Option<u32>,
) -> Result<Plan, crate::Error> {
    let name = match (bits, size) {
        (Some(b), Some(k)) => Strategy::ClusterPacked { size: k, bits: b }.name(),
        _ => "clusterpacked".to_string(),
    };
    let unsupported = |reason: String| crate::Error::StrategyUnsupported {
        strategy: name.clone(),
        reason,
    };
    if !limits.has_clusters() {
        return Err(unsupported(format!(
            "thread block clusters need compute capability 9.0, the device has {}.{}",
            limits.compute_capability.0, limits.compute_capability.1
        )));
    }
    if w.weighted {
        return Err(unsupported(
            "the cluster_packed kernels count samples in narrow counters; weighted sums use \
             shared, cluster or global"
                .into(),
        ));
    }
    if w.nbins >= CLUSTER_PACKED_MAX_BINS {
        return Err(unsupported(format!(
            "{} bins: the cluster_packed kernels take fewer than 2^24",
            w.nbins
        )));
    }
    // The kernels are built for these widths only (kernels/histogram.cu).
    if let Some(b) = bits.filter(|b| ![16, 8].contains(b)) {
        return Err(unsupported(format!(
            "cluster_packed counters are 16 or 8 bits wide, not {b}"
        )));
    }
    let max = limits.max_cluster_nonportable;
    if let Some(k) = size.filter(|k| !(2..=max).contains(k)) {
        return Err(unsupported(format!(
            "cluster size {k} is outside 2..={max}"
        )));
    }
    let sizes: Vec<u32> = size.map_or_else(
        || [2, 4, 8, 16].into_iter().filter(|&k| k <= max).collect(),
        |k| vec![k],
    );
    let widths: Vec<u32> = bits.map_or_else(|| vec![16, 8], |b| vec![b]);
    for &k in &sizes {
        for &b in &widths {
            if cluster_packed_fits(w.nbins, k, b, limits) {
                return Ok(cluster_packed_plan(w, limits, k, b, "forced".into()));
            }
        }
    }
    let (k, b) = (
        *sizes.last().expect("a size"),
        *widths.last().expect("a width"),
    );
    Err(unsupported(format!(
        "{} bins over {k} blocks need {} bytes of {b}-bit counters per block, one block holds {}",
        w.nbins,
        cluster_packed_shared_bytes(w.nbins, k, b),
        counter_capacity(limits)
    )))
}

pub(super) fn cluster_packed_plan(
    w: &Workload,
    limits: &DeviceLimits,
    size: u32,
    bits: u32,
    reason: String,
) -> Plan {
    Plan {
        strategy: Strategy::ClusterPacked { size, bits },
        // The CUDA layer refines the grid with the driver's active-cluster occupancy.
        grid: (limits.sm_count / size).max(1) * size,
        block: CLUSTER_PACKED_THREADS,
        shared_bytes: cluster_packed_shared_bytes(w.nbins, size, bits) as u32,
        bins_per_block: cluster_packed_bins_per_block(w.nbins, size),
        reason,
    }
}

/// The plan `auto` would take for counts of float samples that need the float rule (the cheap
/// binnings go to sliced and partition, measured faster) between one block's 8-bit counters and
/// [`AUTO_PARTITION_LARGE_MIN`] bins, where global atomics in L2 are `auto`'s choice today: the
/// smallest cluster (then the widest counters) that holds the bins.
/// Not called by `auto` until the H100 shows it ahead of global.
pub fn cluster_packed_candidate(w: &Workload, limits: &DeviceLimits) -> Option<Plan> {
    if w.weighted
        || w.cheap_binning()
        || !limits.has_clusters()
        || w.nbins <= packed_max_bins_per_block(limits, 8)
        || w.nbins > AUTO_PARTITION_LARGE_MIN
    {
        return None;
    }
    let p = cluster_packed_choice(w, limits, None, None).ok()?;
    let Strategy::ClusterPacked { size, bits } = p.strategy else {
        return None;
    };
    Some(Plan {
        reason: format!(
            "{} bins of float samples as {bits}-bit counters over a cluster of {size} blocks",
            w.nbins
        ),
        ..p
    })
}
