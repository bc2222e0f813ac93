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

use crate::bins::{locate_in_edges, Binning, OutOfRange, Slot, UniformF32, UniformF64};
use crate::histogram::{Counts, Tallies};
use crate::sample::{Sample, SampleType, Weights};

mod partition_i32;

/// Counts and tallies of one run of the CPU engine, before the policy is checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuResult {
    pub counts: Counts,
    pub tallies: Tallies,
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
) -> CpuResult {
    let nbins = binning.nbins();
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
        ),
        Binning::UniformF32(u) => dispatch(samples, weights, nbins, clamp, &F32Codes::new(u)),
        Binning::UniformF64(u) => dispatch(samples, weights, nbins, clamp, &F64Codes::new(u)),
        Binning::Edges(e) => dispatch(samples, weights, nbins, clamp, &EdgeCodes { edges: e }),
        Binning::IntEdges(e) => {
            dispatch(samples, weights, nbins, clamp, &IntEdgeCodes { edges: e })
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

/// First pass over a batch (vectorisable, no branches): the code of every sample outside
/// `[first, last]` (`n`, `n + 1`, `n + 2` for below, above, NaN) and numpy's arithmetic estimate,
/// clamped to `[0, n - 1]`, for every sample inside. `$est` is numpy's estimate of `x`.
macro_rules! estimate_pass {
    ($name:ident, $avx2:ident, $avx512:ident, $t:ty, |$x:ident, $first:ident, $p:ident| $est:expr) => {
        #[inline(always)]
        fn $name(
            xs: &[$t],
            out: &mut [u32],
            edges: &[$t],
            $first: $t,
            last: $t,
            $p: EstimateParams,
        ) {
            let n = $p.n;
            assert_eq!(edges.len(), n as usize + 1);
            let top = (n - 1) as f64;
            for (o, &$x) in out.iter_mut().zip(xs) {
                let inside = ($x >= $first) & ($x <= last);
                #[allow(clippy::eq_op)]
                let nan = ($x != $x) as u32;
                let outside = n + ($x > last) as u32 + 2 * nan;
                let e: f64 = $est;
                // SAFETY: `max` drops NaN, so the value is finite and in [0, n - 1] < 2^30.
                let e = unsafe { e.max(0.0).min(top).to_int_unchecked::<i32>() } as u32;
                // numpy's correction against the actual edges; both tests use the estimate
                // (numpy increments only where it did not decrement, and after a decrement the
                // increment test is false anyway), so the two loads are independent.
                // SAFETY: e <= n - 1 and edges.len() == n + 1 (asserted above).
                let (lo, hi) = unsafe {
                    (
                        *edges.get_unchecked(e as usize),
                        *edges.get_unchecked(e as usize + 1),
                    )
                };
                let dec = (e != 0) & ($x < lo);
                let inc = !dec & (e != n - 1) & ($x >= hi);
                let fixed = e.wrapping_sub(dec as u32).wrapping_add(inc as u32);
                *o = if inside { fixed } else { outside };
            }
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $avx2(
            xs: &[$t],
            out: &mut [u32],
            edges: &[$t],
            first: $t,
            last: $t,
            p: EstimateParams,
        ) {
            $name(xs, out, edges, first, last, p)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,avx512f,avx512vl,avx512dq")]
        unsafe fn $avx512(
            xs: &[$t],
            out: &mut [u32],
            edges: &[$t],
            first: $t,
            last: $t,
            p: EstimateParams,
        ) {
            $name(xs, out, edges, first, last, p)
        }
    };
}

/// Loop-invariant numbers of numpy's estimate.
#[derive(Clone, Copy)]
struct EstimateParams {
    n: u32,
    denom: f64,
    n64: f64,
    denom32: f32,
    n32: f32,
    /// `n / denom` in float64: the factor of the multiply estimate (see [`fast_estimate`]).
    scale: f64,
    /// `n / denom` in float32 (the all-float32 rule's factor).
    scale32: f32,
}

impl EstimateParams {
    fn new(n: usize, denom: f64) -> Self {
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
fn fast_estimate(n: usize, width: f64, min_ulps: f64, ulp: f64, scale_normal: bool) -> bool {
    n <= FAST_MAX_BINS && scale_normal && width.is_finite() && width >= min_ulps * ulp
}

/// At most this many bins for the multiply estimate (see [`fast_estimate`]).
const FAST_MAX_BINS: usize = 1 << 24;
/// Smallest bin width for the multiply estimate, in spacings of the working precision at the
/// range's largest magnitude: float32 data with a float64 divisor; the all-float32 rule and
/// float64 data (see [`fast_estimate`]).
const FAST_MIN_ULPS_WIDE: f64 = 8.0;
const FAST_MIN_ULPS: f64 = 16.0;

/// Spacing of the float32 numbers just above `|m|` (infinite for `f32::MAX`).
fn ulp32(m: f32) -> f64 {
    let m = m.abs();
    (f32::from_bits(m.to_bits() + 1) as f64) - m as f64
}

/// Spacing of the float64 numbers just above `|m|` (infinite for `f64::MAX`).
fn ulp64(m: f64) -> f64 {
    let m = m.abs();
    f64::from_bits(m.to_bits() + 1) - m
}

// float32 samples, range from the caller: float32 difference, float64 division
estimate_pass!(
    est_f32_wide,
    est_f32_wide_avx2,
    est_f32_wide_avx512,
    f32,
    |x, first, p| ((x - first) as f64 / p.denom) * p.n64
);
// float32 samples, range from the data: all float32
estimate_pass!(
    est_f32_narrow,
    est_f32_narrow_avx2,
    est_f32_narrow_avx512,
    f32,
    |x, first, p| ((x - first) / p.denom32 * p.n32) as f64
);
// float64 (and integer) samples
estimate_pass!(est_f64, est_f64_avx2, est_f64_avx512, f64, |x, first, p| (x
    - first)
    / p.denom
    * p.n64);
// The same three with the multiply estimate (only where [`fast_estimate`] allows it): the
// difference is still computed as numpy does, then multiplied by the precomputed `n / denom`.
estimate_pass!(
    est_f32_wide_mul,
    est_f32_wide_mul_avx2,
    est_f32_wide_mul_avx512,
    f32,
    |x, first, p| (x - first) as f64 * p.scale
);
estimate_pass!(
    est_f32_narrow_mul,
    est_f32_narrow_mul_avx2,
    est_f32_narrow_mul_avx512,
    f32,
    |x, first, p| ((x - first) * p.scale32) as f64
);
estimate_pass!(
    est_f64_mul,
    est_f64_mul_avx2,
    est_f64_mul_avx512,
    f64,
    |x, first, p| (x - first) * p.scale
);

/// Runs an estimate pass, with AVX2 where the CPU has it.
macro_rules! run_pass {
    ($name:ident, $avx2:ident, $avx512:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512dq")
            {
                // SAFETY: the CPU supports these features (checked just above).
                unsafe { $avx512($($arg),*) }
            } else if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { $avx2($($arg),*) }
            } else {
                $name($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $name($($arg),*)
        }
    }};
}

struct IntegerCodes {
    n: u64,
}

impl<T: Sample> Codes<T> for IntegerCodes {
    fn integer_bins(&self) -> Option<u64> {
        Some(self.n)
    }
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let n = self.n;
        match T::TYPE {
            // i32 and narrower: one unsigned compare decides "in range"
            SampleType::I32
            | SampleType::I16
            | SampleType::I8
            | SampleType::U8
            | SampleType::U16
            | SampleType::U32 => {
                let v = x.to_i128() as i64;
                if (v as u64) < n {
                    v as u32
                } else {
                    n as u32 + (v >= 0) as u32
                }
            }
            _ => match x.to_bin_candidate() {
                None => n as u32,
                Some(v) if v >= n => n as u32 + 1,
                Some(v) => v as u32,
            },
        }
    }
}

/// numpy's float32 uniform rule ([`UniformF32::locate`]), branch-free inside the range.
struct F32Codes<'a> {
    u: &'a UniformF32,
    n: usize,
    p: EstimateParams,
    /// The estimate is `(x - first) * (n / denom)` (one multiply) instead of numpy's division:
    /// the same bins (see [`fast_estimate`]).
    fast: bool,
    /// `1 / width` where the bin is `floor(x / width)` exactly, no estimate or correction needed
    /// ([`UniformF32::exact_power_of_two_width`]).
    exact: Option<f32>,
}

impl<'a> F32Codes<'a> {
    fn new(u: &'a UniformF32) -> Self {
        let n = u.nbins;
        let p = EstimateParams::new(n, u.denom);
        let fast = f32_multiply_estimate(u, &p);
        let exact = u.exact_power_of_two_width();
        F32Codes {
            u,
            n,
            p,
            fast,
            exact,
        }
    }
}

/// The codes of float32 bins from 0 of a power-of-two width (see
/// [`UniformF32::exact_power_of_two_width`]): `floor(x * inv)` inside `[0, last]`, no edge loads, so
/// the loop vectorises without gathers.
#[inline(always)]
fn exact_f32(xs: &[f32], out: &mut [u32], n: u32, last: f32, inv: f32) {
    let top = (n - 1) as f32;
    for (o, &x) in out.iter_mut().zip(xs) {
        let inside = (x >= 0.0) & (x <= last);
        #[allow(clippy::eq_op)]
        let nan = (x != x) as u32;
        let outside = n + (x > last) as u32 + 2 * nan;
        // SAFETY: `max` drops NaN, so the value is finite and in [0, n - 1] < 2^24.
        let e = unsafe { (x * inv).max(0.0).min(top).to_int_unchecked::<i32>() } as u32;
        *o = if inside { e } else { outside };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn exact_f32_avx2(xs: &[f32], out: &mut [u32], n: u32, last: f32, inv: f32) {
    exact_f32(xs, out, n, last, inv)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512dq")]
unsafe fn exact_f32_avx512(xs: &[f32], out: &mut [u32], n: u32, last: f32, inv: f32) {
    exact_f32(xs, out, n, last, inv)
}

fn f32_multiply_estimate(u: &UniformF32, p: &EstimateParams) -> bool {
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

fn f64_multiply_estimate(u: &UniformF64, p: &EstimateParams) -> bool {
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
        Binning::Integer { .. } | Binning::Edges(_) | Binning::IntEdges(_) => None,
    }
}

impl<T: Sample> Codes<T> for F32Codes<'_> {
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let x = x.to_f32();
        let u = self.u;
        let n = self.n;
        let p = &self.p;
        if !(x >= u.first && x <= u.last) {
            return n as u32 + if x.is_nan() { 2 } else { (x > u.last) as u32 };
        }
        if let Some(inv) = self.exact {
            return ((x * inv) as u32).min(n as u32 - 1);
        }
        let diff = x - u.first;
        let estimate = match (u.denom_is_f64, self.fast) {
            (true, false) => (diff as f64 / p.denom * p.n64) as i64,
            (true, true) => (diff as f64 * p.scale) as i64,
            (false, false) => (diff / p.denom32 * p.n32) as i64,
            (false, true) => (diff * p.scale32) as i64,
        };
        correct(estimate, x, &u.edges[..=n])
    }

    #[inline(always)]
    fn codes(&self, xs: &[T], out: &mut [u32]) {
        if self.n >= VECTOR_MAX_BINS {
            out.iter_mut().zip(xs).for_each(|(o, &x)| *o = self.code(x));
            return;
        }
        let mut buf = [0f32; BATCH];
        let xs32: &[f32] = match same_type::<T, f32>(xs) {
            Some(xs) => xs,
            None => {
                let buf = &mut buf[..xs.len()];
                buf.iter_mut().zip(xs).for_each(|(b, &x)| *b = x.to_f32());
                buf
            }
        };
        let u = self.u;
        if let Some(inv) = self.exact {
            let (n, last) = (self.n as u32, u.last);
            run_pass!(
                exact_f32,
                exact_f32_avx2,
                exact_f32_avx512,
                xs32,
                out,
                n,
                last,
                inv
            );
            return;
        }
        let (e, f, l, p) = (&u.edges[..], u.first, u.last, self.p);
        match (u.denom_is_f64, self.fast) {
            (true, false) => run_pass!(
                est_f32_wide,
                est_f32_wide_avx2,
                est_f32_wide_avx512,
                xs32,
                out,
                e,
                f,
                l,
                p
            ),
            (true, true) => run_pass!(
                est_f32_wide_mul,
                est_f32_wide_mul_avx2,
                est_f32_wide_mul_avx512,
                xs32,
                out,
                e,
                f,
                l,
                p
            ),
            (false, false) => run_pass!(
                est_f32_narrow,
                est_f32_narrow_avx2,
                est_f32_narrow_avx512,
                xs32,
                out,
                e,
                f,
                l,
                p
            ),
            (false, true) => run_pass!(
                est_f32_narrow_mul,
                est_f32_narrow_mul_avx2,
                est_f32_narrow_mul_avx512,
                xs32,
                out,
                e,
                f,
                l,
                p
            ),
        }
    }
}

/// `xs` as a slice of `U` when `T` is `U` (the float code loops read float samples in place).
#[inline(always)]
fn same_type<T: 'static, U: 'static>(xs: &[T]) -> Option<&[U]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<U>() {
        // SAFETY: T and U are the same type.
        Some(unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<U>(), xs.len()) })
    } else {
        None
    }
}

/// numpy's float64 uniform rule ([`UniformF64::locate`]).
struct F64Codes<'a> {
    u: &'a UniformF64,
    n: usize,
    p: EstimateParams,
    /// The estimate is `(x - first) * (n / denom)`: the same bins (see [`fast_estimate`]).
    fast: bool,
}

impl<'a> F64Codes<'a> {
    fn new(u: &'a UniformF64) -> Self {
        let n = u.nbins;
        let p = EstimateParams::new(n, u.denom);
        let fast = f64_multiply_estimate(u, &p);
        F64Codes { u, n, p, fast }
    }
}

impl<T: Sample> Codes<T> for F64Codes<'_> {
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let x = x.to_f64();
        let u = self.u;
        let n = self.n;
        if !(x >= u.first && x <= u.last) {
            return n as u32 + if x.is_nan() { 2 } else { (x > u.last) as u32 };
        }
        let estimate = if self.fast {
            ((x - u.first) * self.p.scale) as i64
        } else {
            ((x - u.first) / u.denom * self.p.n64) as i64
        };
        correct(estimate, x, &u.edges[..=n])
    }

    #[inline(always)]
    fn codes(&self, xs: &[T], out: &mut [u32]) {
        if self.n >= VECTOR_MAX_BINS {
            out.iter_mut().zip(xs).for_each(|(o, &x)| *o = self.code(x));
            return;
        }
        let mut buf = [0f64; BATCH];
        let xs64: &[f64] = match same_type::<T, f64>(xs) {
            Some(xs) => xs,
            None => {
                let buf = &mut buf[..xs.len()];
                buf.iter_mut().zip(xs).for_each(|(b, &x)| *b = x.to_f64());
                buf
            }
        };
        let u = self.u;
        let (e, f, l, p) = (&u.edges[..], u.first, u.last, self.p);
        if self.fast {
            run_pass!(
                est_f64_mul,
                est_f64_mul_avx2,
                est_f64_mul_avx512,
                xs64,
                out,
                e,
                f,
                l,
                p
            );
        } else {
            run_pass!(est_f64, est_f64_avx2, est_f64_avx512, xs64, out, e, f, l, p);
        }
    }
}

struct EdgeCodes<'a> {
    edges: &'a [f64],
}

impl<T: Sample> Codes<T> for EdgeCodes<'_> {
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let n = self.edges.len() - 1;
        match locate_in_edges(self.edges, x.to_f64()) {
            Slot::Bin(i) => i as u32,
            Slot::Below => n as u32,
            Slot::Above => n as u32 + 1,
            Slot::Nan => n as u32 + 2,
        }
    }
}

struct IntEdgeCodes<'a> {
    edges: &'a [i128],
}

impl<T: Sample> Codes<T> for IntEdgeCodes<'_> {
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let n = self.edges.len() - 1;
        match crate::int_edges::locate_in_int_edges(self.edges, x.to_i128()) {
            Slot::Bin(i) => i as u32,
            Slot::Below => n as u32,
            Slot::Above | Slot::Nan => n as u32 + 1,
        }
    }
}

fn dispatch<T: Sample, C: Codes<T>>(
    samples: &[T],
    weights: Option<Weights<'_>>,
    nbins: usize,
    clamp: bool,
    codes: &C,
) -> CpuResult {
    match weights {
        Some(w) => run_weighted(samples, w, nbins, clamp, codes),
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
fn finish(slots: &mut Vec<u64>, nbins: usize, clamp: bool) -> CpuResult {
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
    CpuResult {
        counts: Counts::Unweighted(std::mem::take(slots)),
        tallies,
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

/// Adds one to the counters of `codes` (an iterator of u32), spread over `ways` interleaved
/// copies of `stride` counters in `scratch`.
macro_rules! count_codes {
    ($codes:expr, $scratch:expr, $stride:expr, $ways:expr) => {{
        let stride = $stride;
        let mut it = $codes;
        match $ways {
            4 => {
                let (s0, rest) = $scratch.split_at_mut(stride);
                let (s1, rest) = rest.split_at_mut(stride);
                let (s2, s3) = rest.split_at_mut(stride);
                let s3 = &mut s3[..stride];
                loop {
                    let Some(a) = it.next() else { break };
                    s0[a as usize] += 1;
                    let Some(b) = it.next() else { break };
                    s1[b as usize] += 1;
                    let Some(c) = it.next() else { break };
                    s2[c as usize] += 1;
                    let Some(d) = it.next() else { break };
                    s3[d as usize] += 1;
                }
            }
            2 => {
                let (s0, s1) = $scratch.split_at_mut(stride);
                let s1 = &mut s1[..stride];
                loop {
                    let Some(a) = it.next() else { break };
                    s0[a as usize] += 1;
                    let Some(b) = it.next() else { break };
                    s1[b as usize] += 1;
                }
            }
            _ => {
                let s0 = &mut $scratch[..stride];
                for c in it {
                    s0[c as usize] += 1;
                }
            }
        }
    }};
}

/// Counts the codes of `chunk` into `ways` interleaved u32 copies of `stride` counters.
#[inline(always)]
fn count_chunk<T: Sample, C: Codes<T>>(
    chunk: &[T],
    codes: &C,
    scratch: &mut [u32],
    stride: usize,
    ways: usize,
) {
    if let Some(n) = codes.integer_bins() {
        if let Some(xs) = same_type::<T, i32>(chunk) {
            count_i32(xs, n as u32, scratch, stride, ways);
            return;
        }
        // integer bins: codes computed and counted in one loop, four samples per round
        let ic = IntegerCodes { n };
        let code = |x: T| Codes::<T>::code(&ic, x) as usize;
        let scratch = &mut scratch[..stride * ways];
        let mut quads = chunk.chunks_exact(4);
        // SAFETY (all increments below): an integer code is at most n + 1 < stride, and
        // `w * stride + code` with w < ways stays inside `scratch` (length stride * ways).
        let w = [
            0,
            stride % (stride * ways),
            (2 % ways) * stride,
            (3 % ways) * stride,
        ];
        for q in &mut quads {
            let (a, b, c, d) = (code(q[0]), code(q[1]), code(q[2]), code(q[3]));
            debug_assert!(a.max(b).max(c).max(d) < stride);
            unsafe {
                *scratch.get_unchecked_mut(w[0] + a) += 1;
                *scratch.get_unchecked_mut(w[1] + b) += 1;
                *scratch.get_unchecked_mut(w[2] + c) += 1;
                *scratch.get_unchecked_mut(w[3] + d) += 1;
            }
        }
        for &x in quads.remainder() {
            scratch[code(x)] += 1;
        }
        return;
    }
    let mut buf = [0u32; BATCH];
    for xs in chunk.chunks(BATCH) {
        prefetch_ahead(xs);
        let buf = &mut buf[..xs.len()];
        codes.codes(xs, buf);
        count_codes!(buf.iter().copied(), scratch, stride, ways);
    }
}

/// How far ahead of the samples being counted the input is prefetched, in bytes (the hardware
/// prefetcher alone leaves a scalar counting loop waiting on memory: measured 2x slower).
const PREFETCH_AHEAD: usize = 4096;

/// Prefetches the cache lines `PREFETCH_AHEAD` bytes after those of `xs` into L1.
#[inline(always)]
fn prefetch_ahead<T>(xs: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = xs.as_ptr().cast::<i8>().wrapping_add(PREFETCH_AHEAD);
        let bytes = std::mem::size_of_val(xs);
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch never faults, whatever the address; `wrapping_add` computes the
            // address without creating an out-of-bounds reference.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(off),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = xs;
}

/// Samples per batch of the int32 loop.
const I32_BATCH: usize = 4096;
/// Samples whose slots are computed before they are counted.
const I32_SUB: usize = 128;
/// Spare slots after the `nbins + 3` counters: samples of a block's hot bin are counted in a register
/// and their increments sent to these slots in rotation (no load-add-store chain on one counter).
const SPARE: usize = 8;
/// A bin holding at least this many of [`HOT_PROBES`] evenly spaced samples of a batch is its hot bin.
const HOT_MIN: usize = 8;
const HOT_PROBES: usize = 32;

/// The hot bin of a batch of codes, by a majority vote over a few evenly spaced samples, or
/// `u32::MAX` (no code) when no code holds a large share of them.
#[inline(always)]
fn hot_code(xs: &[i32], code: impl Fn(i32) -> u32) -> u32 {
    let step = (xs.len() / HOT_PROBES).max(1);
    let (mut cand, mut votes) = (u32::MAX, 0usize);
    for &x in xs.iter().step_by(step) {
        let c = code(x);
        if votes == 0 {
            cand = c;
            votes = 1;
        } else if c == cand {
            votes += 1;
        } else {
            votes -= 1;
        }
    }
    let hits = xs
        .iter()
        .step_by(step)
        .filter(|&&x| code(x) == cand)
        .count();
    if hits >= HOT_MIN {
        cand
    } else {
        u32::MAX
    }
}

/// One batch of int32 samples to slot indices (vectorisable): the sample itself inside `[0, n)`,
/// `n` above the range and `n + 1` below it (`min(u, n + (u >> 31))` with `u = x as u32`: negative
/// samples are huge as u32 and have their top bit set), then the hot code sent to the spare slots
/// in rotation, plus the offset of the sample's interleaved copy. Returns the hot samples.
#[inline(always)]
fn i32_slots<const GAP: u32>(
    xs: &[i32],
    out: &mut [u32],
    n: u32,
    hot: u32,
    offs: &[u32; 16],
) -> u32 {
    // per-lane tallies (vector registers), summed at the end
    let mut hitss = [0u32; 16];
    let mut xq = xs.chunks_exact(16);
    let mut oq = out.chunks_exact_mut(16);
    for (x16, o16) in (&mut xq).zip(&mut oq) {
        for k in 0..16 {
            let u = x16[k] as u32;
            let v = u.min(n + (u >> 31));
            let h = v == hot;
            hitss[k] += h as u32;
            o16[k] = if h { n + 3 + (k as u32 & 7) * GAP } else { v } + offs[k];
        }
    }
    let mut hits = hitss.iter().sum::<u32>();
    for (k, (o, &x)) in oq
        .into_remainder()
        .iter_mut()
        .zip(xq.remainder())
        .enumerate()
    {
        let u = x as u32;
        let v = u.min(n + (u >> 31));
        let h = v == hot;
        hits += h as u32;
        *o = if h { n + 3 + (k as u32 & 7) * GAP } else { v } + offs[k];
    }
    hits
}

/// Counters larger than this are prefetched a sub-batch ahead in the int32 loop.
const I32_PIPELINE_BYTES: usize = 1 << 20;

/// Prefetches the counters of `slots` (for writing).
#[inline(never)]
fn prefetch_slots(slots: &[u32], scratch: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    for &i in slots {
        // SAFETY: a prefetch never faults; `wrapping_add` computes the address without creating
        // a reference.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                scratch.as_ptr().wrapping_add(i as usize).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slots, scratch);
}

/// One increment per slot index.
#[inline(never)]
fn add_slots(slots: &[u32], scratch: &mut [u32]) {
    for &i in slots {
        debug_assert!((i as usize) < scratch.len());
        // SAFETY: the caller passes slot indices below scratch.len() (see count_i32_plain).
        unsafe { *scratch.get_unchecked_mut(i as usize) += 1 };
    }
}

/// int32 samples, integer bins `[0, n)`: slot indices computed a few at a time with vector
/// instructions, then one increment per sample. The below/above split of slot `n` is restored from
/// the count of negative samples; the hot bin's register count is added back.
fn count_i32(chunk: &[i32], n: u32, scratch: &mut [u32], stride: usize, ways: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU has the features this version is compiled for (checked just above).
            return unsafe { count_i32_avx512(chunk, n, scratch, stride, ways) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { count_i32_avx2(chunk, n, scratch, stride, ways) };
        }
    }
    count_i32_plain(chunk, n, scratch, stride, ways)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512bw")]
unsafe fn count_i32_avx512(chunk: &[i32], n: u32, scratch: &mut [u32], stride: usize, ways: usize) {
    count_i32_plain(chunk, n, scratch, stride, ways)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_i32_avx2(chunk: &[i32], n: u32, scratch: &mut [u32], stride: usize, ways: usize) {
    count_i32_plain(chunk, n, scratch, stride, ways)
}

#[inline(always)]
fn count_i32_plain(chunk: &[i32], n: u32, scratch: &mut [u32], stride: usize, ways: usize) {
    debug_assert!(n as usize + 3 + SPARE <= stride && scratch.len() >= stride * ways);
    let mut offs = [0u32; 16];
    for (k, o) in offs.iter_mut().enumerate() {
        *o = ((k % ways) * stride) as u32;
    }
    let scratch = &mut scratch[..stride * ways];
    // Counters beyond L2 and a batch with a hot bin (few misses in the out-of-order window): the
    // slots of one sub-batch are computed (and their counters prefetched) while those of the
    // previous one are counted, so the cache misses overlap. Measured: hot data at 1M bins 82 ->
    // 72 ms; uniform data got slower with it (150 -> 163 ms), so it is off there.
    let pipelined = stride * ways * 4 > I32_PIPELINE_BYTES;
    let mut bufs = [[0u32; I32_SUB]; 2];
    let mut pending = 0usize;
    let mut cur = 0usize;
    for batch in chunk.chunks(I32_BATCH) {
        let hot = hot_code(batch, |x| {
            let u = x as u32;
            u.min(n + (u >> 31))
        });
        for xs in batch.chunks(I32_SUB) {
            prefetch_ahead(xs);
            let (a, b) = bufs.split_at_mut(1);
            let (buf, prev) = if cur == 0 {
                (&mut a[0], &b[0])
            } else {
                (&mut b[0], &a[0])
            };
            let buf = &mut buf[..xs.len()];
            let hits = i32_slots::<1>(xs, buf, n, hot, &offs);
            if hits > 0 {
                scratch[hot as usize] += hits;
            }
            // a slot index is at most n + 3 + 7 < stride, plus a copy's offset
            // (k % ways) * stride: below stride * ways == scratch.len()
            let pipe = pipelined && hot != u32::MAX;
            if pipe {
                prefetch_slots(buf, scratch);
            }
            add_slots(&prev[..pending], scratch);
            if pipe {
                pending = xs.len();
                cur ^= 1;
            } else {
                add_slots(buf, scratch);
                pending = 0;
            }
        }
    }
    add_slots(&bufs[cur ^ 1][..pending], scratch);
    // the loop counts samples above the range in slot n and below it in slot n + 1
    let n = n as usize;
    scratch.swap(n, n + 1);
    for w in 1..ways {
        let (above, below) = (scratch[w * stride + n], scratch[w * stride + n + 1]);
        scratch[w * stride + n] = below;
        scratch[w * stride + n + 1] = above;
    }
}

/// From this many bins (and below [`PARTITION_MIN_BINS`]), int32 samples with integer bins are
/// counted in u8 counters with u32 carries ([`count_i32_narrow`]): a quarter of the u32 counters'
/// footprint, so 32768 bins fit L1 and 1M bins fit L2.
const I32_NARROW_MIN_BINS: usize = 1 << 14;
/// The narrow loop's spare slots (see [`SPARE`]) are this many bytes apart (one per cache line).
const NARROW_GAP: u32 = 64;
const NARROW_SPARE: usize = SPARE * NARROW_GAP as usize;

/// One increment per slot index into u8 counters; a counter that wraps to zero carries into `hi`
/// (once per 256 increments of one counter: a rarely taken branch, and `hi` stays out of the cache
/// otherwise).
#[inline(never)]
fn add_slots_narrow(slots: &[u32], lo: &mut [u8], hi: &mut [u32]) {
    for &i in slots {
        debug_assert!((i as usize) < lo.len() && lo.len() == hi.len());
        // SAFETY: the caller passes slot indices below lo.len() == hi.len() (see
        // count_i32_narrow_plain).
        unsafe {
            let c = lo.get_unchecked_mut(i as usize);
            *c = c.wrapping_add(1);
            if *c == 0 {
                *hi.get_unchecked_mut(i as usize) += 1;
            }
        }
    }
}

/// Prefetches the u8 counters of `slots` (for writing).
#[inline(never)]
fn prefetch_slots_narrow(slots: &[u32], lo: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for &i in slots {
        // SAFETY: a prefetch never faults; `wrapping_add` computes the address without creating
        // a reference.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                lo.as_ptr().wrapping_add(i as usize).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slots, lo);
}

/// The slots of up to [`I32_SUB`] int32 samples as [`i32_slots`] computes them, less those of the
/// hot code, packed at the start of `out` (AVX-512 compress): the hot samples cost no increment.
/// Returns the number of slots written and of hot samples.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn i32_slots_compress(
    xs: &[i32],
    out: &mut [u32; I32_SUB],
    n: u32,
    hot: u32,
) -> (usize, u32) {
    assert!(xs.len() <= I32_SUB);
    let (mut len, mut kept) = (0usize, 0usize);
    let mut q = xs.chunks_exact(16);
    for x16 in &mut q {
        let mask: u32;
        // (inline assembly: the AVX-512 intrinsics are newer than this crate's minimum Rust)
        // slot v = min(u, n + (u >> 31)) of 16 samples, the lanes with v != hot compressed to
        // the front and stored at out[len..len + 16], their mask returned.
        // SAFETY: the caller runs this on a CPU with AVX-512F (the function's feature); x16 holds
        // 16 i32 (unaligned load); `len + 16 <= xs.len() <= I32_SUB` before this store, since every
        // earlier group of 16 added at most 16 to `len`, so the 64-byte store stays inside `out`.
        unsafe {
            std::arch::asm!(
                "vpbroadcastd {nv}, {n:e}",
                "vpbroadcastd {hv}, {hot:e}",
                "vmovdqu32 {x}, [{src}]",
                "vpsrld {t}, {x}, 31",
                "vpaddd {t}, {t}, {nv}",
                "vpminud {x}, {x}, {t}",
                "vpcmpd {k}, {x}, {hv}, 4",
                "vpcompressd {x} {{{k}}} {{z}}, {x}",
                "vmovdqu32 [{dst}], {x}",
                "kmovw {m:e}, {k}",
                src = in(reg) x16.as_ptr(),
                dst = in(reg) out.as_mut_ptr().add(len),
                n = in(reg) n,
                hot = in(reg) hot,
                nv = out(zmm_reg) _,
                hv = out(zmm_reg) _,
                x = out(zmm_reg) _,
                t = out(zmm_reg) _,
                k = out(kreg) _,
                m = lateout(reg) mask,
                options(nostack),
            );
        }
        let keep = mask.count_ones() as usize;
        len += keep;
        kept += keep;
    }
    let mut hits = (xs.len() - q.remainder().len() - kept) as u32;
    for &x in q.remainder() {
        let u = x as u32;
        let v = u.min(n + (u >> 31));
        if v == hot {
            hits += 1;
        } else {
            out[len] = v;
            len += 1;
        }
    }
    (len, hits)
}

/// [`count_i32`] into u8 counters `lo` with carries in `hi` (slot `k` counts `256 * hi[k] + lo[k]`;
/// both `n + 3 + NARROW_SPARE` long, one copy).
fn count_i32_narrow(chunk: &[i32], n: u32, lo: &mut [u8], hi: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU has the features this version is compiled for (checked just above).
            return unsafe { count_i32_narrow_avx512(chunk, n, lo, hi) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { count_i32_narrow_avx2(chunk, n, lo, hi) };
        }
    }
    count_i32_narrow_plain::<false>(chunk, n, lo, hi)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512bw")]
unsafe fn count_i32_narrow_avx512(chunk: &[i32], n: u32, lo: &mut [u8], hi: &mut [u32]) {
    count_i32_narrow_plain::<true>(chunk, n, lo, hi)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_i32_narrow_avx2(chunk: &[i32], n: u32, lo: &mut [u8], hi: &mut [u32]) {
    count_i32_narrow_plain::<false>(chunk, n, lo, hi)
}

#[inline(always)]
fn count_i32_narrow_plain<const COMPRESS: bool>(
    chunk: &[i32],
    n: u32,
    lo: &mut [u8],
    hi: &mut [u32],
) {
    let stride = n as usize + 3 + NARROW_SPARE;
    assert!(lo.len() == stride && hi.len() == stride);
    let offs = [0u32; 16];
    // as in count_i32_plain: counters beyond this and a hot bin, the slots of one sub-batch are
    // prefetched while the previous one is counted
    let pipelined = stride > I32_PIPELINE_BYTES;
    let mut bufs = [[0u32; I32_SUB]; 2];
    let mut pending = 0usize;
    let mut cur = 0usize;
    for batch in chunk.chunks(I32_BATCH) {
        let hot = hot_code(batch, |x| {
            let u = x as u32;
            u.min(n + (u >> 31))
        });
        for xs in batch.chunks(I32_SUB) {
            prefetch_ahead(xs);
            let (a, b) = bufs.split_at_mut(1);
            let (buf, prev) = if cur == 0 {
                (&mut a[0], &b[0])
            } else {
                (&mut b[0], &a[0])
            };
            // a slot index is at most n + 3 + 7 * NARROW_GAP < stride
            #[cfg(target_arch = "x86_64")]
            let (len, hits) = if COMPRESS && hot != u32::MAX {
                // SAFETY: COMPRESS is true only in count_i32_narrow_avx512, which runs on a CPU
                // with AVX-512F.
                unsafe { i32_slots_compress(xs, buf, n, hot) }
            } else {
                let hits = i32_slots::<NARROW_GAP>(xs, &mut buf[..xs.len()], n, hot, &offs);
                (xs.len(), hits)
            };
            #[cfg(not(target_arch = "x86_64"))]
            let (len, hits) = (
                xs.len(),
                i32_slots::<NARROW_GAP>(xs, &mut buf[..xs.len()], n, hot, &offs),
            );
            let buf = &buf[..len];
            if hits > 0 {
                let h = hot as usize;
                let t = lo[h] as u32 + hits;
                lo[h] = t as u8;
                hi[h] += t >> 8;
            }
            let pipe = pipelined && hot != u32::MAX;
            if pipe {
                prefetch_slots_narrow(buf, lo);
            }
            add_slots_narrow(&prev[..pending], lo, hi);
            if pipe {
                pending = len;
                cur ^= 1;
            } else {
                add_slots_narrow(buf, lo, hi);
                pending = 0;
            }
        }
    }
    add_slots_narrow(&bufs[cur ^ 1][..pending], lo, hi);
    // the loop counts samples above the range in slot n and below it in slot n + 1
    let n = n as usize;
    lo.swap(n, n + 1);
    hi.swap(n, n + 1);
}

/// int32 samples, integer bins from [`I32_NARROW_MIN_BINS`]: per-worker u8 counters with u32
/// carries, folded into u64 after every chunk. Returns `nbins + 3` slots.
fn run_counts_i32_narrow(samples: &[i32], nbins: usize) -> Vec<u64> {
    let stride = nbins + 3 + NARROW_SPARE;
    let empty = || (Vec::<u64>::new(), Vec::<u8>::new(), Vec::<u32>::new());
    let (counts, _, _) = samples
        .par_chunks(chunk_len(samples.len()))
        .fold(empty, |(mut counts, mut lo, mut hi), chunk| {
            if counts.is_empty() {
                counts = vec![0; stride];
                lo = vec![0; stride];
                hi = vec![0; stride];
            }
            count_i32_narrow(chunk, nbins as u32, &mut lo, &mut hi);
            // a chunk holds fewer than 2^32 samples: the carries fit u32
            for ((c, l), h) in counts.iter_mut().zip(lo.iter_mut()).zip(hi.iter_mut()) {
                *c += ((*h as u64) << 8) | *l as u64;
                *l = 0;
                *h = 0;
            }
            (counts, lo, hi)
        })
        .map(|(counts, _, _)| (counts, Vec::new(), Vec::new()))
        .reduce(empty, |(mut a, _, _), (b, _, _)| {
            if a.is_empty() {
                return (b, Vec::new(), Vec::new());
            }
            if !b.is_empty() {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            }
            (a, Vec::new(), Vec::new())
        });
    let mut counts = if counts.is_empty() {
        vec![0; stride]
    } else {
        counts
    };
    counts.truncate(nbins + 3);
    counts
}

/// Bins below [`PARTITION_MIN_BINS`]: private interleaved counters per worker, merged at the end.
/// Returns `nbins + 3` slots.
fn run_counts<T: Sample, C: Codes<T>>(samples: &[T], nbins: usize, codes: &C) -> Vec<u64> {
    let stride = nbins + 3 + SPARE;
    let int32 = codes.integer_bins().is_some() && same_type::<T, i32>(samples).is_some();
    if int32 && nbins >= I32_NARROW_MIN_BINS {
        let xs = same_type::<T, i32>(samples).expect("int32 samples");
        return run_counts_i32_narrow(xs, nbins);
    }
    let ways = ways_for(
        stride,
        if int32 {
            I32_COUNTER_BYTES
        } else {
            COUNTER_BYTES
        },
    );
    let empty = || (Vec::<u64>::new(), Vec::<u32>::new());
    let (counts, _) = samples
        .par_chunks(chunk_len(samples.len()))
        .fold(empty, |(mut counts, mut scratch), chunk| {
            if counts.is_empty() {
                counts = vec![0; stride];
                scratch = vec![0; stride * ways];
            }
            count_chunk(chunk, codes, &mut scratch, stride, ways);
            // Fold the u32 copies into u64 (a chunk holds fewer than 2^32 samples).
            for sub in scratch.chunks_mut(stride) {
                for (c, s) in counts.iter_mut().zip(sub.iter_mut()) {
                    *c += *s as u64;
                    *s = 0;
                }
            }
            (counts, scratch)
        })
        .map(|(counts, _)| (counts, Vec::new()))
        .reduce(empty, |(mut a, _), (b, _)| {
            if a.is_empty() {
                return (b, Vec::new());
            }
            if !b.is_empty() {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            }
            (a, Vec::new())
        });
    if counts.is_empty() {
        vec![0; stride]
    } else {
        counts
    }
}

/// One worker's share of a partition round: 16-bit offsets per bucket (full 64-byte lines in a
/// region of `cap` lines per bucket, then a spill vector for what does not fit and the last partial
/// line), the extra slots, and the (code, count) pairs of the batches' hot bins.
struct Part {
    /// `nbuckets * cap` lines of STAGE offsets from `base` (the first 64-byte aligned element).
    lines: Vec<u16>,
    base: usize,
    filled: Vec<usize>,
    cap: usize,
    spill: Vec<Vec<u16>>,
    extra: [u64; 3],
    hot: Vec<(u32, u64)>,
}

impl Part {
    /// Appends a full staging line of bucket `b`: to its region while there is room (non-temporal
    /// stores), else to its spill vector.
    #[inline(always)]
    fn push_line(&mut self, b: usize, line: &[u16; STAGE]) {
        let k = self.filled[b];
        if k < self.cap {
            let at = self.base + (b * self.cap + k) * STAGE;
            store_line(&mut self.lines[at..at + STAGE], line);
            self.filled[b] = k + 1;
        } else {
            self.spill[b].extend_from_slice(line);
        }
    }

    /// Counts `hits` samples of `code` apart (runs of one code share an entry).
    fn add_hot(&mut self, code: u32, hits: u64) {
        match self.hot.last_mut() {
            Some((h, n)) if *h == code => *n += hits,
            _ => self.hot.push((code, hits)),
        }
    }

    /// Ends a scatter: orders its non-temporal stores before the buckets are read by other
    /// threads, and appends the buckets' partial staging lines (the first rows of `stage`, `fill`
    /// entries each) to their spill vectors.
    fn close(&mut self, stage: &[[u16; STAGE]], fill: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a store fence has no preconditions.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
        for (b, (line, &f)) in stage.iter().zip(fill).take(self.filled.len()).enumerate() {
            self.spill[b].extend_from_slice(&line[..f as usize]);
        }
    }

    /// The offsets of bucket `b`, as two slices.
    fn lists(&self, b: usize) -> [&[u16]; 2] {
        let start = self.base + b * self.cap * STAGE;
        [
            &self.lines[start..start + self.filled[b] * STAGE],
            &self.spill[b],
        ]
    }
}

/// Entries of one bucket's staging line (64 bytes of u16 offsets).
const STAGE: usize = 32;

/// Writes a full staging line to `dst` with non-temporal stores (no read of the line from memory
/// before it is overwritten, no eviction of the cache-resident staging and counters).
#[inline(always)]
fn store_line(dst: &mut [u16], src: &[u16; STAGE]) {
    let dst: &mut [u16; STAGE] = dst.try_into().expect("one line");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let d = dst.as_mut_ptr().cast::<__m128i>();
        let s = src.as_ptr().cast::<__m128i>();
        assert_eq!(d as usize % 64, 0);
        for k in 0..4 {
            // SAFETY: `dst` is 64 bytes long and 64-byte aligned (asserted; a line from
            // `Part::base` on), so each of the four 16-byte stores is aligned and in bounds; `src`
            // is 64 bytes long (unaligned loads).
            unsafe { _mm_stream_si128(d.add(k), _mm_loadu_si128(s.add(k))) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *dst = *src;
    }
}

/// Scatters the codes of `chunk` into `part`: each code is first written to a 64-byte staging line of
/// its bucket (software write combining; the lines of all buckets stay in L1) and a full line is
/// written to the bucket's region at once. Codes outside the bins and a batch's hot code go to
/// staging rows after the buckets that are only counted.
fn scatter<T: Sample, C: Codes<T>>(chunk: &[T], codes: &C, nbins: usize, part: &mut Part) {
    let nbuckets = part.filled.len();
    // rows: buckets, then below / above / NaN, then eight rows that the hot code's samples go to
    // in rotation (their entries are dropped: the hot samples are counted separately)
    let hot_row = nbuckets + 3;
    let mut stage = vec![[0u16; STAGE]; nbuckets + 3 + 8];
    let mut fill = vec![0u8; nbuckets + 3 + 8];
    let mut counted = [0u64; 3];
    let mut buf = [0u32; BATCH];
    for xs in chunk.chunks(BATCH) {
        prefetch_ahead(xs);
        let buf = &mut buf[..xs.len()];
        codes.codes(xs, buf);
        let hot = hot_code_of(buf);
        let hits = buf.iter().filter(|&&c| c == hot).count() as u64;
        for (i, &c) in buf.iter().enumerate() {
            let c = c as usize;
            let row = if c < nbins {
                c >> BUCKET_BINS_LOG2
            } else {
                nbuckets + (c - nbins)
            };
            let row = if c as u32 == hot {
                hot_row + (i & 7)
            } else {
                row
            };
            let f = fill[row] as usize;
            stage[row][f] = c as u16;
            if f + 1 == STAGE {
                if row < nbuckets {
                    part.push_line(row, &stage[row]);
                } else if row < hot_row {
                    counted[row - nbuckets] += STAGE as u64;
                }
                fill[row] = 0;
            } else {
                fill[row] = f as u8 + 1;
            }
        }
        if hits > 0 {
            part.add_hot(hot, hits);
        }
    }
    part.close(&stage, &fill);
    for (c, &f) in counted.iter_mut().zip(&fill[nbuckets..nbuckets + 3]) {
        *c += f as u64;
    }
    for (e, c) in part.extra.iter_mut().zip(counted) {
        *e += c;
    }
}

/// The hot code of a batch of codes (see [`hot_code`]).
#[inline(always)]
fn hot_code_of(codes: &[u32]) -> u32 {
    let step = (codes.len() / HOT_PROBES).max(1);
    let (mut cand, mut votes) = (u32::MAX, 0usize);
    for &c in codes.iter().step_by(step) {
        if votes == 0 {
            cand = c;
            votes = 1;
        } else if c == cand {
            votes += 1;
        } else {
            votes -= 1;
        }
    }
    let hits = codes.iter().step_by(step).filter(|&&c| c == cand).count();
    if hits >= HOT_MIN {
        cand
    } else {
        u32::MAX
    }
}

/// Bins from [`PARTITION_MIN_BINS`] on: scatter into buckets of 2^16 bins, then count each bucket in
/// a cache-resident scratch and add it into its own slice of the result. Returns `nbins + 3` slots.
fn run_partitioned<T: Sample, C: Codes<T>>(samples: &[T], nbins: usize, codes: &C) -> Vec<u64> {
    partitioned_rounds(
        samples,
        nbins,
        BUCKET_BINS,
        PARTITION_ROUND,
        |chunk, part| scatter(chunk, codes, nbins, part),
        || vec![0u32; 4 * BUCKET_BINS],
        |lists, out, scratch| count_bucket(lists, scratch, out),
    )
}

/// The rounds of a partitioned count, shared by [`run_partitioned`] and the int32 path: `round`
/// samples at a time, the workers' chunks are scattered into [`Part`]s of `nbins / bucket_bins`
/// buckets by `scatter`, then each bucket is counted by `count` (with a worker's scratch from
/// `scratch`) into its slice of the result, and the parts' extra slots and hot counts are added.
/// Returns `nbins + 3` slots.
fn partitioned_rounds<T: Sync, S: Send>(
    samples: &[T],
    nbins: usize,
    bucket_bins: usize,
    round: usize,
    scatter: impl Fn(&[T], &mut Part) + Sync,
    scratch: impl Fn() -> S + Sync + Send,
    count: impl Fn(&[&[u16]], &mut [u64], &mut S) + Sync,
) -> Vec<u64> {
    let nbuckets = nbins.div_ceil(bucket_bins);
    let mut counts = crate::cpu::huge_pages::zeroed::<u64>(nbins + 3);
    let workers = rayon::current_num_threads().max(1);
    let mut parts: Vec<Part> = Vec::new();
    for round in samples.chunks(round) {
        let part_len = round.len().div_ceil(workers * 2).max(MIN_CHUNK);
        let nparts = round.len().div_ceil(part_len);
        let part_len_max = part_len.min(round.len());
        // a region holds its bucket's expected share plus 1/8 and two lines
        let cap = (part_len_max / nbuckets + part_len_max / (8 * nbuckets)).div_ceil(STAGE) + 2;
        parts.resize_with(nparts, || Part {
            lines: Vec::new(),
            base: 0,
            filled: vec![0; nbuckets],
            cap,
            spill: vec![Vec::new(); nbuckets],
            extra: [0; 3],
            hot: Vec::new(),
        });
        parts
            .par_iter_mut()
            .zip(round.par_chunks(part_len))
            .for_each(|(part, chunk)| {
                if part.lines.is_empty() || part.cap != cap {
                    // zeroed by the allocator (pages mapped on first touch, no writing pass)
                    part.lines = crate::cpu::huge_pages::zeroed((nbuckets * cap + 1) * STAGE);
                    part.base = part.lines.as_ptr().align_offset(64);
                    part.cap = cap;
                }
                part.filled.fill(0);
                part.spill.iter_mut().for_each(Vec::clear);
                scatter(chunk, part);
            });
        let active = &parts[..nparts];
        counts[..nbins]
            .par_chunks_mut(bucket_bins)
            .enumerate()
            .for_each_init(&scratch, |s, (b, out)| {
                let lists: Vec<&[u16]> = active.iter().flat_map(|p| p.lists(b)).collect();
                count_split(&lists, out, s, &scratch, &count)
            });
        for p in parts[..nparts].iter_mut() {
            for (k, e) in p.extra.iter().enumerate() {
                counts[nbins + k] += e;
            }
            p.extra = [0; 3];
            for &(h, n) in &p.hot {
                counts[h as usize] += n;
            }
            p.hot.clear();
        }
    }
    counts
}

/// `count` on one bucket's lists, except that a bucket holding a large share of the samples
/// (skewed data), which would leave the other workers idle, has its lists halved and the halves
/// counted in parallel (the second with a new scratch).
fn count_split<S: Send>(
    lists: &[&[u16]],
    out: &mut [u64],
    s: &mut S,
    scratch: &(impl Fn() -> S + Sync),
    count: &(impl Fn(&[&[u16]], &mut [u64], &mut S) + Sync),
) {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    if total <= SPLIT_BUCKET {
        return count(lists, out, s);
    }
    let (left, right): (Vec<&[u16]>, Vec<&[u16]>) =
        lists.iter().map(|l| l.split_at(l.len() / 2)).unzip();
    let mut right_out = vec![0u64; out.len()];
    rayon::join(
        || count_split(&left, out, s, scratch, count),
        || count_split(&right, &mut right_out, &mut scratch(), scratch, count),
    );
    out.iter_mut().zip(&right_out).for_each(|(o, r)| *o += r);
}

/// Counts one bucket's offsets (from every part) into `scratch` and adds them into `out`.
fn count_bucket(lists: &[&[u16]], scratch: &mut [u32], out: &mut [u64]) {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    // Many entries for one bucket means skewed data: interleave four copies.
    let ways = if total > 4 * BUCKET_BINS { 4 } else { 1 };
    let (s0, rest) = scratch.split_at_mut(BUCKET_BINS);
    let (s1, rest) = rest.split_at_mut(BUCKET_BINS);
    let (s2, s3) = rest.split_at_mut(BUCKET_BINS);
    for &list in lists {
        if ways == 4 {
            let mut quads = list.chunks_exact(4);
            for q in &mut quads {
                s0[q[0] as usize] += 1;
                s1[q[1] as usize] += 1;
                s2[q[2] as usize] += 1;
                s3[q[3] as usize] += 1;
            }
            for &c in quads.remainder() {
                s0[c as usize] += 1;
            }
        } else {
            for &c in list {
                s0[c as usize] += 1;
            }
        }
    }
    let len = out.len();
    if ways == 4 {
        for (k, o) in out.iter_mut().enumerate() {
            *o += (s0[k] as u64 + s1[k] as u64) + (s2[k] as u64 + s3[k] as u64);
        }
        s1[..len].fill(0);
        s2[..len].fill(0);
        s3[..len].fill(0);
    } else {
        for (o, s) in out.iter_mut().zip(s0.iter()) {
            *o += *s as u64;
        }
    }
    s0[..len].fill(0);
}

/// Weighted sums, deterministic: fixed blocks summed in sample order, added in block order.
fn run_weighted<T: Sample, C: Codes<T>>(
    samples: &[T],
    weights: Weights<'_>,
    nbins: usize,
    clamp: bool,
    codes: &C,
) -> CpuResult {
    // Blocks are never shorter than the bins they fill (keeps the merge cost below the count cost).
    let block = WEIGHTED_BLOCK * nbins.div_ceil(WEIGHTED_BLOCK).max(1);
    let workers = rayon::current_num_threads().max(1);
    // How many blocks are summed at once; it changes the memory used, never the result.
    let group = 2 * workers;
    let mut sums = vec![0.0f64; nbins];
    let mut tallies = Tallies::default();
    for (g, group_samples) in samples.chunks(block * group).enumerate() {
        let base = g * block * group;
        let parts: Vec<(Vec<f64>, Tallies)> = group_samples
            .par_chunks(block)
            .enumerate()
            .map(|(k, chunk)| {
                let start = base + k * block;
                let mut s = vec![0.0f64; nbins];
                let mut t = Tallies::default();
                for (j, &x) in chunk.iter().enumerate() {
                    let c = codes.code(x) as usize;
                    let bin = if c < nbins {
                        c
                    } else if c == nbins {
                        t.below += 1;
                        if !clamp {
                            continue;
                        }
                        0
                    } else if c == nbins + 1 {
                        t.above += 1;
                        if !clamp {
                            continue;
                        }
                        nbins - 1
                    } else {
                        t.nan += 1;
                        continue;
                    };
                    s[bin] += weights.get(start + j);
                }
                (s, t)
            })
            .collect();
        // Block order, for every bin: the same additions whatever the thread count.
        sums.par_chunks_mut(1 << 14)
            .enumerate()
            .for_each(|(j, out)| {
                let lo = j << 14;
                let len = out.len();
                for (p, _) in &parts {
                    for (o, v) in out.iter_mut().zip(&p[lo..lo + len]) {
                        *o += v;
                    }
                }
            });
        for (_, t) in &parts {
            tallies.add(t);
        }
    }
    CpuResult {
        counts: Counts::Weighted(sums),
        tallies,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bins::BinSpec;
    use crate::sample::Samples;

    /// The specialised code loops agree with `Binning::locate` on awkward values.
    #[test]
    fn codes_agree_with_locate() {
        let xs: Vec<f32> = vec![
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            -0.0,
            0.0,
            0.1,
            0.3,
            f32::from_bits(0.3f32.to_bits().wrapping_add(1)),
            1.0,
            9.99,
            10.0,
        ];
        for spec in [
            BinSpec::Uniform {
                nbins: 7,
                range: Some((0.1, 0.3)),
            },
            BinSpec::Uniform {
                nbins: 3,
                range: Some((-0.0, 10.0)),
            },
            BinSpec::Edges(vec![-1.0, 0.0, 0.3, 10.0]),
        ] {
            let b = Binning::resolve(&spec, Samples::F32(&[0.0, 1.0])).unwrap();
            for &x in &xs {
                let n = b.nbins() as u32;
                let code = match &b {
                    Binning::UniformF32(u) => Codes::<f32>::code(&F32Codes::new(u), x),
                    Binning::Edges(e) => Codes::<f32>::code(&EdgeCodes { edges: e }, x),
                    _ => unreachable!(),
                };
                let expected = match b.locate(x) {
                    Slot::Bin(i) => i as u32,
                    Slot::Below => n,
                    Slot::Above => n + 1,
                    Slot::Nan => n + 2,
                };
                assert_eq!(code, expected, "{spec:?} x={x}");
            }
        }
    }

    /// Float32 bins from 0 of a power-of-two width take the exact code loop (no estimate, no
    /// correction): on every edge, one and two ulps either side, specials and random values, both
    /// the scalar code and the vector loop agree with numpy's rule (`UniformF32::locate`); ranges
    /// just off the rule keep numpy's loop and agree too.
    #[test]
    fn exact_power_of_two_bins_agree_with_locate() {
        use rand::{Rng, SeedableRng};
        let mut r = rand::rngs::StdRng::seed_from_u64(7);
        for (nbins, hi, exact) in [
            (256usize, 256.0f64, true),
            (4096, 1024.0, true),
            (3, 3.0, true),
            (1 << 16, (1u64 << 17) as f64, true),
            (1000, 1000.0 * 0.125, true),
            (256, 255.0, false),
            (100, 300.0, false),
        ] {
            let spec = BinSpec::Uniform {
                nbins,
                range: Some((0.0, hi)),
            };
            let b = Binning::resolve(&spec, Samples::F32(&[0.0])).unwrap();
            let Binning::UniformF32(u) = &b else {
                unreachable!()
            };
            let codes = F32Codes::new(u);
            assert_eq!(codes.exact.is_some(), exact, "{nbins} bins over [0, {hi}]");
            let mut xs: Vec<f32> = vec![f32::NAN, f32::INFINITY, -f32::INFINITY, -0.0, hi as f32];
            for &e in u.edges.iter().step_by((nbins / 2048).max(1)) {
                for d in 1..=2u32 {
                    xs.push(e);
                    xs.push(f32::from_bits(e.to_bits() + d));
                    xs.push(if e == 0.0 {
                        -f32::from_bits(d)
                    } else {
                        f32::from_bits(e.to_bits() - d)
                    });
                }
            }
            xs.extend((0..5000).map(|_| r.gen_range(-0.1 * hi as f32..1.1 * hi as f32)));
            let n = nbins as u32;
            let expected: Vec<u32> = xs
                .iter()
                .map(|&x| match u.locate(x) {
                    Slot::Bin(i) => i as u32,
                    Slot::Below => n,
                    Slot::Above => n + 1,
                    Slot::Nan => n + 2,
                })
                .collect();
            let scalar: Vec<u32> = xs.iter().map(|&x| Codes::<f32>::code(&codes, x)).collect();
            assert_eq!(scalar, expected, "scalar, {nbins} bins over [0, {hi}]");
            for chunk in 0..xs.len().div_ceil(BATCH) {
                let part = &xs[chunk * BATCH..((chunk + 1) * BATCH).min(xs.len())];
                let mut out = vec![0u32; part.len()];
                Codes::<f32>::codes(&codes, part, &mut out);
                assert_eq!(
                    out,
                    expected[chunk * BATCH..chunk * BATCH + part.len()],
                    "vector loop, {nbins} bins over [0, {hi}]"
                );
            }
        }
    }
}

#[cfg(test)]
mod i32_tests {
    use super::*;

    /// The int32 loop (hot-bin redirect, interleaved copies, below/above split) counts like a plain
    /// loop, including runs of one out-of-range value.
    #[test]
    fn int32_loop_agrees_with_plain_counts() {
        let mut s = 0x2545f4914f6cdd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        // 300_000 bins: the pipelined (counter-prefetching) loop; 2_000_000: the narrow one's
        for &n in &[1usize, 5, 256, 40_000, 300_000, 2_000_000] {
            for hot in [None, Some(3i32), Some(-4), Some(n as i32 + 2)] {
                let xs: Vec<i32> = (0..50_001)
                    .map(|_| {
                        let r = next();
                        match hot {
                            Some(h) if r % 8 != 0 => h,
                            _ => (r >> 33) as i32 % (n as i32 + 20) - 10,
                        }
                    })
                    .collect();
                let mut want = vec![0u64; n + 3];
                for &x in &xs {
                    let c = if x < 0 {
                        n
                    } else if x as usize >= n {
                        n + 1
                    } else {
                        x as usize
                    };
                    want[c] += 1;
                }
                let stride = n + 3 + SPARE;
                let narrow = n + 3 + NARROW_SPARE;
                for ways in [1, 2, 4] {
                    let mut scratch = vec![0u32; stride * ways];
                    count_i32(&xs, n as u32, &mut scratch, stride, ways);
                    let mut got = vec![0u64; n + 3];
                    for w in 0..ways {
                        for (g, &c) in got.iter_mut().zip(&scratch[w * stride..]) {
                            *g += c as u64;
                        }
                    }
                    assert_eq!(got, want, "n={n} hot={hot:?} ways={ways}");
                }
                // u8 counters with carries (300_000 bins: the pipelined loop here too)
                let (mut lo, mut hi) = (vec![0u8; narrow], vec![0u32; narrow]);
                count_i32_narrow(&xs, n as u32, &mut lo, &mut hi);
                let got: Vec<u64> = (0..n + 3)
                    .map(|k| ((hi[k] as u64) << 8) | lo[k] as u64)
                    .collect();
                assert_eq!(got, want, "n={n} hot={hot:?} narrow");
                // the whole engine (the narrow path from I32_NARROW_MIN_BINS bins on)
                let r = histogram(
                    &xs,
                    None,
                    &Binning::Integer { nbins: n },
                    OutOfRange::Ignore,
                );
                let tallies = Tallies {
                    below: want[n],
                    above: want[n + 1],
                    nan: 0,
                };
                assert_eq!(r.tallies, tallies, "n={n} hot={hot:?} engine");
                assert_eq!(r.counts, Counts::Unweighted(want[..n].to_vec()), "n={n}");
            }
        }
    }
}

#[cfg(test)]
mod simd_tests {
    use super::*;

    /// The AVX2 and AVX-512 versions of the uniform code loops give the same codes as the plain one
    /// (the conformance tests only reach the version the test machine selects).
    #[test]
    fn vector_versions_agree() {
        let mut s = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for &(lo, hi, n) in &[
            (0.1f64, 0.3f64, 7usize),
            (-5.0, 5.0, 256),
            (1.0, 1.0 + 2f64.powi(-5), 100_000),
            (0.0, 1e6, 3),
        ] {
            let edges64 = crate::bins::linspace_f64(lo, hi, n + 1);
            let edges32: Vec<f32> = edges64.iter().map(|&e| e as f32).collect();
            let mut xs64: Vec<f64> = (0..BATCH)
                .map(|i| {
                    let r = next();
                    match i % 5 {
                        0 => edges64[(r as usize) % (n + 1)],
                        1 => f64::from_bits(
                            edges64[(r as usize) % (n + 1)].to_bits().wrapping_add(1),
                        ),
                        2 => f64::from_bits(
                            edges64[(r as usize) % (n + 1)].to_bits().wrapping_sub(1),
                        ),
                        _ => {
                            lo - (hi - lo) * 0.1
                                + (hi - lo) * 1.2 * ((r >> 11) as f64 / (1u64 << 53) as f64)
                        }
                    }
                })
                .collect();
            xs64[3] = f64::NAN;
            xs64[8] = f64::INFINITY;
            xs64[13] = f64::NEG_INFINITY;
            let xs32: Vec<f32> = xs64.iter().map(|&x| x as f32).collect();
            let p = EstimateParams::new(n, hi - lo);
            let (f, l) = (lo as f32, hi as f32);
            let mut want = vec![[0u32; BATCH]; 6];
            est_f32_wide(&xs32, &mut want[0], &edges32, f, l, p);
            est_f32_narrow(&xs32, &mut want[1], &edges32, f, l, p);
            est_f64(&xs64, &mut want[2], &edges64, lo, hi, p);
            est_f32_wide_mul(&xs32, &mut want[3], &edges32, f, l, p);
            est_f32_narrow_mul(&xs32, &mut want[4], &edges32, f, l, p);
            est_f64_mul(&xs64, &mut want[5], &edges64, lo, hi, p);
            #[cfg(target_arch = "x86_64")]
            {
                let mut got = vec![[0u32; BATCH]; 6];
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is present.
                    unsafe {
                        est_f32_wide_avx2(&xs32, &mut got[0], &edges32, f, l, p);
                        est_f32_narrow_avx2(&xs32, &mut got[1], &edges32, f, l, p);
                        est_f64_avx2(&xs64, &mut got[2], &edges64, lo, hi, p);
                        est_f32_wide_mul_avx2(&xs32, &mut got[3], &edges32, f, l, p);
                        est_f32_narrow_mul_avx2(&xs32, &mut got[4], &edges32, f, l, p);
                        est_f64_mul_avx2(&xs64, &mut got[5], &edges64, lo, hi, p);
                    }
                    assert_eq!(got, want, "avx2 {lo} {hi} {n}");
                }
                if std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
                    && std::is_x86_feature_detected!("avx512dq")
                {
                    // SAFETY: the AVX-512 features are present.
                    unsafe {
                        est_f32_wide_avx512(&xs32, &mut got[0], &edges32, f, l, p);
                        est_f32_narrow_avx512(&xs32, &mut got[1], &edges32, f, l, p);
                        est_f64_avx512(&xs64, &mut got[2], &edges64, lo, hi, p);
                        est_f32_wide_mul_avx512(&xs32, &mut got[3], &edges32, f, l, p);
                        est_f32_narrow_mul_avx512(&xs32, &mut got[4], &edges32, f, l, p);
                        est_f64_mul_avx512(&xs64, &mut got[5], &edges64, lo, hi, p);
                    }
                    assert_eq!(got, want, "avx512 {lo} {hi} {n}");
                }
            }
            // and the plain version agrees with the scalar rule
            let u = UniformF64 {
                nbins: n,
                first: lo,
                last: hi,
                denom: hi - lo,
                edges: edges64.clone(),
            };
            let fc = F64Codes::new(&u);
            for (k, &x) in xs64.iter().enumerate() {
                assert_eq!(want[2][k], Codes::<f64>::code(&fc, x), "x={x}");
            }
        }
    }
}

/// numpy's correction of a bin estimate against the real edges `e` (`n + 1` of them), branch-free:
/// the estimate is clamped into range, moved down if `x` lies below its lower edge, then up if `x`
/// reaches the next edge (the last bin is closed). `bins.rs` has the reference form.
#[inline(always)]
fn correct<P: PartialOrd + Copy>(estimate: i64, x: P, e: &[P]) -> u32 {
    let n = e.len() - 1;
    let mut i = (estimate.max(0) as usize).min(n - 1);
    i -= (i > 0 && x < e[i]) as usize;
    i += (i != n - 1 && x >= e[i + 1]) as usize;
    i as u32
}

#[cfg(test)]
mod fast_estimate_tests {
    use super::*;
    use crate::bins::BinSpec;
    use crate::sample::Samples;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn up32(x: f32, k: i32) -> f32 {
        // the k-th float32 after (k > 0) or before (k < 0) x, through zero
        let mut y = x;
        for _ in 0..k.unsigned_abs() {
            y = if k > 0 { y.next_up() } else { y.next_down() };
        }
        y
    }

    fn up64(x: f64, k: i32) -> f64 {
        let mut y = x;
        for _ in 0..k.unsigned_abs() {
            y = if k > 0 { y.next_up() } else { y.next_down() };
        }
        y
    }

    /// Every edge (up to `max_edges` of them, else a random choice) and the values 1 and 2 ulps
    /// either side, random values over the range and a little beyond, NaN and the infinities.
    fn inputs<F: Copy>(
        edges: &[F],
        rng: &mut Rng,
        max_edges: usize,
        random: usize,
        step: impl Fn(F, i32) -> F,
        lerp: impl Fn(f64) -> F,
        special: [F; 3],
    ) -> Vec<F> {
        let mut xs = Vec::new();
        let picks: Vec<usize> = if edges.len() <= max_edges {
            (0..edges.len()).collect()
        } else {
            (0..max_edges)
                .map(|_| rng.next() as usize % edges.len())
                .chain([0, edges.len() - 1])
                .collect()
        };
        for i in picks {
            for k in -2..=2 {
                xs.push(step(edges[i], k));
            }
        }
        for _ in 0..random {
            xs.push(lerp(rng.unit() * 1.1 - 0.05));
        }
        xs.extend(special);
        xs
    }

    /// Codes of `xs` through the scalar rule and the batched (vectorised) loops.
    fn codes_of<T: Sample, C: Codes<T>>(c: &C, xs: &[T]) -> (Vec<u32>, Vec<u32>) {
        let scalar = xs.iter().map(|&x| c.code(x)).collect();
        let mut batched = vec![0u32; xs.len()];
        for (x, o) in xs.chunks(BATCH).zip(batched.chunks_mut(BATCH)) {
            c.codes(x, o);
        }
        (scalar, batched)
    }

    fn slot_code(s: Slot, n: usize) -> u32 {
        match s {
            Slot::Bin(i) => i as u32,
            Slot::Below => n as u32,
            Slot::Above => n as u32 + 1,
            Slot::Nan => n as u32 + 2,
        }
    }

    /// Compares the exact (numpy's division) and the fast (multiply) estimate on `xs`; returns
    /// whether the fast estimate is selected for `b` and the number of samples whose bin it would
    /// change if forced.
    fn compare<T: Sample + std::fmt::Debug>(b: &Binning, xs: &[T], what: &str) -> (bool, usize) {
        let n = b.nbins();
        let want: Vec<u32> = xs.iter().map(|&x| slot_code(b.locate(x), n)).collect();
        let (selected, exact, fast) = match b {
            Binning::UniformF32(u) => {
                let mut c = F32Codes::new(u);
                let selected = c.fast;
                c.fast = false;
                let exact = codes_of(&c, xs);
                c.fast = true;
                (selected, exact, codes_of(&c, xs))
            }
            Binning::UniformF64(u) => {
                let mut c = F64Codes::new(u);
                let selected = c.fast;
                c.fast = false;
                let exact = codes_of(&c, xs);
                c.fast = true;
                (selected, exact, codes_of(&c, xs))
            }
            _ => unreachable!(),
        };
        // the exact path is numpy's rule (both loops)
        assert_eq!(exact.0, want, "{what}: exact scalar");
        assert_eq!(exact.1, want, "{what}: exact batched");
        let bad = (0..xs.len())
            .filter(|&k| fast.0[k] != want[k] || fast.1[k] != want[k])
            .count();
        if selected {
            // where the multiply is used, it changes nothing
            for k in 0..xs.len() {
                assert_eq!(fast.0[k], want[k], "{what}: fast scalar, x = {:?}", xs[k]);
                assert_eq!(fast.1[k], want[k], "{what}: fast batched, x = {:?}", xs[k]);
            }
        }
        (selected, bad)
    }

    const RANGES: &[(f64, f64)] = &[
        (0.1, 0.7),
        (-1e6, 1e6 + 3.0),
        (0.0, 256.0),
        (0.0, 131072.0),
        (0.0, 1048576.0),
        (-5.0, 5.0),
        (-3.3, 1e-3),
        (1.0, 1.0 + 1.0 / 32.0),
        (-1.0, -0.999),
        (1e-30, 3e-30),
        (0.0, 1e-40),
        (1e30, 3.5e30),
        (-7.25e5, 123.456),
        (16777000.0, 16777300.0),
        (0.0, 1e-310),
        (-1e-310, 1e-300),
        (-1e308, 1.7e308),
        (-3e38, 3.3e38),
    ];
    const NBINS: &[usize] = &[
        1,
        2,
        3,
        7,
        10,
        64,
        100,
        255,
        256,
        1000,
        4096,
        10007,
        32768,
        131072,
        1 << 20,
    ];

    /// The fast (multiply) and exact (division) estimates give the same bins wherever the fast one
    /// is selected: float32 data with the range from the caller (float64 divisor) and from the data
    /// (all float32), on every edge and 1 and 2 ulps either side, and random values.
    #[test]
    fn fast_and_exact_estimates_agree_f32() {
        let mut rng = Rng(0x853c49e6748fea9b);
        let (mut selected, mut cases) = (0, 0);
        for &(lo, hi) in RANGES {
            for &n in NBINS {
                let data = [lo as f32, hi as f32];
                for range in [Some((lo, hi)), None] {
                    let spec = BinSpec::Uniform { nbins: n, range };
                    let Ok(b) = Binning::resolve(&spec, Samples::F32(&data)) else {
                        continue; // more bins than float32 can separate
                    };
                    let edges: Vec<f32> = match &b {
                        Binning::UniformF32(u) => u.edges.clone(),
                        _ => unreachable!(),
                    };
                    let (l, h) = (edges[0] as f64, edges[n] as f64);
                    let xs = inputs(
                        &edges,
                        &mut rng,
                        40_000,
                        4000,
                        up32,
                        |t| (l + (h - l) * t) as f32,
                        [f32::NAN, f32::INFINITY, f32::NEG_INFINITY],
                    );
                    let what = format!("f32 [{lo:e}, {hi:e}] {n} bins, range {range:?}");
                    let (sel, bad) = compare(&b, &xs, &what);
                    cases += 1;
                    selected += sel as usize;
                    if !sel && bad > 0 {
                        eprintln!("{what}: (exact path kept) forced multiply would move {bad}");
                    }
                }
            }
        }
        assert!(selected > cases / 2, "{selected} of {cases}");
    }

    /// The same for float64 data (range from the caller and from the data) and for integer data
    /// whose divisor is the exact span (not `hi - lo`).
    #[test]
    fn fast_and_exact_estimates_agree_f64() {
        let mut rng = Rng(0xda3e39cb94b95bdb);
        let (mut selected, mut cases) = (0, 0);
        for &(lo, hi) in RANGES {
            for &n in NBINS {
                let data = [lo, hi];
                for range in [Some((lo, hi)), None] {
                    let spec = BinSpec::Uniform { nbins: n, range };
                    let Ok(b) = Binning::resolve(&spec, Samples::F64(&data)) else {
                        continue;
                    };
                    let edges = b.edges();
                    let xs = inputs(
                        &edges,
                        &mut rng,
                        40_000,
                        4000,
                        up64,
                        |t| lo + (hi - lo) * t,
                        [f64::NAN, f64::INFINITY, f64::NEG_INFINITY],
                    );
                    let what = format!("f64 [{lo:e}, {hi:e}] {n} bins, range {range:?}");
                    let (sel, bad) = compare(&b, &xs, &what);
                    cases += 1;
                    selected += sel as usize;
                    if !sel && bad > 0 {
                        eprintln!("{what}: (exact path kept) forced multiply would move {bad}");
                    }
                }
            }
        }
        assert!(selected > cases / 2, "{selected} of {cases}");
        // int64 data near 2^62 and 2^53: the ends are rounded to float64, the divisor is the exact
        // span rounded once
        for &(lo, hi) in &[
            (-(1i64 << 62) + 1, (1i64 << 62) - 3),
            ((1i64 << 53) + 1, (1i64 << 53) + 1000),
            (-(1i64 << 53) - 3, 7),
            (-5, 1_000_001),
        ] {
            for &n in &[1usize, 3, 10, 256, 999, 4096, 65536] {
                let mut xs: Vec<i64> = (0..20_000)
                    .map(|_| lo.wrapping_add((rng.next() % (hi.abs_diff(lo) + 1)) as i64))
                    .collect();
                xs.extend([lo, hi, lo + 1, hi - 1]);
                let spec = BinSpec::Uniform {
                    nbins: n,
                    range: None,
                };
                let Ok(b) = Binning::resolve(&spec, Samples::I64(&xs)) else {
                    continue;
                };
                // integers converted to float64 on and around every edge
                let edges = b.edges();
                let picks = inputs(&edges, &mut rng, 40_000, 0, up64, |_| 0.0, [0.0; 3]);
                xs.extend(picks.iter().map(|&e| e as i64));
                compare(&b, &xs, &format!("i64 [{lo}, {hi}] {n} bins"));
            }
        }
    }

    /// Random ranges whose bins are just wide enough for the multiply estimate (8 to 12 ulps for
    /// float32 with a float64 divisor, 16 to 24 otherwise), where the error bound is tightest.
    #[test]
    fn fast_and_exact_estimates_agree_near_threshold() {
        let mut rng = Rng(0x6a09e667f3bcc909);
        let mut selected = 0;
        for case in 0..240 {
            let e = (rng.next() % 61) as i32 - 30;
            let sign = if rng.next() % 2 == 0 { 1.0 } else { -1.0 };
            let m = sign * 2f64.powi(e) * (1.0 + rng.unit());
            let n = 1 + (rng.next() % 5000) as usize;
            let wide = case % 3 == 0;
            let f64_data = case % 3 == 2;
            let ulps = if wide { 8.0 } else { 16.0 } * (1.0 + 0.5 * rng.unit());
            let ulp = if f64_data { ulp64(m) } else { ulp32(m as f32) };
            let span = n as f64 * ulps * ulp * 1.001;
            // one end near m, the other `span` away (either direction)
            let (lo, hi) = if rng.next() % 2 == 0 {
                (m, m + span)
            } else {
                (m - span, m)
            };
            let spec = BinSpec::Uniform {
                nbins: n,
                range: wide.then_some((lo, hi)),
            };
            let what = format!("near threshold [{lo:e}, {hi:e}] {n} bins, case {case}");
            let mut r = Rng(rng.next() | 1);
            let (sel, _) = if f64_data {
                let spec = BinSpec::Uniform {
                    nbins: n,
                    range: (case % 2 == 0).then_some((lo, hi)),
                };
                let Ok(b) = Binning::resolve(&spec, Samples::F64(&[lo, hi])) else {
                    continue;
                };
                let edges = b.edges();
                let xs = inputs(
                    &edges,
                    &mut r,
                    1 << 20,
                    2000,
                    up64,
                    |t| lo + (hi - lo) * t,
                    [0.0; 3],
                );
                compare(&b, &xs, &what)
            } else {
                let data = [lo as f32, hi as f32];
                let Ok(b) = Binning::resolve(&spec, Samples::F32(&data)) else {
                    continue;
                };
                let edges: Vec<f32> = b.edges().iter().map(|&e| e as f32).collect();
                let (l, h) = (edges[0] as f64, edges[n] as f64);
                let lerp = |t: f64| (l + (h - l) * t) as f32;
                let xs = inputs(&edges, &mut r, 1 << 20, 2000, up32, lerp, [0.0; 3]);
                compare(&b, &xs, &what)
            };
            selected += sel as usize;
        }
        eprintln!("near threshold: {selected} of 240 cases use the multiply estimate");
        // most of them are at or above the threshold (rounding of the ends moves a few below)
        assert!(selected > 120, "{selected}");
    }

    /// The multiply estimate is chosen where the bins are wide enough, and not elsewhere.
    #[test]
    fn fast_estimate_selection() {
        let f32_fast = |lo: f64, hi: f64, n: usize| {
            let b = Binning::resolve(
                &BinSpec::Uniform {
                    nbins: n,
                    range: Some((lo, hi)),
                },
                Samples::F32(&[]),
            )
            .unwrap();
            match &b {
                Binning::UniformF32(u) => F32Codes::new(u).fast,
                _ => unreachable!(),
            }
        };
        // the benchmark's bins: [0, n) with width 1
        for n in [256, 4096, 32768, 131072, 1 << 20] {
            assert!(f32_fast(0.0, n as f64, n), "{n}");
        }
        // width 1 at 2^21: 4 ulps of float32
        assert!(!f32_fast(0.0, (1 << 21) as f64, 1 << 21));
        // [1, 1 + 2^-5] in 100000 bins: ~2.6 ulps wide
        assert!(!f32_fast(1.0, 1.0 + 1.0 / 32.0, 100_000));
        assert!(f32_fast(0.1, 0.7, 1000));
    }
}
