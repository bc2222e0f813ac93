//! The planner: pure functions from (bins, sample type, weights, device limits) to a printable
//! [`Plan`]. It holds no CUDA types, so it is unit-tested on machines without a GPU and printed by
//! `smemkit plan`. The crossover points are measured on an H100; `bench/NOTES.md` has the numbers.

use std::fmt;

use crate::sample::SampleType;

/// Where a GPU histogram keeps its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One private histogram per block in dynamic shared memory.
    Shared,
    /// `Shared` with narrow counters (16 or 8 bits, packed into 32-bit words) whose wraps are
    /// corrected in global memory: more blocks per SM, or more bins in one block. Counts only.
    Packed { bits: u32 },
    /// The bins split across the shared memories of the blocks of a thread block cluster.
    Cluster { size: u32 },
    /// Counters in global memory (they live in L2 while they fit).
    Global,
    /// Samples first partitioned into bucket ranges of `2^PARTITION_BITS` bins, then each range
    /// counted in shared memory.
    Partition,
    /// The bins split across a cluster's blocks as packed narrow counters (`bits` wide); each block
    /// sends the samples of other blocks' bins to their owners in batches through distributed
    /// shared memory, and the owners count them. Counts only.
    Exchange { size: u32, bits: u32 },
    /// The bins cut into `slices` slices of `bits`-wide packed counters (8 or 4), one slice per
    /// block; every block reads the whole input and counts its slice's samples, the blocks of the
    /// different slices reading each tile at about the same time (once from DRAM, `slices` times
    /// from L2). Counts only.
    Sliced { slices: u32, bits: u32 },
}

impl Strategy {
    /// The name used in benchmark rows (`smemkit/<name>`) and on the command line.
    pub fn name(&self) -> String {
        match self {
            Strategy::Shared => "shared".into(),
            Strategy::Packed { bits } => format!("shared{bits}"),
            Strategy::Cluster { size } => format!("cluster{size}"),
            Strategy::Global => "global".into(),
            Strategy::Partition => "partition".into(),
            Strategy::Exchange { size, bits } => format!("exchange{bits}x{size}"),
            Strategy::Sliced { slices, bits } => format!("sliced{bits}x{slices}"),
        }
    }
}

impl Strategy {
    /// Blocks per cluster of the strategy's launches (1: no cluster).
    pub fn cluster_size(&self) -> u32 {
        match self {
            Strategy::Cluster { size } | Strategy::Exchange { size, .. } => *size,
            _ => 1,
        }
    }

    /// What the grid's block count must be a multiple of: the cluster size, or for sliced the
    /// slice count (so that every slice has as many blocks, and they stay in step).
    pub fn grid_unit(&self) -> u32 {
        match self {
            Strategy::Sliced { slices, .. } => *slices,
            s => s.cluster_size(),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The caller's wish: let the planner choose, or force a strategy for experiments and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StrategyChoice {
    #[default]
    Auto,
    Shared,
    /// Packed narrow counters of 16 or 8 bits.
    Packed(u32),
    /// A cluster; `None` lets the planner pick the size.
    Cluster(Option<u32>),
    Global,
    Partition,
    /// The exchange strategy; `None` lets the planner pick the counter width or the cluster size.
    Exchange {
        bits: Option<u32>,
        size: Option<u32>,
    },
    /// The sliced strategy; `None` lets the planner pick the counter width (8 bits) or the
    /// fewest slices that hold the bins.
    Sliced {
        bits: Option<u32>,
        slices: Option<u32>,
    },
}

impl StrategyChoice {
    pub fn parse(text: &str, cluster_size: Option<u32>) -> Result<Self, crate::Error> {
        if let Some(rest) = text.strip_prefix("exchange") {
            return parse_exchange(text, rest, cluster_size);
        }
        if let (Some(rest), None) = (text.strip_prefix("sliced"), cluster_size) {
            return parse_sliced(text, rest);
        }
        match (text, cluster_size) {
            ("auto", None) => Ok(StrategyChoice::Auto),
            ("shared", None) => Ok(StrategyChoice::Shared),
            ("shared16", None) => Ok(StrategyChoice::Packed(16)),
            ("shared8", None) => Ok(StrategyChoice::Packed(8)),
            ("shared4", None) => Ok(StrategyChoice::Packed(4)),
            ("global", None) => Ok(StrategyChoice::Global),
            ("partition", None) => Ok(StrategyChoice::Partition),
            ("cluster", k) => Ok(StrategyChoice::Cluster(k)),
            (
                s @ ("auto" | "shared" | "shared16" | "shared8" | "shared4" | "global" | "partition"),
                Some(_),
            ) => {
                Err(crate::Error::InvalidArgument(format!(
                    "--cluster-size only applies to --strategy cluster, not {s}"
                )))
            }
            _ => Err(crate::Error::InvalidArgument(format!(
                "unknown strategy `{text}` (expected auto, shared, shared16, shared8, cluster, global, \
                 partition, exchange or sliced)"
            ))),
        }
    }
}

/// `sliced`, `sliced8`, `sliced4`, each optionally followed by `x<slices>` (the names
/// [`Strategy::name`] prints).
fn parse_sliced(text: &str, rest: &str) -> Result<StrategyChoice, crate::Error> {
    let bad = || {
        crate::Error::InvalidArgument(format!(
            "unknown strategy `{text}` (sliced strategies: sliced, sliced8, sliced4, optionally \
             with x<slices>, e.g. sliced4x3)"
        ))
    };
    let (bits, slices) = match rest.split_once('x') {
        Some((b, k)) => (b, Some(k.parse::<u32>().map_err(|_| bad())?)),
        None => (rest, None),
    };
    let bits = match bits {
        "" => None,
        "8" => Some(8),
        "4" => Some(4),
        _ => return Err(bad()),
    };
    Ok(StrategyChoice::Sliced { bits, slices })
}

/// `exchange`, `exchange8`, `exchange16`, each optionally followed by `x<cluster size>` (the names
/// [`Strategy::name`] prints) or given the size by `--cluster-size`.
fn parse_exchange(
    text: &str,
    rest: &str,
    cluster_size: Option<u32>,
) -> Result<StrategyChoice, crate::Error> {
    let bad = || {
        crate::Error::InvalidArgument(format!(
            "unknown strategy `{text}` (exchange strategies: exchange, exchange8, exchange16, \
             optionally with x<cluster size>, e.g. exchange8x8)"
        ))
    };
    let (bits, size) = match rest.split_once('x') {
        Some((b, k)) => (b, Some(k.parse::<u32>().map_err(|_| bad())?)),
        None => (rest, None),
    };
    let bits = match bits {
        "" => None,
        "8" => Some(8),
        "16" => Some(16),
        _ => return Err(bad()),
    };
    let size = match (size, cluster_size) {
        (Some(_), Some(_)) => {
            return Err(crate::Error::InvalidArgument(format!(
                "`{text}` names its cluster size; leave out --cluster-size"
            )))
        }
        (a, b) => a.or(b),
    };
    Ok(StrategyChoice::Exchange { bits, size })
}

/// What the planner needs to know about the device (read from it by the CUDA layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    pub sm_count: u32,
    /// Opt-in dynamic shared memory per block, in bytes (232448 on the H100).
    pub smem_per_block_optin: u32,
    pub smem_per_sm: u32,
    /// 0 when the device has no clusters (compute capability below 9.0).
    pub max_cluster_portable: u32,
    pub max_cluster_nonportable: u32,
    pub l2_bytes: u32,
    pub compute_capability: (u32, u32),
}

impl DeviceLimits {
    /// The H100 80GB HBM3 of the device machine (for tests and `smemkit plan` without a GPU).
    pub const H100: DeviceLimits = DeviceLimits {
        sm_count: 132,
        smem_per_block_optin: 232_448,
        smem_per_sm: 233_472,
        max_cluster_portable: 8,
        max_cluster_nonportable: 16,
        l2_bytes: 52_428_800,
        compute_capability: (9, 0),
    };

    pub fn has_clusters(&self) -> bool {
        self.compute_capability.0 >= 9 && self.max_cluster_portable > 1
    }
}

/// Bytes of static shared memory the cluster, packed and global kernels keep beside the dynamic counters
/// (a per-block hot bin and its count); the opt-in limit covers both.
pub const STATIC_SHARED_RESERVE: usize = 16;

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
    pub strategy: Strategy,
    /// Blocks in the grid (a multiple of the cluster size).
    pub grid: u32,
    pub block: u32,
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
    /// Bins each block owns (shared: all; cluster: its slice; global: none).
    pub bins_per_block: usize,
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
    pub nbins: usize,
    pub sample_type: SampleType,
    pub weighted: bool,
    /// Samples this GPU will count (its shard), when known; `None` plans as for a large input
    /// (the persistent, occupancy-sized grid), which is what every caller did before.
    pub samples: Option<usize>,
    /// Float samples whose bins need no correction against the edges (float32 bins from 0 of a
    /// power-of-two width, `UniformF32::exact_power_of_two_width`): binning costs about what
    /// integer bins cost, so they are planned as integer samples are.
    pub exact_float_bins: bool,
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
        }
    }

    /// The same workload, with bins that need no correction (see [`Workload::exact_float_bins`]).
    pub fn with_exact_float_bins(self, exact_float_bins: bool) -> Workload {
        Workload {
            exact_float_bins,
            ..self
        }
    }

    /// Whether a sample's bin costs little: integer samples, or float samples whose bins need no
    /// correction. The partition passes locate every sample twice, which pays only then.
    fn cheap_binning(&self) -> bool {
        !self.sample_type.is_float() || self.exact_float_bins
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
        StrategyChoice::Sliced { bits, slices } => sliced_choice(w, limits, bits, slices),
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
fn samples_per_counter_set(n: usize, grid: u32, cluster: u32, sample_type: SampleType) -> usize {
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
/// This is arithmetic, not a measurement: no GPU could be run when it was written. The 2^28
/// sample workloads the crossovers were measured at are far above it (2^28 samples over at most
/// 528 blocks is 508400 samples per block, against at most 58108 bins in one block), so their
/// plans are unchanged. The threshold errs towards the measured plans: with one sample per bin
/// the shared strategies already lose, and where skewed data touch fewer bins they would win a
/// little below it.
fn small_shard_prefers_global(w: &Workload, candidate: &Plan) -> bool {
    let Some(n) = w.samples else {
        return false;
    };
    match candidate.strategy {
        Strategy::Partition => n < w.nbins,
        Strategy::Shared | Strategy::Packed { .. } => {
            samples_per_counter_set(n, candidate.grid, 1, w.sample_type) < w.nbins
        }
        Strategy::Cluster { size } | Strategy::Exchange { size, .. } => {
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

fn auto_plan(w: &Workload, limits: &DeviceLimits) -> Plan {
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
fn auto_plan_large(w: &Workload, limits: &DeviceLimits) -> Plan {
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
    if let Some(p) = auto_sliced_plan(w, limits) {
        return p;
    }
    // Measured on the H100 at 2^28 samples (bench/NOTES.md, bench/results/). Counts of integer
    // samples: the partition passes beat every other strategy beyond the 4-bit counters' reach
    // (auto_sliced_plan) and beyond one block before them (131072 bins, run 3:
    // 418 GB/s uniform against 341 for clusters of 4 and 316 for global; run 4 sorts each scatter
    // tile in shared memory and stores 16-bit indices, which is what makes them win at 1M bins too).
    // Float samples locate each sample twice in the partition passes, which costs more than it
    // saves while the counters stay in L2 (f32, 131072 bins: 174 against 304 for global); beyond
    // 2^22 bins the counters leave L2 and partition wins for them too.
    let bucketable = plan_partition_ok(w);
    if bucketable && w.cheap_binning() {
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

/// Most slices of 8-bit counters `auto` plans before 4-bit ones take over (H100, f8eb8bb, 2^28
/// int32, uniform GB/s): two slices of 8-bit counters beat one block of 4-bit counters (1215 /
/// 1122 / 1045 against 1181 / 986 / 882 at 262144 / 393216 / 464608 bins), three lose to two of
/// 4-bit (854 against 930 at 524288).
pub const AUTO_SLICED8_MAX_SLICES: usize = 2;
/// Most slices of 4-bit counters `auto` plans: four beat partition (589 against 468 GB/s at
/// 1572864 bins, f8eb8bb); five would read the input five times for ~2300 / 5 GB/s, partition's
/// ~466.
pub const AUTO_SLICED4_MAX_SLICES: usize = 4;

/// `auto`'s plan from where one block of 8-bit counters no longer holds the bins (232304) to four
/// slices of 4-bit counters (1858432 bins): the sliced strategy, two slices of 8-bit counters, then
/// 4-bit ones. Measured on the H100 (f8eb8bb, 2^28 int32, uniform / hot GB/s, the hot figures
/// before the skew probe): sliced8x2 1215 / 1223 at 262144 bins, 1045 / 1167 at 464608; sliced4x2
/// 930 / 1049 at 524288, 786 / 1025 at 786432; sliced4x3 742 / 815 at 1M, 656 / 759 at 1393824;
/// sliced4x4 589 / 637 at 1572864; partition did 465-476 / 364-369 over the range. Counts of
/// samples with cheap binning only: the sliced kernels bin every sample once per slice. A 4-bit
/// counter wraps every 16 counts and each wrap costs a few global atomics, so they assume spread
/// data (2^28 samples over 1M bins in three slices: ~6 counts per bin and block); data piled on few
/// bins goes to global through the skew probe ([`skew_probe_threshold`]).
fn auto_sliced_plan(w: &Workload, limits: &DeviceLimits) -> Option<Plan> {
    if w.weighted || !w.cheap_binning() {
        return None;
    }
    let bits = [
        (8u32, AUTO_SLICED8_MAX_SLICES),
        (4, AUTO_SLICED4_MAX_SLICES),
    ]
    .into_iter()
    .find(|&(bits, most)| w.nbins.div_ceil(packed_max_bins_per_block(limits, bits)) <= most)?
    .0;
    let p = sliced_choice(w, limits, Some(bits), None).ok()?;
    let Strategy::Sliced { slices, .. } = p.strategy else {
        return None;
    };
    Some(Plan {
        reason: format!(
            "{} bins in {slices} slices of {bits}-bit counters, one block each: every block reads \
             the input and counts its slice (measured ahead of partition up to {} slices of 4-bit \
             counters)",
            w.nbins, AUTO_SLICED4_MAX_SLICES
        ),
        ..p
    })
}

/// Beyond this many bins the counters leave L2 and the partition passes take over for float samples.
pub const AUTO_PARTITION_LARGE_MIN: usize = 1 << 22;

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
/// Narrower counters for more blocks per SM paid while a lone block ran 512 threads (9a4c9a7:
/// 16-bit counters with three blocks 2112 / 2122 GB/s at 32768 bins against 1767 / 1766 for one
/// block of u32; 8-bit with three 1476 / 1641 at 65536 against 1401 / 1407 for one block of
/// 16-bit). Since a lone block runs 1024 threads and every plan of at most 1024 threads per SM
/// prefetches its loads, the widest counters win: one block of u32 counters does 2846 / 2816 at
/// 32768 bins and 2763 / 2777 at 58108 (0572220) against 16-bit's 2106 / 2105 and 2173 / 2186; one
/// block of 16-bit counters 2158 / 2160 at 65536 bins and 2062 / 2068 at 98304 (2e0bf17) against
/// 8-bit's 1509 / 1681 and 1448 / 1597.
fn counter_bits(w: &Workload, limits: &DeviceLimits) -> Option<u32> {
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

/// Threads per SM up to which the host launches the prefetching build of the shared-memory kernels
/// (the next pair of 16-byte loads issued before the current pair is counted): with 8-14 more
/// registers (48-64) it fits 1024 threads per SM, and below 48 warps per SM the load latency is
/// what stalls the warps (bench/NOTES.md, run 9).
pub const PREFETCH_MAX_THREADS_PER_SM: u32 = 1024;

/// Whether a plan runs the prefetching build of its kernel: counts (not weighted sums) in shared
/// memory, u32 or packed, with at most [`PREFETCH_MAX_THREADS_PER_SM`] threads per SM.
pub fn prefetch_build(plan: &Plan, limits: &DeviceLimits, weighted: bool) -> bool {
    // 4-bit counters and the sliced kernels have no other build.
    if matches!(
        plan.strategy,
        Strategy::Packed { bits: 4 } | Strategy::Sliced { .. }
    ) {
        return true;
    }
    let counts_in_shared = match plan.strategy {
        Strategy::Packed { .. } => true,
        Strategy::Shared => !weighted,
        _ => false,
    };
    counts_in_shared
        && blocks_per_sm(limits, plan.shared_bytes) * plan.block <= PREFETCH_MAX_THREADS_PER_SM
}

fn plan_partition_ok(w: &Workload) -> bool {
    !w.weighted && w.nbins.div_ceil(1 << PARTITION_BITS) <= PARTITION_MAX_BUCKETS
}

fn smallest_cluster(bytes: usize, smem: usize, max: u32) -> Option<u32> {
    (2..=max).find(|&k| {
        bytes.div_ceil(k as usize) <= smem && (bytes / 4).div_ceil(k as usize) * 4 <= smem
    })
}

/// Blocks that fit one SM at once for a given shared-memory footprint (at most 2048 threads / SM).
fn blocks_per_sm(limits: &DeviceLimits, shared_bytes: u32) -> u32 {
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
fn counting_block_threads(per_sm: u32, counts: bool) -> u32 {
    if per_sm == 1 && counts {
        ONE_BLOCK_THREADS
    } else {
        BLOCK_THREADS
    }
}

fn shared_plan(w: &Workload, limits: &DeviceLimits, reason: String) -> Plan {
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

fn packed_plan(w: &Workload, limits: &DeviceLimits, bits: u32, reason: String) -> Plan {
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

fn cluster_plan(w: &Workload, limits: &DeviceLimits, size: u32, reason: String) -> Plan {
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
fn exchange_shared_bytes(limits: &DeviceLimits) -> usize {
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
fn exchange_choice(
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

fn exchange_plan(
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

fn partition_plan(
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

/// The sliced strategy with `bits`-wide counters (8 unless asked) in `slices` slices, or the fewest
/// that hold the bins; one block of [`ONE_BLOCK_THREADS`] threads (the prefetching loop). The CUDA
/// layer sizes the grid by occupancy, cut to a multiple of the slice count.
fn sliced_choice(
    w: &Workload,
    limits: &DeviceLimits,
    bits: Option<u32>,
    slices: Option<u32>,
) -> Result<Plan, crate::Error> {
    let unsupported = |reason: String| crate::Error::StrategyUnsupported {
        strategy: "sliced".into(),
        reason,
    };
    if w.weighted {
        return Err(unsupported(
            "the sliced kernels count samples in narrow counters; weighted sums use shared, \
             cluster or global"
                .into(),
        ));
    }
    let bits = bits.unwrap_or(8);
    if bits != 8 && bits != 4 {
        return Err(unsupported(format!(
            "sliced counters are 8 or 4 bits wide, not {bits}"
        )));
    }
    let max_per_block = packed_max_bins_per_block(limits, bits);
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
    let shared_bytes = packed_bytes(per_block, bits) as u32;
    let blocks = limits.sm_count * blocks_per_sm(limits, shared_bytes);
    Ok(Plan {
        strategy: Strategy::Sliced {
            slices: slices as u32,
            bits,
        },
        grid: blocks / slices as u32 * slices as u32,
        block: ONE_BLOCK_THREADS,
        shared_bytes,
        bins_per_block: per_block,
        reason: "forced".into(),
    })
}

fn global_plan(limits: &DeviceLimits, reason: String) -> Plan {
    Plan {
        strategy: Strategy::Global,
        grid: limits.sm_count * (2048 / BLOCK_THREADS),
        block: BLOCK_THREADS,
        shared_bytes: 0,
        bins_per_block: 0,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(nbins: usize) -> Workload {
        Workload::new(nbins, SampleType::I32, false)
    }

    #[test]
    fn small_bins_go_to_shared_memory() {
        let p = plan(&w(256), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Shared);
        assert_eq!(p.shared_bytes, 1024);
        assert_eq!(p.grid % DeviceLimits::H100.sm_count, 0);
    }

    #[test]
    fn largest_shared_histogram_fills_the_opt_in_limit() {
        let p = plan(&w(58_108), &DeviceLimits::H100, StrategyChoice::Shared).unwrap();
        assert_eq!(p.grid, 132, "one block per SM at the limit");
        assert_eq!(p.block, ONE_BLOCK_THREADS);
        let weighted = Workload::new(20_000, SampleType::F32, true);
        let p = plan(&weighted, &DeviceLimits::H100, StrategyChoice::Shared).unwrap();
        assert_eq!(
            (p.grid, p.block),
            (132, BLOCK_THREADS),
            "weighted sums keep 512"
        );
        assert!(plan(&w(58_109), &DeviceLimits::H100, StrategyChoice::Shared).is_err());
        // 8-bit counters: one bin per byte of the opt-in limit, less the hot bin's 128 bytes.
        let p = plan(&w(232_304), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!((p.strategy, p.grid), (Strategy::Packed { bits: 8 }, 132));
        let p = plan(&w(232_305), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Sliced { slices: 2, bits: 8 });
        assert!(plan(&w(116_153), &DeviceLimits::H100, StrategyChoice::Packed(16)).is_err());
        assert!(plan(&w(116_152), &DeviceLimits::H100, StrategyChoice::Packed(16)).is_ok());
    }

    #[test]
    fn the_widest_counters_that_fit_one_block() {
        let at = |nbins| {
            let p = plan(&w(nbins), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
            (p.strategy, p.grid, p.block)
        };
        // u32 counters while they fit one block (58108 bins), then 16-bit counters (116152),
        // then 8-bit (232304); one block per SM takes 1024 threads.
        assert_eq!(at(16_384), (Strategy::Shared, 396, BLOCK_THREADS));
        assert_eq!(at(28_928), (Strategy::Shared, 264, BLOCK_THREADS));
        assert_eq!(at(28_929), (Strategy::Shared, 132, ONE_BLOCK_THREADS));
        assert_eq!(at(58_108), (Strategy::Shared, 132, ONE_BLOCK_THREADS));
        assert_eq!(
            at(58_109),
            (Strategy::Packed { bits: 16 }, 132, ONE_BLOCK_THREADS)
        );
        assert_eq!(
            at(116_152),
            (Strategy::Packed { bits: 16 }, 132, ONE_BLOCK_THREADS)
        );
        assert_eq!(
            at(116_153),
            (Strategy::Packed { bits: 8 }, 132, ONE_BLOCK_THREADS)
        );
        assert_eq!(
            at(232_304),
            (Strategy::Packed { bits: 8 }, 132, ONE_BLOCK_THREADS)
        );
        // The prefetching build where an SM holds at most 1024 threads: one block of 1024 or
        // two of 512, not three or four; never for weighted sums.
        let prefetch = |nbins| {
            let p = plan(&w(nbins), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
            prefetch_build(&p, &DeviceLimits::H100, false)
        };
        assert!(prefetch(131_072) && prefetch(98_304) && prefetch(32_768) && prefetch(28_928));
        assert!(!prefetch(16_384) && !prefetch(256));
        let forced = plan(&w(65_536), &DeviceLimits::H100, StrategyChoice::Packed(8)).unwrap();
        assert!(
            !prefetch_build(&forced, &DeviceLimits::H100, false),
            "three blocks of 512"
        );
        let weighted = Workload::new(20_000, SampleType::F32, true);
        let p = plan(&weighted, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert!(!prefetch_build(&p, &DeviceLimits::H100, true));
        // Weighted sums keep their f64 counters, and narrow counters refuse them.
        let ww = Workload::new(1000, SampleType::F32, true);
        assert_eq!(
            plan(&ww, &DeviceLimits::H100, StrategyChoice::Auto)
                .unwrap()
                .strategy,
            Strategy::Shared
        );
        assert!(plan(&ww, &DeviceLimits::H100, StrategyChoice::Packed(8)).is_err());
        assert!(plan(&w(10), &DeviceLimits::H100, StrategyChoice::Packed(2)).is_err());
        assert_eq!(
            StrategyChoice::parse("shared16", None).unwrap(),
            StrategyChoice::Packed(16)
        );
        assert_eq!(Strategy::Packed { bits: 8 }.name(), "shared8");
    }

    #[test]
    fn weighted_counters_take_twice_the_space() {
        let ww = Workload::new(32_768, SampleType::F32, true);
        let p = plan(&ww, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Cluster { size: 2 });
    }

    #[test]
    fn bins_beyond_a_block_follow_the_measured_crossovers() {
        let at = |nbins, t| {
            plan(
                &Workload::new(nbins, t, false),
                &DeviceLimits::H100,
                StrategyChoice::Auto,
            )
            .unwrap()
            .strategy
        };
        assert_eq!(at(131_072, SampleType::I32), Strategy::Packed { bits: 8 });
        assert_eq!(at(131_072, SampleType::F32), Strategy::Packed { bits: 8 });
        assert_eq!(
            at(262_144, SampleType::I32),
            Strategy::Sliced { slices: 2, bits: 8 }
        );
        assert_eq!(
            at(464_608, SampleType::I32),
            Strategy::Sliced { slices: 2, bits: 8 }
        );
        assert_eq!(
            at(464_609, SampleType::I32),
            Strategy::Sliced { slices: 2, bits: 4 }
        );
        assert_eq!(at(262_144, SampleType::F32), Strategy::Global);
        assert_eq!(
            at(1 << 20, SampleType::I32),
            Strategy::Sliced { slices: 3, bits: 4 }
        );
        assert_eq!(
            at(4 * 464_608, SampleType::I32),
            Strategy::Sliced { slices: 4, bits: 4 }
        );
        assert_eq!(at(4 * 464_608 + 1, SampleType::I32), Strategy::Partition);
        assert_eq!(at(1 << 20, SampleType::F32), Strategy::Global);
        // Float bins that need no correction bin as cheaply as integers: planned as them.
        let exact = |nbins| {
            let w = Workload::new(nbins, SampleType::F32, false).with_exact_float_bins(true);
            plan(&w, &DeviceLimits::H100, StrategyChoice::Auto)
                .unwrap()
                .strategy
        };
        assert_eq!(exact(1 << 20), Strategy::Sliced { slices: 3, bits: 4 });
        assert_eq!(exact(1 << 21), Strategy::Partition);
        assert_eq!(at(1 << 24, SampleType::F32), Strategy::Partition);
        assert_eq!(at(1 << 24, SampleType::I32), Strategy::Partition);
        let p = plan(&w(1 << 27), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(
            p.strategy,
            Strategy::Global,
            "beyond the partition's buckets"
        );
        assert_eq!(p.shared_bytes, 0);
    }

    #[test]
    fn forced_strategies_are_checked() {
        assert!(plan(&w(100_000), &DeviceLimits::H100, StrategyChoice::Shared).is_err());
        assert!(plan(
            &w(1 << 20),
            &DeviceLimits::H100,
            StrategyChoice::Cluster(Some(2))
        )
        .is_err());
        let p = plan(
            &w(900_000),
            &DeviceLimits::H100,
            StrategyChoice::Cluster(None),
        )
        .unwrap();
        assert_eq!(p.strategy, Strategy::Cluster { size: 16 });
        assert_eq!(p.grid % 16, 0);
        assert!(plan(
            &w(1 << 20),
            &DeviceLimits::H100,
            StrategyChoice::Cluster(None)
        )
        .is_err());
        assert!(plan(
            &w(10),
            &DeviceLimits::H100,
            StrategyChoice::Cluster(Some(17))
        )
        .is_err());
        let old = DeviceLimits {
            compute_capability: (8, 0),
            max_cluster_portable: 0,
            max_cluster_nonportable: 0,
            ..DeviceLimits::H100
        };
        assert!(plan(&w(10), &old, StrategyChoice::Cluster(None)).is_err());
        assert_eq!(
            plan(&w(1 << 27), &old, StrategyChoice::Auto)
                .unwrap()
                .strategy,
            Strategy::Global
        );
    }

    #[test]
    fn strategy_names_parse_back() {
        assert_eq!(
            StrategyChoice::parse("cluster", Some(4)).unwrap(),
            StrategyChoice::Cluster(Some(4))
        );
        assert!(StrategyChoice::parse("shared", Some(4)).is_err());
        assert!(StrategyChoice::parse("bogus", None).is_err());
    }
}

#[cfg(test)]
mod exchange_tests {
    use super::*;

    fn forced(nbins: usize, bits: Option<u32>, size: Option<u32>) -> Result<Plan, crate::Error> {
        plan(
            &Workload::new(nbins, SampleType::I32, false),
            &DeviceLimits::H100,
            StrategyChoice::Exchange { bits, size },
        )
    }

    #[test]
    fn exchange_names_parse_back() {
        for (text, k, bits, size) in [
            ("exchange", None, None, None),
            ("exchange8", None, Some(8), None),
            ("exchange16", Some(4), Some(16), Some(4)),
            ("exchange8x16", None, Some(8), Some(16)),
        ] {
            assert_eq!(
                StrategyChoice::parse(text, k).unwrap(),
                StrategyChoice::Exchange { bits, size },
                "{text}"
            );
        }
        for bad in ["exchange4", "exchange8x", "exchange8y8", "exchangex"] {
            assert!(StrategyChoice::parse(bad, None).is_err(), "{bad}");
        }
        assert!(StrategyChoice::parse("exchange8x8", Some(8)).is_err());
        let p = forced(1 << 20, Some(8), Some(8)).unwrap();
        assert_eq!(
            StrategyChoice::parse(&p.strategy.name(), None).unwrap(),
            StrategyChoice::Exchange {
                bits: Some(8),
                size: Some(8)
            }
        );
    }

    #[test]
    fn the_smallest_cluster_that_leaves_the_inboxes_room() {
        // 1M bins: 8-bit counters over 8 blocks (128 KiB each) leave 1578 entries per source and
        // phase, above the 1280 (5/4 of 8192 samples / 8) asked for; 16-bit would need 16 blocks.
        let p = forced(1 << 20, None, None).unwrap();
        assert_eq!(p.strategy, Strategy::Exchange { size: 8, bits: 8 });
        assert_eq!((p.block, p.bins_per_block), (EXCHANGE_THREADS, 131_072));
        assert_eq!(
            exchange_inbox(1 << 20, SampleType::I32, 8, 8, &DeviceLimits::H100),
            Some(1578)
        );
        assert_eq!(
            forced(1 << 20, Some(16), None).unwrap().strategy,
            Strategy::Exchange { size: 16, bits: 16 }
        );
        assert_eq!(
            forced(2_000_000, None, None).unwrap().strategy,
            Strategy::Exchange { size: 16, bits: 8 }
        );
        // The slices are multiples of 32 bins and cover every bin.
        let p = forced(1_000_003, None, Some(8)).unwrap();
        assert_eq!(p.bins_per_block % 32, 0);
        assert!(p.bins_per_block * 8 >= 1_000_003);
        // Counters plus inboxes never exceed the opt-in limit with the static part.
        assert!(p.shared_bytes as usize + EXCHANGE_STATIC_SHARED <= 232_448);
    }

    #[test]
    fn exchange_refuses_what_it_cannot_hold() {
        for (nbins, bits, size) in [
            (4usize << 20, None, None),
            (1 << 20, Some(8), Some(4)),
            (1 << 20, Some(8), Some(32)),
            (1000, Some(8), Some(1)),
        ] {
            assert!(
                matches!(
                    forced(nbins, bits, size),
                    Err(crate::Error::StrategyUnsupported { .. })
                ),
                "{nbins} {bits:?} {size:?}"
            );
        }
        let weighted = plan(
            &Workload::new(1000, SampleType::I32, true),
            &DeviceLimits::H100,
            StrategyChoice::Exchange {
                bits: None,
                size: None,
            },
        );
        assert!(matches!(
            weighted,
            Err(crate::Error::StrategyUnsupported { .. })
        ));
        let no_clusters = DeviceLimits {
            compute_capability: (8, 0),
            ..DeviceLimits::H100
        };
        assert!(plan(
            &Workload::new(1000, SampleType::I32, false),
            &no_clusters,
            StrategyChoice::Exchange {
                bits: None,
                size: None
            },
        )
        .is_err());
    }
}

#[cfg(test)]
mod partition_tests {
    use super::*;

    #[test]
    fn partition_counts_only_and_is_bounded() {
        let w = |nbins, weighted| Workload::new(nbins, SampleType::I32, weighted);
        let p = plan(
            &w(1 << 24, false),
            &DeviceLimits::H100,
            StrategyChoice::Partition,
        )
        .unwrap();
        assert_eq!(p.strategy, Strategy::Partition);
        assert_eq!(p.bins_per_block, 1 << PARTITION_BITS);
        assert!(plan(
            &w(1 << 20, true),
            &DeviceLimits::H100,
            StrategyChoice::Partition
        )
        .is_err());
        let too_many = (PARTITION_MAX_BUCKETS << PARTITION_BITS) + 1;
        assert!(plan(
            &w(too_many, false),
            &DeviceLimits::H100,
            StrategyChoice::Partition
        )
        .is_err());
        assert_eq!(
            StrategyChoice::parse("partition", None).unwrap(),
            StrategyChoice::Partition
        );
    }
}

#[cfg(test)]
mod shard_tests {
    use super::*;

    fn at(nbins: usize, t: SampleType, weighted: bool, n: Option<usize>) -> Plan {
        plan(
            &Workload::new(nbins, t, weighted).with_samples(n),
            &DeviceLimits::H100,
            StrategyChoice::Auto,
        )
        .unwrap()
    }

    #[test]
    fn full_size_workloads_plan_as_before() {
        for (nbins, t, weighted) in [
            (256, SampleType::I32, false),
            (58_108, SampleType::I32, false),
            (131_072, SampleType::I32, false),
            (131_072, SampleType::F32, false),
            (1 << 20, SampleType::F32, false),
            (1 << 24, SampleType::F32, false),
            (1 << 27, SampleType::I32, false),
            (32_768, SampleType::F32, true),
            (4096, SampleType::U8, false),
        ] {
            assert_eq!(
                at(nbins, t, weighted, Some(1 << 28)),
                at(nbins, t, weighted, None),
                "{nbins} bins of {t}"
            );
        }
    }

    #[test]
    fn grids_are_cut_to_the_shard() {
        assert_eq!(block_tile(SampleType::I32), 2048);
        assert_eq!(block_tile(SampleType::F64), 1024);
        assert_eq!(block_tile(SampleType::U8), 8192);
        let p = at(256, SampleType::I32, false, Some(5000));
        assert_eq!((p.strategy, p.grid), (Strategy::Shared, 3));
        let p = at(256, SampleType::I32, false, Some(0));
        assert_eq!(p.grid, 1, "at least one block");
        // Large enough to fill the persistent grid: unchanged.
        let p = at(256, SampleType::I32, false, Some(1 << 22));
        assert_eq!(p.grid, 132 * 4);
        assert_eq!(grid_for_samples(396, 4, Some(5000), SampleType::F32), 4);
        assert_eq!(grid_for_samples(396, 4, Some(0), SampleType::F32), 4);
        assert_eq!(grid_for_samples(396, 4, None, SampleType::F32), 396);
        assert_eq!(
            grid_for_samples(396, 4, Some(1 << 30), SampleType::F32),
            396
        );
        // Forced strategies are cut too.
        let p = plan(
            &Workload::new(100, SampleType::I32, false).with_samples(Some(10)),
            &DeviceLimits::H100,
            StrategyChoice::Global,
        )
        .unwrap();
        assert_eq!(p.grid, 1);
    }

    #[test]
    fn tiny_shards_count_in_global_memory() {
        // 58108 bins of u32 counters: 132 blocks, so 132 x 58108 = 7.7M samples is the
        // threshold of one sample per counter.
        let p = at(58_108, SampleType::I32, false, Some(4096));
        assert_eq!((p.strategy, p.grid), (Strategy::Global, 2));
        assert!(p.reason.contains("4096 samples"), "{}", p.reason);
        assert_eq!(
            at(58_108, SampleType::I32, false, Some(1 << 20)).strategy,
            Strategy::Global
        );
        assert_eq!(
            at(58_108, SampleType::I32, false, Some(132 * 58_108)).strategy,
            Strategy::Shared
        );
        assert_eq!(
            at(58_108, SampleType::I32, false, Some(132 * 58_108 - 1)).strategy,
            Strategy::Global
        );
        // Few bins: even a shard of one tile keeps shared memory.
        assert_eq!(
            at(256, SampleType::I32, false, Some(2048)).strategy,
            Strategy::Shared
        );
        assert_eq!(
            at(256, SampleType::I32, false, Some(100)).strategy,
            Strategy::Global
        );
        // Partition: fewer samples than bins.
        assert_eq!(
            at(1 << 21, SampleType::I32, false, Some(2_000_000)).strategy,
            Strategy::Global
        );
        assert_eq!(
            at(1 << 21, SampleType::I32, false, Some(1 << 21)).strategy,
            Strategy::Partition
        );
        // The sliced plans: fewer samples per block than bins in its slice.
        assert_eq!(
            at(262_144, SampleType::I32, false, Some(132 * 131_071)).strategy,
            Strategy::Global
        );
        assert_eq!(
            at(262_144, SampleType::I32, false, Some(132 * 131_072)).strategy,
            Strategy::Sliced { slices: 2, bits: 8 }
        );
        assert_eq!(
            at(1 << 20, SampleType::I32, false, Some(1 << 20)).strategy,
            Strategy::Global
        );
        assert_eq!(
            at(1 << 20, SampleType::I32, false, Some(1 << 28)).strategy,
            Strategy::Sliced { slices: 3, bits: 4 }
        );
        // Weighted clusters of 2: 198 clusters own 32768 sums each.
        assert_eq!(
            at(32_768, SampleType::F32, true, Some(1 << 20)).strategy,
            Strategy::Global
        );
        assert_eq!(
            at(32_768, SampleType::F32, true, Some(198 * 32_768)).strategy,
            Strategy::Cluster { size: 2 }
        );
    }

    #[test]
    fn the_skew_threshold_follows_the_measured_crossovers() {
        // Crossovers measured at 0.30 (131072 bins), 0.26 (1M) and 0.78 (16M): the standard hot
        // workload (7/8 of the samples in one bin) goes to global everywhere, uniform data never.
        for nbins in [131_072, 1 << 20, 1 << 24] {
            let t = hot_share_for_global(nbins);
            assert!(t < 7.0 / 8.0 && t > 0.25, "{nbins}: {t}");
        }
        assert!(hot_share_for_global(1 << 20) < 0.4);
        assert!(hot_share_for_global(1 << 24) > 0.78);
    }

    #[test]
    fn skew_probes_guard_the_plans_that_hot_data_slows() {
        let at = |nbins| {
            let w = Workload::new(nbins, SampleType::I32, false);
            let p = plan(&w, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
            skew_probe_threshold(&p, &w, StrategyChoice::Auto)
        };
        assert_eq!(at(32_768), None);
        assert_eq!(at(98_304), None, "two blocks of 8-bit counters per SM");
        assert_eq!(at(131_072), None, "one block of 8-bit counters per SM");
        assert_eq!(at(232_304), None);
        assert_eq!(at(262_144), Some(hot_share_for_global_sliced(2)));
        assert_eq!(at(1 << 20), Some(hot_share_for_global_sliced(3)));
        // The standard hot workload goes to global from every sliced plan, uniform data never.
        for slices in 1..=4 {
            let t = hot_share_for_global_sliced(slices);
            assert!(t > 0.5 && t < 7.0 / 8.0, "{slices}: {t}");
        }
        assert_eq!(at(1 << 21), Some(hot_share_for_global(1 << 21)));
        // Only `auto` probes, and only inputs long enough to pay for it.
        let w = Workload::new(131_072, SampleType::I32, false);
        let p = plan(&w, &DeviceLimits::H100, StrategyChoice::Packed(8)).unwrap();
        assert_eq!(
            skew_probe_threshold(&p, &w, StrategyChoice::Packed(8)),
            None
        );
        let short = Workload::new(1 << 21, SampleType::I32, false)
            .with_samples(Some(SKEW_PROBE_MIN_SAMPLES - 1));
        let p = plan(&short, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Partition);
        assert_eq!(skew_probe_threshold(&p, &short, StrategyChoice::Auto), None);
    }

    #[test]
    fn the_commonest_share_is_exact_above_a_third() {
        assert_eq!(commonest_share(&[]), 0.0);
        assert_eq!(commonest_share(&[5, 1, 5, 2]), 0.5);
        // Samples in no bin are not a hot bin, however many.
        assert_eq!(commonest_share(&[u32::MAX, u32::MAX, u32::MAX, 7]), 0.25);
        let hot: Vec<u32> = (0..4096).map(|i| if i % 8 == 0 { i } else { 7 }).collect();
        assert_eq!(commonest_share(&hot), 3584.0 / 4096.0);
        // A hot bin placed last, after many distinct ones, is still found.
        let late: Vec<u32> = (0..600).chain(std::iter::repeat(9999).take(400)).collect();
        assert_eq!(commonest_share(&late), 0.4);
        // Below a third the share may be under-reported, never over.
        let spread: Vec<u32> = (0..900).map(|i| i % 3).collect();
        assert!(commonest_share(&spread) <= 1.0 / 3.0 + 1e-12);
    }

    proptest::proptest! {
        #[test]
        fn the_commonest_share_matches_counting_above_a_third(
            bins in proptest::collection::vec(
                proptest::prop_oneof![0u32..4, proptest::strategy::Just(u32::MAX)],
                0..300,
            )
        ) {
            let mut counts = std::collections::HashMap::new();
            for &b in bins.iter().filter(|&&b| b != u32::MAX) {
                *counts.entry(b).or_insert(0usize) += 1;
            }
            let max = counts.values().copied().max().unwrap_or(0) as f64 / bins.len().max(1) as f64;
            let got = commonest_share(&bins);
            proptest::prop_assert!(got <= max + 1e-12);
            if max > 1.0 / 3.0 {
                proptest::prop_assert_eq!(got, max);
            }
        }
    }
}

#[cfg(test)]
mod sliced_tests {
    use super::*;

    const H100: DeviceLimits = DeviceLimits::H100;

    fn sliced(nbins: usize, bits: Option<u32>, slices: Option<u32>) -> Result<Plan, crate::Error> {
        plan(
            &Workload::new(nbins, SampleType::I32, false),
            &H100,
            StrategyChoice::Sliced { bits, slices },
        )
    }

    #[test]
    fn sliced_names_parse_back() {
        for (text, bits, slices) in [
            ("sliced", None, None),
            ("sliced8", Some(8), None),
            ("sliced4x3", Some(4), Some(3)),
            ("slicedx5", None, Some(5)),
        ] {
            assert_eq!(
                StrategyChoice::parse(text, None).unwrap(),
                StrategyChoice::Sliced { bits, slices },
                "{text}"
            );
        }
        for bad in ["slicedy", "sliced16", "sliced8x", "sliced4x-1"] {
            assert!(StrategyChoice::parse(bad, None).is_err(), "{bad}");
        }
        assert!(StrategyChoice::parse("sliced", Some(4)).is_err());
        let s = Strategy::Sliced { slices: 5, bits: 8 };
        assert_eq!(s.name(), "sliced8x5");
        assert_eq!(
            StrategyChoice::parse(&s.name(), None).unwrap(),
            StrategyChoice::Sliced {
                bits: Some(8),
                slices: Some(5)
            }
        );
        assert_eq!(
            StrategyChoice::parse("shared4", None).unwrap(),
            StrategyChoice::Packed(4)
        );
    }

    #[test]
    fn the_fewest_slices_hold_the_bins() {
        for bits in [8u32, 4] {
            let max = packed_max_bins_per_block(&H100, bits);
            assert!(packed_bytes(max, bits) <= counter_capacity(&H100));
            assert!(packed_bytes(max + (32 / bits) as usize, bits) > counter_capacity(&H100));
            for (nbins, slices8, slices4) in [
                (100, 1, 1),
                (232_304, 1, 1),
                (232_305, 2, 1),
                (464_608, 2, 1),
                (464_609, 3, 2),
                (1 << 20, 5, 3),
                (1 << 22, 19, 10),
            ] {
                let slices = if bits == 8 { slices8 } else { slices4 };
                let p = sliced(nbins, Some(bits), None).unwrap();
                assert_eq!(
                    p.strategy,
                    Strategy::Sliced { slices, bits },
                    "{nbins} bins"
                );
                assert_eq!(p.bins_per_block, nbins.div_ceil(slices as usize));
                assert_eq!(
                    packed_bytes(p.bins_per_block, bits),
                    p.shared_bytes as usize
                );
                assert!(p.shared_bytes as usize <= counter_capacity(&H100));
                assert_eq!(
                    p.grid % slices,
                    0,
                    "{nbins} bins: every slice as many blocks"
                );
                assert!(p.grid >= slices);
                assert_eq!(p.block, ONE_BLOCK_THREADS);
                assert!(prefetch_build(&p, &H100, false));
            }
        }
        // 1M bins in 8-bit counters: five slices of 209716 bins, 26 blocks each on 132 SMs.
        assert_eq!(sliced(1 << 20, None, None).unwrap().grid, 130);
    }

    #[test]
    fn sliced_refuses_what_it_cannot_do() {
        assert!(
            sliced(1 << 20, None, Some(4)).is_err(),
            "too few slices for 1M bins"
        );
        assert!(sliced(1 << 20, Some(4), Some(3)).is_ok());
        assert!(sliced(1 << 20, Some(16), None).is_err(), "no 16-bit build");
        assert!(sliced(2, None, Some(3)).is_err(), "more slices than bins");
        assert!(
            sliced(1 << 20, None, Some(133)).is_err(),
            "more slices than SMs"
        );
        let weighted = plan(
            &Workload::new(1000, SampleType::I32, true),
            &H100,
            StrategyChoice::Sliced {
                bits: None,
                slices: None,
            },
        );
        assert!(weighted.is_err());
        // Forced extra slices are allowed where there are bins and SMs for them.
        let p = sliced(3000, None, Some(5)).unwrap();
        assert_eq!(p.bins_per_block, 600);
        assert_eq!(p.grid % 5, 0);
        // The slice count the kernel derives (bins over bins per slice) is the plan's.
        let p = sliced(10, None, Some(6)).unwrap();
        assert_eq!(
            (p.strategy, p.bins_per_block),
            (Strategy::Sliced { slices: 5, bits: 8 }, 2)
        );
        assert_eq!(p.grid % 5, 0);
    }

    #[test]
    fn a_small_shard_keeps_whole_slices() {
        let choice = StrategyChoice::Sliced {
            bits: None,
            slices: None,
        };
        let w = Workload::new(1 << 20, SampleType::I32, false).with_samples(Some(10_000_000));
        assert_eq!(plan(&w, &H100, choice).unwrap().grid % 5, 0);
        let tiny = Workload::new(1 << 20, SampleType::I32, false).with_samples(Some(100));
        let p = plan(&tiny, &H100, choice).unwrap();
        assert_eq!(p.grid, 5, "at least one block per slice");
    }

    proptest::proptest! {
        /// Every bin count of the sliced range gets a sliced plan that holds its bins: the widths
        /// and slice counts `auto` allows, counters within one block's shared memory, a grid of
        /// whole slices, and the skew probe in front.
        #[test]
        fn auto_sliced_plans_hold_their_bins(nbins in 232_305usize..=4 * 464_608) {
            let w = Workload::new(nbins, SampleType::I32, false);
            let p = plan(&w, &H100, StrategyChoice::Auto).unwrap();
            let Strategy::Sliced { slices, bits } = p.strategy else {
                panic!("{nbins} bins: {}", p.strategy);
            };
            let most = if bits == 8 { AUTO_SLICED8_MAX_SLICES } else { AUTO_SLICED4_MAX_SLICES };
            proptest::prop_assert!(slices as usize <= most);
            proptest::prop_assert!(p.bins_per_block * slices as usize >= nbins);
            proptest::prop_assert!(p.bins_per_block * (slices as usize - 1) < nbins);
            proptest::prop_assert!(p.shared_bytes as usize <= counter_capacity(&H100));
            proptest::prop_assert_eq!(p.grid % slices, 0);
            proptest::prop_assert!(skew_probe_threshold(&p, &w, StrategyChoice::Auto).is_some());
        }
    }

    #[test]
    fn four_bit_counters_hold_twice_the_bins_of_eight() {
        let w = Workload::new(400_000, SampleType::I32, false);
        let p = plan(&w, &H100, StrategyChoice::Packed(4)).unwrap();
        assert_eq!(p.strategy, Strategy::Packed { bits: 4 });
        assert_eq!(p.shared_bytes as usize, packed_bytes(400_000, 4));
        assert_eq!((p.grid, p.block), (132, ONE_BLOCK_THREADS));
        assert!(plan(&w, &H100, StrategyChoice::Packed(8)).is_err());
        assert!(plan(&w.with_samples(None), &H100, StrategyChoice::Packed(2)).is_err());
        let small = plan(
            &Workload::new(3000, SampleType::I32, false),
            &H100,
            StrategyChoice::Packed(4),
        )
        .unwrap();
        assert_eq!(
            small.block, ONE_BLOCK_THREADS,
            "4-bit counters have only the 1024-thread build"
        );
    }
}
