//! numpy's bin estimate for uniform bins, and when it may be one multiply by `n / denom` instead of
//! a division without changing any bin. Shared by both engines so that they make the same choice
//! and stay bit-identical to numpy.

use super::Binning;
use super::{UniformF32, UniformF64};

/// Loop-invariant numbers of numpy's estimate.
#[derive(Clone, Copy)]
pub(crate) struct EstimateParams {
    pub(crate) n: u32,
    pub(crate) denom: f64,
    pub(crate) n64: f64,
    pub(crate) denom32: f32,
    pub(crate) n32: f32,
    /// `n / denom` in float64: the factor of the multiply estimate (see [`fast_estimate`]).
    pub(crate) scale: f64,
    /// `n / denom` in float32 (the all-float32 rule's factor).
    pub(crate) scale32: f32,
}

impl EstimateParams {
    pub(crate) fn new(n: usize, denom: f64) -> Self {
        let (n32, denom32) = (n as f32, denom as f32);
        EstimateParams {
            n: n as u32,
            denom,
            n64: n as f64,
            denom32,
            n32,
            scale: n as f64 / denom,
            scale32: n32 / denom32,
        }
    }
}

/// Whether the estimate may be computed with one multiply by the precomputed factor `n / denom`
/// (float64 for float32 samples with a float64 divisor and for float64 samples, float32 for the
/// all-float32 rule) instead of numpy's division, without changing any bin. The difference
/// `x - first` is computed exactly as numpy does, and the correction is the same.
///
/// Why no bin changes. For a sample `x` in `[first, last]` let `b` be the unique bin with
/// `edges[b] <= x < edges[b + 1]` (the last bin closed; [`Binning::resolve`] guarantees strictly
/// increasing edges with `edges[0] == first` and `edges[n] == last`). numpy's bin is the corrected
/// estimate: one down if `x < edges[i]`, then one up if `x >= edges[i + 1]` and `i` is not the last
/// bin. From any estimate in `{b - 1, b, b + 1}` (after truncation and the clamp to `[0, n - 1]`)
/// this returns `b`: from `b + 1`, `x < edges[b + 1]` takes it down and then keeps it there; from
/// `b`, neither test holds; from `b - 1`, `x >= edges[b] > edges[b - 1]` rules out the decrement
/// and `x >= edges[b]` takes it up. So when numpy's estimate and the multiply estimate are both
/// within one bin of `b`, both rules give `b`, whatever the two estimates are. A truncated estimate
/// is in `{b - 1, b, b + 1}` when the real number truncated is in `(b - 1, b + 2)`.
///
/// The errors, in bins (`W = denom / n`; `U` the spacing of the working precision's numbers just
/// above `M = max(|first|, |last|)`: a value rounded to magnitude at most `M` moves by at most
/// `U / 2`, the difference `x - first` (magnitude at most `2M`) by at most `U`):
/// - float32 samples, range from the caller (numpy's divisor is float64): `first` is the range's
///   lower end rounded to float32 (`U / 2`), each edge a float64 `linspace` value (within `2^-26 U`
///   of `lo + i W`) rounded to float32 (`U / 2`), the float32 difference is rounded once (`U`),
///   and numpy's float64 division and multiply, like the float64 factor and multiply, add a
///   relative `2^-52`: at most `2^-27` bins for `n <= 2^24`. So the sample's position relative to
///   `b` is off by at most `U / (2W)` and both estimates by a further `1.5U / W + 2^-27`: both are
///   in `(b - 2U/W - 2^-26, b + 1 + 2U/W + 2^-26)`. Used when `W >= 8U` (a quarter of a bin).
/// - float32 samples, range from the data (all float32): the float32 `linspace` edges are within
///   `3.5U` of `lo + i W` (the step and the product `i * step` rounded, `U` each after the step's
///   relative error times `i`, then the sum, `U / 2`), the difference is rounded once (`U`), and
///   either estimate's two float32 roundings add a relative `2^-23`, at most `2 (n + 1) 2^-24`
///   bins; `W >= 16U` implies `n < 2^21`, so both estimates are in `(b - 0.54, b + 1.54)`.
/// - float64 (and integer) samples: the float64 `linspace` edges are within `4.5U` of
///   `lo + i (hi - lo) / n`, the difference is rounded once (`U`), the divisor differs from
///   `hi - lo` by at most `2U` (integer data with the range from the data: the exact span rounded
///   once, the ends rounded to float64), and either estimate's two roundings add `2^-28` bins for
///   `n <= 2^24`: `7.5U / W + 2^-28` in all, under half a bin for `W >= 16U`.
///
/// The relative error bounds need a normal factor `n / denom`: with a subnormal range it
/// overflows (a float32 range `[0, 1e-40]` in 3 bins gave an infinite factor and wrong bins before
/// this was checked). Subnormal samples and differences are fine: their roundings are absolute
/// errors of at most half the smallest spacing, `U / 2` at most. Elsewhere (narrower bins, more
/// than 2^24 bins, an infinite span, a factor that is not normal) numpy's division is kept.
/// The `fast_estimate_tests` check every edge and the values 1 and 2 ulps either side.
pub(crate) fn fast_estimate(
    n: usize,
    width: f64,
    min_ulps: f64,
    ulp: f64,
    scale_normal: bool,
) -> bool {
    n <= FAST_MAX_BINS && scale_normal && width.is_finite() && width >= min_ulps * ulp
}

/// At most this many bins for the multiply estimate (see [`fast_estimate`]).
pub(crate) const FAST_MAX_BINS: usize = 1 << 24;
/// Smallest bin width for the multiply estimate, in spacings of the working precision at the
/// range's largest magnitude: float32 data with a float64 divisor; the all-float32 rule and
/// float64 data (see [`fast_estimate`]).
pub(crate) const FAST_MIN_ULPS_WIDE: f64 = 8.0;
pub(crate) const FAST_MIN_ULPS: f64 = 16.0;

/// Spacing of the float32 numbers just above `|m|` (infinite for `f32::MAX`).
pub(crate) fn ulp32(m: f32) -> f64 {
    let m = m.abs();
    (f32::from_bits(m.to_bits() + 1) as f64) - m as f64
}

/// Spacing of the float64 numbers just above `|m|` (infinite for `f64::MAX`).
pub(crate) fn ulp64(m: f64) -> f64 {
    let m = m.abs();
    f64::from_bits(m.to_bits() + 1) - m
}

pub(crate) fn f32_multiply_estimate(u: &UniformF32, p: &EstimateParams) -> bool {
    let n = u.nbins;
    let ulp = ulp32(u.first.abs().max(u.last.abs()));
    if u.denom_is_f64 {
        let normal = p.scale.is_normal();
        fast_estimate(n, u.denom / n as f64, FAST_MIN_ULPS_WIDE, ulp, normal)
    } else {
        let normal = p.scale32.is_normal();
        fast_estimate(n, p.denom32 as f64 / n as f64, FAST_MIN_ULPS, ulp, normal)
    }
}

pub(crate) fn f64_multiply_estimate(u: &UniformF64, p: &EstimateParams) -> bool {
    let n = u.nbins;
    let ulp = ulp64(u.first.abs().max(u.last.abs()));
    fast_estimate(
        n,
        u.denom / n as f64,
        FAST_MIN_ULPS,
        ulp,
        p.scale.is_normal(),
    )
}

/// The factors `n / denom` (float64, float32) when the estimate may be one multiply instead of
/// numpy's division without changing any bin (see [`fast_estimate`]); the GPU kernels use the same
/// decision so that both engines stay bit-identical to numpy.
pub(crate) fn multiply_estimate_factors(binning: &Binning) -> Option<(f64, f32)> {
    match binning {
        Binning::UniformF32(u) => {
            let p = EstimateParams::new(u.nbins, u.denom);
            f32_multiply_estimate(u, &p).then_some((p.scale, p.scale32))
        }
        Binning::UniformF64(u) => {
            let p = EstimateParams::new(u.nbins, u.denom);
            f64_multiply_estimate(u, &p).then_some((p.scale, p.scale32))
        }
        Binning::Integer { .. }
        | Binning::Edges(_)
        | Binning::IntEdges(_)
        | Binning::UniformHalf(_) => None,
    }
}

/// Where in a bin the multiply estimate needs no correction: `(lo, hi)` such that an estimate `m`
/// (the real product before truncation) whose fractional part lies strictly between them is
/// numpy's bin `floor(m)`, with no edge read. `(0, 0)` (nothing qualifies) where no bound is proven.
///
/// Why. [`fast_estimate`] bounds the multiply estimate: for the bin `b` numpy's edges give `x`, `m`
/// lies in `(b - e, b + 1 + e)`, with `e = 2U/W + 2^-26` (float32 samples, float64 divisor) or
/// `e = 7.5U/W + 2^-28` (float64 and integer samples). If `m` lies in `[k + e, k + 1 - e]` then
/// `k + e <= m < b + 1 + e` gives `k <= b`, and `b - e < m <= k + 1 - e` gives `b <= k`: `b = k`.
/// The margin is twice `e`, for headroom. With bins much wider than the working precision's
/// spacing (the usual case: 1000 bins over [-4, 4] in float32 have `e` near 1e-4) all but a few
/// samples in ten thousand skip the two edge reads, which on the GPU are scattered loads.
/// The all-float32 rule (range from the data) has a looser bound and keeps the correction.
pub(crate) fn interior_fraction(binning: &Binning) -> (f64, f64) {
    /// Above this margin the shortcut is off: about 6 % of warps would diverge.
    const MAX_INTERIOR_MARGIN: f64 = 1e-3;
    // Worth it only where nearly every warp takes it: a sample falls in the margins with
    // probability near 2 * margin, and a warp whose 32 lanes do not all take the shortcut runs
    // both paths (float32 at 32768 bins over [-4, 4], margin 8e-3, ran 2.7x slower on the H100).
    match interior_margin(binning) {
        Some(margin) if margin < MAX_INTERIOR_MARGIN => (margin, 1.0 - margin),
        _ => (0.0, 0.0),
    }
}

/// [`interior_fraction`]'s margin before its cap: twice the proven bound `e`, or `None` where no
/// bound is proven.
fn interior_margin(binning: &Binning) -> Option<f64> {
    let e = match binning {
        Binning::UniformF32(u) if u.denom_is_f64 => {
            let p = EstimateParams::new(u.nbins, u.denom);
            if !f32_multiply_estimate(u, &p) {
                return None;
            }
            let ulp = ulp32(u.first.abs().max(u.last.abs()));
            2.0 * ulp / (u.denom / u.nbins as f64) + (-26f64).exp2()
        }
        Binning::UniformF64(u) => {
            let p = EstimateParams::new(u.nbins, u.denom);
            if !f64_multiply_estimate(u, &p) {
                return None;
            }
            let ulp = ulp64(u.first.abs().max(u.last.abs()));
            7.5 * ulp / (u.denom / u.nbins as f64) + (-28f64).exp2()
        }
        _ => return None,
    };
    let margin = 2.0 * e;
    margin.is_finite().then_some(margin)
}

/// Where the float32 shortcut's margin exceeds this, the float64 one on the exact difference
/// ([`interior_fraction_wide`]) takes over: about 6 % of warps would have a lane near an edge, and
/// the float64 shortcut measured as fast as the float32 one where neither diverges (bench/NOTES.md,
/// "Session 16").
const WIDE_FROM_MARGIN32: f64 = 1.0 / 1024.0;
/// The float64 shortcut's cap on its margin: beyond it most warps would take both paths.
const MAX_WIDE_MARGIN: f64 = 1.0 / 16.0;

/// The float32 samples' shortcut in float64 arithmetic, for bins where the float32 one
/// ([`interior_fraction32`]) needs a wide margin or none: `Some((first, scale, lo))` where the
/// kernel may take the bin `k = floor(m)` of `m = (x - first) * scale`, both operations in float64
/// rounded to nearest (the difference of two float32 values, so nearly exact), for a sample `x`
/// in `[first, last]` whose `m` has a fractional part strictly between `lo` and `1 - lo` (and
/// `k < n`). The rule's other samples go to numpy's estimate and correction, as in the float32
/// shortcut's kernels.
///
/// Why. `m` is non-decreasing in `x` (a rounded difference, then a rounded product by a positive
/// constant). Let `M_i` be `m` computed for edge `i` (the edges numpy cuts with, in float32), and
/// `lo` the largest `|M_i - i|` over every edge, measured here with the kernel's operations. A
/// fraction of `m` above `lo` gives `m > k + lo >= M_k`, so `x > edges[k]` (otherwise `m <= M_k`);
/// below `1 - lo` gives `m < k + 1 - lo <= M_(k+1)`, so `x < edges[k + 1]`. The sample lies inside
/// bin `k` as the edges define it, which is numpy's bin because numpy's estimate is within one bin
/// of it (the multiply estimate's proof, [`multiply_estimate_factors`], which this requires).
/// No bound on the rounding is assumed: the edges' deviation is measured, so the margin is only as
/// wide as the float32 edges' own rounding (about 0.3 % of a bin at 100000 bins over [-4, 4]).
pub(crate) fn interior_fraction_wide(binning: &Binning) -> Option<(f64, f64, f64)> {
    let Binning::UniformF32(u) = binning else {
        return None;
    };
    if u.nbins == 0 || u.nbins > 1 << 24 || u.edges.len() != u.nbins + 1 {
        return None;
    }
    multiply_estimate_factors(binning)?;
    if interior_fraction32(binning).is_some_and(|(_, lo32, _)| (lo32 as f64) <= WIDE_FROM_MARGIN32)
    {
        return None;
    }
    let first = u.edges[0] as f64;
    let scale = u.nbins as f64 / (u.edges[u.nbins] as f64 - first);
    if !scale.is_finite() || scale <= 0.0 {
        return None;
    }
    let lo = u
        .edges
        .iter()
        .enumerate()
        .map(|(i, &e)| ((e as f64 - first) * scale - i as f64).abs())
        .fold(0.0f64, f64::max);
    (lo < MAX_WIDE_MARGIN).then_some((first, scale, lo))
}

/// [`interior_fraction_wide`]'s upper fraction for `lo`: `1 - lo` rounded down past the rounding
/// of the subtraction, so that a fraction below it is below the exact `1 - lo`.
pub(crate) fn wide_hi(lo: f64) -> f64 {
    (1.0 - lo) - (-50f64).exp2()
}

/// The float32 shortcut's cap on its margin: beyond it too many warps would take both paths. Looser
/// than [`interior_fraction`]'s: the float32 kernels' rule for samples near an edge is an
/// out-of-line call that only the lanes near an edge take (bench/NOTES.md, session 15).
const MAX_INTERIOR32_MARGIN: f64 = 1.0 / 32.0;

/// The same shortcut in float32 arithmetic, for float32 samples: `Some((scale, lo, hi))` where the
/// kernel may take the bin from `m32 = (x - first) * scale` rounded to float32, without float64: a
/// fractional part of `m32` strictly between `lo` and `hi` (and `floor(m32) < n`) is numpy's bin
/// `floor(m32)`. It saves the conversions to and from float64 (a caller's range) or the two edge
/// reads (the range from the data) per sample, which bound the float32 kernels.
///
/// Why, with a caller's range (numpy divides in float64): `scale` is [`interior_fraction`]'s
/// float64 factor, exactly representable in float32, so `m32` and the float64 estimate `m` are two
/// roundings of the same exact product, which lies below `2n`: `|m32 - m| <= s = (ulp32(2n) +
/// ulp64(2n)) / 2`. A fractional part of `m32` in `(margin + s, 1 - margin - s)` puts `m` in
/// `(k + margin, k + 1 - margin)` with the same `k = floor(m32)`, where [`interior_fraction`]'s
/// proof gives bin `k`.
///
/// Why, with the range from the data (numpy's all-float32 rule, whose multiply estimate
/// [`f32_multiply_estimate`] proved): edge `i` lies at `P_i = (edges[i] - first) * scale = i + d_i`
/// (exact in float64: float32 operands), `|d_i| <= dev` measured over every edge, so a sample of
/// bin `b` lies at `P in [b - dev, b + 1 + dev)`. `m32` differs from `P` by at most
/// `E = ulp32(2 max(|first|, |last|)) / 2 * scale + ulp32(2n) / 2` (the difference's rounding, then
/// the product's). A fractional part of `m32` in `[dev + E, 1 - dev - E]` leaves `b = floor(m32)`
/// (`k + dev + E <= m32 < P + E` gives `b >= k`; `P < m32 + E <= k + 1 - dev` gives `b <= k`); the
/// margin is twice that, for headroom. Numpy's estimate-and-correct equals the edge bin here
/// because the multiply estimate is within one bin ([`fast_estimate`]).
///
/// Both: bins up to 2^22 keep `m32` below 2^23, where the kernel's floor (an add rounding down) is
/// exact.
pub(crate) fn interior_fraction32(binning: &Binning) -> Option<(f32, f32, f32)> {
    let Binning::UniformF32(u) = binning else {
        return None;
    };
    if u.nbins > 1 << 22 {
        return None;
    }
    let (scale64, scale32) = multiply_estimate_factors(binning)?;
    let two_n = 2.0 * u.nbins as f64;
    let (scale, lo) = if u.denom_is_f64 {
        let margin = interior_margin(binning).unwrap_or(0.0);
        let scale = scale64 as f32;
        if margin <= 0.0 || scale as f64 != scale64 {
            return None;
        }
        (scale, margin + (ulp32(two_n as f32) + ulp64(two_n)) / 2.0)
    } else {
        let s = scale32 as f64;
        let first = u.first as f64;
        let dev = u
            .edges
            .iter()
            .enumerate()
            .map(|(i, &e)| ((e as f64 - first) * s - i as f64).abs())
            .fold(0.0f64, f64::max);
        let reach = 2.0 * u.first.abs().max(u.last.abs());
        let e = ulp32(reach) / 2.0 * s + ulp32(two_n as f32) / 2.0;
        (scale32, 2.0 * (dev + e))
    };
    let hi = 1.0 - lo;
    if !scale.is_normal() || !lo.is_finite() || lo >= MAX_INTERIOR32_MARGIN || lo >= hi {
        return None;
    }
    // Round both bounds inward (both positive: the neighbouring float32 is one bit pattern away).
    let lo32 = lo as f32;
    let lo32 = if (lo32 as f64) <= lo {
        f32::from_bits(lo32.to_bits() + 1)
    } else {
        lo32
    };
    let hi32 = hi as f32;
    let hi32 = if (hi32 as f64) >= hi {
        f32::from_bits(hi32.to_bits() - 1)
    } else {
        hi32
    };
    Some((scale, lo32, hi32))
}
