//! Uniform bins of float16 and bfloat16 samples, as numpy computes them. numpy keeps the samples'
//! type wherever its operands allow (NEP 50): with a range from the caller (Python floats) the
//! edges are float64 `linspace` rounded to float16 and the estimate's difference `x - first` is
//! float16, the rest float64; with the range taken from the data every step (the extremes,
//! `linspace`, the estimate) is float16 arithmetic, each operation rounded to float16. bfloat16 is
//! numpy's through ml_dtypes, whose type does not promote weakly: with a range numpy computes as for
//! float64 samples; from the data, its `linspace` runs in float64 (rounded to bfloat16 at the end)
//! and the estimate in bfloat16 arithmetic; a widened one-value range (a bfloat16 minus a Python
//! float is a float32) goes as for float32 samples. Each half operation is computed in float32 and
//! rounded, as numpy's and ml_dtypes' own loops do.

use half::{bf16, f16};

use super::{
    check_increasing, correct_estimate, linspace_f32, linspace_f64, min_max, uniform_f64, Binning,
    Slot, UniformF32,
};
use crate::error::{Error, Result};
use crate::sample::Sample;

/// Which 16-bit float the samples are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfFormat {
    F16,
    BF16,
}

impl HalfFormat {
    /// `x` rounded to this format (to nearest, ties to even), back as f32 (exact).
    #[inline(always)]
    pub fn round(self, x: f32) -> f32 {
        match self {
            HalfFormat::F16 => f16::from_f32(x).to_f32(),
            HalfFormat::BF16 => bf16::from_f32(x).to_f32(),
        }
    }

    /// `x` rounded once from f64 to this format (a Python float converted by numpy).
    pub fn round64(self, x: f64) -> f32 {
        match self {
            HalfFormat::F16 => f16_from_f64(x).to_f32(),
            HalfFormat::BF16 => bf16_from_f64(x).to_f32(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            HalfFormat::F16 => "float16",
            HalfFormat::BF16 => "bfloat16",
        }
    }
}

/// `x` rounded to the nearest float16 (ties to even), as numpy converts a float64. The `half`
/// crate's `f16::from_f64` goes through the nearest float32 on x86 (F16C), rounding twice: a
/// value just above a tie of float16 can land on the tie and then go to even, the wrong way.
pub fn f16_from_f64(x: f64) -> f16 {
    f16::from_f32(f32_round_to_odd(x))
}

/// `x` as ml_dtypes converts a float64 to bfloat16: to the nearest float32, then to the nearest
/// bfloat16 (two roundings, ties to even each: a value just above a tie of bfloat16 whose float32
/// is the tie goes to even). `bf16::from_f64` truncates the low bits first, which differs from
/// that on other values.
pub fn bf16_from_f64(x: f64) -> bf16 {
    bf16::from_f32(x as f32)
}

/// `x` as a float32 rounded to odd: exact values stay, others take the float32 on the side of
/// zero with its last bit set. float32 keeps more than two bits beyond float16, so rounding this
/// to float16 to nearest is the single correct rounding of `x`.
fn f32_round_to_odd(x: f64) -> f32 {
    let nearest = x as f32;
    if !nearest.is_finite() || nearest as f64 == x {
        return nearest;
    }
    let mut bits = nearest.to_bits();
    if (nearest as f64).abs() > x.abs() {
        // One step toward zero (the magnitude is the low 31 bits).
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// How numpy computes the bin estimate `(x - first) / denom * nbins`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HalfArith {
    /// A range from the caller: `x - first` in the half type, then float64 (`denom` is `hi - lo`).
    Range { denom: f64 },
    /// A range from the data: every operation in the half type (`denom` and `nbins` are already
    /// rounded to it).
    Data { denom: f32, nbins: f32 },
}

/// Uniform bins of 16-bit float samples (the values held as f32, which holds them exactly).
#[derive(Debug, Clone, PartialEq)]
pub struct UniformHalf {
    pub nbins: usize,
    pub format: HalfFormat,
    /// Lower edge in the half type: `x < first` is below the range.
    pub first: f32,
    /// Upper edge in the half type: `x > last` is above, `x == last` in the last bin.
    pub last: f32,
    pub arith: HalfArith,
    /// numpy's `nbins + 1` edges in the half type; the estimate is corrected against them.
    pub edges: Vec<f32>,
}

impl UniformHalf {
    #[inline(always)]
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
        let r = |v: f32| self.format.round(v);
        let diff = r(x - self.first);
        let estimate = match self.arith {
            HalfArith::Range { denom } => (diff as f64 / denom * n as f64) as i64,
            HalfArith::Data { denom, nbins } => r(r(diff / denom) * nbins) as i64,
        };
        Slot::Bin(correct_estimate(
            estimate,
            n,
            |i| x < self.edges[i],
            |i| x >= self.edges[i],
        ))
    }
}

/// numpy's `linspace(start, stop, num)` with float16 endpoints: `arange` in float16 (each index
/// rounded), the step and every product and sum rounded to it.
pub fn linspace_half(format: HalfFormat, start: f32, stop: f32, num: usize) -> Vec<f32> {
    let r = |v: f32| format.round(v);
    let div = r((num - 1) as f32);
    let delta = r(stop - start);
    let step = r(delta / div);
    let mut y: Vec<f32> = (0..num)
        .map(|i| {
            let i = r(i as f32);
            let scaled = if step == 0.0 {
                r(r(i / div) * delta)
            } else {
                r(i * step)
            };
            r(scaled + start)
        })
        .collect();
    y[num - 1] = stop;
    y
}

/// Uniform bins over `[lo, hi]` (`lo < hi`) of a range that numpy keeps weakly typed beside the
/// samples (Python numbers for float16, Python ints for ml_dtypes' bfloat16): its edges are the
/// float64 `linspace` rounded once to the half type, and each estimate `x - first` in the half
/// type, then float64 (numpy divides by the range's width as a numpy scalar of float64 or uint64).
pub(super) fn resolve_over_range(
    format: HalfFormat,
    nbins: usize,
    lo: f64,
    hi: f64,
) -> Result<Binning> {
    let edges: Vec<f32> = linspace_f64(lo, hi, nbins + 1)
        .into_iter()
        .map(|e| format.round64(e))
        .collect();
    check_increasing(&edges, nbins, format.name(), (lo, hi))?;
    Ok(Binning::UniformHalf(UniformHalf {
        nbins,
        format,
        first: format.round64(lo),
        last: format.round64(hi),
        arith: HalfArith::Range { denom: hi - lo },
        edges,
    }))
}

/// ml_dtypes compares bfloat16 samples with a Python float in float32 (the bound rounded to the
/// nearest float32: `bfloat16(1.296875) <= 1.296874999999` is true), the engines in float64. The
/// two differ only where a bound's float32 rounding lands beyond it on a value bfloat16 holds
/// (at most one value per bound: the float32 rounding moves less than a bfloat16 step). numpy
/// counts a sample equal to the upper one in the last bin: returned here, the bins keep samples
/// up to it. On a sample equal to the lower one numpy fails (its bin index is -1, and `bincount`
/// refuses it): refused, as the engines cannot tell whether such a sample is there.
fn bf16_kept_beyond(lo: f64, hi: f64) -> Result<Option<f64>> {
    let lands = |bound: f64| {
        let rounded = bound as f32;
        (bf16::from_f32(rounded).to_f32() == rounded).then_some(rounded)
    };
    if let Some(rounded) = lands(lo).filter(|&r| (r as f64) < lo) {
        return Err(Error::NotImplemented(format!(
            "a lower range bound of {lo:?} for bfloat16 samples rounds in float32 to {rounded:?}, \
             a bfloat16 value below the range, which numpy (ml_dtypes) compares bfloat16 samples \
             with and keeps (numpy then fails on a sample equal to it: its bin index is -1): not \
             followed; give the bound as that value or one float32 holds"
        )));
    }
    Ok(lands(hi).filter(|&r| (r as f64) > hi).map(f64::from))
}

/// Uniform bins of `nbins` over `range` (or the data's extremes) for half samples `s`.
pub(super) fn resolve<T: Sample>(
    format: HalfFormat,
    nbins: usize,
    range: Option<(f64, f64)>,
    s: &[T],
) -> Result<Binning> {
    let r = |v: f32| format.round(v);
    if let Some((mut lo, mut hi)) = range {
        if lo == hi {
            lo -= 0.5;
            hi += 0.5;
        }
        if format == HalfFormat::BF16 {
            let kept_beyond = bf16_kept_beyond(lo, hi)?;
            let mut u = uniform_f64(nbins, lo, hi, hi - lo)?;
            if let Some(v) = kept_beyond {
                u.last = v;
            }
            return Ok(Binning::UniformF64(u));
        }
        return resolve_over_range(format, nbins, lo, hi);
    }
    let (lo, hi) = match min_max(s) {
        // No samples: numpy's range [0, 1] of Python ints, its edges float64 rounded to the type.
        None => {
            let edges: Vec<f32> = linspace_f64(0.0, 1.0, nbins + 1)
                .into_iter()
                .map(|e| format.round64(e))
                .collect();
            check_increasing(&edges, nbins, format.name(), (0.0, 1.0))?;
            return Ok(Binning::UniformHalf(UniformHalf {
                nbins,
                format,
                first: 0.0,
                last: 1.0,
                arith: HalfArith::Range { denom: 1.0 },
                edges,
            }));
        }
        Some((lo, hi)) if !(lo.is_finite() && hi.is_finite()) => {
            return Err(Error::NonFiniteData { lo, hi })
        }
        Some((lo, hi)) => (lo as f32, hi as f32),
    };
    let (lo, hi) = if lo == hi {
        if format == HalfFormat::BF16 {
            // ml_dtypes: a bfloat16 minus a Python float is a float32, and so is the histogram.
            let (lo, hi) = (lo - 0.5, hi + 0.5);
            let edges = linspace_f32(lo, hi, nbins + 1);
            check_increasing(&edges, nbins, "float32", (lo as f64, hi as f64))?;
            return Ok(Binning::UniformF32(
                UniformF32 {
                    nbins,
                    first: lo,
                    last: hi,
                    denom: (hi - lo) as f64,
                    denom_is_f64: false,
                    range64: (lo as f64, hi as f64),
                    edges,
                    exact_grid: None,
                }
                .with_exactness(),
            ));
        }
        (r(lo - 0.5), r(hi + 0.5))
    } else {
        (lo, hi)
    };
    let edges = match format {
        HalfFormat::F16 => linspace_half(format, lo, hi, nbins + 1),
        // numpy's linspace finds no common inexact type for ml_dtypes' bfloat16 and computes
        // in float64, rounding only the result.
        HalfFormat::BF16 => linspace_f64(lo as f64, hi as f64, nbins + 1)
            .into_iter()
            .map(|e| format.round64(e))
            .collect(),
    };
    check_increasing(&edges, nbins, format.name(), (lo as f64, hi as f64))?;
    Ok(Binning::UniformHalf(UniformHalf {
        nbins,
        format,
        first: lo,
        last: hi,
        arith: HalfArith::Data {
            denom: r(hi - lo),
            nbins: r(nbins as f32),
        },
        edges,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_arithmetic_rounds_each_step() {
        // 2049 is not a float16: arange's index rounds to 2048 (ties to even).
        assert_eq!(HalfFormat::F16.round(2049.0), 2048.0);
        assert_eq!(HalfFormat::BF16.round(257.0), 256.0);
        let e = linspace_half(HalfFormat::F16, 0.0, 1.0, 4);
        assert_eq!(e, [0.0, 0.33325195, 0.6665039, 1.0]);
    }

    #[test]
    fn conversions_from_float64_round_once() {
        // Just above the float16 tie between 1224/2048 and 1225/2048: the nearest float32 is the
        // tie itself, which goes to even (1224); the value belongs to 1225.
        let x = -0.597_900_41_f64;
        assert_eq!(f16_from_f64(x).to_f32(), -1225.0 / 2048.0);
        // ml_dtypes rounds bfloat16 through float32: 1 + 2^-8 + 2^-30 lands on the tie 1 + 2^-8
        // and goes to even, 1 (numpy with ml_dtypes gives 1.0 for it).
        assert_eq!(
            bf16_from_f64(1.0 + 2f64.powi(-8) + 2f64.powi(-30)).to_f32(),
            1.0
        );
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for i in 0..300_000u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let mantissa = 1.0 + (state >> 12) as f64 / (1u64 << 52) as f64;
            let sign = if state & 1 == 0 { 1.0 } else { -1.0 };
            // float16's exponents (subnormals and overflow included), then bfloat16's.
            let e16 = (state >> 4) % 48;
            let e_bf = (state >> 4) % 280;
            let x16 = sign * mantissa * 2f64.powi(e16 as i32 - 30);
            let xbf = sign * mantissa * 2f64.powi(e_bf as i32 - 140);
            // Ties and their neighbours, where two roundings go wrong.
            let tie = nearest_reference(x16, HalfFormat::F16, true);
            for x in [x16, tie, tie.next_up(), tie.next_down()] {
                let got = f16_from_f64(x).to_f64();
                assert_eq!(
                    got,
                    nearest_reference(x, HalfFormat::F16, false),
                    "{i}: {x:e}"
                );
            }
            // bfloat16 as ml_dtypes: the nearest of the nearest float32.
            let tie = nearest_reference(xbf, HalfFormat::BF16, true);
            for x in [xbf, tie, tie.next_up(), tie.next_down()] {
                let got = bf16_from_f64(x).to_f64();
                assert_eq!(
                    got,
                    nearest_reference(x as f32 as f64, HalfFormat::BF16, false),
                    "{i}: {x:e}"
                );
            }
        }
    }

    /// The nearest value of `format` to `x`, ties to the even one, found among the format's
    /// positive values by their bits (or, with `midpoint`, the tie between `|x|`'s two
    /// neighbours, signed as `x`).
    fn nearest_reference(x: f64, format: HalfFormat, midpoint: bool) -> f64 {
        let value = |b: u16| match format {
            HalfFormat::F16 => f16::from_bits(b).to_f64(),
            HalfFormat::BF16 => bf16::from_bits(b).to_f64(),
        };
        let max_bits: u16 = match format {
            HalfFormat::F16 => 0x7BFF,
            HalfFormat::BF16 => 0x7F7F,
        };
        let a = x.abs();
        // The largest finite value not above |x| (positive values grow with their bits).
        let (mut lo_b, mut hi_b) = (0u16, max_bits);
        while lo_b < hi_b {
            let mid = lo_b + (hi_b - lo_b).div_ceil(2);
            if value(mid) <= a {
                lo_b = mid;
            } else {
                hi_b = mid - 1;
            }
        }
        let lo = value(lo_b);
        let above = if lo_b == max_bits {
            lo + (lo - value(lo_b - 1))
        } else {
            value(lo_b + 1)
        };
        // Exact: both have few significant bits.
        let mid = (lo + above) / 2.0;
        if midpoint {
            return mid.copysign(x);
        }
        let up = if lo_b == max_bits {
            f64::INFINITY
        } else {
            above
        };
        // Below the midpoint (or on it, from an even neighbour): the lower one.
        let r = if a < mid || (a == mid && lo_b % 2 == 0) {
            lo
        } else {
            up
        };
        r.copysign(x)
    }

    #[test]
    fn a_range_of_ints_keeps_bfloat16_in_bfloat16() {
        use crate::histogram::bins::BinSpec;
        use crate::sample::Samples;
        let s = [bf16::from_f32(1.5), bf16::from_f32(-3.0)];
        let ints = |lo, hi| BinSpec::UniformIntRange {
            nbins: 7,
            range: (lo, hi),
        };
        let floats = |lo: f64, hi: f64| BinSpec::Uniform {
            nbins: 7,
            range: Some((lo, hi)),
        };
        // Python ints: bfloat16 edges and estimate (numpy with ml_dtypes); floats: float64.
        let b = Binning::resolve(&ints(-4, 4), Samples::BF16(&s)).unwrap();
        let Binning::UniformHalf(u) = &b else {
            panic!("{b:?}")
        };
        assert_eq!(
            (u.format, u.arith),
            (HalfFormat::BF16, HalfArith::Range { denom: 8.0 })
        );
        let f = Binning::resolve(&floats(-4.0, 4.0), Samples::BF16(&s)).unwrap();
        assert!(matches!(f, Binning::UniformF64(_)), "{f:?}");
        // One value widens by the Python float 0.5: floats again. Other types: as floats.
        assert_eq!(
            Binning::resolve(&ints(2, 2), Samples::BF16(&s)).unwrap(),
            Binning::resolve(&floats(2.0, 2.0), Samples::BF16(&s)).unwrap()
        );
        let x = [0.5f32, 2.0];
        assert_eq!(
            Binning::resolve(&ints(-4, 4), Samples::F32(&x)).unwrap(),
            Binning::resolve(&floats(-4.0, 4.0), Samples::F32(&x)).unwrap()
        );
        assert!(Binning::resolve(&ints(4, -4), Samples::BF16(&s)).is_err());
    }

    #[test]
    fn bfloat16_bounds_rounding_onto_a_value_beyond_them_follow_numpy() {
        let s = [bf16::from_f32(1.296875), bf16::from_f32(0.5)];
        let bins = |lo, hi| resolve(HalfFormat::BF16, 4, Some((lo, hi)), &s);
        // 1.296874999999 rounds up to the float32 1.296875, a bfloat16: numpy keeps that value,
        // in the last bin; the edges stay numpy's (ending at the bound as given).
        let b = bins(-1.0, 1.296874999999).unwrap();
        assert_eq!(b.locate(bf16::from_f32(1.296875)), Slot::Bin(3));
        assert_eq!(b.locate(bf16::from_f32(1.3046875)), Slot::Above);
        assert_eq!(b.locate(bf16::from_f32(-1.0)), Slot::Bin(0));
        assert_eq!(*b.edges().last().unwrap(), 1.296874999999);
        // Bounds that are the value, round inwards or onto no bfloat16 keep nothing beyond them.
        for (lo, hi) in [(-1.0, 1.296875), (-1.0, 1.2968751), (0.1, 0.2)] {
            let b = bins(lo, hi).unwrap();
            let top = bf16::from_f32(hi as f32);
            let past = if (top.to_f32() as f64) > hi {
                top
            } else {
                bf16::from_bits(top.to_bits() + 1)
            };
            assert_eq!(b.locate(past), Slot::Above, "{lo} {hi}");
        }
        // 0.5 + 1e-12 rounds down to 0.5, where numpy fails: refused by name.
        assert!(matches!(
            bins(0.5 + 1e-12, 2.0),
            Err(Error::NotImplemented(m)) if m.contains("rounds in float32 to 0.5")
        ));
        assert!(bins(0.5 - 1e-12, 1.3).is_ok());
        // float16 samples compare in float16: their own bins.
        let h = [f16::from_f32(0.5)];
        assert!(resolve(HalfFormat::F16, 4, Some((-1.0, 1.296874999999)), &h).is_ok());
    }

    #[test]
    fn data_range_bins_locate_in_float16() {
        let s = [f16::from_f32(-1.5), f16::from_f32(0.1), f16::from_f32(2.0)];
        let b = resolve(HalfFormat::F16, 3, None, &s).unwrap();
        let Binning::UniformHalf(u) = &b else {
            panic!("{b:?}")
        };
        assert_eq!((u.first, u.last), (-1.5, 2.0));
        assert_eq!(u.locate(2.0), Slot::Bin(2));
        assert_eq!(u.locate(-1.5), Slot::Bin(0));
        assert_eq!(u.locate(f32::NAN), Slot::Nan);
    }
}
