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
    /// The bins cut into `slices` slices of `bits`-wide packed counters (8 or 4), one slice per
    /// block; every block reads the whole input and counts its slice's samples, the blocks of the
    /// different slices reading each tile at about the same time (once from DRAM, `slices` times
    /// from L2). Counts only.
    Sliced {
        /// How many slices.
        slices: u32,
        /// Counter width.
        bits: u32,
    },
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
    /// The sliced strategy; `None` lets the planner pick the counter width (8 bits) or the
    /// fewest slices that hold the bins.
    Sliced {
        /// Counter width.
        bits: Option<u32>,
        /// How many slices.
        slices: Option<u32>,
    },
}

impl StrategyChoice {
    /// Parses a strategy name (`auto`, `shared`, `packed16`, `cluster`, ...); `cluster_size` for `cluster`.
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
pub(super) fn parse_sliced(text: &str, rest: &str) -> Result<StrategyChoice, crate::Error> {
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
pub(super) fn parse_exchange(
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
