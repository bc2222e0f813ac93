//! End-to-end tests of how the `smemkit` binary reads unusual and bad inputs (issue 18's input
//! side): weights paired in logical order, byte-order marks and header lines, pipes, native byte
//! order in `.npy` headers, raw weights, and flags that mean nothing for the input. Each runs the
//! binary and checks the answer against one worked out by hand, or the one error line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn smemkit_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        // A reader that stops early closes the pipe: that is its answer, not a test failure.
        let _ = pipe.write_all(bytes);
    }
    let out = child.wait_with_output().expect("the binary runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// A `.npy` file written from the format's specification (version 1.0), not by the reader under test.
fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let order = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn le<T: Copy, const N: usize>(values: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// Runs `hist` with `--out` to a JSON file; the parsed document and the printed summary.
fn hist_json(dir: &TempDir, args: &[&str], stdin: Option<&[u8]>) -> (serde_json::Value, String) {
    let out = dir.path().join("out.json");
    let mut all = vec!["hist"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-chart", "--backend", "cpu", "--out", p(&out)]);
    let r = smemkit_with_stdin(&all, stdin);
    assert!(r.ok, "smemkit {all:?} failed: {}", r.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    (doc, r.stdout)
}

fn counts(doc: &serde_json::Value) -> Vec<u64> {
    doc["counts"]
        .as_array()
        .unwrap_or_else(|| panic!("no counts in {doc}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn sums(doc: &serde_json::Value) -> Vec<f64> {
    doc["counts"]
        .as_array()
        .unwrap_or_else(|| panic!("no counts in {doc}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// The command fails with one `error:` line that contains every needle, and no panic.
fn fails(args: &[&str], needles: &[&str]) {
    fails_with_stdin(args, None, needles)
}

fn fails_with_stdin(args: &[&str], stdin: Option<&[u8]>, needles: &[&str]) {
    let r = smemkit_with_stdin(args, stdin);
    assert!(!r.ok, "smemkit {args:?} succeeded: {}", r.stdout);
    assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "one line for {args:?}: {}",
        r.stderr
    );
    for n in needles {
        assert!(
            r.stderr.starts_with("error: ") && r.stderr.contains(n),
            "{args:?}: expected `{n}` in {}",
            r.stderr
        );
    }
}

#[test]
fn npy_headers_of_native_and_no_byte_order_are_read() {
    let dir = TempDir::new().unwrap();
    let values = [0i32, 1, 1, 3, 2, 3, 3];
    let native = if cfg!(target_endian = "little") {
        le(&values, i32::to_le_bytes)
    } else {
        le(&values, i32::to_be_bytes)
    };
    let f = write(&dir, "native.npy", &npy("=i4", false, &[7], &native));
    let (doc, _) = hist_json(&dir, &[p(&f), "--bins", "4"], None);
    assert_eq!(counts(&doc), [1, 2, 1, 3]);
    let bytes: Vec<u8> = values.iter().map(|&v| v as u8).collect();
    for descr in ["|u1", "=u1", "|i1", "=i1"] {
        let f = write(&dir, "one.npy", &npy(descr, false, &[7], &bytes));
        let (doc, _) = hist_json(&dir, &[p(&f), "--bins", "4"], None);
        assert_eq!(counts(&doc), [1, 2, 1, 3], "{descr}");
    }
    // Weights and edges of native byte order too.
    let w = write(
        &dir,
        "w.npy",
        &npy(
            "=f8",
            false,
            &[7],
            &le(
                &[1.0f64; 7],
                if cfg!(target_endian = "little") {
                    f64::to_le_bytes
                } else {
                    f64::to_be_bytes
                },
            ),
        ),
    );
    let (doc, _) = hist_json(&dir, &[p(&f), "--bins", "4", "--weights", p(&w)], None);
    assert_eq!(sums(&doc), [1.0, 2.0, 1.0, 3.0]);
    // `|` on a multi-byte type says nothing of its byte order: refused, naming the file.
    let f = write(&dir, "bar.npy", &npy("|i4", false, &[7], &native));
    fails(
        &["hist", p(&f), "--bins", "4"],
        &["bar.npy", "not a valid .npy"],
    );
}

#[test]
fn byte_order_marks_and_header_lines() {
    let dir = TempDir::new().unwrap();
    // A BOM before the first sample: that sample is data, not a header.
    let f = write(&dir, "bom.txt", "\u{feff}0\n1\n1\n3\n".as_bytes());
    let (doc, out) = hist_json(&dir, &[p(&f), "--bins", "4", "--dtype", "i32"], None);
    assert_eq!(counts(&doc), [1, 2, 0, 1]);
    assert!(!out.contains("header"), "{out}");
    // A BOM before a header, CRLF line ends; the column by name and by index.
    let f = write(
        &dir,
        "bom.csv",
        "\u{feff}id,v\r\n7,0\r\n8,2\r\n9,2\r\n".as_bytes(),
    );
    for column in ["v", "1"] {
        let (doc, out) = hist_json(
            &dir,
            &[p(&f), "--column", column, "--bins", "4", "--dtype", "i64"],
            None,
        );
        assert_eq!(counts(&doc), [1, 0, 2, 0], "--column {column}");
        assert!(out.contains("skipped the header line `id,v`"), "{out}");
    }
    // A first line that is not a number is shown as a skipped header, never dropped unseen.
    let f = write(&dir, "typo.txt", b"1.5x\n2\n3\n");
    let (doc, out) = hist_json(&dir, &[p(&f), "--bins", "2", "--range", "0:4"], None);
    assert_eq!(counts(&doc), [0, 2]);
    assert!(
        out.contains("typo.txt: skipped the header line `1.5x`"),
        "{out}"
    );
    // Half numbers, half words: an error naming the line and the cells.
    let f = write(&dir, "half.csv", b"a,1\n2,3\n");
    fails(
        &["hist", p(&f), "--bins", "4", "--column", "1"],
        &["line 1 of", "half.csv", "column 1 (`1`)", "column 0 (`a`)"],
    );
    // An empty cell is neither (pandas leaves the index column's name empty).
    let f = write(&dir, "pandas.csv", b",v\n0,1\n1,1\n");
    let (doc, _) = hist_json(
        &dir,
        &[p(&f), "--column", "v", "--bins", "2", "--dtype", "u8"],
        None,
    );
    assert_eq!(counts(&doc), [0, 2]);
    // A BOM in edge and weight files, and their header lines named in the summary.
    let s = write(&dir, "s.txt", b"0.5\n1.5\n1.7\n");
    let e = write(&dir, "e.txt", "\u{feff}0\n1\n2\n".as_bytes());
    let w = write(&dir, "w.txt", "\u{feff}weight\n1\n2\n4\n".as_bytes());
    let (doc, out) = hist_json(&dir, &[p(&s), "--edges", p(&e), "--weights", p(&w)], None);
    assert_eq!(sums(&doc), [1.0, 6.0]);
    assert!(
        out.contains("w.txt: skipped the header line `weight`"),
        "{out}"
    );
    assert!(!out.contains("e.txt"), "{out}");
}

#[test]
fn a_column_name_held_twice_is_refused() {
    let dir = TempDir::new().unwrap();
    let f = write(&dir, "dup.csv", b"x,y,x\n1,2,3\n");
    fails(
        &["hist", p(&f), "--bins", "4", "--column", "x"],
        &["dup.csv", "columns 0 and 2", "`x`"],
    );
    // The other, unique name is fine.
    let (doc, _) = hist_json(
        &dir,
        &[p(&f), "--bins", "4", "--column", "y", "--dtype", "i32"],
        None,
    );
    assert_eq!(counts(&doc), [0, 0, 1, 0]);
}

/// The elements of a 2-D array given by rows, in Fortran (column-major) storage order.
fn by_columns<T: Copy>(rows: &[&[T]]) -> Vec<T> {
    (0..rows[0].len())
        .flat_map(|j| rows.iter().map(move |r| r[j]))
        .collect()
}

#[test]
fn weights_pair_with_samples_by_logical_index_whatever_the_storage_order() {
    let dir = TempDir::new().unwrap();
    // x = [[0, 1, 2], [3, 0, 1]], w = [[1, 2, 4], [8, 16, 32]]: numpy.histogram(x, 4, (0, 4),
    // weights=w) gives bin 0: 1 + 16, bin 1: 2 + 32, bin 2: 4, bin 3: 8, however either is stored.
    let x: [&[i32]; 2] = [&[0, 1, 2], &[3, 0, 1]];
    let w: [&[f64]; 2] = [&[1.0, 2.0, 4.0], &[8.0, 16.0, 32.0]];
    let expected = [17.0, 34.0, 4.0, 8.0];
    let x_c = x.concat();
    let w_c = w.concat();
    let samples = [
        (
            "xc.npy",
            npy("<i4", false, &[2, 3], &le(&x_c, i32::to_le_bytes)),
        ),
        (
            "xf.npy",
            npy("<i4", true, &[2, 3], &le(&by_columns(&x), i32::to_le_bytes)),
        ),
        (
            "xfb.npy",
            npy(">i4", true, &[2, 3], &le(&by_columns(&x), i32::to_be_bytes)),
        ),
    ];
    let weights = [
        (
            "wc.npy",
            npy("<f8", false, &[2, 3], &le(&w_c, f64::to_le_bytes)),
        ),
        (
            "wf.npy",
            npy("<f8", true, &[2, 3], &le(&by_columns(&w), f64::to_le_bytes)),
        ),
        (
            "wf4.npy",
            npy(
                "<f4",
                true,
                &[2, 3],
                &le(
                    &by_columns(&w).iter().map(|&v| v as f32).collect::<Vec<_>>(),
                    f32::to_le_bytes,
                ),
            ),
        ),
    ];
    for (xn, xb) in &samples {
        let xp = write(&dir, xn, xb);
        for (wn, wb) in &weights {
            let wp = write(&dir, wn, wb);
            let (doc, _) = hist_json(&dir, &[p(&xp), "--bins", "4", "--weights", p(&wp)], None);
            assert_eq!(sums(&doc), expected, "{xn} with {wn}");
        }
    }
    // Three dimensions, samples by columns, weights by rows: the same pairing.
    let x3: Vec<i32> = (0..24).map(|i| i % 4).collect();
    let w3: Vec<f64> = (0..24).map(|i| f64::from(1 << (i % 7))).collect();
    let mut want = [0.0; 4];
    for (&xv, &wv) in x3.iter().zip(&w3) {
        want[xv as usize] += wv;
    }
    // The Fortran storage of a C-order (2, 3, 4) array: element [i][j][k] at i + 2j + 6k.
    let mut x3f = vec![0i32; 24];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                x3f[i + 2 * j + 6 * k] = x3[i * 12 + j * 4 + k];
            }
        }
    }
    let xp = write(
        &dir,
        "x3.npy",
        &npy("<i4", true, &[2, 3, 4], &le(&x3f, i32::to_le_bytes)),
    );
    let wp = write(
        &dir,
        "w3.npy",
        &npy("<f8", false, &[2, 3, 4], &le(&w3, f64::to_le_bytes)),
    );
    let (doc, _) = hist_json(&dir, &[p(&xp), "--bins", "4", "--weights", p(&wp)], None);
    assert_eq!(sums(&doc), want);
    // Weights of another shape but the same size: refused, as numpy refuses them.
    let xp = write(&dir, "x.npy", &samples[0].1);
    let wt = write(
        &dir,
        "wt.npy",
        &npy("<f8", false, &[3, 2], &le(&w_c, f64::to_le_bytes)),
    );
    fails(
        &["hist", p(&xp), "--bins", "4", "--weights", p(&wt)],
        &["wt.npy", "same shape", "(3, 2)", "(2, 3)"],
    );
    let flat = write(&dir, "flat.txt", b"1\n2\n4\n8\n16\n32\n");
    fails(
        &["hist", p(&xp), "--bins", "4", "--weights", p(&flat)],
        &["same shape", "(6,)", "(2, 3)"],
    );
    // Another size is the length check's (as before).
    let short = write(&dir, "short.txt", b"1\n2\n");
    fails(
        &["hist", p(&xp), "--bins", "4", "--weights", p(&short)],
        &["2 weights for 6 samples"],
    );
}
