//! GPU tests of the joint histogram kernels' variants (`JointVariant`: edges loaded or computed,
//! groups in flight, prefetch, the packed counters' hot bin, warp aggregation, window plans) and
//! the 4-bit and window tiers: each against the CPU engine, bit for bit, on normal, narrow normal
//! (many packed-counter wraps), uniform and skewed data (every sample in one bin, inside and outside
//! the window), as (N, D) rows and as 16-byte aligned columns of an odd sample count, over axes
//! whose edges the kernels compute (power-of-two widths, other widths) or load (uneven edges), with
//! outputs and tallies poisoned before each run.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogramdd::cuda::{
    DeviceAxis, DeviceJoint, EdgeCheck, JointLayout, JointRun, JointSpec, JointVariant, Window,
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

fn uniform(nbins: usize, lo: f64, hi: f64) -> BinSpec {
    BinSpec::Uniform {
        nbins,
        range: Some((lo, hi)),
    }
}

/// `n * dims` coordinates of one kind of data, sample-major ((N, D) rows).
fn data(kind: &str, n: usize, dims: usize, r: &mut Xoshiro256PlusPlus) -> Vec<f32> {
    (0..n * dims)
        .map(|_| {
            // About standard normal (four uniforms, centred and scaled to unit variance).
            let z: f32 = ((0..4).map(|_| r.gen::<f32>()).sum::<f32>() - 2.0) * 1.732;
            match kind {
                // Normal, with NaN, far-out values and values on the edges of [-4, 4] mixed in.
                "normal" => match r.gen_range(0..200) {
                    0 => f32::NAN,
                    1 => 1e9,
                    2 => -4.0,
                    3 => 4.0,
                    4 => (r.gen_range(-128..=128) as f32) / 32.0,
                    _ => z,
                },
                "narrow" => z * 0.25,
                "uniform" => r.gen_range(-4.5f32..4.5),
                "skewed" => 0.1,
                "skewed-edge" => 3.9,
                _ => unreachable!(),
            }
        })
        .collect()
}

struct Case {
    bins: Vec<BinSpec>,
    /// Every variant of the sweep (else the default and the first build only).
    sweep: bool,
    /// Each axis's edge mode the default variant should take (0 table, 1 linear, 2 power of two).
    modes: Vec<i32>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            bins: vec![uniform(256, -4.0, 4.0); 2],
            sweep: true,
            modes: vec![2, 2],
        },
        Case {
            bins: vec![uniform(100, -4.0, 4.0), uniform(37, -3.0, 3.3)],
            sweep: false,
            modes: vec![-1, -1],
        },
        Case {
            bins: vec![uniform(6, -4.5, 4.5), uniform(12, -4.5, 4.5)],
            sweep: false,
            modes: vec![1, 1],
        },
        Case {
            bins: vec![
                BinSpec::Edges(vec![-4.0, -1.0, -0.5, 0.0, 0.1, 0.2, 0.2, 1.0, 4.0]),
                uniform(64, -4.0, 4.0),
            ],
            sweep: false,
            modes: vec![0, 2],
        },
        Case {
            bins: vec![uniform(64, -4.0, 4.0); 3],
            sweep: true,
            modes: vec![2, 2, 2],
        },
    ]
}

/// The data on the device as rows (one (N, D) buffer) or as D columns, each 16-byte aligned.
struct Placed {
    _buf: CudaSlice<f32>,
    axes: Vec<DeviceAxis>,
}

fn place(stream: &Arc<CudaStream>, rows: &[f32], n: usize, dims: usize, columns: bool) -> Placed {
    if !columns {
        let buf = stream.clone_htod(rows).unwrap();
        let base = buf.device_ptr(stream).0;
        let axes = (0..dims)
            .map(|j| DeviceAxis {
                ptr: base + 4 * j as u64,
                stride: dims as u64,
            })
            .collect();
        return Placed { _buf: buf, axes };
    }
    let pitch = n.next_multiple_of(4);
    let mut cols = vec![0f32; pitch * dims];
    for (i, s) in rows.chunks(dims).enumerate() {
        for (j, &x) in s.iter().enumerate() {
            cols[j * pitch + i] = x;
        }
    }
    let buf = stream.clone_htod(&cols).unwrap();
    let base = buf.device_ptr(stream).0;
    let axes = (0..dims)
        .map(|j| DeviceAxis {
            ptr: base + 4 * (j * pitch) as u64,
            stride: 1,
        })
        .collect();
    Placed { _buf: buf, axes }
}

fn cpu(rows: &[f32], dims: usize, w: Option<&[f64]>, bins: &[BinSpec]) -> JointHistogram {
    histogramdd(
        &JointSamples::rows(Samples::F32(rows), dims).unwrap(),
        w.map(Weights::F64),
        &JointOptions::new(bins.to_vec()).backend(Backend::Cpu),
    )
    .unwrap()
}

/// What one check runs over and must give: the samples on the device in their layout, the device
/// address of their weights (0 for counts) and the CPU engine's answer.
struct Trial<'a> {
    placed: &'a Placed,
    n: usize,
    weights: u64,
    columns: bool,
    want: &'a JointHistogram,
}

/// One run of `joint` (with `variant`) over the trial's samples, outputs poisoned first; the result
/// checked against the trial's answer. Returns the launch's description.
fn check(
    stream: &Arc<CudaStream>,
    joint: &mut DeviceJoint,
    variant: JointVariant,
    trial: &Trial<'_>,
    what: &str,
) -> String {
    let Trial {
        placed,
        n,
        weights,
        columns,
        want,
    } = *trial;
    joint.set_variant(variant);
    let out: CudaSlice<u64> = stream.clone_htod(&vec![u64::MAX; joint.nbins()]).unwrap();
    let tallies: CudaSlice<u64> = stream.clone_htod(&[7u64; 3]).unwrap();
    let run = JointRun {
        axes: &placed.axes,
        n,
        weights,
        out: out.device_ptr(stream).0,
        tallies: tallies.device_ptr(stream).0,
        accumulate: false,
    };
    // SAFETY: every axis addresses n coordinates of a live device buffer, the weights (if any) n
    // f64, out nbins u64 and tallies 3, all alive past the synchronisation below; the stream is
    // this context's.
    let launched = unsafe { joint.enqueue(&run, stream) }
        .unwrap_or_else(|e| panic!("{what} {}: {e}", variant.name()));
    stream.synchronize().unwrap();
    let d = dims_of(joint);
    let layout = if columns {
        JointLayout::Columns(d)
    } else {
        JointLayout::Rows(d)
    };
    assert_eq!(launched.layout, layout, "{what}");
    let words = stream.clone_dtoh(&out).unwrap();
    let got = if weights != 0 {
        Counts::Weighted(words.into_iter().map(f64::from_bits).collect())
    } else {
        Counts::Unweighted(words)
    };
    let describe = launched.describe();
    assert!(got == want.counts, "{what}: counts differ; {describe}");
    assert_eq!(
        stream.clone_dtoh(&tallies).unwrap(),
        vec![want.tallies.outside, 0, want.tallies.nan],
        "{what}: tallies; {describe}"
    );
    describe
}

fn dims_of(joint: &DeviceJoint) -> usize {
    joint.shape().len()
}

/// Every variant of the sweep, `auto`, on every data kind and layout of the benchmark's two cases
/// (2-D 256^2, 3-D 64^3; the default and the first build only on the others: widths whose edges
/// stay in the table or follow a linear formula, uneven edges); the default variant also with every
/// strategy forced that holds those two cases' bins, on rows. Each distinct build compiles once,
/// about 60 NVRTC builds in all.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_variant_counts_exactly() {
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = (1 << 20) + 5;
    let forced = [
        StrategyChoice::Packed(16),
        StrategyChoice::Packed(8),
        StrategyChoice::Packed(4),
        StrategyChoice::Cluster(None),
        StrategyChoice::Global,
    ];
    for case in cases() {
        let dims = case.bins.len();
        for kind in ["normal", "narrow", "uniform", "skewed", "skewed-edge"] {
            let rows = data(kind, n, dims, &mut r);
            let want = cpu(&rows, dims, None, &case.bins);
            for columns in [false, true] {
                let placed = place(&stream, &rows, n, dims, columns);
                let trial = Trial {
                    placed: &placed,
                    n,
                    weights: 0,
                    columns,
                    want: &want,
                };
                let spec = JointSpec {
                    sample_type: SampleType::F32,
                    bins: case.bins.clone(),
                    weights: WeightKind::None,
                    strategy: StrategyChoice::Auto,
                };
                let mut joint = DeviceJoint::new(&gpu, &spec).unwrap();
                let computed = JointVariant {
                    edges: EdgeCheck::Computed,
                    ..JointVariant::DEFAULT
                };
                let mut variants = if case.sweep {
                    JointVariant::sweep()
                } else {
                    vec![JointVariant::DEFAULT, JointVariant::LEGACY]
                };
                if !variants.contains(&computed) {
                    variants.push(computed);
                }
                for v in variants {
                    let what = format!("{:?} {kind} columns={columns}", joint.shape());
                    let d = check(&stream, &mut joint, v, &trial, &what);
                    // The default checks every float32 axis against the edge table; the
                    // computed-edges variant takes each axis's proven formula.
                    if v == JointVariant::DEFAULT {
                        assert!(joint.edge_modes().iter().all(|&m| m == 0), "{what}");
                    }
                    if v == computed {
                        for (j, &m) in case.modes.iter().enumerate() {
                            if m >= 0 {
                                assert_eq!(joint.edge_modes()[j], m, "{what} axis {j}");
                            }
                        }
                    }
                    if (v == JointVariant::DEFAULT || v == computed) && joint.nbins() == 1 << 18 {
                        assert!(d.starts_with("window8"), "{what}: {d}");
                    }
                    if v == JointVariant::LEGACY {
                        assert!(joint.edge_modes().iter().all(|&m| m == 0));
                    }
                }
                // Forced tiers with the default variant, rows only (each is another build).
                for strategy in forced.into_iter().filter(|_| case.sweep && !columns) {
                    let mut joint = DeviceJoint::new(
                        &gpu,
                        &JointSpec {
                            strategy,
                            ..spec.clone()
                        },
                    )
                    .unwrap();
                    if joint.plan(n).is_err() {
                        continue;
                    }
                    let what = format!("{:?} {kind} columns={columns} {strategy:?}", joint.shape());
                    let v = JointVariant::DEFAULT;
                    check(&stream, &mut joint, v, &trial, &what);
                }
            }
        }
    }
}

/// Weighted sums (f64 weights on a coarse binary grid, so that every order of the atomics gives
/// the CPU engine's sums) through the variants that apply to them; the window does not (weighted
/// 3-D counts stay in global memory).
#[test]
#[ignore = "needs a CUDA GPU"]
fn weighted_variants_sum_exactly() {
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = (1 << 19) + 3;
    let d = JointVariant::DEFAULT;
    let variants = [
        JointVariant::LEGACY,
        d,
        JointVariant {
            unroll: 4,
            prefetch: false,
            ..d
        },
        JointVariant {
            window: Window::Bits(16),
            ..d
        },
    ];
    // The benchmark's two cases (a build per variant and layout: kept few).
    for case in cases().into_iter().filter(|c| c.sweep) {
        let dims = case.bins.len();
        let rows = data("normal", n, dims, &mut r);
        let w: Vec<f64> = (0..n).map(|_| r.gen_range(-32..64) as f64 / 8.0).collect();
        let want = cpu(&rows, dims, Some(&w), &case.bins);
        let d_w: CudaSlice<f64> = stream.clone_htod(&w).unwrap();
        for columns in [false, true] {
            let placed = place(&stream, &rows, n, dims, columns);
            let spec = JointSpec {
                sample_type: SampleType::F32,
                bins: case.bins.clone(),
                weights: WeightKind::F64,
                strategy: StrategyChoice::Auto,
            };
            let mut joint = DeviceJoint::new(&gpu, &spec).unwrap();
            for v in variants {
                let what = format!("weighted {:?} columns={columns}", joint.shape());
                // The guard records the weights' use on the stream when it drops, after the run.
                let (weights, _recorded) = d_w.device_ptr(&stream);
                let trial = Trial {
                    placed: &placed,
                    n,
                    weights,
                    columns,
                    want: &want,
                };
                let desc = check(&stream, &mut joint, v, &trial, &what);
                assert!(!desc.starts_with("window"), "{what}: {desc}");
            }
        }
    }
}
