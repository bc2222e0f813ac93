//! Unit tests of the CPU engine: every path against a plain reference.

use super::*;

#[cfg(test)]
mod paths {
    use super::*;
    use crate::histogram::bins::BinSpec;
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

    /// The float32 `d` representable values above `x` (below for negative `d`), across zero too.
    fn ulps_away(x: f32, d: i32) -> f32 {
        // Float32 bit patterns ordered as integers: negatives mirrored below zero.
        let key = |v: f32| {
            let b = v.to_bits() as i32;
            if b < 0 {
                -(b & 0x7fff_ffff)
            } else {
                b
            }
        };
        let k = key(x) + d;
        if k < 0 {
            f32::from_bits((-k) as u32 | 0x8000_0000)
        } else {
            f32::from_bits(k as u32)
        }
    }

    /// Float32 bins on a grid of a power-of-two width take the exact code loop (no estimate, no
    /// correction): on every edge, one and two ulps either side, specials (signed zeros and
    /// subnormals at a grid that crosses 0) and random values, both the scalar code and the vector
    /// loop agree with numpy's rule (`UniformF32::locate`); ranges just off the rule keep numpy's
    /// loop and agree too.
    #[test]
    fn exact_power_of_two_bins_agree_with_locate() {
        use rand::{Rng, SeedableRng};
        let mut r = rand::rngs::StdRng::seed_from_u64(7);
        for (nbins, lo, hi, exact) in [
            (256usize, 0.0, 256.0f64, true),
            (4096, 0.0, 1024.0, true),
            (3, 0.0, 3.0, true),
            (1 << 16, 0.0, (1u64 << 17) as f64, true),
            (1000, 0.0, 1000.0 * 0.125, true),
            (1 << 17, -4.0, 4.0, true),
            (256, -256.0, 0.0, true),
            (4, 0.5, 1.5, true),
            (2, 8.0, 24.0, true),
            (256, 0.0, 255.0, false),
            (100, 0.0, 300.0, false),
            (256, -1024.0, 1024.0, false),
            (1000, -4.0, 4.0, false),
        ] {
            let spec = BinSpec::Uniform {
                nbins,
                range: Some((lo, hi)),
            };
            let b = Binning::resolve(&spec, Samples::F32(&[0.0])).unwrap();
            let Binning::UniformF32(u) = &b else {
                unreachable!()
            };
            let codes = F32Codes::new(u);
            assert_eq!(
                codes.exact.is_some(),
                exact,
                "{nbins} bins over [{lo}, {hi}]"
            );
            let tiny = f32::from_bits(1);
            let mut xs: Vec<f32> = vec![
                f32::NAN,
                f32::INFINITY,
                -f32::INFINITY,
                0.0,
                -0.0,
                tiny,
                -tiny,
                f32::MIN_POSITIVE,
                -f32::MIN_POSITIVE,
                lo as f32,
                hi as f32,
            ];
            for &e in u.edges.iter().step_by((nbins / 2048).max(1)) {
                for d in 1..=2u32 {
                    xs.push(e);
                    xs.push(ulps_away(e, d as i32));
                    xs.push(ulps_away(e, -(d as i32)));
                }
            }
            let span = (hi - lo) as f32;
            xs.extend(
                (0..5000).map(|_| r.gen_range(lo as f32 - 0.1 * span..hi as f32 + 0.1 * span)),
            );
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
            assert_eq!(scalar, expected, "scalar, {nbins} bins over [{lo}, {hi}]");
            for chunk in 0..xs.len().div_ceil(BATCH) {
                let part = &xs[chunk * BATCH..((chunk + 1) * BATCH).min(xs.len())];
                let mut out = vec![0u32; part.len()];
                Codes::<f32>::codes(&codes, part, &mut out);
                assert_eq!(
                    out,
                    expected[chunk * BATCH..chunk * BATCH + part.len()],
                    "vector loop, {nbins} bins over [{lo}, {hi}]"
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
            let edges64 = crate::histogram::bins::linspace_f64(lo, hi, n + 1);
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
            let u = UniformF64::new(n, lo, hi, hi - lo, edges64.clone());
            let fc = F64Codes::new(&u);
            for (k, &x) in xs64.iter().enumerate() {
                assert_eq!(want[2][k], Codes::<f64>::code(&fc, x), "x={x}");
            }
        }
    }
}
