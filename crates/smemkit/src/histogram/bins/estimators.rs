//! numpy's bin-count estimators (`bins='auto'`, `'fd'`, `'doane'`, `'scott'`, `'stone'`,
//! `'rice'`, `'sturges'`, `'sqrt'`). numpy computes a bin width from the data (trimmed to the
//! range when one is given), then takes `ceil((last - first) / width)` equal bins over the same
//! outer edges as `bins=N` would use. The width and the division are computed in the types numpy
//! computes them in (NEP 50: float32 data keeps float32 where a Python float meets it, float64
//! where a numpy float64 does), with numpy's summation order (pairwise) for means and standard
//! deviations and numpy's default `linear` percentiles, so that the number of bins is numpy's.
//! The statistics are computed on the host from host samples, whatever the engine.

use crate::error::{Error, Result};
use crate::histogram::bins::stats::{self, py_to_16, py_to_bf16, r16, rbf, Class, Trimmed};
use crate::sample::{Sample, Samples};

/// A numpy bin estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinRule {
    /// The larger of `sturges` and `fd`.
    Auto,
    /// Freedman-Diaconis: twice the interquartile range over the cube root of the size.
    Fd,
    /// Doane: Sturges corrected for skew.
    Doane,
    /// Scott: from the standard deviation.
    Scott,
    /// Stone: minimises an estimate of the integrated squared error.
    Stone,
    /// Rice: twice the cube root of the size.
    Rice,
    /// Sturges: log2 of the size, plus one.
    Sturges,
    /// The square root of the size.
    Sqrt,
}

impl BinRule {
    /// Every rule, in numpy's documentation order.
    pub const ALL: [BinRule; 8] = [
        BinRule::Auto,
        BinRule::Fd,
        BinRule::Doane,
        BinRule::Scott,
        BinRule::Stone,
        BinRule::Rice,
        BinRule::Sturges,
        BinRule::Sqrt,
    ];

    /// numpy's name of the rule.
    pub fn name(self) -> &'static str {
        match self {
            BinRule::Auto => "auto",
            BinRule::Fd => "fd",
            BinRule::Doane => "doane",
            BinRule::Scott => "scott",
            BinRule::Stone => "stone",
            BinRule::Rice => "rice",
            BinRule::Sturges => "sturges",
            BinRule::Sqrt => "sqrt",
        }
    }
}

impl std::str::FromStr for BinRule {
    type Err = Error;

    /// The rule named `text` (numpy's names).
    fn from_str(text: &str) -> Result<BinRule> {
        BinRule::ALL
            .into_iter()
            .find(|r| r.name() == text)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "`{text}` is not a valid estimator for bins (expected auto, fd, doane, scott, stone, rice, sturges or sqrt)"
                ))
            })
    }
}

/// A width as numpy holds it: a float32 or float64 scalar (numpy's type decides how the span is
/// divided by it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Width {
    /// A float16 scalar (its value, held in an f32).
    F16(f32),
    /// A bfloat16 scalar (its value, held in an f32).
    BF16(f32),
    F32(f32),
    F64(f64),
}

impl Width {
    pub(crate) fn value(self) -> f64 {
        match self {
            Width::F16(w) | Width::BF16(w) | Width::F32(w) => w as f64,
            Width::F64(w) => w,
        }
    }
}

/// The statistics of the (trimmed, non-empty) samples an estimator reads, each in the type and
/// summation order numpy computes it in. The host samples ([`Trimmed`]) and device samples
/// (`histogram::cuda::estimate`) implement it; the widths and the bin count are then computed by
/// the same code, so that both engines give the same bins.
pub(crate) trait EstimatorStats {
    /// How many samples.
    fn len(&self) -> usize;
    /// numpy's `_ptp` for float32 data (a float32 difference), `None` for other data.
    fn ptp_f32(&self) -> Option<f32>;
    /// numpy's `_ptp` for float16 data (a float16 difference, held in an f32), `None` for other
    /// data (the device engine takes no float16 estimates).
    fn ptp_f16(&self) -> Option<f32> {
        None
    }
    /// numpy's `_ptp` for bfloat16 data (a bfloat16 difference, held in an f32), `None` for
    /// other data (the device engine takes no bfloat16 estimates).
    fn ptp_bf16(&self) -> Option<f32> {
        None
    }
    /// numpy's `_ptp` as the float64 it becomes when divided by a float64.
    fn ptp_f64(&self) -> f64;
    /// `np.std`: float32 for float32 data, float64 otherwise.
    fn std(&mut self) -> Result<Width>;
    /// Doane's `g1`, the mean of the cubed standardised samples; `None` when the standard
    /// deviation is NaN or not positive (numpy's estimator then returns 0).
    fn skew(&mut self) -> Result<Option<f64>>;
    /// `np.percentile(x, [75, 25])` with the default `linear` method.
    fn quartiles(&mut self) -> Result<(f64, f64)>;
    /// Stone's rule (see [`stone_width`]).
    fn stone(&mut self, range: Option<(f64, f64)>) -> Result<Option<Width>>;
}

impl<T: Sample> EstimatorStats for Trimmed<T>
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    fn len(&self) -> usize {
        Trimmed::len(self)
    }
    fn ptp_f32(&self) -> Option<f32> {
        Trimmed::ptp_f32(self)
    }
    fn ptp_f16(&self) -> Option<f32> {
        Trimmed::ptp_f16(self)
    }
    fn ptp_bf16(&self) -> Option<f32> {
        Trimmed::ptp_bf16(self)
    }
    fn ptp_f64(&self) -> f64 {
        Trimmed::ptp_f64(self)
    }
    fn std(&mut self) -> Result<Width> {
        if let Some(v) = self.f16_values() {
            return Ok(Width::F16(stats::std_f16(&v)));
        }
        if let Some(v) = self.bf16_values() {
            return Ok(Width::BF16(stats::std_bf16(&v)));
        }
        Ok(match self.f32() {
            Some(v) => Width::F32(stats::std_f32(v)),
            None => Width::F64(self.std_f64()),
        })
    }
    fn skew(&mut self) -> Result<Option<f64>> {
        if let Some(v) = self.f16_values() {
            return Ok(skew_f16(&v));
        }
        if let Some(v) = self.bf16_values() {
            return Ok(skew_bf16(&v));
        }
        Ok(match self.f32() {
            Some(v) => {
                let sigma = stats::std_f32(v);
                if sigma.is_nan() || sigma <= 0.0 {
                    return Ok(None);
                }
                let mean = stats::mean_f32(v);
                let cubes: Vec<f32> = v.iter().map(|&a| ((a - mean) / sigma).powf(3.0)).collect();
                Some(stats::mean_f32(&cubes) as f64)
            }
            None => {
                let v = self.to_f64_values();
                let sigma = self.std_f64();
                if sigma.is_nan() || sigma <= 0.0 {
                    return Ok(None);
                }
                let mean = self.mean_f64();
                let cubes: Vec<f64> = v.iter().map(|&a| ((a - mean) / sigma).powf(3.0)).collect();
                Some(stats::mean_of_f64(&cubes))
            }
        })
    }
    fn quartiles(&mut self) -> Result<(f64, f64)> {
        Ok(Trimmed::quartiles(self))
    }
    fn stone(&mut self, range: Option<(f64, f64)>) -> Result<Option<Width>> {
        stone_width(self, range)
    }
}

/// The number of equal bins numpy's `rule` gives `samples` over `range` (the data's minimum and
/// maximum when `None`).
pub fn estimate_bin_count(
    samples: Samples<'_>,
    rule: BinRule,
    range: Option<(f64, f64)>,
) -> Result<usize> {
    crate::sample::with_samples!(samples, s => count_for(s, rule, range))
}

/// numpy's `histogram_bin_edges(samples, bins, range)`: the edges `spec` resolves to for
/// `samples` (float32 edges of float32 samples widened exactly to f64).
pub fn histogram_bin_edges(
    samples: Samples<'_>,
    spec: &crate::histogram::bins::BinSpec,
) -> Result<Vec<f64>> {
    Ok(crate::histogram::bins::Binning::resolve(spec, samples)?.edges())
}

fn count_for<T: Sample>(s: &[T], rule: BinRule, range: Option<(f64, f64)>) -> Result<usize>
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let outer = stats::outer_edges(s, range)?;
    let mut x = stats::trim(s, range, &outer);
    if x.len() == 0 {
        return Ok(1);
    }
    let width = width_of(&mut x, rule, range)?;
    bins_from_width(outer.span, width, x.class() == Class::Int)
}

/// numpy's number of bins from an estimator's width: `ceil(span / width)` in numpy's types, 1 for
/// a zero (or absent) width, integer data's widths below 1 replaced by 1; an infinite width
/// (numpy's 0 bins) is an error.
pub(crate) fn bins_from_width(
    span: stats::Span,
    width: Option<Width>,
    integer: bool,
) -> Result<usize> {
    let Some(mut width) = width.filter(|w| w.value() != 0.0) else {
        return Ok(1);
    };
    if integer && width.value() < 1.0 {
        // numpy replaces the width by the Python int 1: the span is divided as float64 (or, for
        // a Python float span, as a Python float).
        width = Width::F64(1.0);
    }
    let quotient = match (span, width) {
        // float16 over float16. A Python range's span is numpy's float64 scalar
        // (`_unsigned_subtract` of two Python floats), which divides in float64 below.
        (stats::Span::F16(d), Width::F16(w)) => r16(d / w) as f64,
        (stats::Span::F16(d), w) => d as f64 / w.value(),
        // bfloat16 over bfloat16 in bfloat16, over float32 (ml_dtypes' type beside Python
        // floats) in float32, over float64 in float64.
        (stats::Span::BF16(d), Width::BF16(w)) => rbf(d / w) as f64,
        (stats::Span::BF16(d), Width::F32(w)) => (d / w) as f64,
        (stats::Span::BF16(d), w) => d as f64 / w.value(),
        // float16 widths come only from float16 data (a float16 or Python span): never met.
        (stats::Span::F32(d), Width::F16(w)) => d as f64 / w as f64,
        (stats::Span::F32(d), Width::F32(w) | Width::BF16(w)) => (d / w) as f64,
        (stats::Span::F32(d), Width::F64(w)) => d as f64 / w,
        (stats::Span::F64(d), w) => d / w.value(),
        (stats::Span::Unsigned(d), w) => d as f64 / w.value(),
        (stats::Span::Python(d), w) => d / w.value(),
    };
    let bins = quotient.ceil();
    const LIMIT: f64 = (1u64 << 32) as f64;
    if bins.is_nan() || bins >= LIMIT {
        return Err(Error::BinsTooLarge {
            what: "an estimated bin count",
            nbins: if bins.is_finite() {
                bins as usize
            } else {
                usize::MAX
            },
            limit: 1 << 32,
        });
    }
    if bins == 0.0 {
        // An infinite width (a float16 standard deviation overflows from squares of 256): numpy
        // makes 0 bins, and its histogram of them fails on a negative bin index.
        return Err(Error::InvalidArgument(
            "the estimator's bin width is infinite (its statistics overflowed the samples' type): \
             numpy makes 0 bins of it, which cannot count; give a number of bins"
                .into(),
        ));
    }
    Ok(bins as usize)
}

/// The width numpy's estimator function for `rule` returns on the trimmed samples `x` (`None`
/// where numpy's returns 0 for lack of spread), before numpy turns it into a number of bins.
pub(crate) fn width_of<S: EstimatorStats>(
    x: &mut S,
    rule: BinRule,
    range: Option<(f64, f64)>,
) -> Result<Option<Width>> {
    Ok(match rule {
        BinRule::Sqrt => Some(sqrt_width(x)),
        BinRule::Sturges => Some(sturges_width(x)),
        BinRule::Rice => Some(rice_width(x)),
        BinRule::Scott => Some(scott_width(x)?),
        BinRule::Fd => Some(fd_width(x)?),
        BinRule::Doane => Some(doane_width(x)?),
        BinRule::Auto => {
            let fd = fd_width(x)?.value();
            let sturges = sturges_width(x).value();
            let half_sqrt = sqrt_width(x).value() / 2.0;
            let corrected = if half_sqrt > fd { half_sqrt } else { fd };
            Some(Width::F64(if sturges < corrected {
                sturges
            } else {
                corrected
            }))
        }
        BinRule::Stone => x.stone(range)?,
    })
}

/// What numpy's estimator function itself returns for `samples` over `range`: the width, and
/// whether numpy computed it in float32; `None` when numpy calls no estimator (no samples in the
/// range) or its estimator returns 0. For tests against numpy (`tests/numpy_parity.rs`).
#[doc(hidden)]
pub fn estimator_width(
    samples: Samples<'_>,
    rule: BinRule,
    range: Option<(f64, f64)>,
) -> Result<Option<(f64, bool)>> {
    fn of<T: Sample>(s: &[T], rule: BinRule, range: Option<(f64, f64)>) -> Result<Option<Width>>
    where
        for<'a> &'a [T]: Into<Samples<'a>>,
    {
        let outer = stats::outer_edges(s, range)?;
        let mut x = stats::trim(s, range, &outer);
        if x.len() == 0 {
            return Ok(None);
        }
        width_of(&mut x, rule, range)
    }
    let width = crate::sample::with_samples!(samples, s => of(s, rule, range))?;
    Ok(width.map(|w| (w.value(), matches!(w, Width::F32(_)))))
}

fn sqrt_width<S: EstimatorStats>(x: &S) -> Width {
    Width::F64(x.ptp_f64() / (x.len() as f64).sqrt())
}

fn sturges_width<S: EstimatorStats>(x: &S) -> Width {
    Width::F64(x.ptp_f64() / ((x.len() as f64).log2() + 1.0))
}

fn rice_width<S: EstimatorStats>(x: &S) -> Width {
    let d = 2.0 * (x.len() as f64).powf(1.0 / 3.0);
    if let Some(p) = x.ptp_f16() {
        return Width::F16(r16(p / py_to_16(d)));
    }
    // A bfloat16 divided by a Python float is a float32 in ml_dtypes.
    match x.ptp_f32().or(x.ptp_bf16()) {
        Some(p) => Width::F32(p / d as f32),
        None => Width::F64(x.ptp_f64() / d),
    }
}

fn scott_width<S: EstimatorStats>(x: &mut S) -> Result<Width> {
    let factor = (24.0 * std::f64::consts::PI.powf(0.5) / x.len() as f64).powf(1.0 / 3.0);
    Ok(match x.std()? {
        Width::F16(s) => Width::F16(r16(py_to_16(factor) * s)),
        Width::BF16(s) => Width::F32(factor as f32 * s),
        Width::F32(s) => Width::F32(factor as f32 * s),
        Width::F64(s) => Width::F64(factor * s),
    })
}

fn fd_width<S: EstimatorStats>(x: &mut S) -> Result<Width> {
    let (q75, q25) = x.quartiles()?;
    let iqr = q75 - q25;
    Ok(Width::F64(2.0 * iqr * (x.len() as f64).powf(-1.0 / 3.0)))
}

fn doane_width<S: EstimatorStats>(x: &mut S) -> Result<Width> {
    let n = x.len();
    if n <= 2 {
        return Ok(Width::F64(0.0));
    }
    let nf = n as f64;
    let sg1 = (6.0 * (nf - 2.0) / ((nf + 1.0) * (nf + 3.0))).sqrt();
    let Some(g1) = x.skew()? else {
        return Ok(Width::F64(0.0));
    };
    Ok(Width::F64(
        x.ptp_f64() / (1.0 + nf.log2() + (1.0 + g1.abs() / sg1).log2()),
    ))
}

/// Stone's rule: the bin count in `1..=max(100, sqrt(n))` minimising the cross-validated
/// integrated squared error, each candidate counted with numpy's histogram over the same range.
fn stone_width<T: Sample>(x: &Trimmed<T>, range: Option<(f64, f64)>) -> Result<Option<Width>>
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let narrow = match (x.ptp_f16(), x.ptp_bf16(), x.ptp_f32()) {
        (Some(p), _, _) => Some(Narrow::F16(p)),
        (_, Some(p), _) => Some(Narrow::BF16(p)),
        (_, _, Some(p)) => Some(Narrow::F32(p)),
        _ => None,
    };
    stone_from_counts(x.len(), x.ptp_f64(), narrow, |nbins| {
        x.uniform_counts(nbins, range)
    })
}

/// numpy's `_ptp` of float16, bfloat16 or float32 data, which keeps Stone's bin widths in its
/// type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Narrow {
    F16(f32),
    BF16(f32),
    F32(f32),
}

impl Narrow {
    /// `ptp / nbins` as numpy computes it (the Python int converted to the type).
    fn width(self, nbins: usize) -> Width {
        match self {
            Narrow::F16(p) => Width::F16(r16(p / py_to_16(nbins as f64))),
            Narrow::BF16(p) => Width::BF16(rbf(p / py_to_bf16(nbins as f64))),
            Narrow::F32(p) => Width::F32(p / nbins as f32),
        }
    }
}

/// Stone's rule on `n` samples of spread `ptp` (`narrow`: numpy's float16 or float32 `_ptp` of
/// such samples), `counts(nbins)` giving numpy's histogram of the samples at each candidate:
/// shared by the host engine and the device's (which counts on the GPU), so that both choose
/// alike.
pub(crate) fn stone_from_counts(
    n: usize,
    ptp: f64,
    narrow: Option<Narrow>,
    mut counts: impl FnMut(usize) -> Result<Vec<u64>>,
) -> Result<Option<Width>> {
    if n <= 1 || ptp == 0.0 {
        return Ok(None);
    }
    let upper = 100usize.max((n as f64).sqrt() as usize);
    let mut best: Option<(usize, f64)> = None;
    for nbins in 1..=upper {
        let counts = counts(nbins)?;
        let sum_sq: f64 = counts
            .iter()
            .map(|&c| {
                let p = c as f64 / n as f64;
                p * p
            })
            .sum();
        let hh = match narrow {
            Some(p) => p.width(nbins).value(),
            None => ptp / nbins as f64,
        };
        let score = (2.0 - (n as f64 + 1.0) * sum_sq) / hh;
        if best.map_or(true, |(_, s)| score < s) {
            best = Some((nbins, score));
        }
    }
    let nbins = best.map_or(1, |b| b.0);
    Ok(Some(match narrow {
        Some(p) => p.width(nbins),
        None => Width::F64(ptp / nbins as f64),
    }))
}

/// Doane's `g1` for float16 data as numpy computes it: `x - np.mean(x)` (a float32 mean rounded
/// to float16), divided by the float16 standard deviation, cubed with float32's `powf`, each step
/// rounded to float16, then `np.mean` of those; `None` when the deviation is NaN or not positive.
fn skew_f16(v: &[f32]) -> Option<f64> {
    let sigma = stats::std_f16(v);
    if sigma.is_nan() || sigma <= 0.0 {
        return None;
    }
    let mean = stats::mean_f16(v);
    let cubes: Vec<f32> = v
        .iter()
        .map(|&a| r16(r16(r16(a - mean) / sigma).powf(3.0)))
        .collect();
    Some(stats::mean_f16(&cubes) as f64)
}

/// Doane's `g1` for bfloat16 data as numpy with ml_dtypes computes it: as for float16
/// ([`skew_f16`]), each step in bfloat16 and the means of bfloat16 sums ([`stats::mean_bf16`]).
fn skew_bf16(v: &[f32]) -> Option<f64> {
    let sigma = stats::std_bf16(v);
    if sigma.is_nan() || sigma <= 0.0 {
        return None;
    }
    let mean = stats::mean_bf16(v);
    let cubes: Vec<f32> = v
        .iter()
        .map(|&a| rbf(rbf(rbf(a - mean) / sigma).powf(3.0)))
        .collect();
    Some(stats::mean_bf16(&cubes) as f64)
}
