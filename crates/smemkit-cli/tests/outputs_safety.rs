//! Outputs never harm inputs or leave debris: `--out`/`--plot` naming an input by any spelling is
//! refused and the input is left as it was; SIGINT/SIGTERM during a write remove the partial file;
//! outputs get the mode a plain create would give (or keep the replaced file's mode).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tempfile::TempDir;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_smemkit")
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// A C-order `.npy` (version 1.0) written from the format's specification.
fn npy_f32(values: &[f32], shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Asserts a refusal: exit status 1, one `error:` line mentioning `needle`, `file` unchanged.
fn refused(out: &Output, needle: &str, file: &Path, before: &[u8]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error:") && stderr.contains(needle),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(file).unwrap(),
        before,
        "{} changed",
        file.display()
    );
}

fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("smemkit-partial"))
        .collect()
}

#[test]
fn out_naming_an_input_by_any_spelling_is_refused() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let csv = b"1.5\n2.5\n3\n".to_vec();
    std::fs::write(d.join("x.csv"), &csv).unwrap();
    std::fs::write(d.join("w.csv"), b"1\n2\n3\n").unwrap();
    std::fs::write(d.join("e.csv"), b"0\n2\n4\n").unwrap();
    std::os::unix::fs::symlink(d.join("x.csv"), d.join("link.csv")).unwrap();
    std::fs::hard_link(d.join("x.csv"), d.join("hard.csv")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let x = d.join("x.csv");
    for out in ["x.csv", "./x.csv", "sub/../x.csv", "link.csv", "hard.csv"] {
        let o = run_in(d, &["hist", "x.csv", "--bins", "2", "--out", out]);
        refused(&o, "refusing to replace an input", &x, &csv);
    }
    // The input named through the link, the output by its real name.
    let o = run_in(d, &["hist", "link.csv", "--bins", "2", "--out", "x.csv"]);
    refused(&o, "the input", &x, &csv);
    let w = std::fs::read(d.join("w.csv")).unwrap();
    let o = run_in(
        d,
        &[
            "hist",
            "x.csv",
            "--bins",
            "2",
            "--weights",
            "w.csv",
            "--out",
            "./w.csv",
        ],
    );
    refused(&o, "--weights", &d.join("w.csv"), &w);
    let e = std::fs::read(d.join("e.csv")).unwrap();
    let o = run_in(d, &["hist", "x.csv", "--edges", "e.csv", "--out", "e.csv"]);
    refused(&o, "--edges", &d.join("e.csv"), &e);
    assert!(leftovers(d).is_empty());
}

#[test]
fn array_commands_refuse_to_replace_their_inputs() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let a = npy_f32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    std::fs::write(d.join("a.npy"), &a).unwrap();
    std::fs::write(d.join("b.npy"), &a).unwrap();
    std::os::unix::fs::symlink(d.join("a.npy"), d.join("la.npy")).unwrap();
    let path = d.join("a.npy");
    for args in [
        vec!["stencil", "a.npy", "--radius", "1", "--weights", "1,1,1"],
        vec!["reverse", "a.npy"],
        vec!["transpose", "a.npy"],
        vec!["matmul", "b.npy", "a.npy"],
    ] {
        for out in ["./a.npy", "la.npy"] {
            let mut all = args.clone();
            all.extend(["--out", out, "--backend", "cpu"]);
            let o = run_in(d, &all);
            refused(&o, "refusing to replace an input", &path, &a);
        }
    }
    // The plot of `plot-bench` may not replace one of its inputs either.
    std::fs::write(d.join("rows.svg"), b"{}\n").unwrap();
    let o = run_in(d, &["plot-bench", "rows.svg", "--out", "./rows.svg"]);
    refused(&o, "refusing", &d.join("rows.svg"), b"{}\n");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn with_umask(dir: &Path, umask: &str, args: &str) -> Output {
    Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" {args}"))
        .arg(bin())
        .output()
        .unwrap()
}

#[test]
fn outputs_get_the_mode_of_a_plain_create_or_of_the_file_they_replace() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    std::fs::write(d.join("x.csv"), b"1\n2\n3\n").unwrap();
    for (umask, want) in [("022", 0o644), ("002", 0o664), ("077", 0o600)] {
        for out in ["h.json", "h.csv", "h.npy"] {
            let _ = std::fs::remove_file(d.join(out));
            let o = with_umask(d, umask, &format!("hist x.csv --bins 2 --out {out}"));
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(mode(&d.join(out)), want, "umask {umask}, {out}");
        }
        let _ = std::fs::remove_file(d.join("p.svg"));
        let o = with_umask(d, umask, "hist x.csv --bins 2 --plot p.svg");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(mode(&d.join("p.svg")), want, "umask {umask}, plot");
    }
    // Replacing a file keeps its mode, whatever the umask.
    std::fs::set_permissions(d.join("h.json"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = with_umask(d, "077", "hist x.csv --bins 2 --out h.json");
    assert!(o.status.success());
    assert_eq!(mode(&d.join("h.json")), 0o640);
}

/// Starts a `hist` whose CSV output takes a while to write, waits for its partial file to appear,
/// sends `signal`, and returns the exit status and what is left in the folder.
fn interrupt_a_large_write(signal: &str) -> (Option<i32>, Option<i32>, Vec<PathBuf>, bool) {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let mut child = Command::new(bin())
        .current_dir(d)
        .args([
            "hist",
            "--generate",
            "uniform",
            "--count",
            "1000",
            "--bins",
            "4000000",
            "--backend",
            "cpu",
            "--no-chart",
            "--out",
            "big.csv",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut seen = false;
    while start.elapsed() < Duration::from_secs(120) {
        if !leftovers(d).is_empty() {
            seen = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if seen {
        let kill = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
    }
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    (
        status.code(),
        status.signal(),
        leftovers(d),
        d.join("big.csv").exists() && seen,
    )
}

#[test]
fn sigint_and_sigterm_during_a_write_remove_the_partial_file() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let (status, killed_by, left, target) = interrupt_a_large_write(signal);
        assert_eq!(status, Some(code), "SIG{signal}: killed by {killed_by:?}");
        assert!(left.is_empty(), "SIG{signal} left {left:?}");
        assert!(!target, "SIG{signal}: a partial write reached the target");
    }
}
