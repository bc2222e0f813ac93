//! GPU tests of the cluster_packed strategy (packed narrow counters split over a thread block
//! cluster), each forced and compared with the CPU engine on fresh random data: float32 normal
//! samples over [-4, 4] at 2^20 bins with NaN, infinities and samples outside the range, data piled
//! on a few bins (the narrow counters wrap thousands of times, through remote atomics), int32
//! uniform, both counting policies, and both of the kernels' loops (batched, and warp-aggregated).
//! They need a CUDA GPU.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogram::cuda::bench as dev;
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, WeightKind};
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice, Tallies},
    sample::Samples,
    Backend,
};

fn rng() -> Xoshiro256PlusPlus {
    // Fresh data every run: a moving failure is a race, and the seed is printed to replay it.
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// The widths and cluster sizes tried where they hold the bins (the planner's own pick too).
fn choices() -> Vec<StrategyChoice> {
    let mut v = vec![StrategyChoice::ClusterPacked {
        bits: None,
        size: None,
    }];
    for (bits, size) in [(8, 8), (8, 16), (16, 16), (16, 8), (8, 2)] {
        v.push(StrategyChoice::ClusterPacked {
            bits: Some(bits),
            size: Some(size),
        });
    }
    v
}

/// The CPU engine's counts and tallies.
fn cpu(samples: Samples<'_>, bins: &BinSpec, policy: OutOfRange) -> (Vec<u64>, Tallies) {
    let h = histogram(
        samples,
        None,
        &HistogramOptions::new(bins.clone())
            .policy(policy)
            .backend(Backend::Cpu),
    )
    .expect("cpu histogram");
    let Counts::Unweighted(c) = h.counts else {
        panic!("cpu: weighted counts without weights")
    };
    (c, h.tallies)
}

/// Runs every cluster_packed choice that holds the bins on the GPU and demands the CPU's result;
/// a choice whose counters do not fit is skipped, any other error fails. Returns how many ran.
fn check_all(samples: Samples<'_>, bins: BinSpec, policy: OutOfRange, what: &str) -> usize {
    let (want, want_tallies) = cpu(samples, &bins, policy);
    let mut ran = 0;
    for choice in choices() {
        let gpu = match histogram(
            samples,
            None,
            &HistogramOptions::new(bins.clone())
                .policy(policy)
                .backend(Backend::Cuda)
                .strategy(choice),
        ) {
            Ok(h) => h,
            Err(smemkit::Error::StrategyUnsupported { .. }) => continue,
            Err(e) => panic!("{what}: gpu {choice:?}: {e}"),
        };
        let detail = &gpu.engine.detail;
        assert!(detail.contains("clusterpacked"), "{what}: ran {detail}");
        assert_eq!(gpu.tallies, want_tallies, "{what}: tallies, {detail}");
        let Counts::Unweighted(got) = &gpu.counts else {
            panic!("{what}: weighted counts from {detail}")
        };
        if *got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
            panic!(
                "{what}: {detail}: bin {first}: gpu {} cpu {}",
                got[first], want[first]
            );
        }
        ran += 1;
    }
    ran
}

/// Standard normal float32 values (Box-Muller), with a NaN, infinities and values beyond [-4, 4]
/// sprinkled in (about one sample in 1000).
fn normals(n: usize, r: &mut impl Rng) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let u: f64 = r.gen_range(f64::MIN_POSITIVE..1.0);
            let v: f64 = r.gen();
            let x = ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32;
            match r.gen_range(0..4000) {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => x * 3.0,
                _ => x,
            }
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn normal_float32_over_a_range_at_a_million_bins() {
    let mut r = rng();
    let data = normals((1 << 26) + 12_347, &mut r);
    for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
        let bins = BinSpec::Uniform {
            nbins: 1 << 20,
            range: Some((-4.0, 4.0)),
        };
        let ran = check_all(
            Samples::F32(&data),
            bins,
            policy,
            &format!("normal {policy:?}"),
        );
        // 8x8, 8x16, 16x16 and the planner's pick hold 1M bins; 16x8 and 8x2 do not.
        assert_eq!(ran, 4, "normal {policy:?}");
    }
    // Bin counts that leave a partial last word and blocks owning no bins.
    for nbins in [1_000_003usize, 1000, 33] {
        let bins = BinSpec::Uniform {
            nbins,
            range: Some((-4.0, 4.0)),
        };
        let what = format!("normal {nbins} bins");
        assert!(check_all(Samples::F32(&data), bins, OutOfRange::Ignore, &what) >= 3);
    }
}

/// Samples piled on a few bins: every counter of those bins wraps thousands of times (2^26 samples
/// against 256 or 65536 counts), on remote words, and each block claims a hot bin.
#[test]
#[ignore = "needs a CUDA GPU"]
fn skewed_data_wraps_the_narrow_counters_exactly() {
    let mut r = rng();
    let n = (1usize << 26) + 5;
    let nbins = 1 << 20;
    // Neighbouring bins share a word (carries between them), and one bin is the last of a block's
    // slice under 8x8 (131071) so that its carry runs out of the word's top.
    let few = [0i32, 1, 2, 3, 131_071, 524_288, (nbins - 1) as i32];
    let piled: Vec<i32> = (0..n).map(|_| few[r.gen_range(0..few.len())]).collect();
    let one: Vec<i32> = vec![123_457; n];
    let hot: Vec<i32> = (0..n)
        .map(|_| {
            if r.gen_range(0..8) != 0 {
                7
            } else {
                r.gen_range(-1000..nbins as i32 + 1000)
            }
        })
        .collect();
    for (name, data) in [("few bins", &piled), ("one bin", &one), ("7/8 hot", &hot)] {
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            let bins = BinSpec::Integer { nbins };
            let what = format!("{name} {policy:?}");
            assert_eq!(
                check_all(Samples::I32(data), bins, policy, &what),
                4,
                "{what}"
            );
        }
    }
    // The float rule's loop on data piled on a few bins.
    let floats: Vec<f32> = (0..n)
        .map(|_| [-3.999f32, 0.0, 0.0001, 2.5][r.gen_range(0..4)])
        .collect();
    let bins = BinSpec::Uniform {
        nbins,
        range: Some((-4.0, 4.0)),
    };
    assert_eq!(
        check_all(Samples::F32(&floats), bins, OutOfRange::Ignore, "f32 few"),
        4
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn int32_uniform_with_out_of_range_values() {
    let mut r = rng();
    let n = (1usize << 25) + 777;
    for nbins in [1usize << 20, 2_000_000, 300_001] {
        let data: Vec<i32> = (0..n)
            .map(|_| r.gen_range(-(nbins as i32) / 8..nbins as i32 + nbins as i32 / 8))
            .collect();
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            let what = format!("int32 {nbins} {policy:?}");
            let bins = BinSpec::Integer { nbins };
            assert!(
                check_all(Samples::I32(&data), bins, policy, &what) >= 2,
                "{what}"
            );
        }
    }
}

/// The aggregated loop (the benchmark's `-agg` rows: one returning atomic per bin and warp at a
/// time, through `process`) through the prepared kernel with its aggregation flag flipped; the
/// other tests run the default, batched loop without aggregation.
#[test]
#[ignore = "needs a CUDA GPU"]
fn aggregated_loop_counts_exactly() {
    let gpu = smemkit::internals::gpu::gpu().expect("a GPU");
    let mut r = rng();
    let n = (1usize << 25) + 3;
    let nbins = 1usize << 20;
    let ints: Vec<i32> = (0..n)
        .map(|_| match r.gen_range(0..4) {
            0 => 42,
            _ => r.gen_range(-5..nbins as i32 + 5),
        })
        .collect();
    let floats: Vec<f32> = (0..n).map(|_| r.gen_range(-1.0..nbins as f32)).collect();
    let normal = normals(n, &mut r);
    let cases = [
        (Samples::I32(&ints), BinSpec::Integer { nbins }),
        (
            Samples::F32(&floats),
            BinSpec::Uniform {
                nbins,
                range: Some((0.0, nbins as f64)),
            },
        ),
        (
            Samples::F32(&normal),
            BinSpec::Uniform {
                nbins,
                range: Some((-4.0, 4.0)),
            },
        ),
    ];
    for (samples, spec) in cases {
        let binning = Binning::resolve(&spec, samples).unwrap();
        let data = dev::DeviceSamples::upload(&gpu, samples).unwrap();
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            let (want, want_tallies) = cpu(samples, &spec, policy);
            for (bits, size) in [(8, 8), (16, 16)] {
                let choice = StrategyChoice::ClusterPacked {
                    bits: Some(bits),
                    size: Some(size),
                };
                let ty = samples.sample_type();
                let counting = Counting {
                    sample_type: ty,
                    weights: WeightKind::None,
                    binning: &binning,
                    policy,
                };
                let mut engine =
                    DeviceEngine::new(&gpu, counting, choice, false, samples.len(), None).unwrap();
                assert!(!engine.aggregates(), "not aggregated by default");
                engine.flip_aggregation().unwrap();
                let out = dev::run_once(&engine, &data).unwrap();
                let what = format!("{ty} {policy:?} {}", engine.detail());
                assert_eq!(out.tallies, want_tallies, "{what}");
                assert!(
                    matches!(&out.counts, Counts::Unweighted(c) if *c == want),
                    "{what}: counts differ"
                );
            }
        }
    }
}
