//! The CLI against numpy (issue 23): the library's parity fixtures
//! (`crates/smemkit/tests/fixtures/parity_numpy.json`, computed by numpy) replayed through
//! `smemkit hist` (empty input, degenerate ranges, infinite / equal / int64 edges, estimators with
//! `--bins RULE`, `--density`, bincount's length from the data with `--minlength`) and
//! `smemkit digitize`, with the inputs written as `.npy` files; plus the flags' refusals.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

fn smemkit(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args(args)
        .output()
        .expect("run smemkit");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn descr(dtype: &str) -> &'static str {
    match dtype {
        "uint8" => "|u1",
        "uint16" => "<u2",
        "uint32" => "<u4",
        "uint64" => "<u8",
        "int8" => "|i1",
        "int16" => "<i2",
        "int32" => "<i4",
        "int64" => "<i8",
        "float32" => "<f4",
        "float64" => "<f8",
        other => panic!("dtype {other}"),
    }
}

/// A version 1.0 `.npy` file of one dimension.
fn npy(descr: &str, len: usize, data: &[u8]) -> Vec<u8> {
    npy_shaped(descr, &format!("({len},)"), data)
}

/// A version 1.0 `.npy` file of the shape written as numpy writes it (`(2, 3)`).
fn npy_shaped(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

struct Fixtures {
    doc: Value,
    dir: TempDir,
}

impl Fixtures {
    fn load() -> Fixtures {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../smemkit/tests/fixtures/parity_numpy.json"
        );
        Fixtures {
            doc: serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap(),
            dir: TempDir::new().unwrap(),
        }
    }
    fn array(&self, key: &Value) -> (String, Vec<u8>) {
        let a = &self.doc["arrays"][key.as_str().unwrap()];
        (
            a["dtype"].as_str().unwrap().to_string(),
            unhex(a["hex"].as_str().unwrap()),
        )
    }
    /// The array written as `.npy` (named after its key, written once).
    fn file(&self, key: &Value) -> PathBuf {
        let (dtype, bytes) = self.array(key);
        let size = descr(&dtype)[2..].parse::<usize>().unwrap();
        let name = key.as_str().unwrap().replace([':', '\''], "_");
        let path = self.dir.path().join(format!("{name}.npy"));
        if !path.exists() {
            std::fs::write(&path, npy(descr(&dtype), bytes.len() / size, &bytes)).unwrap();
        }
        path
    }
    fn f64s(&self, key: &Value) -> Vec<f64> {
        let (dtype, b) = self.array(key);
        match dtype.as_str() {
            "float64" => b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            "float32" => b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
            other => panic!("expected floats, got {other}"),
        }
    }
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn scalar(v: &Value) -> f64 {
    f64::from_le_bytes(unhex(v.as_str().unwrap()).try_into().unwrap())
}

fn json_f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// The columns of `--out FILE.csv` (exact: Rust's shortest round-trip floats, `inf` and `NaN`
/// included, which JSON cannot hold).
struct Table {
    edges: Vec<f64>,
    counts: Vec<f64>,
    density: Option<Vec<f64>>,
}

/// Runs `args` with `--out` CSV; `Err` when the outcome is not numpy's.
fn run_csv(f: &Fixtures, case: &Value, mut args: Vec<String>) -> Result<Option<Table>, String> {
    let out = f
        .dir
        .path()
        .join(format!("{}.csv", case["name"].as_str().unwrap()));
    args.extend(["--backend".into(), "cpu".into(), "--no-chart".into()]);
    args.extend(["--out".into(), p(&out).into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, _, err) = smemkit(&refs);
    match (ok, case["expect"].get("error")) {
        (false, Some(_)) => return Ok(None),
        (true, Some(e)) => return Err(format!("numpy raised {e}, the CLI answered")),
        (false, None) => return Err(format!("the CLI failed: {err}")),
        (true, None) => {}
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    let with_density = lines.next().unwrap().ends_with(",density");
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect())
        .collect();
    let mut edges: Vec<f64> = rows.iter().map(|r| r[1]).collect();
    edges.extend(rows.last().map(|r| r[2]));
    Ok(Some(Table {
        edges,
        counts: rows.iter().map(|r| r[3]).collect(),
        density: with_density.then(|| rows.iter().map(|r| r[4]).collect()),
    }))
}

fn check_histogram(f: &Fixtures, case: &Value) -> Result<(), String> {
    let mut args = vec!["hist".to_string(), p(&f.file(&case["data"])).to_string()];
    match (&case["bins"], &case["edges"]) {
        (Value::Number(n), _) => args.extend(["--bins".into(), n.to_string()]),
        (Value::String(rule), _) => args.extend(["--bins".into(), rule.clone()]),
        (_, key) => args.extend(["--edges".into(), p(&f.file(key)).to_string()]),
    }
    if !case["range"].is_null() {
        let (lo, hi) = (scalar(&case["range"][0]), scalar(&case["range"][1]));
        args.extend(["--range".into(), format!("{lo:?}:{hi:?}")]);
    }
    if !case["weights"].is_null() {
        args.extend(["--weights".into(), p(&f.file(&case["weights"])).to_string()]);
    }
    let density = case["density"].as_bool().unwrap();
    if density {
        args.push("--density".into());
    }
    let Some(table) = run_csv(f, case, args)? else {
        return Ok(());
    };
    let expect = &case["expect"];
    let counts = table.counts;
    let theirs = match &expect["counts"] {
        Value::Array(_) => json_f64s(&expect["counts"]),
        key => f.f64s(key),
    };
    let ours: Vec<f64> =
        if !expect["counts"].is_array() && f.array(&expect["counts"]).0.as_str() == "float32" {
            counts.iter().map(|&x| x as f32 as f64).collect()
        } else {
            counts
        };
    if !same(&ours, &theirs) {
        return Err(format!("counts {ours:?} vs numpy {theirs:?}"));
    }
    let edges = f.f64s(&expect["edges"]);
    if !same(&table.edges, &edges) {
        return Err(format!("edges {:?} vs numpy {edges:?}", table.edges));
    }
    if density {
        let theirs = f.f64s(&expect["density"]);
        if !same(table.density.as_deref().unwrap_or(&[]), &theirs) {
            return Err(format!("density {:?} vs numpy {theirs:?}", table.density));
        }
    }
    Ok(())
}

fn check_bincount(f: &Fixtures, case: &Value) -> Result<(), String> {
    let mut args = vec!["hist".to_string(), p(&f.file(&case["data"])).to_string()];
    let minlength = case["minlength"].as_u64().unwrap();
    if minlength > 0 {
        args.extend(["--minlength".into(), minlength.to_string()]);
    }
    if !case["weights"].is_null() {
        args.extend(["--weights".into(), p(&f.file(&case["weights"])).to_string()]);
    }
    let Some(table) = run_csv(f, case, args)? else {
        return Ok(());
    };
    let expect = &case["expect"]["counts"];
    let theirs = match expect {
        Value::Array(_) => json_f64s(expect),
        key => f.f64s(key),
    };
    let ours = table.counts;
    same(&ours, &theirs)
        .then_some(())
        .ok_or_else(|| format!("counts {ours:?} vs numpy {theirs:?}"))
}

fn check_digitize(f: &Fixtures, case: &Value) -> Result<(), String> {
    let out = f
        .dir
        .path()
        .join(format!("{}.npy", case["name"].as_str().unwrap()));
    let data = f.file(&case["data"]);
    let bins = f.file(&case["edges"]);
    let mut args = vec!["digitize", p(&data), "--bins", p(&bins), "--out", p(&out)];
    if case["right"].as_bool().unwrap() {
        args.push("--right");
    }
    let (ok, _, err) = smemkit(&args);
    let expect = &case["expect"];
    match (ok, expect.get("error")) {
        (false, Some(_)) => return Ok(()),
        (true, Some(e)) => return Err(format!("numpy raised {e}, the CLI answered")),
        (false, None) => return Err(format!("the CLI failed: {err}")),
        (true, None) => {}
    }
    let bytes = std::fs::read(&out).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert!(String::from_utf8_lossy(&bytes[10..10 + header_len]).contains("'<i8'"));
    let ours: Vec<i64> = bytes[10 + header_len..]
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let theirs: Vec<i64> = expect["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    (ours == theirs)
        .then_some(())
        .ok_or_else(|| format!("indices {ours:?} vs numpy {theirs:?}"))
}

#[test]
fn cli_replays_numpys_parity_fixtures() {
    let f = Fixtures::load();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (i, case) in f.doc["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        // Every case of the small kinds; every third estimator case (the library test runs all).
        let estimator = case["bins"].is_string();
        if estimator && i % 3 != 0 {
            continue;
        }
        // `--bins N` on integer samples without --range means integer bins [0, N) on the command
        // line (documented), where numpy takes N equal bins over the data's extremes.
        let integer_data = !f.array(&case["data"]).0.starts_with("float");
        if case["bins"].is_number() && case["range"].is_null() && integer_data {
            continue;
        }
        ran += 1;
        let r = match case["op"].as_str().unwrap() {
            "histogram" => check_histogram(&f, case),
            "bincount" => check_bincount(&f, case),
            "digitize" => check_digitize(&f, case),
            op => panic!("op {op}"),
        };
        if let Err(why) = r {
            failures.push(format!("{name}: {why}"));
        }
    }
    assert!(ran > 300, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} cases disagree with numpy:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn flags_are_checked() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("d.npy");
    std::fs::write(&data, npy("<i4", 3, &[1, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0])).unwrap();
    let two_d = dir.path().join("m.npy");
    std::fs::write(
        &two_d,
        npy_shaped("<i4", "(1, 2)", &[1, 0, 0, 0, 2, 0, 0, 0]),
    )
    .unwrap();
    let d = p(&data);
    // A misspelt estimator is a usage error (clap's, exit status 2).
    let out = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args(["hist", d, "--bins", "fdx"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("neither a number of bins nor one of numpy's estimators"),
        "{err}"
    );
    let cases: [(&[&str], &str); 5] = [
        (&["hist", d, "--bins", "0"], "at least 1"),
        (
            &["hist", d, "--bins", "auto", "--weights", d],
            "weighted data",
        ),
        (&["hist", d, "--density"], "--density needs"),
        (&["hist", p(&two_d)], "one-dimensional"),
        (
            &[
                "digitize",
                d,
                "--bins",
                d,
                "--out",
                "x.npy",
                "--backend",
                "gpu",
            ],
            "unknown backend `gpu`",
        ),
    ];
    for (args, needle) in cases {
        let (ok, _, err) = smemkit(args);
        assert!(!ok && err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // A 2-D array is histogrammed flat with --bins N, as numpy's histogram does.
    let (ok, out, err) = smemkit(&["hist", p(&two_d), "--bins", "3", "--backend", "cpu"]);
    assert!(ok, "{err}");
    assert!(out.contains("counted     2"), "{out}");
}

/// A numpy bool array (`'|b1'`) is histogrammed as uint8, as numpy does; a byte other than 0 or 1
/// (which numpy never writes) is refused.
#[test]
fn bool_npy_counts_as_uint8() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("b.npy");
    std::fs::write(&path, npy("|b1", 5, &[1, 0, 1, 1, 0])).unwrap();
    let out = dir.path().join("o.csv");
    let (ok, _, err) = smemkit(&["hist", p(&path), "--backend", "cpu", "--out", p(&out)]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text, "bin,left,right,count\n0,0,1,2\n1,1,2,3\n");
    std::fs::write(&path, npy("|b1", 2, &[1, 7])).unwrap();
    let (ok, _, err) = smemkit(&["hist", p(&path), "--bins", "2"]);
    assert!(!ok && err.contains("other than 0 or 1"), "{err}");
}
