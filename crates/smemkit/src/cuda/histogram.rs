//! GPU histograms (work in progress).

use crate::bins::{Binning, OutOfRange};
use crate::error::{Error, Result};
use crate::histogram::{Counts, Tallies};
use crate::plan::StrategyChoice;
use crate::sample::{Samples, Weights};

/// Result of a GPU run.
pub struct CudaResult {
    pub counts: Counts,
    pub tallies: Tallies,
    pub detail: String,
}

pub fn histogram(
    _samples: Samples<'_>,
    _weights: Option<Weights<'_>>,
    _binning: &Binning,
    _policy: OutOfRange,
    _strategy: &StrategyChoice,
) -> Result<CudaResult> {
    Err(Error::CudaUnavailable("the CUDA engine is not built yet".into()))
}
