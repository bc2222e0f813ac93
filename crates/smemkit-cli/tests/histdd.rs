//! `smemkit hist2d` and `smemkit histdd`: every input layout, every output format, and the errors.

mod common;

use common::{fails, npy, npy_data, p, smemkit, write};
use serde_json::Value;
use tempfile::TempDir;

fn json(dir: &TempDir, command: &str, args: &[&str]) -> Value {
    let out = dir.path().join("out.json");
    let mut all = vec![command];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", p(&out)]);
    let r = smemkit(&all);
    assert!(r.ok, "smemkit {all:?} failed: {}", r.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    doc
}

fn counts(doc: &Value) -> Vec<u64> {
    doc["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

// Points (x, y): numpy.histogram2d(x, y, bins=2, range=[(0, 1), (0, 1)]) counts [[1, 0], [0, 2]],
// (0.5, 2) is outside, (nan, 0.1) is NaN.
const X: [f64; 5] = [0.0, 1.0, 0.5, 0.5, f64::NAN];
const Y: [f64; 5] = [0.0, 1.0, 0.5, 2.0, 0.1];
const WANT: [u64; 4] = [1, 0, 0, 2];

fn csv_text() -> String {
    let mut s = String::from("x,y,w\n");
    for i in 0..5 {
        s.push_str(&format!("{},{},{}\n", X[i], Y[i], i + 1));
    }
    s
}

#[test]
fn every_input_layout_gives_numpys_counts() {
    let dir = TempDir::new().unwrap();
    let bins = ["--bins", "2", "--range", "0:1"];
    let csv = write(&dir, "pts.csv", csv_text().as_bytes());
    let rows: Vec<f64> = (0..5).flat_map(|i| [X[i], Y[i]]).collect();
    let c = write(
        &dir,
        "c.npy",
        &npy("<f8", false, &[5, 2], &f64_bytes(&rows)),
    );
    let cols: Vec<f64> = X.iter().chain(&Y).copied().collect();
    let f = write(&dir, "f.npy", &npy("<f8", true, &[5, 2], &f64_bytes(&cols)));
    let x = write(&dir, "x.npy", &npy("<f8", false, &[5], &f64_bytes(&X)));
    let y = write(&dir, "y.npy", &npy("<f8", false, &[5], &f64_bytes(&Y)));
    let runs: Vec<Vec<&str>> = vec![
        vec![p(&csv)],
        vec![p(&csv), "--columns", "x,y"],
        vec![p(&c)],
        vec![p(&f)],
        vec![p(&x), p(&y)],
    ];
    for command in ["hist2d", "histdd"] {
        for run in &runs {
            if command == "histdd" && run.len() == 1 && run[0].ends_with(".csv") {
                continue; // histdd needs --columns for text
            }
            let mut args = run.clone();
            args.extend_from_slice(&bins);
            let doc = json(&dir, command, &args);
            assert_eq!(counts(&doc), WANT, "{command} {args:?}");
            assert_eq!(doc["shape"], serde_json::json!([2, 2]));
            assert_eq!(doc["tallies"]["outside"], 1);
            assert_eq!(doc["tallies"]["nan"], 1);
            assert_eq!(doc["edges"][1], serde_json::json!([0.0, 0.5, 1.0]));
        }
    }
}

#[test]
fn rgb_image_columns_and_a_subset_of_columns() {
    let dir = TempDir::new().unwrap();
    // A 2 x 2 image of 3 channels: pixels (0,0,0) (255,0,0) (255,255,0) (255,255,255).
    let px: [u8; 12] = [0, 0, 0, 255, 0, 0, 255, 255, 0, 255, 255, 255];
    let img = write(&dir, "img.npy", &npy("|u1", false, &[2, 2, 3], &px));
    let doc = json(
        &dir,
        "histdd",
        &[p(&img), "--bins", "2", "--range", "0:256"],
    );
    assert_eq!(doc["shape"], serde_json::json!([2, 2, 2]));
    let mut want = vec![0u64; 8];
    for (r, g, b) in [(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)] {
        want[r * 4 + g * 2 + b] += 1;
    }
    assert_eq!(counts(&doc), want);
    let doc = json(
        &dir,
        "hist2d",
        &[
            p(&img),
            "--columns",
            "2,0",
            "--bins",
            "2",
            "--range",
            "0:256",
        ],
    );
    // (b, r): (0,0) (0,1) (0,1) (1,1)
    assert_eq!(counts(&doc), vec![1, 2, 0, 1]);
    assert_eq!(doc["axes"], serde_json::json!(["column 2", "column 0"]));
}

#[test]
fn npy_and_csv_outputs() {
    let dir = TempDir::new().unwrap();
    let csv = write(&dir, "pts.csv", csv_text().as_bytes());
    let out = dir.path().join("h.npy");
    let r = smemkit(&[
        "hist2d",
        p(&csv),
        "--bins",
        "2,3",
        "--range",
        "0:1,0:1.5",
        "--out",
        p(&out),
    ]);
    assert!(r.ok, "{}", r.stderr);
    let bytes = std::fs::read(&out).unwrap();
    let header = String::from_utf8_lossy(&bytes[10..80]).to_string();
    assert!(header.contains("'shape': (2, 3"), "{header}");
    assert!(header.contains("<u8"), "{header}");
    let data: Vec<u64> = npy_data(&out)
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // y edges 0, 0.5, 1, 1.5: (0,0)->[0][0], (1,1)->[1][2], (0.5,0.5)->[1][1], (0.5,2) outside.
    assert_eq!(data, vec![1, 0, 0, 0, 1, 1]);
    let out = dir.path().join("h.csv");
    let r = smemkit(&[
        "hist2d",
        p(&csv),
        "--bins",
        "2",
        "--range",
        "0:1",
        "--out",
        p(&out),
    ]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "bin0,left0,right0,bin1,left1,right1,count\n0,0,0.5,0,0,0.5,1\n1,0.5,1,1,0.5,1,2\n"
    );
}

#[test]
fn weights_and_density() {
    let dir = TempDir::new().unwrap();
    let csv = write(&dir, "pts.csv", csv_text().as_bytes());
    let w = write(&dir, "w.txt", b"1\n2\n3\n4\n5\n");
    let doc = json(
        &dir,
        "hist2d",
        &[p(&csv), "--bins", "2", "--range", "0:1", "--weights", p(&w)],
    );
    assert_eq!(doc["weighted"], true);
    assert_eq!(doc["counts"], serde_json::json!([1.0, 0.0, 0.0, 5.0]));
    let doc = json(
        &dir,
        "hist2d",
        &[p(&csv), "--bins", "2", "--range", "0:1", "--density"],
    );
    // 3 counted, bins of area 0.25: 1 / 0.5 / 0.5 / 3 and 2 / 0.5 / 0.5 / 3.
    let d: Vec<f64> = doc["density"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(
        d,
        vec![1.0 / 0.5 / 0.5 / 3.0, 0.0, 0.0, 2.0 / 0.5 / 0.5 / 3.0]
    );
}

#[test]
fn edges_files_per_axis() {
    let dir = TempDir::new().unwrap();
    let csv = write(&dir, "pts.csv", csv_text().as_bytes());
    let ex = write(&dir, "ex.txt", b"0\n0.75\n1\n");
    let ey = write(&dir, "ey.txt", b"-inf\n0.25\ninf\n");
    let edges = format!("{},{}", p(&ex), p(&ey));
    let doc = json(&dir, "hist2d", &[p(&csv), "--edges", &edges]);
    // x bins [0, .75) [.75, 1]; y bins (-inf, .25) [.25, inf]: (0,0) (1,1) (.5,.5) (.5,2).
    assert_eq!(counts(&doc), vec![1, 2, 0, 1]);
    assert_eq!(doc["edges"][1], serde_json::json!(["-inf", 0.25, "inf"]));
}

#[test]
fn heat_map_png_and_svg() {
    let dir = TempDir::new().unwrap();
    let csv = write(&dir, "pts.csv", csv_text().as_bytes());
    for name in ["h.png", "h.svg"] {
        let plot = dir.path().join(name);
        let r = smemkit(&[
            "hist2d",
            p(&csv),
            "--bins",
            "4",
            "--range",
            "0:1",
            "--plot",
            p(&plot),
        ]);
        assert!(r.ok, "{}", r.stderr);
        let bytes = std::fs::read(&plot).unwrap();
        if name.ends_with("png") {
            assert!(bytes.starts_with(b"\x89PNG"));
        } else {
            assert!(String::from_utf8_lossy(&bytes).contains("<svg"));
        }
    }
}

#[test]
fn mistakes_are_one_clear_error() {
    let dir = TempDir::new().unwrap();
    let csv = write(&dir, "pts.csv", csv_text().as_bytes());
    let x = write(&dir, "x.npy", &npy("<f8", false, &[5], &f64_bytes(&X)));
    let x32 = write(&dir, "x32.npy", &npy("<f4", false, &[2], &[0u8; 8]));
    let c = p(&csv);
    fails(&dir, &["histdd", c], "choose its columns with --columns");
    fails(&dir, &["hist2d", c, "--columns", "x,y,w"], "takes 2 axes");
    fails(&dir, &["hist2d", c, "--columns", "x,nope"], "nope");
    fails(&dir, &["histdd", p(&x)], "needs an (N, D) array");
    fails(
        &dir,
        &["hist2d", p(&x), p(&x32)],
        "every axis must have one type",
    );
    fails(
        &dir,
        &["hist2d", c, "--bins", "2,3,4"],
        "--bins gives 3 values for 2 axes",
    );
    fails(&dir, &["hist2d", c, "--bins", "0"], "at least 1");
    fails(&dir, &["hist2d", c, "--range", "1:0"], "inverted");
    fails(
        &dir,
        &["hist2d", c, "--bins", "2", "--edges", p(&x)],
        "leave out --bins",
    );
    let dec = write(&dir, "dec.txt", b"1\n0\n");
    fails(
        &dir,
        &["hist2d", c, "--edges", p(&dec)],
        "monotonically increasing",
    );
    // An output that is an input is refused before anything is written.
    let r = smemkit(&["hist2d", c, "--out", c]);
    assert!(
        !r.ok && r.stderr.contains("refusing to replace an input"),
        "{}",
        r.stderr
    );
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("x,y,w"));
}
