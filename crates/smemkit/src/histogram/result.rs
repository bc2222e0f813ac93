//! What every histogram engine returns: the per-bin counts or sums, and the tallies of samples
//! outside the bins. Its own module so that the engines need not import the API that calls them.

/// Per-bin results: counts, or sums of weights.
#[derive(Debug, Clone, PartialEq)]
pub enum Counts {
    /// Counts.
    Unweighted(Vec<u64>),
    /// Weighted sums.
    Weighted(Vec<f64>),
    /// Sums of integer or bool weights, wrapped into their type as numpy's are
    /// ([`crate::histogram::int_sums`]); every value lies in `dtype`'s range.
    Integer {
        /// The sums per bin (bool: 0 or 1).
        sums: Vec<i64>,
        /// The weights' type, which the sums keep.
        dtype: crate::int_weights::IntType,
    },
}

impl Counts {
    /// How many bins.
    pub fn len(&self) -> usize {
        match self {
            Counts::Unweighted(c) => c.len(),
            Counts::Weighted(c) => c.len(),
            Counts::Integer { sums, .. } => sums.len(),
        }
    }
    /// No bins.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bin `i` as f64 (for charts and text output).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Counts::Unweighted(c) => c[i] as f64,
            Counts::Weighted(c) => c[i],
            Counts::Integer { sums, .. } => sums[i] as f64,
        }
    }
}

/// Samples that fell outside the bins (counted anyway under `clamp`) and NaN samples (never counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tallies {
    /// Samples below the first edge.
    pub below: u64,
    /// Samples above the last edge.
    pub above: u64,
    /// NaN samples.
    pub nan: u64,
}

impl Tallies {
    /// Adds `other` to these.
    pub fn add(&mut self, other: &Tallies) {
        self.below += other.below;
        self.above += other.above;
        self.nan += other.nan;
    }
}

/// What every engine returns: the counts, the tallies, and a line saying how it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOutput {
    /// The counts or sums per bin.
    pub counts: Counts,
    /// The samples outside the bins.
    pub tallies: Tallies,
    /// How the engine ran (threads, strategy, devices), for reports.
    pub detail: String,
}

/// Which bins of a histogram sharded over ranks one rank holds
/// ([`crate::histogram::cuda::bin_shards`]): its [`crate::histogram::Histogram`]'s counts and edges are
/// those bins' alone, and the parts of every rank, in rank order, put together are the whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinPart {
    /// The bins held, of `0..nbins`.
    pub bins: std::ops::Range<usize>,
    /// The whole histogram's bins.
    pub nbins: usize,
    /// The rank holding them (its NCCL rank).
    pub rank: usize,
    /// How many ranks share the bins.
    pub world: usize,
}
