//! End-to-end tests of the `smemkit` binary's histogram: every input format and every output
//! format read back and checked against counts worked out by hand; the plan and bench commands.

use tempfile::TempDir;

mod common;
use common::*;

#[test]
fn npy_of_every_integer_dtype_and_byte_order() {
    let dir = TempDir::new().unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("|u1", le_bytes!(u8, false)),
        ("<u2", le_bytes!(u16, false)),
        ("<u4", le_bytes!(u32, false)),
        ("<u8", le_bytes!(u64, false)),
        ("|i1", le_bytes!(i8, false)),
        ("<i2", le_bytes!(i16, false)),
        ("<i4", le_bytes!(i32, false)),
        ("<i8", le_bytes!(i64, false)),
        (">u2", le_bytes!(u16, true)),
        (">i4", le_bytes!(i32, true)),
        (">i8", le_bytes!(i64, true)),
    ];
    for (descr, data) in cases {
        let f = write(&dir, "a.npy", &npy(descr, false, &[8], &data));
        let doc = hist_json(&dir, &[p(&f), "--bins", "4"]);
        assert_eq!(counts(&doc), EXPECTED, "{descr}");
        assert_eq!(doc["tallies"]["above"], 1, "{descr}");
        assert_eq!(doc["samples"], 8);
    }
}

#[test]
fn npy_floats_in_c_and_fortran_order_any_shape() {
    let dir = TempDir::new().unwrap();
    // Values of a 2x4 array; on the edges of bins over [0, 4]: 4.0 lands in the last (closed) bin.
    let values = [0.0f64, 0.5, 1.0, 1.999, 2.0, 3.5, 4.0, -0.1];
    for (descr, fortran, shape) in [
        ("<f8", false, [2usize, 4]),
        ("<f8", true, [4, 2]),
        (">f8", true, [2, 4]),
    ] {
        let data: Vec<u8> = values
            .iter()
            .flat_map(|v| {
                if descr.starts_with('>') {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                }
            })
            .collect();
        let f = write(&dir, "f.npy", &npy(descr, fortran, &shape, &data));
        let doc = hist_json(&dir, &[p(&f), "--bins", "4", "--range", "0:4"]);
        assert_eq!(counts(&doc), [2, 2, 1, 2], "{descr} fortran={fortran}");
        assert_eq!(doc["tallies"]["below"], 1);
        assert_eq!(doc["edges"], serde_json::json!([0.0, 1.0, 2.0, 3.0, 4.0]));
    }
    let f32s: Vec<u8> = [0.25f32, 0.75, 0.75, f32::NAN]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let f = write(&dir, "g.npy", &npy("<f4", false, &[4], &f32s));
    let doc = hist_json(&dir, &[p(&f), "--bins", "2", "--range", "0:1"]);
    assert_eq!(counts(&doc), [1, 2]);
    assert_eq!(doc["tallies"]["nan"], 1);
}

#[test]
fn raw_binary_with_dtype() {
    let dir = TempDir::new().unwrap();
    let f = write(&dir, "data.bin", &le_bytes!(i16, false));
    let doc = hist_json(&dir, &[p(&f), "--dtype", "i16", "--bins", "4"]);
    assert_eq!(counts(&doc), EXPECTED);
    // Clamp puts the 9 into the last bin.
    let doc = hist_json(
        &dir,
        &[
            p(&f),
            "--dtype",
            "int16",
            "--bins",
            "4",
            "--out-of-range",
            "clamp",
        ],
    );
    assert_eq!(counts(&doc), [1, 2, 3, 2]);
}

#[test]
fn csv_column_by_index_and_name_with_header() {
    let dir = TempDir::new().unwrap();
    // Bins [0, 1.5) and [1.5, 3]: 0.5 and 1.25 in the first, 1.5 and 3 (the closed right edge) in the second.
    let f = write(&dir, "t.csv", b"id,value\n1,0.5\n2,1.5\n3,1.25\n4,3\n");
    let doc = hist_json(
        &dir,
        &[p(&f), "--column", "value", "--bins", "2", "--range", "0:3"],
    );
    assert_eq!(counts(&doc), [2, 2]);
    let doc = hist_json(
        &dir,
        &[p(&f), "--column", "1", "--bins", "2", "--range", "0:3"],
    );
    assert_eq!(counts(&doc), [2, 2]);
    // An integer column with --dtype takes integer bins.
    let doc = hist_json(
        &dir,
        &[p(&f), "--column", "id", "--dtype", "i32", "--bins", "3"],
    );
    assert_eq!(counts(&doc), [0, 1, 1]);
    let t = write(&dir, "t.txt", b"1 2\n2 2\n3 2\n");
    let doc = hist_json(
        &dir,
        &[p(&t), "--column", "0", "--bins", "3", "--range", "1:4"],
    );
    assert_eq!(counts(&doc), [1, 1, 1]);
}

#[test]
fn generated_data_is_deterministic_and_complete() {
    let dir = TempDir::new().unwrap();
    let a = hist_json(
        &dir,
        &[
            "--generate",
            "uniform",
            "--count",
            "100000",
            "--seed",
            "5",
            "--bins",
            "16",
        ],
    );
    let b = hist_json(
        &dir,
        &[
            "--generate",
            "uniform",
            "--count",
            "100000",
            "--seed",
            "5",
            "--bins",
            "16",
        ],
    );
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(counts(&a).iter().sum::<u64>(), 100_000);
    let hot = hist_json(
        &dir,
        &["--generate", "hot", "--count", "80000", "--bins", "16"],
    );
    assert!(counts(&hot)[7] > 65_000);
    for dist in ["normal", "zipf"] {
        let d = hist_json(
            &dir,
            &[
                "--generate",
                dist,
                "--count",
                "1000",
                "--bins",
                "10",
                "--range",
                "0:10",
                "--dtype",
                "f32",
            ],
        );
        assert_eq!(d["samples"], 1000);
    }
}

#[test]
fn edges_and_weights() {
    let dir = TempDir::new().unwrap();
    let values = [0.5f64, 1.5, 2.0, 3.9, 10.0];
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let f = write(&dir, "v.npy", &npy("<f8", false, &[5], &data));
    let e = write(&dir, "edges.txt", b"0\n1\n2\n4\n");
    let doc = hist_json(&dir, &[p(&f), "--edges", p(&e)]);
    assert_eq!(counts(&doc), [1, 1, 2]);
    let w: Vec<u8> = [1.0f32, 2.0, 0.5, 0.25, 100.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let w = write(&dir, "w.npy", &npy("<f4", false, &[5], &w));
    let doc = hist_json(&dir, &[p(&f), "--edges", p(&e), "--weights", p(&w)]);
    assert_eq!(doc["counts"], serde_json::json!([1.0, 2.0, 0.75]));
}

#[test]
fn sums_in_numpy_order_round_between_its_blocks() {
    // One bin, three blocks of 65536 whose float64 sums are each 1 + 2^-24, which rounds (a
    // tie, to even) to 1 in float32: numpy adds three ones; the float64 sum is 3 + 3 * 2^-24.
    let dir = TempDir::new().unwrap();
    let n = 3 * 65536;
    let f = write(&dir, "x.npy", &npy("<f8", false, &[n], &vec![0u8; n * 8]));
    let mut w = vec![0f32; n];
    for b in 0..3 {
        w[b * 65536] = 1.0;
        w[b * 65536 + 1] = 2f32.powi(-24);
    }
    let w: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let w = write(&dir, "w.npy", &npy("<f4", false, &[n], &w));
    let args = |sums| {
        [
            p(&f),
            "--bins",
            "1",
            "--range",
            "-1:1",
            "--weights",
            p(&w),
            "--sums",
            sums,
            "--backend",
            "cpu",
        ]
    };
    let numpy = hist_json(&dir, &args("numpy"));
    assert_eq!(numpy["counts"], serde_json::json!([3.0]));
    let fast = hist_json(&dir, &args("fast"));
    assert_eq!(fast["counts"][0].as_f64(), Some(3.0 + 3.0 * 2f64.powi(-24)));
    let r = smemkit(&[
        "hist",
        p(&f),
        "--bins",
        "1",
        "--weights",
        p(&w),
        "--sums",
        "numpi",
    ]);
    assert!(!r.ok && r.stderr.contains("numpi"), "{}", r.stderr);
}

#[test]
fn every_output_format_reads_back() {
    let dir = TempDir::new().unwrap();
    let f = write(
        &dir,
        "a.npy",
        &npy("<i4", false, &[8], &le_bytes!(i32, false)),
    );
    let csv = dir.path().join("h.csv");
    let npy_out = dir.path().join("h.npy");
    let png = dir.path().join("h.png");
    let svg = dir.path().join("h.svg");
    let r = smemkit(&[
        "hist",
        p(&f),
        "--bins",
        "4",
        "--out",
        p(&csv),
        "--plot",
        p(&png),
    ]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("counted     7") && r.stdout.contains("above       1"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("[2, 3)"),
        "the chart is printed: {}",
        r.stdout
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        text,
        "bin,left,right,count\n0,0,1,1\n1,1,2,2\n2,2,3,3\n3,3,4,1\n"
    );
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));

    let r = smemkit(&[
        "hist",
        p(&f),
        "--bins",
        "4",
        "--out",
        p(&npy_out),
        "--plot",
        p(&svg),
    ]);
    assert!(r.ok, "{}", r.stderr);
    let bytes = std::fs::read(&npy_out).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"));
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'<u8'") && header.contains("(4,"),
        "{header}"
    );
    let got: Vec<u64> = bytes[10 + header_len..]
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, EXPECTED);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));

    // Many bins are merged into at most 40 chart rows.
    let r = smemkit(&[
        "hist",
        "--generate",
        "uniform",
        "--count",
        "1000",
        "--bins",
        "1000",
    ]);
    assert!(
        r.ok && r
            .stdout
            .contains("1000 bins shown as 40 rows of 25 bins (row sums"),
        "{}",
        r.stdout
    );
}

#[test]
fn plan_prints_the_plan_and_the_limits() {
    let r = smemkit(&["plan", "--bins", "256"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("limits of") && r.stdout.contains("strategy      shared"),
        "{}",
        r.stdout
    );
    let r = smemkit(&["plan", "--bins", "1000000", "--strategy", "shared"]);
    assert!(!r.ok && r.stderr.starts_with("error: "), "{}", r.stderr);
    // u32 counters while they fit one block, then narrow counters; the sliced plans and
    // the partition passes are probed for skew.
    let r = smemkit(&["plan", "--bins", "32768"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("strategy      shared\n") && r.stdout.contains("x 1024 threads"),
        "{}",
        r.stdout
    );
    let r = smemkit(&["plan", "--bins", "65536"]);
    assert!(r.stdout.contains("strategy      shared16"), "{}", r.stdout);
    assert!(!r.stdout.contains("skew probe"), "{}", r.stdout);
    let r = smemkit(&["plan", "--bins", "131072"]);
    assert!(
        r.stdout.contains("strategy      shared8") && !r.stdout.contains("skew probe"),
        "{}",
        r.stdout
    );
    for (bins, strategy) in [
        ("262144", "sliced8x2"),
        ("1048576", "sliced4x3"),
        ("2097152", "partition"),
    ] {
        let r = smemkit(&["plan", "--bins", bins]);
        assert!(
            r.stdout.contains(&format!("strategy      {strategy}\n"))
                && r.stdout.contains("skew probe"),
            "{}",
            r.stdout
        );
    }
    let r = smemkit(&["plan", "--bins", "262144", "--samples", "1000"]);
    assert!(!r.stdout.contains("skew probe"), "{}", r.stdout);
}

#[test]
fn bench_prints_schema_rows() {
    let r = smemkit(&[
        "bench",
        "--backend",
        "cpu",
        "--log2-n",
        "12",
        "--bins",
        "16,300",
        "--dist",
        "uniform,hot",
        "--dtype",
        "i32,f32",
    ]);
    assert!(r.ok, "{}", r.stderr);
    let rows: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 8);
    for row in rows {
        for key in [
            "impl", "op", "ms", "gbps", "correct", "dist", "nbins", "n", "dtype", "commit", "gpu",
        ] {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
        assert_eq!(row["correct"], true);
        assert_eq!(row["impl"], "smemkit/cpu");
        assert_eq!(row["n"], 4096);
    }
    // The CUDA benchmark is left out: on a GPU machine it would run the full sweep.
    let r = smemkit(&["bench", "--backend", "tpu"]);
    assert!(!r.ok && r.stderr.contains("cpu or cuda"), "{}", r.stderr);
}
