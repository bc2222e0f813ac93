//! Histograms on the CPU.
//!
//! Every sample is first turned into a *code*: its bin index in `[0, nbins)`, or one of three
//! extra slots for samples below the range, above it, and NaN (`nbins`, `nbins + 1`, `nbins + 2`).
//! The counting loops are then branch-free (`counts[code] += 1`): the out-of-range policy is applied
//! once at the end (tallies from the extra slots; `clamp` adds them to the first and last bin).
//! The codes are computed by loops specialised per binning (integer bins, numpy's uniform float32
//! and float64 rules, explicit edges) that repeat [`Binning::locate`]'s arithmetic exactly.
//!
//! Three counting paths, chosen by the number of bins:
//! - up to [`PARTITION_MIN_BINS`]: each rayon worker counts contiguous chunks of the input into
//!   private u32 counters, interleaved `ways` times (sample `k` goes to copy `k % ways`) so that runs
//!   of equal samples (skewed data) do not serialise on one counter's load-add-store chain; the
//!   copies are folded into u64 after every chunk and the workers' results merged at the end.
//!   int32 samples with integer bins from 16384 bins use one copy of u8
//!   counters with u32 carries instead (a quarter of the footprint: 32768 bins in L1, 1M in L2).
//! - from [`PARTITION_MIN_BINS`] bins: the counters do not fit the cache. Samples are processed in
//!   rounds; in each round the workers scatter their codes into buckets of 2^16 bins (16-bit
//!   offsets), then the buckets are counted in parallel, each into a cache-resident scratch of 2^16
//!   counters, and added into the disjoint slice of the result it covers (no merge of full-size
//!   per-thread arrays). A bucket holding a large share of the samples (skewed data) is split
//!   between workers. int32 samples with integer bins have their own scatter and count
//!   (`partition_i32.rs`: vector slots, hot bins taken out, L1-sized buckets) on the same rounds.
//! - weighted: fixed blocks of [`WEIGHTED_BLOCK`] samples (or more when there are more bins), each
//!   summed in sample order into its own f64 vector; the blocks are added into the result strictly in
//!   block order. The sums are therefore the same on every run and with any number of threads. For
//!   uniform bins, up to 2^16 bins, float64 weights and the `ignore` policy they are also
//!   bit-identical to `numpy.histogram`, which sums blocks of 65536 samples in the same order
//!   (float32 weights: numpy rounds each block's sum to float32; explicit edges: numpy sums by
//!   differences of cumulative sums, so only exactly representable sums agree bit for bit).

use rayon::prelude::*;

use crate::histogram::bins::{
    locate_in_edges, Binning, ExactGrid, OutOfRange, Slot, UniformF32, UniformF64,
};
use crate::histogram::result::{Counts, Tallies};
use crate::histogram::sums::WeightSums;
use crate::sample::{Sample, SampleType, Weights};

#[macro_use]
mod macros;
mod codes;
mod count;
#[cfg(test)]
mod estimate_tests;
mod int32;
mod partition;
mod partition_i32;
#[cfg(test)]
mod tests;
mod weighted;

use crate::histogram::bins::estimate::*;
use codes::*;
use count::*;
use int32::*;
use partition::*;
use weighted::*;

pub use crate::histogram::result::EngineOutput;

/// The CPU engine's line for reports.
fn detail() -> String {
    format!("rayon, {} threads", rayon::current_num_threads())
}

/// From this many bins on, the partitioned path is used.
pub const PARTITION_MIN_BINS: usize = 1 << 21;
/// Bins covered by one partition bucket (the offsets inside a bucket are u16).
const BUCKET_BINS_LOG2: u32 = 16;
const BUCKET_BINS: usize = 1 << BUCKET_BINS_LOG2;
/// A bucket with more entries than this is counted by two workers (skewed data).
const SPLIT_BUCKET: usize = 1 << 22;
/// Samples per partition round (bounds the staging memory: 2 bytes per sample).
const PARTITION_ROUND: usize = 1 << 25;
/// Samples in one weighted block (numpy's block size).
pub const WEIGHTED_BLOCK: usize = 1 << 16;
/// Smallest piece of input one worker takes.
const MIN_CHUNK: usize = 1 << 16;
/// Largest piece one worker counts in u32 counters before folding them into u64.
const MAX_CHUNK: usize = 1 << 30;
/// Cache budget for one worker's interleaved u32 counters.
const COUNTER_BYTES: usize = 1 << 20;
/// The same for the int32 loop, which counts a batch's hot bin in a register and so needs the
/// copies only for moderate skew: they are kept within L1 (measured faster at 4096 and 32768 bins).
const I32_COUNTER_BYTES: usize = 48 << 10;
/// The two-pass (vectorised) uniform code loops convert estimates through i32: fewer bins than this.
const VECTOR_MAX_BINS: usize = 1 << 30;
/// Samples whose codes are computed in one batch before they are counted.
const BATCH: usize = 512;

/// Histogram of `samples` under `binning` with `policy` (the policy's `error` check is the caller's:
/// the tallies carry what it needs).
pub fn histogram<T: Sample>(
    samples: &[T],
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
) -> EngineOutput {
    histogram_with_sums(samples, weights, binning, policy, WeightSums::Fast)
}

/// [`histogram`] with float weights added as `sums` says: [`WeightSums::Numpy`] in numpy's blocks
/// and type (uniform bins: the caller checks), the others in this engine's fixed order.
pub fn histogram_with_sums<T: Sample>(
    samples: &[T],
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    sums: WeightSums,
) -> EngineOutput {
    let nbins = binning.nbins();
    let numpy = sums == WeightSums::Numpy;
    assert!(
        nbins as u64 + 3 <= u32::MAX as u64,
        "the CPU engine supports fewer than 2^32 - 3 bins"
    );
    let clamp = policy == OutOfRange::Clamp;
    match binning {
        Binning::Integer { nbins } => dispatch(
            samples,
            weights,
            *nbins,
            clamp,
            &IntegerCodes { n: *nbins as u64 },
            numpy,
        ),
        Binning::UniformF32(u) => {
            dispatch(samples, weights, nbins, clamp, &F32Codes::new(u), numpy)
        }
        Binning::UniformF64(u) => {
            dispatch(samples, weights, nbins, clamp, &F64Codes::new(u), numpy)
        }
        Binning::Edges(e) => dispatch(
            samples,
            weights,
            nbins,
            clamp,
            &EdgeCodes { edges: e },
            numpy,
        ),
        Binning::IntEdges(e) => dispatch(
            samples,
            weights,
            nbins,
            clamp,
            &IntEdgeCodes { edges: e },
            numpy,
        ),
        Binning::UniformHalf(u) => {
            dispatch(samples, weights, nbins, clamp, &HalfCodes { u }, numpy)
        }
    }
}

/// Turns samples into codes (see the module documentation).
trait Codes<T: Copy>: Sync {
    fn code(&self, x: T) -> u32;
    /// `Some(nbins)` for integer bins, whose codes are cheap enough to be computed inside the
    /// counting loop.
    fn integer_bins(&self) -> Option<u64> {
        None
    }
    /// Codes of a batch (`out.len() == xs.len()`); loops that the compiler can unroll.
    #[inline(always)]
    fn codes(&self, xs: &[T], out: &mut [u32]) {
        for (o, &x) in out.iter_mut().zip(xs) {
            *o = self.code(x);
        }
    }
}

fn dispatch<T: Sample, C: Codes<T>>(
    samples: &[T],
    weights: Option<Weights<'_>>,
    nbins: usize,
    clamp: bool,
    codes: &C,
    numpy: bool,
) -> EngineOutput {
    match weights {
        Some(w) => run_weighted(samples, w, nbins, clamp, codes, numpy),
        None => {
            let mut slots = if nbins < PARTITION_MIN_BINS {
                run_counts(samples, nbins, codes)
            } else if let Some(xs) = codes.integer_bins().and(same_type::<T, i32>(samples)) {
                partition_i32::run_partitioned_i32(xs, nbins)
            } else {
                run_partitioned(samples, nbins, codes)
            };
            finish(&mut slots, nbins, clamp)
        }
    }
}

/// Splits the extra slots off the counts into tallies and applies `clamp`.
fn finish(slots: &mut Vec<u64>, nbins: usize, clamp: bool) -> EngineOutput {
    let tallies = Tallies {
        below: slots[nbins],
        above: slots[nbins + 1],
        nan: slots[nbins + 2],
    };
    slots.truncate(nbins);
    if clamp {
        slots[0] += tallies.below;
        slots[nbins - 1] += tallies.above;
    }
    EngineOutput {
        counts: Counts::Unweighted(std::mem::take(slots)),
        tallies,
        detail: detail(),
    }
}

fn chunk_len(len: usize) -> usize {
    let workers = rayon::current_num_threads().max(1);
    len.div_ceil(workers * 2).clamp(MIN_CHUNK, MAX_CHUNK)
}

/// Interleaved copies of the counters for `stride` slots within `budget` bytes (1 to 4).
fn ways_for(stride: usize, budget: usize) -> usize {
    (budget / (stride * 4)).clamp(1, 4)
}
