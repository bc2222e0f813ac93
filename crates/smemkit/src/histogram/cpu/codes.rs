//! Sample to bin code: integer bins, uniform float32 and float64 bins with numpy's estimate and
//! correction, and arbitrary edges; each as a scalar and a batched pass.

use super::*;

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

pub(super) struct IntegerCodes {
    pub(super) n: u64,
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
pub(super) struct F32Codes<'a> {
    pub(super) u: &'a UniformF32,
    pub(super) n: usize,
    pub(super) p: EstimateParams,
    /// The estimate is `(x - first) * (n / denom)` (one multiply) instead of numpy's division:
    /// the same bins (see [`fast_estimate`]).
    pub(super) fast: bool,
    /// The grid where the bin is `floor(x / width) - first / width` exactly, no estimate or
    /// correction needed ([`UniformF32::exact_grid`]).
    pub(super) exact: Option<ExactGrid>,
}

impl<'a> F32Codes<'a> {
    pub(super) fn new(u: &'a UniformF32) -> Self {
        let n = u.nbins;
        let p = EstimateParams::new(n, u.denom);
        let fast = f32_multiply_estimate(u, &p);
        let exact = u.exact_grid();
        F32Codes {
            u,
            n,
            p,
            fast,
            exact,
        }
    }
}

/// The bounds and grid of float32 bins on a power-of-two grid, as the exact code loop reads them.
#[derive(Clone, Copy)]
pub(super) struct ExactBins {
    n: u32,
    first: f32,
    last: f32,
    grid: ExactGrid,
}

/// The codes of float32 bins on a grid of a power-of-two width (see [`UniformF32::exact_grid`]):
/// `floor(x * inv) - first_index` inside `[first, last]`, no edge loads, so the loop vectorises
/// without gathers.
#[inline(always)]
pub(super) fn exact_f32(xs: &[f32], out: &mut [u32], b: ExactBins) {
    let ExactBins {
        n,
        first,
        last,
        grid,
    } = b;
    let top = (n - 1) as f32;
    for (o, &x) in out.iter_mut().zip(xs) {
        let inside = (x >= first) & (x <= last);
        #[allow(clippy::eq_op)]
        let nan = (x != x) as u32;
        let outside = n + (x > last) as u32 + 2 * nan;
        let e = ((x * grid.inv_width).floor() - grid.first_index)
            .max(0.0)
            .min(top);
        // SAFETY: `max` drops NaN, so the value is finite and in [0, n - 1] < 2^24.
        let e = unsafe { e.to_int_unchecked::<i32>() } as u32;
        *o = if inside { e } else { outside };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn exact_f32_avx2(xs: &[f32], out: &mut [u32], b: ExactBins) {
    exact_f32(xs, out, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512dq")]
pub(super) unsafe fn exact_f32_avx512(xs: &[f32], out: &mut [u32], b: ExactBins) {
    exact_f32(xs, out, b)
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
        if let Some(g) = self.exact {
            return (((x * g.inv_width).floor() - g.first_index) as u32).min(n as u32 - 1);
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
        if let Some(grid) = self.exact {
            let b = ExactBins {
                n: self.n as u32,
                first: u.first,
                last: u.last,
                grid,
            };
            run_pass!(exact_f32, exact_f32_avx2, exact_f32_avx512, xs32, out, b);
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
pub(super) fn same_type<T: 'static, U: 'static>(xs: &[T]) -> Option<&[U]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<U>() {
        // SAFETY: T and U are the same type.
        Some(unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<U>(), xs.len()) })
    } else {
        None
    }
}

/// numpy's float64 uniform rule ([`UniformF64::locate`]).
pub(super) struct F64Codes<'a> {
    pub(super) u: &'a UniformF64,
    pub(super) n: usize,
    pub(super) p: EstimateParams,
    /// The estimate is `(x - first) * (n / denom)`: the same bins (see [`fast_estimate`]).
    pub(super) fast: bool,
}

impl<'a> F64Codes<'a> {
    pub(super) fn new(u: &'a UniformF64) -> Self {
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

pub(super) struct EdgeCodes<'a> {
    pub(super) edges: &'a [f64],
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

/// Integer edges beyond 2^53 compared exactly with integer samples (numpy's int64 `bins`).
pub(super) struct IntEdgeCodes<'a> {
    pub(super) edges: &'a [i128],
}

impl<T: Sample> Codes<T> for IntEdgeCodes<'_> {
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let n = self.edges.len() - 1;
        match crate::histogram::bins::int_edges::locate_in_int_edges(self.edges, x.to_i128()) {
            Slot::Bin(i) => i as u32,
            Slot::Below => n as u32,
            Slot::Above => n as u32 + 1,
            Slot::Nan => n as u32 + 2,
        }
    }
}

/// numpy's correction of a bin estimate against the real edges `e` (`n + 1` of them), branch-free:
/// the estimate is clamped into range, moved down if `x` lies below its lower edge, then up if `x`
/// reaches the next edge (the last bin is closed). `bins.rs` has the reference form.
#[inline(always)]
pub(super) fn correct<P: PartialOrd + Copy>(estimate: i64, x: P, e: &[P]) -> u32 {
    let n = e.len() - 1;
    let mut i = (estimate.max(0) as usize).min(n - 1);
    i -= (i > 0 && x < e[i]) as usize;
    i += (i != n - 1 && x >= e[i + 1]) as usize;
    i as u32
}

/// float16 / bfloat16 uniform bins in the samples' own arithmetic ([`UniformHalf::locate`]).
pub(super) struct HalfCodes<'a> {
    pub(super) u: &'a crate::histogram::bins::half::UniformHalf,
}

impl<T: Sample> Codes<T> for HalfCodes<'_> {
    #[inline(always)]
    fn code(&self, x: T) -> u32 {
        let n = self.u.nbins;
        match self.u.locate(x.to_f32()) {
            Slot::Bin(i) => i as u32,
            Slot::Below => n as u32,
            Slot::Above => n as u32 + 1,
            Slot::Nan => n as u32 + 2,
        }
    }
}
