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
    /// The bins split across the shared memories of the blocks of a thread block cluster.
    Cluster { size: u32 },
    /// Counters in global memory (they live in L2 while they fit).
    Global,
    /// Samples first partitioned into bucket ranges of `2^PARTITION_BITS` bins, then each range
    /// counted in shared memory.
    Partition,
}

impl Strategy {
    /// The name used in benchmark rows (`smemkit/<name>`) and on the command line.
    pub fn name(&self) -> String {
        match self {
            Strategy::Shared => "shared".into(),
            Strategy::Cluster { size } => format!("cluster{size}"),
            Strategy::Global => "global".into(),
            Strategy::Partition => "partition".into(),
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
    /// A cluster; `None` lets the planner pick the size.
    Cluster(Option<u32>),
    Global,
    Partition,
}

impl StrategyChoice {
    pub fn parse(text: &str, cluster_size: Option<u32>) -> Result<Self, crate::Error> {
        match (text, cluster_size) {
            ("auto", None) => Ok(StrategyChoice::Auto),
            ("shared", None) => Ok(StrategyChoice::Shared),
            ("global", None) => Ok(StrategyChoice::Global),
            ("partition", None) => Ok(StrategyChoice::Partition),
            ("cluster", k) => Ok(StrategyChoice::Cluster(k)),
            (s @ ("auto" | "shared" | "global" | "partition"), Some(_)) => {
                Err(crate::Error::InvalidArgument(format!(
                    "--cluster-size only applies to --strategy cluster, not {s}"
                )))
            }
            _ => Err(crate::Error::InvalidArgument(format!(
                "unknown strategy `{text}` (expected auto, shared, cluster, global or partition)"
            ))),
        }
    }
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

/// Bytes of static shared memory the cluster and global kernels keep beside the dynamic counters
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

/// Threads per block of every histogram kernel.
pub const BLOCK_THREADS: u32 = 512;

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
}

impl Workload {
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
        StrategyChoice::Auto => Ok(auto_plan(w, limits)),
    }
}

fn auto_plan(w: &Workload, limits: &DeviceLimits) -> Plan {
    let bytes = w.nbins * w.counter_bytes();
    let smem = counter_capacity(limits);
    if bytes <= smem {
        return shared_plan(
            w,
            limits,
            format!(
                "{} bytes of counters fit one block's {} bytes of shared memory",
                bytes, smem
            ),
        );
    }
    // Measured on the H100 at 2^28 samples (bench/NOTES.md, bench/results/). Counts of integer
    // samples: the partition passes beat every other strategy beyond one block (131072 bins, run 3:
    // 418 GB/s uniform against 341 for clusters of 4 and 316 for global; run 4 sorts each scatter
    // tile in shared memory and stores 16-bit indices, which is what makes them win at 1M bins too).
    // Float samples locate each sample twice in the partition passes, which costs more than it
    // saves while the counters stay in L2 (f32, 131072 bins: 174 against 304 for global); beyond
    // 2^22 bins the counters leave L2 and partition wins for them too.
    let bucketable = plan_partition_ok(w);
    if bucketable && !w.sample_type.is_float() {
        return partition_plan(
            w,
            limits,
            format!(
                "{} bins of integer samples beyond one block: partition passes measured fastest",
                w.nbins
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

/// Beyond this many bins the counters leave L2 and the partition passes take over for float samples.
pub const AUTO_PARTITION_LARGE_MIN: usize = 1 << 22;

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

fn shared_plan(w: &Workload, limits: &DeviceLimits, reason: String) -> Plan {
    let shared_bytes = (w.nbins * w.counter_bytes()) as u32;
    Plan {
        strategy: Strategy::Shared,
        grid: limits.sm_count * blocks_per_sm(limits, shared_bytes),
        block: BLOCK_THREADS,
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
        Workload {
            nbins,
            sample_type: SampleType::I32,
            weighted: false,
        }
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
        let p = plan(&w(58_108), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Shared);
        assert_eq!(p.grid, 132, "one block per SM at the limit");
        let p = plan(&w(58_109), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Partition);
    }

    #[test]
    fn weighted_counters_take_twice_the_space() {
        let ww = Workload {
            nbins: 32_768,
            sample_type: SampleType::F32,
            weighted: true,
        };
        let p = plan(&ww, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Cluster { size: 2 });
    }

    #[test]
    fn bins_beyond_a_block_follow_the_measured_crossovers() {
        let at = |nbins, t| {
            plan(
                &Workload {
                    nbins,
                    sample_type: t,
                    weighted: false,
                },
                &DeviceLimits::H100,
                StrategyChoice::Auto,
            )
            .unwrap()
            .strategy
        };
        assert_eq!(at(131_072, SampleType::I32), Strategy::Partition);
        assert_eq!(at(131_072, SampleType::F32), Strategy::Global);
        assert_eq!(at(1 << 20, SampleType::I32), Strategy::Partition);
        assert_eq!(at(1 << 20, SampleType::F32), Strategy::Global);
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
mod partition_tests {
    use super::*;

    #[test]
    fn partition_counts_only_and_is_bounded() {
        let w = |nbins, weighted| Workload {
            nbins,
            sample_type: SampleType::I32,
            weighted,
        };
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
