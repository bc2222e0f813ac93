//! float16 (`.npy` `'<f2'`, raw or text with `--dtype f16`) and bfloat16 (raw or text with
//! `--dtype bf16`) samples through `smemkit hist`, against numpy's answers in the library's
//! fixtures (`crates/smemkit/tests/fixtures/half_numpy.json`, `scripts/numpy_half_fixtures.py`).

use std::path::Path;
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

/// A version 1 `.npy` of `descr` holding `data` as a flat array.
fn npy(descr: &str, len: usize, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
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

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn fixtures() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../smemkit/tests/fixtures/half_numpy.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Runs `hist` on `input` with the case's bins and compares the JSON counts with numpy's.
fn check(dir: &TempDir, case: &Value, input: &[&str]) -> Result<(), String> {
    let out = dir.path().join("h.json");
    let mut args: Vec<String> = vec!["hist".into()];
    args.extend(input.iter().map(|s| s.to_string()));
    args.extend(["--bins".into(), case["bins"].to_string()]);
    if let Some(r) = case["range"].as_array() {
        let v = |h: &Value| f64::from_le_bytes(unhex(h.as_str().unwrap()).try_into().unwrap());
        args.extend(["--range".into(), format!("{:?}:{:?}", v(&r[0]), v(&r[1]))]);
    }
    args.extend([
        "--backend".into(),
        "cpu".into(),
        "--no-chart".into(),
        "--out".into(),
        p(&out).into(),
    ]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, _, err) = smemkit(&refs);
    match (&case["expect"]["counts"], ok) {
        (Value::Array(want), true) => {
            let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
            if doc["counts"].as_array() == Some(want) {
                Ok(())
            } else {
                Err(format!("counts {} numpy {want:?}", doc["counts"]))
            }
        }
        (Value::Null, false) => Ok(()),
        (_, true) => Err(format!("numpy raised {}", case["expect"]["error"])),
        (_, false) => Err(format!("numpy answered, smemkit failed: {err}")),
    }
}

#[test]
fn half_samples_from_npy_and_raw_files_match_numpy() {
    let doc = fixtures();
    let dir = TempDir::new().unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    // One case in six (of those with a number of bins) keeps the test quick; every dataset, bin
    // count and range kind still comes up.
    for case in doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("bins").is_some())
        .step_by(6)
    {
        let array = &doc["arrays"][case["data"].as_str().unwrap()];
        let bytes = unhex(array["bits"].as_str().unwrap());
        let input: Vec<String> = match array["dtype"].as_str().unwrap() {
            "float16" => {
                let path = dir.path().join("x.npy");
                std::fs::write(&path, npy("<f2", bytes.len() / 2, &bytes)).unwrap();
                vec![p(&path).into()]
            }
            _ => {
                let path = dir.path().join("x.bin");
                std::fs::write(&path, &bytes).unwrap();
                vec![p(&path).into(), "--dtype".into(), "bf16".into()]
            }
        };
        let refs: Vec<&str> = input.iter().map(String::as_str).collect();
        if let Err(e) = check(&dir, case, &refs) {
            failures.push(format!("{}: {e}", case["name"].as_str().unwrap()));
        }
        checked += 1;
    }
    assert!(checked > 50, "{checked} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn half_text_is_read_as_numpy_reads_it_and_runs_on_cuda() {
    let dir = TempDir::new().unwrap();
    let txt = dir.path().join("x.txt");
    // 0.1 rounds to float16 0.0999755859375, below 0.1: numpy compares it with the range's ends
    // rounded to float16 too, so it is counted (in the first bin).
    std::fs::write(&txt, "0.1\n0.4\n0.7\n").unwrap();
    let out = dir.path().join("h.json");
    let (ok, stdout, err) = smemkit(&[
        "hist",
        p(&txt),
        "--dtype",
        "f16",
        "--bins",
        "3",
        "--range",
        "0.1:0.7",
        "--out",
        p(&out),
    ]);
    assert!(ok, "{err}");
    assert!(stdout.contains("float16"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["counts"], serde_json::json!([1, 1, 1]));
    let (ok, _, err) = smemkit(&[
        "hist",
        p(&txt),
        "--dtype",
        "bf16",
        "--bins",
        "3",
        "--backend",
        "cuda",
    ]);
    // The CUDA engine takes 16-bit floats: only a missing GPU stops it.
    assert!(
        ok || err.contains("the CUDA backend is not available"),
        "{err}"
    );
}

#[test]
fn bfloat16_bounds_numpy_compares_in_float32_follow_numpy() {
    // numpy (ml_dtypes) keeps the bfloat16 1.296875 inside a range ending at 1.296874999999
    // (compared in float32, the bound rounds onto it) and counts it in the last bin: [0 0 1 2],
    // the last edge the bound as given. A lower bound rounding down onto a bfloat16 (numpy
    // fails on a sample there) is refused by name, nothing written.
    let dir = TempDir::new().unwrap();
    let txt = dir.path().join("x.txt");
    std::fs::write(&txt, "1.296875\n1.296875\n0.5\n").unwrap();
    let out = dir.path().join("h.json");
    let run = |range: &str| {
        smemkit(&[
            "hist",
            p(&txt),
            "--dtype",
            "bf16",
            "--bins",
            "4",
            "--range",
            range,
            "--out",
            p(&out),
        ])
    };
    let (ok, _, err) = run("0.5000000000001:2");
    assert!(!ok);
    assert!(err.contains("rounds in float32 to 0.5"), "{err}");
    assert!(!out.exists());
    let (ok, _, err) = run("-1:1.296874999999");
    assert!(ok, "{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["counts"], serde_json::json!([0, 0, 1, 2]));
    assert_eq!(doc["edges"][4], serde_json::json!(1.296874999999));
    let (ok, _, err) = run("-1:1.296875");
    assert!(ok, "{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["counts"], serde_json::json!([0, 0, 1, 2]));
}
