//! GPU tests of float16 and bfloat16 samples (counted through the host's table of every code's
//! slot, `histogram/cuda/half_table.rs`): host input under every strategy that fits, the
//! shared-memory table kernel of `auto`, uniform bins with and without a range, explicit edges
//! with infinities and a zero-width bin, both counting policies, weights, and device-resident
//! input through `DeviceHistogram` (a view of the codes and raw pointers), each compared with the CPU
//! engine on fresh random data holding NaN, infinities, both zeros, subnormals and values equal to
//! edges. They need a CUDA GPU and are ignored elsewhere.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice, Tallies},
    sample::{SampleType, Samples, Weights},
    Backend,
};

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// 16-bit codes: a normal-ish bulk over about [-6, 6], values exactly on `edges`, and with `wild`
/// any code at all (NaN, infinities, subnormals, both zeros) for one sample in ten.
fn codes(n: usize, t: SampleType, edges: &[f64], wild: bool, r: &mut impl Rng) -> Vec<u16> {
    let code = |x: f64| match t {
        SampleType::F16 => half::f16::from_f64(x).to_bits(),
        _ => half::bf16::from_f64(x).to_bits(),
    };
    (0..n)
        .map(|_| {
            let u: f64 = r.gen();
            if wild && u < 0.1 {
                r.gen::<u16>()
            } else if u < 0.2 && !edges.is_empty() {
                code(edges[r.gen_range(0..edges.len())])
            } else {
                let g: f64 = (0..4).map(|_| r.gen::<f64>()).sum::<f64>() - 2.0;
                code(g * 3.0)
            }
        })
        .collect()
}

fn as_samples(t: SampleType, c: &[u16]) -> Samples<'_> {
    use half::slice::HalfBitsSliceExt;
    match t {
        SampleType::F16 => Samples::F16(c.reinterpret_cast()),
        _ => Samples::BF16(c.reinterpret_cast()),
    }
}

fn cpu(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    bins: &BinSpec,
    policy: OutOfRange,
) -> (Counts, Tallies, Vec<f64>) {
    let h = histogram(
        samples,
        weights,
        &HistogramOptions::new(bins.clone())
            .policy(policy)
            .backend(Backend::Cpu),
    )
    .expect("cpu");
    (h.counts, h.tallies, h.edges)
}

fn same(got: &(Counts, Tallies), want: &(Counts, Tallies, Vec<f64>), what: &str) {
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
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{what}: bin {i}: gpu {a} cpu {b}"
                );
            }
        }
        _ => panic!("{what}: result kinds differ"),
    }
}

/// The host entry point on the GPU with `choice`, against the CPU engine.
fn check(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    bins: &BinSpec,
    policy: OutOfRange,
    choice: StrategyChoice,
    what: &str,
) {
    let want = cpu(samples, weights, bins, policy);
    let gpu = histogram(
        samples,
        weights,
        &HistogramOptions::new(bins.clone())
            .policy(policy)
            .backend(Backend::Cuda)
            .strategy(choice),
    )
    .unwrap_or_else(|e| panic!("{what}: gpu {choice:?}: {e}"));
    assert_eq!(gpu.edges, want.2, "{what}: edges");
    same(
        &(gpu.counts, gpu.tallies),
        &want,
        &format!("{what} {choice:?} ({})", gpu.engine.detail),
    );
}

/// The strategies a caller can force at `nbins` counted bins (those that fit the H100).
fn strategies(nbins: usize) -> Vec<StrategyChoice> {
    let smem = 232_448 - smemkit::internals::histogram::plan::STATIC_SHARED_RESERVE;
    let mut v = vec![StrategyChoice::Auto, StrategyChoice::Global];
    if nbins * 4 <= smem {
        v.push(StrategyChoice::Shared);
        v.push(StrategyChoice::Cluster(Some(2)));
    }
    for bits in [16u32, 8, 4] {
        if smemkit::internals::histogram::plan::packed_bytes(nbins, bits) <= smem {
            v.push(StrategyChoice::Packed(bits));
        }
    }
    v.push(StrategyChoice::Partition);
    v.push(StrategyChoice::Sliced {
        bits: Some(8),
        slices: None,
    });
    if nbins <= 1 << 21 {
        v.push(StrategyChoice::Exchange {
            bits: None,
            size: None,
        });
    }
    v
}

/// Bins the tests cover: a caller's range, the data's range, and explicit edges with infinities
/// and a zero-width bin; counts of bins across the shared table kernel's limit (about 25000) and
/// beyond the u16 table (65533).
fn bin_specs(t: SampleType) -> Vec<(BinSpec, bool)> {
    let mut v = vec![
        // (bins, whether the data may hold any code: a range from the data must be finite)
        (
            BinSpec::Uniform {
                nbins: 256,
                range: Some((-4.0, 4.0)),
            },
            true,
        ),
        // bfloat16 from the data bins in its own precision (8 bits): fewer bins.
        (
            BinSpec::Uniform {
                nbins: if t == SampleType::BF16 { 100 } else { 1000 },
                range: None,
            },
            false,
        ),
        (
            BinSpec::Edges(vec![
                f64::NEG_INFINITY,
                -2.0,
                -0.5,
                0.0,
                0.0,
                1.0,
                3.0,
                f64::INFINITY,
            ]),
            true,
        ),
        (
            BinSpec::Edges((0..=3000).map(|i| -6.0 + i as f64 * 0.004).collect()),
            true,
        ),
    ];
    // bfloat16 with a range bins in float64 (numpy's rule through ml_dtypes): any bin count.
    if t == SampleType::BF16 {
        for nbins in [4096, 40000, 100_000] {
            v.push((
                BinSpec::Uniform {
                    nbins,
                    range: Some((-4.0, 4.0)),
                },
                true,
            ));
        }
    } else {
        v.push((
            BinSpec::Uniform {
                nbins: 1024,
                range: Some((-4.0, 4.0)),
            },
            true,
        ));
    }
    v
}

/// The data the GPU tests draw for each bin spec, as they draw it.
fn data_for(t: SampleType, bins: &BinSpec, wild: bool, n: usize, r: &mut impl Rng) -> Vec<u16> {
    let edges: Vec<f64> = match bins {
        BinSpec::Edges(e) => e.iter().copied().filter(|x| x.is_finite()).collect(),
        _ => vec![-4.0, -1.0, 0.0, 2.5, 4.0],
    };
    codes(n, t, &edges, wild, r)
}

/// The premise of the GPU tests, checked without a GPU: numpy's rule (the CPU engine) takes every
/// bin spec they use with the data they draw for it.
#[test]
fn every_bin_spec_of_the_gpu_tests_resolves_on_the_cpu() {
    let mut r = rng();
    for t in [SampleType::F16, SampleType::BF16] {
        for (bins, wild) in bin_specs(t) {
            let data = data_for(t, &bins, wild, 10_000, &mut r);
            let h = histogram(
                as_samples(t, &data),
                None,
                &HistogramOptions::new(bins.clone()).backend(Backend::Cpu),
            );
            assert!(h.is_ok(), "{t} {bins:?}: {:?}", h.err());
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_samples_every_strategy_match_the_cpu_engine() {
    let mut r = rng();
    for t in [SampleType::F16, SampleType::BF16] {
        for (bins, wild) in bin_specs(t) {
            let data = data_for(t, &bins, wild, 300_001, &mut r);
            let samples = as_samples(t, &data);
            let nbins = match &bins {
                BinSpec::Uniform { nbins, .. } => *nbins,
                BinSpec::Edges(e) => e.len() - 1,
                _ => unreachable!(),
            };
            for choice in strategies(nbins) {
                let what: String = format!("{t} {nbins} bins {bins:?}")
                    .chars()
                    .take(120)
                    .collect();
                check(samples, None, &bins, OutOfRange::Ignore, choice, &what);
            }
            // Clamped: the shared table kernel folds the outside counters into the end bins.
            for choice in [StrategyChoice::Auto, StrategyChoice::Global] {
                let what = format!("{t} clamp {nbins}");
                check(samples, None, &bins, OutOfRange::Clamp, choice, &what);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_samples_weighted_and_large() {
    let mut r = rng();
    let bins = BinSpec::Uniform {
        nbins: 1024,
        range: Some((-4.0, 4.0)),
    };
    for t in [SampleType::F16, SampleType::BF16] {
        let data = codes(200_000, t, &[-1.0, 0.0, 1.0], true, &mut r);
        let w32: Vec<f32> = (0..data.len()).map(|_| r.gen_range(-1.0f32..2.0)).collect();
        let w64: Vec<f64> = w32.iter().map(|&w| w as f64 * 1.5).collect();
        for choice in [
            StrategyChoice::Auto,
            StrategyChoice::Global,
            StrategyChoice::Shared,
        ] {
            check(
                as_samples(t, &data),
                Some(Weights::F32(&w32)),
                &bins,
                OutOfRange::Ignore,
                choice,
                &format!("{t} f32 weights"),
            );
            check(
                as_samples(t, &data),
                Some(Weights::F64(&w64)),
                &bins,
                OutOfRange::Clamp,
                choice,
                &format!("{t} f64 weights"),
            );
        }
        // 2^26 + 7 samples: several blocks' worth per SM, and an odd tail after the 16-byte loads.
        let big = codes((1 << 26) + 7, t, &[-1.0, 0.0, 1.0], true, &mut r);
        check(
            as_samples(t, &big),
            None,
            &bins,
            OutOfRange::Ignore,
            StrategyChoice::Auto,
            &format!("{t} 2^26 + 7"),
        );
        // One value only (hot: every sample on one counter).
        let hot = vec![data[0]; 1 << 22];
        check(
            as_samples(t, &hot),
            None,
            &bins,
            OutOfRange::Ignore,
            StrategyChoice::Auto,
            &format!("{t} one value"),
        );
        // Tiny inputs, shorter than one 16-byte load.
        for n in [1, 3, 7, 8, 9] {
            check(
                as_samples(t, &data[..n]),
                None,
                &bins,
                OutOfRange::Ignore,
                StrategyChoice::Auto,
                &format!("{t} {n} samples"),
            );
        }
    }
}

fn gpu() -> Arc<smemkit::internals::gpu::Gpu> {
    smemkit::internals::gpu::gpu().expect("a CUDA GPU")
}

fn upload<T: cudarc::driver::DeviceRepr>(stream: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    stream.clone_htod(v).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_resident_half_samples_by_view_and_raw_pointer() {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = 1_000_003;
    for t in [SampleType::BF16, SampleType::F16] {
        for (bins, choice) in [
            (
                BinSpec::Uniform {
                    nbins: 4096,
                    range: Some((-2.0, 2.0)),
                },
                StrategyChoice::Auto,
            ),
            (
                BinSpec::Uniform {
                    nbins: 256,
                    range: Some((-4.0, 4.0)),
                },
                StrategyChoice::Packed(8),
            ),
            (
                BinSpec::Edges(vec![f64::NEG_INFINITY, -1.0, 0.0, 0.0, 1.0, f64::INFINITY]),
                StrategyChoice::Global,
            ),
        ] {
            let data = codes(n, t, &[-1.0, 0.0, 1.0], true, &mut r);
            let want = cpu(as_samples(t, &data), None, &bins, OutOfRange::Ignore);
            let spec = DeviceHistogramSpec::new(t, bins.clone())
                .strategy(choice)
                .max_samples(n);
            let h =
                DeviceHistogram::new(&gpu, &spec).unwrap_or_else(|e| panic!("{t} {bins:?}: {e}"));
            let what = format!("{t} device {choice:?} ({})", h.detail());
            // A typed view of the codes.
            let mut out = h.output().unwrap();
            let dev = upload(&stream, &data);
            h.run_bits(&dev.as_view(), None, &mut out, &stream).unwrap();
            same(&out.read(&stream).unwrap(), &want, &what);
            // Raw pointers (what torch and CuPy tensors come as), into poisoned outputs.
            let nb = h.nbins();
            let counts = upload(&stream, &vec![0xdead_beef_u64; nb]);
            let tallies = upload(&stream, &[7u64, 7, 7]);
            // SAFETY: live allocations of this context with the lengths the call names.
            unsafe {
                h.run_raw(
                    &smemkit::device::RawBuffers {
                        input: dev.device_ptr(&stream).0,
                        n,
                        sample_type: t,
                        weights: 0,
                        bins: counts.device_ptr(&stream).0,
                        tallies: tallies.device_ptr(&stream).0,
                    },
                    stream.cu_stream(),
                    false,
                )
            }
            .unwrap();
            let c = stream.clone_dtoh(&counts).unwrap();
            let tl = stream.clone_dtoh(&tallies).unwrap();
            same(
                &(
                    Counts::Unweighted(c),
                    Tallies {
                        below: tl[0],
                        above: tl[1],
                        nan: tl[2],
                    },
                ),
                &want,
                &format!("{what} raw"),
            );
        }
    }
}
