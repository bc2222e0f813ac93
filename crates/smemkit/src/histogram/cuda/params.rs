//! The binning rule as the kernels receive it: a `#[repr(C)]` mirror of `struct BinParams` in
//! `kernels/histogram.cu`, built from a resolved [`Binning`]. Keeping the translation in one place
//! makes the GPU repeat exactly the arithmetic of `bins.rs`.

use crate::histogram::bins::{Binning, OutOfRange};
use crate::sample::SampleType;

/// Field for field the `BinParams` struct of `kernels/histogram.cu` (same order, same types).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelBinParams {
    pub nbins: u64,
    pub first64: f64,
    pub last64: f64,
    pub denom64: f64,
    pub start64: f64,
    pub stop64: f64,
    pub step64: f64,
    pub delta64: f64,
    pub div64: f64,
    pub edges: u64,
    pub first32: f32,
    pub last32: f32,
    pub denom32: f32,
    pub start32: f32,
    pub stop32: f32,
    pub step32: f32,
    pub delta32: f32,
    pub div32: f32,
    pub denom_is_f64: i32,
    pub linspace_in_f32: i32,
    pub step_zero: i32,
    pub clamp: i32,
    pub aggregate: i32,
    pub bins_per_block: u32,
    /// 1: the estimate multiplies by `n / denom` instead of dividing (the CPU engine's proven rule);
    /// 2: float32 bins on a grid of a power-of-two width, no correction (the `uniform32x` kernels,
    /// `UniformF32::exact_grid`).
    pub multiply: i32,
    pub scale32: f32,
    pub scale64: f64,
    /// Device address of numpy's float32 edges (uniform float32 bins with `multiply`), or 0.
    pub edges32: u64,
    /// Device address of the skew verdict (`hist_verdict` in `histogram.cu`), or 0: a gated kernel
    /// runs only where the verdict equals `gate_want`, so that `auto` chooses on the device.
    pub gate: u64,
    pub gate_want: u32,
    /// Device address of the slot of each 16-bit float code (`half_table`), or 0.
    pub lut: u64,
    /// With `multiply == 1`: an estimate whose fractional part lies strictly between these is the
    /// bin with no edge read (`bins::estimate::interior_fraction`); `(0, 0)` turns it off.
    pub interior_lo: f64,
    pub interior_hi: f64,
    /// Mode `uniform32w`: the first edge and factor of its float64 shortcut
    /// (`bins::estimate::interior_fraction_wide`), whose fractions `interior_lo` and `interior_hi` hold.
    pub interior64_first: f64,
    pub interior64_scale: f64,
    /// Mode `uniform64x` (float64 samples, `UniformF64::exact_grid`): `1 / width` and the grid's
    /// first index.
    pub grid64_inv: f64,
    pub grid64_first: f64,
    /// Float32 samples with a caller's range: the float32 factor and fractions of the same
    /// shortcut in float32 arithmetic (`bins::estimate::interior_fraction32`); hi 0 turns it off.
    pub interior32_scale: f32,
    pub interior32_lo: f32,
    pub interior32_hi: f32,
    /// Explicit edges: the table that narrows the search (`crate::search_table`), or none.
    pub table: crate::search_table::KernelSearchTable,
    /// Sliced counts: device address of the flush's 16-bit lanes (`flush_packed_lanes16` in
    /// `kernels/hist_packed.cuh`), or 0 for the flush into the result.
    pub lanes16: u64,
    /// Sliced counts of mode `uniform32w`: 1 where the warps' staging rings follow the hot lanes
    /// in shared memory (`wide_ring_loop` in `kernels/hist_walk.cuh`; [`super::prepared::naming::stage_ring_bytes`]).
    pub stage_ring: u32,
    /// Spill counts: the window's counter width, 8 or 4, or 0 where the kernel chooses it from its
    /// probes (`spill_place` in `kernels/hist_spill.cuh`).
    pub spill_bits: u32,
}

// SAFETY: plain old data with the C layout of the kernel's `BinParams`; passed by value.
unsafe impl cudarc::driver::DeviceRepr for KernelBinParams {}

/// The kernel mode name for a binning of samples of type `t` (part of the kernel's name): 16-bit
/// floats look every binning up in a table (`half_table`), the other types compute it.
pub fn mode_name(binning: &Binning, t: SampleType) -> &'static str {
    if crate::histogram::cuda::half_table::is_half(t) {
        return "lut";
    }
    match binning {
        Binning::Integer { .. } => "integer",
        Binning::UniformF32(u) if u.exact_grid().is_some() => "uniform32x",
        Binning::UniformF32(_)
            if crate::histogram::bins::estimate::interior_fraction_wide(binning).is_some() =>
        {
            "uniform32w"
        }
        Binning::UniformF32(_)
            if crate::histogram::bins::estimate::interior_fraction32(binning).is_some() =>
        {
            "uniform32i"
        }
        Binning::UniformF32(_) => "uniform32",
        Binning::UniformF64(u) if t == SampleType::F64 && u.exact_grid().is_some() => "uniform64x",
        Binning::UniformF64(_) => "uniform64",
        Binning::Edges(_) => "edges",
        Binning::IntEdges(_) => "int_edges",
        Binning::UniformHalf(_) => "uniform_half",
    }
}

/// Builds the kernel parameters; `edges_ptr` is the device copy of explicit edges (0 otherwise).
pub fn kernel_params(
    binning: &Binning,
    policy: OutOfRange,
    aggregate: bool,
    edges_ptr: u64,
) -> KernelBinParams {
    let mut p = KernelBinParams {
        nbins: binning.nbins() as u64,
        clamp: (policy == OutOfRange::Clamp) as i32,
        aggregate: aggregate as i32,
        edges: edges_ptr,
        ..Default::default()
    };
    if let Some((scale64, scale32)) =
        crate::histogram::bins::estimate::multiply_estimate_factors(binning)
    {
        p.multiply = 1;
        p.scale64 = scale64;
        p.scale32 = scale32;
        (p.interior_lo, p.interior_hi) =
            crate::histogram::bins::estimate::interior_fraction(binning);
        if let Some((scale, lo, hi)) =
            crate::histogram::bins::estimate::interior_fraction32(binning)
        {
            (p.interior32_scale, p.interior32_lo, p.interior32_hi) = (scale, lo, hi);
        }
        if let Some((first, scale, lo)) =
            crate::histogram::bins::estimate::interior_fraction_wide(binning)
        {
            (p.interior64_first, p.interior64_scale) = (first, scale);
            p.interior_lo = lo;
            p.interior_hi = crate::histogram::bins::estimate::wide_hi(lo);
        }
    }
    match binning {
        Binning::Integer { .. }
        | Binning::Edges(_)
        | Binning::IntEdges(_)
        | Binning::UniformHalf(_) => {}
        Binning::UniformF64(u) => {
            p.first64 = u.first;
            p.last64 = u.last;
            p.denom64 = u.denom;
            set_linspace64(&mut p, u.first, u.last, u.nbins);
            if let Some(grid) = u.exact_grid() {
                (p.grid64_inv, p.grid64_first) = (grid.inv_width, grid.first_index);
            }
        }
        Binning::UniformF32(u) => {
            p.first32 = u.first;
            p.last32 = u.last;
            p.denom64 = u.denom;
            p.denom32 = u.denom as f32;
            p.denom_is_f64 = u.denom_is_f64 as i32;
            // The edges came from linspace in float32 exactly when numpy divided in float32 too (the
            // automatic range); a caller's range is widened in float64 and rounded.
            p.linspace_in_f32 = (!u.denom_is_f64) as i32;
            if u.denom_is_f64 {
                let (lo, hi) = u.range64;
                set_linspace64(&mut p, lo, hi, u.nbins);
            } else {
                let div = u.nbins as f32;
                p.start32 = u.first;
                p.stop32 = u.last;
                p.delta32 = u.last - u.first;
                p.div32 = div;
                p.step32 = p.delta32 / div;
                p.step_zero = (p.step32 == 0.0) as i32;
            }
            // The kernels take the grid's first index as first32 * scale32 (exact: a power of two).
            if let Some(grid) = u.exact_grid() {
                p.multiply = 2;
                p.scale32 = grid.inv_width;
            }
        }
    }
    p
}

fn set_linspace64(p: &mut KernelBinParams, start: f64, stop: f64, nbins: usize) {
    let div = nbins as f64;
    p.start64 = start;
    p.stop64 = stop;
    p.delta64 = stop - start;
    p.div64 = div;
    p.step64 = p.delta64 / div;
    p.step_zero = (p.step64 == 0.0) as i32;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform32(nbins: usize, lo: f64, hi: f64) -> Binning {
        let spec = crate::bins::BinSpec::Uniform {
            nbins,
            range: Some((lo, hi)),
        };
        Binning::resolve(&spec, crate::sample::Samples::F32(&[1.0])).unwrap()
    }

    #[test]
    fn bins_on_a_power_of_two_grid_skip_the_correction() {
        for (nbins, lo, hi, inv) in [
            (256, 0.0, 256.0, Some(1.0f32)),
            (4, 0.0, 1.0, Some(4.0)),
            (4096, 0.0, 1024.0, Some(4.0)),
            (1 << 20, 0.0, (1 << 21) as f64, Some(0.5)),
            (3, 0.0, 3.0, Some(1.0)),
            (4, 0.0, 6.0, None),
            (10, 0.0, 1.0, None),
            (1000, 0.0, 1000.5, None),
            // Grids that do not start at 0.
            (1 << 17, -4.0, 4.0, Some(16384.0)),
            (1 << 20, -4.0, 4.0, Some(131072.0)),
            (256, -256.0, 0.0, Some(1.0)),
            (4, 0.5, 1.5, Some(4.0)),
            (2, 8.0, 24.0, Some(0.125)),
            // Below 0 with a width above 1: -tiny * inv could round to -0, so numpy's rule stays.
            (256, -1024.0, 1024.0, None),
            // A first edge off the grid, and a width that is not a power of two.
            (4, 0.3, 1.3, None),
            (1000, -4.0, 4.0, None),
        ] {
            let b = uniform32(nbins, lo, hi);
            let p = kernel_params(&b, OutOfRange::Ignore, false, 0);
            let expected = inv.map_or(p.multiply != 2, |i| p.multiply == 2 && p.scale32 == i);
            assert!(expected, "{nbins} bins over [{lo}, {hi}): {p:?}");
            let mode = if inv.is_some() {
                "uniform32x"
            } else if crate::histogram::bins::estimate::interior_fraction_wide(&b).is_some() {
                "uniform32w"
            } else if crate::histogram::bins::estimate::interior_fraction32(&b).is_some() {
                "uniform32i"
            } else {
                "uniform32"
            };
            assert_eq!(
                mode_name(&b, SampleType::F32),
                mode,
                "{nbins} bins over [{lo}, {hi})"
            );
            if inv.is_some() {
                // The kernels' first grid index, first32 * scale32, is an integer.
                let k0 = p.first32 * p.scale32;
                assert_eq!(k0, k0.floor(), "{nbins} bins over [{lo}, {hi})");
            }
        }
        // 1000 bins over [-4, 4]: the float32 shortcut's own kernels; over [0.1, 0.7] (a factor
        // float32 cannot hold) and 100000 bins over [-4, 4] (a float32 margin too wide) the
        // float64 shortcut's, whose margin is the edges' measured rounding.
        assert_eq!(
            mode_name(&uniform32(1000, -4.0, 4.0), SampleType::F32),
            "uniform32i"
        );
        assert_eq!(
            mode_name(&uniform32(1000, 0.1, 0.7), SampleType::F32),
            "uniform32w"
        );
        let wide = uniform32(100_000, -4.0, 4.0);
        assert_eq!(mode_name(&wide, SampleType::F32), "uniform32w");
        let p = kernel_params(&wide, OutOfRange::Ignore, false, 0);
        assert!(p.interior_lo > 0.0 && p.interior_lo < 0.005, "{p:?}");
        assert!(p.interior_hi < 1.0 - p.interior_lo, "{p:?}");
        assert_eq!((p.interior64_first, p.interior64_scale), (-4.0, 12_500.0));
    }

    fn uniform64(t: SampleType, nbins: usize, lo: f64, hi: f64) -> Binning {
        let spec = crate::bins::BinSpec::Uniform {
            nbins,
            range: Some((lo, hi)),
        };
        match t {
            SampleType::F64 => Binning::resolve(&spec, crate::sample::Samples::F64(&[1.0])),
            _ => Binning::resolve(&spec, crate::sample::Samples::I32(&[1])),
        }
        .unwrap()
    }

    #[test]
    fn float64_bins_on_a_power_of_two_grid_take_the_grid_kernels() {
        for (nbins, lo, hi, inv) in [
            (256, 0.0, 256.0, Some(1.0)),
            (1 << 18, -4.0, 4.0, Some(32768.0)),
            (1 << 20, -4.0, 4.0, Some(131072.0)),
            (4, 0.5, 1.5, Some(4.0)),
            (2, 8.0, 24.0, Some(0.125)),
            (1 << 20, 0.0, (1u64 << 21) as f64, Some(0.5)),
            // Below 0 with a width above 1; off the grid; not a power of two.
            (256, -1024.0, 1024.0, None),
            (4, 0.3, 1.3, None),
            (1000, -4.0, 4.0, None),
            (100_000, -4.0, 4.0, None),
        ] {
            let b = uniform64(SampleType::F64, nbins, lo, hi);
            let p = kernel_params(&b, OutOfRange::Ignore, false, 0);
            let what = format!("{nbins} bins over [{lo}, {hi})");
            match inv {
                Some(inv) => {
                    assert_eq!(mode_name(&b, SampleType::F64), "uniform64x", "{what}");
                    assert_eq!(p.grid64_inv, inv, "{what}");
                    assert_eq!(p.grid64_first, lo * inv, "{what}");
                }
                None => assert_eq!(mode_name(&b, SampleType::F64), "uniform64", "{what}"),
            }
            // Integer samples keep numpy's rule (no grid kernels are built for them).
            let ints = uniform64(SampleType::I32, nbins, lo.floor(), hi.ceil());
            assert_eq!(mode_name(&ints, SampleType::I32), "uniform64", "{what}");
        }
    }

    /// The kernels' grid step (`locate_uniform64_exact`), replayed in Rust on every edge and its
    /// neighbours up to 3 ulps, on tiny and signed-zero samples and on random ones, agrees with
    /// numpy's rule (`UniformF64::locate`).
    #[test]
    fn float64_grid_step_is_numpys_rule() {
        use crate::histogram::bins::Slot;
        fn step(x: f64, k: i64) -> f64 {
            let b = x.to_bits() as i64;
            if x == 0.0 {
                return if k >= 0 {
                    f64::from_bits(k as u64)
                } else {
                    -f64::from_bits((-k) as u64)
                };
            }
            f64::from_bits((if x > 0.0 { b + k } else { b - k }) as u64)
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for (nbins, lo, hi) in [
            (1usize << 18, -4.0, 4.0),
            (4096, 0.0, 1024.0),
            (4, 0.5, 1.5),
            (2, 8.0, 24.0),
            (256, -256.0, 0.0),
        ] {
            let Binning::UniformF64(u) = uniform64(SampleType::F64, nbins, lo, hi) else {
                unreachable!()
            };
            let grid = u.exact_grid().expect("a grid");
            let kernel = |x: f64| -> Slot {
                if x.is_nan() {
                    Slot::Nan
                } else if x < u.first {
                    Slot::Below
                } else if x > u.last {
                    Slot::Above
                } else {
                    let est = ((x * grid.inv_width).floor() - grid.first_index) as usize;
                    Slot::Bin(est.min(nbins - 1))
                }
            };
            let mut xs: Vec<f64> = vec![0.0, -0.0, f64::from_bits(1), -f64::from_bits(1), f64::NAN];
            for e in u
                .edges
                .iter()
                .step_by((nbins / 4096).max(1))
                .chain(u.edges.last())
            {
                xs.extend((-3..=3).map(|k| step(*e, k)));
            }
            let span = hi - lo;
            xs.extend((0..100_000).map(|_| lo - 0.1 * span + 1.2 * span * random()));
            for x in xs {
                assert_eq!(
                    kernel(x),
                    u.locate(x),
                    "{nbins} bins over [{lo}, {hi}): x = {x:e}"
                );
            }
        }
    }

    /// `x * m + c` rounded down, as the kernels' `__fma_rd` gives it: the sum from TwoSum on the
    /// product, which is exact here (a power of two times a sample) except where it underflows to
    /// zero, whose sign then decides as the exact tiny product's would.
    fn fma_rd64(x: f64, m: f64, c: f64) -> f64 {
        let p = x * m;
        if x.is_nan() || p.is_infinite() {
            return p + c;
        }
        let t = p + c;
        let bp = t - c;
        let e = (p - bp) + (c - (t - bp));
        let below = e < 0.0 || (e == 0.0 && p == 0.0 && x < 0.0 && t == c);
        if below {
            prev64(t)
        } else {
            t
        }
    }

    fn prev64(t: f64) -> f64 {
        if t == 0.0 {
            -f64::from_bits(1)
        } else if t > 0.0 {
            f64::from_bits(t.to_bits() - 1)
        } else {
            f64::from_bits(t.to_bits() + 1)
        }
    }

    /// `__fmaf_rd(x, m, c)`: the product and sum exact in float64 (TwoSum), then rounded down to
    /// float32.
    fn fma_rd32(x: f32, m: f32, c: f32) -> f32 {
        let (p, c64) = (x as f64 * m as f64, c as f64);
        if x.is_nan() || p.is_infinite() {
            return (p + c64) as f32;
        }
        let t = p + c64;
        let bp = t - c64;
        let e = (p - bp) + (c64 - (t - bp));
        let r = t as f32;
        let r64 = r as f64;
        if r64 > t || (r64 == t && e < 0.0) {
            if r == 0.0 {
                -f32::from_bits(1)
            } else if r > 0.0 {
                f32::from_bits(r.to_bits() - 1)
            } else {
                f32::from_bits(r.to_bits() + 1)
            }
        } else {
            r
        }
    }

    /// The sliced kernels' branch-free grid step (`grid_slice_loop`), replayed in Rust for float32
    /// and float64 bins cut into slices: a sample counts in the slice whose `[0, len)` holds
    /// `floor(x * inv) - (first index + lo)` (the last edge selected onto the last bin, nothing
    /// below `first`), which must be exactly the slice of numpy's bin, and in no slice when numpy
    /// counts it in no bin. Edges +-3 ulps, signed zeros, the smallest subnormals, NaN, infinities.
    /// The same for the fused step the kernels take where its constant is exact
    /// (`grid_fma_slice_loop`): the place in the slice from the bits of `x * inv + 2^23 - (first
    /// index + lo)` rounded down (2^52 and the high word in float64), with no range test.
    #[test]
    fn branch_free_grid_step_is_numpys_rule_in_every_slice() {
        use crate::histogram::bins::Slot;
        fn ulps64(x: f64, k: i64) -> f64 {
            let mut v = x;
            for _ in 0..k.abs() {
                v = if k > 0 {
                    v.next_up_compat()
                } else {
                    v.next_down_compat()
                };
            }
            v
        }
        trait Step {
            fn next_up_compat(self) -> Self;
            fn next_down_compat(self) -> Self;
        }
        impl Step for f64 {
            fn next_up_compat(self) -> f64 {
                if self == 0.0 {
                    return f64::from_bits(1);
                }
                let b = self.to_bits();
                f64::from_bits(if self > 0.0 { b + 1 } else { b - 1 })
            }
            fn next_down_compat(self) -> f64 {
                -(-self).next_up_compat()
            }
        }
        let awkward = [
            0.0,
            -0.0,
            f64::from_bits(1),
            -f64::from_bits(1),
            f32::from_bits(1) as f64,
            -(f32::from_bits(1) as f64),
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for (nbins, lo, hi) in [
            (1usize << 20, 0.0f64, (1u64 << 21) as f64),
            (1 << 18, -4.0, 4.0),
            (4096, 0.0, 1024.0),
            (256, -256.0, 0.0),
            (4, 0.5, 1.5),
        ] {
            let slices = [1usize, 2, 3, 5];
            // float64 samples in float64 bins.
            let Binning::UniformF64(u) = uniform64(SampleType::F64, nbins, lo, hi) else {
                unreachable!()
            };
            let g = u.exact_grid().expect("a grid");
            let mut xs: Vec<f64> = awkward.to_vec();
            for e in u
                .edges
                .iter()
                .step_by((nbins / 512).max(1))
                .chain(u.edges.last())
            {
                xs.extend((-3..=3).map(|k| ulps64(*e, k)));
            }
            for &k in &slices {
                let per = nbins.div_ceil(k);
                for &x in &xs {
                    let mut hits = Vec::new();
                    let mut fma_hits = Vec::new();
                    for s in 0..nbins.div_ceil(per) {
                        let (first_bin, len) = (s * per, per.min(nbins - s * per));
                        let base = g.first_index + first_bin as f64;
                        let mut f = (x * g.inv_width).floor() - base;
                        if x == u.last {
                            f = (nbins - 1 - first_bin) as f64;
                        }
                        if f >= 0.0 && f < len as f64 && x >= u.first {
                            hits.push(first_bin + f as usize);
                        }
                        let c = (1i64 << 52) - g.first_index as i64 - first_bin as i64;
                        let r = fma_rd64(x, g.inv_width, c as f64).to_bits();
                        let place = if x == u.last {
                            (nbins - 1 - first_bin) as u32
                        } else {
                            r as u32
                        };
                        if r >> 32 == 0x4330_0000 && (place as usize) < len {
                            fma_hits.push(first_bin + place as usize);
                        }
                    }
                    let want: Vec<usize> = match u.locate(x) {
                        Slot::Bin(b) => vec![b],
                        _ => vec![],
                    };
                    assert_eq!(
                        hits, want,
                        "f64 {nbins} over [{lo}, {hi}) in {k} slices: x = {x:e}"
                    );
                    assert_eq!(
                        fma_hits, want,
                        "f64 fused step {nbins} over [{lo}, {hi}) in {k} slices: x = {x:e}"
                    );
                }
            }
            // float32 samples in float32 bins.
            let Binning::UniformF32(u) = uniform32(nbins, lo, hi) else {
                unreachable!()
            };
            let g = u.exact_grid().expect("a grid");
            let mut xs: Vec<f32> = awkward.iter().map(|&x| x as f32).collect();
            xs.extend([f32::from_bits(1), -f32::from_bits(1)]);
            for e in u
                .edges
                .iter()
                .step_by((nbins / 512).max(1))
                .chain(u.edges.last())
            {
                for k in -3i32..=3 {
                    let mut v = *e;
                    for _ in 0..k.abs() {
                        v = if k > 0 {
                            f32::from_bits(if v == 0.0 {
                                1
                            } else if v > 0.0 {
                                v.to_bits() + 1
                            } else {
                                v.to_bits() - 1
                            })
                        } else if v == 0.0 {
                            -f32::from_bits(1)
                        } else if v > 0.0 {
                            f32::from_bits(v.to_bits() - 1)
                        } else {
                            f32::from_bits(v.to_bits() + 1)
                        };
                    }
                    xs.push(v);
                }
            }
            for &k in &slices {
                let per = nbins.div_ceil(k);
                for &x in &xs {
                    let mut hits = Vec::new();
                    let mut fma_hits = Vec::new();
                    for s in 0..nbins.div_ceil(per) {
                        let (first_bin, len) = (s * per, per.min(nbins - s * per));
                        let base = g.first_index + first_bin as f32;
                        let mut f = (x * g.inv_width).floor() - base;
                        if x == u.last {
                            f = (nbins - 1 - first_bin) as f32;
                        }
                        if f >= 0.0 && f < len as f32 && x >= u.first {
                            hits.push(first_bin + f as usize);
                        }
                        let c = (1i64 << 23) - g.first_index as i64 - first_bin as i64;
                        assert!(c.abs() < 1 << 24, "the kernel would take the plain step");
                        let r = fma_rd32(x, g.inv_width, c as f32);
                        let place = if x == u.last {
                            (nbins - 1 - first_bin) as u32
                        } else {
                            r.to_bits().wrapping_sub(0x4B00_0000)
                        };
                        if (place as usize) < len {
                            fma_hits.push(first_bin + place as usize);
                        }
                    }
                    let want: Vec<usize> = match u.locate(x) {
                        Slot::Bin(b) => vec![b],
                        _ => vec![],
                    };
                    assert_eq!(
                        hits, want,
                        "f32 {nbins} over [{lo}, {hi}) in {k} slices: x = {x:e}"
                    );
                    assert_eq!(
                        fma_hits, want,
                        "f32 fused step {nbins} over [{lo}, {hi}) in {k} slices: x = {x:e}"
                    );
                }
            }
        }
    }

    #[test]
    fn layout_matches_the_kernel_struct() {
        // 9 eight-byte numbers, a pointer, 8 floats, 6 four-byte integers, the multiply flag
        // and its float32 factor, its float64 factor, the float32 edge table's address, the
        // verdict's address, the wanted verdict (padded to 8 bytes, as the C struct is), the
        // 16-bit float table's address, the two interior fractions, the float64 shortcut's first
        // edge and factor, the float64 grid's factor and first index, and the float32 interior
        // factor and fractions (padded to 8 bytes), the edges' search table (a pointer, three
        // 8-byte numbers, four 4-byte ones), the sliced flush's lanes' address, the staging
        // rings' flag (padded to 8 bytes).
        assert_eq!(
            std::mem::size_of::<KernelBinParams>(),
            9 * 8
                + 8
                + 8 * 4
                + 6 * 4
                + 4
                + 4
                + 8
                + 8
                + 8
                + 8
                + 8
                + 8
                + 8
                + 8
                + 8
                + 16
                + 3 * 4
                + 4
                + 48
                + 8
                + 8
        );
        assert_eq!(std::mem::align_of::<KernelBinParams>(), 8);
    }
}
