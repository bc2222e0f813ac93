//! Tests of `estimate::interior_fraction`: wherever the GPU kernels skip numpy's correction because
//! the multiply estimate lies well inside a bin, the bin must be the one numpy's rule gives. The
//! kernels' arithmetic is repeated here (float32 difference widened and multiplied by the float64
//! factor; float64 difference times the factor) on every edge, 1 to 3 ulps either side, and random
//! values.

use super::estimate::{
    interior_fraction, interior_fraction32, interior_fraction_wide, multiply_estimate_factors,
    wide_hi,
};
use super::{BinSpec, Binning, Slot};
use crate::sample::Samples;

struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Checks one binning on `xs`; returns how many samples skipped the correction.
fn check<T: Copy + std::fmt::Debug>(
    b: &Binning,
    xs: &[T],
    estimate: impl Fn(T) -> Option<f64>,
    locate: impl Fn(T) -> Slot,
) -> usize {
    let (lo, hi) = interior_fraction(b);
    let n = b.nbins() as i64;
    let mut skipped = 0;
    for &x in xs {
        let Some(m) = estimate(x) else { continue };
        let est = m as i64;
        let frac = m - est as f64;
        if frac > lo && frac < hi && est < n {
            skipped += 1;
            assert_eq!(
                locate(x),
                Slot::Bin(est as usize),
                "x = {x:?}, m = {m}, margin ({lo}, {hi}), {b:?}"
            );
        }
    }
    skipped
}

fn around<F: Copy>(edges: &[F], step: impl Fn(F, i32) -> F, stride: usize) -> Vec<F> {
    let mut xs = Vec::new();
    for e in edges.iter().step_by(stride) {
        for k in -3..=3 {
            xs.push(step(*e, k));
        }
    }
    xs
}

fn step32(x: f32, k: i32) -> f32 {
    (0..k.unsigned_abs()).fold(x, |y, _| if k > 0 { y.next_up() } else { y.next_down() })
}

fn step64(x: f64, k: i32) -> f64 {
    (0..k.unsigned_abs()).fold(x, |y, _| if k > 0 { y.next_up() } else { y.next_down() })
}

const RANGES: &[(f64, f64)] = &[
    (-4.0, 4.0),
    (0.1, 0.7),
    (-1e6, 1e6 + 3.0),
    (0.0, 256.0),
    (-5.0, 5.0),
    (-3.3, 1e-3),
    (1.0, 1.0 + 1.0 / 32.0),
    (-1.0, -0.999),
    (1e-30, 3e-30),
    (1e30, 3.5e30),
    (16777000.0, 16777300.0),
    (-7.25e5, 123.456),
];
const NBINS: &[usize] = &[1, 3, 7, 10, 100, 255, 1000, 4096, 10007, 32768, 1 << 20];

#[test]
fn interior_estimates_are_numpys_bins_f32() {
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let mut total = 0;
    for &(lo, hi) in RANGES {
        for &n in NBINS {
            let spec = BinSpec::Uniform {
                nbins: n,
                range: Some((lo, hi)),
            };
            let Ok(b) = Binning::resolve(&spec, Samples::F32(&[1.0])) else {
                continue;
            };
            let Binning::UniformF32(u) = &b else {
                unreachable!()
            };
            let Some((scale, _)) = multiply_estimate_factors(&b) else {
                continue;
            };
            let mut xs = around(&u.edges, step32, (n / 20_000).max(1));
            let (l, h) = (u.first as f64, u.last as f64);
            xs.extend((0..20_000).map(|_| (l + (h - l) * rng.unit()) as f32));
            let first = u.first;
            let last = u.last;
            total += check(
                &b,
                &xs,
                |x| (x >= first && x <= last).then_some(((x - first) as f64) * scale),
                |x| u.locate(x),
            );
        }
    }
    // Not vacuous: most random samples of the wide-bin cases take the shortcut.
    assert!(
        total > 100_000,
        "only {total} samples skipped the correction"
    );
}

#[test]
fn float32_interior_estimates_are_numpys_bins() {
    // The kernels' float32 shortcut: m32 = (x - first) * scale rounded to float32, its floor and
    // fractional part (both exact), and the float32 bounds.
    let mut rng = Rng(0x3c6ef372fe94f82b);
    let (mut total, mut binnings) = (0, 0);
    // Each range given by the caller (numpy divides in float64) and taken from the data (the
    // all-float32 rule).
    let cases = RANGES
        .iter()
        .flat_map(|&r| [(r, true), (r, false)])
        .chain([((-5.873_214, 6.021_7), false), ((-0.37, 9.81e3), false)]);
    let mut from_data = 0;
    for ((lo, hi), given) in cases {
        for &n in NBINS {
            let spec = BinSpec::Uniform {
                nbins: n,
                range: given.then_some((lo, hi)),
            };
            let data = [lo as f32, hi as f32];
            let Ok(b) = Binning::resolve(&spec, Samples::F32(if given { &[1.0] } else { &data }))
            else {
                continue;
            };
            let Binning::UniformF32(u) = &b else {
                unreachable!()
            };
            let Some((scale, lo32, hi32)) = interior_fraction32(&b) else {
                continue;
            };
            from_data += usize::from(!given);
            binnings += 1;
            assert!(lo32 > 0.0 && lo32 < hi32 && hi32 < 1.0, "{lo32} {hi32}");
            let mut xs = around(&u.edges, step32, (n / 20_000).max(1));
            let (l, h) = (u.first as f64, u.last as f64);
            xs.extend((0..20_000).map(|_| (l + (h - l) * rng.unit()) as f32));
            for x in xs {
                if !(x >= u.first && x <= u.last) {
                    continue;
                }
                let m32 = (x - u.first) * scale;
                let k = m32.floor();
                let frac = m32 - k;
                if frac > lo32 && frac < hi32 && (k as usize) < n {
                    total += 1;
                    assert_eq!(
                        u.locate(x),
                        Slot::Bin(k as usize),
                        "x = {x:?}, m32 = {m32}, bounds ({lo32}, {hi32}), {b:?}"
                    );
                }
            }
        }
    }
    // Not vacuous: the usual ranges qualify, and most of their samples take the shortcut.
    assert!(binnings >= 10, "only {binnings} binnings qualify");
    assert!(
        from_data >= 5,
        "only {from_data} ranges from the data qualify"
    );
    assert!(total > 100_000, "only {total} samples took the shortcut");
}

#[test]
fn float32_wide_shortcut_estimates_are_numpys_bins() {
    // The kernels' float64 shortcut for float32 samples: m = (x - first) * scale in float64 rounded
    // to nearest, its floor and fractional part, and the bounds (lo, wide_hi(lo)).
    let mut rng = Rng(0x9b05688c2b3e6c1f);
    let (mut total, mut binnings) = (0, 0);
    let cases = RANGES
        .iter()
        .flat_map(|&r| [(r, true), (r, false)])
        .chain([((-5.873_214, 6.021_7), false), ((-0.37, 9.81e3), false)]);
    for ((lo, hi), given) in cases {
        for &n in NBINS.iter().chain(&[100_000, 250_000, 1_000_003]) {
            let spec = BinSpec::Uniform {
                nbins: n,
                range: given.then_some((lo, hi)),
            };
            let data = [lo as f32, hi as f32];
            let Ok(b) = Binning::resolve(&spec, Samples::F32(if given { &[1.0] } else { &data }))
            else {
                continue;
            };
            let Binning::UniformF32(u) = &b else {
                unreachable!()
            };
            let Some((first, scale, lo64)) = interior_fraction_wide(&b) else {
                continue;
            };
            let hi64 = wide_hi(lo64);
            binnings += 1;
            assert!(lo64 >= 0.0 && lo64 < hi64 && hi64 < 1.0, "{lo64} {hi64}");
            let mut xs = around(&u.edges, step32, (n / 20_000).max(1));
            let (l, h) = (u.first as f64, u.last as f64);
            xs.extend((0..20_000).map(|_| (l + (h - l) * rng.unit()) as f32));
            for x in xs {
                if !(x >= u.first && x <= u.last) {
                    continue;
                }
                let m = (x as f64 - first) * scale;
                let k = m.floor();
                let frac = m - k;
                if frac > lo64 && frac < hi64 && (k as usize) < n {
                    total += 1;
                    assert_eq!(
                        u.locate(x),
                        Slot::Bin(k as usize),
                        "x = {x:?}, m = {m}, bounds ({lo64}, {hi64}), {b:?}"
                    );
                }
            }
        }
    }
    assert!(binnings >= 10, "only {binnings} binnings qualify");
    assert!(total > 100_000, "only {total} samples took the shortcut");
}

#[test]
fn the_wide_shortcut_takes_over_where_the_float32_margin_is_wide() {
    let uniform = |n: usize, lo: f64, hi: f64| {
        let spec = BinSpec::Uniform {
            nbins: n,
            range: Some((lo, hi)),
        };
        Binning::resolve(&spec, Samples::F32(&[1.0])).unwrap()
    };
    // 1000 bins over [-4, 4]: the float32 margin is narrow, so the float32 shortcut stays.
    assert_eq!(interior_fraction_wide(&uniform(1000, -4.0, 4.0)), None);
    // 100000 bins over [-4, 4]: the float32 margin is over 1 %, the edges' own rounding 0.15 %.
    let (first, scale, lo) = interior_fraction_wide(&uniform(100_000, -4.0, 4.0)).unwrap();
    assert_eq!((first, scale), (-4.0, 12_500.0));
    assert!(lo > 0.0 && lo < 0.002, "{lo}");
    // A factor float32 cannot hold (1000 / 0.6): the float64 shortcut still applies.
    assert!(interior_fraction_wide(&uniform(1000, 0.1, 0.7)).is_some());
}

#[test]
fn float32_shortcut_only_where_proven_and_cheap() {
    let uniform = |n: usize, lo: f64, hi: f64, data: Option<&[f32]>| {
        let spec = BinSpec::Uniform {
            nbins: n,
            range: data.is_none().then_some((lo, hi)),
        };
        Binning::resolve(&spec, Samples::F32(data.unwrap_or(&[1.0]))).unwrap()
    };
    // 1000 bins over [-4, 4]: on, with bounds a little wider than the float64 ones.
    let b = uniform(1000, -4.0, 4.0, None);
    let (scale, lo32, hi32) = interior_fraction32(&b).expect("1000 bins over [-4, 4]");
    assert_eq!(scale, 125.0);
    let (lo, hi) = interior_fraction(&b);
    assert!(
        (lo32 as f64) > lo && (hi32 as f64) < hi,
        "{lo32} {hi32} {lo} {hi}"
    );
    // The range from the data (numpy's all-float32 rule): on, with the all-float32 factor.
    let (scale, _, _) = interior_fraction32(&uniform(1000, 0.0, 0.0, Some(&[-4.0, 4.0]))).unwrap();
    assert_eq!(scale, 125.0);
    // Margins beyond the cap: off.
    assert_eq!(
        interior_fraction32(&uniform(1 << 18, -4.0, 4.0, None)),
        None
    );
    // A factor that float32 cannot hold exactly (1000 / 0.6): off.
    assert_eq!(interior_fraction32(&uniform(1000, 0.1, 0.7, None)), None);
}

#[test]
fn interior_estimates_are_numpys_bins_f64() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut total = 0;
    for &(lo, hi) in RANGES {
        for &n in NBINS {
            let spec = BinSpec::Uniform {
                nbins: n,
                range: Some((lo, hi)),
            };
            let Ok(b) = Binning::resolve(&spec, Samples::F64(&[1.0])) else {
                continue;
            };
            let Binning::UniformF64(u) = &b else {
                unreachable!()
            };
            let Some((scale, _)) = multiply_estimate_factors(&b) else {
                continue;
            };
            let mut xs = around(&u.edges, step64, (n / 20_000).max(1));
            xs.extend((0..20_000).map(|_| u.first + (u.last - u.first) * rng.unit()));
            let (first, last) = (u.first, u.last);
            total += check(
                &b,
                &xs,
                |x| (x >= first && x <= last).then_some((x - first) * scale),
                |x| u.locate(x),
            );
        }
    }
    assert!(
        total > 100_000,
        "only {total} samples skipped the correction"
    );
}

#[test]
fn no_shortcut_without_a_proven_bound() {
    // The all-float32 rule (range from the data) and explicit edges keep the correction.
    let data = [-4.0f32, 4.0];
    let spec = BinSpec::Uniform {
        nbins: 1000,
        range: None,
    };
    let b = Binning::resolve(&spec, Samples::F32(&data)).unwrap();
    assert_eq!(interior_fraction(&b), (0.0, 0.0));
    let b = Binning::resolve(&BinSpec::Edges(vec![0.0, 1.0, 3.0]), Samples::F64(&[1.0])).unwrap();
    assert_eq!(interior_fraction(&b), (0.0, 0.0));
    // The usual case has a margin far below a bin.
    let spec = BinSpec::Uniform {
        nbins: 1000,
        range: Some((-4.0, 4.0)),
    };
    let b = Binning::resolve(&spec, Samples::F32(&[1.0])).unwrap();
    let (lo, hi) = interior_fraction(&b);
    assert!(lo > 0.0 && lo < 1e-3 && hi == 1.0 - lo, "{lo} {hi}");
}
