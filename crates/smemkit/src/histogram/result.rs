//! What every histogram engine returns: the per-bin counts or sums, and the tallies of samples
//! outside the bins. Its own module so that the engines need not import the API that calls them.

/// Per-bin results: counts, or sums of weights.
#[derive(Debug, Clone, PartialEq)]
pub enum Counts {
    Unweighted(Vec<u64>),
    Weighted(Vec<f64>),
}

impl Counts {
    pub fn len(&self) -> usize {
        match self {
            Counts::Unweighted(c) => c.len(),
            Counts::Weighted(c) => c.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bin `i` as f64 (for charts and text output).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Counts::Unweighted(c) => c[i] as f64,
            Counts::Weighted(c) => c[i],
        }
    }
}

/// Samples that fell outside the bins (counted anyway under `clamp`) and NaN samples (never counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tallies {
    pub below: u64,
    pub above: u64,
    pub nan: u64,
}

impl Tallies {
    pub fn add(&mut self, other: &Tallies) {
        self.below += other.below;
        self.above += other.above;
        self.nan += other.nan;
    }
}

/// What every engine returns: the counts, the tallies, and a line saying how it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOutput {
    pub counts: Counts,
    pub tallies: Tallies,
    /// How the engine ran (threads, strategy, devices), for reports.
    pub detail: String,
}
