//! Error messages that tell the truth: no NaN for a range wider than float64, a suggested widened
//! range that is itself accepted, no widening advice for an inverted range, and usage errors with
//! the exit status the README documents (2, with clap's usage text).

use std::path::Path;
use std::process::{Command, Output};

use tempfile::TempDir;

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn one_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

/// The `--range A:B` an error message suggests.
fn suggested(stderr: &str) -> String {
    let at = stderr.find("pass --range ").expect("a suggested range") + "pass --range ".len();
    stderr[at..]
        .split([' ', ',', '\n'])
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn a_range_wider_than_float64_is_named_without_nan() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    std::fs::write(d.join("s.txt"), "1\n2\n").unwrap();
    for bins in ["1", "4"] {
        let e = one_error(&run(
            d,
            &[
                "hist",
                "s.txt",
                "--dtype",
                "f64",
                "--range",
                "-1e308:1e308",
                "--bins",
                bins,
            ],
        ));
        assert!(!e.contains("NaN"), "{e}");
        assert!(e.contains("[-1e308, 1e308]") && e.contains("wider"), "{e}");
    }
}

#[test]
fn suggested_widened_ranges_are_accepted() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("u.txt"),
        "18446744073709551615\n18446744073709551615\n",
    )
    .unwrap();
    std::fs::write(d.join("small.txt"), "3\n3\n").unwrap();
    let max = "18446744073709551615:18446744073709551615";
    for (file, dtype, range, bins) in [
        ("u.txt", "u64", Some(max), "3"),
        ("u.txt", "f64", Some(max), "7"),
        ("u.txt", "f32", Some(max), "7"),
        // No range: every sample the same, numpy's widening changes nothing at 2^64.
        ("u.txt", "f64", None, "3"),
    ] {
        let mut args = vec!["hist", file, "--dtype", dtype, "--bins", bins];
        if let Some(r) = range {
            args.extend(["--range", r]);
        }
        let e = one_error(&run(d, &args));
        let pass = suggested(&e);
        let mut again = vec![
            "hist", file, "--dtype", dtype, "--bins", bins, "--range", &pass,
        ];
        again.push("--no-chart");
        let out = run(d, &again);
        assert!(
            out.status.success(),
            "{args:?} suggested {pass}, which fails: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("counted     2"), "{stdout}");
    }
    // Where numpy's widening by 0.5 cuts the bins, an empty range is widened as numpy does.
    let out = run(
        d,
        &[
            "hist",
            "small.txt",
            "--dtype",
            "f64",
            "--bins",
            "4",
            "--range",
            "3:3",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("[2.5, 3.5]"),
        "{stdout}"
    );
}

#[test]
fn an_inverted_range_is_not_told_to_widen() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("s.txt"), "1\n2\n").unwrap();
    let e = one_error(&run(
        dir.path(),
        &["hist", "s.txt", "--range", "5:1", "--bins", "3"],
    ));
    assert!(e.contains("inverted"), "{e}");
    assert!(!e.contains("widen") && !e.contains("pass --range"), "{e}");
}

#[test]
fn usage_errors_exit_2_with_clap_usage_as_the_readme_says() {
    let dir = TempDir::new().unwrap();
    for args in [
        vec!["hist", "s.txt", "--bins", "abc"],
        vec!["hist", "s.txt", "--frobnicate"],
        vec!["nosuchcommand"],
    ] {
        let out = run(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error:"), "{stderr}");
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("usage text and exit with status 2"),
        "the README documents usage errors"
    );
}
