//! GPU tests of the one-launch small runs (`DeviceHistogram::run_small_raw`): counts of random
//! inputs (out of range, NaN, edges) compared with the CPU engine's, written into poisoned
//! outputs, for integer, float32 (estimated and exact), float64 and edge bins under both policies
//! it takes, at sizes around its 16-byte loads and its limit, bin counts around its slices; the
//! edges copied whole; and the histograms it refuses.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogram::cuda::small::{EdgesCopy, SMALL_MAX_SAMPLES};
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec, WeightKind},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice},
    sample::{SampleType, Samples},
    Backend,
};

fn gpu() -> Arc<smemkit::internals::gpu::Gpu> {
    smemkit::internals::gpu::gpu().expect("a CUDA GPU")
}

fn upload<T: DeviceRepr + ValidAsZeroBits>(stream: &Arc<CudaStream>, data: &[T]) -> CudaSlice<T> {
    // cudarc cannot allocate zero elements; one spare element keeps the empty input valid.
    if data.is_empty() {
        return stream.alloc_zeros::<T>(1).expect("alloc");
    }
    stream.clone_htod(data).expect("upload")
}

fn cpu_counts(samples: Samples<'_>, bins: &BinSpec, policy: OutOfRange) -> Vec<u64> {
    let h = histogram(
        samples,
        None,
        &HistogramOptions::new(bins.clone())
            .policy(policy)
            .backend(Backend::Cpu),
    )
    .expect("cpu histogram");
    match h.counts {
        Counts::Unweighted(c) => c,
        _ => panic!("counts expected"),
    }
}

/// One small run of `data` into a poisoned output, with an edges copy of `nbins + 1` words.
fn small_run<T: DeviceRepr + ValidAsZeroBits>(
    h: &DeviceHistogram,
    stream: &Arc<CudaStream>,
    data: &[T],
    nbins: usize,
) -> Vec<u64> {
    let dev = upload(stream, data);
    let counts = upload(stream, &vec![0xA5A5_A5A5_A5A5_A5A5u64; nbins]);
    let src: Vec<u32> = (0..=nbins as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let from = upload(stream, &src);
    let to = upload(stream, &vec![7u32; nbins + 1]);
    let edges = EdgesCopy {
        from: from.device_ptr(stream).0,
        to: to.device_ptr(stream).0,
        bytes: (nbins + 1) * 4,
    };
    // SAFETY: live allocations of this context holding what the call names, read back below
    // (after the stream has run the launch).
    unsafe {
        h.run_small_raw(
            dev.device_ptr(stream).0,
            data.len(),
            counts.device_ptr(stream).0,
            Some(edges),
            stream.cu_stream(),
        )
    }
    .expect("small run");
    assert_eq!(stream.clone_dtoh(&to).unwrap(), src, "edges copy");
    stream.clone_dtoh(&counts).unwrap()
}

// The samples as the CPU engine takes them (functions, whose lifetimes are late-bound).
fn s_i32(x: &[i32]) -> Samples<'_> {
    Samples::I32(x)
}
fn s_f32(x: &[f32]) -> Samples<'_> {
    Samples::F32(x)
}
fn s_f64(x: &[f64]) -> Samples<'_> {
    Samples::F64(x)
}

const SIZES: [usize; 12] = [
    0,
    1,
    2,
    3,
    4,
    15,
    16,
    17,
    1000,
    4097,
    16383,
    SMALL_MAX_SAMPLES,
];
const NBINS: [usize; 7] = [1, 2, 1000, 4095, 4096, 4097, 40000];

fn check<T: DeviceRepr + ValidAsZeroBits + Copy>(
    t: SampleType,
    bins: impl Fn(usize) -> BinSpec,
    data: impl Fn(usize, usize, &mut Xoshiro256PlusPlus) -> Vec<T>,
    samples: impl for<'a> Fn(&'a [T]) -> Samples<'a>,
) {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    for nbins in NBINS {
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            let spec = DeviceHistogramSpec::new(t, bins(nbins))
                .policy(policy)
                .max_samples(SMALL_MAX_SAMPLES);
            let h = DeviceHistogram::new(&gpu, &spec).unwrap();
            assert!(h.prepare_small().unwrap(), "{t} {nbins}");
            for n in SIZES {
                let x = data(n, nbins, &mut r);
                let want = cpu_counts(samples(&x), &bins(nbins), policy);
                let got = small_run(&h, &stream, &x, nbins);
                assert_eq!(got, want, "{t}, {nbins} bins, {n} samples, {policy:?}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_runs_of_integer_bins_are_the_cpu_engines() {
    check(
        SampleType::I32,
        |nbins| BinSpec::Integer { nbins },
        |n, nbins, r| {
            (0..n)
                .map(|_| r.gen_range(-3..nbins as i32 + 3))
                .collect::<Vec<i32>>()
        },
        s_i32,
    );
}

fn floats<T: From<f32> + Copy>(n: usize, lo: f32, hi: f32, r: &mut Xoshiro256PlusPlus) -> Vec<T> {
    let span = hi - lo;
    (0..n)
        .map(|_| {
            let u: f32 = r.gen();
            T::from(match r.gen_range(0..50) {
                0 => f32::NAN,
                1 => lo,
                2 => hi,
                3 => f32::INFINITY,
                _ => lo - 0.1 * span + 1.2 * span * u,
            })
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_runs_of_float_bins_are_the_cpu_engines() {
    let over = |nbins| BinSpec::Uniform {
        nbins,
        range: Some((-4.0, 4.0)),
    };
    check(
        SampleType::F32,
        over,
        |n, _, r| floats::<f32>(n, -4.0, 4.0, r),
        s_f32,
    );
    check(
        SampleType::F64,
        over,
        |n, _, r| floats::<f64>(n, -4.0, 4.0, r),
        s_f64,
    );
    // float32 bins from 0 of width 1 (the exact kernels).
    check(
        SampleType::F32,
        |nbins| BinSpec::Uniform {
            nbins,
            range: Some((0.0, nbins as f64)),
        },
        |n, nbins, r| floats::<f32>(n, 0.0, nbins as f32, r),
        s_f32,
    );
    // Explicit edges, and integer samples over a range.
    check(
        SampleType::F64,
        |nbins| BinSpec::Edges((0..=nbins).map(|i| (i * i) as f64 / nbins as f64).collect()),
        |n, nbins, r| floats::<f64>(n, 0.0, nbins as f32, r),
        s_f64,
    );
    check(
        SampleType::I32,
        |nbins| BinSpec::Uniform {
            nbins,
            range: Some((-5.0, 3.0 * nbins as f64 + 1.0)),
        },
        |n, nbins, r| {
            (0..n)
                .map(|_| r.gen_range(-8..3 * nbins as i32 + 4))
                .collect::<Vec<i32>>()
        },
        s_i32,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_runs_are_refused_where_they_do_not_apply() {
    let gpu = gpu();
    let bins = BinSpec::Integer { nbins: 100 };
    let base = DeviceHistogramSpec::new(SampleType::I32, bins).max_samples(1 << 12);
    for spec in [
        base.clone().weights(WeightKind::F32),
        base.clone().policy(OutOfRange::Error),
        base.clone().strategy(StrategyChoice::Global),
    ] {
        let h = DeviceHistogram::new(&gpu, &spec).unwrap();
        assert!(!h.prepare_small().unwrap(), "{spec:?}");
        assert!(!h.small_ready());
    }
    let h = DeviceHistogram::new(&gpu, &base).unwrap();
    assert!(h.prepare_small().unwrap());
    assert!(h.small_takes(SMALL_MAX_SAMPLES) && !h.small_takes(SMALL_MAX_SAMPLES + 1));
    let stream = gpu.ctx.new_stream().unwrap();
    let counts = upload(&stream, &[0u64; 100]);
    // SAFETY: refused before any launch (too many samples).
    let too_many = unsafe {
        h.run_small_raw(
            0,
            SMALL_MAX_SAMPLES + 1,
            counts.device_ptr(&stream).0,
            None,
            stream.cu_stream(),
        )
    };
    assert!(too_many.is_err());
}
