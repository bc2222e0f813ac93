//! GPU tests of page-locked host memory and the streaming pipeline: every memory type (pageable,
//! pinned, registered, mapped zero-copy, a file), chunk sizes that split nothing evenly, inputs of
//! 0, 1 and many chunks, every sample type, weights, every strategy, and a device budget far smaller
//! than the input (an input "larger than the device"); each result equal to the CPU engine's. They
//! need a CUDA GPU and are ignored elsewhere; the device machine runs them through `.gpu/run-tests`.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::gpu::host_memory::{MappedBuffer, PinnedBuffer, Registered};
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, EngineOutput, WeightKind};
use smemkit::internals::histogram::cuda::stream::{
    self, FileInput, StreamInput, StreamMode, StreamOptions, Streamer,
};
use smemkit::internals::histogram::job::Job;
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice},
    sample::{SampleType, Samples, Weights},
    Backend,
};

const GPU: &str = "needs a CUDA GPU";

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Options with `chunk` samples of `size` bytes per chunk.
fn opts(chunk: usize, size: usize, depth: usize) -> StreamOptions {
    StreamOptions {
        chunk_bytes: chunk * size,
        depth,
        device_budget: None,
        fill_threads: 0,
    }
}

/// int32 samples in [-5, nbins + 5), so that some fall below and above.
fn ints(n: usize, nbins: usize, r: &mut Xoshiro256PlusPlus) -> Vec<i32> {
    (0..n).map(|_| r.gen_range(-5..nbins as i32 + 5)).collect()
}

/// The CPU engine's result for the same request.
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
            if let Some(i) = g.iter().zip(c).position(|(a, b)| a != b) {
                panic!(
                    "{what}: bin {i}: gpu {} cpu {} ({})",
                    g[i], c[i], got.detail
                );
            }
            assert_eq!(g.len(), c.len(), "{what}: bins");
        }
        (Counts::Weighted(g), Counts::Weighted(c)) => {
            assert_eq!(g.len(), c.len(), "{what}: bins");
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

/// The engine a stream or zero-copy run goes through (sized by its runs).
fn engine(
    ty: SampleType,
    w: WeightKind,
    binning: &Binning,
    choice: StrategyChoice,
) -> smemkit::Result<DeviceEngine> {
    let what = Counting {
        sample_type: ty,
        weights: w,
        binning,
        policy: OutOfRange::Ignore,
    };
    DeviceEngine::unbounded(
        &smemkit::internals::gpu::gpu().expect("a GPU"),
        what,
        choice,
        None,
    )
}

fn prepared(
    ty: SampleType,
    w: WeightKind,
    binning: &Binning,
    choice: StrategyChoice,
) -> DeviceEngine {
    engine(ty, w, binning, choice).expect("prepare")
}

/// Streams `input` in chunks of `chunk` samples and compares with the CPU engine.
fn check_stream(
    input: &StreamInput<'_>,
    host: Samples<'_>,
    spec: &BinSpec,
    chunk: usize,
    what: &str,
) {
    let binning = Binning::resolve(spec, host).unwrap();
    let ty = host.sample_type();
    let job = Job {
        weights: None,
        binning: &binning,
        policy: OutOfRange::Ignore,
        strategy: StrategyChoice::Auto,
        stream: opts(chunk, ty.size(), 3),
        progress: None,
        sums: Default::default(),
    };
    let got = stream::histogram(input, &job).unwrap_or_else(|e| panic!("{what}: {e}"));
    same(&got, &cpu(host, None, spec), what);
}

/// Each memory type, with chunks of a prime number of samples (no chunk boundary falls on a
/// vector, block or page boundary), then zero-copy from mapped and registered memory.
fn every_memory_type(n: usize, chunk: usize) {
    let gpu = smemkit::internals::gpu::gpu().expect("a GPU");
    let mut r = rng();
    let nbins = 1000;
    let spec = BinSpec::Integer { nbins };
    let data = ints(n, nbins, &mut r);
    let host = Samples::I32(&data);
    check_stream(&StreamInput::Host(host), host, &spec, chunk, "pageable");
    let pinned = PinnedBuffer::from_slice(&gpu, &data).unwrap();
    check_stream(
        &StreamInput::Locked(pinned.locked()),
        host,
        &spec,
        chunk,
        "pinned",
    );
    {
        let reg = Registered::new(&gpu, &data).unwrap();
        check_stream(
            &StreamInput::Locked(reg.locked()),
            host,
            &spec,
            chunk,
            "registered",
        );
        if reg.device_ptr() % 16 == 0 {
            let binning = Binning::resolve(&spec, host).unwrap();
            let p = prepared(
                SampleType::I32,
                WeightKind::None,
                &binning,
                StrategyChoice::Auto,
            );
            let got = stream::run_zero_copy(&p, &reg.zero_copy()).unwrap();
            same(&got, &cpu(host, None, &spec), "registered zero-copy");
        }
    }
    let mapped = MappedBuffer::from_slice(&gpu, &data).unwrap();
    check_stream(
        &StreamInput::Locked(mapped.locked()),
        host,
        &spec,
        chunk,
        "mapped, streamed",
    );
    let binning = Binning::resolve(&spec, host).unwrap();
    let p = prepared(
        SampleType::I32,
        WeightKind::None,
        &binning,
        StrategyChoice::Auto,
    );
    let got = stream::run_zero_copy(&p, &mapped.zero_copy()).unwrap();
    same(&got, &cpu(host, None, &spec), "mapped zero-copy");
    // A file with a 13-byte header before the samples.
    let dir = tempdir();
    let path = dir.join("samples.bin");
    let mut bytes = vec![7u8; 13];
    bytes.extend(data.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(&path, &bytes).unwrap();
    let file = FileInput::open(&path, 13, SampleType::I32, None).unwrap();
    check_stream(&StreamInput::File(&file), host, &spec, chunk, "file");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "smemkit-gpu-stream-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_memory_type_streams_like_the_cpu() {
    let _ = GPU;
    every_memory_type(3_000_017, 99_991);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_stream_for_sanitizers() {
    // Small enough for compute-sanitizer: a few uneven chunks of each memory type.
    every_memory_type(40_009, 9_973);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn zero_one_and_many_chunks() {
    let mut r = rng();
    let spec = BinSpec::Integer { nbins: 300 };
    for (n, chunk) in [
        (0usize, 1000usize),
        (1, 1000),
        (999, 1000),
        (1000, 1000),
        (1001, 1000),
        (17, 1),
        (100_003, 7),
        (1_000_000, 4096),
    ] {
        let data = ints(n, 300, &mut r);
        let host = Samples::I32(&data);
        check_stream(
            &StreamInput::Host(host),
            host,
            &spec,
            chunk,
            &format!("n {n} chunk {chunk}"),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_sample_type_streams() {
    let mut r = rng();
    let n = 250_007;
    let chunk = 30_011;
    macro_rules! ints_of {
        ($t:ty, $tag:ident) => {{
            let v: Vec<$t> = (0..n).map(|_| r.gen_range(0..120) as $t).collect();
            let s = Samples::$tag(&v);
            check_stream(
                &StreamInput::Host(s),
                s,
                &BinSpec::Integer { nbins: 100 },
                chunk,
                stringify!($t),
            );
        }};
    }
    ints_of!(u8, U8);
    ints_of!(u16, U16);
    ints_of!(u32, U32);
    ints_of!(u64, U64);
    ints_of!(i8, I8);
    ints_of!(i16, I16);
    ints_of!(i32, I32);
    ints_of!(i64, I64);
    let spec = BinSpec::Uniform {
        nbins: 77,
        range: Some((-1.0, 1.0)),
    };
    let f: Vec<f32> = (0..n)
        .map(|i| {
            if i % 1000 == 0 {
                f32::NAN
            } else {
                r.gen_range(-1.2f32..1.2)
            }
        })
        .collect();
    check_stream(
        &StreamInput::Host(Samples::F32(&f)),
        Samples::F32(&f),
        &spec,
        chunk,
        "f32",
    );
    let d: Vec<f64> = f.iter().map(|&x| x as f64).collect();
    check_stream(
        &StreamInput::Host(Samples::F64(&d)),
        Samples::F64(&d),
        &spec,
        chunk,
        "f64",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_strategy_streams() {
    let mut r = rng();
    for (nbins, choices) in [
        (
            4096usize,
            vec![StrategyChoice::Shared, StrategyChoice::Global],
        ),
        (
            100_000,
            vec![
                StrategyChoice::Cluster(Some(4)),
                StrategyChoice::Global,
                StrategyChoice::Partition,
            ],
        ),
    ] {
        let data = ints(2_000_003, nbins, &mut r);
        let host = Samples::I32(&data);
        let spec = BinSpec::Integer { nbins };
        let binning = Binning::resolve(&spec, host).unwrap();
        let want = cpu(host, None, &spec);
        for choice in choices {
            let p = match engine(SampleType::I32, WeightKind::None, &binning, choice) {
                Ok(p) => p,
                Err(smemkit::Error::StrategyUnsupported { .. }) => continue,
                Err(e) => panic!("{choice:?}: {e}"),
            };
            let mut s = Streamer::new(
                p.gpu().clone(),
                SampleType::I32,
                WeightKind::None,
                data.len(),
                &opts(123_457, 4, 2),
            )
            .unwrap();
            // Twice through the same pipeline: slots and events are reused correctly.
            for round in 0..2 {
                let got = s.run(&p, &StreamInput::Host(host), None, None).unwrap();
                same(&got, &want, &format!("{choice:?} round {round}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn weights_stream_beside_the_samples() {
    let mut r = rng();
    let n = 500_009;
    let data = ints(n, 64, &mut r);
    let w64: Vec<f64> = (0..n).map(|_| r.gen_range(0.0..2.0)).collect();
    let w32: Vec<f32> = w64.iter().map(|&x| x as f32).collect();
    let spec = BinSpec::Integer { nbins: 64 };
    let host = Samples::I32(&data);
    let binning = Binning::resolve(&spec, host).unwrap();
    for w in [Weights::F64(&w64), Weights::F32(&w32)] {
        let job = Job {
            weights: Some(w),
            binning: &binning,
            policy: OutOfRange::Ignore,
            strategy: StrategyChoice::Auto,
            stream: opts(65_537, 4, 3),
            progress: None,
            sums: Default::default(),
        };
        let got = stream::histogram(&StreamInput::Host(host), &job).unwrap();
        same(&got, &cpu(host, Some(w), &spec), "weights");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_input_larger_than_the_device_budget_streams() {
    // 64 MiB of samples through a 1 MiB device budget: the library's own entry point must choose
    // to stream (on Auto) and cut the input into chunks that fit.
    let mut r = rng();
    let n = 16 << 20;
    let data = ints(n, 5000, &mut r);
    let spec = BinSpec::Integer { nbins: 5000 };
    let options = HistogramOptions::new(spec.clone())
        .backend(Backend::Cuda)
        .stream(StreamMode::Auto)
        .stream_options(StreamOptions {
            device_budget: Some(1 << 20),
            ..StreamOptions::default()
        });
    let seen = std::sync::atomic::AtomicU64::new(0);
    let report = |b: u64| seen.store(b, std::sync::atomic::Ordering::Relaxed);
    let got = smemkit::internals::histogram::histogram_with_progress(
        Samples::I32(&data),
        None,
        &options,
        Some(&report),
    )
    .unwrap();
    assert!(
        got.engine.detail.contains("streamed"),
        "{}",
        got.engine.detail
    );
    let want = cpu(Samples::I32(&data), None, &spec);
    assert_eq!(got.counts, want.counts);
    assert_eq!(got.tallies, want.tallies);
    assert_eq!(
        seen.into_inner(),
        (n * 4) as u64,
        "progress ends at the input's size"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_requests_are_errors() {
    let gpu = smemkit::internals::gpu::gpu().unwrap();
    let data = vec![1i32; 1000];
    let spec = BinSpec::Integer { nbins: 10 };
    let binning = Binning::resolve(&spec, Samples::I32(&data)).unwrap();
    // A kernel for another sample type.
    let p = prepared(
        SampleType::U8,
        WeightKind::None,
        &binning,
        StrategyChoice::Auto,
    );
    let mut s = Streamer::new(
        gpu.clone(),
        SampleType::I32,
        WeightKind::None,
        1000,
        &opts(100, 4, 2),
    )
    .unwrap();
    assert!(s
        .run(&p, &StreamInput::Host(Samples::I32(&data)), None, None)
        .is_err());
    // A budget too small for one sample per slot.
    let tiny = StreamOptions {
        device_budget: Some(4),
        ..StreamOptions::default()
    };
    assert!(Streamer::new(gpu.clone(), SampleType::I32, WeightKind::None, 1000, &tiny).is_err());
    // Registering the same memory twice is refused by the driver, not a crash.
    let a = Registered::new(&gpu, &data[..]).unwrap();
    assert!(Registered::new(&gpu, &data[..500]).is_err());
    drop(a);
    assert!(Registered::new(&gpu, &data[..500]).is_ok());
}

/// `histogram_file_with_progress` streams a file (samples after a header of an odd length, so
/// never aligned in the file) and gives the CPU engine's histogram, bins found from the data
/// included (a pass of positioned reads for float32 without a range), with and without weights.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_file_streams_like_the_cpu() {
    let mut r = rng();
    let dir = tempdir();
    let n = 1_000_003;
    let data: Vec<f32> = (0..n).map(|_| r.gen_range(-3.0f32..7.0)).collect();
    let weights: Vec<f64> = (0..n).map(|_| r.gen_range(0.0..2.0)).collect();
    let path = dir.join("samples.f32");
    let mut bytes = vec![0xAB; 13];
    bytes.extend(data.iter().flat_map(|v| v.to_ne_bytes()));
    std::fs::write(&path, &bytes).unwrap();
    let file = FileInput::open(&path, 13, SampleType::F32, Some(n)).unwrap();
    for spec in [
        BinSpec::Uniform {
            nbins: 1001,
            range: None,
        },
        BinSpec::Uniform {
            nbins: 64,
            range: Some((-1.0, 5.0)),
        },
    ] {
        for w in [None, Some(Weights::F64(&weights))] {
            let options = HistogramOptions::new(spec.clone())
                .backend(Backend::Cuda)
                .stream_options(opts(77_777, 4, 3));
            assert!(smemkit::histogram::streams_to_one_gpu(
                file.byte_len(),
                &options.clone().stream(StreamMode::Always)
            )
            .unwrap());
            let got = smemkit::internals::histogram::histogram_file_with_progress(
                &file, w, &options, None,
            )
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
            let want = histogram(
                Samples::F32(&data),
                w,
                &HistogramOptions::new(spec.clone()).backend(Backend::Cpu),
            )
            .unwrap();
            assert_eq!(got.edges, want.edges, "{spec:?}");
            assert_eq!(got.tallies, want.tallies, "{spec:?}");
            assert_eq!(got.samples, want.samples);
            let as_result = EngineOutput {
                counts: got.counts.clone(),
                tallies: got.tallies,
                detail: got.engine.detail.clone(),
            };
            same(
                &as_result,
                &want,
                &format!("{spec:?}, weighted {}", w.is_some()),
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file that shrinks after it was opened, before streaming or in the middle of it (cut by the
/// progress callback after the first chunk, so at a known point), is an `Error::Read` naming the
/// file, not short data or a crash; the GPU is usable afterwards.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_file_that_shrinks_while_it_streams_is_an_error() {
    let dir = tempdir();
    let n = 4_000_000usize;
    let data: Vec<i32> = (0..n as i32).map(|i| i % 1000).collect();
    let path = dir.join("shrinks.i32");
    let write = || {
        std::fs::write(
            &path,
            data.iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect::<Vec<u8>>(),
        )
        .unwrap()
    };
    let cut = |len: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len)
            .unwrap()
    };
    let spec = BinSpec::Integer { nbins: 1000 };
    let options = HistogramOptions::new(spec.clone())
        .backend(Backend::Cuda)
        .stream_options(opts(100_000, 4, 3));
    let expect_shrink = |e: smemkit::Error, what: &str| {
        assert!(matches!(e, smemkit::Error::Read { .. }), "{what}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains("shrink") && text.contains("shrinks.i32"),
            "{what}: {text}"
        );
    };

    // Cut between opening and streaming.
    write();
    let file = FileInput::open(&path, 0, SampleType::I32, None).unwrap();
    cut(1_000_002);
    let e =
        smemkit::internals::histogram::histogram_file_with_progress(&file, None, &options, None)
            .unwrap_err();
    expect_shrink(e, "cut before streaming");

    // Cut after the first chunk has gone to the GPU: the next chunk's read finds the end.
    write();
    let file = FileInput::open(&path, 0, SampleType::I32, None).unwrap();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let report = |_bytes: u64| {
        if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            // Chunk 1 (bytes 400 000 to 800 000) now ends early.
            cut(500_000);
        }
    };
    let e = smemkit::internals::histogram::histogram_file_with_progress(
        &file,
        None,
        &options,
        Some(&report),
    )
    .unwrap_err();
    expect_shrink(e, "cut while streaming");
    assert_eq!(calls.into_inner(), 1, "streaming stopped at the cut");

    // The bins' pass over the data (uniform bins without a range) finds it too.
    write();
    let file = FileInput::open(&path, 0, SampleType::I32, None).unwrap();
    cut(10);
    let uniform = HistogramOptions::new(BinSpec::Uniform {
        nbins: 10,
        range: None,
    })
    .backend(Backend::Cuda);
    let e =
        smemkit::internals::histogram::histogram_file_with_progress(&file, None, &uniform, None)
            .unwrap_err();
    expect_shrink(e, "cut before the bins' pass");

    // Nothing is left broken: the whole file streams again.
    write();
    let file = FileInput::open(&path, 0, SampleType::I32, None).unwrap();
    let got =
        smemkit::internals::histogram::histogram_file_with_progress(&file, None, &options, None)
            .unwrap();
    let want = cpu(Samples::I32(&data), None, &spec);
    assert_eq!((got.counts, got.tallies), (want.counts, want.tallies));
    std::fs::remove_dir_all(&dir).unwrap();
}
