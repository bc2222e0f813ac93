//! The raw command line as clap parses it. Values that need checking against each other (ranges,
//! dtypes, policies) stay strings here and are validated in one place, `hist::config`, so that
//! every mistake is reported as one `error:` line rather than clap's multi-line usage text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "smemkit",
    version,
    about = "Histograms (and more) in GPU shared memory, with a CPU engine"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Histogram a file or synthetic data.
    Hist(Box<HistArgs>),
    /// Joint histogram of two columns (numpy.histogram2d), from a CSV, a 2-D .npy or two files.
    Hist2d(Box<crate::commands::histdd::JointArgs>),
    /// Joint histogram of D columns (numpy.histogramdd): an (N, D) .npy, CSV columns, or one file per axis.
    Histdd(Box<crate::commands::histdd::JointArgs>),
    /// Print the GPU launch plan the planner would choose for a histogram.
    Plan(PlanArgs),
    /// Benchmark the histogram engine; prints JSON lines (shared/BENCH.md schema).
    Bench(BenchArgs),
    /// 1D stencil with a halo over a .npy array (weighted for floats, plain sum for integers).
    Stencil(crate::commands::ops::StencilArgs),
    /// Transpose a 2-D .npy array.
    Transpose(crate::commands::ops::TransposeArgs),
    /// Reverse a .npy array (flat).
    Reverse(crate::commands::ops::ReverseArgs),
    /// Matrix multiply of two float32 2-D .npy arrays (GPU: shared-memory tiled kernels).
    Matmul(crate::commands::matmul::MatmulArgs),
    /// Shared-memory experiments on the GPU: `banks` (predictions only without a GPU) and `cache`
    /// (shared memory against the L1 cache, carveouts, atomics; needs a GPU).
    Lab(crate::commands::lab::LabArgs),
    /// Plot GB/s against bins from benchmark JSON lines (every strategy and peer).
    PlotBench(crate::bench::plot::PlotBenchArgs),
    /// numpy.digitize: the bin index of every sample, written as a .npy of int64.
    Digitize(crate::commands::digitize::DigitizeArgs),
    /// Build ahead of time the GPU kernels the planner picks for these sample types at the
    /// standard bin counts (for images and CI: the first histogram then loads them).
    Warmup(crate::commands::warmup::WarmupArgs),
}

const HIST_AFTER_HELP: &str = "\
Bins:
  Integer samples with --bins N and neither --range nor --edges use integer bins (bincount):
  bin v counts the value v, for v in [0, N). --integer asks for that explicitly.
  Integer samples without --bins take numpy.bincount's length from the data: max + 1 bins
  (at least --minlength N); negative values are an error, as in numpy.
  --bins RULE (auto, fd, doane, scott, stone, rice, sturges, sqrt) picks the number of equal
  bins with numpy's estimator of that name (not with --weights, as in numpy).
  Float samples, or any samples with --range LO:HI, use N uniform bins over [LO, HI]
  (over the data's minimum and maximum when no range is given), computed as numpy.histogram does:
  every bin is half-open [a, b) except the last, which is closed [a, b].
  --edges FILE takes explicit edges (a 1-D .npy or one number per line): never decreasing,
  infinite edges and equal neighbours allowed, int64/uint64 .npy edges kept exact (numpy).

Inputs:
  .npy (any numeric dtype, either byte order, C or Fortran order, any shape, flattened),
  .csv / .tsv / .txt (one column: --column N counts from 0, or a header name; the first line is
  a header when none of its cells is a number, and the summary names it),
  any other file as raw little-endian binary with --dtype, or --generate DIST --count N.
  `-` (standard input), a pipe or a FIFO is read as it streams: .npy when it starts with the .npy
  magic, raw with --dtype, text otherwise. --weights takes the same formats (--weights-dtype for
  raw). A flag that means nothing for the input (--dtype on a .npy, --column on a .npy or raw
  file) is an error.";

#[derive(Debug, Args)]
#[command(after_help = HIST_AFTER_HELP)]
pub struct HistArgs {
    /// Input file (.npy, .csv, .tsv, .txt, or raw binary with --dtype).
    #[arg(conflicts_with = "generate")]
    pub input: Option<PathBuf>,
    /// Generate synthetic samples instead of reading a file: uniform, hot, normal or zipf.
    #[arg(long, value_name = "DIST")]
    pub generate: Option<String>,
    /// Number of samples to generate.
    #[arg(long, value_name = "N", requires = "generate")]
    pub count: Option<u64>,
    /// Seed of the generator (the same seed gives the same samples on any number of threads).
    #[arg(long, value_name = "S", default_value_t = 0, requires = "generate")]
    pub seed: u64,
    /// Sample type: u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64 (raw input, text input, --generate).
    #[arg(long, value_name = "T")]
    pub dtype: Option<String>,
    /// Column of a CSV/text file: an index counted from 0, or a header name.
    #[arg(long, value_name = "N|NAME")]
    pub column: Option<String>,
    /// Number of bins, or one of numpy's estimators: auto, fd, doane, scott, stone, rice, sturges,
    /// sqrt (equal bins over the range, as many as the estimator asks for).
    #[arg(long, value_name = "N|RULE", value_parser = bins_value)]
    pub bins: Option<String>,
    /// numpy's density=True: also compute counts / (sum * bin width); --out writes the densities.
    #[arg(long)]
    pub density: bool,
    /// How float weights are added: fast (float64, rounded once), deterministic (GPU: the same
    /// bits every run) or numpy (numpy.histogram's order over equal bins: its blocks of 65536
    /// samples, float32 weights' sums kept in float32 between them; numpy's bits).
    #[arg(long, value_name = "HOW", default_value = "fast", requires = "weights")]
    pub sums: String,
    /// Integer bins from the data (no --bins): at least this many bins (numpy's bincount minlength).
    #[arg(long, value_name = "N", conflicts_with_all = ["bins", "range", "edges"])]
    pub minlength: Option<usize>,
    /// Range of uniform bins, LO:HI (both included; the last bin is closed).
    #[arg(long, value_name = "LO:HI", allow_hyphen_values = true)]
    pub range: Option<String>,
    /// File of bin edges, never decreasing (a 1-D .npy or text, one number per line).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["range", "integer"])]
    pub edges: Option<PathBuf>,
    /// Integer bins (bincount) [0, N): the default for integer samples without --range or --edges.
    #[arg(long, conflicts_with = "range")]
    pub integer: bool,
    /// Weights, one per sample, of the samples' shape: .npy (f32, f64, integers and bool kept:
    /// integer weights give sums of their type, as numpy), text (one number per line, f64), or
    /// raw binary with --weights-dtype.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// Type of raw binary weights: u8 u16 u32 u64 i8 i16 i32 i64 f32 f64.
    #[arg(long, value_name = "T", requires = "weights")]
    pub weights_dtype: Option<String>,
    /// What happens to samples outside the bins: ignore (numpy), clamp (into the first/last bin), error.
    #[arg(long, value_name = "POLICY", default_value = "ignore")]
    pub out_of_range: String,
    /// Engine: auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// GPU strategy: auto, shared, shared16, shared8 (narrow packed counters), cluster, global,
    /// partition, exchange (exchange8 / exchange16: the counter width; exchange8x8: and the size),
    /// clusterpacked (the same forms: clusterpacked8x8, clusterpacked16x16; experimental, never
    /// chosen by auto), sliced (sliced8x5: five slices of 8-bit counters) or spill (the busiest
    /// window of bins in shared memory, the other samples in global memory; spill8, spill4: the
    /// counter width, which plain spill leaves to the kernel's probe).
    #[arg(long, default_value = "auto")]
    pub strategy: String,
    /// Thread block cluster size for --strategy cluster, exchange or clusterpacked.
    #[arg(long, value_name = "K")]
    pub cluster_size: Option<u32>,
    /// Write the histogram to FILE: .csv (bin,left,right,count), .json or .npy (counts).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Draw the histogram to FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Do not print the terminal bar chart.
    #[arg(long)]
    pub no_chart: bool,
    /// GPU: stream the input through page-locked buffers, copies overlapped with the kernel (the
    /// default for inputs of 256 MiB or more, or larger than the device's free memory).
    #[arg(long, conflicts_with = "no_stream")]
    pub stream: bool,
    /// GPU: never stream (copy the input in large synchronous batches).
    #[arg(long)]
    pub no_stream: bool,
    /// GPU: device memory the streaming buffers may use, in MiB (default: half the free memory);
    /// inputs larger than it stream.
    #[arg(long, value_name = "MIB")]
    pub device_budget: Option<usize>,
    /// GPU: several GPUs, `all` or ordinals (0,1,...): one shard of the input per GPU, counters
    /// summed with NCCL (needs a build with `--features nccl`). Several processes instead
    /// (torchrun, srun, mpirun, or SMEMKIT_RANK): see the README.
    #[arg(long, value_name = "all|0,1,...")]
    pub devices: Option<String>,
    /// Several processes: shard the bins over the ranks (each rank ends with its slice of the
    /// bins; for bin counts whose counters do not fit on one GPU): auto (when they would not
    /// fit), always or never. Each rank then writes its part of the bins to its own file
    /// (`--out counts.csv` becomes `counts.part-0000-of-0002.csv`, ...); one GPU per rank.
    #[arg(long, value_name = "auto|always|never", default_value = "auto")]
    pub shard_bins: String,
    /// Several processes, bins sharded over the ranks: every rank sends its part to rank 0 over
    /// the TCP rendezvous, and rank 0 writes the whole histogram to `--out` (one file, as one
    /// process would write it) instead of one part file per rank. Needs the TCP rendezvous
    /// (MASTER_ADDR/MASTER_PORT or SMEMKIT_RENDEZVOUS), not SMEMKIT_NCCL_ID_FILE.
    #[arg(long)]
    pub gather: bool,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Number of bins.
    #[arg(long)]
    pub bins: usize,
    /// Sample type.
    #[arg(long, default_value = "i32")]
    pub dtype: String,
    /// Weighted histogram (f64 counters).
    #[arg(long)]
    pub weighted: bool,
    /// Force a strategy: auto, shared, shared16, shared8, cluster, global, partition, exchange,
    /// clusterpacked, sliced or spill.
    #[arg(long, default_value = "auto")]
    pub strategy: String,
    /// Cluster size for --strategy cluster, exchange or clusterpacked.
    #[arg(long)]
    pub cluster_size: Option<u32>,
    /// Samples one GPU counts (its shard): the grid is cut to what they keep busy, and tiny
    /// shards count in global memory. Without it, planned as for a large input.
    #[arg(long)]
    pub samples: Option<usize>,
}

/// The parsed `bench` flags; the CUDA benchmark takes this struct as it is.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Operation: hist, or (GPU only) hist-device (the device-resident API at 2^10 to 2^28
    /// samples, 256, 4096 and 1M bins), hist-half (f16/bf16 normal samples on the device against
    /// a device copy of the same bytes), digitize (float32 on the device, --bins bins each),
    /// hist-stream, h2d, stencil1d, transpose, reverse, sgemm, first-call (the CLI in fresh
    /// processes with empty and warm kernel caches), histdd (issue 24's joint histograms of
    /// 2^log2-n device-resident samples: 2-D 256 x 256, 3-D 64^3, RGB 32^3, each strategy of
    /// --strategies or every joint one).
    #[arg(long, default_value = "hist")]
    pub op: String,
    /// Engine to measure: cpu or cuda.
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// log2 of the number of samples per workload.
    #[arg(long, default_value_t = 27)]
    pub log2_n: u32,
    /// Bin counts, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "256,4096,32768,131072,1048576,16777216"
    )]
    pub bins: Vec<usize>,
    /// Distributions, comma-separated: uniform, hot (GPU only: also hot:F, a share F of the samples
    /// in one bin, and normal: float32 standard normal samples in bins over [-4, 4]).
    #[arg(long, value_delimiter = ',', default_value = "uniform,hot")]
    pub dist: Vec<String>,
    /// Sample types, comma-separated: i32 (integer bins), f32 (uniform bins over [0, nbins)).
    #[arg(long, value_delimiter = ',', default_value = "i32,f32")]
    pub dtype: Vec<String>,
    /// Timed runs per workload (the median is reported; at least 7).
    #[arg(long, default_value_t = 7)]
    pub runs: usize,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// GPU only: strategies to time, comma-separated (auto, shared, shared16, shared8, cluster2 ...
    /// cluster16, global, partition, exchange, exchange8x8 ..., clusterpacked, clusterpacked8x8 ...,
    /// sliced, sliced8x5 ..., spill, spill8, spill4); all of them by default.
    #[arg(long, value_delimiter = ',')]
    pub strategies: Vec<String>,
    /// GPU only: also time each strategy with its warp aggregation flipped (rows `-agg` / `-noagg`).
    #[arg(long)]
    pub flip_aggregation: bool,
    /// sgemm only: kernels to time, comma-separated (tiled16, regblock, vec4, async, warp, auto,
    /// cublas; tf32 with --precision tf32); all of the precision's by default.
    #[arg(long, value_delimiter = ',')]
    pub kernel: Vec<String>,
    /// sgemm only: shapes, comma-separated, each N (a square) or MxNxK; the eight by default.
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// sgemm only: fp32, or tf32 (the TF32 tensor-core kernel against cuBLAS in TF32 math).
    #[arg(long, default_value = "fp32")]
    pub precision: String,
    /// GPU only: sweep the bin counts (powers of two and 1.5x steps from 2 to 2^24) instead of --bins.
    #[arg(long)]
    pub sweep: bool,
    /// GPU only, --op hist: throughput per GPU count (1, 2, 4, ... up to this set: `all` or
    /// ordinals), device-resident and host-resident input, rows with `devices` (needs `--features nccl`
    /// for more than one GPU).
    #[arg(long, value_name = "all|0,1,...")]
    pub devices: Option<String>,
    /// --op hist-stream only: chunk sizes to time, in MiB, comma-separated (the library's default
    /// when not given); every one with every --depth.
    #[arg(long, value_delimiter = ',', value_name = "MIB")]
    pub chunk_mib: Vec<usize>,
    /// --op hist-stream only: pipeline depths (chunk slots in flight, at least 2) to time,
    /// comma-separated (the library's default when not given).
    #[arg(long, value_delimiter = ',')]
    pub depth: Vec<usize>,
}

/// `--bins`: a number or an estimator's name, checked while the command line is parsed (so a
/// typo is a usage error, exit status 2); `hist`'s configuration reads it.
fn bins_value(text: &str) -> Result<String, String> {
    if text.trim().parse::<usize>().is_ok() || text.trim().parse::<smemkit::bins::BinRule>().is_ok()
    {
        Ok(text.to_string())
    } else {
        Err(format!(
            "`{text}` is neither a number of bins nor one of numpy's estimators (auto, fd, doane, scott, stone, rice, sturges, sqrt)"
        ))
    }
}
