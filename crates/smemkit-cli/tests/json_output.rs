//! `--out FILE.json` keeps infinite sums apart from NaN: JSON has neither, so they are written as
//! the strings "inf", "-inf" and "nan" (finite values stay numbers).

use std::process::Command;

use tempfile::TempDir;

#[test]
fn infinite_and_nan_weight_sums_are_told_apart() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    std::fs::write(d.join("x.txt"), "0.5\n1.5\n2.5\n2.5\n3.5\n3.5\n").unwrap();
    // Bin 0: +inf; bin 1: -inf; bin 2: inf + -inf = NaN; bin 3: 1e308 + 1e308 overflows to +inf.
    std::fs::write(d.join("w.txt"), "inf\n-inf\ninf\n-inf\n1e308\n1e308\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .current_dir(d)
        .args([
            "hist",
            "x.txt",
            "--weights",
            "w.txt",
            "--range",
            "0:4",
            "--bins",
            "4",
            "--out",
            "h.json",
            "--backend",
            "cpu",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("h.json")).unwrap()).unwrap();
    assert_eq!(
        doc["counts"],
        serde_json::json!(["inf", "-inf", "nan", "inf"])
    );
    assert_eq!(doc["edges"], serde_json::json!([0.0, 1.0, 2.0, 3.0, 4.0]));
}
