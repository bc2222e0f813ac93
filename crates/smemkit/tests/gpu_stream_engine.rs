//! GPU tests of the streamed and multi-GPU paths as layers over the one device engine: a fresh
//! stream clears (or, for global-memory counts, overwrites) counters that hold garbage, in either
//! layout of tallies and bins, for inputs of 0, 1 and several chunks, with and without weights;
//! a stream that accumulates adds to what is there; a multi-GPU histogram reused after a run holds
//! only the new run's result (an empty shard included), host-resident or device-resident, on the
//! skew-probed plans too. Each result equal to the CPU engine's. They need a CUDA GPU (one is
//! enough) and are ignored elsewhere.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogram::cuda::bench::DeviceSamples;
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::multi::{open, shards, MultiPrepared};
use smemkit::internals::histogram::cuda::prepared::{Counting, EngineOutput, WeightKind};
use smemkit::internals::histogram::cuda::stream::{StreamInput, StreamOptions, Streamer};
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice},
    sample::{SampleType, Samples, Weights},
    Backend,
};

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// int32 samples in [-5, nbins + 5), so that some fall below and above.
fn ints(n: usize, nbins: usize, r: &mut Xoshiro256PlusPlus) -> Vec<i32> {
    (0..n).map(|_| r.gen_range(-5..nbins as i32 + 5)).collect()
}

fn cpu(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    nbins: usize,
) -> smemkit::histogram::Histogram {
    histogram(
        samples,
        weights,
        &HistogramOptions::new(BinSpec::Integer { nbins }).backend(Backend::Cpu),
    )
    .expect("cpu")
}

/// The bins as u64 words (f64 sums as their bits) and the tallies, from the CPU engine, `times`
/// over.
fn words_of(h: &smemkit::histogram::Histogram, times: u64) -> (Vec<u64>, [u64; 3]) {
    let t = [h.tallies.below, h.tallies.above, h.tallies.nan].map(|x| x * times);
    let bins = match &h.counts {
        Counts::Unweighted(c) => c.iter().map(|&x| x * times).collect(),
        Counts::Weighted(s) => s.iter().map(|&x| (x * times as f64).to_bits()).collect(),
        Counts::Integer { .. } => panic!("these runs have no integer weights"),
    };
    (bins, t)
}

fn close(got: &[u64], want: &[u64], weighted: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: bins");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if weighted {
            let (g, w) = (f64::from_bits(g), f64::from_bits(w));
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{what}: bin {i}: gpu {g} cpu {w}"
            );
        } else {
            assert_eq!(g, w, "{what}: bin {i}");
        }
    }
}

fn same(got: &EngineOutput, want: &smemkit::histogram::Histogram, what: &str) {
    assert_eq!(
        got.tallies, want.tallies,
        "{what}: tallies ({})",
        got.detail
    );
    match (&got.counts, &want.counts) {
        (Counts::Unweighted(g), Counts::Unweighted(c)) => assert!(g == c, "{what}: counts"),
        _ => panic!("{what}: result kinds differ"),
    }
}

/// `Streamer::run_into` without `accumulate` into poisoned counters, then again with it: the
/// first gives the CPU histogram, the second twice it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_fresh_stream_clears_poisoned_counters_and_accumulating_adds() {
    let gpu = smemkit::internals::gpu::gpu().expect("a GPU");
    let stream = gpu.stream.clone();
    let mut r = rng();
    let nbins = 20_000;
    let binning = Binning::resolve(&BinSpec::Integer { nbins }, Samples::I32(&[])).unwrap();
    let chunk = 10_007;
    let opts = StreamOptions {
        chunk_bytes: chunk * 4,
        depth: 3,
        device_budget: None,
        fill_threads: 0,
    };
    let choices = [
        StrategyChoice::Auto,
        StrategyChoice::Global,
        StrategyChoice::Shared,
        StrategyChoice::Partition,
    ];
    for n in [0usize, 1, 3 * chunk + 17] {
        let data = ints(n, nbins, &mut r);
        let w64: Vec<f64> = (0..n).map(|_| r.gen_range(0.0..2.0)).collect();
        for weights in [None, Some(Weights::F64(&w64))] {
            let wkind = if weights.is_some() {
                WeightKind::F64
            } else {
                WeightKind::None
            };
            let want = cpu(Samples::I32(&data), weights, nbins);
            for choice in choices {
                let what = Counting {
                    sample_type: SampleType::I32,
                    weights: wkind,
                    binning: &binning,
                    policy: OutOfRange::Ignore,
                };
                let engine = match DeviceEngine::unbounded(&gpu, what, choice, None) {
                    Ok(e) => e,
                    Err(smemkit::Error::StrategyUnsupported { .. }) => continue,
                    Err(e) => panic!("{choice:?}: {e}"),
                };
                let mut s =
                    Streamer::new(gpu.clone(), SampleType::I32, wkind, n.max(1), &opts).unwrap();
                // Tallies before the bins (DeviceOutput's layout), then after them (the
                // multi-GPU counters' layout).
                for tallies_first in [true, false] {
                    let what =
                        format!("n {n}, {wkind:?}, {choice:?}, tallies first {tallies_first}");
                    let buf = stream.clone_htod(&vec![u64::MAX; nbins + 3]).unwrap();
                    let base = {
                        use smemkit::cudarc::driver::DevicePtr;
                        buf.device_ptr(&stream).0
                    };
                    let (bins, tallies) = if tallies_first {
                        (base + 24, base)
                    } else {
                        (base, base + 8 * nbins as u64)
                    };
                    for (round, accumulate) in [(1u64, false), (2, true)] {
                        let input = StreamInput::Host(Samples::I32(&data));
                        // SAFETY: `buf` holds nbins + 3 words of this GPU, alive until the
                        // read below; run_into drains its streams before it returns.
                        unsafe {
                            s.run_into(&engine, &input, weights, (bins, tallies), accumulate, None)
                        }
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                        let got = stream.clone_dtoh(&buf).unwrap();
                        let (got_bins, got_t) = if tallies_first {
                            (&got[3..], &got[..3])
                        } else {
                            (&got[..nbins], &got[nbins..])
                        };
                        let (want_bins, want_t) = words_of(&want, round);
                        assert_eq!(got_t, want_t, "{what}, round {round}: tallies");
                        close(
                            got_bins,
                            &want_bins,
                            weights.is_some(),
                            &format!("{what}, round {round}"),
                        );
                    }
                }
            }
        }
    }
}

/// One `MultiPrepared` over one GPU (no NCCL needed), reused: a host-resident run, then an
/// empty shard, then device-resident shards, each result the CPU engine's for that run alone.
/// The 4.2M-sample device shard over 2M bins takes `auto`'s skew-probed partition plan.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_reused_multi_gpu_histogram_holds_only_the_last_run() {
    let gpus = open(&[0]).expect("GPU 0");
    let mut r = rng();
    let opts = StreamOptions {
        chunk_bytes: 65_537 * 4,
        depth: 2,
        device_budget: None,
        fill_threads: 0,
    };
    for (nbins, n) in [(1000usize, 300_001usize), (2 << 20, (1 << 22) + 12_345)] {
        let binning = Binning::resolve(&BinSpec::Integer { nbins }, Samples::I32(&[])).unwrap();
        for choice in [StrategyChoice::Auto, StrategyChoice::Global] {
            let mut m = MultiPrepared::new(
                &gpus,
                SampleType::I32,
                WeightKind::None,
                &binning,
                OutOfRange::Ignore,
                choice,
            )
            .unwrap();
            let what = format!("{nbins} bins, {choice:?}");
            let a = ints(n, nbins, &mut r);
            // One shard (one GPU): all of `a`, then none of it.
            let (all, none) = (shards(n, 1), shards(0, 1));
            let got = m
                .run_host(Samples::I32(&a), None, &all, &opts, None)
                .unwrap();
            same(
                &got,
                &cpu(Samples::I32(&a), None, nbins),
                &format!("{what}: host"),
            );
            let got = m
                .run_host(Samples::I32(&a), None, &none, &opts, None)
                .unwrap();
            same(
                &got,
                &cpu(Samples::I32(&[]), None, nbins),
                &format!("{what}: empty"),
            );
            // Skewed: most samples in one bin.
            let b: Vec<i32> = (0..n)
                .map(|i| {
                    if i % 8 == 0 {
                        r.gen_range(0..nbins as i32)
                    } else {
                        7
                    }
                })
                .collect();
            let shard = DeviceSamples::upload(&gpus[0], Samples::I32(&b)).unwrap();
            for round in 0..2 {
                let got = m.run_device(&[&shard]).unwrap();
                same(
                    &got,
                    &cpu(Samples::I32(&b), None, nbins),
                    &format!("{what}: device, round {round}"),
                );
            }
        }
    }
}
