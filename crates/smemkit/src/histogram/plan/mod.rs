//! The planner: pure functions from (bins, sample type, weights, device limits) to a printable
//! [`Plan`]. It holds no CUDA types, so it is unit-tested on machines without a GPU and printed by
//! `smemkit plan`. The crossover points are measured on an H100; `bench/NOTES.md` has the numbers.

use std::fmt;

pub use crate::gpu::limits::DeviceLimits;
use crate::sample::SampleType;

mod strategy;
pub use strategy::*;
mod grid;
pub use grid::*;
mod auto;
pub use auto::*;
mod skew;
pub use skew::*;
mod families;
pub use families::*;
mod exchange;
pub use exchange::*;
mod cluster_packed;
pub use cluster_packed::*;
#[cfg(test)]
mod cluster_packed_tests;
#[cfg(test)]
mod exchange_tests;
#[cfg(test)]
mod partition_tests;
#[cfg(test)]
mod shard_tests;
#[cfg(test)]
mod sliced_tests;
#[cfg(test)]
mod tests;

/// Bytes of static shared memory the cluster, packed and global kernels keep beside the dynamic counters
/// (a per-block hot bin and its count); the opt-in limit covers both.
pub const STATIC_SHARED_RESERVE: usize = 16;

/// Floats of each warp's staging ring in the sliced passes that stage their samples
/// (`WIDE_RING_SLOTS` in kernels/hist_walk.cuh).
pub const STAGE_RING_SLOTS: u32 = 64;

/// Bytes of shared memory the staging rings of a block of `block` threads take.
pub fn stage_ring_bytes(block: u32) -> u32 {
    block / 32 * STAGE_RING_SLOTS * 4
}

/// Whether a block's `shared_bytes` of counters leave room for its staging rings.
pub fn stage_rings_fit(shared_bytes: u32, block: u32, limits: &DeviceLimits) -> bool {
    shared_bytes as usize + stage_ring_bytes(block) as usize + STATIC_SHARED_RESERVE
        <= limits.smem_per_block_optin as usize
}

/// Bytes of dynamic shared memory one block can give to counters.
pub fn counter_capacity(limits: &DeviceLimits) -> usize {
    (limits.smem_per_block_optin as usize).saturating_sub(STATIC_SHARED_RESERVE)
}

/// log2 of the bins in one partition bucket: 2^14 u32 counters (64 KiB) per block in the counting
/// pass, so three blocks share an SM.
pub const PARTITION_BITS: u32 = 14;
/// Most buckets the partition passes handle (their counters and offsets live in shared memory).
pub const PARTITION_MAX_BUCKETS: usize = 4096;

/// Threads per block of every histogram kernel, except [`ONE_BLOCK_THREADS`].
pub const BLOCK_THREADS: u32 = 512;
/// Threads per block of the narrow-counter kernels when only one block fits an SM: a 512-thread
/// block alone leaves 16 warps per SM to hide the latency of its loads and returning atomics.
pub const ONE_BLOCK_THREADS: u32 = 1024;

/// A histogram launch, fully decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The strategy.
    pub strategy: Strategy,
    /// Blocks in the grid (a multiple of the cluster size).
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
    /// Bins each block owns (shared: all; cluster: its slice; global: none).
    pub bins_per_block: usize,
    /// Why the planner chose it.
    pub reason: String,
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "strategy      {}", self.strategy)?;
        writeln!(
            f,
            "grid          {} blocks x {} threads",
            self.grid, self.block
        )?;
        writeln!(f, "shared memory {} bytes per block", self.shared_bytes)?;
        if self.bins_per_block > 0 {
            writeln!(f, "bins/block    {}", self.bins_per_block)?;
        }
        write!(f, "why           {}", self.reason)
    }
}

/// What is being histogrammed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// How many bins.
    pub nbins: usize,
    /// The samples' type.
    pub sample_type: SampleType,
    /// Whether there are weights.
    pub weighted: bool,
    /// Samples this GPU will count (its shard), when known; `None` plans as for a large input
    /// (the persistent, occupancy-sized grid), which is what every caller did before.
    pub samples: Option<usize>,
    /// Float samples whose bins need no correction against the edges (bins on a grid of a
    /// power-of-two width, `UniformF32::exact_grid`, `UniformF64::exact_grid`): binning costs about
    /// what integer bins cost, so they are planned as integer samples are (the partition passes
    /// for samples of at most 4 bytes only).
    pub exact_float_bins: bool,
    /// Integer samples whose bins are computed, not read off the value (uniform bins over a
    /// range, explicit edges): each sample's bin costs what a float sample's does.
    pub computed_integer_bins: bool,
}

impl Workload {
    /// A workload of unknown size (planned as a large input).
    pub fn new(nbins: usize, sample_type: SampleType, weighted: bool) -> Workload {
        Workload {
            nbins,
            sample_type,
            weighted,
            samples: None,
            exact_float_bins: false,
            computed_integer_bins: false,
        }
    }

    /// The same workload, with bins that need no correction (see [`Workload::exact_float_bins`]).
    pub fn with_exact_float_bins(self, exact_float_bins: bool) -> Workload {
        Workload {
            exact_float_bins,
            ..self
        }
    }

    /// The same workload, with integer samples binned by computation (see
    /// [`Workload::computed_integer_bins`]).
    pub fn with_computed_integer_bins(self, computed_integer_bins: bool) -> Workload {
        Workload {
            computed_integer_bins,
            ..self
        }
    }

    /// Whether a sample's bin costs little: integer samples in integer bins, or float samples
    /// whose bins need no correction. The partition and sliced passes locate every sample more than
    /// once, which pays only then.
    fn cheap_binning(&self) -> bool {
        if self.sample_type.is_float() {
            self.exact_float_bins
        } else {
            !self.computed_integer_bins
        }
    }

    /// The same workload, `samples` long.
    pub fn with_samples(self, samples: Option<usize>) -> Workload {
        Workload { samples, ..self }
    }

    /// Bytes of one shared-memory counter: u32 counts, f64 weight sums.
    pub fn counter_bytes(&self) -> usize {
        if self.weighted {
            8
        } else {
            4
        }
    }
}

/// The most bins the CUDA engine counts (u32 bin indices, one value kept free).
pub const MAX_CUDA_BINS: usize = u32::MAX as usize - 1;

/// Largest cluster the automatic choice uses: beyond it, the measured global-memory kernel wins.
pub const AUTO_CLUSTER_MAX: u32 = 4;

/// Plans a histogram: the forced strategy if one is given (or an error naming why it cannot run),
/// otherwise the planner's choice.
pub fn plan(
    w: &Workload,
    limits: &DeviceLimits,
    choice: StrategyChoice,
) -> Result<Plan, crate::Error> {
    let unsupported = |strategy: &str, reason: String| crate::Error::StrategyUnsupported {
        strategy: strategy.into(),
        reason,
    };
    // The CUDA engine's bin indices are u32: beyond that no plan can run, and the byte counts
    // below would overflow.
    if w.nbins > MAX_CUDA_BINS {
        return Err(crate::Error::BinsTooLarge {
            what: "the CUDA engine",
            nbins: w.nbins,
            limit: MAX_CUDA_BINS,
        });
    }
    let bytes = w.nbins * w.counter_bytes();
    let smem = counter_capacity(limits);
    let max_cluster = if limits.has_clusters() {
        limits.max_cluster_nonportable
    } else {
        0
    };
    match choice {
        StrategyChoice::Shared => {
            if bytes > smem {
                return Err(unsupported(
                    "shared",
                    format!(
                        "{} bins need {} bytes of counters, one block holds {}",
                        w.nbins, bytes, smem
                    ),
                ));
            }
            Ok(shared_plan(w, limits, "forced".into()))
        }
        StrategyChoice::Packed(bits) => {
            let name = Strategy::Packed { bits }.name();
            if ![16, 8, 4].contains(&bits) {
                return Err(unsupported(
                    &name,
                    "narrow counters are 16, 8 or 4 bits wide".into(),
                ));
            }
            if w.weighted {
                return Err(unsupported(
                    &name,
                    "narrow counters count samples; weighted sums need the f64 counters of shared, \
                     cluster or global"
                        .into(),
                ));
            }
            let bytes = packed_bytes(w.nbins, bits);
            if bytes > smem {
                return Err(unsupported(
                    &name,
                    format!(
                        "{} bins need {} bytes of {}-bit counters, one block holds {}",
                        w.nbins, bytes, bits, smem
                    ),
                ));
            }
            Ok(packed_plan(w, limits, bits, "forced".into()))
        }
        StrategyChoice::Global => Ok(global_plan(limits, "forced".into())),
        StrategyChoice::Partition => partition_plan(w, limits, "forced".into()),
        StrategyChoice::Cluster(size) => {
            if !limits.has_clusters() {
                return Err(unsupported(
                    "cluster",
                    format!(
                        "thread block clusters need compute capability 9.0, the device has {}.{}",
                        limits.compute_capability.0, limits.compute_capability.1
                    ),
                ));
            }
            let size = match size {
                Some(k) => {
                    if !(2..=max_cluster).contains(&k) {
                        return Err(unsupported(
                            "cluster",
                            format!("cluster size {k} is outside 2..={max_cluster}"),
                        ));
                    }
                    k
                }
                None => smallest_cluster(bytes, smem, max_cluster).ok_or_else(|| {
                    unsupported(
                        "cluster",
                        format!(
                            "{} bins need {} bytes, more than {} blocks of {} bytes hold",
                            w.nbins, bytes, max_cluster, smem
                        ),
                    )
                })?,
            };
            let per_block = w.nbins.div_ceil(size as usize);
            if per_block * w.counter_bytes() > smem {
                return Err(unsupported(
                    "cluster",
                    format!(
                        "{} bins over {} blocks need {} bytes per block, one block holds {}",
                        w.nbins,
                        size,
                        per_block * w.counter_bytes(),
                        smem
                    ),
                ));
            }
            Ok(cluster_plan(w, limits, size, "forced".into()))
        }
        StrategyChoice::Exchange { bits, size } => exchange_choice(w, limits, bits, size),
        StrategyChoice::ClusterPacked { bits, size } => {
            cluster_packed_choice(w, limits, bits, size)
        }
        StrategyChoice::Sliced { bits, slices } => sliced_choice(w, limits, bits, slices),
        StrategyChoice::Spill(bits) => spill_choice(w, limits, bits),
        StrategyChoice::Auto => Ok(auto_plan(w, limits)),
    }
    .map(|mut p| {
        let unit = p.strategy.grid_unit();
        if p.strategy != Strategy::Partition {
            p.grid = grid_for_samples(p.grid, unit, w.samples, w.sample_type);
        }
        p
    })
}
