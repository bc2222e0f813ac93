//! The strategies a GPU histogram can use, and the caller's choice among them (parsed from text).

use super::*;

/// Where a GPU histogram keeps its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One private histogram per block in dynamic shared memory.
    Shared,
    /// `Shared` with narrow counters (16 or 8 bits, packed into 32-bit words) whose wraps are
    /// corrected in global memory: more blocks per SM, or more bins in one block. Counts only.
    Packed {
        /// Counter width: 16 or 8.
        bits: u32,
    },
    /// The bins split across the shared memories of the blocks of a thread block cluster.
    Cluster {
        /// Blocks per cluster.
        size: u32,
    },
    /// Counters in global memory (they live in L2 while they fit).
    Global,
    /// Samples first partitioned into bucket ranges of `2^PARTITION_BITS` bins, then each range
    /// counted in shared memory.
    Partition,
    /// The bins split across a cluster's blocks as packed narrow counters (`bits` wide); each block
    /// sends the samples of other blocks' bins to their owners in batches through distributed
    /// shared memory, and the owners count them. Counts only.
    Exchange {
        /// Blocks per cluster.
        size: u32,
        /// Counter width.
        bits: u32,
    },
    /// The bins split across a cluster's blocks as packed narrow counters (`bits` wide), every
    /// sample added to its owner's counter through distributed shared memory, wraps corrected in
    /// global memory. Counts only.
    ClusterPacked {
        /// Blocks per cluster.
        size: u32,
        /// Counter width: 16 or 8.
        bits: u32,
    },
    /// The bins cut into `slices` slices of `bits`-wide counters, one slice per block; every block
    /// reads the whole input and counts its slice's samples, the blocks of the different slices
    /// reading each tile at about the same time (once from DRAM, `slices` times from L2). Counts
    /// in packed counters of 8 or 4 bits; weighted sums in 64-bit ones (f64, or u64 for integer
    /// weights).
    Sliced {
        /// How many slices.
        slices: u32,
        /// Counter width: 8 or 4 (counts), 64 (weighted sums).
        bits: u32,
    },
    /// Every block keeps the run of bins that holds the most of the input (placed on the device
    /// from a probe of the samples) as `bits`-wide packed counters, and adds each sample outside it
    /// to a global counter: one pass, where sliced locates every sample once per slice. Counts
    /// only.
    Spill {
        /// Counter width: 8 or 4, or [`SPILL_KERNEL_CHOOSES`] (the kernel picks one of them
        /// from the same probe that places the window).
        bits: u32,
    },
}

/// [`Strategy::Spill`]'s width when the kernel chooses it: 4-bit counters where their twice wider
/// window holds more of the probed samples and the busiest bins take few counts a block, else
/// 8-bit ones (`spill_place` in `kernels/hist_spill.cuh`).
pub const SPILL_KERNEL_CHOOSES: u32 = 0;

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
            Strategy::ClusterPacked { size, bits } => format!("clusterpacked{bits}x{size}"),
            Strategy::Spill {
                bits: SPILL_KERNEL_CHOOSES,
            } => "spill".into(),
            Strategy::Spill { bits } => format!("spill{bits}"),
        }
    }
}

impl Strategy {
    /// Blocks per cluster of the strategy's launches (1: no cluster).
    pub fn cluster_size(&self) -> u32 {
        match self {
            Strategy::Cluster { size }
            | Strategy::Exchange { size, .. }
            | Strategy::ClusterPacked { size, .. } => *size,
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
    /// The planner chooses.
    Auto,
    /// One private histogram per block in shared memory.
    Shared,
    /// Packed narrow counters of 16 or 8 bits.
    Packed(u32),
    /// A cluster; `None` lets the planner pick the size.
    Cluster(Option<u32>),
    /// Counters in global memory.
    Global,
    /// Partition the samples into bucket ranges first.
    Partition,
    /// The exchange strategy; `None` lets the planner pick the counter width or the cluster size.
    Exchange {
        /// Counter width.
        bits: Option<u32>,
        /// Blocks per cluster.
        size: Option<u32>,
    },
    /// The cluster_packed strategy; `None` lets the planner pick the counter width or the cluster
    /// size.
    ClusterPacked {
        /// Counter width.
        bits: Option<u32>,
        /// Blocks per cluster.
        size: Option<u32>,
    },
    /// The sliced strategy; `None` lets the planner pick the counter width (8 bits for counts, 64
    /// for weighted sums) or the fewest slices that hold the bins.
    Sliced {
        /// Counter width.
        bits: Option<u32>,
        /// How many slices.
        slices: Option<u32>,
    },
    /// The spill strategy; `None` lets the planner pick the counter width (8 or 4).
    Spill(Option<u32>),
}

impl std::str::FromStr for StrategyChoice {
    type Err = crate::Error;

    /// A strategy name: `auto`, `shared`, `shared16`, `shared8`, `shared4`, `cluster`, `global`,
    /// `partition`, `spill` (`spill8`, `spill4`), or an exchange, cluster_packed or sliced name (`exchange8x8`,
    /// `clusterpacked8x8`, `sliced4x3`, the names [`Strategy::name`] prints; `cluster-packed` is
    /// `clusterpacked`). The cluster size of `cluster` comes from
    /// [`StrategyChoice::with_cluster_size`].
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(rest) = text
            .strip_prefix("clusterpacked")
            .or_else(|| text.strip_prefix("cluster-packed"))
        {
            return parse_cluster_packed(text, rest);
        }
        if let Some(rest) = text.strip_prefix("exchange") {
            return parse_exchange(text, rest);
        }
        if let Some(rest) = text.strip_prefix("sliced") {
            return parse_sliced(text, rest);
        }
        match text {
            "auto" => Ok(StrategyChoice::Auto),
            "shared" => Ok(StrategyChoice::Shared),
            "shared16" => Ok(StrategyChoice::Packed(16)),
            "shared8" => Ok(StrategyChoice::Packed(8)),
            "shared4" => Ok(StrategyChoice::Packed(4)),
            "global" => Ok(StrategyChoice::Global),
            "partition" => Ok(StrategyChoice::Partition),
            "spill" => Ok(StrategyChoice::Spill(None)),
            "spill8" => Ok(StrategyChoice::Spill(Some(8))),
            "spill4" => Ok(StrategyChoice::Spill(Some(4))),
            "cluster" => Ok(StrategyChoice::Cluster(None)),
            _ => Err(crate::Error::InvalidArgument(format!(
                "unknown strategy `{text}` (expected auto, shared, shared16, shared8, cluster, global, \
                 partition, exchange, clusterpacked, sliced or spill)"
            ))),
        }
    }
}

impl StrategyChoice {
    /// The same choice with `size` blocks per cluster (the CLI's `--cluster-size`), for `cluster`
    /// and for an `exchange` or `clusterpacked` whose name does not give the size; `None` changes
    /// nothing. Any other
    /// strategy has no cluster size to take, and that is an error rather than a size ignored.
    pub fn with_cluster_size(self, size: Option<u32>) -> Result<Self, crate::Error> {
        let Some(k) = size else {
            return Ok(self);
        };
        match self {
            StrategyChoice::Cluster(_) => Ok(StrategyChoice::Cluster(Some(k))),
            StrategyChoice::Exchange { bits, size: None } => Ok(StrategyChoice::Exchange {
                bits,
                size: Some(k),
            }),
            StrategyChoice::Exchange {
                bits,
                size: Some(named),
            } => Err(crate::Error::InvalidArgument(format!(
                "`exchange{}x{named}` names its cluster size; leave out --cluster-size",
                bits.map(|b| b.to_string()).unwrap_or_default()
            ))),
            StrategyChoice::ClusterPacked { bits, size: None } => {
                Ok(StrategyChoice::ClusterPacked {
                    bits,
                    size: Some(k),
                })
            }
            StrategyChoice::ClusterPacked {
                bits,
                size: Some(named),
            } => Err(crate::Error::InvalidArgument(format!(
                "`clusterpacked{}x{named}` names its cluster size; leave out --cluster-size",
                bits.map(|b| b.to_string()).unwrap_or_default()
            ))),
            other => {
                let name = match other {
                    StrategyChoice::Auto => "auto".to_string(),
                    StrategyChoice::Shared => "shared".to_string(),
                    StrategyChoice::Packed(bits) => format!("shared{bits}"),
                    StrategyChoice::Global => "global".to_string(),
                    StrategyChoice::Partition => "partition".to_string(),
                    StrategyChoice::Spill(_) => "spill".to_string(),
                    _ => "sliced".to_string(),
                };
                Err(crate::Error::InvalidArgument(format!(
                    "--cluster-size only applies to --strategy cluster, exchange or clusterpacked, \
                     not {name}"
                )))
            }
        }
    }
}

/// `sliced`, `sliced8`, `sliced4`, `sliced64` (weighted sums), each optionally followed by
/// `x<slices>` (the names [`Strategy::name`] prints).
pub(super) fn parse_sliced(text: &str, rest: &str) -> Result<StrategyChoice, crate::Error> {
    let bad = || {
        crate::Error::InvalidArgument(format!(
            "unknown strategy `{text}` (sliced strategies: sliced, sliced8, sliced4, sliced64, \
             optionally with x<slices>, e.g. sliced4x3)"
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
        "64" => Some(64),
        _ => return Err(bad()),
    };
    Ok(StrategyChoice::Sliced { bits, slices })
}

/// `exchange`, `exchange8`, `exchange16`, each optionally followed by `x<cluster size>` (the names
/// [`Strategy::name`] prints) or given the size by [`StrategyChoice::with_cluster_size`].
pub(super) fn parse_exchange(text: &str, rest: &str) -> Result<StrategyChoice, crate::Error> {
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
    Ok(StrategyChoice::Exchange { bits, size })
}

/// `clusterpacked`, `clusterpacked8`, `clusterpacked16`, each optionally followed by
/// `x<cluster size>` (the names [`Strategy::name`] prints) or given the size by
/// [`StrategyChoice::with_cluster_size`].
pub(super) fn parse_cluster_packed(text: &str, rest: &str) -> Result<StrategyChoice, crate::Error> {
    let bad = || {
        crate::Error::InvalidArgument(format!(
            "unknown strategy `{text}` (cluster_packed strategies: clusterpacked, clusterpacked8, \
             clusterpacked16, optionally with x<cluster size>, e.g. clusterpacked8x8)"
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
    Ok(StrategyChoice::ClusterPacked { bits, size })
}
