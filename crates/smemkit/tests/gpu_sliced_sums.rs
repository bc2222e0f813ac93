//! Weighted sums in slices of the bins (`sliced64`): the CPU engine's sums over float64 samples in
//! bins that need numpy's correction, integer samples in integer bins, samples outside the bins
//! and NaN, both out-of-range policies, the fewest slices and more. They need a CUDA GPU and are
//! ignored elsewhere.

mod gpu_common;

use gpu_common::{check, rng};
use rand::Rng;
use smemkit::bins::{BinSpec, OutOfRange};
use smemkit::histogram::StrategyChoice;
use smemkit::sample::{Samples, Weights};

fn sliced(slices: Option<u32>) -> StrategyChoice {
    StrategyChoice::Sliced {
        bits: Some(64),
        slices,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn weighted_slices_sum_as_the_cpu_engine() {
    let mut r = rng();
    let n = 2_000_003usize;
    let mut xs: Vec<f64> = (0..n).map(|_| r.gen_range(-4.5f64..4.5)).collect();
    xs.extend([f64::NAN, -4.0, 4.0, f64::INFINITY]);
    let w64: Vec<f64> = (0..xs.len()).map(|_| r.gen_range(-1.0f64..3.0)).collect();
    let ints: Vec<i32> = (0..n).map(|_| r.gen_range(-100i32..60_100)).collect();
    let w32: Vec<f32> = (0..n).map(|_| r.gen_range(0.0f32..2.0)).collect();
    for choice in [
        StrategyChoice::Auto,
        sliced(None),
        sliced(Some(5)),
        sliced(Some(7)),
    ] {
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            check(
                Samples::F64(&xs),
                Some(Weights::F64(&w64)),
                BinSpec::Uniform {
                    nbins: 100_000,
                    range: Some((-4.0, 4.0)),
                },
                policy,
                choice,
                &format!("f64 samples, f64 weights, 100000 bins {choice:?} {policy:?}"),
            );
            check(
                Samples::I32(&ints),
                Some(Weights::F32(&w32)),
                BinSpec::Integer { nbins: 60_000 },
                policy,
                choice,
                &format!("i32 samples, f32 weights, 60000 bins {choice:?} {policy:?}"),
            );
        }
    }
}
