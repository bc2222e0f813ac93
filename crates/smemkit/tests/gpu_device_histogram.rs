//! GPU tests of the device-resident histogram (`DeviceHistogram`): data already in GPU memory,
//! runs on a caller's stream, compared with the CPU engine on fresh random inputs (uniform, hot
//! beyond the skew probe's 2^22 samples, out of range, NaN) into poisoned outputs, every strategy
//! forced at least once, raw pointers, a captured CUDA graph replayed on new data, and the
//! deterministic weighted sums compared bit for bit across runs, strategies and the CPU reference.

mod gpu_common;

use gpu_common::{poison, rng};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use rand::Rng;
use smemkit::internals::histogram::cuda::exact_sums;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec, DeviceWeights, RawBuffers, WeightKind},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice, Tallies},
    sample::{SampleType, Samples, Weights},
    Backend,
};

const GPU: &str = "needs a CUDA GPU";

fn gpu() -> Arc<smemkit::internals::gpu::Gpu> {
    smemkit::internals::gpu::gpu().expect("a CUDA GPU")
}

/// Integers: `hot` of them in bin 7, a tenth below 0 or above the bins, the rest uniform.
fn ints(n: usize, nbins: usize, hot: f64, r: &mut impl Rng) -> Vec<i32> {
    (0..n)
        .map(|_| {
            if r.gen::<f64>() < hot {
                7 % nbins as i32
            } else if r.gen::<f64>() < 0.1 {
                if r.gen::<bool>() {
                    -r.gen_range(1..100)
                } else {
                    nbins as i32 + r.gen_range(0..100)
                }
            } else {
                r.gen_range(0..nbins as i32)
            }
        })
        .collect()
}

/// Floats over [-0.1, 1.1) (out of range at both ends of bins over [0, 1)), a few NaN.
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

fn cpu(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    bins: &BinSpec,
    policy: OutOfRange,
) -> (Counts, Tallies) {
    let h = histogram(
        samples,
        weights,
        &HistogramOptions::new(bins.clone())
            .policy(policy)
            .backend(Backend::Cpu),
    )
    .expect("cpu histogram");
    (h.counts, h.tallies)
}

fn compare(got: &(Counts, Tallies), want: &(Counts, Tallies), what: &str) {
    assert_eq!(got.1, want.1, "{what}: tallies");
    match (&got.0, &want.0) {
        (Counts::Unweighted(g), Counts::Unweighted(c)) => {
            if g != c {
                let first = g.iter().zip(c).position(|(a, b)| a != b).unwrap();
                panic!(
                    "{what}: {} bins differ, first at {first}: gpu {} cpu {}",
                    g.iter().zip(c).filter(|(a, b)| a != b).count(),
                    g[first],
                    c[first]
                );
            }
        }
        (Counts::Weighted(g), Counts::Weighted(c)) => {
            for (i, (a, b)) in g.iter().zip(c).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0) || (a.is_nan() && b.is_nan()),
                    "{what}: bin {i}: gpu {a} cpu {b}"
                );
            }
        }
        _ => panic!("{what}: result kinds differ"),
    }
}

fn upload<T: cudarc::driver::DeviceRepr>(stream: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    stream.clone_htod(v).expect("copying to the device")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_strategy_on_the_callers_stream() {
    let _ = GPU;
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = (1 << 20) + 13;
    for nbins in [256usize, 4096, 1 << 20] {
        let data = ints(n, nbins, 0.0, &mut r);
        let want = cpu(
            Samples::I32(&data),
            None,
            &BinSpec::Integer { nbins },
            OutOfRange::Ignore,
        );
        let dev = upload(&stream, &data);
        let mut choices = vec![
            StrategyChoice::Auto,
            StrategyChoice::Global,
            StrategyChoice::Partition,
            StrategyChoice::Sliced {
                bits: Some(8),
                slices: None,
            },
        ];
        if nbins <= 4096 {
            choices.extend([
                StrategyChoice::Shared,
                StrategyChoice::Packed(16),
                StrategyChoice::Cluster(Some(2)),
                StrategyChoice::Exchange {
                    bits: None,
                    size: None,
                },
            ]);
        }
        for choice in choices {
            let spec = DeviceHistogramSpec::new(SampleType::I32, BinSpec::Integer { nbins })
                .strategy(choice)
                .max_samples(n);
            let h = DeviceHistogram::new(&gpu, &spec).unwrap_or_else(|e| panic!("{choice:?}: {e}"));
            let mut out = h.output().unwrap();
            poison(&out, &stream);
            h.run(&dev.as_view(), None, &mut out, &stream).unwrap();
            let got = out.read(&stream).unwrap();
            compare(
                &got,
                &want,
                &format!("{nbins} bins, {choice:?} ({})", h.detail()),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn floats_weights_and_clamping() {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = 300_001;
    let data = floats(n, &mut r);
    let w32: Vec<f32> = (0..n).map(|_| r.gen_range(-1.0f32..2.0)).collect();
    let w64: Vec<f64> = w32.iter().map(|&w| w as f64 * 1.5).collect();
    let (dd, d32, d64) = (
        upload(&stream, &data),
        upload(&stream, &w32),
        upload(&stream, &w64),
    );
    for nbins in [100usize, 4096] {
        let bins = BinSpec::Uniform {
            nbins,
            range: Some((0.0, 1.0)),
        };
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            for (kind, weights) in [
                (WeightKind::None, None),
                (WeightKind::F32, Some(Weights::F32(&w32))),
                (WeightKind::F64, Some(Weights::F64(&w64))),
            ] {
                let want = cpu(Samples::F32(&data), weights, &bins, policy);
                let spec = DeviceHistogramSpec::new(SampleType::F32, bins.clone())
                    .policy(policy)
                    .weights(kind)
                    .max_samples(n);
                let h = DeviceHistogram::new(&gpu, &spec).unwrap();
                let mut out = h.output().unwrap();
                poison(&out, &stream);
                let (v32, v64) = (d32.as_view(), d64.as_view());
                let w = match kind {
                    WeightKind::None => None,
                    WeightKind::F32 => Some(DeviceWeights::F32(&v32)),
                    WeightKind::F64 => Some(DeviceWeights::F64(&v64)),
                    WeightKind::I64 => unreachable!("float weights only here"),
                };
                h.run(&dd.as_view(), w, &mut out, &stream).unwrap();
                compare(
                    &out.read(&stream).unwrap(),
                    &want,
                    &format!("float32, {nbins} bins, {policy:?}, {kind:?}"),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn skew_verdict_on_the_device() {
    // Beyond SKEW_PROBE_MIN_SAMPLES: auto probes; 1M int32 bins plan sliced or partition, which
    // hot data (90 % in one bin) hands to global. Both gated paths must give the CPU's counts.
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    // Partition with its probe: a shard this size at 2^20 bins is too small for the sliced plans
    // (the planner picks global outright), at 2^22 bins partition is planned and probed.
    let n = (1 << 24) + 1001;
    let nbins = 1 << 22;
    for (hot, expect) in [(0.9, "-> global"), (0.0, "-> ")] {
        let data = ints(n, nbins, hot, &mut r);
        let want = cpu(
            Samples::I32(&data),
            None,
            &BinSpec::Integer { nbins },
            OutOfRange::Ignore,
        );
        let dev = upload(&stream, &data);
        let spec =
            DeviceHistogramSpec::new(SampleType::I32, BinSpec::Integer { nbins }).max_samples(n);
        let h = DeviceHistogram::new(&gpu, &spec).unwrap();
        let mut out = h.output().unwrap();
        poison(&out, &stream);
        h.run(&dev.as_view(), None, &mut out, &stream).unwrap();
        let got = out.read(&stream).unwrap();
        let detail = h.detail();
        compare(&got, &want, &format!("hot {hot}: {detail}"));
        assert!(detail.contains(expect), "hot {hot}: {detail}");
        if hot == 0.0 {
            assert!(
                !detail.contains("-> global"),
                "uniform data went global: {detail}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn raw_pointers_and_separate_tallies() {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = 77_777;
    let nbins = 1000;
    let data = ints(n, nbins, 0.3, &mut r);
    let want = cpu(
        Samples::I32(&data),
        None,
        &BinSpec::Integer { nbins },
        OutOfRange::Ignore,
    );
    let dev = upload(&stream, &data);
    let spec = DeviceHistogramSpec::new(SampleType::I32, BinSpec::Integer { nbins }).max_samples(n);
    let h = DeviceHistogram::new(&gpu, &spec).unwrap();
    // Counts and tallies in two allocations (two memsets), poisoned.
    let counts = upload(&stream, &vec![0xdead_beef_u64; nbins]);
    let tallies = upload(&stream, &[7u64, 7, 7]);
    let in_ptr = dev.device_ptr(&stream).0;
    // SAFETY: all three are live allocations of this context with the lengths the call names.
    unsafe {
        h.run_raw(
            &RawBuffers {
                input: in_ptr,
                n,
                sample_type: SampleType::I32,
                weights: 0,
                bins: counts.device_ptr(&stream).0,
                tallies: tallies.device_ptr(&stream).0,
            },
            stream.cu_stream(),
            false,
        )
    }
    .unwrap();
    let got_counts = stream.clone_dtoh(&counts).unwrap();
    let t = stream.clone_dtoh(&tallies).unwrap();
    compare(
        &(
            Counts::Unweighted(got_counts),
            Tallies {
                below: t[0],
                above: t[1],
                nan: t[2],
            },
        ),
        &want,
        "raw pointers",
    );
    // Bad calls fail with an error before anything is enqueued.
    let view = dev.as_view();
    let mut out = h.output().unwrap();
    let off = view.slice(1..);
    assert!(
        h.run(&off, None, &mut out, &stream).is_err(),
        "misaligned input accepted"
    );
    let floats = upload(&stream, &[0.5f32; 16]);
    assert!(
        h.run(&floats.as_view(), None, &mut out, &stream).is_err(),
        "wrong sample type accepted"
    );
    let too_long = upload(&stream, &vec![1i32; n + 4]);
    assert!(
        h.run(&too_long.as_view(), None, &mut out, &stream).is_err(),
        "more than max_samples accepted"
    );
    let no_range = DeviceHistogramSpec::new(
        SampleType::F32,
        BinSpec::Uniform {
            nbins: 10,
            range: None,
        },
    );
    assert!(
        DeviceHistogram::new(&gpu, &no_range).is_err(),
        "uniform bins without a range accepted"
    );
}

/// Captures one run in a graph and replays it on new data copied into the same input buffer.
fn graph_replay(n: usize, nbins: usize, hot: f64, replays: usize) {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let mut dev = upload(&stream, &ints(n, nbins, hot, &mut r));
    let spec = DeviceHistogramSpec::new(SampleType::I32, BinSpec::Integer { nbins }).max_samples(n);
    let h = DeviceHistogram::new(&gpu, &spec).unwrap();
    let mut out = h.output().unwrap();
    stream.synchronize().unwrap();
    stream
        .begin_capture(
            cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
        .unwrap();
    h.run(&dev.as_view(), None, &mut out, &stream).unwrap();
    let graph = stream
        .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a captured graph");
    for i in 0..replays {
        let data = ints(n, nbins, if i % 2 == 0 { hot } else { 0.0 }, &mut r);
        stream.memcpy_htod(&data, &mut dev).unwrap();
        poison(&out, &stream);
        graph.launch().unwrap();
        let got = out.read(&stream).unwrap();
        let want = cpu(
            Samples::I32(&data),
            None,
            &BinSpec::Integer { nbins },
            OutOfRange::Ignore,
        );
        compare(
            &got,
            &want,
            &format!("replay {i} of {n} samples, {nbins} bins ({})", h.detail()),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_replays_match_the_cpu() {
    graph_replay(1 << 16, 256, 0.5, 4);
    // The gated plans (verdict, global, partition or sliced) in one graph.
    graph_replay((1 << 22) + 5, 1 << 20, 0.9, 4);
}

fn bits(c: &Counts) -> Vec<u64> {
    match c {
        Counts::Weighted(v) => v.iter().map(|x| x.to_bits()).collect(),
        _ => panic!("expected sums"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn deterministic_sums_are_bit_identical() {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = (1 << 21) + 3;
    for nbins in [64usize, 4096, 100_000] {
        let data = ints(n, nbins, 0.5, &mut r);
        // Weights over many magnitudes, so that float atomics would round differently by order.
        let w64: Vec<f64> = (0..n)
            .map(|_| r.gen_range(-1.0f64..1.0) * 10f64.powi(r.gen_range(-6..6)))
            .collect();
        let w32: Vec<f32> = w64.iter().map(|&w| w as f32).collect();
        let (dd, d32, d64) = (
            upload(&stream, &data),
            upload(&stream, &w32),
            upload(&stream, &w64),
        );
        let binning =
            smemkit::bins::Binning::resolve(&BinSpec::Integer { nbins }, Samples::I32(&data))
                .unwrap();
        for kind in [WeightKind::F32, WeightKind::F64] {
            let weights = match kind {
                WeightKind::F32 => Weights::F32(&w32),
                _ => Weights::F64(&w64),
            };
            let (ref_sums, ref_tallies) =
                exact_sums::reference(&data, weights, &binning, OutOfRange::Ignore).unwrap();
            let ref_bits: Vec<u64> = ref_sums.iter().map(|x| x.to_bits()).collect();
            let plain = cpu(
                Samples::I32(&data),
                Some(weights),
                &BinSpec::Integer { nbins },
                OutOfRange::Ignore,
            );
            let mut strategies = vec![StrategyChoice::Auto, StrategyChoice::Global];
            if nbins * 16 <= 200_000 {
                strategies.push(StrategyChoice::Shared);
            }
            for choice in strategies {
                let spec = DeviceHistogramSpec::new(SampleType::I32, BinSpec::Integer { nbins })
                    .weights(kind)
                    .strategy(choice)
                    .deterministic(true)
                    .max_samples(n);
                let h = DeviceHistogram::new(&gpu, &spec).unwrap();
                let mut out = h.output().unwrap();
                let (v32, v64) = (d32.as_view(), d64.as_view());
                for run in 0..2 {
                    poison(&out, &stream);
                    let w = match kind {
                        WeightKind::F32 => DeviceWeights::F32(&v32),
                        _ => DeviceWeights::F64(&v64),
                    };
                    h.run(&dd.as_view(), Some(w), &mut out, &stream).unwrap();
                    let got = out.read(&stream).unwrap();
                    let what = format!(
                        "{nbins} bins, {kind:?}, {choice:?}, run {run} ({})",
                        h.detail()
                    );
                    assert_eq!(got.1, ref_tallies, "{what}: tallies");
                    let g = bits(&got.0);
                    if g != ref_bits {
                        let i = g.iter().zip(&ref_bits).position(|(a, b)| a != b).unwrap();
                        panic!(
                            "{what}: bin {i}: {} against the reference {}",
                            f64::from_bits(g[i]),
                            ref_sums[i]
                        );
                    }
                    compare(&got, &plain, &what);
                }
            }
        }
    }
}
