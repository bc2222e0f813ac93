//! 1-D histograms: one entry point, [`histogram`] (or [`run`] for a [`Request`] of any [`Input`]),
//! for every backend. It validates the request, resolves the bins with numpy's rule
//! ([`Binning::resolve`]), hands the work to the CPU or CUDA engine, and applies the out-of-range
//! policy to the tallies the engine returns. The options also choose the GPU strategy
//! ([`StrategyChoice`]), streaming ([`StreamMode`], [`FileInput`] for a file larger than memory),
//! several GPUs ([`DeviceSet`]) and several processes ([`RankSpec`]); [`bincount`] is numpy's.
//!
//! The submodules are the engines and not API (hidden; `smemkit::internals` is their home).

#[doc(hidden)]
pub mod bincount;
#[doc(hidden)]
pub mod bins;
#[doc(hidden)]
pub mod cpu;
#[doc(hidden)]
pub mod cuda;
#[doc(hidden)]
pub mod density;
mod engine_support;
pub mod int_sums;
#[doc(hidden)]
pub mod job;
#[doc(hidden)]
pub mod plan;
#[doc(hidden)]
pub mod request;
#[doc(hidden)]
pub mod result;
#[doc(hidden)]
pub mod stream_options;
pub mod sums;

use std::time::{Duration, Instant};

pub use bincount::bincount;
pub use cuda::multi::DeviceSet;
pub use cuda::ranks::RankSpec;
pub use cuda::stream::{FileInput, StreamMode, StreamOptions};
pub use plan::{Strategy, StrategyChoice};
pub use request::{run, Input, Request};
pub use result::{BinPart, Counts, Tallies};
pub use sums::WeightSums;

use crate::backend::Backend;

use crate::error::{Error, Result};
use crate::histogram::bins::{BinSpec, Binning, OutOfRange};
use crate::histogram::cuda::stream::StreamInput;
use crate::histogram::int_sums::WeightClass;
use crate::histogram::job::Job;
use crate::sample::{Samples, Weights};

/// Everything a histogram call needs besides the data.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramOptions {
    /// The bins.
    pub bins: BinSpec,
    /// What happens to samples outside the bins.
    pub policy: OutOfRange,
    /// The engine (`Auto`: CUDA when a GPU is there).
    pub backend: Backend,
    /// GPU strategy: the planner's choice unless forced (ignored by the CPU engine).
    pub strategy: StrategyChoice,
    /// GPU: whether the input streams through page-locked staging buffers, copies overlapped
    /// with kernels ([`crate::histogram::cuda::stream`]); by default when it is large.
    pub stream: StreamMode,
    /// GPU: the streaming pipeline's sizes.
    pub stream_options: StreamOptions,
    /// GPU: which GPUs; more than one splits the input into a shard per GPU and sums the counters
    /// with NCCL ([`crate::histogram::cuda::multi`]; host input always streams there).
    pub devices: DeviceSet,
    /// GPU: this process is one rank of several, each histogramming its slice of the same input
    /// ([`crate::histogram::cuda::ranks`]); every rank gets the whole histogram, or with bins
    /// sharded over the ranks its part of them ([`Histogram::part`]; rank 0 the whole when
    /// [`RankSpec::gather`] asks).
    pub ranks: Option<RankSpec>,
    /// numpy's `density=True`: also compute [`Histogram::density`] ([`crate::histogram::density`]).
    pub density: bool,
    /// How float weights are added ([`WeightSums::Numpy`]: numpy's bits, on the CPU and on one
    /// GPU fed from host memory).
    pub sums: WeightSums,
}

impl HistogramOptions {
    /// Options for `bins`: out-of-range samples ignored, the backend and strategy chosen for you.
    pub fn new(bins: BinSpec) -> Self {
        HistogramOptions {
            bins,
            policy: OutOfRange::Ignore,
            backend: Backend::Auto,
            strategy: StrategyChoice::Auto,
            stream: StreamMode::Auto,
            stream_options: StreamOptions::default(),
            devices: DeviceSet::Default,
            ranks: None,
            density: false,
            sums: WeightSums::Fast,
        }
    }
    /// How float weights are added.
    pub fn sums(mut self, sums: WeightSums) -> Self {
        self.sums = sums;
        self
    }
    /// Divide the counts by the bin widths and the total (numpy's `density=True`).
    pub fn density(mut self, density: bool) -> Self {
        self.density = density;
        self
    }
    /// The out-of-range policy.
    pub fn policy(mut self, policy: OutOfRange) -> Self {
        self.policy = policy;
        self
    }
    /// The backend.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }
    /// The GPU strategy (the planner's by default).
    pub fn strategy(mut self, strategy: StrategyChoice) -> Self {
        self.strategy = strategy;
        self
    }
    /// Whether the samples stream from host memory to one GPU.
    pub fn stream(mut self, mode: StreamMode) -> Self {
        self.stream = mode;
        self
    }
    /// The streaming pipeline's chunk sizes.
    pub fn stream_options(mut self, options: StreamOptions) -> Self {
        self.stream_options = options;
        self
    }
    /// Which GPUs run the histogram.
    pub fn devices(mut self, devices: DeviceSet) -> Self {
        self.devices = devices;
        self
    }
    /// This process's place among several (NCCL ranks).
    pub fn ranks(mut self, ranks: Option<RankSpec>) -> Self {
        self.ranks = ranks;
        self
    }
}

/// Which engine produced a result, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineReport {
    /// The engine that ran.
    pub backend: Backend,
    /// Human-readable details: threads for the CPU; device, strategy and launch shape for CUDA.
    pub detail: String,
}

/// Where a GPU call's time went, within [`Histogram::elapsed`] (all zero on the CPU engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Phases {
    /// GPU setup within the call: context opened, kernels compiled or loaded.
    pub setup: Duration,
    /// Samples copied to the device and the result back (zero where the streaming pipeline
    /// overlaps copies with kernels: there the rest of the call is both).
    pub transfer: Duration,
    /// The kernels, on the device's clock.
    pub kernel: Duration,
}

/// A finished histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// The counts (or weighted sums) per bin.
    pub counts: Counts,
    /// `nbins + 1` edges (integer bins: `0, 1, ..., nbins`).
    pub edges: Vec<f64>,
    /// The samples outside the bins and the NaN ones.
    pub tallies: Tallies,
    /// How many samples were read.
    pub samples: u64,
    /// The out-of-range policy applied.
    pub policy: OutOfRange,
    /// What the engine did.
    pub engine: EngineReport,
    /// Time spent in the engine (binning resolution excluded).
    pub elapsed: Duration,
    /// numpy's density (`counts / (sum * width)`) when [`HistogramOptions::density`] asked for it.
    pub density: Option<Vec<f64>>,
    /// The split of `elapsed` into setup, transfer and kernel time.
    pub phases: Phases,
    /// Why the automatic backend picked this engine, with both estimates
    /// ([`crate::backend::cost`]); `None` for an explicit backend.
    pub auto_choice: Option<String>,
    /// Bins sharded over ranks: the bins this rank holds (its counts and edges are theirs);
    /// `None` for a whole histogram.
    pub part: Option<BinPart>,
}

impl Histogram {
    /// This rank's part of a histogram sharded over ranks: the edges cut to its bins.
    fn with_part(mut self, binning: &Binning, part: Option<BinPart>) -> Histogram {
        if let Some(p) = &part {
            let e = binning.edges();
            self.edges = e[p.bins.start..=p.bins.end].to_vec();
        }
        self.part = part;
        self
    }

    /// Samples that landed in a bin.
    pub fn counted(&self) -> u64 {
        let outside = match self.policy {
            OutOfRange::Clamp => 0,
            _ => self.tallies.below + self.tallies.above,
        };
        self.samples - self.tallies.nan - outside
    }
    /// How many bins.
    pub fn nbins(&self) -> usize {
        self.counts.len()
    }
}

/// Computes a histogram of `samples` (optionally weighted) as `options` ask.
pub fn histogram(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    options: &HistogramOptions,
) -> Result<Histogram> {
    histogram_with_progress(samples, weights, options, None)
}

#[doc(hidden)]
/// [`histogram`], telling `progress` the bytes of samples handed to the GPU so far when the
/// input streams (other engines do not call it).
pub fn histogram_with_progress(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    options: &HistogramOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Histogram> {
    if let Some(w) = &weights {
        if w.len() != samples.len() {
            return Err(Error::WeightsLength {
                samples: samples.len(),
                weights: w.len(),
            });
        }
    }
    crate::histogram::engine_support::check_spec(
        &options.bins,
        weights.is_some(),
        options.ranks.is_some(),
    )?;
    let class = WeightClass::of(&weights);
    let binning = Binning::resolve(&options.bins, samples)?;
    let gap = crate::histogram::engine_support::cuda_gap(&binning, samples.sample_type());
    // One GPU or the CPU for host samples: `Auto` weighs both ([`crate::backend::cost`]).
    let (requested, auto_choice) =
        if gap.is_none() && options.ranks.is_none() && options.devices == DeviceSet::Default {
            let bytes = samples.byte_len() as u64 + weight_bytes(&weights);
            crate::backend::resolve_for_host(
                options.backend,
                bytes,
                binning.nbins(),
                streamed_by_size(bytes, options.stream),
            )
        } else {
            (options.backend, None)
        };
    let (mut backend, mut note) = crate::histogram::engine_support::choose(requested, gap)?;
    if backend != Backend::Cuda
        && (options.ranks.is_some() || options.devices != DeviceSet::Default)
    {
        return Err(Error::InvalidArgument(format!(
            "{} the CUDA backend, and this histogram runs on the CPU{}",
            match &options.ranks {
                Some(r) => format!(
                    "several ranks ({}; SMEMKIT_LAUNCHER=none runs each process alone) need",
                    r.describe()
                ),
                None => "a device set needs".into(),
            },
            if options.backend == Backend::Auto {
                " (no usable GPU)"
            } else {
                ""
            }
        )));
    }
    // Float weights summed in numpy's order: by the CPU engine or one GPU fed the whole input (a
    // stream's chunks are not cut at numpy's blocks). Integer weights are exact in any order, even
    // where a path widens them to float64.
    let numpy_float_sums = options.sums == WeightSums::Numpy
        && matches!(weights, Some(Weights::F32(_) | Weights::F64(_)));
    let one_gpu = backend == Backend::Cuda
        && options.ranks.is_none()
        && options.devices == DeviceSet::Default;
    let mut streamed = one_gpu
        && !samples.is_empty()
        && streams(
            samples.byte_len(),
            weight_bytes(&weights) as usize,
            options,
            numpy_float_sums,
        )?;
    if numpy_float_sums && streamed && options.backend == Backend::Auto {
        backend = Backend::Cpu;
        streamed = false;
        note = format!(
            "{note}; the CPU engine: weights summed in numpy's order do not stream, and the input \
             does not fit the GPU whole"
        );
    }
    let one_gpu = one_gpu && backend == Backend::Cuda;
    // The CPU engine's slots are u32 (the bins plus below, above and NaN): refused here with the
    // limit named, before any buffer of that size is asked for.
    let cpu_limit = u32::MAX as usize - 3;
    if backend == Backend::Cpu && binning.nbins() > cpu_limit {
        return Err(Error::BinsTooLarge {
            what: "the CPU engine",
            nbins: binning.nbins(),
            limit: cpu_limit,
        });
    }
    // One GPU fed from host memory and the CPU sum integer weights as exact 64-bit integers; the
    // other paths (several GPUs, ranks, a streamed input) in float64 (`int_sums`).
    let exact_ints = backend == Backend::Cpu || (one_gpu && !streamed);
    let mut wide = Vec::new();
    let weights = int_sums::prepare(weights, &options.bins, exact_ints, &mut wide)?;
    if numpy_float_sums {
        if !sums::numpy_blocks_apply(&binning) {
            return Err(Error::InvalidArgument(
                "weights summed in numpy's order need uniform bins (numpy adds the weights of \
                 explicit edges in sorted order, and bincount's in one pass)"
                    .into(),
            ));
        }
        if backend == Backend::Cuda && (!one_gpu || streamed) {
            return Err(Error::NotImplemented(format!(
                "weights summed in numpy's order {} (the CPU engine and one GPU fed in batches \
                 sum them so)",
                if streamed {
                    "in a streamed input"
                } else {
                    "on several GPUs or ranks"
                }
            )));
        }
    }
    let job = Job {
        weights,
        binning: &binning,
        policy: options.policy,
        strategy: options.strategy,
        stream: options.stream_options,
        progress,
        sums: options.sums,
    };
    let start = Instant::now();
    let before = (crate::gpu::setup_time(), crate::gpu::work_time::work_time());
    let extras = |backend: Backend, elapsed: Duration, auto_choice: Option<String>| {
        let work = crate::gpu::work_time::work_time().since(before.1);
        CallFacts {
            backend,
            elapsed,
            phases: Phases {
                setup: crate::gpu::setup_time().saturating_sub(before.0),
                transfer: work.transfer,
                kernel: work.kernel,
            },
            auto_choice,
            part: false,
        }
    };
    // No samples: numpy's zero counts over the resolved bins, the same on every engine (several
    // ranks still take part in the all-reduce of the others, so they go on to their engine).
    if samples.is_empty() && options.ranks.is_none() && options.devices == DeviceSet::Default {
        if backend == Backend::Cuda {
            // An explicit CUDA request still needs a usable GPU, empty input or not.
            crate::gpu::gpu()?;
        }
        let n = binning.nbins();
        let counts = match weights {
            Some(_) => Counts::Weighted(vec![0.0; n]),
            None => Counts::Unweighted(vec![0; n]),
        };
        let detail = "no samples: zero counts".to_string();
        return finish(
            class,
            options,
            &binning,
            0,
            (counts, Tallies::default(), detail),
            extras(backend, start.elapsed(), auto_choice),
        );
    }
    let mut part = None;
    let (counts, tallies, detail) = match backend {
        Backend::Cpu => {
            let r = crate::sample::with_samples!(samples, s => crate::histogram::cpu::histogram_with_sums(s, weights, &binning, options.policy, options.sums));
            (r.counts, r.tallies, format!("{}{note}", r.detail))
        }
        Backend::Cuda if options.ranks.is_some() => {
            let spec = options.ranks.as_ref().expect("checked by the guard");
            let (r, p) =
                crate::histogram::cuda::ranks::histogram(spec, &options.devices, samples, &job)?;
            // Gathered, rank 0 holds the whole and computes the density; the other ranks'
            // parts carry none.
            if p.is_some() && options.density && spec.gather == crate::launch::gather::Gather::Off {
                return Err(Error::NotImplemented(
                    "density=True with bins sharded over ranks (each rank holds its slice of the \
                     bins, and the density needs every rank's total): gather the parts on rank 0 \
                     (--gather), or compute it from the parts"
                        .into(),
                ));
            }
            part = p;
            (r.counts, r.tallies, r.detail)
        }
        Backend::Cuda if options.devices != DeviceSet::Default => {
            let devices = options.devices.resolve()?;
            let r = crate::histogram::cuda::multi::histogram(samples, &devices, &job)?;
            (r.counts, r.tallies, r.detail)
        }
        Backend::Cuda if streamed => {
            let r = crate::histogram::cuda::stream::histogram(&StreamInput::Host(samples), &job)?;
            (r.counts, r.tallies, r.detail)
        }
        Backend::Cuda => {
            let r = crate::histogram::cuda::prepared::histogram(samples, &job)?;
            (r.counts, r.tallies, r.detail)
        }
        Backend::Auto => unreachable!("resolved above"),
    };
    let elapsed = start.elapsed();
    finish(
        class,
        options,
        &binning,
        samples.len(),
        (counts, tallies, detail),
        CallFacts {
            part: part.is_some(),
            ..extras(backend, elapsed, auto_choice)
        },
    )
    .map(|h| h.with_part(&binning, part))
}

/// How a call ran, for its [`Histogram`].
struct CallFacts {
    backend: Backend,
    elapsed: Duration,
    phases: Phases,
    auto_choice: Option<String>,
    /// The counts are one rank's part of bins sharded over ranks: no density (it would be
    /// normalised by the part's total, not the whole's).
    part: bool,
}

/// The engine's counts and tallies as a [`Histogram`], after the out-of-range policy's check.
fn finish(
    class: WeightClass,
    options: &HistogramOptions,
    binning: &Binning,
    samples: usize,
    (counts, tallies, detail): (Counts, Tallies, String),
    call: CallFacts,
) -> Result<Histogram> {
    let CallFacts {
        backend,
        elapsed,
        phases,
        auto_choice,
        part,
    } = call;
    if options.policy == OutOfRange::Error
        && (tallies.below > 0 || tallies.above > 0 || tallies.nan > 0)
    {
        return Err(Error::OutOfRange {
            below: tallies.below,
            above: tallies.above,
            nan: tallies.nan,
        });
    }
    let counts = class.counts(counts)?;
    let density = (options.density && !part).then(|| {
        crate::histogram::density::density(
            &counts,
            &crate::histogram::density::bin_widths(binning),
            class == WeightClass::Float32,
        )
    });
    Ok(Histogram {
        density,
        counts,
        edges: binning.edges(),
        tallies,
        samples: samples as u64,
        policy: options.policy,
        engine: EngineReport { backend, detail },
        elapsed,
        phases,
        auto_choice,
        part: None,
    })
}

/// Whether [`histogram_with_progress`] would stream `bytes` bytes of samples to one GPU with
/// `options` (the CUDA backend, no device set, no ranks, and [`StreamMode`] or the size says so):
/// the case where a caller holding the samples in a file can pass a [`FileInput`] to
/// [`histogram_file_with_progress`] instead of mapping or loading it. Asks the GPU for its free
/// memory on [`StreamMode::Auto`] without a device budget, and so fails where there is no GPU.
pub fn streams_to_one_gpu(bytes: usize, options: &HistogramOptions) -> Result<bool> {
    let streamed = streamed_by_size(bytes as u64, options.stream);
    let nbins = nominal_nbins(&options.bins);
    if crate::backend::resolve_for_host(options.backend, bytes as u64, nbins, streamed).0
        != Backend::Cuda
        || options.ranks.is_some()
        || options.devices != DeviceSet::Default
    {
        return Ok(false);
    }
    streams(bytes, 0, options, options.sums == WeightSums::Numpy)
}

#[doc(hidden)]
/// [`histogram_with_progress`] of the samples of a file, streamed from it to one GPU by positioned
/// reads ([`FileInput`]): the file is never mapped nor loaded, so it may be larger than host
/// memory, and a file that shrinks or fails while it is read is an [`Error::Read`] (with a mapped
/// file it would be a SIGBUS). The input always streams (`options.stream` is not consulted: see
/// [`streams_to_one_gpu`]); it needs the CUDA backend, one GPU and no ranks. Uniform bins without
/// a range read the file once more first, for its minimum and maximum ([`FileInput::binning`]).
pub fn histogram_file_with_progress(
    file: &FileInput,
    weights: Option<Weights<'_>>,
    options: &HistogramOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Histogram> {
    if let Some(w) = &weights {
        if w.len() != file.len() {
            return Err(Error::WeightsLength {
                samples: file.len(),
                weights: w.len(),
            });
        }
    }
    let backend = crate::backend::resolve_backend(options.backend);
    let auto_choice = (options.backend == Backend::Auto).then(|| {
        let nbins = nominal_nbins(&options.bins);
        let bytes = file.byte_len() as u64 + weight_bytes(&weights);
        match crate::backend::resolve_for_host(options.backend, bytes, nbins, true) {
            (Backend::Cuda, Some(why)) => why,
            (_, why) => format!(
                "{}; a file streams to the GPU only, which runs it",
                why.unwrap_or_default()
            ),
        }
    });
    if backend != Backend::Cuda || options.ranks.is_some() || options.devices != DeviceSet::Default
    {
        return Err(Error::InvalidArgument(format!(
            "streaming from the file {} needs the CUDA backend on one GPU without ranks (map or read the file and call `histogram` otherwise){}",
            file.path().display(),
            if options.backend == Backend::Auto && backend != Backend::Cuda {
                " (no usable GPU)"
            } else {
                ""
            }
        )));
    }
    crate::histogram::engine_support::check_spec(&options.bins, weights.is_some(), true)?;
    let class = WeightClass::of(&weights);
    let mut wide = Vec::new();
    // A streamed input sums integer weights in float64 (`int_sums`).
    let numpy_float_sums = options.sums == WeightSums::Numpy
        && matches!(weights, Some(Weights::F32(_) | Weights::F64(_)));
    let weights = int_sums::prepare(weights, &options.bins, false, &mut wide)?;
    if numpy_float_sums {
        return Err(Error::NotImplemented(
            "weights summed in numpy's order in a streamed file (the CPU engine and one GPU fed \
             in batches sum them so)"
                .into(),
        ));
    }
    let binning = file.binning(&options.bins)?;
    crate::histogram::engine_support::choose(
        Backend::Cuda,
        crate::histogram::engine_support::cuda_gap(&binning, file.sample_type()),
    )?;
    let start = Instant::now();
    let setup_before = crate::gpu::setup_time();
    let job = Job {
        weights,
        binning: &binning,
        policy: options.policy,
        strategy: options.strategy,
        stream: options.stream_options,
        progress,
        sums: options.sums,
    };
    let r = crate::histogram::cuda::stream::histogram(&StreamInput::File(file), &job)?;
    let phases = Phases {
        setup: crate::gpu::setup_time().saturating_sub(setup_before),
        ..Phases::default()
    };
    finish(
        class,
        options,
        &binning,
        file.len(),
        (r.counts, r.tallies, r.detail),
        CallFacts {
            backend: Backend::Cuda,
            elapsed: start.elapsed(),
            phases,
            auto_choice,
            part: false,
        },
    )
}

/// Whether an input of `bytes` would stream by its size alone (the free device memory, which
/// needs the GPU, aside): what the automatic backend's transfer estimate assumes.
fn streamed_by_size(bytes: u64, mode: StreamMode) -> bool {
    match mode {
        StreamMode::Always => true,
        StreamMode::Never => false,
        StreamMode::Auto => bytes >= crate::histogram::cuda::stream::AUTO_STREAM_BYTES as u64,
    }
}

fn weight_bytes(weights: &Option<Weights<'_>>) -> u64 {
    match weights {
        Some(Weights::F32(w)) => std::mem::size_of_val(*w) as u64,
        Some(Weights::F64(w)) => std::mem::size_of_val(*w) as u64,
        // Copied in their own type (widened to float64 only where a stream carries them).
        Some(Weights::Int(w)) => (w.int_type().bytes() * w.len()) as u64,
        None => 0,
    }
}

/// The bin count a spec names before the data is seen (numpy's estimators: a typical 1000).
fn nominal_nbins(spec: &BinSpec) -> usize {
    match spec {
        BinSpec::Integer { nbins }
        | BinSpec::Uniform { nbins, .. }
        | BinSpec::UniformInSampleType { nbins, .. }
        | BinSpec::UniformInRangeType { nbins, .. }
        | BinSpec::UniformIntRange { nbins, .. } => *nbins,
        BinSpec::Edges(e) => e.len().saturating_sub(1),
        BinSpec::IntEdges(e) => e.len().saturating_sub(1),
        BinSpec::Estimated { .. } => 1000,
    }
}

/// Whether a GPU histogram of `bytes` streams (the free device memory is asked only on `Auto`).
/// Whether host samples of `bytes` (with `weight_bytes` of weights) stream to one GPU. Weights
/// summed in numpy's order are summed only from a whole copy, so `Auto` streams those only where
/// the input does not fit the device's room.
fn streams(
    bytes: usize,
    weight_bytes: usize,
    options: &HistogramOptions,
    numpy_order: bool,
) -> Result<bool> {
    let room = match (options.stream, options.stream_options.device_budget) {
        (StreamMode::Auto, Some(budget)) => budget,
        (StreamMode::Auto, None) => crate::gpu::gpu()?.memory()?.0,
        _ => 0,
    };
    if numpy_order && options.stream == StreamMode::Auto {
        return Ok(bytes.saturating_add(weight_bytes) > room);
    }
    Ok(crate::histogram::cuda::stream::should_stream(
        options.stream,
        bytes,
        room,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(bytes: usize) -> HistogramOptions {
        HistogramOptions::new(BinSpec::Integer { nbins: 10 }).stream_options(StreamOptions {
            device_budget: Some(bytes),
            ..StreamOptions::default()
        })
    }

    #[test]
    fn numpy_order_streams_only_what_does_not_fit() {
        let big = crate::histogram::cuda::stream::AUTO_STREAM_BYTES;
        let options = budget(4 * big);
        // Other sums stream large inputs; numpy's order copies them whole where they fit.
        assert!(streams(big, big, &options, false).unwrap());
        assert!(!streams(big, big, &options, true).unwrap());
        // The weights count towards the fit.
        assert!(streams(3 * big, 2 * big, &options, true).unwrap());
        // Forced modes stay forced.
        let always = budget(4 * big).stream(StreamMode::Always);
        assert!(streams(1, 0, &always, true).unwrap());
        let never = budget(1).stream(StreamMode::Never);
        assert!(!streams(big, 0, &never, true).unwrap());
    }
}
