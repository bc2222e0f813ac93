//! The exchange strategy: samples routed between the blocks of a cluster, each block owning a
//! slice of the bins.

use super::*;

/// Threads per block of the exchange kernels: one block per SM, since the inboxes take the shared
/// memory the counters leave.
pub const EXCHANGE_THREADS: u32 = 1024;
/// Static shared memory of the exchange kernels (the hot bin, the cursors and the received counts
/// of 16 blocks), covered by the opt-in limit together with the dynamic part.
pub const EXCHANGE_STATIC_SHARED: usize = 256;

/// Samples one thread of an exchange kernel bins per phase (`EXCHANGE_SAMPLES` in
/// kernels/histogram.cu): 8, or one 16-byte load of 1-byte samples.
pub fn exchange_samples(t: SampleType) -> usize {
    (16 / t.size()).max(8)
}

/// Bins each block of an exchange cluster of `size` owns: a multiple of 32, so that no packed word
/// spans two owners.
pub fn exchange_bins_per_block(nbins: usize, size: u32) -> usize {
    nbins.div_ceil(size as usize).next_multiple_of(32)
}

/// Dynamic shared memory of an exchange block: all the opt-in limit leaves (counters, then inboxes).
pub(super) fn exchange_shared_bytes(limits: &DeviceLimits) -> usize {
    (limits.smem_per_block_optin as usize).saturating_sub(EXCHANGE_STATIC_SHARED) & !15
}

/// The inbox room (entries per source block and phase) an exchange plan of `size` blocks and
/// `bits`-bit counters leaves, when it holds at least 5/4 of what a source sends on uniform data
/// (`EXCHANGE_THREADS x exchange_samples / size`); entries beyond the room become remote atomics,
/// which cost what the cluster strategy's do.
pub fn exchange_inbox(
    nbins: usize,
    sample_type: SampleType,
    size: u32,
    bits: u32,
    limits: &DeviceLimits,
) -> Option<usize> {
    let counters = packed_bytes(exchange_bins_per_block(nbins, size), bits);
    let room = exchange_shared_bytes(limits).checked_sub(counters)? / 4 / (2 * size as usize);
    let uniform = EXCHANGE_THREADS as usize * exchange_samples(sample_type) / size as usize;
    (room >= uniform * 5 / 4).then_some(room)
}

/// A forced exchange plan: the given width and size, or the smallest cluster (then the widest
/// counters) whose counters leave the inboxes their room.
pub(super) fn exchange_choice(
    w: &Workload,
    limits: &DeviceLimits,
    bits: Option<u32>,
    size: Option<u32>,
) -> Result<Plan, crate::Error> {
    let unsupported = |reason: String| crate::Error::StrategyUnsupported {
        strategy: "exchange".into(),
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
            "the exchange kernels count samples in narrow counters; weighted sums use shared, \
             cluster or global"
                .into(),
        ));
    }
    // The kernels are built for these widths only (kernels/histogram.cu).
    if let Some(b) = bits.filter(|b| ![16, 8].contains(b)) {
        return Err(unsupported(format!(
            "exchange counters are 16 or 8 bits wide, not {b}"
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
            if exchange_inbox(w.nbins, w.sample_type, k, b, limits).is_some() {
                return Ok(exchange_plan(w, limits, k, b, "forced".into()));
            }
        }
    }
    Err(unsupported(format!(
        "{} bins leave too little shared memory for the inboxes as {}-bit counters over a cluster \
         of {} blocks",
        w.nbins,
        widths
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" or "),
        sizes
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" or "),
    )))
}

pub(super) fn exchange_plan(
    w: &Workload,
    limits: &DeviceLimits,
    size: u32,
    bits: u32,
    reason: String,
) -> Plan {
    Plan {
        strategy: Strategy::Exchange { size, bits },
        // The CUDA layer refines the grid with the driver's active-cluster occupancy.
        grid: (limits.sm_count / size).max(1) * size,
        block: EXCHANGE_THREADS,
        shared_bytes: exchange_shared_bytes(limits) as u32,
        bins_per_block: exchange_bins_per_block(w.nbins, size),
        reason,
    }
}
