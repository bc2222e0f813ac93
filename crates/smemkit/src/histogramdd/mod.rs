//! Joint histograms: [`histogramdd`] and [`histogram2d`], bit for bit `numpy.histogramdd`.
//!
//! A joint histogram bins every sample on each of its D axes and counts the tuple of bins as one
//! bin of a D-dimensional array (C order, the last axis fastest). Each axis takes a bin count (with
//! or without a range) or explicit edges, with numpy.histogramdd's rule (`axis`); a sample outside
//! any axis is not counted but tallied, and so is a sample with NaN on any axis. Samples come as an
//! (N, D) array in either memory order, as D separate arrays, or as interleaved channels
//! ([`JointSamples`]). The CPU engine (`cpu`) does everything; the CUDA backend runs the GPU engine
//! ([`cuda`]: the planner's tiers for the joint bin count, counts and f64 weight sums; its
//! device-resident entry point is [`cuda::DeviceJoint`]), which the auto backend does not choose yet.

mod axis;
mod cpu;
#[doc(hidden)]
pub mod cuda;
mod density;
mod layout;
mod tallies;

use std::time::{Duration, Instant};

pub use layout::{JointSamples, MAX_DIMS};
pub use tallies::JointTallies;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::histogram::bins::BinSpec;
use crate::histogram::plan::StrategyChoice;
use crate::histogram::{Counts, EngineReport};
use crate::sample::{Samples, Weights};

use axis::Axis;
use layout::Pick;

/// The most joint bins (the product of every axis's bins) one histogram may have: their u64
/// counters take 2 GiB.
pub const MAX_JOINT_BINS: usize = 1 << 28;

/// What a joint histogram needs besides the data.
#[derive(Debug, Clone, PartialEq)]
pub struct JointOptions {
    /// One bin specification per axis, or one for every axis. [`BinSpec::Uniform`] and
    /// [`BinSpec::Edges`]; integer bins do not exist in numpy.histogramdd.
    pub bins: Vec<BinSpec>,
    /// numpy's `density=True`: each bin divided by its volume and by the total.
    pub density: bool,
    /// The engine.
    pub backend: Backend,
    /// The GPU engine's strategy (auto: the planner's tier for the joint bin count).
    pub strategy: StrategyChoice,
}

impl JointOptions {
    /// Options for one bin specification per dimension.
    pub fn new(bins: Vec<BinSpec>) -> Self {
        JointOptions {
            bins,
            density: false,
            backend: Backend::Auto,
            strategy: StrategyChoice::Auto,
        }
    }
    /// The GPU strategy (`Auto`: the planner's choice for the joint bin count).
    pub fn strategy(mut self, strategy: StrategyChoice) -> Self {
        self.strategy = strategy;
        self
    }
    /// Divide by the cell volumes and the total.
    pub fn density(mut self, density: bool) -> Self {
        self.density = density;
        self
    }
    /// The backend.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }
}

/// A finished joint histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct JointHistogram {
    /// Bins per axis: the counts are an array of this shape in C order.
    pub shape: Vec<usize>,
    /// Counts, or sums of weights (f64; the CPU engine adds them in sample order as numpy's
    /// bincount does, the GPU engine in any order).
    pub counts: Counts,
    /// numpy's density, when asked for.
    pub density: Option<Vec<f64>>,
    /// Each axis's edges as numpy.histogramdd returns them (float32 edges widened exactly).
    pub edges: Vec<Vec<f64>>,
    /// The samples outside the bins.
    pub tallies: JointTallies,
    /// How many samples were read.
    pub samples: u64,
    /// What the engine did.
    pub engine: EngineReport,
    /// Time spent in the engine (edges excluded).
    pub elapsed: Duration,
}

impl JointHistogram {
    /// Samples that landed in a bin.
    pub fn counted(&self) -> u64 {
        self.samples - self.tallies.outside - self.tallies.nan
    }
    /// The flat (C order) index of the bin with multi-index `index`.
    pub fn flat_index(&self, index: &[usize]) -> usize {
        index
            .iter()
            .zip(&self.shape)
            .fold(0, |flat, (&i, &n)| flat * n + i)
    }
}

/// The joint histogram of `samples`, as `numpy.histogramdd(sample, bins, range, density, weights)`.
pub fn histogramdd(
    samples: &JointSamples<'_>,
    weights: Option<Weights<'_>>,
    options: &JointOptions,
) -> Result<JointHistogram> {
    let (n, dims) = (samples.len(), samples.dims());
    if let Some(w) = &weights {
        if w.len() != n {
            return Err(Error::WeightsLength {
                samples: n,
                weights: w.len(),
            });
        }
    }
    // numpy's histogramdd sums weights with bincount, in float64 whatever their type.
    let wide;
    let weights = match weights {
        Some(Weights::Int(w)) => {
            wide = w.to_f64();
            Some(Weights::F64(&wide))
        }
        other => other,
    };
    let specs: Vec<&BinSpec> = match options.bins.len() {
        1 => vec![&options.bins[0]; dims],
        d if d == dims => options.bins.iter().collect(),
        d => {
            return Err(Error::InvalidArgument(format!(
                "{d} bin specifications for {dims} axes: give one per axis, or one for all"
            )))
        }
    };
    let on_gpu = options.backend == Backend::Cuda;
    if on_gpu {
        cuda::check(dims)?;
    }
    macro_rules! typed {
        ($t:ty) => {
            run::<$t>(samples, weights, &specs, on_gpu.then_some(options.strategy))
        };
    }
    use crate::sample::SampleType as S;
    let (axes, counts, tallies, elapsed, gpu_detail) = match samples.sample_type() {
        S::U8 => typed!(u8),
        S::U16 => typed!(u16),
        S::U32 => typed!(u32),
        S::U64 => typed!(u64),
        S::I8 => typed!(i8),
        S::I16 => typed!(i16),
        S::I32 => typed!(i32),
        S::I64 => typed!(i64),
        S::F32 => typed!(f32),
        S::F64 => typed!(f64),
        S::F16 | S::BF16 => Err(Error::NotImplemented(format!(
            "joint histograms of {} samples (convert them to float32)",
            samples.sample_type()
        ))),
    }?;
    let density = options.density.then(|| density::density(&counts, &axes));
    Ok(JointHistogram {
        shape: axes.iter().map(Axis::nbins).collect(),
        counts,
        density,
        edges: axes.into_iter().map(|a| a.edges).collect(),
        tallies,
        samples: n as u64,
        engine: match gpu_detail {
            Some(detail) => EngineReport {
                backend: Backend::Cuda,
                detail,
            },
            None => EngineReport {
                backend: Backend::Cpu,
                detail: format!(
                    "CPU engine{}, {} threads",
                    if options.backend == Backend::Auto {
                        " (auto: the GPU engine of joint histograms is chosen only with the cuda backend)"
                    } else {
                        ""
                    },
                    rayon::current_num_threads()
                ),
            },
        },
        elapsed,
    })
}

/// `numpy.histogram2d(x, y, bins, range, density, weights)`: [`histogramdd`] of two separate arrays
/// (of one type and length); the first axis is `x`.
pub fn histogram2d(
    x: Samples<'_>,
    y: Samples<'_>,
    weights: Option<Weights<'_>>,
    options: &JointOptions,
) -> Result<JointHistogram> {
    histogramdd(&JointSamples::separate(vec![x, y])?, weights, options)
}

/// The axes, counts, tallies, engine time and, from the GPU engine, its report.
type Run = (Vec<Axis>, Counts, JointTallies, Duration, Option<String>);

fn run<T: Pick + cudarc::driver::DeviceRepr>(
    samples: &JointSamples<'_>,
    weights: Option<Weights<'_>>,
    specs: &[&BinSpec],
    on_gpu: Option<StrategyChoice>,
) -> Result<Run> {
    let views = samples
        .views::<T>()
        .ok_or_else(|| Error::InvalidArgument("joint histogram: mixed sample types".into()))?;
    let axes = views
        .iter()
        .zip(specs)
        .enumerate()
        .map(|(j, (view, spec))| Axis::resolve(spec, view, j))
        .collect::<Result<Vec<Axis>>>()?;
    let nbins = joint_bins(&axes)?;
    if on_gpu.is_some() && axes.iter().any(Axis::has_int_edges) {
        return Err(Error::NotImplemented(
            "integer edges compared exactly with integer samples (beyond 2^53) on the GPU engine of joint histograms; use the CPU engine"
                .into(),
        ));
    }
    if let Some(strategy) = on_gpu {
        let g = cuda::run(&views, &axes, nbins, samples.len(), weights, strategy)?;
        return Ok((axes, g.counts, g.tallies, g.elapsed, Some(g.detail)));
    }
    let start = Instant::now();
    let (counts, tallies) = cpu::run(&views, &axes, nbins, samples.len(), weights)?;
    Ok((axes, counts, tallies, start.elapsed(), None))
}

/// The product of every axis's bins, refused beyond [`MAX_JOINT_BINS`].
fn joint_bins(axes: &[Axis]) -> Result<usize> {
    let shape: Vec<String> = axes.iter().map(|a| a.nbins().to_string()).collect();
    let product = axes
        .iter()
        .try_fold(1usize, |p, a| p.checked_mul(a.nbins()))
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "too many joint bins: {} overflows a 64-bit count (the limit is {MAX_JOINT_BINS} joint bins)",
                shape.join(" x ")
            ))
        })?;
    if product > MAX_JOINT_BINS {
        return Err(Error::BinsTooLarge {
            what: "a joint histogram (the product of every axis's bins)",
            nbins: product,
            limit: MAX_JOINT_BINS,
        });
    }
    Ok(product)
}

#[cfg(test)]
mod tests;
