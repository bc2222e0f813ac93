//! GPU tests of several GPUs in one process (NCCL): shards that split nothing evenly, a shard of 0
//! samples on the GPU that holds the result, every strategy, weights (f64 sums and tallies reduced),
//! the public entry with `devices`, and device-resident shards; each result equal to the CPU
//! engine's. They need at least two GPUs and a build with `--features nccl`, and say so and pass
//! when either is missing (the device kind is `nvidia-h200-x2`). The two-process tests live in
//! crates/smemkit-cli/tests/gpu_ranks.rs.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogram::cuda::multi::{self, open, MultiPrepared};
use smemkit::internals::histogram::cuda::prepared::{EngineOutput, WeightKind};
use smemkit::internals::histogram::cuda::stream::StreamOptions;
use smemkit::internals::histogram::job::Job;
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::{histogram, Counts, DeviceSet, HistogramOptions, StrategyChoice},
    sample::{SampleType, Samples, Weights},
    Backend,
};

/// Tests of this file run one at a time: collectives of several communicators over the same GPUs,
/// enqueued by concurrent tests in one process, can wait on each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Two or more GPUs and NCCL (and this file's lock), or `None` after saying what is missing.
fn gpus() -> Option<(Vec<usize>, std::sync::MutexGuard<'static, ()>)> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cfg!(feature = "nccl") {
        eprintln!("SKIPPED: built without the nccl feature (cargo test --features nccl)");
        return None;
    }
    match smemkit::internals::gpu::device_count() {
        Ok(n) if n >= 2 => Some(((0..n).collect(), guard)),
        Ok(n) => {
            eprintln!("SKIPPED: {n} GPU(s); these tests need at least 2");
            None
        }
        Err(e) => {
            eprintln!("SKIPPED: no CUDA: {e}");
            None
        }
    }
}

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

fn cpu(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    spec: &BinSpec,
) -> smemkit::histogram::Histogram {
    histogram(
        samples,
        weights,
        &HistogramOptions::new(spec.clone()).backend(Backend::Cpu),
    )
    .expect("cpu")
}

fn same(got: &EngineOutput, want: &smemkit::histogram::Histogram, what: &str) {
    assert_eq!(
        got.tallies, want.tallies,
        "{what}: tallies ({})",
        got.detail
    );
    match (&got.counts, &want.counts) {
        (Counts::Unweighted(g), Counts::Unweighted(c)) => {
            assert_eq!(g.len(), c.len(), "{what}: bins");
            if let Some(i) = g.iter().zip(c).position(|(a, b)| a != b) {
                panic!(
                    "{what}: bin {i}: gpus {} cpu {} ({})",
                    g[i], c[i], got.detail
                );
            }
        }
        (Counts::Weighted(g), Counts::Weighted(c)) => {
            assert_eq!(g.len(), c.len(), "{what}: bins");
            for (i, (a, b)) in g.iter().zip(c).enumerate() {
                // Sums of different groupings: equal to rounding.
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{what}: bin {i}: gpus {a} cpu {b} ({})",
                    got.detail
                );
            }
        }
        _ => panic!("{what}: weighted and unweighted results"),
    }
}

/// Uneven shards of `n` over `k` GPUs: cut points at i(i+1) / k(k+1) of the input.
fn uneven(n: usize, k: usize) -> Vec<std::ops::Range<usize>> {
    let cut = |i: usize| n * i * (i + 1) / (k * (k + 1));
    (0..k)
        .map(|i| cut(i)..if i + 1 == k { n } else { cut(i + 1) })
        .collect()
}

/// The first GPU (which holds the result) gets no samples; the others share them.
fn empty_first(n: usize, k: usize) -> Vec<std::ops::Range<usize>> {
    std::iter::once(0..0)
        .chain(multi::shards(n, k - 1))
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_strategy_over_uneven_and_empty_shards() {
    let Some((devices, _one)) = gpus() else {
        return;
    };
    let gpus = open(&devices).unwrap();
    let mut r = rng();
    let n = 1_000_003;
    // Each strategy at a bin count it can hold; integers reach below and above the bins.
    let cases = [
        (StrategyChoice::Auto, 4096usize),
        (StrategyChoice::Shared, 256),
        (StrategyChoice::Cluster(Some(2)), 32768),
        (StrategyChoice::Global, 131072),
        (StrategyChoice::Partition, 1 << 20),
        // the sliced plans (session 7): auto's pick on one GPU from 232305 bins, planned again
        // for each shard's size, and the strategy forced
        (StrategyChoice::Auto, 300_000),
        (
            StrategyChoice::Sliced {
                bits: None,
                slices: None,
            },
            1 << 20,
        ),
    ];
    for (choice, nbins) in cases {
        let data: Vec<i32> = (0..n).map(|_| r.gen_range(-5..nbins as i32 + 5)).collect();
        let spec = BinSpec::Integer { nbins };
        let s = Samples::I32(&data);
        let want = cpu(s, None, &spec);
        let binning = Binning::resolve(&spec, s).unwrap();
        let mut m = MultiPrepared::new(
            &gpus,
            SampleType::I32,
            WeightKind::None,
            &binning,
            OutOfRange::Ignore,
            choice,
        )
        .unwrap_or_else(|e| panic!("{choice:?}: {e}"));
        for ranges in [
            uneven(n, gpus.len()),
            empty_first(n, gpus.len()),
            multi::shards(n, gpus.len()),
            // Everything on the last GPU.
            (0..gpus.len())
                .map(|i| if i + 1 == gpus.len() { 0..n } else { 0..0 })
                .collect(),
        ] {
            // Small chunks: several per shard, the last one short.
            let opts = StreamOptions {
                chunk_bytes: 4 * 65_537,
                ..StreamOptions::default()
            };
            let got = m.run_host(s, None, &ranges, &opts, None).unwrap();
            same(&got, &want, &format!("{choice:?} {nbins} bins {ranges:?}"));
        }
        // Run twice on the same plan: the counters start from zero each time.
        let got = m
            .run_host(
                s,
                None,
                &multi::shards(n, gpus.len()),
                &StreamOptions::default(),
                None,
            )
            .unwrap();
        same(&got, &want, &format!("{choice:?} again"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn weights_sums_and_tallies_are_reduced() {
    let Some((devices, _one)) = gpus() else {
        return;
    };
    let mut r = rng();
    let n = 300_001;
    let mut data: Vec<f64> = (0..n).map(|_| r.gen_range(-0.2..1.2)).collect();
    data[17] = f64::NAN;
    data[n - 1] = f64::NAN;
    let w64: Vec<f64> = (0..n).map(|_| r.gen_range(0.0..2.0)).collect();
    let w32: Vec<f32> = w64.iter().map(|&w| w as f32).collect();
    let spec = BinSpec::Uniform {
        nbins: 1000,
        range: Some((0.0, 1.0)),
    };
    let s = Samples::F64(&data);
    let binning = Binning::resolve(&spec, s).unwrap();
    for w in [Weights::F64(&w64), Weights::F32(&w32)] {
        let want = cpu(s, Some(w), &spec);
        let job = Job {
            weights: Some(w),
            binning: &binning,
            policy: OutOfRange::Ignore,
            strategy: StrategyChoice::Auto,
            stream: StreamOptions::default(),
            progress: None,
            sums: Default::default(),
        };
        let got =
            multi::histogram_shards(s, &devices, &empty_first(n, devices.len()), &job).unwrap();
        same(&got, &want, "weighted");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_public_entry_takes_a_device_set() {
    let Some((devices, _one)) = gpus() else {
        return;
    };
    let mut r = rng();
    // Fewer samples than GPUs' worth of anything, then a shard of 0 (n < GPUs), then many.
    for n in [0usize, 1, devices.len() - 1, 2_000_017] {
        let data: Vec<f32> = (0..n).map(|_| r.gen_range(0.0f32..1.0)).collect();
        let spec = BinSpec::Uniform {
            nbins: 777,
            range: Some((0.0, 1.0)),
        };
        let s = Samples::F32(&data);
        let want = cpu(s, None, &spec);
        for set in [
            DeviceSet::All,
            DeviceSet::List(devices.iter().rev().copied().collect()),
        ] {
            let h = histogram(
                s,
                None,
                &HistogramOptions::new(spec.clone())
                    .backend(Backend::Cuda)
                    .devices(set.clone()),
            )
            .unwrap_or_else(|e| panic!("{set:?}, {n} samples: {e}"));
            assert_eq!(h.counts, want.counts, "{set:?}, {n} samples");
            assert_eq!(h.tallies, want.tallies);
            assert!(h.engine.detail.contains("NCCL"), "{}", h.engine.detail);
        }
    }
    // A GPU that does not exist is named.
    let e = histogram(
        Samples::I32(&[1, 2]),
        None,
        &HistogramOptions::new(BinSpec::Integer { nbins: 4 })
            .backend(Backend::Cuda)
            .devices(DeviceSet::List(vec![0, 999])),
    )
    .unwrap_err();
    assert!(e.to_string().contains("999"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_resident_shards() {
    let Some((devices, _one)) = gpus() else {
        return;
    };
    let gpus = open(&devices).unwrap();
    let nbins = 4096;
    let lens: Vec<usize> = (0..gpus.len())
        .map(|i| [0, 1 << 20, 12_345][i % 3])
        .collect();
    let shards: Vec<_> = gpus
        .iter()
        .zip(&lens)
        .enumerate()
        .map(|(i, (g, &n))| {
            smemkit::internals::histogram::cuda::bench::generate(
                g,
                SampleType::I32,
                n,
                nbins,
                if i % 2 == 1 {
                    smemkit::internals::histogram::cuda::bench::BENCH_HOT_SHARE
                } else {
                    0.0
                },
                i as u64,
            )
            .unwrap()
        })
        .collect();
    let mut all = Vec::new();
    for (g, s) in gpus.iter().zip(&shards) {
        match s.to_host(g).unwrap() {
            smemkit::internals::histogram::cuda::bench::HostSamples::I32(v) => all.extend(v),
            _ => unreachable!(),
        }
    }
    let spec = BinSpec::Integer { nbins };
    let want = cpu(Samples::I32(&all), None, &spec);
    let binning = Binning::resolve(&spec, Samples::I32(&all)).unwrap();
    let mut m = MultiPrepared::new(
        &gpus,
        SampleType::I32,
        WeightKind::None,
        &binning,
        OutOfRange::Ignore,
        StrategyChoice::Auto,
    )
    .unwrap();
    let refs: Vec<_> = shards.iter().collect();
    same(&m.run_device(&refs).unwrap(), &want, "device shards");
    let times = m.time_device(&refs, 1, 3).unwrap();
    assert_eq!(times.len(), 3);
}

#[test]
fn a_device_set_needs_the_cuda_backend() {
    let e = histogram(
        Samples::I32(&[1, 2]),
        None,
        &HistogramOptions::new(BinSpec::Integer { nbins: 4 })
            .backend(Backend::Cpu)
            .devices(DeviceSet::All),
    )
    .unwrap_err();
    assert!(e.to_string().contains("CUDA backend"), "{e}");
}
