//! A histogram as the engines receive it: the bins already resolved, and every choice besides the
//! samples in one value, so that a new choice is one field rather than one more argument through
//! every layer.

use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::plan::StrategyChoice;
use crate::histogram::stream_options::StreamOptions;
use crate::histogram::sums::WeightSums;
use crate::sample::Weights;

/// Told the bytes of samples handed to the GPU so far while an input streams.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// One histogram for an engine: weights (as long as the samples), resolved bins, the
/// out-of-range policy, the GPU strategy, the streaming sizes, the progress callback and how float
/// weights are added (the CPU engine uses the first three and the last).
#[derive(Clone, Copy)]
pub struct Job<'a> {
    pub weights: Option<Weights<'a>>,
    pub binning: &'a Binning,
    pub policy: OutOfRange,
    pub strategy: StrategyChoice,
    pub stream: StreamOptions,
    pub progress: Option<Progress<'a>>,
    pub sums: WeightSums,
}
