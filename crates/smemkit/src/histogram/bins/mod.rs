//! Bin specifications and numpy's binning rule.
//!
//! A user asks for bins with a [`BinSpec`]; [`Binning::resolve`] turns it, together with the samples,
//! into the exact rule every engine applies. Uniform float bins reproduce `numpy.histogram`
//! bit for bit: numpy 2 computes float32 data in float32 (NEP 50 promotion), builds the edges with
//! `linspace`, estimates the bin with `(x - first) / (last - first) * n` and then corrects the
//! estimate against the actual edge values. The GPU kernels receive the same numbers
//! ([`UniformF32`], [`UniformF64`]) and repeat the same arithmetic.

pub(crate) mod estimate;
pub mod estimators;
pub mod extremes;
#[doc(hidden)]
pub mod half;
pub mod int_edges;
#[cfg(test)]
mod interior_tests;
mod narrow_range;
pub(crate) mod stats;

use crate::error::{Error, Result};
use crate::sample::{Sample, SampleType, Samples};
use int_edges::IntEdges;

/// What bins the caller wants.
#[derive(Debug, Clone, PartialEq)]
pub enum BinSpec {
    /// `bincount`: integer samples, bin `v` counts the value `v`, for `v` in `[0, nbins)`.
    Integer {
        /// How many bins.
        nbins: usize,
    },
    /// `nbins` equal bins over `range` (`[lo, hi]`, last bin closed), or over the data's own
    /// minimum and maximum when `range` is `None`.
    Uniform {
        /// How many bins.
        nbins: usize,
        /// `[lo, hi]`, or `None` for the data's minimum and maximum.
        range: Option<(f64, f64)>,
    },
    /// `nbins` equal bins over `range` given as two values of the samples' own float type (numpy
    /// scalars of it, as `range=(x.min(), x.max())` of float32 or float16 samples gives): numpy
    /// then computes the edges and each sample's bin in that type, as it does over the data's own
    /// minimum and maximum, where [`BinSpec::Uniform`]'s range of Python floats is widened to
    /// float64 first. float32, float16 and bfloat16 samples; float64 ones as
    /// [`BinSpec::Uniform`].
    UniformInSampleType {
        /// How many bins.
        nbins: usize,
        /// `[lo, hi]`, both values of the samples' type.
        range: (f64, f64),
    },
    /// `nbins` equal bins over a range of two integers (Python ints): numpy then keeps bfloat16
    /// samples (ml_dtypes' type, which widens a range of Python floats to float64) in bfloat16
    /// where it can, as it keeps float16 over any range of Python numbers. Every other sample
    /// type bins as over [`BinSpec::Uniform`]'s range of the same values.
    UniformIntRange {
        /// How many bins.
        nbins: usize,
        /// `[lo, hi]`.
        range: (i64, i64),
    },
    /// `nbins` equal bins over `range` given as two values of `range_type` (float32 or float16:
    /// numpy scalars of it) for samples numpy bins in float64 (float64 ones, and integers of 32
    /// bits or more): numpy then computes the edges (`linspace`) and the range's width in the
    /// range's type, and each sample's estimate and its comparisons in float64 against them.
    /// Samples of the range's own type bin as over [`BinSpec::UniformInSampleType`]. CPU engine.
    UniformInRangeType {
        /// How many bins.
        nbins: usize,
        /// `[lo, hi]`, both values of `range_type`.
        range: (f64, f64),
        /// float32 or float16.
        range_type: SampleType,
    },
    /// Explicit, non-decreasing edges (infinite ones and equal neighbours allowed, as in numpy);
    /// `edges.len() - 1` bins.
    Edges(Vec<f64>),
    /// Explicit integer edges held exactly (numpy's int64 / uint64 `bins`): see [`IntEdges`].
    IntEdges(IntEdges),
    /// numpy's `bins='auto'`, `'fd'`, ...: as many equal bins over `range` (the data's minimum and
    /// maximum when `None`) as the estimator asks for ([`crate::histogram::bins::estimators`]). Not with weights.
    Estimated {
        /// The estimator.
        rule: crate::histogram::bins::estimators::BinRule,
        /// `[lo, hi]`, or `None` for the data's minimum and maximum.
        range: Option<(f64, f64)>,
    },
}

/// What happens to samples outside the bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutOfRange {
    /// Not counted, only tallied (numpy, CUB).
    #[default]
    Ignore,
    /// Below the range into the first bin, above into the last (the CUDA programming guide's kernel).
    Clamp,
    /// Any sample that would not be counted (below, above or NaN) fails the whole call.
    Error,
}

impl OutOfRange {
    /// The policy's name, as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            OutOfRange::Ignore => "ignore",
            OutOfRange::Clamp => "clamp",
            OutOfRange::Error => "error",
        }
    }
}

impl std::str::FromStr for OutOfRange {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "ignore" => Ok(OutOfRange::Ignore),
            "clamp" => Ok(OutOfRange::Clamp),
            "error" => Ok(OutOfRange::Error),
            _ => Err(Error::InvalidArgument(format!(
                "unknown out-of-range policy `{text}` (expected ignore, clamp or error)"
            ))),
        }
    }
}

/// Where one sample lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Inside the bins: this one.
    Bin(usize),
    /// Below the first edge.
    Below,
    /// Above the last edge.
    Above,
    /// A NaN sample.
    Nan,
}

/// Uniform bins computed in float32, as numpy does for float32 samples.
#[derive(Debug, Clone, PartialEq)]
pub struct UniformF32 {
    /// Number of bins (`edges.len() - 1`).
    pub nbins: usize,
    /// The lower edge as float32: samples below it are out of range (`x < first`).
    pub first: f32,
    /// The upper edge as float32: samples above it are out of range (`x > last`); `x == last`
    /// is counted in the last bin.
    pub last: f32,
    /// `last - first`; numpy divides in float64 when the range came from the caller (Python floats)
    /// and in float32 when it came from the data.
    pub denom: f64,
    /// Whether numpy's estimate `(x - first) / denom * nbins` is computed in float64 (`true`: the
    /// float32 difference widened, divided by `denom`, times `nbins` as float64) or entirely in
    /// float32 (`false`: `denom` and `nbins` rounded to float32).
    pub denom_is_f64: bool,
    /// The range in float64 as numpy's linspace saw it (after widening an empty range); the GPU
    /// recomputes the edges from it instead of reading `edges`.
    pub range64: (f64, f64),
    /// numpy's `nbins + 1` edges in float32; the estimate is corrected against them: one down if
    /// `x < edges[i]`, else one up if `x >= edges[i + 1]` (never past the last bin).
    pub edges: Vec<f32>,
    /// [`UniformF32::exact_grid`], found once when the bins are resolved: the check walks every
    /// edge, and both engines ask for it several times per histogram.
    exact_grid: Option<ExactGrid>,
}

/// Float32 bins on a grid of a power-of-two width ([`UniformF32::exact_grid`]): the bin of a
/// sample `x` inside them is `floor(x * inv_width) - first_index`, every step exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactGrid {
    /// `1 / width`, a power of two.
    pub inv_width: f32,
    /// `first / width`: an integer, and with the bin count at most 2^24 in magnitude, so that
    /// every grid index of the bins is a float32.
    pub first_index: f32,
}

/// Uniform bins computed in float64 (float64 and all integer samples).
#[derive(Debug, Clone, PartialEq)]
pub struct UniformF64 {
    /// Number of bins (`edges.len() - 1`).
    pub nbins: usize,
    /// Lower edge: `x < first` is below the range.
    pub first: f64,
    /// Upper edge: `x > last` is above the range, `x == last` goes to the last bin. It is the
    /// last of `edges` except for bfloat16 samples whose range's upper bound rounds in float32
    /// up onto a bfloat16 value, which numpy keeps ([`half`]'s `resolve`): `last` is that value,
    /// counted in the last bin. Only the keep test reads it there (16-bit samples reach the GPU
    /// as a table of [`Binning::locate`]).
    pub last: f64,
    /// The divisor of numpy's estimate `(x - first) / denom * nbins` (all float64). For integer
    /// samples with an automatic range it is `max - min` computed exactly and rounded once, which
    /// can differ from `last - first`.
    pub denom: f64,
    /// numpy's `nbins + 1` edges (`linspace` in float64); the estimate is corrected against them
    /// as for [`UniformF32::edges`].
    pub edges: Vec<f64>,
    /// [`UniformF64::exact_grid`], found once when the bins are resolved (the check walks every
    /// edge).
    exact_grid: Option<ExactGrid64>,
    /// The type numpy computed `edges` and `denom` in when narrower than float64 (a range of
    /// float32 or float16 values: [`BinSpec::UniformInRangeType`]); the GPU kernels recompute
    /// float64 edges and so cannot take such bins.
    narrow_type: Option<SampleType>,
}

/// Float64 bins on a grid of a power-of-two width ([`UniformF64::exact_grid`]): the bin of a
/// sample `x` inside them is `floor(x * inv_width) - first_index`, every step exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactGrid64 {
    /// `1 / width`, a power of two.
    pub inv_width: f64,
    /// `first / width`: an integer, and with the bin count at most 2^53 in magnitude, so that
    /// every grid index of the bins is a float64.
    pub first_index: f64,
}

/// A resolved binning rule: what every engine applies to every sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Binning {
    /// Bin `v` counts the value `v`.
    Integer {
        /// How many bins.
        nbins: usize,
    },
    /// Uniform bins of float32 samples, cut in float32 as numpy does.
    UniformF32(UniformF32),
    /// Uniform bins cut in float64.
    UniformF64(UniformF64),
    /// Explicit edges.
    Edges(Vec<f64>),
    /// Integer edges beyond 2^53 compared with integer samples exactly (CPU engine only).
    IntEdges(Vec<i128>),
    /// Uniform bins of float16 / bfloat16 samples in their own arithmetic (CPU engine only).
    UniformHalf(half::UniformHalf),
}

impl UniformF32 {
    /// The grid under the bins when every edge is `(k0 + i) * width` exactly, for a power-of-two
    /// width and an integer `k0` (pixel values over [0, 256), integer-valued data at unit width,
    /// 2^k bins over [-4, 4]...): the true bin of `x` is then `floor(x * (1 / width)) - k0`, the
    /// product exact, and numpy's result is the true bin, since its correction returns the bin the
    /// edges define from any estimate within one bin of it. Both engines then skip the estimate
    /// and the two edge comparisons (the CPU's exact code loop, the GPU's `uniform32x` kernels).
    /// The edges are checked one by one, not derived.
    pub fn exact_grid(&self) -> Option<ExactGrid> {
        self.exact_grid
    }

    /// The same bins with [`UniformF32::exact_grid`] found (every constructor ends here).
    fn with_exactness(mut self) -> UniformF32 {
        self.exact_grid = self.find_exact_grid();
        self
    }

    fn find_exact_grid(&self) -> Option<ExactGrid> {
        if self.nbins == 0
            || self.nbins > 1 << 24
            || !self.first.is_finite()
            || !self.last.is_finite()
        {
            return None;
        }
        let width = (self.last as f64 - self.first as f64) / self.nbins as f64;
        let width32 = width as f32;
        let power_of_two = width32 as f64 == width
            && width32.is_normal()
            && width32 > 0.0
            && width32.to_bits() & 0x007f_ffff == 0;
        let inv = 1.0 / width32;
        if !power_of_two || !inv.is_normal() {
            return None;
        }
        // Scaling by a power of two is exact for every sample in the bins unless it rounds a
        // product below float32's smallest normal: only a sample just below 0 can then lose its
        // sign's bin (-tiny * inv rounding to -0), so a range reaching below 0 needs inv >= 1.
        if self.first < 0.0 && inv < 1.0 {
            return None;
        }
        let k0 = self.first as f64 * inv as f64;
        if k0.fract() != 0.0 || k0.abs() + self.nbins as f64 > (1u64 << 24) as f64 {
            return None;
        }
        self.edges
            .iter()
            .enumerate()
            .all(|(i, &e)| e == (k0 + i as f64) as f32 * width32)
            .then_some(ExactGrid {
                inv_width: inv,
                first_index: k0 as f32,
            })
    }

    #[inline(always)]
    /// The slot of `x`.
    pub fn locate(&self, x: f32) -> Slot {
        if x.is_nan() {
            return Slot::Nan;
        }
        if x < self.first {
            return Slot::Below;
        }
        if x > self.last {
            return Slot::Above;
        }
        let n = self.nbins;
        let diff = x - self.first;
        let estimate = if self.denom_is_f64 {
            (diff as f64 / self.denom * n as f64) as i64
        } else {
            (diff / self.denom as f32 * n as f32) as i64
        };
        Slot::Bin(correct_estimate(
            estimate,
            n,
            |i| x < self.edges[i],
            |i| x >= self.edges[i],
        ))
    }
}

impl UniformF64 {
    /// Bins with numpy's `nbins + 1` float64 edges, `first` and `last` the first and last of
    /// them and `denom` the divisor of numpy's estimate; [`UniformF64::exact_grid`] is found here.
    pub fn new(nbins: usize, first: f64, last: f64, denom: f64, edges: Vec<f64>) -> UniformF64 {
        let mut u = UniformF64 {
            nbins,
            first,
            last,
            denom,
            edges,
            exact_grid: None,
            narrow_type: None,
        };
        u.exact_grid = u.find_exact_grid();
        u
    }

    /// The type numpy computed the edges and the range's width in, where narrower than float64
    /// (see [`BinSpec::UniformInRangeType`]).
    pub fn narrow_type(&self) -> Option<SampleType> {
        self.narrow_type
    }

    /// As [`UniformF32::exact_grid`], in float64: where every edge is `(k0 + i) * width` exactly
    /// for a power-of-two width and an integer `k0` (2^k bins over [-4, 4], unit bins of
    /// integer-valued data...), the true bin of a float64 `x` is `floor(x * (1 / width)) - k0`, the
    /// product exact, and numpy's corrected estimate is that bin. The GPU's `uniform64x` kernels
    /// (float64 samples) skip the estimate and the edge comparisons there.
    pub fn exact_grid(&self) -> Option<ExactGrid64> {
        self.exact_grid
    }

    fn find_exact_grid(&self) -> Option<ExactGrid64> {
        const EXACT_INTEGERS: f64 = (1u64 << 53) as f64;
        if self.nbins == 0
            || self.edges.len() != self.nbins + 1
            || !self.first.is_finite()
            || !self.last.is_finite()
        {
            return None;
        }
        let width = self.edges[1] - self.edges[0];
        let power_of_two =
            width.is_normal() && width > 0.0 && width.to_bits() & 0x000f_ffff_ffff_ffff == 0;
        let inv = 1.0 / width;
        if !power_of_two || !inv.is_normal() {
            return None;
        }
        // As for float32: only a sample just below 0 can lose its bin to a product rounded to -0,
        // so a range reaching below 0 needs inv >= 1.
        if self.first < 0.0 && inv < 1.0 {
            return None;
        }
        let k0 = self.first * inv;
        if k0.fract() != 0.0 || k0.abs() + self.nbins as f64 > EXACT_INTEGERS {
            return None;
        }
        self.edges
            .iter()
            .enumerate()
            .all(|(i, &e)| e == (k0 + i as f64) * width)
            .then_some(ExactGrid64 {
                inv_width: inv,
                first_index: k0,
            })
    }

    #[inline(always)]
    /// The slot of `x`.
    pub fn locate(&self, x: f64) -> Slot {
        if x.is_nan() {
            return Slot::Nan;
        }
        if x < self.first {
            return Slot::Below;
        }
        if x > self.last {
            return Slot::Above;
        }
        let n = self.nbins;
        let estimate = ((x - self.first) / self.denom * n as f64) as i64;
        Slot::Bin(correct_estimate(
            estimate,
            n,
            |i| x < self.edges[i],
            |i| x >= self.edges[i],
        ))
    }
}

/// numpy's correction of the arithmetic estimate against the real edges: the estimate may be one
/// off near an edge. `below_edge(i)` is `x < edges[i]`, `at_or_above_edge(i)` is `x >= edges[i]`.
#[inline(always)]
fn correct_estimate(
    estimate: i64,
    n: usize,
    below_edge: impl Fn(usize) -> bool,
    at_or_above_edge: impl Fn(usize) -> bool,
) -> usize {
    // numpy would index out of bounds if rounding pushed the estimate past n; keep it in range.
    let mut i = estimate.clamp(0, n as i64) as usize;
    if i == n {
        i -= 1;
    }
    if i > 0 && below_edge(i) {
        i -= 1;
    }
    if i != n - 1 && at_or_above_edge(i + 1) {
        i += 1;
    }
    i
}

/// numpy's `linspace(start, stop, num)` in float64.
pub fn linspace_f64(start: f64, stop: f64, num: usize) -> Vec<f64> {
    let div = (num - 1) as f64;
    let delta = stop - start;
    let step = delta / div;
    let mut y: Vec<f64> = (0..num)
        .map(|i| {
            let i = i as f64;
            if step == 0.0 {
                i / div * delta + start
            } else {
                i * step + start
            }
        })
        .collect();
    y[num - 1] = stop;
    y
}

/// numpy's `linspace(start, stop, num)` for float32 endpoints (numpy 2 stays in float32).
pub fn linspace_f32(start: f32, stop: f32, num: usize) -> Vec<f32> {
    let div = (num - 1) as f32;
    let delta = stop - start;
    let step = delta / div;
    let mut y: Vec<f32> = (0..num)
        .map(|i| {
            let i = i as f32;
            if step == 0.0 {
                i / div * delta + start
            } else {
                i * step + start
            }
        })
        .collect();
    y[num - 1] = stop;
    y
}

impl Binning {
    /// Resolves `spec` for `samples` exactly as numpy would (see the module documentation).
    pub fn resolve(spec: &BinSpec, samples: Samples<'_>) -> Result<Binning> {
        match spec {
            BinSpec::Integer { nbins } => {
                if *nbins == 0 {
                    return Err(Error::ZeroBins);
                }
                if samples.sample_type().is_float() {
                    return Err(Error::IntegerBinsNeedIntegers(samples.sample_type().name()));
                }
                Ok(Binning::Integer { nbins: *nbins })
            }
            BinSpec::Edges(edges) => {
                check_edges(edges)?;
                Ok(Binning::Edges(edges.clone()))
            }
            BinSpec::Estimated { rule, range } => {
                let nbins =
                    crate::histogram::bins::estimators::estimate_bin_count(samples, *rule, *range)?;
                Binning::resolve(
                    &BinSpec::Uniform {
                        nbins,
                        range: *range,
                    },
                    samples,
                )
            }
            BinSpec::UniformInSampleType { nbins, range } => {
                let (lo, hi) = *range;
                if !(lo.is_finite() && hi.is_finite()) {
                    return Err(Error::NonFiniteRange { lo, hi });
                }
                if lo > hi {
                    return Err(Error::InvertedRange { lo, hi });
                }
                let ty = samples.sample_type();
                if !ty.is_float() {
                    return Err(Error::InvalidArgument(format!(
                        "a range in the samples' own type is for float samples, not {ty}"
                    )));
                }
                let over_data = BinSpec::Uniform {
                    nbins: *nbins,
                    range: None,
                };
                extremes::resolve_from_extremes(&over_data, ty, Some((lo, hi))).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "the range ({lo}, {hi}) is not two values of the samples' type {ty}"
                    ))
                })
            }
            BinSpec::UniformInRangeType {
                nbins,
                range,
                range_type,
            } => narrow_range::resolve(*nbins, *range, *range_type, samples),
            BinSpec::UniformIntRange { nbins, range } => {
                let (lo, hi) = (range.0 as f64, range.1 as f64);
                match samples {
                    Samples::BF16(_) if range.0 < range.1 && *nbins > 0 => {
                        half::resolve_over_range(half::HalfFormat::BF16, *nbins, lo, hi)
                    }
                    // One value: numpy widens it by the Python float 0.5, a float range again.
                    _ => Binning::resolve(
                        &BinSpec::Uniform {
                            nbins: *nbins,
                            range: Some((lo, hi)),
                        },
                        samples,
                    ),
                }
            }
            BinSpec::IntEdges(edges) => Ok(match edges.resolve(samples.sample_type())? {
                Some(exact) => Binning::IntEdges(exact),
                None => Binning::Edges(edges.to_f64()),
            }),
            BinSpec::Uniform { nbins, range } => {
                if *nbins == 0 {
                    return Err(Error::ZeroBins);
                }
                if let Some((lo, hi)) = *range {
                    if !(lo.is_finite() && hi.is_finite()) {
                        return Err(Error::NonFiniteRange { lo, hi });
                    }
                    if lo > hi {
                        return Err(Error::InvertedRange { lo, hi });
                    }
                }
                match samples {
                    Samples::F32(s) => {
                        resolve_uniform_f32(*nbins, *range, s).map(Binning::UniformF32)
                    }
                    Samples::F64(s) => {
                        resolve_uniform_f64_float(*nbins, *range, s).map(Binning::UniformF64)
                    }
                    Samples::F16(s) => half::resolve(half::HalfFormat::F16, *nbins, *range, s),
                    Samples::BF16(s) => half::resolve(half::HalfFormat::BF16, *nbins, *range, s),
                    _ => crate::sample::with_samples!(samples, s => resolve_uniform_int(*nbins, *range, s))
                        .map(Binning::UniformF64),
                }
            }
        }
    }

    /// How many bins.
    pub fn nbins(&self) -> usize {
        match self {
            Binning::Integer { nbins } => *nbins,
            Binning::UniformF32(u) => u.nbins,
            Binning::UniformF64(u) => u.nbins,
            Binning::Edges(e) => e.len() - 1,
            Binning::IntEdges(e) => e.len() - 1,
            Binning::UniformHalf(u) => u.nbins,
        }
    }

    /// The bin edges as f64 (integer bins: `0, 1, ..., nbins`).
    pub fn edges(&self) -> Vec<f64> {
        match self {
            // Written by every worker into huge pages: at 16M bins the 128 MiB of edges took ~65
            // ms on one core in 4 KiB pages (mostly first-touch page faults), about half of what
            // the counting itself needs.
            Binning::Integer { nbins } => {
                use rayon::prelude::*;
                let mut e = crate::huge_pages::zeroed::<f64>(nbins + 1);
                e.par_iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x = i as f64);
                e
            }
            Binning::UniformF32(u) => u.edges.iter().map(|&e| e as f64).collect(),
            Binning::UniformF64(u) => u.edges.clone(),
            Binning::Edges(e) => e.clone(),
            Binning::IntEdges(e) => e.iter().map(|&x| x as f64).collect(),
            Binning::UniformHalf(u) => u.edges.iter().map(|&e| e as f64).collect(),
        }
    }

    /// Where sample `x` lands. The engines call specialised loops, but all agree with this.
    #[inline(always)]
    pub fn locate<T: Sample>(&self, x: T) -> Slot {
        match self {
            Binning::Integer { nbins } => match x.to_bin_candidate() {
                None => Slot::Below,
                Some(v) if v >= *nbins as u64 => Slot::Above,
                Some(v) => Slot::Bin(v as usize),
            },
            Binning::UniformF32(u) => u.locate(x.to_f32()),
            Binning::UniformF64(u) => u.locate(x.to_f64()),
            Binning::Edges(e) => locate_in_edges(e, x.to_f64()),
            Binning::IntEdges(e) => {
                crate::histogram::bins::int_edges::locate_in_int_edges(e, x.to_i128())
            }
            Binning::UniformHalf(u) => u.locate(x.to_f32()),
        }
    }
}

/// Bin of `x` among explicit edges: `[e[i], e[i+1])`, the last bin closed.
#[inline(always)]
pub fn locate_in_edges(edges: &[f64], x: f64) -> Slot {
    let n = edges.len() - 1;
    if x.is_nan() {
        Slot::Nan
    } else if x < edges[0] {
        Slot::Below
    } else if x > edges[n] {
        Slot::Above
    } else if x == edges[n] {
        Slot::Bin(n - 1)
    } else {
        Slot::Bin(edges.partition_point(|&e| e <= x) - 1)
    }
}

/// numpy's rule for explicit edges: at least two, none NaN, never decreasing. Infinite edges and
/// equal neighbours (a bin of zero width, which counts only what the last, closed bin holds) are
/// accepted as numpy accepts them; [`locate_in_edges`] gives numpy's `searchsorted` result for both.
fn check_edges(edges: &[f64]) -> Result<()> {
    if edges.len() < 2 {
        return Err(Error::TooFewEdges(edges.len()));
    }
    for (index, &value) in edges.iter().enumerate() {
        if value.is_nan() {
            return Err(Error::NonFiniteEdge { index, value });
        }
        if index > 0 && value < edges[index - 1] {
            return Err(Error::EdgesNotIncreasing {
                index,
                value,
                previous: edges[index - 1],
            });
        }
    }
    Ok(())
}

/// Refuses edges that do not strictly increase (NaN edges from a width that overflows included),
/// naming the range asked for (`range`), not the edges, which may be NaN.
fn check_increasing<P: PartialOrd + Copy + Into<f64>>(
    edges: &[P],
    nbins: usize,
    precision: &'static str,
    range: (f64, f64),
) -> Result<()> {
    if edges
        .windows(2)
        .any(|w| w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Less))
    {
        return Err(Error::TooManyBins {
            nbins,
            lo: range.0,
            hi: range.1,
            precision,
        });
    }
    Ok(())
}

/// Minimum and maximum in one parallel pass; `None` for empty input. NaN makes both NaN.
fn min_max<T: Sample>(s: &[T]) -> Option<(f64, f64)> {
    use rayon::prelude::*;
    if s.is_empty() {
        return None;
    }
    let fold = |(lo, hi): (f64, f64), x: f64| {
        if x.is_nan() || lo.is_nan() {
            (f64::NAN, f64::NAN)
        } else {
            (lo.min(x), hi.max(x))
        }
    };
    let (lo, hi) = s
        .par_chunks(1 << 16)
        .map(|c| {
            c.iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |acc, &x| {
                    fold(acc, x.to_f64())
                })
        })
        .reduce(
            || (f64::INFINITY, f64::NEG_INFINITY),
            |a, b| fold(fold(a, b.0), b.1),
        );
    Some((lo, hi))
}

fn resolve_uniform_f32(nbins: usize, range: Option<(f64, f64)>, s: &[f32]) -> Result<UniformF32> {
    let u = match range {
        Some((mut lo, mut hi)) => {
            // Python floats: widened in float64, then compared and subtracted as float32.
            if lo == hi {
                lo -= 0.5;
                hi += 0.5;
            }
            UniformF32 {
                nbins,
                first: lo as f32,
                last: hi as f32,
                denom: hi - lo,
                denom_is_f64: true,
                range64: (lo, hi),
                edges: linspace_f64(lo, hi, nbins + 1)
                    .into_iter()
                    .map(|e| e as f32)
                    .collect(),
                exact_grid: None,
            }
        }
        None => {
            let (mut lo, mut hi) = match min_max(s) {
                // An empty array takes the range [0, 1]; numpy divides by an integer there.
                None => {
                    return Ok(UniformF32 {
                        nbins,
                        first: 0.0,
                        last: 1.0,
                        denom: 1.0,
                        denom_is_f64: true,
                        range64: (0.0, 1.0),
                        edges: linspace_f64(0.0, 1.0, nbins + 1)
                            .into_iter()
                            .map(|e| e as f32)
                            .collect(),
                        exact_grid: None,
                    }
                    .with_exactness())
                }
                Some((lo, hi)) if !(lo.is_finite() && hi.is_finite()) => {
                    return Err(Error::NonFiniteData { lo, hi })
                }
                Some((lo, hi)) => (lo as f32, hi as f32),
            };
            if lo == hi {
                lo -= 0.5;
                hi += 0.5;
            }
            UniformF32 {
                nbins,
                first: lo,
                last: hi,
                denom: (hi - lo) as f64,
                denom_is_f64: false,
                range64: (lo as f64, hi as f64),
                edges: linspace_f32(lo, hi, nbins + 1),
                exact_grid: None,
            }
        }
    };
    check_increasing(&u.edges, nbins, "float32", u.range64)?;
    Ok(u.with_exactness())
}

fn uniform_f64(nbins: usize, lo: f64, hi: f64, denom: f64) -> Result<UniformF64> {
    let edges = linspace_f64(lo, hi, nbins + 1);
    check_increasing(&edges, nbins, "float64", (lo, hi))?;
    Ok(UniformF64::new(nbins, lo, hi, denom, edges))
}

fn resolve_uniform_f64_float(
    nbins: usize,
    range: Option<(f64, f64)>,
    s: &[f64],
) -> Result<UniformF64> {
    let (mut lo, mut hi) = match (range, min_max(s)) {
        (Some(r), _) => r,
        (None, None) => (0.0, 1.0),
        (None, Some((lo, hi))) if !(lo.is_finite() && hi.is_finite()) => {
            return Err(Error::NonFiniteData { lo, hi })
        }
        (None, Some(r)) => r,
    };
    if lo == hi {
        lo -= 0.5;
        hi += 0.5;
    }
    uniform_f64(nbins, lo, hi, hi - lo)
}

fn resolve_uniform_int<T: Sample>(
    nbins: usize,
    range: Option<(f64, f64)>,
    s: &[T],
) -> Result<UniformF64> {
    debug_assert!(!T::TYPE.is_float() || T::TYPE == SampleType::F32);
    if let Some((mut lo, mut hi)) = range {
        if lo == hi {
            lo -= 0.5;
            hi += 0.5;
        }
        return uniform_f64(nbins, lo, hi, hi - lo);
    }
    let Some((lo, hi)) = min_max(s) else {
        return uniform_f64(nbins, 0.0, 1.0, 1.0);
    };
    if lo == hi {
        return uniform_f64(nbins, lo - 0.5, hi + 0.5, 1.0);
    }
    // numpy subtracts the integer extremes without rounding (as unsigned); the edges start from the
    // extremes converted to float64.
    let exact = exact_int_span(s);
    uniform_f64(nbins, lo, hi, exact)
}

/// `max - min` of integer samples computed exactly, then rounded once to f64.
fn exact_int_span<T: Sample>(s: &[T]) -> f64 {
    use rayon::prelude::*;
    let as_i128 = |x: T| x.to_i128();
    let (lo, hi) = s
        .par_chunks(1 << 16)
        .map(|c| {
            c.iter().fold((i128::MAX, i128::MIN), |(lo, hi), &x| {
                (lo.min(as_i128(x)), hi.max(as_i128(x)))
            })
        })
        .reduce(
            || (i128::MAX, i128::MIN),
            |a, b| (a.0.min(b.0), a.1.max(b.1)),
        );
    (hi - lo) as f64
}
