//! GPU test of `smemkit hist --shard-bins always` on one GPU: a world of one rank
//! (`SMEMKIT_RANK=0`, `SMEMKIT_WORLD_SIZE=1`) runs the sharded path and writes its part file
//! (`--out x.csv` becomes `x.part-0000-of-0001.csv`, every bin), the same as the CPU engine's
//! `--out`. Needs a build with `--features nccl`; says so and passes without it. Two ranks need
//! two GPUs (crates/smemkit-cli/tests/gpu_ranks.rs has the two-process tests).

use std::path::Path;
use std::process::Command;

/// A raw int32 file of `n` samples in [-100, nbins + 100).
fn data_file(dir: &Path, n: usize, nbins: i64) -> std::path::PathBuf {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
    let mut bytes = Vec::with_capacity(n * 4);
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = (x % (nbins as u64 + 200)) as i64 - 100;
        bytes.extend_from_slice(&(v as i32).to_le_bytes());
    }
    let p = dir.join("data.i32");
    std::fs::write(&p, bytes).unwrap();
    p
}

fn run(args: &[&str], envs: &[(&str, String)]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .arg("hist")
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .env("NCCL_NVLS_ENABLE", "0")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_writes_its_part_file_as_the_cpu_engine_writes_the_whole() {
    if !cfg!(feature = "nccl") {
        eprintln!("SKIPPED: built without the nccl feature (cargo test --features nccl)");
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let nbins = 1 << 20;
    let data = data_file(dir.path(), 5_000_003, nbins);
    let d = data.to_str().unwrap();
    let bins = nbins.to_string();
    let common = ["--dtype", "i32", "--bins", &bins, "--no-chart"];
    let cpu = dir.path().join("cpu.csv");
    run(
        &[
            &[d][..],
            &common,
            &["--backend", "cpu", "--out", cpu.to_str().unwrap()],
        ]
        .concat(),
        &[],
    );
    let out = dir.path().join("gpu.csv");
    let o = run(
        &[
            &[d][..],
            &common,
            &[
                "--backend",
                "cuda",
                "--shard-bins",
                "always",
                "--out",
                out.to_str().unwrap(),
            ],
        ]
        .concat(),
        &[
            ("SMEMKIT_RANK", "0".into()),
            ("SMEMKIT_WORLD_SIZE", "1".into()),
            (
                "SMEMKIT_NCCL_ID_FILE",
                dir.path().join("nccl.id").display().to_string(),
            ),
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let part = dir.path().join("gpu.part-0000-of-0001.csv");
    assert!(stdout.contains("bins sharded"), "{stdout}");
    assert!(!out.exists(), "the part file only: {stdout}");
    assert!(
        std::fs::read_to_string(&part).unwrap() == std::fs::read_to_string(&cpu).unwrap(),
        "the part file differs from the CPU engine's\n{stdout}"
    );
}
