//! Integer and bool weights keep their type, as `numpy.histogram`'s result does: the CPU engine
//! against values numpy 2.4 gives (the literals below, each with the numpy call that gave it) and
//! against sums computed here independently (i128 sums reduced modulo 2^bits by hand).

use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{bincount, histogram, Counts, HistogramOptions},
    sample::{IntType, IntWeights, Samples, Weights},
    Backend, Error,
};

fn cpu(bins: BinSpec) -> HistogramOptions {
    HistogramOptions::new(bins).backend(Backend::Cpu)
}

fn uniform(nbins: usize, lo: f64, hi: f64) -> BinSpec {
    BinSpec::Uniform {
        nbins,
        range: Some((lo, hi)),
    }
}

fn sums(c: &Counts) -> (Vec<i64>, IntType) {
    match c {
        Counts::Integer { sums, dtype } => (sums.clone(), *dtype),
        other => panic!("expected integer sums, got {other:?}"),
    }
}

/// `a = [0.1, 0.2, 0.3, 0.7, 5.0]` with weights `[100, 100, 3, 1, 1]` of each type:
/// `np.histogram(a, bins=2, range=(0, 1), weights=w)` and `np.histogram(a, bins=[0, .5, 1],
/// weights=w)` both give `[-53, 1]` for int8 and `[203, 1]` for the others (numpy 2.4).
#[test]
fn numpy_wraps_sums_in_the_weights_type() {
    let a = [0.1f64, 0.2, 0.3, 0.7, 5.0];
    let raw = [100i64, 100, 3, 1, 1];
    let i8w: Vec<i8> = raw.iter().map(|&v| v as i8).collect();
    let u8w: Vec<u8> = raw.iter().map(|&v| v as u8).collect();
    let i16w: Vec<i16> = raw.iter().map(|&v| v as i16).collect();
    let u32w: Vec<u32> = raw.iter().map(|&v| v as u32).collect();
    let u64w: Vec<u64> = raw.iter().map(|&v| v as u64).collect();
    let cases: [(IntWeights, [i64; 2]); 5] = [
        (IntWeights::I8(&i8w), [-53, 1]),
        (IntWeights::U8(&u8w), [203, 1]),
        (IntWeights::I16(&i16w), [203, 1]),
        (IntWeights::U32(&u32w), [203, 1]),
        (IntWeights::U64(&u64w), [203, 1]),
    ];
    for (w, want) in cases {
        for bins in [uniform(2, 0.0, 1.0), BinSpec::Edges(vec![0.0, 0.5, 1.0])] {
            let h = histogram(Samples::F64(&a), Some(Weights::Int(w)), &cpu(bins)).unwrap();
            let (got, dtype) = sums(&h.counts);
            assert_eq!(dtype, w.int_type());
            assert_eq!(got, want, "{dtype}");
            assert_eq!(h.tallies.above, 1);
        }
    }
}

/// `np.histogram([0.1, 0.2, 0.9], bins=2, range=(0, 1), weights=[True, False, True])` is
/// `[True, True]` (bool); with `bins=[0, .5, 1]` numpy raises UFuncTypeError.
#[test]
fn bool_weights_as_numpy() {
    let a = [0.1f64, 0.2, 0.9, 0.3];
    let w = [true, false, true, false];
    let h = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::Bool(&w))),
        &cpu(uniform(3, 0.0, 1.0)),
    )
    .unwrap();
    assert_eq!(sums(&h.counts), (vec![1, 0, 1], IntType::Bool));
    let e = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::Bool(&w))),
        &cpu(BinSpec::Edges(vec![0.0, 0.5, 1.0])),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("bool weights")),
        "{e}"
    );
}

/// The sums of random integer weights of every type over integer bins, uniform bins and explicit
/// edges, against i128 sums reduced modulo 2^bits here.
#[test]
fn random_weights_of_every_type_match_modular_sums() {
    let n = 200_000usize;
    // A deterministic scramble: samples in [-3, 40), weights spread over each type's range.
    let mix = |i: usize, k: u64| {
        (i as u64 + 1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15 ^ k)
            .rotate_left(17)
    };
    let samples: Vec<i32> = (0..n).map(|i| (mix(i, 1) % 43) as i32 - 3).collect();
    let raw: Vec<u64> = (0..n).map(|i| mix(i, 2)).collect();
    let nbins = 37usize;
    let bin_of = |x: i32, spec: usize| -> Option<usize> {
        match spec {
            // Integer bins 0..nbins, uniform bins of width 1 over [0, 37] (37 in the last bin),
            // explicit edges 0, 2, 4, ... 36, 40 (last bin closed).
            0 => (0..nbins as i32).contains(&x).then_some(x as usize),
            1 => (0..=nbins as i32)
                .contains(&x)
                .then_some((x as usize).min(nbins - 1)),
            _ => (0..=40).contains(&x).then_some(((x / 2) as usize).min(18)),
        }
    };
    let specs = [
        BinSpec::Integer { nbins },
        uniform(nbins, 0.0, nbins as f64),
        BinSpec::Edges((0..=18).map(|k| 2.0 * k as f64).chain([40.0]).collect()),
    ];
    macro_rules! case {
        ($t:ty, $tag:ident, $bits:expr, $signed:expr, $shift:expr) => {{
            // Small enough magnitudes that no numpy block sum leaves the int32 range.
            let w: Vec<$t> = raw.iter().map(|&r| (r >> $shift) as $t).collect();
            for (s, spec) in specs.iter().enumerate() {
                let len = if s == 2 { 19 } else { nbins };
                let mut want = vec![0i128; len];
                for (&x, &v) in samples.iter().zip(&w) {
                    if let Some(b) = bin_of(x, s) {
                        want[b] += v as i128;
                    }
                }
                let modulus = 1i128 << $bits;
                let want: Vec<i64> = want
                    .iter()
                    .map(|&v| {
                        let r = v.rem_euclid(modulus);
                        (if $signed && r >= modulus / 2 {
                            r - modulus
                        } else {
                            r
                        }) as i64
                    })
                    .collect();
                let h = histogram(
                    Samples::I32(&samples),
                    Some(Weights::Int(IntWeights::$tag(&w))),
                    &cpu(spec.clone()),
                )
                .unwrap_or_else(|e| panic!("{} spec {s}: {e}", stringify!($t)));
                let (got, _) = sums(&h.counts);
                assert_eq!(got, want, "{} spec {s}", stringify!($t));
            }
        }};
    }
    case!(u8, U8, 8, false, 56);
    case!(i8, I8, 8, true, 56);
    case!(u16, U16, 16, false, 52);
    case!(i16, I16, 16, true, 48);
    case!(u32, U32, 32, false, 44);
    case!(i32, I32, 32, true, 50);
    case!(u64, U64, 64, false, 30);
    case!(i64, I64, 64, true, 30);
}

/// numpy's density of integer sums: `n / width / n.sum()` of the wrapped sums.
/// `np.histogram([0.1, 0.2, 0.9], bins=2, range=(0, 1), weights=np.uint8([200, 100, 3]),
/// density=True)` is `[1.87234043, 0.12765957]`.
#[test]
fn density_of_wrapped_sums() {
    let a = [0.1f64, 0.2, 0.9];
    let w = [200u8, 100, 3];
    let h = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::U8(&w))),
        &cpu(uniform(2, 0.0, 1.0)).density(true),
    )
    .unwrap();
    assert_eq!(sums(&h.counts).0, vec![44, 3]);
    let d = h.density.unwrap();
    let want = [44.0 / 0.5 / 47.0, 3.0 / 0.5 / 47.0];
    assert_eq!(d, want);
    assert!((d[0] - 1.87234043).abs() < 1e-8 && (d[1] - 0.12765957).abs() < 1e-8);
}

/// Sums beyond 2^53 are exact 64-bit integers (tests/int_weights_exact.rs has more); a numpy
/// cast that overflows is refused.
#[test]
fn large_sums_are_exact_and_overflowing_casts_refused() {
    let a = [0.5f64; 4];
    let big = [(1i64 << 52) + 1; 4];
    let h = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::I64(&big))),
        &cpu(uniform(1, 0.0, 1.0)),
    )
    .unwrap();
    assert_eq!(sums(&h.counts), (vec![(1i64 << 54) + 4], IntType::I64));
    // int32 weights of 2^30, eight in one bin: numpy's uniform path casts 2^33 to int32
    // (giving -2147483648 with "invalid value encountered in cast"): refused; its edges path
    // wraps the cumulative sums: `np.histogram(np.zeros(8), bins=[0, 1],
    // weights=np.full(8, 2**30, np.int32))` is `[0]`.
    let a = [0.0f64; 8];
    let w = [1i32 << 30; 8];
    let e = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::I32(&w))),
        &cpu(uniform(1, 0.0, 1.0)),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::NotImplemented(m) if m.contains("int32")),
        "{e}"
    );
    let h = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::I32(&w))),
        &cpu(BinSpec::Edges(vec![0.0, 1.0])),
    )
    .unwrap();
    assert_eq!(sums(&h.counts), (vec![0], IntType::I32));
}

/// Empty input gives zero sums of the weights' type; the clamp policy adds the outside samples'
/// weights into the end bins; a length mismatch is the usual error.
#[test]
fn empty_clamp_and_length() {
    let h = histogram(
        Samples::F64(&[]),
        Some(Weights::Int(IntWeights::I16(&[]))),
        &cpu(uniform(3, 0.0, 1.0)),
    )
    .unwrap();
    assert_eq!(sums(&h.counts), (vec![0, 0, 0], IntType::I16));
    let a = [-1.0f64, 0.5, 7.0];
    let w = [5i32, 1, 9];
    let h = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::I32(&w))),
        &cpu(uniform(2, 0.0, 1.0)).policy(OutOfRange::Clamp),
    )
    .unwrap();
    assert_eq!(sums(&h.counts).0, vec![5, 10]);
    let e = histogram(
        Samples::F64(&a),
        Some(Weights::Int(IntWeights::I32(&w[..2]))),
        &cpu(uniform(2, 0.0, 1.0)),
    )
    .unwrap_err();
    assert!(matches!(e, Error::WeightsLength { .. }), "{e}");
}

/// numpy's bincount returns float64 for integer weights:
/// `np.bincount([0, 1, 1], weights=np.int8([1, 2, 3]))` is `[1., 5.]` (float64).
#[test]
fn bincount_sums_integer_weights_in_float64() {
    let x = [0u8, 1, 1];
    let w = [1i8, 2, 3];
    let h = bincount(
        Samples::U8(&x),
        Some(Weights::Int(IntWeights::I8(&w))),
        0,
        Backend::Cpu,
    )
    .unwrap();
    assert_eq!(h.counts, Counts::Weighted(vec![1.0, 5.0]));
    let b = [true, true, false];
    let h = bincount(
        Samples::U8(&x),
        Some(Weights::Int(IntWeights::Bool(&b))),
        0,
        Backend::Cpu,
    )
    .unwrap();
    assert_eq!(h.counts, Counts::Weighted(vec![1.0, 1.0]));
}
