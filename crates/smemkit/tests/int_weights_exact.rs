//! Integer weights summed as exact 64-bit integers on the CPU engine: magnitudes near ±2^62, whose
//! sums float64 cannot hold, against i128 sums reduced modulo 2^64 here (and then into each
//! weight type as numpy wraps it), over integer bins, uniform bins and explicit edges, with the
//! out-of-range policies. tests/gpu_int_weights_exact.rs compares the GPU with this engine.

use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions},
    sample::{IntType, IntWeights, Samples, Weights},
    Backend,
};

/// splitmix64: fresh inputs from a seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64)
}

/// Samples whose bin is known without numpy's rule: `k + 0.5` lies in bin k of the unit bins over
/// [0, nbins) (uniform or edges at the integers); -3.5, nbins + 2.5 and NaN lie outside.
fn samples(r: &mut Rng, n: usize, nbins: usize) -> (Vec<f64>, Vec<Option<usize>>) {
    (0..n)
        .map(|_| match r.next() % 50 {
            0 => (-3.5, None),
            1 => (nbins as f64 + 2.5, None),
            2 => (f64::NAN, None),
            _ => {
                let k = (r.next() % nbins as u64) as usize;
                (k as f64 + 0.5, Some(k))
            }
        })
        .unzip()
}

/// Weights near ±2^62 (and a few near the ends of int64).
fn big_weights(r: &mut Rng, n: usize) -> Vec<i64> {
    (0..n)
        .map(|_| {
            let small = (r.next() % (1 << 20)) as i64 - (1 << 19);
            match r.next() % 8 {
                0 => i64::MAX - small.abs(),
                1 => i64::MIN + small.abs(),
                k if k % 2 == 0 => (1i64 << 62) + small,
                _ => -(1i64 << 62) + small,
            }
        })
        .collect()
}

/// The exact sums per bin modulo 2^64 (as i64), with `clamp` adding the outside samples (not
/// NaN) to the end bins.
fn reference(
    xs: &[f64],
    bins: &[Option<usize>],
    w: &[i128],
    nbins: usize,
    clamp: bool,
) -> Vec<i64> {
    let mut s = vec![0i128; nbins];
    for ((x, b), v) in xs.iter().zip(bins).zip(w) {
        let bin = match b {
            Some(k) => *k,
            None if clamp && *x < 0.0 => 0,
            None if clamp && *x > 0.0 => nbins - 1,
            None => continue,
        };
        s[bin] += v;
    }
    s.iter().map(|&v| v as i64).collect()
}

fn sums_of(c: &Counts) -> (Vec<i64>, IntType) {
    match c {
        Counts::Integer { sums, dtype } => (sums.clone(), *dtype),
        other => panic!("expected integer sums, got {other:?}"),
    }
}

fn specs(nbins: usize) -> Vec<BinSpec> {
    vec![
        BinSpec::Uniform {
            nbins,
            range: Some((0.0, nbins as f64)),
        },
        BinSpec::Edges((0..=nbins).map(|i| i as f64).collect()),
    ]
}

#[test]
fn int64_weights_near_2_62_sum_exactly() {
    let s = seed();
    let mut r = Rng(s);
    for nbins in [1usize, 7, 1000] {
        let n = 20_000;
        let (xs, bins) = samples(&mut r, n, nbins);
        let w = big_weights(&mut r, n);
        let wide: Vec<i128> = w.iter().map(|&v| v as i128).collect();
        for spec in specs(nbins) {
            for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
                let h = histogram(
                    Samples::F64(&xs),
                    Some(Weights::Int(IntWeights::I64(&w))),
                    &HistogramOptions::new(spec.clone())
                        .backend(Backend::Cpu)
                        .policy(policy),
                )
                .unwrap();
                let want = reference(&xs, &bins, &wide, nbins, policy == OutOfRange::Clamp);
                assert_eq!(
                    sums_of(&h.counts),
                    (want, IntType::I64),
                    "seed {s}, {nbins} bins, {spec:?}, {policy:?}"
                );
            }
        }
        // Integer bins of int32 samples: the same sums.
        let ints: Vec<i32> = bins.iter().map(|b| b.map_or(-1, |k| k as i32)).collect();
        let h = histogram(
            Samples::I32(&ints),
            Some(Weights::Int(IntWeights::I64(&w))),
            &HistogramOptions::new(BinSpec::Integer { nbins }).backend(Backend::Cpu),
        )
        .unwrap();
        let no_nan: Vec<f64> = xs
            .iter()
            .map(|x| if x.is_nan() { -1.0 } else { *x })
            .collect();
        let want = reference(&no_nan, &bins, &wide, nbins, false);
        assert_eq!(sums_of(&h.counts).0, want, "seed {s}, integer bins");
    }
}

#[test]
fn every_integer_type_wraps_its_exact_sum() {
    let s = seed();
    let mut r = Rng(s);
    let nbins = 37;
    let n = 30_000;
    let (xs, bins) = samples(&mut r, n, nbins);
    let raw: Vec<u64> = (0..n).map(|_| r.next()).collect();
    let u64w = raw.clone();
    let i32w: Vec<i32> = raw.iter().map(|&v| v as i32).collect();
    let u32w: Vec<u32> = raw.iter().map(|&v| (v >> 7) as u32).collect();
    let i16w: Vec<i16> = raw.iter().map(|&v| v as i16).collect();
    let u8w: Vec<u8> = raw.iter().map(|&v| (v >> 3) as u8).collect();
    let i8w: Vec<i8> = raw.iter().map(|&v| (v >> 11) as i8).collect();
    let cases: Vec<(IntWeights, Vec<i128>)> = vec![
        (
            IntWeights::U64(&u64w),
            u64w.iter().map(|&v| v as i128).collect(),
        ),
        (
            IntWeights::I32(&i32w),
            i32w.iter().map(|&v| v as i128).collect(),
        ),
        (
            IntWeights::U32(&u32w),
            u32w.iter().map(|&v| v as i128).collect(),
        ),
        (
            IntWeights::I16(&i16w),
            i16w.iter().map(|&v| v as i128).collect(),
        ),
        (
            IntWeights::U8(&u8w),
            u8w.iter().map(|&v| v as i128).collect(),
        ),
        (
            IntWeights::I8(&i8w),
            i8w.iter().map(|&v| v as i128).collect(),
        ),
    ];
    for (w, wide) in &cases {
        let ty = w.int_type();
        // Explicit edges: numpy's integer cumulative sums wrap at any magnitude (its uniform path
        // casts float64 block sums, which beyond 2^53 are not exact; int32's overflowing cast is
        // refused, tests/int_weights.rs).
        let spec = specs(nbins).pop().unwrap();
        let h = histogram(
            Samples::F64(&xs),
            Some(Weights::Int(*w)),
            &HistogramOptions::new(spec).backend(Backend::Cpu),
        )
        .unwrap();
        let want: Vec<i64> = reference(&xs, &bins, wide, nbins, false)
            .into_iter()
            .map(|v| ty.wrap(v))
            .collect();
        assert_eq!(sums_of(&h.counts), (want, ty), "seed {s}, {ty}");
    }
}

/// Overflow wraps modulo 2^64 as numpy's int64 sums do: `np.histogram([0.5, 0.5], bins=[0, 1],
/// weights=np.array([2**63 - 1, 2**63 - 1]))` is `[-2]`; uint64 sums above 2^63 come back as
/// their bits (the Python and CLI outputs read them as uint64).
#[test]
fn overflow_wraps_and_uint64_keeps_its_bits() {
    let xs = [0.5f64, 0.5, 1.5];
    let w = [i64::MAX, i64::MAX, 3];
    let h = histogram(
        Samples::F64(&xs),
        Some(Weights::Int(IntWeights::I64(&w))),
        &HistogramOptions::new(BinSpec::Edges(vec![0.0, 1.0, 2.0])).backend(Backend::Cpu),
    )
    .unwrap();
    assert_eq!(sums_of(&h.counts).0, vec![-2, 3]);
    let u = [(1u64 << 63) + 5, 1 << 62, 9];
    let h = histogram(
        Samples::F64(&xs),
        Some(Weights::Int(IntWeights::U64(&u))),
        &HistogramOptions::new(BinSpec::Uniform {
            nbins: 2,
            range: Some((0.0, 2.0)),
        })
        .backend(Backend::Cpu),
    )
    .unwrap();
    let (got, ty) = sums_of(&h.counts);
    assert_eq!(ty, IntType::U64);
    assert_eq!(got[0] as u64, (1u64 << 63) + (1 << 62) + 5);
    assert_eq!(got[1] as u64, 9);
}
