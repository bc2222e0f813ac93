//! GPU tests of `smemkit hist --shard-bins always --gather`: the bins sharded over the ranks,
//! rank 0 gathering the parts over the TCP rendezvous and writing one whole file, byte for byte
//! the CPU engine's. One rank on one GPU (the gather of a world of one) runs on any GPU; two ranks
//! started the torchrun way need two GPUs (device kind `nvidia-h200-x2`), as does a rank killed
//! mid-gather (it pauses after its first chunk, `SMEMKIT_TEST_GATHER_PAUSE_MS`). Every test needs
//! a build with `--features nccl`, and says so and passes when a GPU or the feature is missing.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

fn gpus(n: usize) -> bool {
    if !cfg!(feature = "nccl") {
        eprintln!("SKIPPED: built without the nccl feature (cargo test --features nccl)");
        return false;
    }
    match smemkit::internals::gpu::device_count() {
        Ok(have) if have >= n => true,
        Ok(have) => {
            eprintln!("SKIPPED: {have} GPU(s); this test needs {n}");
            false
        }
        Err(e) => {
            eprintln!("SKIPPED: no CUDA: {e}");
            false
        }
    }
}

/// A raw int32 file of `n` samples in [-3, nbins + 3).
fn data_file(dir: &Path, n: usize, nbins: i64) -> std::path::PathBuf {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut bytes = Vec::with_capacity(n * 4);
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = (x % (nbins as u64 + 6)) as i64 - 3;
        bytes.extend_from_slice(&(v as i32).to_le_bytes());
    }
    let p = dir.join("data.i32");
    std::fs::write(&p, bytes).unwrap();
    p
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `smemkit hist` as torchrun starts it: rank `rank` of `world` over TCP at 127.0.0.1:`port`.
fn torchrun_rank(rank: usize, world: usize, port: u16, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smemkit"));
    for v in [
        "SMEMKIT_RANK",
        "SMEMKIT_WORLD_SIZE",
        "SMEMKIT_NCCL_ID_FILE",
        "SMEMKIT_RENDEZVOUS",
        "SMEMKIT_LAUNCHER",
        "SMEMKIT_DEVICE",
        "SMEMKIT_TEST_GATHER_PAUSE_MS",
    ] {
        c.env_remove(v);
    }
    c.arg("hist")
        .args(args)
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("LOCAL_RANK", rank.to_string())
        .env("LOCAL_WORLD_SIZE", world.to_string())
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("TORCHELASTIC_RUN_ID", "gpu-gather-test")
        .env("SMEMKIT_NCCL_TIMEOUT", "60")
        .env("NCCL_NVLS_ENABLE", "0")
        .env("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        .env("NVSHMEM_DISABLE_NVLS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn wait(mut child: Child, limit: Duration) -> Option<Output> {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The CPU engine's `--out` of `common` into `dir/cpu.<ext>`.
fn cpu_file(dir: &Path, common: &[&str], ext: &str) -> Vec<u8> {
    let out = dir.join(format!("cpu.{ext}"));
    let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .arg("hist")
        .args(common)
        .args(["--backend", "cpu", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read(out).unwrap()
}

/// The files in `dir` whose names start with `stem`.
fn files_of(dir: &Path, stem: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(stem))
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_sharded_and_gathered_writes_the_cpu_engines_file() {
    if !gpus(1) {
        return;
    }
    let dir = TempDir::new().unwrap();
    let data = data_file(dir.path(), 3_000_001, 1 << 20);
    let bins = (1 << 20).to_string();
    let common = [
        data.to_str().unwrap(),
        "--dtype",
        "i32",
        "--bins",
        &bins,
        "--no-chart",
    ];
    for ext in ["npy", "csv"] {
        let cpu = cpu_file(dir.path(), &common, ext);
        let out = dir.path().join(format!("gathered.{ext}"));
        let mut args = common.to_vec();
        let extra = [
            "--backend",
            "cuda",
            "--shard-bins",
            "always",
            "--gather",
            "--out",
        ];
        args.extend(extra);
        args.push(out.to_str().unwrap());
        let port = free_port().to_string();
        // A world of one explicit rank keeps its rank (and so the sharded path and the gather).
        let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
            .arg("hist")
            .args(&args)
            .env_remove("SMEMKIT_NCCL_ID_FILE")
            .env_remove("SMEMKIT_LAUNCHER")
            .env("SMEMKIT_RANK", "0")
            .env("SMEMKIT_WORLD_SIZE", "1")
            .env("SMEMKIT_RENDEZVOUS", format!("127.0.0.1:{port}"))
            .env("NCCL_NVLS_ENABLE", "0")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("bins sharded") && stdout.contains("gathered"),
            "{stdout}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), cpu, "{ext}: {stdout}");
        assert_eq!(
            files_of(dir.path(), "gathered"),
            vec![format!("gathered.{ext}")]
        );
        // The next format's run must find the folder as this one did.
        std::fs::remove_file(&out).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_ranks_gather_the_cpu_engines_file_on_rank_0() {
    if !gpus(2) {
        return;
    }
    let dir = TempDir::new().unwrap();
    let nbins = 1 << 22;
    let data = data_file(dir.path(), 20_000_003, nbins);
    let bins = nbins.to_string();
    let common = [
        data.to_str().unwrap(),
        "--dtype",
        "i32",
        "--bins",
        &bins,
        "--no-chart",
    ];
    for ext in ["npy", "csv"] {
        let cpu = cpu_file(dir.path(), &common, ext);
        let out = dir.path().join(format!("ranks.{ext}"));
        let mut args = common.to_vec();
        args.extend([
            "--backend",
            "cuda",
            "--shard-bins",
            "always",
            "--gather",
            "--out",
        ]);
        args.push(out.to_str().unwrap());
        let port = free_port();
        let r1 = torchrun_rank(1, 2, port, &args).spawn().unwrap();
        let r0 = torchrun_rank(0, 2, port, &args).spawn().unwrap();
        let o0 = wait(r0, Duration::from_secs(180)).expect("rank 0 finished in time");
        let o1 = wait(r1, Duration::from_secs(30)).expect("rank 1 finished in time");
        assert!(o0.status.success(), "rank 0: {}", text(&o0));
        assert!(o1.status.success(), "rank 1: {}", text(&o1));
        assert_eq!(std::fs::read(&out).unwrap(), cpu, "{ext}: {}", text(&o0));
        // One file, no parts.
        assert_eq!(files_of(dir.path(), "ranks"), vec![format!("ranks.{ext}")]);
        let (s0, s1) = (
            String::from_utf8_lossy(&o0.stdout),
            String::from_utf8_lossy(&o1.stdout),
        );
        assert!(s0.contains("rank 0 gathered the 2 parts over TCP"), "{s0}");
        assert!(
            s1.contains("sent to rank 0") && s1.contains("rank 0 writes the files"),
            "{s1}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rank_killed_mid_gather_leaves_no_file_and_stops_rank_0() {
    if !gpus(2) {
        return;
    }
    let dir = TempDir::new().unwrap();
    let nbins = 1 << 22;
    let data = data_file(dir.path(), 5_000_003, nbins);
    let bins = nbins.to_string();
    let out = dir.path().join("ranks.npy");
    let args = [
        data.to_str().unwrap(),
        "--dtype",
        "i32",
        "--bins",
        &bins,
        "--no-chart",
        "--backend",
        "cuda",
        "--shard-bins",
        "always",
        "--gather",
        "--out",
        out.to_str().unwrap(),
    ];
    let port = free_port();
    // Rank 1 sends the first of its 16 chunks, then waits ten minutes: it is killed there.
    let mut r1 = torchrun_rank(1, 2, port, &args)
        .env("SMEMKIT_TEST_GATHER_PAUSE_MS", "600000")
        .spawn()
        .unwrap();
    let r0 = torchrun_rank(0, 2, port, &args).spawn().unwrap();
    // Both have counted and rank 1 is mid-stream once rank 0 has waited a while for it.
    std::thread::sleep(Duration::from_secs(20));
    r1.kill().unwrap();
    let _ = r1.wait();
    let killed = Instant::now();
    let o0 = wait(r0, Duration::from_secs(50)).expect("rank 0 stopped before its timeout");
    assert!(!o0.status.success(), "{}", text(&o0));
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "{:?}",
        killed.elapsed()
    );
    let e = String::from_utf8_lossy(&o0.stderr);
    assert!(e.contains("rank 1 stopped without a word"), "{}", text(&o0));
    assert!(
        files_of(dir.path(), "ranks").is_empty(),
        "{:?}",
        files_of(dir.path(), "ranks")
    );
}
