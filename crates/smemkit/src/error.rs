//! Typed errors of the library. Every failure a user can cause (bad bins, bad ranges, mismatched
//! weights, a missing GPU) has its own variant with a message that names the problem, so the CLI can
//! print one clear line and callers can match on the cause.

use thiserror::Error;

/// Why uniform bins over `[lo, hi]` cannot be cut: a width that overflows the precision (a range
/// wider than the largest float), or bins narrower than its spacing.
fn too_many_bins_reason(precision: &str, lo: f64, hi: f64) -> &'static str {
    let overflows = if precision == "float32" {
        !((hi as f32) - (lo as f32)).is_finite()
    } else {
        !(hi - lo).is_finite()
    };
    match (overflows, precision == "float32") {
        (true, true) => {
            "the range is wider than the largest finite float32 (its width overflows); narrow it"
        }
        (true, false) => {
            "the range is wider than the largest finite float64 (its width overflows); narrow it"
        }
        (false, true) => "too many bins for the data range: they would have zero width in float32",
        (false, false) => "too many bins for the data range: they would have zero width in float64",
    }
}

/// Everything that can go wrong inside smemkit. More variants may come, so matches need a wildcard
/// arm.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    #[error("the number of bins must be at least 1 (got 0)")]
    ZeroBins,
    #[error("range {lo}:{hi} is inverted: the lower bound must not exceed the upper bound")]
    InvertedRange { lo: f64, hi: f64 },
    #[error("range {lo}:{hi} is not finite")]
    NonFiniteRange { lo: f64, hi: f64 },
    #[error("autodetected range of [{lo}, {hi}] is not finite (the data holds NaN or infinity); pass an explicit range")]
    NonFiniteData { lo: f64, hi: f64 },
    #[error("{nbins} bins over [{lo:?}, {hi:?}]: {}", too_many_bins_reason(precision, *lo, *hi))]
    TooManyBins {
        nbins: usize,
        lo: f64,
        hi: f64,
        precision: &'static str,
    },
    #[error("bins must increase monotonically: edge {index} ({value}) is below the one before it ({previous})")]
    EdgesNotIncreasing {
        index: usize,
        value: f64,
        previous: f64,
    },
    #[error("bin edges must not be NaN: edge {index} is {value}")]
    NonFiniteEdge { index: usize, value: f64 },
    #[error("at least two bin edges are needed (got {0})")]
    TooFewEdges(usize),
    #[error(
        "integer bins need integer samples, but the samples are {0}; give a range or edges instead"
    )]
    IntegerBinsNeedIntegers(&'static str),
    #[error("{weights} weights for {samples} samples: the lengths must match")]
    WeightsLength { samples: usize, weights: usize },
    #[error("out-of-range policy `error`: {below} samples below the range, {above} above it and {nan} NaN")]
    OutOfRange { below: u64, above: u64, nan: u64 },
    #[error("too many bins for {what}: {nbins} (the limit is {limit})")]
    BinsTooLarge {
        what: &'static str,
        nbins: usize,
        limit: usize,
    },
    #[error("the CUDA backend is not available: {0}")]
    CudaUnavailable(String),
    #[error("there is no CUDA device {ordinal}: the driver reports {count}")]
    DeviceNotFound { ordinal: usize, count: usize },
    #[error("several GPUs: {0}")]
    MultiGpu(String),
    #[error("NCCL error in {context}: {message}")]
    Nccl { context: String, message: String },
    #[error("CUDA error in {context}: {message}")]
    Cuda { context: String, message: String },
    #[error("NVRTC could not compile {kernel} with options {options:?}:\n{log}")]
    Compile {
        kernel: String,
        options: Vec<String>,
        log: String,
    },
    #[error("strategy {strategy} cannot run this histogram: {reason}")]
    StrategyUnsupported { strategy: String, reason: String },
    #[error("{what} ({bytes} bytes) failed: {message} (page-locked memory is limited by `ulimit -l` and by physical memory)")]
    HostMemory {
        what: String,
        bytes: usize,
        message: String,
    },
    #[error("reading {path}: {message}")]
    Read { path: String, message: String },
    #[error("not implemented: {0}")]
    NotImplemented(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("matrix shapes do not agree: {0}")]
    MatrixShape(String),
    #[error("matrix {matrix}: leading dimension {ld} is below its {cols} columns")]
    LeadingDimension {
        matrix: &'static str,
        ld: usize,
        cols: usize,
    },
    #[error("matrix {matrix}: {rows} x {cols} with leading dimension {ld} needs {needed} elements, the slice holds {len}")]
    MatrixTooShort {
        matrix: &'static str,
        rows: usize,
        cols: usize,
        ld: usize,
        needed: u128,
        len: usize,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
