//! GPU histogram tests: every strategy forced explicitly and compared with the CPU engine on fresh
//! random inputs (uniform, hot, all in one bin, out of range, NaN), every sample type, weights, both
//! counting policies, and edge sizes. They need a CUDA GPU and are ignored elsewhere; the device
//! machine runs them through `.gpu/run-tests`.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, HistogramOptions, StrategyChoice},
    sample::{Samples, Weights},
    Backend,
};

mod gpu_common;
use gpu_common::{check, f32_neighbours, rng, strategies_for};

const GPU: &str = "needs a CUDA GPU";

#[derive(Clone, Copy, Debug)]
enum Dist {
    Uniform,
    Hot,
    OneBin,
    Wide,   // a third below or above the bins
    Middle, // spread over the middle fifth of the bins: one slice of three crowded, no bin hot
    Values, // 1000 values spread over the bins: no slice crowded, no bin hot, many samples a bin
}

fn ints(n: usize, nbins: usize, dist: Dist, r: &mut impl Rng) -> Vec<i32> {
    (0..n)
        .map(|_| match dist {
            Dist::Uniform => r.gen_range(0..nbins as i32),
            Dist::Hot => {
                if r.gen_range(0..8) != 0 {
                    (7 % nbins) as i32
                } else {
                    r.gen_range(0..nbins as i32)
                }
            }
            Dist::OneBin => (nbins / 2) as i32,
            Dist::Wide => r.gen_range(-(nbins as i32) / 2..(nbins as i32) * 3 / 2),
            Dist::Middle => r.gen_range((nbins * 2 / 5) as i32..(nbins * 3 / 5) as i32),
            Dist::Values => (r.gen_range(0..1000) * (nbins / 1000)) as i32,
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_bins_every_strategy_and_bin_count() {
    let _ = GPU;
    let mut r = rng();
    for nbins in [
        1usize,
        2,
        255,
        256,
        1000,
        4097,
        32768,
        58_108,
        58_109,
        131_072,
        500_001,
        917_504,
        1 << 20,
        1 << 24,
    ] {
        for dist in [Dist::Uniform, Dist::Hot, Dist::OneBin, Dist::Wide] {
            let data = ints(1_000_003, nbins, dist, &mut r);
            for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
                for choice in strategies_for(nbins, false) {
                    check(
                        Samples::I32(&data),
                        None,
                        BinSpec::Integer { nbins },
                        policy,
                        choice,
                        &format!("{nbins} bins {dist:?} {policy:?} {choice:?}"),
                    );
                }
            }
        }
    }
}

macro_rules! typed_case {
    ($r:expr, $t:ty, $gen:expr, $spec:expr) => {{
        let data: Vec<$t> = (0..100_003).map(|_| $gen(&mut *$r)).collect();
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            for choice in [
                StrategyChoice::Shared,
                StrategyChoice::Packed(8),
                StrategyChoice::Cluster(Some(2)),
                StrategyChoice::Global,
                StrategyChoice::Exchange {
                    bits: Some(8),
                    size: Some(4),
                },
                StrategyChoice::Sliced {
                    bits: Some(8),
                    slices: Some(2),
                },
            ] {
                check(
                    Samples::from(&data[..]),
                    None,
                    $spec,
                    policy,
                    choice,
                    &format!("{} {:?} {:?}", stringify!($t), policy, choice),
                );
                let edges = BinSpec::Edges(vec![-3.0, 0.0, 0.5, 1.0, 7.25, 100.0, 1e4]);
                check(
                    Samples::from(&data[..]),
                    None,
                    edges,
                    policy,
                    choice,
                    &format!("{} edges {:?} {:?}", stringify!($t), policy, choice),
                );
            }
        }
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_sample_type_in_every_mode() {
    let mut r = rng();
    let r = &mut r;
    typed_case!(
        r,
        u8,
        |r: &mut Xoshiro256PlusPlus| r.gen::<u8>(),
        BinSpec::Integer { nbins: 200 }
    );
    typed_case!(
        r,
        u16,
        |r: &mut Xoshiro256PlusPlus| r.gen::<u16>(),
        BinSpec::Integer { nbins: 40_000 }
    );
    typed_case!(
        r,
        u32,
        |r: &mut Xoshiro256PlusPlus| r.gen_range(0u32..5000),
        BinSpec::Integer { nbins: 4096 }
    );
    typed_case!(
        r,
        u64,
        |r: &mut Xoshiro256PlusPlus| r.gen_range(0u64..5000),
        BinSpec::Integer { nbins: 4096 }
    );
    typed_case!(
        r,
        i8,
        |r: &mut Xoshiro256PlusPlus| r.gen::<i8>(),
        BinSpec::Integer { nbins: 100 }
    );
    typed_case!(
        r,
        i16,
        |r: &mut Xoshiro256PlusPlus| r.gen::<i16>(),
        BinSpec::Integer { nbins: 20_000 }
    );
    typed_case!(
        r,
        i64,
        |r: &mut Xoshiro256PlusPlus| r.gen_range(-100i64..5000),
        BinSpec::Integer { nbins: 4096 }
    );
    typed_case!(
        r,
        i32,
        |r: &mut Xoshiro256PlusPlus| r.gen_range(-100i32..5000),
        BinSpec::Uniform {
            nbins: 777,
            range: Some((-50.0, 4000.5))
        }
    );
    typed_case!(
        r,
        i16,
        |r: &mut Xoshiro256PlusPlus| r.gen::<i16>(),
        BinSpec::Uniform {
            nbins: 1000,
            range: None
        }
    );
    // Floats with NaN, infinities, values on and next to edges, automatic and explicit ranges.
    let f32gen = |r: &mut Xoshiro256PlusPlus| match r.gen_range(0..20) {
        0 => f32::NAN,
        1 => f32::INFINITY,
        2 => f32::NEG_INFINITY,
        3 => r.gen_range(0..=100) as f32 * 0.1,
        4 => f32::from_bits(
            (r.gen_range(0..=100) as f32 * 0.1)
                .to_bits()
                .wrapping_add(r.gen_range(0..3))
                .wrapping_sub(1),
        ),
        _ => r.gen_range(-1.0f32..11.0),
    };
    typed_case!(
        r,
        f32,
        f32gen,
        BinSpec::Uniform {
            nbins: 100,
            range: Some((0.0, 10.0))
        }
    );
    typed_case!(
        r,
        f32,
        f32gen,
        BinSpec::Uniform {
            nbins: 3,
            range: Some((0.1, 0.7))
        }
    );
    let f64gen = |r: &mut Xoshiro256PlusPlus| match r.gen_range(0..20) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        3 => r.gen_range(0..=100) as f64 * 0.1,
        4 => f64::from_bits(
            (r.gen_range(0..=100) as f64 * 0.1)
                .to_bits()
                .wrapping_add(r.gen_range(0..3))
                .wrapping_sub(1),
        ),
        _ => r.gen_range(-1.0f64..11.0),
    };
    typed_case!(
        r,
        f64,
        f64gen,
        BinSpec::Uniform {
            nbins: 100,
            range: Some((0.0, 10.0))
        }
    );
    typed_case!(
        r,
        f64,
        f64gen,
        BinSpec::Uniform {
            nbins: 50_000,
            range: Some((-0.0, 10.0))
        }
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_automatic_range_matches_numpy_rule() {
    let mut r = rng();
    for nbins in [1usize, 10, 1000, 50_000, 300_000] {
        let data: Vec<f32> = (0..200_001).map(|_| r.gen_range(-3.7f32..1234.5)).collect();
        let data64: Vec<f64> = data.iter().map(|&x| x as f64 * 1.000001).collect();
        for choice in strategies_for(nbins, false) {
            check(
                Samples::F32(&data),
                None,
                BinSpec::Uniform { nbins, range: None },
                OutOfRange::Ignore,
                choice,
                &format!("f32 auto {nbins} {choice:?}"),
            );
            check(
                Samples::F64(&data64),
                None,
                BinSpec::Uniform { nbins, range: None },
                OutOfRange::Ignore,
                choice,
                &format!("f64 auto {nbins} {choice:?}"),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn weights_f32_and_f64() {
    let mut r = rng();
    for nbins in [64usize, 30_000, 200_000] {
        let data: Vec<f32> = (0..300_007)
            .map(|_| r.gen_range(-1.0f32..(nbins as f32 + 1.0)))
            .collect();
        let w32: Vec<f32> = (0..data.len()).map(|_| r.gen_range(-2.0f32..5.0)).collect();
        let w64: Vec<f64> = w32.iter().map(|&w| w as f64 * 1.5).collect();
        for choice in strategies_for(nbins, true) {
            for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
                let spec = BinSpec::Uniform {
                    nbins,
                    range: Some((0.0, nbins as f64)),
                };
                check(
                    Samples::F32(&data),
                    Some(Weights::F32(&w32)),
                    spec.clone(),
                    policy,
                    choice,
                    &format!("w32 {nbins} {choice:?}"),
                );
                check(
                    Samples::F32(&data),
                    Some(Weights::F64(&w64)),
                    spec,
                    policy,
                    choice,
                    &format!("w64 {nbins} {choice:?}"),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn edge_sizes() {
    let mut r = rng();
    for n in [0usize, 1, 2, 15, 16, 17, 511, 513, 1_000_003] {
        let data = ints(n, 300, Dist::Wide, &mut r);
        for choice in strategies_for(300, false) {
            check(
                Samples::I32(&data),
                None,
                BinSpec::Integer { nbins: 300 },
                OutOfRange::Ignore,
                choice,
                &format!("n={n} {choice:?}"),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn error_policy_reports_what_fell_outside() {
    let data = [0i32, 5, 99, -1];
    let o = HistogramOptions::new(BinSpec::Integer { nbins: 10 })
        .policy(OutOfRange::Error)
        .backend(Backend::Cuda);
    match histogram(Samples::I32(&data), None, &o) {
        Err(smemkit::Error::OutOfRange {
            below: 1,
            above: 1,
            nan: 0,
        }) => {}
        other => panic!("expected an out-of-range error, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_inputs_2_to_the_28_and_beyond_2_to_the_31() {
    let mut r = rng();
    let n = 1usize << 28;
    let data: Vec<i32> = (0..n)
        .map(|i| {
            if i % 8 == 0 {
                r.gen_range(0..4096)
            } else {
                (i % 4096) as i32
            }
        })
        .collect();
    check(
        Samples::I32(&data),
        None,
        BinSpec::Integer { nbins: 4096 },
        OutOfRange::Ignore,
        StrategyChoice::Auto,
        "2^28 i32",
    );
    drop(data);
    let n = (1usize << 31) + 12_345;
    let bytes: Vec<u8> = (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    for choice in [StrategyChoice::Shared, StrategyChoice::Global] {
        check(
            Samples::U8(&bytes),
            None,
            BinSpec::Integer { nbins: 256 },
            OutOfRange::Ignore,
            choice,
            &format!("2^31+ u8 {choice:?}"),
        );
    }
    let gpu = histogram(
        Samples::U8(&bytes),
        None,
        &HistogramOptions::new(BinSpec::Integer { nbins: 256 }).backend(Backend::Cuda),
    )
    .unwrap();
    assert_eq!(gpu.counted(), n as u64, "every byte counted");
}

/// `auto` beyond one block of 8-bit counters probes the data before its plan (slices of 8- or 4-bit
/// counters, the partition passes): hot data (7 of 8 samples in one bin) goes to the global
/// kernel, uniform data stays on the plan, and either way the result is the CPU engine's. Inputs
/// shorter than the probe's minimum are not probed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_probes_skew_beyond_one_block() {
    let mut r = rng();
    let n = smemkit::internals::histogram::plan::SKEW_PROBE_MIN_SAMPLES + 12_345;
    for (nbins, dist, want) in [
        // One block of 8-bit counters per SM beats global at every skew: no probe.
        (131_072, Dist::Hot, "shared8"),
        (131_072, Dist::Uniform, "shared8"),
        (262_144, Dist::Hot, "-> global"),
        (262_144, Dist::Uniform, "-> sliced8x2"),
        (1 << 20, Dist::Hot, "-> global"),
        (1 << 20, Dist::Uniform, "-> sliced4x3"),
        // One slice crowded, no bin hot, all in the middle fifth: one spill window holds them.
        (1 << 20, Dist::Middle, "-> spill"),
        // Many samples a bin (pairs of probes in one bin), spread over every slice: the same.
        (1 << 20, Dist::Values, "-> sliced8x5"),
        // Two slices of 4-bit counters: the middle fifth is split between them, but its many
        // pairs of probes in one bin call for slices of 8-bit counters.
        (524_288, Dist::Middle, "-> sliced8x3"),
        (1 << 24, Dist::Hot, "-> global"),
        (1 << 24, Dist::Uniform, "-> partition"),
    ] {
        let data = ints(n, nbins, dist, &mut r);
        let bins = BinSpec::Integer { nbins };
        let what = format!("{nbins} bins {dist:?}");
        check(
            Samples::I32(&data),
            None,
            bins.clone(),
            OutOfRange::Ignore,
            StrategyChoice::Auto,
            &what,
        );
        let gpu = histogram(
            Samples::I32(&data),
            None,
            &HistogramOptions::new(bins).backend(Backend::Cuda),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            gpu.engine.detail.contains(want),
            "{what}: {}",
            gpu.engine.detail
        );
    }
    // Below the minimum: planned, not probed.
    let short = ints(1000, 262_144, Dist::Hot, &mut r);
    let gpu = histogram(
        Samples::I32(&short),
        None,
        &HistogramOptions::new(BinSpec::Integer { nbins: 262_144 }).backend(Backend::Cuda),
    )
    .unwrap();
    assert!(
        !gpu.engine.detail.contains("last probe"),
        "{}",
        gpu.engine.detail
    );
}

/// A small run of every strategy and mode, sized for compute-sanitizer (memcheck, racecheck,
/// synccheck) on the device.
#[test]
#[ignore = "needs a CUDA GPU"]
fn small_run_for_sanitizers() {
    let mut r = rng();
    let data = ints(20_011, 3000, Dist::Wide, &mut r);
    let floats: Vec<f32> = data.iter().map(|&x| x as f32 * 0.37).collect();
    let w: Vec<f32> = (0..data.len()).map(|_| r.gen_range(0.0f32..2.0)).collect();
    for choice in [
        StrategyChoice::Shared,
        StrategyChoice::Packed(16),
        StrategyChoice::Packed(8),
        StrategyChoice::Cluster(Some(2)),
        StrategyChoice::Cluster(Some(16)),
        StrategyChoice::Global,
        StrategyChoice::Partition,
        StrategyChoice::Exchange {
            bits: None,
            size: None,
        },
        StrategyChoice::Exchange {
            bits: Some(8),
            size: Some(16),
        },
        StrategyChoice::Sliced {
            bits: Some(8),
            slices: Some(5),
        },
        StrategyChoice::Sliced {
            bits: Some(4),
            slices: Some(3),
        },
        StrategyChoice::Packed(4),
        StrategyChoice::Spill(Some(8)),
        StrategyChoice::Spill(Some(4)),
        StrategyChoice::Spill(None),
    ] {
        check(
            Samples::I32(&data),
            None,
            BinSpec::Integer { nbins: 3000 },
            OutOfRange::Clamp,
            choice,
            "sanitizer ints",
        );
        check(
            Samples::F32(&floats),
            None,
            BinSpec::Uniform {
                nbins: 3000,
                range: None,
            },
            OutOfRange::Ignore,
            choice,
            "sanitizer floats",
        );
        // Float32 bins from 0 of a power-of-two width: the uniform32x kernels.
        check(
            Samples::F32(&floats),
            None,
            BinSpec::Uniform {
                nbins: 4096,
                range: Some((0.0, 1024.0)),
            },
            OutOfRange::Clamp,
            choice,
            "sanitizer floats, power-of-two bins",
        );
        // Partition, exchange and the narrow counters count samples only.
        if !matches!(
            choice,
            StrategyChoice::Partition
                | StrategyChoice::Packed(_)
                | StrategyChoice::Exchange { .. }
                | StrategyChoice::Sliced { .. }
                | StrategyChoice::Spill(_)
        ) {
            check(
                Samples::F32(&floats),
                Some(Weights::F32(&w)),
                BinSpec::Edges(vec![-5.0, 0.0, 1.0, 100.0, 1000.0]),
                OutOfRange::Ignore,
                choice,
                "sanitizer edges",
            );
        }
    }
    // 8-bit and 4-bit counters that wrap (a few hundred samples per bin in each block), carries
    // included.
    for dist in [Dist::Uniform, Dist::Hot] {
        let few = ints(40_009, 3, dist, &mut r);
        for bits in [8, 4] {
            check(
                Samples::I32(&few),
                None,
                BinSpec::Integer { nbins: 3 },
                OutOfRange::Ignore,
                StrategyChoice::Packed(bits),
                "sanitizer narrow counter wraps",
            );
        }
    }
    // The prefetching builds: one block of 1024 threads per SM (98304 bins of narrow counters,
    // 40000 of u32), enough samples for their loops to carry loads across iterations.
    let long = ints(1 << 21, 98_304, Dist::Hot, &mut r);
    for bits in [16u32, 8] {
        check(
            Samples::I32(&long),
            None,
            BinSpec::Integer { nbins: 98_304 },
            OutOfRange::Ignore,
            StrategyChoice::Packed(bits),
            "sanitizer prefetching build",
        );
    }
    check(
        Samples::I32(&long),
        None,
        BinSpec::Integer { nbins: 40_000 },
        OutOfRange::Clamp,
        StrategyChoice::Shared,
        "sanitizer prefetching build, u32",
    );
    // Several partition buckets, a cluster holding many bins per block, and exchange inboxes that
    // overflow into remote atomics (hot data) over several phases.
    let wide = ints(1 << 20, 100_000, Dist::Hot, &mut r);
    for choice in [
        StrategyChoice::Partition,
        StrategyChoice::Cluster(Some(2)),
        StrategyChoice::Exchange {
            bits: Some(8),
            size: Some(8),
        },
        StrategyChoice::Sliced {
            bits: Some(8),
            slices: Some(4),
        },
        StrategyChoice::Sliced {
            bits: Some(4),
            slices: Some(2),
        },
        StrategyChoice::Spill(Some(8)),
        StrategyChoice::Spill(Some(4)),
        StrategyChoice::Spill(None),
    ] {
        check(
            Samples::I32(&wide),
            None,
            BinSpec::Integer { nbins: 100_000 },
            OutOfRange::Ignore,
            choice,
            "sanitizer wide",
        );
    }
    // A spill window smaller than the bins: its placement, the spilled samples and the flush.
    for dist in [Dist::Middle, Dist::Hot, Dist::Wide] {
        let data = ints(1 << 20, 600_000, dist, &mut r);
        for bits in [Some(8), Some(4), None] {
            check(
                Samples::I32(&data),
                None,
                BinSpec::Integer { nbins: 600_000 },
                OutOfRange::Ignore,
                StrategyChoice::Spill(bits),
                "sanitizer spill",
            );
        }
    }
}

/// The next float32 above and below `x` (for the samples around each edge).
/// Float32 bins on a grid of a power-of-two width skip numpy's correction (the host proves every
/// edge exact): samples on the edges and one ulp either side, signed zeros and subnormals, the upper
/// edge, NaN, infinities and values beyond the range, grids from 0 and across it (widths 1, 1/4, 2,
/// 2^-14 and 2^-17), every strategy that holds the bins.
#[test]
#[ignore = "needs a CUDA GPU"]
fn float_power_of_two_bins_match_numpy() {
    let mut r = rng();
    for (nbins, lo, hi) in [
        (256usize, 0.0f64, 256.0f64),
        (4096, 0.0, 1024.0),
        (100_000, 0.0, 100_000.0),
        (1 << 20, 0.0, (1u64 << 21) as f64),
        (1 << 17, -4.0, 4.0),
        (1 << 20, -4.0, 4.0),
        (256, -256.0, 0.0),
    ] {
        let width = ((hi - lo) / nbins as f64) as f32;
        let (bottom, top) = (lo as f32, hi as f32);
        let span = top - bottom;
        let mut data: Vec<f32> = (0..200_003)
            .map(|_| r.gen_range(bottom - 0.1 * span..top + 0.1 * span))
            .collect();
        for i in (0..=nbins).step_by((nbins / 4096).max(1)) {
            let e = bottom + i as f32 * width;
            data.push(e);
            data.extend(f32_neighbours(e));
        }
        let tiny = f32::from_bits(1);
        data.extend([
            0.0,
            -0.0,
            tiny,
            -tiny,
            bottom,
            top,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            for choice in strategies_for(nbins, false) {
                check(
                    Samples::F32(&data),
                    None,
                    BinSpec::Uniform {
                        nbins,
                        range: Some((lo, hi)),
                    },
                    policy,
                    choice,
                    &format!(
                        "f32 power-of-two grid {nbins} over [{lo}, {hi}] {policy:?} {choice:?}"
                    ),
                );
            }
        }
    }
}

/// The same for float64 samples (the `uniform64x` kernels): the edges and one ulp either side,
/// signed zeros and subnormals, NaN, infinities and values beyond the range, grids from 0 and across
/// it, every strategy that holds the bins, against the CPU engine (numpy's rule).
#[test]
#[ignore = "needs a CUDA GPU"]
fn float64_power_of_two_bins_match_numpy() {
    let mut r = rng();
    for (nbins, lo, hi) in [
        (256usize, 0.0f64, 256.0f64),
        (4096, 0.0, 1024.0),
        (1 << 17, -4.0, 4.0),
        (1 << 18, -4.0, 4.0),
        (1 << 20, -4.0, 4.0),
        (256, -256.0, 0.0),
        (4, 0.5, 1.5),
        // From 0 with a width above 1: a tiny negative sample scales to -0.
        (1 << 20, 0.0, (1u64 << 21) as f64),
    ] {
        let width = (hi - lo) / nbins as f64;
        let span = hi - lo;
        let mut data: Vec<f64> = (0..200_003)
            .map(|_| r.gen_range(lo - 0.1 * span..hi + 0.1 * span))
            .collect();
        for i in (0..=nbins).step_by((nbins / 4096).max(1)) {
            let e = lo + i as f64 * width;
            data.push(e);
            data.extend(gpu_common::f64_neighbours(e));
        }
        let tiny = f64::from_bits(1);
        data.extend([
            0.0,
            -0.0,
            tiny,
            -tiny,
            lo,
            hi,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]);
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            for choice in strategies_for(nbins, false) {
                check(
                    Samples::F64(&data),
                    None,
                    BinSpec::Uniform {
                        nbins,
                        range: Some((lo, hi)),
                    },
                    policy,
                    choice,
                    &format!(
                        "f64 power-of-two grid {nbins} over [{lo}, {hi}] {policy:?} {choice:?}"
                    ),
                );
            }
        }
    }
}

/// The exchange strategy on inputs long enough for many phases and 8-bit counters that wrap in
/// every block: uniform data (the inboxes), hot data and a single bin (inboxes that overflow into
/// remote atomics on the owner's counters, whose wraps are corrected from the sending block),
/// clamped data, a length that ends inside a tile, every width and cluster size that holds the bins.
#[test]
#[ignore = "needs a CUDA GPU"]
fn exchange_counts_exactly() {
    let mut r = rng();
    let n = (1usize << 25) + 12_347;
    for (nbins, dist, policy) in [
        (1usize << 20, Dist::Uniform, OutOfRange::Ignore),
        (1 << 20, Dist::Hot, OutOfRange::Ignore),
        (1 << 20, Dist::Wide, OutOfRange::Clamp),
        (1_000_003, Dist::Uniform, OutOfRange::Ignore),
        (3, Dist::Uniform, OutOfRange::Ignore),
        (300_001, Dist::OneBin, OutOfRange::Ignore),
        (2_000_000, Dist::Uniform, OutOfRange::Clamp),
    ] {
        let data = ints(n, nbins, dist, &mut r);
        for (bits, size) in [(8u32, 8u32), (8, 16), (16, 16), (16, 4), (8, 2)] {
            let choice = StrategyChoice::Exchange {
                bits: Some(bits),
                size: Some(size),
            };
            let fits = smemkit::internals::histogram::plan::exchange_inbox(
                nbins,
                smemkit::sample::SampleType::I32,
                size,
                bits,
                &smemkit::internals::histogram::plan::DeviceLimits::H100,
            )
            .is_some();
            if fits {
                check(
                    Samples::I32(&data),
                    None,
                    BinSpec::Integer { nbins },
                    policy,
                    choice,
                    &format!("exchange {nbins} bins {dist:?} {policy:?} {choice:?}"),
                );
            }
        }
    }
}

/// The narrow counters of `shared16` and `shared8` wrap many times in every block here (tens of
/// thousands of samples per bin per block, against 65536 and 256): every wrap and every carry into
/// the next counter of the word must be undone exactly. Few bins (odd counts leave unused counters
/// in the last word, which carries must not reach the result through), one bin, hot data, clamped
/// data, and the bin counts `auto` gives narrow counters.
#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_counters_wrap_exactly() {
    let mut r = rng();
    let n = (1usize << 27) + 12_345;
    for (nbins, dist, policy) in [
        (1usize, Dist::OneBin, OutOfRange::Ignore),
        (2, Dist::Uniform, OutOfRange::Ignore),
        (3, Dist::Uniform, OutOfRange::Ignore),
        (5, Dist::Hot, OutOfRange::Ignore),
        (6, Dist::Wide, OutOfRange::Clamp),
        (32_768, Dist::Hot, OutOfRange::Ignore),
        (131_071, Dist::Hot, OutOfRange::Clamp),
    ] {
        let data = ints(n, nbins, dist, &mut r);
        for bits in [16u32, 8, 4] {
            if smemkit::internals::histogram::plan::packed_bytes(nbins, bits)
                > 232_448 - smemkit::internals::histogram::plan::STATIC_SHARED_RESERVE
            {
                continue;
            }
            check(
                Samples::I32(&data),
                None,
                BinSpec::Integer { nbins },
                policy,
                StrategyChoice::Packed(bits),
                &format!("{bits}-bit counters, {nbins} bins {dist:?} {policy:?}"),
            );
        }
    }
    // The prefetching build (one block of 1024 threads, or two of 512, per SM) with wraps: samples
    // in 5 of 98304 bins, so that ~200000 counts per bin and block wrap both widths many times.
    let few = ints(n, 5, Dist::Uniform, &mut r);
    for bits in [16u32, 8, 4] {
        check(
            Samples::I32(&few),
            None,
            BinSpec::Integer { nbins: 98_304 },
            OutOfRange::Ignore,
            StrategyChoice::Packed(bits),
            &format!("{bits}-bit counters, 5 of 98304 bins"),
        );
    }
    // Slices of narrow counters on hot data: the hot bin's slice wraps its counter and claims it.
    let hot = ints(n, 400_000, Dist::Hot, &mut r);
    for (bits, slices) in [(8, 2), (4, 3)] {
        check(
            Samples::I32(&hot),
            None,
            BinSpec::Integer { nbins: 400_000 },
            OutOfRange::Clamp,
            StrategyChoice::Sliced {
                bits: Some(bits),
                slices: Some(slices),
            },
            &format!("sliced {bits}-bit counters in {slices} slices, hot"),
        );
    }
}
