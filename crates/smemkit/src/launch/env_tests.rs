use std::collections::HashMap;

use super::*;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn found(pairs: &[(&str, &str)]) -> Placement {
    detect(&env(pairs)).unwrap().expect("a launcher")
}

fn error(pairs: &[(&str, &str)]) -> String {
    detect(&env(pairs)).unwrap_err().to_string()
}

fn tcp(host: &str, port: u16) -> Rendezvous {
    Rendezvous::Tcp {
        host: host.into(),
        port,
    }
}

/// What torchrun sets for rank 3 of 8, 4 per node, on the second node.
const TORCHRUN: &[(&str, &str)] = &[
    ("RANK", "3"),
    ("WORLD_SIZE", "8"),
    ("LOCAL_RANK", "3"),
    ("LOCAL_WORLD_SIZE", "4"),
    ("GROUP_RANK", "0"),
    ("MASTER_ADDR", "node1"),
    ("MASTER_PORT", "29501"),
    ("TORCHELASTIC_RUN_ID", "job7"),
];

/// What srun sets for task 5 of a step of 8 tasks over gpu[01-04,07].
const SLURM: &[(&str, &str)] = &[
    ("SLURM_PROCID", "5"),
    ("SLURM_NTASKS", "8"),
    ("SLURM_STEP_NUM_TASKS", "8"),
    ("SLURM_LOCALID", "1"),
    ("SLURM_STEP_TASKS_PER_NODE", "2(x4)"),
    ("SLURM_JOB_ID", "4242"),
    ("SLURM_STEP_ID", "0"),
    ("SLURM_JOB_NODELIST", "gpu[01-04,07]"),
    ("SLURM_STEP_NODELIST", "gpu[02-04,07]"),
];

/// What Open MPI's mpirun sets for rank 1 of 2 on one machine.
const OMPI: &[(&str, &str)] = &[
    ("OMPI_COMM_WORLD_RANK", "1"),
    ("OMPI_COMM_WORLD_SIZE", "2"),
    ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
    ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
    ("PMIX_NAMESPACE", "prterun-host-1234@1"),
];

fn with<'a>(base: &[(&'a str, &'a str)], extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    // Later pairs replace earlier ones of the same name.
    let mut v: Vec<(&str, &str)> = base
        .iter()
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .copied()
        .collect();
    v.extend_from_slice(extra);
    v
}

fn without<'a>(base: &[(&'a str, &'a str)], names: &[&str]) -> Vec<(&'a str, &'a str)> {
    base.iter()
        .filter(|(k, _)| !names.contains(k))
        .copied()
        .collect()
}

#[test]
fn nothing_set_is_no_launcher() {
    assert_eq!(detect(&env(&[])).unwrap(), None);
    // A Slurm allocation's shell (salloc) without srun: no task id, no ranks.
    assert_eq!(
        detect(&env(&[("SLURM_JOB_ID", "1"), ("SLURM_NTASKS", "4")])).unwrap(),
        None
    );
    // Empty values count as unset.
    assert_eq!(
        detect(&env(&[("RANK", ""), ("WORLD_SIZE", " ")])).unwrap(),
        None
    );
}

#[test]
fn torchrun() {
    let p = found(TORCHRUN);
    assert_eq!(p.launcher, Launcher::Torchrun);
    assert_eq!((p.rank, p.world, p.local_rank), (3, 8, Some(3)));
    assert_eq!(p.rendezvous, tcp("node1", 29501));
    assert_eq!(p.job.as_deref(), Some("job7"));
    assert_eq!(
        p.source,
        "RANK=3, WORLD_SIZE=8, LOCAL_RANK=3, LOCAL_WORLD_SIZE=4"
    );
    let d = p.describe();
    assert!(
        d.contains("rank 3 of 8, local rank 3, launched by torchrun")
            && d.contains("TCP node1:29501"),
        "{d}"
    );
    // Without the local variables: no local rank.
    let p = found(&without(TORCHRUN, &["LOCAL_RANK", "LOCAL_WORLD_SIZE"]));
    assert_eq!(p.local_rank, None);
}

#[test]
fn slurm() {
    let p = found(SLURM);
    assert_eq!(p.launcher, Launcher::Slurm);
    assert_eq!((p.rank, p.world, p.local_rank), (5, 8, Some(1)));
    // The step's first node, on a port derived from the job and step.
    let port = default_port(Some("4242.0"));
    assert_eq!(p.rendezvous, tcp("gpu02", port));
    assert!((20000..30000).contains(&port));
    assert_eq!(p.job.as_deref(), Some("4242.0"));
    // Another step of the same job: another port (for these two ids).
    assert_ne!(default_port(Some("4242.1")), port);
    // The job's list when the step's is missing, then SLURM_NODELIST.
    let p = found(&without(SLURM, &["SLURM_STEP_NODELIST"]));
    assert_eq!(p.rendezvous, tcp("gpu01", port));
    let p = found(&with(
        &without(SLURM, &["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"]),
        &[("SLURM_NODELIST", "a7,b[1-2]")],
    ));
    assert_eq!(p.rendezvous, tcp("a7", port));
    // MASTER_ADDR and MASTER_PORT win over the node list; MASTER_PORT alone keeps the node.
    let p = found(&with(
        SLURM,
        &[("MASTER_ADDR", "10.0.0.9"), ("MASTER_PORT", "3000")],
    ));
    assert_eq!(p.rendezvous, tcp("10.0.0.9", 3000));
    let p = found(&with(SLURM, &[("MASTER_PORT", "3000")]));
    assert_eq!(p.rendezvous, tcp("gpu02", 3000));
    // The step's task count wins over the allocation's (srun -n 2 in a job of 8).
    let p = found(&with(
        SLURM,
        &[("SLURM_STEP_NUM_TASKS", "6"), ("SLURM_PROCID", "5")],
    ));
    assert_eq!(p.world, 6);
    assert!(p.source.contains("SLURM_STEP_NUM_TASKS=6"), "{}", p.source);
    let p = found(&without(SLURM, &["SLURM_STEP_NUM_TASKS"]));
    assert_eq!(p.world, 8);
    // No step id: the job id alone.
    let p = found(&without(SLURM, &["SLURM_STEP_ID"]));
    assert_eq!(p.job.as_deref(), Some("4242"));
    let p = found(&with(
        &without(SLURM, &["SLURM_STEP_ID"]),
        &[("SLURM_STEPID", "3")],
    ));
    assert_eq!(p.job.as_deref(), Some("4242.3"));
    // No node list and no MASTER_ADDR: named.
    let e = error(&without(
        SLURM,
        &["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"],
    ));
    assert!(
        e.contains("slurm launch: no rendezvous") && e.contains("MASTER_ADDR"),
        "{e}"
    );
    // A malformed node list is named.
    let e = error(&with(SLURM, &[("SLURM_STEP_NODELIST", "gpu[01-")]));
    assert!(e.contains("gpu[01-"), "{e}");
}

#[test]
fn open_mpi_and_pmi() {
    let p = found(OMPI);
    assert_eq!(p.launcher, Launcher::OpenMpi);
    assert_eq!((p.rank, p.world, p.local_rank), (1, 2, Some(1)));
    // Every rank on this machine: loopback, on the job's port.
    assert_eq!(
        p.rendezvous,
        tcp("127.0.0.1", default_port(Some("prterun-host-1234@1")))
    );
    // Over several machines mpirun does not say where rank 0 is: asked for.
    let e = error(&with(
        OMPI,
        &[
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
        ],
    ));
    assert!(e.contains("openmpi launch: no rendezvous"), "{e}");
    let p = found(&with(
        OMPI,
        &[
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("MASTER_ADDR", "h0"),
            ("MASTER_PORT", "5000"),
        ],
    ));
    assert_eq!(p.rendezvous, tcp("h0", 5000));

    let pmi = [
        ("PMI_RANK", "0"),
        ("PMI_SIZE", "4"),
        ("SMEMKIT_RENDEZVOUS", "h:7"),
    ];
    let p = found(&pmi);
    assert_eq!(p.launcher, Launcher::Pmi);
    assert_eq!((p.rank, p.world, p.local_rank, p.job), (0, 4, None, None));
    assert_eq!(p.rendezvous, tcp("h", 7));
    // Hydra's local variables: all four here, so loopback on torch's default port.
    let p = found(&[
        ("PMI_RANK", "2"),
        ("PMI_SIZE", "4"),
        ("MPI_LOCALRANKID", "2"),
        ("MPI_LOCALNRANKS", "4"),
    ]);
    assert_eq!(p.local_rank, Some(2));
    assert_eq!(p.rendezvous, tcp("127.0.0.1", DEFAULT_PORT));
}

#[test]
fn explicit_variables_win() {
    let mut e = with(TORCHRUN, SLURM);
    e.extend([
        ("SMEMKIT_RANK", "1"),
        ("SMEMKIT_WORLD_SIZE", "2"),
        ("SMEMKIT_NCCL_ID_FILE", "/shared/id"),
    ]);
    let p = found(&e);
    assert_eq!(p.launcher, Launcher::Smemkit);
    assert_eq!((p.rank, p.world, p.local_rank), (1, 2, None));
    assert_eq!(p.rendezvous, Rendezvous::File("/shared/id".into()));
    assert_eq!(p.source, "SMEMKIT_RANK=1, SMEMKIT_WORLD_SIZE=2");
    // Explicit rank with torchrun's MASTER_*: the TCP rendezvous.
    let p = found(&with(
        TORCHRUN,
        &[("SMEMKIT_RANK", "0"), ("SMEMKIT_WORLD_SIZE", "2")],
    ));
    assert_eq!((p.launcher, p.rank), (Launcher::Smemkit, 0));
    assert_eq!(p.rendezvous, tcp("node1", 29501));
    // SMEMKIT_RENDEZVOUS wins over MASTER_*; over the node list too.
    let p = found(&with(TORCHRUN, &[("SMEMKIT_RENDEZVOUS", "10.1.2.3:4000")]));
    assert_eq!(p.rendezvous, tcp("10.1.2.3", 4000));
    let p = found(&with(SLURM, &[("SMEMKIT_RENDEZVOUS", "file:/nfs/id")]));
    assert_eq!(p.rendezvous, Rendezvous::File("/nfs/id".into()));
    let p = found(&with(SLURM, &[("SMEMKIT_NCCL_ID_FILE", "/nfs/id2")]));
    assert_eq!(p.rendezvous, Rendezvous::File("/nfs/id2".into()));
    // The explicit pair alone, with no rendezvous: named.
    let e = error(&[("SMEMKIT_RANK", "0"), ("SMEMKIT_WORLD_SIZE", "2")]);
    assert!(
        e.contains("SMEMKIT_NCCL_ID_FILE") && e.contains("SMEMKIT_RENDEZVOUS"),
        "{e}"
    );
}

#[test]
fn innermost_launcher_wins() {
    // torchrun inside a Slurm step: torchrun's ranks (Slurm's 8 tasks are other processes).
    let p = found(&with(SLURM, TORCHRUN));
    assert_eq!((p.launcher, p.rank, p.world), (Launcher::Torchrun, 3, 8));
    assert_eq!(p.rendezvous, tcp("node1", 29501));
    // mpirun inside a Slurm batch script: mpirun's.
    let p = found(&with(SLURM, OMPI));
    assert_eq!((p.launcher, p.rank, p.world), (Launcher::OpenMpi, 1, 2));
    // Open MPI before PMI.
    let p = found(&with(OMPI, &[("PMI_RANK", "0"), ("PMI_SIZE", "9")]));
    assert_eq!(p.launcher, Launcher::OpenMpi);
    // SMEMKIT_LAUNCHER picks one when several are set.
    let p = found(&with(
        &with(SLURM, TORCHRUN),
        &[("SMEMKIT_LAUNCHER", "slurm")],
    ));
    assert_eq!((p.launcher, p.rank), (Launcher::Slurm, 5));
    let e = error(&with(TORCHRUN, &[("SMEMKIT_LAUNCHER", "openmpi")]));
    assert!(
        e.contains("openmpi launch") && e.contains("OMPI_COMM_WORLD_RANK"),
        "{e}"
    );
    // SMEMKIT_LAUNCHER=none ignores every launcher.
    assert_eq!(
        detect(&env(&with(TORCHRUN, &[("SMEMKIT_LAUNCHER", "none")]))).unwrap(),
        None
    );
    let e = error(&[
        ("SMEMKIT_LAUNCHER", "none"),
        ("SMEMKIT_RANK", "0"),
        ("SMEMKIT_WORLD_SIZE", "1"),
    ]);
    assert!(e.contains("contradict"), "{e}");
    let e = error(&[("SMEMKIT_LAUNCHER", "lsf")]);
    assert!(e.contains("SMEMKIT_LAUNCHER=lsf"), "{e}");
}

#[test]
fn partial_environments_name_their_variables() {
    for (pairs, names) in [
        (vec![("RANK", "1")], ["RANK", "WORLD_SIZE"]),
        (vec![("WORLD_SIZE", "2")], ["WORLD_SIZE", "RANK"]),
        (
            vec![("SLURM_PROCID", "1")],
            ["SLURM_PROCID", "SLURM_NTASKS"],
        ),
        (
            vec![("SLURM_NTASKS", "2"), ("SMEMKIT_LAUNCHER", "slurm")],
            ["SLURM_NTASKS", "SLURM_PROCID"],
        ),
        (
            vec![("OMPI_COMM_WORLD_SIZE", "2")],
            ["OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"],
        ),
        (vec![("PMI_RANK", "0")], ["PMI_RANK", "PMI_SIZE"]),
        (
            vec![("SMEMKIT_RANK", "0")],
            ["SMEMKIT_RANK", "SMEMKIT_WORLD_SIZE"],
        ),
        (
            vec![
                ("SMEMKIT_WORLD_SIZE", "2"),
                ("RANK", "0"),
                ("WORLD_SIZE", "2"),
            ],
            ["SMEMKIT_WORLD_SIZE", "SMEMKIT_RANK"],
        ),
    ] {
        let e = error(&pairs);
        for n in names {
            assert!(e.contains(n), "{pairs:?}: {e}");
        }
        let launcher_hint = !pairs
            .iter()
            .any(|(k, _)| k.starts_with("SMEMKIT_RANK") || k.starts_with("SMEMKIT_WORLD_SIZE"));
        assert_eq!(e.contains("SMEMKIT_LAUNCHER=none"), launcher_hint, "{e}");
    }
}

#[test]
fn inconsistent_environments_are_named() {
    for (extra, names) in [
        (vec![("RANK", "8")], vec!["RANK=8", "WORLD_SIZE=8", "below"]),
        (
            vec![("WORLD_SIZE", "0"), ("RANK", "0")],
            vec!["WORLD_SIZE=0"],
        ),
        (
            vec![("RANK", "-1")],
            vec!["RANK=-1", "non-negative integer"],
        ),
        (vec![("WORLD_SIZE", "two")], vec!["WORLD_SIZE=two"]),
        (
            vec![("LOCAL_RANK", "4")],
            vec!["LOCAL_RANK=4", "LOCAL_WORLD_SIZE=4"],
        ),
        (
            vec![("LOCAL_WORLD_SIZE", "9")],
            vec!["LOCAL_WORLD_SIZE=9", "WORLD_SIZE=8"],
        ),
        (vec![("LOCAL_RANK", "x")], vec!["LOCAL_RANK=x"]),
        (vec![("MASTER_PORT", "0")], vec!["MASTER_PORT=0", "port"]),
        (vec![("MASTER_PORT", "70000")], vec!["MASTER_PORT=70000"]),
    ] {
        let e = error(&with(TORCHRUN, &extra));
        for n in names {
            assert!(e.contains(n), "{extra:?}: {e}");
        }
    }
    let e = error(&without(TORCHRUN, &["MASTER_PORT"]));
    assert!(
        e.contains("MASTER_ADDR=node1 is set but MASTER_PORT is not"),
        "{e}"
    );
    let e = error(&without(TORCHRUN, &["MASTER_ADDR"]));
    assert!(
        e.contains("MASTER_PORT=29501 is set but MASTER_ADDR is not"),
        "{e}"
    );
    let e = error(&with(
        TORCHRUN,
        &[
            ("SMEMKIT_RENDEZVOUS", "h:1"),
            ("SMEMKIT_NCCL_ID_FILE", "/x"),
        ],
    ));
    assert!(e.contains("both name the rendezvous"), "{e}");
    let e = error(&with(SLURM, &[("SLURM_PROCID", "8")]));
    assert!(
        e.contains("SLURM_PROCID=8") && e.contains("SLURM_STEP_NUM_TASKS=8"),
        "{e}"
    );
}

#[test]
fn rendezvous_addresses() {
    for (s, want) in [
        ("h:1", Some(tcp("h", 1))),
        (
            "tcp://node-3.cluster:29500",
            Some(tcp("node-3.cluster", 29500)),
        ),
        ("[::1]:600", Some(tcp("::1", 600))),
        ("10.0.0.1:65535", Some(tcp("10.0.0.1", 65535))),
        ("file:/tmp/x", Some(Rendezvous::File("/tmp/x".into()))),
        ("h", None),
        ("h:", None),
        (":5", None),
        ("h:0", None),
        ("h:99999", None),
        ("::1:5", None),
        ("file:", None),
    ] {
        match (parse_rendezvous(s), want) {
            (Ok(r), Some(w)) => assert_eq!(r, w, "{s}"),
            (Err(e), None) => assert!(e.to_string().contains(s), "{s}: {e}"),
            (got, want) => panic!("{s}: {got:?}, expected {want:?}"),
        }
    }
    assert_eq!(tcp("::1", 6).to_string(), "TCP [::1]:6");
    assert_eq!(tcp("h", 6).to_string(), "TCP h:6");
    assert_eq!(Rendezvous::File("/a/b".into()).to_string(), "the file /a/b");
}
