//! The window kernels: their names for every binning, each build alone as a CUBIN for sm_90a
//! (NVRTC, no GPU), and on a GPU the counts of a window equal the CPU engine's counts cut to it,
//! nothing written outside it, the tallies counted only when asked.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::*;
use crate::gpu::compile::tests::toolchain;
use crate::histogram::bins::{BinSpec, OutOfRange};
use crate::histogram::cpu;
use crate::histogram::cuda::kernel_builds_tests::check_one_kernel_cubin;
use crate::histogram::plan::StrategyChoice;

fn counting(t: SampleType, weights: WeightKind, binning: &Binning) -> Counting<'_> {
    Counting {
        sample_type: t,
        weights,
        binning,
        policy: OutOfRange::Ignore,
    }
}

/// One binning per kernel mode that sample type `t` has.
fn binnings(t: SampleType) -> Vec<Binning> {
    let one = |t: SampleType| -> Samples<'static> {
        match t {
            SampleType::I32 => Samples::I32(&[1]),
            SampleType::F32 => Samples::F32(&[1.0]),
            SampleType::F64 => Samples::F64(&[1.0]),
            SampleType::F16 => Samples::F16(&[half::f16::ONE]),
            _ => unreachable!("the types checked below"),
        }
    };
    let mut specs = vec![
        BinSpec::Uniform {
            nbins: 1000,
            range: Some((-1.5, 7.25)),
        },
        BinSpec::Edges(vec![-1.0, 0.0, 0.5, 3.0, 10.0]),
    ];
    if t == SampleType::I32 {
        specs.push(BinSpec::Integer { nbins: 77 });
    }
    if t == SampleType::F32 {
        // Bins from 0 of a power-of-two width: the uniform32x kernels.
        specs.push(BinSpec::Uniform {
            nbins: 256,
            range: Some((0.0, 256.0)),
        });
    }
    specs
        .iter()
        .map(|s| Binning::resolve(s, one(t)).unwrap())
        .collect()
}

#[test]
fn window_kernels_are_named_for_every_mode() {
    let names = |t| {
        binnings(t)
            .iter()
            .map(|b| window_kernel_name(&counting(t, WeightKind::F32, b)).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(SampleType::I32),
        [
            "hist_window_uniform64_f32",
            "hist_window_edges_f32",
            "hist_window_integer_f32"
        ]
    );
    assert_eq!(
        names(SampleType::F32),
        [
            "hist_window_uniform32w_f32",
            "hist_window_edges_f32",
            "hist_window_uniform32x_f32"
        ]
    );
    assert_eq!(
        names(SampleType::F16),
        ["hist_window_lut_f32", "hist_window_lut_f32"]
    );
    let b = &binnings(SampleType::F64)[0];
    assert_eq!(
        window_kernel_name(&counting(SampleType::F64, WeightKind::None, b)).unwrap(),
        "hist_window_uniform64_none"
    );
}

/// Every window kernel of the common types, built alone as a CUBIN for sm_90a (NVRTC only).
#[test]
fn window_kernels_compile_alone_as_cubin_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for t in [
        SampleType::I32,
        SampleType::F32,
        SampleType::F64,
        SampleType::F16,
    ] {
        let mut names = std::collections::BTreeSet::new();
        for b in binnings(t) {
            for w in [WeightKind::None, WeightKind::F32, WeightKind::F64] {
                names.insert(window_kernel_name(&counting(t, w, &b)).unwrap());
            }
        }
        for name in names {
            check_one_kernel_cubin(t, &name);
        }
    }
}

// ---- on a GPU --------------------------------------------------------------------------------

const POISON_U64: u64 = 0xdead_beef_dead_beef;
const POISON_F64: f64 = -1.0e300;
/// Counters past the window in each output buffer: poisoned, and checked untouched.
const PAD: usize = 9;

/// The windows of `n` bins checked: at the start, the middle and the end, one bin, all.
fn windows(n: usize) -> Vec<Range<usize>> {
    let (a, b) = (n / 3, 2 * n / 3);
    vec![0..a.max(1), a..b.max(a + 1), b..n, n / 2..n / 2 + 1, 0..n]
}

/// Counts `samples` (with `weights`) window by window on the GPU and checks each against the CPU
/// engine's histogram cut to it; the tallies kept in the first window only.
fn check_windows(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    spec: &BinSpec,
    policy: OutOfRange,
) {
    let gpu = crate::gpu::gpu().unwrap();
    let binning = Binning::resolve(spec, samples).unwrap();
    let whole =
        crate::sample::with_samples!(samples, s => cpu::histogram(s, weights, &binning, policy));
    let kind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
        Some(Weights::Int(_)) => panic!("the window tests pass float weights"),
    };
    let what = Counting {
        sample_type: samples.sample_type(),
        weights: kind,
        binning: &binning,
        policy,
    };
    let engine = DeviceEngine::window(&gpu, what).unwrap();
    let tallies = gpu.stream.clone_htod(&[0u64; 3]).unwrap();
    let label = format!("{} {spec:?} {policy:?} {kind:?}", samples.sample_type());
    for (i, w) in windows(binning.nbins()).into_iter().enumerate() {
        let len = w.len();
        let out = match &whole.counts {
            Counts::Unweighted(_) => {
                let mut init = vec![0u64; len + PAD];
                init[len..].fill(POISON_U64);
                WindowCounts::Counts(gpu.stream.clone_htod(&init).unwrap())
            }
            _ => {
                let mut init = vec![0f64; len + PAD];
                init[len..].fill(POISON_F64);
                WindowCounts::Sums(gpu.stream.clone_htod(&init).unwrap())
            }
        };
        count_host(
            &engine,
            samples,
            weights,
            w.clone(),
            &out,
            (i == 0).then_some(&tallies),
        )
        .unwrap();
        match (out.read(&gpu, 0..len + PAD).unwrap(), &whole.counts) {
            (Counts::Unweighted(got), Counts::Unweighted(want)) => {
                assert_eq!(got[..len], want[w.clone()], "{label}: window {w:?}");
                assert!(
                    got[len..].iter().all(|&c| c == POISON_U64),
                    "{label}: {w:?}"
                );
            }
            (Counts::Weighted(got), Counts::Weighted(want)) => {
                // The weights are multiples of 1/4 below 2^20: every sum is exact in any order.
                assert_eq!(got[..len], want[w.clone()], "{label}: window {w:?}");
                assert!(
                    got[len..].iter().all(|&c| c == POISON_F64),
                    "{label}: {w:?}"
                );
            }
            _ => panic!("{label}: counts and sums mixed"),
        }
    }
    // Counted in the first window only: once, whatever the number of windows.
    assert_eq!(
        read_tallies(&gpu, &tallies).unwrap(),
        whole.tallies,
        "{label}"
    );
    assert!(
        whole.tallies.below + whole.tallies.above > 0,
        "{label}: the data must fall outside the bins too"
    );
}

fn rng(seed: u64) -> Xoshiro256PlusPlus {
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("window test seed {}", base ^ seed);
    Xoshiro256PlusPlus::seed_from_u64(base ^ seed)
}

/// Odd lengths, so that the kernels' 16-byte loads leave a tail.
const N: usize = 1_000_003;

fn weights(r: &mut impl Rng) -> Vec<f64> {
    (0..N).map(|_| r.gen_range(0..64) as f64 * 0.25).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn windows_of_int32_bins_match_the_cpu_engine() {
    let mut r = rng(1);
    let nbins = 10_007;
    let x: Vec<i32> = (0..N)
        .map(|_| r.gen_range(-40..nbins as i32 + 40))
        .collect();
    let w = weights(&mut r);
    let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
    for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
        for spec in [
            BinSpec::Integer { nbins },
            BinSpec::Uniform {
                nbins: 3001,
                range: Some((-7.5, 9000.25)),
            },
            BinSpec::Edges(vec![-3.0, 0.0, 1.0, 2.5, 100.0, 5000.0, 5000.0, 9999.0]),
        ] {
            check_windows(Samples::I32(&x), None, &spec, policy);
        }
        let spec = BinSpec::Integer { nbins };
        check_windows(Samples::I32(&x), Some(Weights::F64(&w)), &spec, policy);
        check_windows(Samples::I32(&x), Some(Weights::F32(&w32)), &spec, policy);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn windows_of_float_bins_match_the_cpu_engine() {
    let mut r = rng(2);
    let f64s: Vec<f64> = (0..N)
        .map(|i| {
            if i % 97 == 0 {
                f64::NAN
            } else {
                r.gen_range(-2.0..12.0)
            }
        })
        .collect();
    let f32s: Vec<f32> = f64s.iter().map(|&v| v as f32).collect();
    let w = weights(&mut r);
    let specs = [
        BinSpec::Uniform {
            nbins: 65_537,
            range: Some((-1.0, 10.0)),
        },
        // Float32 bins from 0 of a power-of-two width (the uniform32x kernels).
        BinSpec::Uniform {
            nbins: 1024,
            range: Some((0.0, 8.0)),
        },
        BinSpec::Edges((0..=2000).map(|i| -1.0 + i as f64 * 0.0055).collect()),
    ];
    for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
        for spec in &specs {
            check_windows(Samples::F32(&f32s), None, spec, policy);
            check_windows(Samples::F64(&f64s), None, spec, policy);
        }
        check_windows(
            Samples::F64(&f64s),
            Some(Weights::F64(&w)),
            &specs[0],
            policy,
        );
        check_windows(
            Samples::F32(&f32s),
            Some(Weights::F64(&w)),
            &specs[2],
            policy,
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_window_past_the_bins_is_refused() {
    let gpu = crate::gpu::gpu().unwrap();
    let binning = Binning::Integer { nbins: 10 };
    let c =
        DeviceEngine::window(&gpu, counting(SampleType::I32, WeightKind::None, &binning)).unwrap();
    let out = WindowCounts::zeroed(&gpu, 20, false).unwrap();
    let e = count_host(&c, Samples::I32(&[1, 2]), None, 5..11, &out, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("5..11 of 10 bins"), "{e}");
    let small = WindowCounts::zeroed(&gpu, 3, false).unwrap();
    let e = count_host(&c, Samples::I32(&[1, 2]), None, 0..10, &small, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("10 bins into 3 counters"), "{e}");
}

/// A window run without `accumulate` clears the window's counters and the tallies first (the
/// poison goes), writes nothing past the window, and counts as the CPU engine does; a window
/// engine refuses a whole-histogram run and a planned engine a window run.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_window_run_clears_what_it_counts_into_unless_it_accumulates() {
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = rng(3);
    let nbins = 5_000;
    let x: Vec<i32> = (0..N).map(|_| r.gen_range(-9..nbins as i32 + 9)).collect();
    let binning = Binning::Integer { nbins };
    let whole = cpu::histogram(&x[..], None, &binning, OutOfRange::Ignore);
    let Counts::Unweighted(want) = &whole.counts else {
        panic!("counts expected")
    };
    let what = counting(SampleType::I32, WeightKind::None, &binning);
    let engine = DeviceEngine::window(&gpu, what).unwrap();
    let s = &gpu.stream;
    let input = s.clone_htod(&x).unwrap();
    let w = 1234..4321;
    let init = vec![POISON_U64; w.len() + PAD];
    let out = s.clone_htod(&init).unwrap();
    let tallies = s.clone_htod(&[POISON_U64; 3]).unwrap();
    let buffers = RawBuffers {
        input: input.device_ptr(s).0,
        n: N,
        sample_type: SampleType::I32,
        weights: 0,
        bins: out.device_ptr(s).0,
        tallies: tallies.device_ptr(s).0,
    };
    for accumulate in [false, true] {
        // SAFETY: the buffers above, alive until the reads below have synchronised.
        unsafe { engine.enqueue_window(s, &buffers, None, w.clone(), accumulate) }.unwrap();
        let got = s.clone_dtoh(&out).unwrap();
        let times = if accumulate { 2 } else { 1 };
        let expect: Vec<u64> = want[w.clone()].iter().map(|c| c * times).collect();
        assert_eq!(got[..w.len()], expect[..], "accumulate {accumulate}");
        assert!(got[w.len()..].iter().all(|&c| c == POISON_U64));
        let t = read_tallies(&gpu, &tallies).unwrap();
        assert_eq!(
            (t.below, t.above),
            (whole.tallies.below * times, whole.tallies.above * times)
        );
    }
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { engine.enqueue(s, &buffers, None, false) }.unwrap_err();
    assert!(e.to_string().contains("name their window"), "{e}");
    let planned = DeviceEngine::new(&gpu, what, StrategyChoice::Auto, false, N, None).unwrap();
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { planned.enqueue_window(s, &buffers, None, w, false) }.unwrap_err();
    assert!(e.to_string().contains("built for every bin"), "{e}");
}
