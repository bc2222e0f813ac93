//! GPU tests of float weights summed in numpy's order (`WeightSums::Numpy`): the device-resident
//! histogram and the host-memory GPU path against the CPU engine's numpy order, bit for bit, on
//! fresh random inputs (weights of every magnitude, so that the float32 roundings between numpy's
//! blocks show; samples outside the bins and NaN; partial last blocks), into poisoned outputs;
//! one slice of bins and many, one wave of blocks and several. They need a CUDA GPU.

mod gpu_common;

use gpu_common::{poison, rng};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec, DeviceWeights, WeightKind},
    histogram::{histogram, Counts, HistogramOptions, StreamOptions, Tallies, WeightSums},
    sample::{IntWeights, Sample, SampleType, Samples, Weights},
    Backend,
};

fn upload<T: DeviceRepr>(stream: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    stream.clone_htod(v).expect("copying to the GPU")
}

fn bits(c: &Counts) -> Vec<u64> {
    match c {
        Counts::Weighted(v) => v.iter().map(|x| x.to_bits()).collect(),
        _ => panic!("expected sums"),
    }
}

/// Weights of every magnitude from 2^-40 to 2^40, either sign (float64 ones: also below float32's
/// precision, so that float64's block sums differ from float32's): most bins' sums depend on the
/// order, and the kernel redoes them one sample after another. `narrow`: multiples of 2^-24 in
/// [0, 1), as torch.rand makes them, whose sums any order gets exactly (the atomics' path).
fn weights(n: usize, narrow: bool, r: &mut impl Rng) -> (Vec<f32>, Vec<f64>) {
    let w64: Vec<f64> = (0..n)
        .map(|_| {
            if narrow {
                return (r.gen::<u32>() >> 8) as f64 * 2f64.powi(-24);
            }
            let m: f64 = r.gen_range(-1.0..1.0);
            m * (r.gen_range(-40.0f64..40.0)).exp2() * (1.0 + 1e-12 * r.gen::<f64>())
        })
        .collect();
    (w64.iter().map(|&w| w as f32).collect(), w64)
}

fn cpu_numpy(
    samples: Samples<'_>,
    w: Weights<'_>,
    spec: &BinSpec,
    policy: OutOfRange,
) -> (Counts, Tallies) {
    let h = histogram(
        samples,
        Some(w),
        &HistogramOptions::new(spec.clone())
            .policy(policy)
            .backend(Backend::Cpu)
            .sums(WeightSums::Numpy),
    )
    .expect("cpu histogram");
    (h.counts, h.tallies)
}

fn check<T: Sample + DeviceRepr>(
    samples: &[T],
    host: Samples<'_>,
    spec: &BinSpec,
    what: &str,
    r: &mut impl Rng,
) {
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let stream = gpu.ctx.new_stream().unwrap();
    let n = samples.len();
    let sample_type = host.sample_type();
    let dx = upload(&stream, samples);
    for narrow in [false, true] {
        let (w32, w64) = weights(n, narrow, r);
        let what = format!("{what}, narrow weights {narrow}");
        check_weights(
            samples,
            host,
            sample_type,
            &dx,
            &w32,
            &w64,
            spec,
            &what,
            &gpu,
            &stream,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn check_weights<T: Sample + DeviceRepr>(
    samples: &[T],
    host: Samples<'_>,
    sample_type: SampleType,
    dx: &CudaSlice<T>,
    w32: &[f32],
    w64: &[f64],
    spec: &BinSpec,
    what: &str,
    gpu: &Arc<smemkit::internals::gpu::Gpu>,
    stream: &Arc<CudaStream>,
) {
    let n = samples.len();
    let (d32, d64) = (upload(stream, w32), upload(stream, w64));
    for kind in [WeightKind::F32, WeightKind::F64] {
        let w = match kind {
            WeightKind::F32 => Weights::F32(w32),
            _ => Weights::F64(w64),
        };
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            let want = cpu_numpy(host, w, spec, policy);
            let want_bits = bits(&want.0);
            let dspec = DeviceHistogramSpec::new(sample_type, spec.clone())
                .weights(kind)
                .policy(policy)
                .sums(WeightSums::Numpy)
                .max_samples(n);
            let h = DeviceHistogram::new(gpu, &dspec).unwrap();
            let mut out = h.output().unwrap();
            let (v32, v64) = (d32.as_view(), d64.as_view());
            for run in 0..2 {
                poison(&out, stream);
                let dw = match kind {
                    WeightKind::F32 => DeviceWeights::F32(&v32),
                    _ => DeviceWeights::F64(&v64),
                };
                h.run(&dx.as_view(), Some(dw), &mut out, stream).unwrap();
                let got = out.read(stream).unwrap();
                let label = format!("{what}, {kind:?}, {policy:?}, run {run} ({})", h.detail());
                assert_eq!(got.1, want.1, "{label}: tallies");
                let g = bits(&got.0);
                if let Some(i) = g.iter().zip(&want_bits).position(|(a, b)| a != b) {
                    panic!(
                        "{label}: bin {i}: {} against the CPU engine's {}",
                        f64::from_bits(g[i]),
                        f64::from_bits(want_bits[i])
                    );
                }
            }
            // The host-memory GPU path sums in the same order.
            let via_host = histogram(
                host,
                Some(w),
                &HistogramOptions::new(spec.clone())
                    .policy(policy)
                    .backend(Backend::Cuda)
                    .sums(WeightSums::Numpy),
            )
            .unwrap();
            assert_eq!(
                via_host.tallies, want.1,
                "{what}, {kind:?}, {policy:?}: host tallies"
            );
            assert_eq!(
                bits(&via_host.counts),
                want_bits,
                "{what}, {kind:?}, {policy:?}: host path"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numpy_order_sums_match_the_cpu_engine_bit_for_bit() {
    let mut r = rng();
    // Five whole blocks of 65536 and a partial one.
    let n = 5 * 65536 + 4321;
    let normal = |r: &mut Xoshiro256PlusPlus| -> f64 {
        // Irwin-Hall: near normal, enough for hot centre bins.
        (0..12).map(|_| r.gen::<f64>()).sum::<f64>() - 6.0
    };
    let mut xf: Vec<f32> = (0..n).map(|_| (normal(&mut r) * 1.5) as f32).collect();
    for i in (0..n).step_by(997) {
        xf[i] = f32::NAN;
    }
    let xd: Vec<f64> = (0..n).map(|_| normal(&mut r) * 1.5).collect();
    let xi: Vec<i32> = (0..n).map(|_| (normal(&mut r) * 60.0) as i32).collect();
    // One bin, a slice's worth, several slices, bins beyond one warp's slice by far.
    for nbins in [1usize, 1000, 5000, 70_000] {
        let spec = BinSpec::Uniform {
            nbins,
            range: Some((-3.0, 3.0)),
        };
        check(
            &xf,
            Samples::F32(&xf),
            &spec,
            &format!("f32 samples, {nbins} bins"),
            &mut r,
        );
        check(
            &xd,
            Samples::F64(&xd),
            &spec,
            &format!("f64 samples, {nbins} bins"),
            &mut r,
        );
        let ispec = BinSpec::Uniform {
            nbins,
            range: Some((-200.0, 200.0)),
        };
        check(
            &xi,
            Samples::I32(&xi),
            &ispec,
            &format!("i32 samples, {nbins} bins"),
            &mut r,
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numpy_order_sums_run_in_waves() {
    // 2^20 float64 bins: 8 MiB of partial sums a block, eight blocks a wave of 64 MiB; twenty
    // blocks and a bit run in three waves, each chain continuing the one before.
    let mut r = rng();
    let n = 20 * 65536 + 17;
    let x: Vec<f32> = (0..n).map(|_| r.gen_range(-1.1f32..1.1)).collect();
    let spec = BinSpec::Uniform {
        nbins: 1 << 20,
        range: Some((-1.0, 1.0)),
    };
    check(&x, Samples::F32(&x), &spec, "waves", &mut r);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numpy_order_sums_refuse_edges_and_forced_strategies() {
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let edges = DeviceHistogramSpec::new(SampleType::F32, BinSpec::Edges(vec![0.0, 1.0, 3.0]))
        .weights(WeightKind::F32)
        .sums(WeightSums::Numpy);
    let e = DeviceHistogram::new(&gpu, &edges)
        .err()
        .expect("edges refused");
    assert!(e.to_string().contains("uniform bins"), "{e}");
    let forced = DeviceHistogramSpec::new(
        SampleType::F32,
        BinSpec::Uniform {
            nbins: 10,
            range: Some((0.0, 1.0)),
        },
    )
    .weights(WeightKind::F32)
    .strategy(smemkit::histogram::StrategyChoice::Global)
    .sums(WeightSums::Numpy);
    let e = DeviceHistogram::new(&gpu, &forced)
        .err()
        .expect("strategy refused");
    assert!(e.to_string().contains("strategy"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numpy_order_sums_of_large_host_inputs_do_not_stream() {
    // 2^26 float32 samples and their weights: 512 MiB, past the size from which host inputs
    // stream, which numpy's order cannot (its chunks are not cut at numpy's blocks).
    let mut r = rng();
    let n = (1usize << 26) + 12_345;
    let x: Vec<f32> = (0..n).map(|_| r.gen_range(-4.2f32..4.2)).collect();
    let (w32, _) = weights(n, false, &mut r);
    let spec = BinSpec::Uniform {
        nbins: 1000,
        range: Some((-4.0, 4.0)),
    };
    let (want, want_tallies) = cpu_numpy(
        Samples::F32(&x),
        Weights::F32(&w32),
        &spec,
        OutOfRange::Ignore,
    );
    let want = bits(&want);
    let options = HistogramOptions::new(spec.clone()).sums(WeightSums::Numpy);
    // One GPU copies the input whole where it fits the device.
    let gpu = histogram(
        Samples::F32(&x),
        Some(Weights::F32(&w32)),
        &options.clone().backend(Backend::Cuda),
    )
    .expect("the whole input on one GPU");
    assert_eq!(gpu.engine.backend, Backend::Cuda);
    assert_eq!(gpu.tallies, want_tallies);
    assert_eq!(bits(&gpu.counts), want, "one GPU, the input whole");
    // Where it does not fit (a 64 MiB budget), the automatic backend takes the CPU engine and
    // says why; the CUDA backend refuses. One CPU thread, so that the cost model picks the GPU
    // first (sixteen count 512 MiB of host memory before its copy to the GPU would end).
    let small = options.clone().stream_options(StreamOptions {
        device_budget: Some(64 << 20),
        ..StreamOptions::default()
    });
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let auto = one_thread
        .install(|| {
            histogram(
                Samples::F32(&x),
                Some(Weights::F32(&w32)),
                &small.clone().backend(Backend::Auto),
            )
        })
        .expect("the CPU engine");
    assert_eq!(auto.engine.backend, Backend::Cpu, "{}", auto.engine.detail);
    assert!(
        auto.engine.detail.contains("do not stream"),
        "{}",
        auto.engine.detail
    );
    assert_eq!(bits(&auto.counts), want, "auto, on the CPU");
    let e = histogram(
        Samples::F32(&x),
        Some(Weights::F32(&w32)),
        &small.backend(Backend::Cuda),
    )
    .expect_err("a streamed input refuses numpy's order");
    assert!(e.to_string().contains("streamed input"), "{e}");
    // Integer weights are exact in any order: a streamed input takes them with numpy's order
    // asked for.
    let wi: Vec<i32> = (0..n).map(|_| r.gen_range(-1000..1000)).collect();
    let cpu = histogram(
        Samples::F32(&x),
        Some(Weights::Int(IntWeights::I32(&wi))),
        &options.clone().backend(Backend::Cpu),
    )
    .unwrap();
    let streamed = histogram(
        Samples::F32(&x),
        Some(Weights::Int(IntWeights::I32(&wi))),
        &options
            .backend(Backend::Cuda)
            .stream(smemkit::histogram::StreamMode::Always),
    )
    .expect("integer weights stream");
    assert_eq!(streamed.counts, cpu.counts, "integer weights, streamed");
}
