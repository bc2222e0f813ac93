//! The process's end keeps what it reports: the exit status and every byte of stdout, for a run
//! that succeeds and one that fails after its histogram was made and printed. On a GPU the binary
//! ends with `_exit` (skipping the driver's exit handlers, main.rs), which would lose anything not
//! flushed by then; on the CPU it returns from `main`. Both ways are checked against each other.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{npy, p, write};

const SAMPLES: i32 = 200_000;
const BINS: i32 = 1000;

struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn hist(input: &Path, cache: &Path, backend: &str, out: &Path) -> Ended {
    let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .arg("hist")
        .arg(input)
        .args(["--bins", "1000", "--backend", backend, "--out", p(out)])
        .env("SMEMKIT_CACHE_DIR", cache)
        .output()
        .expect("the binary runs");
    Ended {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// int32 samples over [0, 1000), 200 in each bin.
fn input(dir: &tempfile::TempDir) -> PathBuf {
    let data: Vec<u8> = (0..SAMPLES)
        .flat_map(|i| ((i * 7919) % BINS).to_le_bytes())
        .collect();
    write(
        dir,
        "in.npy",
        &npy("<i4", false, &[SAMPLES as usize], &data),
    )
}

/// The terminal chart: the lines from the first empty one up to the `wrote` line (the summary's
/// timing lines above it differ from run to run).
fn chart(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .skip_while(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("wrote "))
        .collect()
}

/// A run that writes its histogram, then one whose `--out` name is longer than any file system
/// allows (255 bytes), which passes the checks made before the work (its folder exists, it is no
/// folder) and fails only when the file is created, after counting and printing: statuses 0 and
/// 1, the same chart whole on stdout, the failure's one `error:` line on stderr.
fn succeed_then_fail(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = input(&dir);
    let cache = dir.path().join("cache");
    let good = dir.path().join("h.json");
    let ok = hist(&input, &cache, backend, &good);
    assert_eq!(ok.code, Some(0), "{}", ok.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    let counts: Vec<u64> = doc["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(counts.len(), BINS as usize);
    assert_eq!(counts.iter().sum::<u64>(), SAMPLES as u64);
    // The summary's first line, its backend, the chart and the last line all arrived.
    assert!(ok.stdout.starts_with("input "), "{}", ok.stdout);
    assert!(
        ok.stdout.contains(&format!("backend     {backend}")),
        "{}",
        ok.stdout
    );
    assert!(
        ok.stdout
            .ends_with(&format!("wrote       {}\n", good.display())),
        "{}",
        ok.stdout
    );
    let bars = chart(&ok.stdout);
    assert!(bars.len() > 5, "{}", ok.stdout);

    let bad = dir.path().join(format!("{}.json", "h".repeat(300)));
    let failed = hist(&input, &cache, backend, &bad);
    assert_eq!(failed.code, Some(1), "{}", failed.stderr);
    assert_eq!(chart(&failed.stdout), bars, "{}", failed.stdout);
    assert!(!failed.stdout.contains("wrote"), "{}", failed.stdout);
    let errors: Vec<&str> = failed
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{}", failed.stderr);
    assert!(errors[0].contains("cannot create a file"), "{}", errors[0]);
    assert!(failed.stderr.ends_with('\n'), "{:?}", failed.stderr);
    // No partial file left beside the input, the first run's output and the kernel cache.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["in.npy", "h.json", "cache"].contains(&n.as_str()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn status_and_stdout_are_whole_on_the_cpu() {
    succeed_then_fail("cpu");
}

/// The same through the GPU, which ends the process with `_exit`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn status_and_stdout_are_whole_after_the_gpu() {
    succeed_then_fail("cuda");
}
