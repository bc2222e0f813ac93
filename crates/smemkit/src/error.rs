//! Typed errors of the library. Every failure a user can cause (bad bins, bad ranges, mismatched
//! weights, a missing GPU) has its own variant with a message that names the problem, so the CLI can
//! print one clear line and callers can match on the cause.

use thiserror::Error;

/// Why uniform bins over `[lo, hi]` cannot be cut: a width that overflows the precision (a range
/// wider than the largest float), or bins narrower than its spacing.
fn too_many_bins_reason(precision: &str, lo: f64, hi: f64) -> String {
    let overflows = if precision == "float32" {
        !((hi as f32) - (lo as f32)).is_finite()
    } else {
        !(hi - lo).is_finite()
    };
    if overflows {
        format!("the range is wider than the largest finite {precision} (its width overflows); narrow it")
    } else {
        // numpy's words first (its ValueError says "Too many bins for data range").
        format!("Too many bins for data range: they would have zero width in {precision}")
    }
}

/// Everything that can go wrong inside smemkit. More variants may come, so matches need a wildcard
/// arm.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// Zero bins were asked for.
    #[error("the number of bins must be at least 1 (got 0)")]
    ZeroBins,
    /// A range whose lower bound is above its upper bound.
    #[error(
        "range {lo}:{hi} is inverted: max must be larger than min in range parameter (the lower \
         bound must not exceed the upper bound)"
    )]
    InvertedRange {
        /// The lower bound.
        lo: f64,
        /// The upper bound.
        hi: f64,
    },
    /// A range with a NaN or infinite bound.
    #[error("range {lo}:{hi} is not finite")]
    NonFiniteRange {
        /// The lower bound.
        lo: f64,
        /// The upper bound.
        hi: f64,
    },
    /// The data's minimum or maximum, taken as the range, is NaN or infinite.
    #[error("autodetected range of [{lo}, {hi}] is not finite (the data holds NaN or infinity); pass an explicit range")]
    NonFiniteData {
        /// The data's minimum.
        lo: f64,
        /// The data's maximum.
        hi: f64,
    },
    /// Uniform bins that cannot be cut in the samples' precision.
    #[error("{nbins} bins over [{lo:?}, {hi:?}]: {}", too_many_bins_reason(precision, *lo, *hi))]
    TooManyBins {
        /// The bins asked for.
        nbins: usize,
        /// The range's lower bound.
        lo: f64,
        /// The range's upper bound.
        hi: f64,
        /// `float32` or `float64`.
        precision: &'static str,
    },
    /// Bin edges that decrease somewhere.
    #[error("bins must increase monotonically: edge {index} ({value}) is below the one before it ({previous})")]
    EdgesNotIncreasing {
        /// The position of the edge.
        index: usize,
        /// The edge.
        value: f64,
        /// The edge before it.
        previous: f64,
    },
    /// A NaN bin edge.
    #[error("bin edges must not be NaN: edge {index} is {value}")]
    NonFiniteEdge {
        /// The position of the edge.
        index: usize,
        /// The edge.
        value: f64,
    },
    /// Fewer than two bin edges (the number given).
    #[error("at least two bin edges are needed (got {0})")]
    TooFewEdges(usize),
    /// Integer bins asked of float samples (their type).
    #[error(
        "integer bins need integer samples, but the samples are {0}; give a range or edges instead"
    )]
    IntegerBinsNeedIntegers(&'static str),
    /// Weights of another length than the samples.
    #[error("{weights} weights for {samples} samples: the lengths must match")]
    WeightsLength {
        /// How many samples.
        samples: usize,
        /// How many weights.
        weights: usize,
    },
    /// The `error` out-of-range policy found samples outside the bins.
    #[error("out-of-range policy `error`: {below} samples below the range, {above} above it and {nan} NaN")]
    OutOfRange {
        /// Samples below the first edge.
        below: u64,
        /// Samples above the last edge.
        above: u64,
        /// NaN samples.
        nan: u64,
    },
    /// More bins than a strategy, a device or an output can hold.
    #[error("too many bins for {what}: {nbins} (the limit is {limit})")]
    BinsTooLarge {
        /// What limits them.
        what: &'static str,
        /// The bins asked for.
        nbins: usize,
        /// The most it takes.
        limit: usize,
    },
    /// No CUDA driver or device (why).
    #[error("the CUDA backend is not available: {0}")]
    CudaUnavailable(String),
    /// A device ordinal beyond the devices the driver reports.
    #[error("there is no CUDA device {ordinal}: the driver reports {count}")]
    DeviceNotFound {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },
    /// A failure of the several-GPU paths (what).
    #[error("several GPUs: {0}")]
    MultiGpu(String),
    /// An NCCL call failed.
    #[error("NCCL error in {context}: {message}")]
    Nccl {
        /// What was being done.
        context: String,
        /// NCCL's message.
        message: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA error in {context}: {message}")]
    Cuda {
        /// What was being done.
        context: String,
        /// The driver's message.
        message: String,
    },
    /// NVRTC could not compile a kernel.
    #[error("NVRTC could not compile {kernel} with options {options:?}:\n{log}")]
    Compile {
        /// The kernel source's name.
        kernel: String,
        /// The compile options.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
    /// An explicitly chosen strategy cannot run this histogram.
    #[error("strategy {strategy} cannot run this histogram: {reason}")]
    StrategyUnsupported {
        /// The strategy's name.
        strategy: String,
        /// Why not.
        reason: String,
    },
    /// Page-locked host memory could not be had.
    #[error("{what} ({bytes} bytes) failed: {message} (page-locked memory is limited by `ulimit -l` and by physical memory)")]
    HostMemory {
        /// What was being allocated or registered.
        what: String,
        /// How many bytes.
        bytes: usize,
        /// The driver's message.
        message: String,
    },
    /// A file could not be read whole.
    #[error("reading {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A combination the library does not do yet (which).
    #[error("not implemented: {0}")]
    NotImplemented(String),
    /// Any other argument the library refuses (why).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Matrices whose shapes do not fit together (how).
    #[error("matrix shapes do not agree: {0}")]
    MatrixShape(String),
    /// A matrix's leading dimension below its column count.
    #[error("matrix {matrix}: leading dimension {ld} is below its {cols} columns")]
    LeadingDimension {
        /// Which matrix.
        matrix: &'static str,
        /// Its leading dimension.
        ld: usize,
        /// Its columns.
        cols: usize,
    },
    /// A matrix's slice shorter than its shape and leading dimension need.
    #[error("matrix {matrix}: {rows} x {cols} with leading dimension {ld} needs {needed} elements, the slice holds {len}")]
    MatrixTooShort {
        /// Which matrix.
        matrix: &'static str,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// Its leading dimension.
        ld: usize,
        /// The elements needed.
        needed: u128,
        /// The elements the slice holds.
        len: usize,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
