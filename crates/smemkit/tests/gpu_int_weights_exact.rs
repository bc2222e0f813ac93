//! Integer weights summed as exact 64-bit integers on the GPU (the int64 weight kind, narrower
//! types widened on the device): the same sums, bit for bit, as the CPU engine (which
//! tests/int_weights_exact.rs checks against i128 sums) on fresh random inputs with weights near
//! ±2^62, whose sums float64 cannot hold, over integer bins, uniform bins and explicit edges,
//! under `auto` and every strategy forced; the device API with int64 weights in device memory;
//! the float64 paths' refusal beyond 2^53. They need a CUDA GPU and are ignored elsewhere.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec, DeviceWeights, WeightKind},
    histogram::{histogram, Counts, Histogram, HistogramOptions, StrategyChoice, StreamMode},
    sample::{IntWeights, SampleType, Samples, Weights},
    Backend,
};

const GPU: &str = "needs a CUDA GPU";

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Weights near ±2^62, a few near the ends of int64: any bin's sum wraps past 2^63 many times.
fn big_weights(n: usize, r: &mut impl Rng) -> Vec<i64> {
    (0..n)
        .map(|_| {
            let small: i64 = r.gen_range(-(1 << 20)..(1 << 20));
            match r.gen_range(0..8) {
                0 => i64::MAX - small.abs(),
                1 => i64::MIN + small.abs(),
                k if k % 2 == 0 => (1i64 << 62) + small,
                _ => -(1i64 << 62) + small,
            }
        })
        .collect()
}

/// float32 samples over [-0.1, 1.1) (out of range at both ends of bins over [0, 1)), some NaN.
fn floats(n: usize, r: &mut impl Rng) -> Vec<f32> {
    (0..n)
        .map(|_| {
            if r.gen::<f64>() < 0.01 {
                f32::NAN
            } else {
                r.gen_range(-0.1f32..1.1)
            }
        })
        .collect()
}

/// int32 samples in [-50, nbins + 50), a tenth of them hot in bin 3 (skew for the probe).
fn ints(n: usize, nbins: usize, r: &mut impl Rng) -> Vec<i32> {
    (0..n)
        .map(|_| {
            if r.gen::<f64>() < 0.1 {
                3 % nbins as i32
            } else {
                r.gen_range(-50..nbins as i32 + 50)
            }
        })
        .collect()
}

fn run(
    samples: Samples<'_>,
    w: IntWeights<'_>,
    options: &HistogramOptions,
    backend: Backend,
) -> smemkit::Result<Histogram> {
    histogram(
        samples,
        Some(Weights::Int(w)),
        &options.clone().backend(backend).stream(StreamMode::Never),
    )
}

/// The GPU's sums and tallies equal the CPU engine's, of the weights' type; returns the plan.
fn same_as_cpu(
    samples: Samples<'_>,
    w: IntWeights<'_>,
    options: &HistogramOptions,
    what: &str,
) -> String {
    let cpu = run(samples, w, options, Backend::Cpu).unwrap_or_else(|e| panic!("{what}: cpu: {e}"));
    let gpu =
        run(samples, w, options, Backend::Cuda).unwrap_or_else(|e| panic!("{what}: gpu: {e}"));
    assert!(
        matches!(&gpu.counts, Counts::Integer { dtype, .. } if *dtype == w.int_type()),
        "{what}: {:?}",
        gpu.counts.len()
    );
    assert!(gpu.counts == cpu.counts, "{what}: the sums differ");
    assert_eq!(gpu.tallies, cpu.tallies, "{what}");
    // Integer atomics give the same bits on every run.
    let again = run(samples, w, options, Backend::Cuda).unwrap();
    assert!(again.counts == gpu.counts, "{what}: a second run differs");
    gpu.engine.detail
}

/// The strategies a caller can force; those that count samples only refuse weights.
fn choices() -> Vec<(StrategyChoice, Option<&'static str>)> {
    vec![
        (StrategyChoice::Auto, None),
        (StrategyChoice::Shared, Some("shared")),
        (StrategyChoice::Cluster(None), Some("cluster")),
        (StrategyChoice::Cluster(Some(2)), Some("cluster2")),
        (StrategyChoice::Global, Some("global")),
        (StrategyChoice::Packed(16), None),
        // Weighted plans slice as 64-bit sums (u64 for integer weights).
        (
            StrategyChoice::Sliced {
                bits: None,
                slices: None,
            },
            Some("sliced64"),
        ),
        (StrategyChoice::Partition, None),
        (
            StrategyChoice::Exchange {
                bits: None,
                size: None,
            },
            None,
        ),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn int64_weights_near_2_62_match_the_cpu_under_every_strategy() {
    let _ = GPU;
    let mut r = rng();
    let n = 3_000_017;
    let w = big_weights(n, &mut r);
    let fs = floats(n, &mut r);
    let mut auto_plans = Vec::new();
    for nbins in [100usize, 20_000, 200_000, 2_000_000] {
        let xs = ints(n, nbins, &mut r);
        let edges: Vec<f64> = (0..=nbins.min(100_000))
            .map(|k| k as f64 / nbins.min(100_000) as f64)
            .collect();
        let cases: Vec<(Samples, BinSpec, &str)> = vec![
            (
                Samples::F32(&fs),
                BinSpec::Uniform {
                    nbins,
                    range: Some((0.0, 1.0)),
                },
                "float32 uniform",
            ),
            (
                Samples::I32(&xs),
                BinSpec::Integer { nbins },
                "int32 integer",
            ),
            (Samples::F32(&fs), BinSpec::Edges(edges), "float32 edges"),
        ];
        for (samples, spec, name) in cases {
            for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
                for (choice, expect) in choices() {
                    let options = HistogramOptions::new(spec.clone())
                        .policy(policy)
                        .strategy(choice);
                    let what = format!("{name}, {nbins} bins, {policy:?}, {choice:?}");
                    let gpu = run(samples, IntWeights::I64(&w), &options, Backend::Cuda);
                    match (expect, choice) {
                        (None, StrategyChoice::Auto) => {
                            let plan = same_as_cpu(samples, IntWeights::I64(&w), &options, &what);
                            auto_plans.push(format!("{what}: {plan}"));
                        }
                        (None, _) => {
                            // Counts-only strategies refuse weights, as they do float weights.
                            let e = gpu.expect_err(&what).to_string();
                            assert!(e.contains("weight"), "{what}: {e}");
                        }
                        (Some(strategy), _) => match gpu {
                            Ok(_) => {
                                let plan =
                                    same_as_cpu(samples, IntWeights::I64(&w), &options, &what);
                                assert!(plan.contains(strategy), "{what}: ran {plan}");
                            }
                            // A forced plan may not fit (shared at 2M bins): refused with the
                            // reason, never a wrong answer.
                            Err(e) => eprintln!("{what}: refused: {e}"),
                        },
                    }
                }
            }
        }
    }
    for p in &auto_plans {
        eprintln!("auto: {p}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_integer_type_is_widened_on_the_device() {
    let mut r = rng();
    let n = 2_000_003;
    let fs = floats(n, &mut r);
    let raw: Vec<u64> = (0..n).map(|_| r.gen()).collect();
    let u64w = raw.clone();
    let i32w: Vec<i32> = raw.iter().map(|&v| v as i32).collect();
    let u32w: Vec<u32> = raw.iter().map(|&v| (v >> 9) as u32).collect();
    let i16w: Vec<i16> = raw.iter().map(|&v| v as i16).collect();
    let u16w: Vec<u16> = raw.iter().map(|&v| (v >> 20) as u16).collect();
    let i8w: Vec<i8> = raw.iter().map(|&v| (v >> 3) as i8).collect();
    let u8w: Vec<u8> = raw.iter().map(|&v| (v >> 13) as u8).collect();
    let bw: Vec<bool> = raw.iter().map(|&v| v >> 63 == 1).collect();
    let edges: Vec<f64> = (0..=777).map(|k| k as f64 / 777.0).collect();
    let uniform = BinSpec::Uniform {
        nbins: 4096,
        range: Some((0.0, 1.0)),
    };
    for (w, bins) in [
        (
            IntWeights::U64(&u64w),
            vec![uniform.clone(), BinSpec::Edges(edges.clone())],
        ),
        (IntWeights::I32(&i32w), vec![BinSpec::Edges(edges.clone())]),
        (
            IntWeights::U32(&u32w),
            vec![uniform.clone(), BinSpec::Edges(edges.clone())],
        ),
        (
            IntWeights::I16(&i16w),
            vec![uniform.clone(), BinSpec::Edges(edges.clone())],
        ),
        (IntWeights::U16(&u16w), vec![BinSpec::Edges(edges.clone())]),
        (
            IntWeights::I8(&i8w),
            vec![uniform.clone(), BinSpec::Edges(edges.clone())],
        ),
        (
            IntWeights::U8(&u8w),
            vec![uniform.clone(), BinSpec::Edges(edges.clone())],
        ),
        (IntWeights::Bool(&bw), vec![uniform.clone()]),
    ] {
        for spec in bins {
            let what = format!("{} weights, {spec:?}", w.int_type());
            let what = &what[..what.len().min(80)];
            same_as_cpu(Samples::F32(&fs), w, &HistogramOptions::new(spec), what);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_int64_weights_match_the_cpu() {
    let mut r = rng();
    let gpu = smemkit::gpu().expect("a CUDA GPU");
    let stream = gpu.ctx.new_stream().unwrap();
    let n = 1_500_001;
    let fs = floats(n, &mut r);
    let w = big_weights(n, &mut r);
    let (dx, dw) = (
        stream.clone_htod(&fs).unwrap(),
        stream.clone_htod(&w).unwrap(),
    );
    for nbins in [1000usize, 300_000] {
        let bins = BinSpec::Uniform {
            nbins,
            range: Some((0.0, 1.0)),
        };
        let want = histogram(
            Samples::F32(&fs),
            Some(Weights::Int(IntWeights::I64(&w))),
            &HistogramOptions::new(bins.clone()).backend(Backend::Cpu),
        )
        .unwrap();
        for strategy in [
            StrategyChoice::Auto,
            StrategyChoice::Shared,
            StrategyChoice::Cluster(None),
            StrategyChoice::Global,
        ] {
            for deterministic in [false, true] {
                let spec = DeviceHistogramSpec::new(SampleType::F32, bins.clone())
                    .weights(WeightKind::I64)
                    .strategy(strategy)
                    .deterministic(deterministic)
                    .max_samples(n);
                let what = format!("{nbins} bins, {strategy:?}, deterministic {deterministic}");
                let h = match DeviceHistogram::new(&gpu, &spec) {
                    Ok(h) => h,
                    Err(e) => {
                        eprintln!("{what}: refused: {e}");
                        continue;
                    }
                };
                let mut out = h.output().unwrap();
                let (vx, vw) = (dx.as_view(), dw.as_view());
                h.run(&vx, Some(DeviceWeights::I64(&vw)), &mut out, &stream)
                    .unwrap();
                let (counts, tallies) = out.read(&stream).unwrap();
                assert!(counts == want.counts, "{what}: the sums differ");
                assert_eq!(tallies, want.tallies, "{what}");
            }
        }
    }
}

/// Streamed inputs sum integer weights widened to float64: exact below 2^53, refused above.
#[test]
#[ignore = "needs a CUDA GPU"]
fn streamed_inputs_refuse_sums_beyond_2_53() {
    let mut r = rng();
    let n = 100_000;
    let fs = floats(n, &mut r);
    let w = big_weights(n, &mut r);
    let options = HistogramOptions::new(BinSpec::Uniform {
        nbins: 100,
        range: Some((0.0, 1.0)),
    })
    .backend(Backend::Cuda)
    .stream(StreamMode::Always);
    let e = histogram(
        Samples::F32(&fs),
        Some(Weights::Int(IntWeights::I64(&w))),
        &options,
    )
    .unwrap_err();
    assert!(e.to_string().contains("2^53"), "{e}");
}
