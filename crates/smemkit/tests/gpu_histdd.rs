//! GPU tests of joint histograms (`kernels/histdd.cu`): the GPU engine against the CPU engine on
//! fresh random inputs (NaN, samples outside the axes, samples on the edges, explicit uneven edges
//! with an empty bin), every layout (rows, columns, separate arrays, interleaved RGB, permuted
//! channels), every strategy forced, weights, and the device-resident entry point on raw pointers
//! and a caller's stream.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogramdd::cuda::{
    DeviceAxis, DeviceJoint, JointLayout, JointRun, JointSpec,
};
use smemkit::{
    bins::BinSpec,
    device::WeightKind,
    histogram::{Counts, StrategyChoice},
    histogramdd::{histogramdd, JointHistogram, JointOptions, JointSamples},
    sample::{SampleType, Samples, Weights},
    Backend,
};

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Normal-ish floats over about [-4, 4], with NaN, far-out values and exact edge values mixed in.
fn floats(n: usize, r: &mut impl Rng, edges: &[f64]) -> Vec<f32> {
    (0..n)
        .map(|_| match r.gen_range(0..100) {
            0 => f32::NAN,
            1 => 1e9,
            2 => -1e9,
            3..=5 => edges[r.gen_range(0..edges.len())] as f32,
            _ => {
                let s: f32 = (0..4).map(|_| r.gen::<f32>()).sum::<f32>() - 2.0;
                s * 2.0
            }
        })
        .collect()
}

fn uniform(nbins: usize, lo: f64, hi: f64) -> BinSpec {
    BinSpec::Uniform {
        nbins,
        range: Some((lo, hi)),
    }
}

fn both(
    s: &JointSamples<'_>,
    w: Option<Weights<'_>>,
    bins: &[BinSpec],
    strategy: StrategyChoice,
) -> (JointHistogram, JointHistogram) {
    let cpu = histogramdd(
        s,
        w,
        &JointOptions::new(bins.to_vec()).backend(Backend::Cpu),
    )
    .unwrap();
    let gpu = histogramdd(
        s,
        w,
        &JointOptions::new(bins.to_vec())
            .backend(Backend::Cuda)
            .strategy(strategy),
    )
    .unwrap_or_else(|e| panic!("{bins:?} {strategy:?}: {e}"));
    assert_eq!(gpu.engine.backend, Backend::Cuda);
    assert_eq!(gpu.edges, cpu.edges);
    assert_eq!(gpu.tallies, cpu.tallies, "{bins:?} {}", gpu.engine.detail);
    (cpu, gpu)
}

fn same_counts(s: &JointSamples<'_>, bins: &[BinSpec], strategy: StrategyChoice) -> String {
    let (cpu, gpu) = both(s, None, bins, strategy);
    assert_eq!(gpu.counts, cpu.counts, "{bins:?}: {}", gpu.engine.detail);
    gpu.engine.detail
}

const STRATEGIES: [StrategyChoice; 6] = [
    StrategyChoice::Auto,
    StrategyChoice::Shared,
    StrategyChoice::Packed(16),
    StrategyChoice::Packed(8),
    StrategyChoice::Cluster(None),
    StrategyChoice::Global,
];

/// Float32 (N, 2) rows, (N, 3) rows, Fortran order, separate arrays and an odd sample count (the
/// vector loops' tails), over uniform bins that need numpy's correction and uneven edges, every
/// strategy that holds the bins.
#[test]
#[ignore = "needs a CUDA GPU"]
fn float32_layouts_and_strategies_match_the_cpu_engine() {
    let mut r = rng();
    let edges = [-4.0, -1.1, -0.3, -0.3, 0.1, 0.7, 2.5, 4.0];
    let n = (1 << 20) + 13;
    let xs = floats(3 * n, &mut r, &edges);
    let rows2 = JointSamples::rows(Samples::F32(&xs[..2 * n]), 2).unwrap();
    let rows3 = JointSamples::rows(Samples::F32(&xs), 3).unwrap();
    let cols3 = JointSamples::columns(Samples::F32(&xs), 3).unwrap();
    let sep = JointSamples::separate(vec![
        Samples::F32(&xs[..n]),
        Samples::F32(&xs[n + 1..2 * n + 1]), // not 16-byte aligned: the strided kernels
    ])
    .unwrap();
    let offset = JointSamples::rows(Samples::F32(&xs[1..2 * n + 1]), 2).unwrap();
    let cases: Vec<(&JointSamples<'_>, Vec<BinSpec>)> = vec![
        (&rows2, vec![uniform(256, -4.0, 4.0)]),
        (&rows2, vec![uniform(100, -3.3, 2.9), uniform(7, -1.0, 1.0)]),
        (&offset, vec![uniform(64, -4.0, 4.0)]),
        (&rows3, vec![uniform(64, -4.0, 4.0)]),
        (&rows3, vec![BinSpec::Edges(edges.to_vec())]),
        (&cols3, vec![uniform(32, -2.0, 3.0)]),
        (&sep, vec![uniform(256, -4.0, 4.0)]),
    ];
    for (s, bins) in &cases {
        for strategy in STRATEGIES {
            match histogramdd(
                s,
                None,
                &JointOptions::new(bins.clone())
                    .backend(Backend::Cuda)
                    .strategy(strategy),
            ) {
                Err(smemkit::Error::StrategyUnsupported { .. }) => continue,
                Err(e) => panic!("{bins:?} {strategy:?}: {e}"),
                Ok(_) => {
                    let d = same_counts(s, bins, strategy);
                    eprintln!("{bins:?} {strategy:?}: {d}");
                }
            }
        }
    }
}

/// Interleaved RGB u8 (the 8-bit tables), permuted channels (strided), i8, u16, i32, f64 samples,
/// with a data-derived range and explicit edges.
#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_and_float64_samples_match_the_cpu_engine() {
    let mut r = rng();
    let n = (1 << 20) + 5;
    let pixels: Vec<u8> = (0..3 * n).map(|_| r.gen()).collect();
    let rgb = JointSamples::interleaved(Samples::U8(&pixels), 3).unwrap();
    for bins in [
        vec![uniform(32, 0.0, 256.0)],
        vec![uniform(64, 10.0, 200.0)],
        vec![BinSpec::Uniform {
            nbins: 17,
            range: None,
        }],
        vec![BinSpec::Edges(vec![0.0, 1.0, 1.0, 100.5, 255.0])],
    ] {
        for strategy in STRATEGIES {
            if histogramdd(
                &rgb,
                None,
                &JointOptions::new(bins.clone())
                    .backend(Backend::Cuda)
                    .strategy(strategy),
            )
            .is_err()
            {
                continue;
            }
            same_counts(&rgb, &bins, strategy);
        }
    }
    let signed: Vec<i8> = (0..2 * n).map(|_| r.gen()).collect();
    let s = JointSamples::rows(Samples::I8(&signed), 2).unwrap();
    same_counts(&s, &[uniform(50, -100.0, 90.0)], StrategyChoice::Auto);
    let u16s: Vec<u16> = (0..3 * n).map(|_| r.gen()).collect();
    let s = JointSamples::columns(Samples::U16(&u16s), 3).unwrap();
    same_counts(&s, &[uniform(40, 100.0, 60000.0)], StrategyChoice::Auto);
    let i32s: Vec<i32> = (0..4 * n).map(|_| r.gen_range(-1000..1000)).collect();
    let s = JointSamples::rows(Samples::I32(&i32s), 4).unwrap();
    same_counts(&s, &[uniform(12, -900.0, 950.0)], StrategyChoice::Auto);
    let f64s: Vec<f64> = floats(5 * n, &mut r, &[-1.0, 0.0, 1.0])
        .into_iter()
        .map(|x| x as f64 * 1.000001)
        .collect();
    // Five axes: the run-time axis count of the strided kernels.
    let s = JointSamples::rows(Samples::F64(&f64s), 5).unwrap();
    same_counts(&s, &[uniform(6, -3.0, 3.0)], StrategyChoice::Auto);
    let s = JointSamples::rows(Samples::F64(&f64s[..2 * n]), 2).unwrap();
    same_counts(&s, &[uniform(300, -3.7, 3.9)], StrategyChoice::Auto);
}

/// Weighted sums (f64 atomics): weights on a grid of 2^-10 with small magnitudes add exactly in
/// any order, so the GPU's sums equal the CPU engine's bit for bit; f32 and f64 weights, shared,
/// cluster and global.
#[test]
#[ignore = "needs a CUDA GPU"]
fn weighted_sums_match_the_cpu_engine() {
    let mut r = rng();
    let n = (1 << 20) + 3;
    let edges = [-4.0, 0.0, 4.0];
    let xs = floats(2 * n, &mut r, &edges);
    let w64: Vec<f64> = (0..n)
        .map(|_| r.gen_range(-1024i32..1024) as f64 / 1024.0)
        .collect();
    let w32: Vec<f32> = w64.iter().map(|&w| w as f32).collect();
    let rows = JointSamples::rows(Samples::F32(&xs), 2).unwrap();
    for bins in [vec![uniform(64, -4.0, 4.0)], vec![uniform(256, -4.0, 4.0)]] {
        for strategy in [
            StrategyChoice::Auto,
            StrategyChoice::Shared,
            StrategyChoice::Cluster(None),
            StrategyChoice::Global,
        ] {
            for w in [Weights::F64(&w64), Weights::F32(&w32)] {
                let ok = histogramdd(
                    &rows,
                    Some(w),
                    &JointOptions::new(bins.clone())
                        .backend(Backend::Cuda)
                        .strategy(strategy),
                );
                if let Err(smemkit::Error::StrategyUnsupported { .. }) = ok {
                    continue;
                }
                let (cpu, gpu) = both(&rows, Some(w), &bins, strategy);
                assert!(matches!(gpu.counts, Counts::Weighted(_)));
                assert_eq!(gpu.counts, cpu.counts, "{bins:?}: {}", gpu.engine.detail);
            }
        }
    }
    // Packed counters count samples only.
    let e = histogramdd(
        &rows,
        Some(Weights::F64(&w64)),
        &JointOptions::new(vec![uniform(64, -4.0, 4.0)])
            .backend(Backend::Cuda)
            .strategy(StrategyChoice::Packed(16)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("weight"), "{e}");
}

/// The device-resident entry point: samples on the device, a caller's stream, raw pointers, the
/// layouts detected from bases and strides (rows, columns, a permuted RGB view), outputs poisoned
/// before a run and accumulated over two.
#[test]
#[ignore = "needs a CUDA GPU"]
fn device_resident_runs_on_raw_pointers() {
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let mut r = rng();
    let n = (1 << 21) + 7;
    let pixels: Vec<u8> = (0..3 * n).map(|_| r.gen()).collect();
    let stream = gpu.ctx.new_stream().unwrap();
    let d_pixels: CudaSlice<u8> = stream.clone_htod(&pixels).unwrap();
    let base = d_pixels.device_ptr(&stream).0;
    let spec = JointSpec {
        sample_type: SampleType::U8,
        bins: vec![uniform(32, 0.0, 256.0); 3],
        weights: WeightKind::None,
        strategy: StrategyChoice::Auto,
    };
    let joint = DeviceJoint::new(&gpu, &spec).unwrap();
    assert_eq!(joint.shape(), vec![32, 32, 32]);
    let out: CudaSlice<u64> = stream.clone_htod(&vec![u64::MAX; joint.nbins()]).unwrap();
    let tallies: CudaSlice<u64> = stream.clone_htod(&[7u64; 3]).unwrap();
    let o = out.device_ptr(&stream).0;
    let t = tallies.device_ptr(&stream).0;
    let rgb: Vec<DeviceAxis> = (0..3)
        .map(|j| DeviceAxis {
            ptr: base + j,
            stride: 3,
        })
        .collect();
    let bgr: Vec<DeviceAxis> = rgb.iter().rev().copied().collect();
    for (axes, permuted) in [(&rgb, false), (&bgr, true)] {
        // SAFETY: the pixels hold 3n bytes, each axis n of them 3 apart; out holds nbins u64,
        // tallies 3; all live past the synchronisation below; the stream is this context's.
        let launched = unsafe {
            joint
                .run_raw(&run(axes, n, 0, o, t, false), stream.cu_stream())
                .unwrap()
        };
        let want = if permuted {
            JointLayout::Strided
        } else {
            JointLayout::Rows(3)
        };
        assert_eq!(launched.layout, want);
        stream.synchronize().unwrap();
        let got = stream.clone_dtoh(&out).unwrap();
        let host = if permuted {
            let b: Vec<u8> = pixels.chunks(3).flat_map(|p| [p[2], p[1], p[0]]).collect();
            cpu_counts(
                &JointSamples::interleaved(Samples::U8(&b), 3).unwrap(),
                &spec,
            )
        } else {
            cpu_counts(
                &JointSamples::interleaved(Samples::U8(&pixels), 3).unwrap(),
                &spec,
            )
        };
        assert_eq!(
            Counts::Unweighted(got),
            host.counts,
            "{}",
            launched.describe()
        );
        assert_eq!(stream.clone_dtoh(&tallies).unwrap(), vec![0, 0, 0]);
    }
    // Accumulating a second run doubles the counts (the loop's last run was the permuted view:
    // count the plain one afresh first).
    // SAFETY: as above.
    unsafe {
        joint
            .run_raw(&run(&rgb, n, 0, o, t, false), stream.cu_stream())
            .unwrap();
        joint
            .run_raw(&run(&rgb, n, 0, o, t, true), stream.cu_stream())
            .unwrap();
    }
    stream.synchronize().unwrap();
    let host = cpu_counts(
        &JointSamples::interleaved(Samples::U8(&pixels), 3).unwrap(),
        &spec,
    );
    let Counts::Unweighted(h) = host.counts else {
        panic!("counts")
    };
    let doubled: Vec<u64> = h.iter().map(|c| 2 * c).collect();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), doubled);
    // Float32 columns with weights, NaN and outside samples: tallies and sums.
    let xs = floats(2 * n, &mut r, &[-4.0, 4.0]);
    let w: Vec<f64> = (0..n).map(|_| r.gen_range(0..64) as f64 / 8.0).collect();
    let d_x: CudaSlice<f32> = stream.clone_htod(&xs).unwrap();
    let d_w: CudaSlice<f64> = stream.clone_htod(&w).unwrap();
    let xb = d_x.device_ptr(&stream).0;
    let spec = JointSpec {
        sample_type: SampleType::F32,
        bins: vec![uniform(256, -4.0, 4.0); 2],
        weights: WeightKind::F64,
        strategy: StrategyChoice::Auto,
    };
    let joint = DeviceJoint::new(&gpu, &spec).unwrap();
    let sums: CudaSlice<u64> = stream.alloc_zeros(joint.nbins()).unwrap();
    let so = sums.device_ptr(&stream).0;
    // Fortran order: axis 0 the first n values, axis 1 the next n (n odd: axis 1 is not 16-byte
    // aligned, so strided).
    let cols = [
        DeviceAxis { ptr: xb, stride: 1 },
        DeviceAxis {
            ptr: xb + 4 * n as u64,
            stride: 1,
        },
    ];
    // SAFETY: as above; the weights hold n f64.
    let launched = unsafe {
        joint
            .run_raw(
                &run(&cols, n, d_w.device_ptr(&stream).0, so, t, false),
                stream.cu_stream(),
            )
            .unwrap()
    };
    stream.synchronize().unwrap();
    let cpu = histogramdd(
        &JointSamples::columns(Samples::F32(&xs), 2).unwrap(),
        Some(Weights::F64(&w)),
        &JointOptions::new(spec.bins.clone()).backend(Backend::Cpu),
    )
    .unwrap();
    let got: Vec<f64> = stream
        .clone_dtoh(&sums)
        .unwrap()
        .into_iter()
        .map(f64::from_bits)
        .collect();
    assert_eq!(Counts::Weighted(got), cpu.counts, "{}", launched.describe());
    assert_eq!(
        stream.clone_dtoh(&tallies).unwrap(),
        vec![cpu.tallies.outside, 0, cpu.tallies.nan]
    );
    // A run whose weights do not match the spec is refused before any launch.
    // SAFETY: refused on the host; nothing is enqueued.
    let e =
        unsafe { joint.run_raw(&run(&cols, n, 0, so, t, false), stream.cu_stream()) }.unwrap_err();
    assert!(e.to_string().contains("weights"), "{e}");
    drop((out, tallies, sums, d_pixels, d_x, d_w));
    drop::<Arc<_>>(gpu);
}

fn cpu_counts(s: &JointSamples<'_>, spec: &JointSpec) -> JointHistogram {
    histogramdd(
        s,
        None,
        &JointOptions::new(spec.bins.clone()).backend(Backend::Cpu),
    )
    .unwrap()
}

fn run(
    axes: &[DeviceAxis],
    n: usize,
    weights: u64,
    out: u64,
    tallies: u64,
    accumulate: bool,
) -> JointRun<'_> {
    JointRun {
        axes,
        n,
        weights,
        out,
        tallies,
        accumulate,
    }
}
