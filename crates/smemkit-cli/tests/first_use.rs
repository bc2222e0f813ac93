//! Issue 20's first-use behaviour seen from outside: the automatic backend's choice and its line in
//! the summary, the phase trace (`SMEMKIT_TRACE=1`), and on a GPU that a warm call loads every
//! kernel as a CUBIN from the cache without loading NVRTC.

mod common;

use std::path::Path;
use std::process::Command;

use common::{npy, p, write};

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `smemkit hist FILE --bins 1000 ARGS` with the trace on and `cache` as the kernel cache.
fn hist(file: &Path, cache: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .arg("hist")
        .arg(file)
        .args(["--bins", "1000", "--no-chart"])
        .args(args)
        .env("SMEMKIT_TRACE", "1")
        .env("SMEMKIT_CACHE_DIR", cache)
        .output()
        .expect("the binary runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// 100000 int32 samples over [0, 1000) as an `.npy` file (400 KB).
fn small_input(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let data: Vec<u8> = (0..100_000i32)
        .flat_map(|i| ((i * 7919) % 1000).to_le_bytes())
        .collect();
    write(dir, "small.npy", &npy("<i4", false, &[100_000], &data))
}

#[test]
fn a_small_file_runs_on_the_cpu_under_auto_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(&dir);
    let r = hist(&input, dir.path(), &["--backend", "auto"]);
    assert!(r.ok, "{}", r.stderr);
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("auto "))
        .unwrap_or_else(|| panic!("no auto line: {}", r.stdout));
    assert!(
        line.contains("auto picked the CPU: estimated CPU") && line.contains("GPU"),
        "{line}"
    );
    assert!(r.stdout.contains("backend     cpu"), "{}", r.stdout);
    // The CPU was picked without opening a GPU: no driver start in the trace.
    assert!(!r.stderr.contains("context ("), "{}", r.stderr);
    // The trace: the process's phases with their milliseconds.
    for phase in [
        "argument parsing",
        "read the input",
        "histogram call",
        "main, in all",
    ] {
        assert!(
            r.stderr
                .lines()
                .any(|l| l.starts_with("smemkit trace:") && l.contains(phase)),
            "{phase} missing: {}",
            r.stderr
        );
    }
}

#[test]
fn an_explicit_backend_has_no_auto_line_and_the_json_has_the_timing() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(&dir);
    let out = dir.path().join("h.json");
    let r = hist(&input, dir.path(), &["--backend", "cpu", "--out", p(&out)]);
    assert!(r.ok, "{}", r.stderr);
    assert!(!r.stdout.contains("auto "), "{}", r.stdout);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let t = &doc["timing"];
    assert!(t["total_ms"].as_f64().unwrap() > 0.0, "{doc}");
    assert_eq!(t["setup_ms"].as_f64(), Some(0.0), "{doc}");
    assert_eq!(t["kernel_ms"].as_f64(), Some(0.0), "{doc}");
    assert!(t["kernel_gbps"].is_null(), "{doc}");
    assert!(t["call_gbps"].as_f64().unwrap() > 0.0, "{doc}");
    assert!(doc.get("auto_choice").is_none(), "{doc}");
    // The fields that were there before stay.
    for key in [
        "counts", "edges", "tallies", "samples", "counted", "backend", "engine",
    ] {
        assert!(doc.get(key).is_some(), "{key} missing: {doc}");
    }
}

/// A warm call on the GPU: every kernel from the cache as a CUBIN, NVRTC never loaded, and the
/// summary's time split into setup, transfer and kernels.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_warm_gpu_call_loads_cubins_without_nvrtc() {
    let dir = tempfile::tempdir().unwrap();
    let input = small_input(&dir);
    let cache = dir.path().join("cache");
    let cold = hist(&input, &cache, &["--backend", "cuda"]);
    assert!(cold.ok, "{}", cold.stderr);
    assert!(cold.stderr.contains("load libnvrtc"), "{}", cold.stderr);
    let warm = hist(&input, &cache, &["--backend", "cuda"]);
    assert!(warm.ok, "{}", warm.stderr);
    assert!(!warm.stderr.contains("load libnvrtc"), "{}", warm.stderr);
    assert!(!warm.stderr.contains("NVRTC compile"), "{}", warm.stderr);
    assert!(warm.stderr.contains("module load"), "{}", warm.stderr);
    for r in [&cold, &warm] {
        assert!(!r.stderr.contains("loaded from PTX"), "{}", r.stderr);
        let time = r.stdout.lines().find(|l| l.starts_with("time ")).unwrap();
        assert!(
            time.contains("GPU setup") && time.contains("transfer") && time.contains("kernels"),
            "{time}"
        );
        assert!(r.stdout.contains("GB/s in the kernels"), "{}", r.stdout);
    }
}
