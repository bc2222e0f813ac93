//! `smemkit hist` under a launcher's environment (torchrun, srun, mpirun), without a GPU: the
//! launcher is recognised and named, a world of one rank runs alone, partial or inconsistent
//! environments are refused by name, and `SMEMKIT_LAUNCHER=none` ignores them all. The
//! rendezvous itself is tested in the library (`launch::tcp`, `tests/rendezvous_processes.rs`).

use std::process::Command;

/// Every variable a launcher or smemkit reads, removed so that the caller's environment (a CI
/// job inside Slurm, say) does not leak into the tests.
const LAUNCH_VARIABLES: &[&str] = &[
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_LOCALID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_STEPID",
    "SLURM_JOB_NODELIST",
    "SLURM_STEP_NODELIST",
    "SLURM_NODELIST",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMIX_NAMESPACE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "SMEMKIT_RANK",
    "SMEMKIT_WORLD_SIZE",
    "SMEMKIT_LAUNCHER",
    "SMEMKIT_RENDEZVOUS",
    "SMEMKIT_NCCL_ID_FILE",
    "SMEMKIT_DEVICE",
];

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `smemkit hist --generate uniform --count 1000 --bins 10 <extra>` with `env` only.
fn hist(env: &[(&str, &str)], extra: &[&str]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smemkit"));
    for v in LAUNCH_VARIABLES {
        c.env_remove(v);
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

const TORCHRUN: &[(&str, &str)] = &[
    ("RANK", "1"),
    ("WORLD_SIZE", "2"),
    ("LOCAL_RANK", "1"),
    ("LOCAL_WORLD_SIZE", "2"),
    ("MASTER_ADDR", "127.0.0.1"),
    ("MASTER_PORT", "29999"),
    ("TORCHELASTIC_RUN_ID", "none"),
];

fn with<'a>(base: &[(&'a str, &'a str)], extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut v = base.to_vec();
    v.extend_from_slice(extra);
    v
}

#[test]
fn no_launcher_runs_alone() {
    let r = hist(&[], &["--backend", "cpu"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(!r.stdout.contains("rank"), "{}", r.stdout);
}

#[test]
fn a_launchers_ranks_on_the_cpu_are_refused_naming_the_launcher() {
    let r = hist(TORCHRUN, &["--backend", "cpu"]);
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("rank 1 of 2, local rank 1, launched by torchrun (RANK=1, WORLD_SIZE=2")
            && r.stderr.contains("TCP 127.0.0.1:29999")
            && r.stderr.contains("SMEMKIT_LAUNCHER=none")
            && r.stderr.contains("CUDA backend"),
        "{}",
        r.stderr
    );
    // SMEMKIT_LAUNCHER=none: the same process runs alone.
    let r = hist(
        &with(TORCHRUN, &[("SMEMKIT_LAUNCHER", "none")]),
        &["--backend", "cpu"],
    );
    assert!(r.ok, "{}", r.stderr);
}

#[test]
fn every_launcher_is_recognised() {
    for (env, says) in [
        (
            vec![
                ("SLURM_PROCID", "3"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_JOB_ID", "77"),
                ("SLURM_JOB_NODELIST", "gpu[07-08]"),
            ],
            "rank 3 of 4, local rank 1, launched by slurm (SLURM_PROCID=3, SLURM_NTASKS=4, \
             SLURM_LOCALID=1); rendezvous over TCP gpu07:",
        ),
        (
            vec![
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ],
            "rank 0 of 2, local rank 0, launched by openmpi",
        ),
        (
            vec![
                ("PMI_RANK", "1"),
                ("PMI_SIZE", "3"),
                ("SMEMKIT_RENDEZVOUS", "h0:4000"),
            ],
            "rank 1 of 3, launched by pmi (PMI_RANK=1, PMI_SIZE=3); rendezvous over TCP h0:4000",
        ),
        (
            vec![
                ("SMEMKIT_RANK", "0"),
                ("SMEMKIT_WORLD_SIZE", "2"),
                ("SMEMKIT_NCCL_ID_FILE", "/tmp/x.id"),
            ],
            "launched by smemkit (SMEMKIT_RANK=0, SMEMKIT_WORLD_SIZE=2); rendezvous over the \
             file /tmp/x.id",
        ),
    ] {
        let r = hist(&env, &["--backend", "cpu"]);
        assert!(!r.ok);
        assert!(r.stderr.contains(says), "{env:?}: {}", r.stderr);
    }
}

#[test]
fn without_nccl_the_cuda_backend_names_the_launcher() {
    if cfg!(feature = "nccl") {
        eprintln!("SKIPPED: built with NCCL (the GPU tests run the ranks)");
        return;
    }
    let r = hist(TORCHRUN, &["--backend", "cuda"]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("launched by torchrun") && r.stderr.contains("--features nccl"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_world_of_one_rank_runs_alone_and_says_so() {
    let env = [
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29999"),
    ];
    let r = hist(&env, &["--backend", "cpu"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("launched by torchrun as a single rank (RANK=0, WORLD_SIZE=1): runs alone"),
        "{}",
        r.stdout
    );
}

#[test]
fn partial_and_inconsistent_environments_are_refused_by_name() {
    for (env, says) in [
        (vec![("RANK", "1")], "RANK is set but WORLD_SIZE is not"),
        (
            vec![("RANK", "2"), ("WORLD_SIZE", "2")],
            "RANK=2 with WORLD_SIZE=2",
        ),
        (
            vec![("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "h")],
            "MASTER_ADDR=h is set but MASTER_PORT is not",
        ),
        (
            vec![
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_NODELIST", "n[1-"),
            ],
            "the Slurm node list \"n[1-\"",
        ),
        (
            vec![("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "x")],
            "OMPI_COMM_WORLD_SIZE=x",
        ),
        (vec![("SMEMKIT_LAUNCHER", "lsf")], "SMEMKIT_LAUNCHER=lsf"),
    ] {
        let r = hist(&env, &["--backend", "cpu"]);
        assert!(!r.ok, "{env:?}");
        assert!(
            r.stderr.starts_with("error:") && r.stderr.contains(says),
            "{env:?}: {}",
            r.stderr
        );
    }
}

#[test]
fn shard_bins_needs_ranks_and_a_known_mode() {
    let r = hist(&[], &["--backend", "cpu", "--shard-bins", "always"]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("--shard-bins always") && r.stderr.contains("runs alone"),
        "{}",
        r.stderr
    );
    let r = hist(&[], &["--backend", "cpu", "--shard-bins", "sometimes"]);
    assert!(!r.ok);
    assert!(r.stderr.contains("--shard-bins sometimes"), "{}", r.stderr);
    for mode in ["auto", "never"] {
        let r = hist(&[], &["--backend", "cpu", "--shard-bins", mode]);
        assert!(r.ok, "{mode}: {}", r.stderr);
    }
}
