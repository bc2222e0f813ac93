//! Tests of the multiply estimate against numpy's division at every edge and 1-2 ulps either side.

use super::*;

#[cfg(test)]
mod fast_estimate_tests {
    use super::*;
    use crate::histogram::bins::BinSpec;
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
