//! End-to-end tests of streaming from files to the GPU: flags checked first, short files, and
//! the file larger than the memory it may use.

use std::process::Command;

use tempfile::TempDir;

mod common;
use common::*;

#[test]
fn stream_flags_are_checked_before_any_work() {
    let gen = [
        "hist",
        "--generate",
        "uniform",
        "--count",
        "100",
        "--bins",
        "4",
    ];
    let with = |extra: &[&str]| smemkit(&[&gen[..], extra].concat());
    let r = with(&["--stream", "--no-stream"]);
    assert!(!r.ok && r.stderr.contains("--no-stream"), "{}", r.stderr);
    let r = with(&["--stream", "--backend", "cpu"]);
    assert!(!r.ok && r.stderr.contains("GPU"), "{}", r.stderr);
    let r = with(&["--device-budget", "0", "--backend", "cuda"]);
    assert!(
        !r.ok && r.stderr.contains("--device-budget"),
        "{}",
        r.stderr
    );
    // --no-stream changes nothing on the CPU.
    assert!(with(&["--no-stream", "--backend", "cpu"]).ok);
}

/// A raw or native-endian `.npy` file that streams to the GPU (`--backend cuda --stream`) is
/// read from the file by positioned reads, not mapped: a file cut short of its samples is one
/// clear error line and no output file, found before any GPU work (so this runs anywhere).
#[test]
fn a_file_streamed_to_the_gpu_that_is_cut_short_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let gpu = ["--bins", "4", "--backend", "cuda", "--stream"];
    // 10 bytes of int32: not a whole number of samples.
    let raw = write(&dir, "cut.i32", &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0]);
    fails(
        &dir,
        &[&["hist", p(&raw), "--dtype", "int32"][..], &gpu[..]].concat(),
        "not a whole number of int32 samples",
    );
    // The header promises 4 float64 samples; 3 and a half are there.
    let f = npy("<f8", false, &[4], &[0u8; 28]);
    let cut = write(&dir, "cut.npy", &f);
    fails(
        &dir,
        &[&["hist", p(&cut)][..], &gpu[..]].concat(),
        "need 32 bytes, the file holds 28 there",
    );
    // Empty: numpy's zero counts (tests/numpy_parity.rs); without a GPU the CUDA backend still
    // says it has none.
    let empty = write(&dir, "empty.npy", &npy("<i4", false, &[0], &[]));
    if !smemkit::internals::gpu::is_available() {
        fails(&dir, &[&["hist", p(&empty)][..], &gpu[..]].concat(), "CUDA");
    }
    // The CPU engine still reads through the map, with its own message.
    fails(
        &dir,
        &["hist", p(&cut), "--bins", "4", "--backend", "cpu"],
        "truncated",
    );
    // A whole file: without a GPU, the error names CUDA (on the device machine it runs).
    if !smemkit::internals::gpu::is_available() {
        let data: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let whole = write(&dir, "whole.npy", &npy("<i4", false, &[3], &data));
        fails(&dir, &[&["hist", p(&whole)][..], &gpu[..]].concat(), "CUDA");
    }
}

/// On the GPU, a raw and a `.npy` file that stream are read from the file (the summary says so)
/// and give the CPU engine's histogram; a big-endian `.npy` keeps the mapped reader and agrees too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn files_streamed_from_disk_give_the_cpu_histogram() {
    let dir = TempDir::new().unwrap();
    let values: Vec<i32> = (0..1_000_003).map(|i| (i * 7919) % 1100 - 50).collect();
    let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let be: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let raw = write(&dir, "x.i32", &le);
    let npy_le = write(&dir, "le.npy", &npy("<i4", false, &[values.len()], &le));
    let npy_f = write(
        &dir,
        "f.npy",
        &npy("<i4", true, &[1009, 991], &le[..1009 * 991 * 4]),
    );
    let npy_be = write(&dir, "be.npy", &npy(">i4", false, &[values.len()], &be));
    let cases: [(&[&str], usize, &str); 4] = [
        (
            &[p(&raw), "--dtype", "int32"],
            values.len(),
            "streamed from the file",
        ),
        (&[p(&npy_le)], values.len(), "streamed from the file"),
        (&[p(&npy_f)], 1009 * 991, "streamed from the file"),
        (&[p(&npy_be)], values.len(), "in memory"),
    ];
    for (input, n, how) in cases {
        let bins = ["--bins", "1000"];
        // A 1 MiB device budget makes the 4 MB inputs stream in several chunks; the CPU engine
        // refuses GPU-only flags, so only the GPU runs get it.
        let gpu_flags = ["--backend", "cuda", "--stream", "--device-budget", "1"];
        let gpu = hist_json(&dir, &[input, &bins[..], &gpu_flags[..]].concat());
        let cpu = hist_json(&dir, &[input, &bins[..], &["--backend", "cpu"]].concat());
        assert_eq!(counts(&gpu), counts(&cpu), "{input:?}");
        assert_eq!(gpu["edges"], cpu["edges"], "{input:?}");
        let total: u64 = counts(&cpu).iter().sum();
        assert!(total > 0 && total <= n as u64, "{input:?}");
        let r = smemkit(
            &[
                &["hist"][..],
                input,
                &bins[..],
                &gpu_flags[..],
                &["--no-chart"],
            ]
            .concat(),
        );
        assert!(
            r.ok && r.stdout.contains(how),
            "{input:?}: {}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// "An input larger than host memory": a 3 GiB file streams to the GPU with a peak resident
/// memory far below its size (staging buffers, the CUDA context), because it is read by
/// positioned reads a chunk at a time; through the map every page would be resident (VmHWM counts
/// mapped file pages). The peak is sampled every 2 ms while the process runs, a lower bound of
/// the true peak that the map's resident pages (held until exit) could not slip under.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_file_larger_than_the_memory_it_may_use_streams() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("big.u8");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let block: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        for _ in 0..3 << 10 {
            f.write_all(&block).unwrap();
        }
    }
    // A first, small run compiles the uint8 kernels into the on-disk cache: NVRTC's own peak
    // (about 1 GiB for a module of many kernels) is not what this test bounds.
    let small = dir.path().join("small.u8");
    std::fs::write(&small, vec![7u8; 1 << 20]).unwrap();
    let warm = smemkit(&[
        "hist",
        p(&small),
        "--dtype",
        "uint8",
        "--bins",
        "256",
        "--backend",
        "cuda",
        "--no-chart",
    ]);
    assert!(warm.ok, "{}", warm.stderr);
    let out = dir.path().join("out.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args(["hist", p(&path), "--dtype", "uint8", "--bins", "256"])
        .args([
            "--backend",
            "cuda",
            "--stream",
            "--no-chart",
            "--out",
            p(&out),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = 0u64;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Some(b) = peak_rss(child.id()) {
            peak = peak.max(b);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(status.success(), "smemkit failed");
    eprintln!(
        "peak resident memory {} MiB for a 3072 MiB file",
        peak >> 20
    );
    assert!(peak > 0, "no sample of the process's memory");
    assert!(peak < 1 << 30, "peak resident memory {} MiB", peak >> 20);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let c = counts(&doc);
    assert_eq!(c.iter().sum::<u64>(), 3 << 30);
    // 3 GiB of i % 251 over blocks of 2^20 bytes: bins 0..251 all filled, 251.. empty.
    assert!(c[..251].iter().all(|&v| v > 0) && c[251..].iter().all(|&v| v == 0));
}
