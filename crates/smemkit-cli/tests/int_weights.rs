//! `smemkit hist --weights` with integer and bool weights: the sums keep the weights' type, as
//! numpy's histogram does (`.npy` output of that dtype, integers in CSV and JSON), `--density`
//! stays float64, and what numpy refuses is one clear error. The expected
//! values are numpy 2.4's, each with the call that gave it.

mod common;

use common::{fails, hist_json, npy, npy_data, p, smemkit, write};
use tempfile::TempDir;

/// Samples `[0.1, 0.2, 0.3, 0.7, 5.0]` as float64 `.npy`.
fn samples(dir: &TempDir) -> std::path::PathBuf {
    let a: Vec<u8> = [0.1f64, 0.2, 0.3, 0.7, 5.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write(dir, "a.npy", &npy("<f8", false, &[5], &a))
}

/// The header text of a version 1.0 `.npy`.
fn header(path: &std::path::Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    String::from_utf8_lossy(&bytes[10..10 + len]).into_owned()
}

fn hist_to(dir: &TempDir, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = dir.path().join(name);
    let mut all = vec!["hist"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-chart", "--out", p(&out)]);
    let r = smemkit(&all);
    assert!(r.ok, "smemkit {all:?} failed: {}", r.stderr);
    out
}

/// `np.histogram(a, bins=2, range=(0, 1), weights=np.int8([100, 100, 3, 1, 1]))` is
/// `array([-53, 1], dtype=int8)`; the same with `bins=[0, .5, 1]`.
#[test]
fn int8_weights_give_int8_sums_in_npy_csv_and_json() {
    let dir = TempDir::new().unwrap();
    let a = samples(&dir);
    let w = write(
        &dir,
        "w.npy",
        &npy("|i1", false, &[5], &[100u8, 100, 3, 1, 1]),
    );
    let e = write(
        &dir,
        "e.npy",
        &npy(
            "<f8",
            false,
            &[3],
            &[0.0f64, 0.5, 1.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        ),
    );
    for bins in [
        vec!["--bins", "2", "--range", "0:1"],
        vec!["--edges", p(&e)],
    ] {
        let mut args = vec![p(&a), "--weights", p(&w)];
        args.extend_from_slice(&bins);
        let out = hist_to(&dir, "h.npy", &args);
        assert!(header(&out).contains("'|i1'"), "{}", header(&out));
        assert_eq!(npy_data(&out), vec![(-53i8) as u8, 1]);
        let out = hist_to(&dir, "h.csv", &args);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains(",-53\n") && text.ends_with(",1\n"), "{text}");
        let doc = hist_json(&dir, &args);
        assert_eq!(doc["counts"], serde_json::json!([-53, 1]));
        assert_eq!(doc["counts_dtype"], "int8");
        assert_eq!(doc["weighted"], true);
    }
}

/// uint16 and int64 weights keep their dtype: `np.histogram(a, bins=2, range=(0, 1),
/// weights=np.uint16([100, 100, 3, 1, 1]))` is `array([203, 1], dtype=uint16)`.
#[test]
fn wider_integer_types_are_kept() {
    let dir = TempDir::new().unwrap();
    let a = samples(&dir);
    for (descr, size) in [("<u2", 2usize), ("<i4", 4), ("<i8", 8), ("<u8", 8)] {
        let data: Vec<u8> = [100u64, 100, 3, 1, 1]
            .iter()
            .flat_map(|v| v.to_le_bytes()[..size].to_vec())
            .collect();
        let w = write(&dir, "w.npy", &npy(descr, false, &[5], &data));
        let out = hist_to(
            &dir,
            "h.npy",
            &[p(&a), "--weights", p(&w), "--bins", "2", "--range", "0:1"],
        );
        assert!(header(&out).contains(descr), "{}", header(&out));
        let want: Vec<u8> = [203u64, 1]
            .iter()
            .flat_map(|v| v.to_le_bytes()[..size].to_vec())
            .collect();
        assert_eq!(npy_data(&out), want, "{descr}");
    }
}

/// Raw weights with `--weights-dtype i16` are integers too.
#[test]
fn raw_integer_weights() {
    let dir = TempDir::new().unwrap();
    let a = samples(&dir);
    let data: Vec<u8> = [30000i16, 30000, 3, 1, 1]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let w = write(&dir, "w.bin", &data);
    let doc = hist_json(
        &dir,
        &[
            p(&a),
            "--weights",
            p(&w),
            "--weights-dtype",
            "i16",
            "--bins",
            "2",
            "--range",
            "0:1",
        ],
    );
    // 60003 wraps in int16 to 60003 - 65536.
    assert_eq!(doc["counts"], serde_json::json!([60003 - 65536, 1]));
    assert_eq!(doc["counts_dtype"], "int16");
}

/// `np.histogram([0.1, 0.2, 0.9], bins=2, range=(0, 1), weights=[True, False, True])` is
/// `array([ True,  True])`; with explicit edges numpy raises a type error, and so does smemkit.
#[test]
fn bool_weights() {
    let dir = TempDir::new().unwrap();
    let a: Vec<u8> = [0.1f64, 0.2, 0.9]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let a = write(&dir, "a.npy", &npy("<f8", false, &[3], &a));
    let w = write(&dir, "w.npy", &npy("|b1", false, &[3], &[1, 0, 1]));
    let args = [p(&a), "--weights", p(&w), "--bins", "2", "--range", "0:1"];
    let out = hist_to(&dir, "h.npy", &args);
    assert!(header(&out).contains("'|b1'"), "{}", header(&out));
    assert_eq!(npy_data(&out), vec![1, 1]);
    let out = hist_to(&dir, "h.csv", &args);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains(",True\n"), "{text}");
    let e = write(&dir, "e.csv", b"0\n0.5\n1\n");
    fails(
        &dir,
        &[
            "hist",
            p(&a),
            "--weights",
            p(&w),
            "--edges",
            p(&e),
            "--no-chart",
        ],
        "bool weights with explicit bin edges",
    );
}

/// `np.histogram([0.1, 0.2, 0.9], bins=2, range=(0, 1), weights=np.uint8([200, 100, 3]),
/// density=True)` is `[1.87234043, 0.12765957]` (float64, from the wrapped sums 44 and 3).
#[test]
fn density_is_float64_of_the_wrapped_sums() {
    let dir = TempDir::new().unwrap();
    let a: Vec<u8> = [0.1f64, 0.2, 0.9]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let a = write(&dir, "a.npy", &npy("<f8", false, &[3], &a));
    let w = write(&dir, "w.npy", &npy("|u1", false, &[3], &[200, 100, 3]));
    let args = [
        p(&a),
        "--weights",
        p(&w),
        "--bins",
        "2",
        "--range",
        "0:1",
        "--density",
    ];
    let out = hist_to(&dir, "d.npy", &args);
    assert!(header(&out).contains("'<f8'"), "{}", header(&out));
    let d: Vec<f64> = npy_data(&out)
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(d, vec![44.0 / 0.5 / 47.0, 3.0 / 0.5 / 47.0]);
    assert!((d[0] - 1.87234043).abs() < 1e-8);
}

/// Sums beyond 2^53 are exact 64-bit integers (numpy's explicit-edges path gives the same; its
/// uniform path rounds float64 block sums there): `np.histogram(a, bins=[0, .5, 1],
/// weights=np.full(5, 2**52 + 1))` is `[3 * 2**52 + 3, 2**52 + 1]`.
#[test]
fn sums_beyond_2_53_are_exact() {
    let dir = TempDir::new().unwrap();
    let a = samples(&dir);
    let data: Vec<u8> = [(1i64 << 52) + 1; 5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let w = write(&dir, "w.npy", &npy("<i8", false, &[5], &data));
    let doc = hist_json(
        &dir,
        &[p(&a), "--weights", p(&w), "--bins", "2", "--range", "0:1"],
    );
    assert_eq!(
        doc["counts"],
        serde_json::json!([3 * (1i64 << 52) + 3, (1i64 << 52) + 1])
    );
    assert_eq!(doc["counts_dtype"], "int64");
}
