//! Grid sizes: how many blocks a plan launches for a run of a given length.

use super::*;

/// Samples one block consumes in one step of the grid-stride loop: one 16-byte load per thread
/// (`process` in kernels/histogram.cu). A grid of more blocks than `ceil(n / tile)` has blocks
/// that count nothing yet still zero and flush their counters.
pub fn block_tile(sample_type: SampleType) -> usize {
    BLOCK_THREADS as usize * (16 / sample_type.size()).max(1)
}

/// `grid` (blocks, a multiple of `cluster`) cut down to the blocks `samples` can keep busy:
/// at most one block per [`block_tile`] of samples, rounded up to whole clusters, at least one
/// cluster. Unchanged when the size is unknown or the shard fills the grid. Only for the
/// grid-stride kernels (shared, cluster, global); the partition passes size their own grids.
pub fn grid_for_samples(
    grid: u32,
    cluster: u32,
    samples: Option<usize>,
    sample_type: SampleType,
) -> u32 {
    let Some(n) = samples else {
        return grid;
    };
    let cluster = cluster.max(1);
    let needed = n.div_ceil(block_tile(sample_type)).max(1);
    let needed = needed.div_ceil(cluster as usize) * cluster as usize;
    if needed >= grid as usize {
        grid
    } else {
        needed as u32
    }
}

/// Samples each block (each cluster, for clusters) of a strategy's grid counts on average, once
/// the grid is cut to the shard ([`grid_for_samples`]).
pub(super) fn samples_per_counter_set(
    n: usize,
    grid: u32,
    cluster: u32,
    sample_type: SampleType,
) -> usize {
    let cluster = cluster.max(1);
    let grid = grid_for_samples(grid, cluster, Some(n), sample_type);
    n / (grid / cluster).max(1) as usize
}

/// The small-shard rule. Every strategy that keeps counters in shared memory (shared, cluster,
/// partition) pays per block (per cluster) a fixed cost proportional to the bins it owns: zeroing
/// them, scanning them at the end, and one global atomic per bin its samples touched. While a
/// block counts fewer samples than it has bins, spread data touches about one new bin per sample,
/// so its flush alone issues about one global atomic per sample: exactly the atomics the global
/// kernel issues for the same samples (fewer, after its warp aggregation), and the shared-memory
/// atomics, the zeroing and the scan of `nbins` counters come on top; the global strategy adds
/// only one fold pass over the `nbins` u32 counters, shared by the whole grid. So below one
/// sample per owned counter the shared-memory strategies cannot win, and `global` is chosen:
/// - shared and cluster: when the samples per block (per cluster: the cluster owns all bins) of
///   the grid cut to the shard are fewer than `nbins`;
/// - partition: its counting pass gives each bucket of 2^PARTITION_BITS bins to one block, which
///   zeroes and flushes 2^PARTITION_BITS counters, and the samples also make a round trip
///   through global memory to be scattered; with fewer samples than bins the buckets hold under
///   one sample per counter on average, so the same argument applies (n < nbins).
///
/// This is arithmetic, not a measurement. The 2^28
/// sample workloads the crossovers were measured at are far above it (2^28 samples over at most
/// 528 blocks is 508400 samples per block, against at most 58108 bins in one block), so their
/// plans are unchanged. The threshold errs towards the measured plans: with one sample per bin
/// the shared strategies already lose, and where skewed data touch fewer bins they would win a
/// little below it.
pub(super) fn small_shard_prefers_global(w: &Workload, candidate: &Plan) -> bool {
    let Some(n) = w.samples else {
        return false;
    };
    match candidate.strategy {
        Strategy::Partition => n < w.nbins,
        Strategy::Shared | Strategy::Packed { .. } | Strategy::Spill { .. } => {
            samples_per_counter_set(n, candidate.grid, 1, w.sample_type) < w.nbins
        }
        Strategy::Cluster { size }
        | Strategy::Exchange { size, .. }
        | Strategy::ClusterPacked { size, .. } => {
            samples_per_counter_set(n, candidate.grid, size, w.sample_type) < w.nbins
        }
        // Each block counts about n / grid samples (its share of its slice's) into one slice.
        Strategy::Sliced { slices, .. } => {
            let grid = grid_for_samples(candidate.grid, slices, Some(n), w.sample_type);
            n / (grid.max(1) as usize) < candidate.bins_per_block
        }
        Strategy::Global => false,
    }
}
