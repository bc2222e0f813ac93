//! Every kernel family loads as machine code for the device (a CUBIN of its exact architecture),
//! never as PTX for the driver to compile (which fills the driver's cache, `CUDA_CACHE_PATH`, and
//! costs a JIT per module): histograms of every sample type (weighted too), 2-D histograms, the
//! array operations, matmul and the bank lab. On Hopper (compute
//! capability 9.0) no module may be PTX; elsewhere the test prints what was.

use smemkit::internals::gpu::compile::{build_stats, ptx_load_reasons};
use smemkit::{
    bins::BinSpec,
    histogram::{histogram, HistogramOptions},
    histogramdd::{histogram2d, JointOptions},
    matmul::{matmul, MatmulKernel, MatrixMut, MatrixRef},
    ops::{reverse, stencil1d, transpose, Boundary, ReverseKernel},
    sample::{Samples, Weights},
    Backend,
};

fn uniform(nbins: usize) -> BinSpec {
    BinSpec::Uniform {
        nbins,
        range: Some((0.0, 100.0)),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_kernel_family_loads_a_cubin_on_hopper() {
    let gpu = smemkit::internals::gpu::gpu().expect("a GPU");
    let n = 1 << 16;
    let u8s: Vec<u8> = (0..n).map(|i| (i % 100) as u8).collect();
    let u16s: Vec<u16> = u8s.iter().map(|&v| v.into()).collect();
    let u32s: Vec<u32> = u8s.iter().map(|&v| v.into()).collect();
    let u64s: Vec<u64> = u8s.iter().map(|&v| v.into()).collect();
    let i8s: Vec<i8> = u8s.iter().map(|&v| v as i8).collect();
    let i16s: Vec<i16> = u8s.iter().map(|&v| v.into()).collect();
    let i32s: Vec<i32> = u8s.iter().map(|&v| v.into()).collect();
    let i64s: Vec<i64> = u8s.iter().map(|&v| v.into()).collect();
    let f32s: Vec<f32> = u8s.iter().map(|&v| v.into()).collect();
    let f64s: Vec<f64> = u8s.iter().map(|&v| v.into()).collect();
    let all = [
        Samples::U8(&u8s),
        Samples::U16(&u16s),
        Samples::U32(&u32s),
        Samples::U64(&u64s),
        Samples::I8(&i8s),
        Samples::I16(&i16s),
        Samples::I32(&i32s),
        Samples::I64(&i64s),
        Samples::F32(&f32s),
        Samples::F64(&f64s),
    ];
    let w32: Vec<f32> = vec![0.5; n];
    let w64: Vec<f64> = vec![0.25; n];
    for s in all {
        for nbins in [256, 1000, 1 << 20] {
            for weights in [None, Some(Weights::F32(&w32)), Some(Weights::F64(&w64))] {
                let options = HistogramOptions::new(uniform(nbins)).backend(Backend::Cuda);
                histogram(s, weights, &options)
                    .unwrap_or_else(|e| panic!("{}, {nbins} bins: {e}", s.sample_type()));
            }
        }
    }
    let joint = JointOptions::new(vec![uniform(64), uniform(32)]).backend(Backend::Cuda);
    histogram2d(Samples::F32(&f32s), Samples::F32(&f32s), None, &joint).unwrap();
    histogram2d(Samples::I32(&i32s), Samples::I32(&i32s), None, &joint).unwrap();
    histogram2d(Samples::F64(&f64s), Samples::F64(&f64s), None, &joint).unwrap();
    stencil1d(&f32s, 3, Some(&[1.0f32; 7]), Boundary::Zero, Backend::Cuda).unwrap();
    transpose(&f32s, 256, 256, Backend::Cuda).unwrap();
    transpose(&u8s, 256, 256, Backend::Cuda).unwrap();
    for k in [
        ReverseKernel::Static,
        ReverseKernel::Dynamic,
        ReverseKernel::Carved,
    ] {
        reverse(&f64s, Backend::Cuda, k).unwrap();
    }
    let (a, b) = (vec![1.0f32; 256 * 256], vec![2.0f32; 256 * 256]);
    for k in [
        MatmulKernel::Tiled16,
        MatmulKernel::RegisterBlocked,
        MatmulKernel::Vectorized,
        MatmulKernel::AsyncCopy,
        MatmulKernel::WarpTiled,
    ] {
        let mut c = vec![0.0f32; 256 * 256];
        matmul(
            MatrixRef::new(&a, 256, 256),
            MatrixRef::new(&b, 256, 256),
            MatrixMut::new(&mut c, 256, 256),
            1.0,
            0.0,
            Backend::Cuda,
            k,
        )
        .unwrap_or_else(|e| panic!("{k:?}: {e}"));
    }
    smemkit::internals::lab::measure_banks().unwrap();
    let stats = build_stats();
    let reasons = ptx_load_reasons();
    eprintln!(
        "{}: {} modules loaded as CUBIN, {} as PTX {reasons:?}",
        gpu.name, stats.cubin_loads, stats.ptx_loads
    );
    assert!(stats.cubin_loads > 0, "no module was loaded at all");
    if gpu.limits.compute_capability == (9, 0) {
        assert_eq!(stats.ptx_loads, 0, "modules loaded from PTX: {reasons:?}");
    }
}
