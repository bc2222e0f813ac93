//! How float weights are added. Counts and integer sums are exact in any order; float sums are
//! not, so the order is a choice every engine takes: the fastest, one that gives the same bits on
//! every run, or numpy's own.

use crate::error::{Error, Result};
use crate::histogram::bins::Binning;

/// How a histogram adds float weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightSums {
    /// Each engine's fastest order, summed in float64 and rounded once: atomics on the GPU (two
    /// runs can differ in the last bits), fixed blocks added in order on the CPU.
    #[default]
    Fast,
    /// GPU: exact fixed-point sums rounded once to float64, the same bits on every run and
    /// strategy (see [`crate::histogram::cuda::exact_sums`]). The CPU engine's order is fixed
    /// already: it sums as with [`WeightSums::Fast`].
    Deterministic,
    /// numpy.histogram's order over uniform bins: float64 sums per block of [`NUMPY_BLOCK`]
    /// samples in sample order, cast to the weights' type and added in it block after block: bit
    /// for bit numpy's result (float32 weights round as numpy's do). Bins other than uniform ones
    /// are an error (numpy adds those weights in orders of its own).
    Numpy,
}

/// numpy's block of samples (`BLOCK` in numpy/lib/_histograms_impl.py).
pub const NUMPY_BLOCK: usize = 1 << 16;

/// Whether numpy sums `binning`'s weights in blocks (its equal-bins path): uniform bins.
pub fn numpy_blocks_apply(binning: &Binning) -> bool {
    matches!(
        binning,
        Binning::UniformF32(_) | Binning::UniformF64(_) | Binning::UniformHalf(_)
    )
}

impl std::str::FromStr for WeightSums {
    type Err = Error;
    fn from_str(s: &str) -> Result<WeightSums> {
        match s {
            "fast" => Ok(WeightSums::Fast),
            "deterministic" => Ok(WeightSums::Deterministic),
            "numpy" => Ok(WeightSums::Numpy),
            other => Err(Error::InvalidArgument(format!(
                "unknown way to sum weights {other:?} (fast, deterministic or numpy)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_others_are_refused() {
        assert_eq!("numpy".parse::<WeightSums>().unwrap(), WeightSums::Numpy);
        assert_eq!("fast".parse::<WeightSums>().unwrap(), WeightSums::Fast);
        assert_eq!(
            "deterministic".parse::<WeightSums>().unwrap(),
            WeightSums::Deterministic
        );
        let e = "numpi".parse::<WeightSums>().unwrap_err().to_string();
        assert!(e.contains("numpi") && e.contains("numpy"), "{e}");
    }
}
