//! End-to-end tests of the array operations, matmul, the labs and the benchmark plots.

use std::path::Path;

use tempfile::TempDir;

mod common;
use common::*;

#[test]
fn stencil_transpose_and_reverse_over_npy() {
    let dir = TempDir::new().unwrap();
    // A 2 x 3 int32 matrix 0..6.
    let m: Vec<u8> = (0i32..6).flat_map(|v| v.to_le_bytes()).collect();
    let mat = write(&dir, "m.npy", &npy("<i4", false, &[2, 3], &m));
    let out = dir.path().join("t.npy");
    let r = smemkit(&["transpose", p(&mat), "--out", p(&out), "--backend", "cpu"]);
    assert!(r.ok, "{}", r.stderr);
    let t: Vec<i32> = npy_data(&out)
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(t, vec![0, 3, 1, 4, 2, 5]);

    let out = dir.path().join("r.npy");
    let r = smemkit(&[
        "reverse",
        p(&mat),
        "--out",
        p(&out),
        "--backend",
        "cpu",
        "--kernel",
        "carved",
    ]);
    assert!(r.ok, "{}", r.stderr);
    let v: Vec<i32> = npy_data(&out)
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(v, vec![5, 4, 3, 2, 1, 0]);

    // Radius 1, plain sums of int32 with zeros beyond the ends: [1, 3, 6, 9, 12, 9].
    let out = dir.path().join("s.npy");
    let r = smemkit(&[
        "stencil",
        p(&mat),
        "--radius",
        "1",
        "--out",
        p(&out),
        "--backend",
        "cpu",
    ]);
    assert!(r.ok, "{}", r.stderr);
    let s: Vec<i32> = npy_data(&out)
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(s, vec![1, 3, 6, 9, 12, 9]);

    // Floats take weights; wrap makes the ends see each other.
    let f: Vec<u8> = [1.0f32, 2.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let fl = write(&dir, "f.npy", &npy("<f4", false, &[3], &f));
    let out = dir.path().join("sf.npy");
    let r = smemkit(&[
        "stencil",
        p(&fl),
        "--radius",
        "1",
        "--weights",
        "1,10,100",
        "--boundary",
        "wrap",
        "--out",
        p(&out),
        "--backend",
        "cpu",
    ]);
    assert!(r.ok, "{}", r.stderr);
    let s: Vec<f32> = npy_data(&out)
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(
        s,
        vec![4.0 + 10.0 + 200.0, 1.0 + 20.0 + 400.0, 2.0 + 40.0 + 100.0]
    );

    // Bad requests: one error line, no output file.
    for (args, needle) in [
        (
            vec!["stencil", p(&mat), "--radius", "1", "--weights", "1,1,1"],
            "plain sum",
        ),
        (
            vec!["stencil", p(&fl), "--radius", "65", "--weights", "1"],
            "radius 65",
        ),
        (vec!["transpose", p(&fl)], "2-D"),
        (
            vec!["reverse", p(&mat), "--kernel", "shuffle"],
            "unknown reverse kernel",
        ),
    ] {
        let bad = dir.path().join("bad.npy");
        let mut all = args.clone();
        all.extend(["--out", p(&bad), "--backend", "cpu"]);
        let r = smemkit(&all);
        assert!(
            !r.ok && r.stderr.contains(needle) && !r.stderr.contains("panicked"),
            "{all:?}: {}",
            r.stderr
        );
        assert!(!bad.exists(), "{all:?} left an output file");
    }
}

#[test]
fn lab_banks_prints_the_bank_rule() {
    let r = smemkit(&["lab", "banks"]);
    assert!(r.ok, "{}", r.stderr);
    // Stride 32 puts all 32 lanes in one bank, with or without a GPU to measure it.
    assert!(
        r.stdout
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["32", "32x"])),
        "{}",
        r.stdout
    );
    if !smemkit::internals::gpu::is_available() {
        assert!(r.stdout.contains("predictions only"), "{}", r.stdout);
    }
    let r = smemkit(&["lab", "tides"]);
    assert!(
        !r.ok && r.stderr.contains("unknown lab experiment"),
        "{}",
        r.stderr
    );
}

#[test]
fn lab_cache_checks_its_options_and_asks_for_a_gpu() {
    let r = smemkit(&["lab", "cache", "--radii", "3,65"]);
    assert!(
        !r.ok && r.stderr.contains("radius 65") && !r.stderr.contains("panicked"),
        "{}",
        r.stderr
    );
    let r = smemkit(&["lab", "cache", "--plot", "x.gif"]);
    assert!(!r.ok && r.stderr.contains("plot"), "{}", r.stderr);
    if !smemkit::internals::gpu::is_available() {
        let r = smemkit(&["lab", "cache", "--log2-n", "12"]);
        assert!(
            !r.ok && r.stderr.contains("needs a CUDA GPU") && !r.stderr.contains("panicked"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn plot_bench_draws_benchmark_lines() {
    let dir = TempDir::new().unwrap();
    let rows = [
        r#"{"impl":"smemkit/shared","op":"hist","dist":"uniform","nbins":256,"dtype":"i32","gbps":2900.0,"correct":true}"#,
        r#"{"impl":"smemkit/shared","op":"hist","dist":"uniform","nbins":4096,"dtype":"i32","gbps":2800.0,"correct":true}"#,
        r#"{"impl":"cub","op":"hist","dist":"uniform","nbins":256,"dtype":"i32","gbps":1700.0,"correct":true}"#,
        "compiler chatter that is not JSON",
    ];
    let data = write(&dir, "rows.jsonl", rows.join("\n").as_bytes());
    let out = dir.path().join("sweep.svg");
    let r = smemkit(&["plot-bench", p(&data), "--out", p(&out)]);
    assert!(r.ok, "{}", r.stderr);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(
        svg.contains("smemkit/shared") && svg.contains("cub"),
        "legend names every line"
    );
    let empty = write(&dir, "empty.jsonl", b"nothing here\n");
    let r = smemkit(&[
        "plot-bench",
        p(&empty),
        "--out",
        p(&dir.path().join("e.svg")),
    ]);
    assert!(
        !r.ok && r.stderr.contains("no correct histogram rows"),
        "{}",
        r.stderr
    );
}

#[test]
fn array_operation_benchmarks_ask_for_the_gpu() {
    let r = smemkit(&["bench", "--op", "transpose"]);
    assert!(!r.ok && r.stderr.contains("on the GPU"), "{}", r.stderr);
    if !smemkit::internals::gpu::is_available() {
        let r = smemkit(&["bench", "--backend", "cuda", "--op", "reverse"]);
        assert!(!r.ok && r.stderr.contains("CUDA"), "{}", r.stderr);
    }
}

#[test]
fn matmul_over_npy_with_transposes_and_fortran_order() {
    let dir = TempDir::new().unwrap();
    let f32s = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let read_f32 = |path: &Path| -> Vec<f32> {
        npy_data(path)
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    // A = [[1, 2, 3], [4, 5, 6]] (C order), B = [[1, 0], [0, 1], [1, 1]] (C order).
    let a = write(
        &dir,
        "a.npy",
        &npy("<f4", false, &[2, 3], &f32s(&[1., 2., 3., 4., 5., 6.])),
    );
    let b = write(
        &dir,
        "b.npy",
        &npy("<f4", false, &[3, 2], &f32s(&[1., 0., 0., 1., 1., 1.])),
    );
    let out = dir.path().join("c.npy");
    let r = smemkit(&["matmul", p(&a), p(&b), "--out", p(&out), "--backend", "cpu"]);
    assert!(r.ok, "{}", r.stderr);
    // A B = [[4, 5], [10, 11]].
    assert_eq!(read_f32(&out), vec![4., 5., 10., 11.]);
    let bytes = std::fs::read(&out).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("(2, 2, )"));

    // B^T A^T = (A B)^T = [[4, 10], [5, 11]].
    let r = smemkit(&[
        "matmul",
        p(&b),
        p(&a),
        "--transpose-a",
        "--transpose-b",
        "--out",
        p(&out),
        "--backend",
        "cpu",
    ]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(read_f32(&out), vec![4., 10., 5., 11.]);

    // A in Fortran order (its bytes column by column) is the same A.
    let af = write(
        &dir,
        "af.npy",
        &npy("<f4", true, &[2, 3], &f32s(&[1., 4., 2., 5., 3., 6.])),
    );
    let r = smemkit(&[
        "matmul",
        p(&af),
        p(&b),
        "--out",
        p(&out),
        "--backend",
        "cpu",
    ]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(read_f32(&out), vec![4., 5., 10., 11.]);

    // Bad requests: one error line, no output file.
    let i32s = write(&dir, "i.npy", &npy("<i4", false, &[2, 2], &[0u8; 16]));
    let flat = write(
        &dir,
        "flat.npy",
        &npy("<f4", false, &[3], &f32s(&[1., 2., 3.])),
    );
    for (args, needle) in [
        (vec!["matmul", p(&a), p(&a)], "inner dimensions differ"),
        (vec!["matmul", p(&i32s), p(&b)], "float32"),
        (vec!["matmul", p(&flat), p(&b)], "2-D"),
        (
            vec!["matmul", p(&a), p(&b), "--kernel", "cublas"],
            "unknown matmul kernel",
        ),
    ] {
        let bad = dir.path().join("bad.npy");
        let mut all = args.clone();
        all.extend(["--out", p(&bad), "--backend", "cpu"]);
        let r = smemkit(&all);
        assert!(
            !r.ok && r.stderr.contains(needle) && !r.stderr.contains("panicked"),
            "{all:?}: {}",
            r.stderr
        );
        assert!(!bad.exists(), "{all:?} left {}", bad.display());
    }
}
