//! `smemkit hist --gather` without a GPU: alone it changes nothing (the output is whole already),
//! with the file rendezvous it is refused by name before anything is read or written, and with
//! the TCP rendezvous it passes on to the launcher's usual checks. The gather itself (parts of
//! known content from 2-4 ranks over loopback, ranks dying before and while sending, rank 0
//! failing) is tested in the library (`cargo test -p smemkit --lib launch::gather`).

use std::path::Path;
use std::process::Command;

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `smemkit hist` of 1000 generated samples in 10 bins with only `env` (and `PATH`) set, so that
/// no launcher's variables of the caller leak in.
fn hist(env: &[(&str, &str)], extra: &[&str]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smemkit"));
    c.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        c.env("PATH", path);
    }
    c.args([
        "hist",
        "--generate",
        "uniform",
        "--count",
        "1000",
        "--bins",
        "10",
        "--range",
        "0:1",
        "--no-chart",
    ])
    .args(extra)
    .envs(env.iter().copied());
    let o = c.output().expect("the binary runs");
    Run {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn out(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

#[test]
fn alone_the_gather_writes_what_one_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["npy", "csv", "json"] {
        let (plain, gathered) = (
            out(dir.path(), &format!("plain.{format}")),
            out(dir.path(), &format!("gathered.{format}")),
        );
        let r = hist(&[], &["--backend", "cpu", "--out", &plain]);
        assert!(r.ok, "{}", r.stderr);
        let r = hist(&[], &["--backend", "cpu", "--gather", "--out", &gathered]);
        assert!(r.ok, "{}", r.stderr);
        assert!(r.stdout.contains("wrote"), "{}", r.stdout);
        let (a, b) = (
            std::fs::read(&plain).unwrap(),
            std::fs::read(&gathered).unwrap(),
        );
        if format == "json" {
            // Timings differ between runs: the counts and edges must not.
            let v = |b: &[u8]| {
                let v: serde_json::Value = serde_json::from_slice(b).unwrap();
                (v["counts"].clone(), v["edges"].clone())
            };
            assert_eq!(v(&a), v(&b));
            assert!(v(&a).0.as_array().is_some_and(|c| c.len() == 10));
        } else {
            assert_eq!(a, b, "{format}");
        }
    }
}

#[test]
fn the_gather_over_a_file_rendezvous_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let id = out(dir.path(), "job.nccl-id");
    let counts = out(dir.path(), "counts.csv");
    for rank in ["0", "1"] {
        let env = [
            ("SMEMKIT_RANK", rank),
            ("SMEMKIT_WORLD_SIZE", "2"),
            ("SMEMKIT_NCCL_ID_FILE", id.as_str()),
        ];
        let r = hist(
            &env,
            &["--backend", "cuda", "--gather", "--out", counts.as_str()],
        );
        assert!(!r.ok, "rank {rank}: {}", r.stdout);
        assert!(
            r.stderr.starts_with("error:")
                && r.stderr.contains("--gather")
                && r.stderr.contains("SMEMKIT_NCCL_ID_FILE")
                && r.stderr.contains(&id)
                && r.stderr.contains("SMEMKIT_RENDEZVOUS"),
            "rank {rank}: {}",
            r.stderr
        );
        // Nothing left: no output, no part, no id file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    // Without --gather the same ranks get past this check (to the missing GPU or NCCL).
    let env = [
        ("SMEMKIT_RANK", "1"),
        ("SMEMKIT_WORLD_SIZE", "2"),
        ("SMEMKIT_NCCL_ID_FILE", id.as_str()),
    ];
    let r = hist(&env, &["--backend", "cuda", "--out", counts.as_str()]);
    assert!(!r.stderr.contains("--gather"), "{}", r.stderr);
}

#[test]
fn the_gather_over_tcp_passes_on_to_the_launchers_checks() {
    let env = [
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29998"),
    ];
    // The CPU engine refuses ranks, --gather or not: the gather is not what is refused.
    let r = hist(&env, &["--backend", "cpu", "--gather"]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("launched by torchrun")
            && r.stderr.contains("CUDA backend")
            && !r.stderr.contains("--gather"),
        "{}",
        r.stderr
    );
}
