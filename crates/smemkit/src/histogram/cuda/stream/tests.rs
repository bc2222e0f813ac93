//! Unit tests of streaming that need no GPU.

use super::*;

fn opts(chunk_bytes: usize, depth: usize, budget: Option<usize>) -> StreamOptions {
    StreamOptions {
        chunk_bytes,
        depth,
        device_budget: budget,
        fill_threads: 0,
    }
}

#[test]
fn chunks_cover_the_input_and_respect_the_budget() {
    let p = chunk_plan(1000, 4, 4, &opts(400, 3, None), 1 << 30).unwrap();
    assert_eq!((p.chunk_samples, p.chunks), (100, 10));
    // A budget of 1200 bytes over 3 slots leaves 400 bytes a slot: 50 samples with f64 weights.
    let p = chunk_plan(1001, 4, 8 + 4, &opts(1 << 20, 3, Some(1200)), 0).unwrap();
    assert_eq!((p.chunk_samples, p.chunks), (33, 31));
    assert!(p.chunk_samples * 12 * 3 <= 1200);
    // Half the free memory when no budget is given.
    let p = chunk_plan(1 << 30, 4, 4, &opts(1 << 30, 2, None), 4000).unwrap();
    assert_eq!(p.chunk_samples, 250);
    // Never more than the input, never zero chunks of a non-empty input, none of an empty one.
    assert_eq!(
        chunk_plan(5, 8, 8, &opts(1 << 20, 2, None), 1 << 30)
            .unwrap()
            .chunks,
        1
    );
    assert_eq!(
        chunk_plan(0, 8, 8, &opts(1 << 20, 2, None), 1 << 30)
            .unwrap()
            .chunks,
        0
    );
    // A chunk smaller than one sample still holds one.
    assert_eq!(
        chunk_plan(3, 8, 8, &opts(1, 2, None), 1 << 30)
            .unwrap()
            .chunk_samples,
        1
    );
}

#[test]
fn bad_sizes_are_refused() {
    assert!(chunk_plan(10, 4, 4, &opts(64, 1, None), 1 << 30).is_err());
    let e = chunk_plan(10, 8, 8, &opts(64, 3, Some(20)), 0).unwrap_err();
    assert!(e.to_string().contains("budget"), "{e}");
}

#[test]
fn auto_streams_large_inputs_and_inputs_beyond_the_device() {
    assert!(should_stream(StreamMode::Always, 0, 1 << 30));
    assert!(!should_stream(StreamMode::Never, 1 << 40, 0));
    assert!(!should_stream(StreamMode::Auto, 1 << 20, 1 << 30));
    assert!(should_stream(StreamMode::Auto, AUTO_STREAM_BYTES, 1 << 40));
    assert!(should_stream(StreamMode::Auto, 1 << 20, 1 << 19));
}

#[test]
fn files_are_checked_and_read_in_pieces() {
    let dir = std::env::temp_dir().join(format!("smemkit-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.i32");
    let data: Vec<u8> = (0..(3 * FILL_PIECE as u32 + 10)).map(|i| i as u8).collect();
    std::fs::write(&path, &data).unwrap();
    // 9 header bytes, then samples to the end: not a whole number of i32.
    assert!(FileInput::open(&path, 9, SampleType::I32, None).is_err());
    let f = FileInput::open(&path, 10, SampleType::U16, None).unwrap();
    assert_eq!(f.len(), (data.len() - 10) / 2);
    let mut got = vec![0u8; data.len() - 12];
    f.read_into(2, &mut got).unwrap();
    assert_eq!(&got[..], &data[12..]);
    assert!(FileInput::open(&path, 0, SampleType::U8, Some(data.len() + 1)).is_err());
    // A file that shrinks after opening is an error, not short data.
    let f = FileInput::open(&path, 0, SampleType::U8, None).unwrap();
    std::fs::write(&path, &data[..100]).unwrap();
    let mut got = vec![0u8; data.len()];
    let e = f.read_into(0, &mut got).unwrap_err();
    assert!(e.to_string().contains("shrink"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes `values` after a `head`-byte header and checks that the file's bins are the ones
/// found for the same samples in memory, for every kind of spec.
fn same_bins<T: Sample>(dir: &Path, name: &str, head: usize, values: &[T])
where
    for<'b> &'b [T]: Into<Samples<'b>>,
{
    let path = dir.join(name);
    let mut bytes = vec![7u8; head];
    bytes.extend_from_slice(sample_bytes(values.into()));
    std::fs::write(&path, &bytes).unwrap();
    let f = FileInput::open(&path, head as u64, T::TYPE, Some(values.len())).unwrap();
    let specs = [
        BinSpec::Uniform {
            nbins: 7,
            range: None,
        },
        BinSpec::Uniform {
            nbins: 3,
            range: Some((-1.0, 2.0)),
        },
        BinSpec::Integer { nbins: 5 },
        BinSpec::Edges(vec![0.0, 1.0, 4.0]),
    ];
    for spec in &specs {
        let mem = Binning::resolve(spec, values.into());
        let file = f.binning(spec);
        match (mem, file) {
            (Ok(a), Ok(b)) => assert_eq!(a.edges(), b.edges(), "{name} {spec:?}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name} {spec:?}"),
            (a, b) => panic!("{name} {spec:?}: in memory {a:?}, from the file {b:?}"),
        }
    }
}

#[test]
fn file_bins_match_the_bins_in_memory() {
    let dir = std::env::temp_dir().join(format!("smemkit-bins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // More than one piece of EXTREMES_PIECE bytes, extremes in the second piece.
    let n = EXTREMES_PIECE / 4 + 1000;
    let mut v: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
    v[n - 3] = -3.5;
    v[n - 2] = 1e6;
    same_bins(&dir, "a.f32", 128, &v);
    v[n - 1] = f32::NAN;
    same_bins(&dir, "nan.f32", 0, &v);
    same_bins(&dir, "one.f64", 13, &[2.5f64]);
    same_bins(&dir, "const.f64", 0, &[4.0f64; 9]);
    same_bins(&dir, "inf.f64", 0, &[1.0, f64::INFINITY]);
    same_bins::<f32>(&dir, "empty.f32", 64, &[]);
    same_bins(&dir, "a.i64", 3, &[i64::MAX, 5, i64::MIN + 1, -9]);
    same_bins(&dir, "a.u64", 8, &[u64::MAX, 3, (1 << 53) + 1]);
    same_bins(&dir, "a.i8", 1, &[-128i8, 127, 0]);
    same_bins(&dir, "a.u16", 0, &[9u16, 9, 9]);
    // A file that shrinks before the bins' pass over it is an error, as while streaming.
    let f = FileInput::open(&dir.join("a.f32"), 128, SampleType::F32, None).unwrap();
    std::fs::write(dir.join("a.f32"), [0u8; 1000]).unwrap();
    let e = f
        .binning(&BinSpec::Uniform {
            nbins: 4,
            range: None,
        })
        .unwrap_err();
    assert!(e.to_string().contains("shrink"), "{e}");
    // Streaming from a file is for one GPU: the CPU backend is a clear error.
    let f = FileInput::open(&dir.join("a.u16"), 0, SampleType::U16, None).unwrap();
    let options = crate::histogram::HistogramOptions::new(BinSpec::Integer { nbins: 4 })
        .backend(crate::Backend::Cpu);
    assert!(!crate::histogram::streams_to_one_gpu(f.byte_len(), &options).unwrap());
    let e = crate::histogram::histogram_file_with_progress(&f, None, &options, None).unwrap_err();
    assert!(e.to_string().contains("CUDA backend"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
