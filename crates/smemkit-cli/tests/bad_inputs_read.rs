//! End-to-end tests of how the `smemkit` binary reads unusual and bad inputs (issue 18's input
//! side): weights paired in logical order, byte-order marks and header lines, pipes, native byte
//! order in `.npy` headers, raw weights, and flags that mean nothing for the input. Each runs the
//! binary and checks the answer against one worked out by hand, or the one error line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

mod common;
use common::{npy, p, write};

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

#[test]
fn raw_binary_weights_take_their_own_dtype() {
    let dir = TempDir::new().unwrap();
    let x = write(&dir, "x.txt", b"0\n1\n1\n3\n");
    let args = |w: &Path, t: &str| -> Vec<String> {
        [
            p(&x),
            "--bins",
            "4",
            "--dtype",
            "u8",
            "--weights",
            p(w),
            "--weights-dtype",
            t,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let run = |w: &Path, t: &str| {
        let a = args(w, t);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        hist_json(&dir, &a, None).0
    };
    let f32s = write(
        &dir,
        "w.f32",
        &le(&[0.5f32, 1.0, 2.0, 4.0], f32::to_le_bytes),
    );
    assert_eq!(sums(&run(&f32s, "f32")), [0.5, 3.0, 0.0, 4.0]);
    let i16s = write(&dir, "w.bin", &le(&[-1i16, 2, 3, 100], i16::to_le_bytes));
    assert_eq!(sums(&run(&i16s, "i16")), [-1.0, 5.0, 0.0, 100.0]);
    // No extension at all: raw with the flag too.
    let bare = write(
        &dir,
        "weights",
        &le(&[1.0f64, 1.0, 1.0, 1.0], f64::to_le_bytes),
    );
    assert_eq!(sums(&run(&bare, "f64")), [1.0, 2.0, 0.0, 1.0]);
    // Not a whole number of weights; raw without the flag; the flag on a .npy or a text file.
    let odd = write(&dir, "odd.bin", &[0u8; 7]);
    fails(
        &[
            "hist",
            p(&x),
            "--bins",
            "4",
            "--weights",
            p(&odd),
            "--weights-dtype",
            "f32",
        ],
        &["odd.bin", "7 bytes, not a whole number of float32 weights"],
    );
    fails(
        &["hist", p(&x), "--bins", "4", "--weights", p(&i16s)],
        &["--weights", "w.bin", "--weights-dtype"],
    );
    let npy_w = write(
        &dir,
        "w.npy",
        &npy("<f8", false, &[4], &le(&[1.0f64; 4], f64::to_le_bytes)),
    );
    fails(
        &[
            "hist",
            p(&x),
            "--bins",
            "4",
            "--weights",
            p(&npy_w),
            "--weights-dtype",
            "f32",
        ],
        &[
            "--weights-dtype does not apply",
            "w.npy",
            "header gives the type",
        ],
    );
    let text_w = write(&dir, "w.txt", b"1\n2\n3\n4\n");
    fails(
        &[
            "hist",
            p(&x),
            "--bins",
            "4",
            "--weights",
            p(&text_w),
            "--weights-dtype",
            "f32",
        ],
        &["--weights-dtype does not apply", "w.txt", "text file"],
    );
}

#[test]
fn flags_that_mean_nothing_for_the_input_are_refused() {
    let dir = TempDir::new().unwrap();
    let x = write(
        &dir,
        "x.npy",
        &npy("<i4", false, &[3], &le(&[0i32, 1, 2], i32::to_le_bytes)),
    );
    fails(
        &["hist", p(&x), "--bins", "4", "--dtype", "f32"],
        &["--dtype does not apply", "x.npy", "header gives the type"],
    );
    fails(
        &["hist", p(&x), "--bins", "4", "--column", "1"],
        &["--column 1 does not apply", "x.npy", "a .npy file"],
    );
    // A .npy by its magic under another name: the same.
    let hidden = write(&dir, "x.data", &std::fs::read(&x).unwrap());
    fails(
        &["hist", p(&hidden), "--bins", "4", "--dtype", "i32"],
        &["--dtype does not apply", "x.data"],
    );
    let (doc, _) = hist_json(&dir, &[p(&hidden), "--bins", "4"], None);
    assert_eq!(counts(&doc), [1, 1, 1, 0]);
    let raw = write(&dir, "x.u8", &[0, 1, 2]);
    fails(
        &[
            "hist",
            p(&raw),
            "--bins",
            "4",
            "--dtype",
            "u8",
            "--column",
            "v",
        ],
        &["--column v does not apply", "x.u8", "raw binary"],
    );
    fails(
        &[
            "hist",
            "--generate",
            "uniform",
            "--count",
            "10",
            "--bins",
            "4",
            "--column",
            "2",
        ],
        &["--column 2 does not apply to --generate"],
    );
    // Without --weights, --weights-dtype is a usage error (clap's).
    let r = smemkit_with_stdin(
        &["hist", p(&x), "--bins", "4", "--weights-dtype", "f32"],
        None,
    );
    assert!(!r.ok && r.stderr.contains("--weights"), "{}", r.stderr);
}

#[cfg(unix)]
fn fifo(dir: &TempDir, name: &str, bytes: Vec<u8>) -> (PathBuf, std::thread::JoinHandle<()>) {
    let path = dir.path().join(name);
    let ok = Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(ok.success());
    let writer = path.clone();
    let handle = std::thread::spawn(move || {
        // Opening blocks until the reader opens; a reader that stops early breaks the pipe.
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&writer) {
            let _ = f.write_all(&bytes);
        }
    });
    (path, handle)
}

#[test]
fn standard_input_and_pipes_are_streamed() {
    let dir = TempDir::new().unwrap();
    let values = [0i32, 1, 1, 3, 3, 3];
    let npy_bytes = npy("<i4", false, &[6], &le(&values, i32::to_le_bytes));
    let want = [1, 2, 0, 3];
    // .npy by its magic, on `-` and on /dev/stdin.
    for name in ["-", "/dev/stdin"] {
        let (doc, out) = hist_json(&dir, &[name, "--bins", "4"], Some(&npy_bytes));
        assert_eq!(counts(&doc), want, "{name}");
        assert!(out.contains("in memory"), "{out}");
    }
    // Big-endian and Fortran-ordered .npy from a pipe.
    let big = npy(">i4", true, &[2, 3], &le(&values, i32::to_be_bytes));
    assert_eq!(
        counts(&hist_json(&dir, &["-", "--bins", "4"], Some(&big)).0),
        want
    );
    // Raw with --dtype.
    let raw = le(&values, i32::to_le_bytes);
    let (doc, _) = hist_json(&dir, &["-", "--bins", "4", "--dtype", "i32"], Some(&raw));
    assert_eq!(counts(&doc), want);
    // Text, with a header and a column by name.
    let text = b"a,b\n9,0\n9,1\n9,1\n9,3\n9,3\n9,3\n";
    let (doc, out) = hist_json(
        &dir,
        &["-", "--bins", "4", "--column", "b", "--dtype", "u16"],
        Some(text),
    );
    assert_eq!(counts(&doc), want);
    assert!(out.contains("skipped the header line `a,b`"), "{out}");
    // Numbers as text with --dtype: not summed as their bytes; with --column they are text.
    fails_with_stdin(
        &["hist", "-", "--bins", "4", "--dtype", "i32"],
        Some(b"0\n1\n1\n3\n"),
        &["standard input looks like text", "--column 0"],
    );
    let (doc, _) = hist_json(
        &dir,
        &["-", "--bins", "4", "--dtype", "i32", "--column", "0"],
        Some(b"0\n1\n1\n3\n3\n3\n"),
    );
    assert_eq!(counts(&doc), want);
    // Text by default (floats: uniform bins over a range).
    let (doc, _) = hist_json(
        &dir,
        &["-", "--bins", "2", "--range", "0:4"],
        Some(b"0.5\n3.5\n3\n"),
    );
    assert_eq!(counts(&doc), [1, 2]);
    // Weights and edges from standard input.
    let x = write(&dir, "x.npy", &npy_bytes);
    let w = npy(
        "<f4",
        false,
        &[6],
        &le(&[1.0f32, 2.0, 4.0, 8.0, 16.0, 32.0], f32::to_le_bytes),
    );
    let (doc, _) = hist_json(&dir, &[p(&x), "--bins", "4", "--weights", "-"], Some(&w));
    assert_eq!(sums(&doc), [1.0, 6.0, 0.0, 56.0]);
    let (doc, _) = hist_json(
        &dir,
        &[
            p(&x),
            "--bins",
            "4",
            "--weights",
            "-",
            "--weights-dtype",
            "u8",
        ],
        Some(&[1, 1, 1, 1, 1, 1]),
    );
    assert_eq!(sums(&doc), [1.0, 2.0, 0.0, 3.0]);
    let (doc, _) = hist_json(&dir, &[p(&x), "--edges", "-"], Some(b"0\n2\n4\n"));
    assert_eq!(counts(&doc), [3, 3]);
    // Read once only; a .npy on stdin does not take --dtype; bad bytes are one clear error.
    fails_with_stdin(
        &["hist", "-", "--bins", "4", "--weights", "-"],
        Some(&npy_bytes),
        &["standard input (`-`, /dev/stdin) can be read once"],
    );
    fails_with_stdin(
        &["hist", "/dev/stdin", "--bins", "4", "--edges", "-"],
        Some(&npy_bytes),
        &["can be read once"],
    );
    fails_with_stdin(
        &["hist", "-", "--bins", "4"],
        Some(b"\xff\xfe1\x00\n\x00"),
        &["line 1 of standard input is not UTF-8 text"],
    );
    fails_with_stdin(
        &["hist", "-", "--bins", "4", "--dtype", "i32"],
        Some(&npy_bytes),
        &["--dtype does not apply to standard input"],
    );
    fails_with_stdin(
        &["hist", "-", "--bins", "4"],
        Some(&npy_bytes[..npy_bytes.len() - 3]),
        &["standard input", "ends early", "5 of the 6"],
    );
    fails_with_stdin(
        &["hist", "-", "--bins", "4", "--dtype", "i32"],
        Some(&raw[..raw.len() - 1]),
        &[
            "standard input",
            "23 bytes, not a whole number of int32 samples",
        ],
    );
    // Empty standard input: numpy's zero counts over [0, 1], as for an empty file.
    let (doc, _) = hist_json(&dir, &["-", "--bins", "4"], Some(b""));
    assert_eq!(counts(&doc), [0, 0, 0, 0]);
    assert_eq!(doc["edges"][4].as_f64(), Some(1.0));
}

#[cfg(unix)]
#[test]
fn fifos_are_streamed() {
    let dir = TempDir::new().unwrap();
    let values = [2u16, 2, 0, 1];
    let (path, writer) = fifo(
        &dir,
        "samples",
        npy("<u2", false, &[4], &le(&values, u16::to_le_bytes)),
    );
    let (doc, _) = hist_json(&dir, &[p(&path), "--bins", "3"], None);
    writer.join().unwrap();
    assert_eq!(counts(&doc), [1, 1, 2]);
    // A FIFO with a known extension is read as its extension says.
    let (path, writer) = fifo(&dir, "s.csv", b"v\n2\n2\n0\n1\n".to_vec());
    let (doc, _) = hist_json(&dir, &[p(&path), "--bins", "3", "--dtype", "u8"], None);
    writer.join().unwrap();
    assert_eq!(counts(&doc), [1, 1, 2]);
    // Weights through a FIFO, as from `<(...)` in a shell.
    let x = write(
        &dir,
        "x.npy",
        &npy("<u2", false, &[4], &le(&values, u16::to_le_bytes)),
    );
    let (path, writer) = fifo(&dir, "w", le(&[1.0f64, 2.0, 4.0, 8.0], f64::to_le_bytes));
    let (doc, _) = hist_json(
        &dir,
        &[
            p(&x),
            "--bins",
            "3",
            "--weights",
            p(&path),
            "--weights-dtype",
            "f64",
        ],
        None,
    );
    writer.join().unwrap();
    assert_eq!(sums(&doc), [4.0, 8.0, 3.0]);
}
