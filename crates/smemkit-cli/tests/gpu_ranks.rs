//! GPU tests of several processes (`SMEMKIT_RANK`, `SMEMKIT_WORLD_SIZE`, `SMEMKIT_NCCL_ID_FILE`):
//! two `smemkit hist` processes over one file give the CPU engine's histogram (written by rank 0
//! alone), and a rank that fails (a missing GPU) or is killed makes the other stop with an error
//! within its timeout instead of hanging; two processes of two GPUs each (four GPUs) give it too.
//! They need two GPUs (four for that test) and a build with `--features nccl`,
//! and say so and pass when either is missing (device kind `nvidia-h200-x2`). The torchrun tests
//! start the ranks with torchrun's variables and meet over TCP on 127.0.0.1.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

fn ready() -> bool {
    if !cfg!(feature = "nccl") {
        eprintln!("SKIPPED: built without the nccl feature (cargo test --features nccl)");
        return false;
    }
    match smemkit::internals::gpu::device_count() {
        Ok(n) if n >= 2 => true,
        Ok(n) => {
            eprintln!("SKIPPED: {n} GPU(s); these tests need at least 2");
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
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
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

/// `smemkit hist` as rank `rank` of `world`, with a deadline of `timeout_s` for every NCCL wait.
fn rank(rank: usize, world: usize, dir: &Path, args: &[&str], timeout_s: u32) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smemkit"));
    c.arg("hist")
        .args(args)
        .env("SMEMKIT_RANK", rank.to_string())
        .env("SMEMKIT_WORLD_SIZE", world.to_string())
        .env("SMEMKIT_NCCL_ID_FILE", dir.join("nccl.id"))
        .env("SMEMKIT_NCCL_TIMEOUT", timeout_s.to_string())
        // Multicast stays off on shared machines, whatever the caller's environment says.
        .env("NCCL_NVLS_ENABLE", "0")
        .env("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        .env("NVSHMEM_DISABLE_NVLS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits for `child` at most `limit`, killing it after; `None` if it had to be killed.
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

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_ranks_give_the_cpu_histogram() {
    if !ready() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let n = 3_000_001; // uneven halves
    let data = data_file(dir.path(), n, 5000);
    let d = data.to_str().unwrap();
    let cpu_out = dir.path().join("cpu.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args([
            "hist",
            d,
            "--dtype",
            "i32",
            "--bins",
            "5000",
            "--backend",
            "cpu",
            "--no-chart",
        ])
        .args(["--out", cpu_out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for strategy in ["auto", "global"] {
        let out = dir.path().join(format!("ranks-{strategy}.csv"));
        let args = [
            d,
            "--dtype",
            "i32",
            "--bins",
            "5000",
            "--backend",
            "cuda",
            "--no-chart",
            "--strategy",
            strategy,
            "--out",
            out.to_str().unwrap(),
        ];
        // Rank 1 first: it waits for rank 0's id file.
        let r1 = rank(1, 2, dir.path(), &args, 60).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let r0 = rank(0, 2, dir.path(), &args, 60).spawn().unwrap();
        let o0 = wait(r0, Duration::from_secs(120)).expect("rank 0 finished in time");
        let o1 = wait(r1, Duration::from_secs(30)).expect("rank 1 finished in time");
        assert!(o0.status.success(), "rank 0: {}", text(&o0));
        assert!(o1.status.success(), "rank 1: {}", text(&o1));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            std::fs::read_to_string(&cpu_out).unwrap(),
            "{strategy}: rank 0's file against the CPU engine's"
        );
        assert!(
            String::from_utf8_lossy(&o1.stdout).contains("rank 0 writes"),
            "{}",
            text(&o1)
        );
        std::fs::remove_file(&out).unwrap();
        assert!(
            !dir.path().join("nccl.id").exists(),
            "rank 0 removes the id file"
        );
    }
}

/// Two processes of two GPUs each (`--devices`): four NCCL ranks, each process reading its half
/// of the file and splitting it over its GPUs. Needs four GPUs (device kind `nvidia-h200-x4`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn two_ranks_of_two_gpus_each_give_the_cpu_histogram() {
    if !ready() {
        return;
    }
    match smemkit::internals::gpu::device_count() {
        Ok(n) if n >= 4 => {}
        Ok(n) => {
            eprintln!("SKIPPED: {n} GPU(s); two ranks of two GPUs need 4");
            return;
        }
        Err(e) => panic!("device count: {e}"),
    }
    let dir = TempDir::new().unwrap();
    let n = 4_000_003; // splits unevenly over four GPUs
    let data = data_file(dir.path(), n, 70000);
    let d = data.to_str().unwrap();
    let common = [d, "--dtype", "i32", "--bins", "70000", "--no-chart"];
    let cpu_out = dir.path().join("cpu.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .arg("hist")
        .args(common)
        .args(["--backend", "cpu", "--out", cpu_out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = dir.path().join("ranks.csv");
    let args = |devices: &'static str| {
        let mut a: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        a.extend(["--backend", "cuda", "--devices", devices, "--out"].map(String::from));
        a.push(out.to_str().unwrap().to_string());
        a
    };
    let (a0, a1) = (args("0,1"), args("2,3"));
    let a0: Vec<&str> = a0.iter().map(String::as_str).collect();
    let a1: Vec<&str> = a1.iter().map(String::as_str).collect();
    let r1 = rank(1, 2, dir.path(), &a1, 60).spawn().unwrap();
    let r0 = rank(0, 2, dir.path(), &a0, 60).spawn().unwrap();
    let o0 = wait(r0, Duration::from_secs(120)).expect("rank 0 finished in time");
    let o1 = wait(r1, Duration::from_secs(30)).expect("rank 1 finished in time");
    assert!(o0.status.success(), "rank 0: {}", text(&o0));
    assert!(o1.status.success(), "rank 1: {}", text(&o1));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&cpu_out).unwrap(),
        "rank 0's file against the CPU engine's"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rank_without_its_gpu_stops_the_other_with_its_reason() {
    if !ready() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let data = data_file(dir.path(), 100_000, 100);
    let args = [
        data.to_str().unwrap(),
        "--dtype",
        "i32",
        "--bins",
        "100",
        "--backend",
        "cuda",
        "--no-chart",
    ];
    let start = Instant::now();
    let r0 = rank(0, 2, dir.path(), &args, 60).spawn().unwrap();
    let r1 = rank(1, 2, dir.path(), &args, 60)
        .env("SMEMKIT_DEVICE", "999")
        .spawn()
        .unwrap();
    let o1 = wait(r1, Duration::from_secs(60)).expect("rank 1 stopped");
    let o0 = wait(r0, Duration::from_secs(90)).expect("rank 0 stopped instead of hanging");
    assert!(!o1.status.success(), "{}", text(&o1));
    assert!(
        String::from_utf8_lossy(&o1.stderr).contains("999"),
        "{}",
        text(&o1)
    );
    assert!(!o0.status.success(), "{}", text(&o0));
    let e0 = String::from_utf8_lossy(&o0.stderr);
    assert!(
        e0.starts_with("error:") && e0.contains("rank 1"),
        "{}",
        text(&o0)
    );
    // The marker makes it quick: well before the 60 s deadline.
    assert!(
        start.elapsed() < Duration::from_secs(45),
        "{:?}",
        start.elapsed()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_killed_rank_gives_an_error_within_the_timeout() {
    if !ready() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let data = data_file(dir.path(), 1 << 20, 1000);
    let args = [
        data.to_str().unwrap(),
        "--dtype",
        "i32",
        "--bins",
        "1000",
        "--backend",
        "cuda",
        "--no-chart",
    ];
    let timeout = 20;
    // Rank 1 pauses after the communicator is up and the ranks agree, and dies there: rank 0
    // then waits in the final all-reduce for a peer that is gone.
    let mut r1 = rank(1, 2, dir.path(), &args, timeout)
        .env("SMEMKIT_TEST_RANK_PAUSE_MS", "60000")
        .spawn()
        .unwrap();
    let r0 = rank(0, 2, dir.path(), &args, timeout).spawn().unwrap();
    // Rank 0 removes the id file once the communicator is up; the agreement follows at once.
    let id = dir.path().join("nccl.id");
    let t = Instant::now();
    while !id.exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    while id.exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_secs(2));
    r1.kill().unwrap();
    let _ = r1.wait();
    let killed = Instant::now();
    // The deadline, plus start-up and slack: never a hang.
    let o0 = wait(r0, Duration::from_secs(timeout as u64 + 40))
        .expect("rank 0 stopped within its timeout instead of hanging");
    eprintln!(
        "rank 0 stopped {:.1} s after rank 1 was killed: {}",
        killed.elapsed().as_secs_f64(),
        text(&o0)
    );
    assert!(!o0.status.success(), "{}", text(&o0));
    let e0 = String::from_utf8_lossy(&o0.stderr);
    assert!(e0.starts_with("error:"), "{}", text(&o0));
}

/// `smemkit hist` as torchrun starts it: rank `rank` of `world`, one per GPU, meeting over TCP
/// at 127.0.0.1:`port` (no SMEMKIT_* variable).
fn torchrun_rank(rank: usize, world: usize, port: u16, args: &[&str], timeout_s: u32) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smemkit"));
    for v in [
        "SMEMKIT_RANK",
        "SMEMKIT_WORLD_SIZE",
        "SMEMKIT_NCCL_ID_FILE",
        "SMEMKIT_RENDEZVOUS",
        "SMEMKIT_LAUNCHER",
        "SMEMKIT_DEVICE",
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
        .env("TORCHELASTIC_RUN_ID", "gpu-ranks-test")
        .env("SMEMKIT_NCCL_TIMEOUT", timeout_s.to_string())
        .env("NCCL_NVLS_ENABLE", "0")
        .env("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        .env("NVSHMEM_DISABLE_NVLS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_ranks_started_the_torchrun_way_give_the_cpu_histogram() {
    if !ready() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let data = data_file(dir.path(), 2_000_001, 3000);
    let d = data.to_str().unwrap();
    let common = [d, "--dtype", "i32", "--bins", "3000", "--no-chart"];
    let cpu_out = dir.path().join("cpu.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .arg("hist")
        .args(common)
        .args(["--backend", "cpu", "--out", cpu_out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = dir.path().join("ranks.csv");
    let mut args = common.to_vec();
    args.extend(["--backend", "cuda", "--out", out.to_str().unwrap()]);
    let port = free_port();
    let r1 = torchrun_rank(1, 2, port, &args, 60).spawn().unwrap();
    let r0 = torchrun_rank(0, 2, port, &args, 60).spawn().unwrap();
    let o0 = wait(r0, Duration::from_secs(120)).expect("rank 0 finished in time");
    let o1 = wait(r1, Duration::from_secs(30)).expect("rank 1 finished in time");
    assert!(o0.status.success(), "rank 0: {}", text(&o0));
    assert!(o1.status.success(), "rank 1: {}", text(&o1));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&cpu_out).unwrap(),
        "rank 0's file against the CPU engine's"
    );
    for o in [&o0, &o1] {
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(
            s.contains("launched by torchrun") && s.contains(&format!("TCP 127.0.0.1:{port}")),
            "{}",
            text(o)
        );
    }
    // Rank 1 used GPU 1 (its local rank).
    assert!(
        String::from_utf8_lossy(&o1.stdout).contains("rank 1 of 2 (torchrun; GPU 1,"),
        "{}",
        text(&o1)
    );
}

/// Over TCP a killed rank's connection closes: rank 0 stops at once with that news, well before
/// its timeout.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_killed_torchrun_rank_stops_the_other_before_the_timeout() {
    if !ready() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let data = data_file(dir.path(), 1 << 20, 1000);
    let args = [
        data.to_str().unwrap(),
        "--dtype",
        "i32",
        "--bins",
        "1000",
        "--backend",
        "cuda",
        "--no-chart",
    ];
    let timeout = 60;
    let port = free_port();
    let mut r1 = torchrun_rank(1, 2, port, &args, timeout)
        .env("SMEMKIT_TEST_RANK_PAUSE_MS", "60000")
        .spawn()
        .unwrap();
    let r0 = torchrun_rank(0, 2, port, &args, timeout).spawn().unwrap();
    // Long enough for both to be up and rank 1 to be pausing in the middle of its run.
    std::thread::sleep(Duration::from_secs(15));
    r1.kill().unwrap();
    let _ = r1.wait();
    let killed = Instant::now();
    let o0 = wait(r0, Duration::from_secs(timeout as u64 + 40))
        .expect("rank 0 stopped instead of hanging");
    eprintln!(
        "rank 0 stopped {:.1} s after rank 1 was killed: {}",
        killed.elapsed().as_secs_f64(),
        text(&o0)
    );
    assert!(!o0.status.success(), "{}", text(&o0));
    let e0 = String::from_utf8_lossy(&o0.stderr);
    assert!(
        e0.starts_with("error:") && e0.contains("rank 1"),
        "{}",
        text(&o0)
    );
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "{:?}",
        killed.elapsed()
    );
}
