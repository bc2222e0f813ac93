//! Which launcher started this process, and so its rank, the number of ranks, its rank on its
//! machine and where the ranks meet, read from the environment the launcher set: torchrun
//! (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`), Slurm's srun
//! (`SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` or `SLURM_NTASKS`, `SLURM_LOCALID`, the node list),
//! Open MPI's mpirun (`OMPI_COMM_WORLD_*`) and PMI launchers such as MPICH's or Intel MPI's
//! (`PMI_RANK`, `PMI_SIZE`). Explicit `SMEMKIT_*` variables win over all of them.
//!
//! Pure functions over a lookup (`name -> value`), so that every combination is tested without
//! touching the process's environment.

use std::path::PathBuf;

use super::nodelist;
use crate::config;
use crate::error::{Error, Result};

/// The launcher whose variables gave this process its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Launcher {
    /// `SMEMKIT_RANK` and `SMEMKIT_WORLD_SIZE`, set by hand or by a script.
    Smemkit,
    Torchrun,
    Slurm,
    OpenMpi,
    Pmi,
}

impl Launcher {
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Smemkit => "smemkit",
            Launcher::Torchrun => "torchrun",
            Launcher::Slurm => "slurm",
            Launcher::OpenMpi => "openmpi",
            Launcher::Pmi => "pmi",
        }
    }

    /// The variables that name the rank and the number of ranks.
    fn variables(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Launcher::Smemkit => (config::RANK, &[config::WORLD_SIZE]),
            Launcher::Torchrun => ("RANK", &["WORLD_SIZE"]),
            Launcher::Slurm => ("SLURM_PROCID", &["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"]),
            Launcher::OpenMpi => ("OMPI_COMM_WORLD_RANK", &["OMPI_COMM_WORLD_SIZE"]),
            Launcher::Pmi => ("PMI_RANK", &["PMI_SIZE"]),
        }
    }

    /// The local rank and the number of ranks on this machine, when the launcher says.
    fn local_variables(self) -> Option<(&'static str, &'static str)> {
        match self {
            Launcher::Smemkit => None,
            Launcher::Torchrun => Some(("LOCAL_RANK", "LOCAL_WORLD_SIZE")),
            Launcher::Slurm => Some(("SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE")),
            Launcher::OpenMpi => Some(("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")),
            Launcher::Pmi => Some(("MPI_LOCALRANKID", "MPI_LOCALNRANKS")),
        }
    }

    /// A name the launcher gives the job, the same in every rank: the TCP rendezvous refuses a
    /// rank of another job that found the same port.
    fn job_variables(self) -> &'static [&'static str] {
        match self {
            Launcher::Smemkit => &[],
            Launcher::Torchrun => &["TORCHELASTIC_RUN_ID"],
            Launcher::Slurm => &["SLURM_JOB_ID"],
            Launcher::OpenMpi => &["PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"],
            Launcher::Pmi => &[],
        }
    }
}

/// Where the ranks meet to share the NCCL unique id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Rendezvous {
    /// Rank 0 writes the id into this file, on a filesystem every rank sees.
    File(PathBuf),
    /// Rank 0 listens on this port (every interface); the others connect to `host:port`.
    Tcp { host: String, port: u16 },
}

impl std::fmt::Display for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rendezvous::File(p) => write!(f, "the file {}", p.display()),
            Rendezvous::Tcp { host, port } if host.contains(':') => {
                write!(f, "TCP [{host}]:{port}")
            }
            Rendezvous::Tcp { host, port } => write!(f, "TCP {host}:{port}"),
        }
    }
}

/// This process's place among the ranks, as the environment gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Placement {
    pub launcher: Launcher,
    pub rank: usize,
    pub world: usize,
    /// The rank on this machine (chooses the GPU unless `SMEMKIT_DEVICE` does).
    pub local_rank: Option<usize>,
    pub rendezvous: Rendezvous,
    /// The launcher's name for the job, when it gives one (see [`Launcher`]).
    pub job: Option<String>,
    /// The variables read, `NAME=value, ...`, for the summary and for messages.
    pub source: String,
}

impl Placement {
    /// One line for the summary: which launcher, which rank, where the ranks meet.
    pub fn describe(&self) -> String {
        let local = self
            .local_rank
            .map(|l| format!(", local rank {l}"))
            .unwrap_or_default();
        format!(
            "rank {} of {}{local}, launched by {} ({}); rendezvous over {}",
            self.rank,
            self.world,
            self.launcher.name(),
            self.source,
            self.rendezvous
        )
    }
}

/// The port of a TCP rendezvous that no variable names: derived from the job's name when the
/// launcher gives one (two jobs sharing rank 0's machine then rarely meet on one port), else
/// torch's default.
pub const DEFAULT_PORT: u16 = 29500;

fn default_port(job: Option<&str>) -> u16 {
    match job {
        None => DEFAULT_PORT,
        Some(job) => {
            // FNV-1a: the same in every process and every build.
            let h = job.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            });
            20000 + (h % 10000) as u16
        }
    }
}

/// Reads variables: `Some(value)` when set and not empty.
pub trait Env {
    fn get(&self, name: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Env for F {
    fn get(&self, name: &str) -> Option<String> {
        self(name).filter(|v| !v.trim().is_empty())
    }
}

/// The process's own environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

fn number(env: &dyn Env, name: &str) -> Result<Option<usize>> {
    match env.get(name) {
        None => Ok(None),
        Some(s) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| invalid(format!("{name}={s}: expected a non-negative integer"))),
    }
}

/// The launchers tried, innermost first: a torchrun or an mpirun inside a Slurm allocation
/// inherits the allocation's `SLURM_*` variables, and its own describe the process.
const AUTO_ORDER: [Launcher; 4] = [
    Launcher::Torchrun,
    Launcher::OpenMpi,
    Launcher::Pmi,
    Launcher::Slurm,
];

/// This process's place, or `None` when no launcher's variables are set (or `SMEMKIT_LAUNCHER`
/// is `none`). `SMEMKIT_RANK`/`SMEMKIT_WORLD_SIZE` win; `SMEMKIT_LAUNCHER` (`torchrun`,
/// `slurm`, `openmpi`, `pmi`) picks one launcher's variables when several are set. Variables set
/// only in part, or that disagree, are an error naming them.
pub fn detect(env: &dyn Env) -> Result<Option<Placement>> {
    let explicit = [config::RANK, config::WORLD_SIZE]
        .iter()
        .any(|v| env.get(v).is_some());
    let chosen = match env
        .get(config::LAUNCHER)
        .map(|s| s.trim().to_ascii_lowercase())
    {
        None => None,
        Some(s) => Some(match s.as_str() {
            "none" | "off" => {
                if explicit {
                    return Err(invalid(
                        "SMEMKIT_LAUNCHER=none and SMEMKIT_RANK/SMEMKIT_WORLD_SIZE contradict each \
                         other: unset one"
                            .into(),
                    ));
                }
                return Ok(None);
            }
            "torchrun" | "torch" => Launcher::Torchrun,
            "slurm" | "srun" => Launcher::Slurm,
            "openmpi" | "ompi" | "mpirun" => Launcher::OpenMpi,
            "pmi" => Launcher::Pmi,
            "smemkit" => Launcher::Smemkit,
            other => {
                return Err(invalid(format!(
                    "SMEMKIT_LAUNCHER={other}: expected none, torchrun, slurm, openmpi, pmi or \
                     smemkit"
                )))
            }
        }),
    };
    let launcher = if explicit {
        Launcher::Smemkit
    } else if let Some(l) = chosen {
        l
    } else {
        match AUTO_ORDER.into_iter().find(|l| {
            let (rank, worlds) = l.variables();
            // An allocation's shell (salloc, sbatch) has SLURM_NTASKS but is no task of a step.
            let world_set = *l != Launcher::Slurm && worlds.iter().any(|w| env.get(w).is_some());
            env.get(rank).is_some() || world_set
        }) {
            Some(l) => l,
            None => return Ok(None),
        }
    };
    place(env, launcher).map(Some)
}

fn place(env: &dyn Env, launcher: Launcher) -> Result<Placement> {
    let hint = if launcher == Launcher::Smemkit {
        ""
    } else {
        " (SMEMKIT_LAUNCHER=none ignores the launchers' variables)"
    };
    let (rank_var, world_vars) = launcher.variables();
    let world_var = world_vars
        .iter()
        .copied()
        .find(|w| env.get(w).is_some())
        .unwrap_or(world_vars[0]);
    let mut source = Vec::new();
    let mut read = |name: &str| -> Result<Option<usize>> {
        let v = number(env, name)?;
        if let Some(v) = v {
            source.push(format!("{name}={v}"));
        }
        Ok(v)
    };
    let (rank, world) = match (read(rank_var)?, read(world_var)?) {
        (Some(r), Some(w)) => (r, w),
        (r, _) => {
            let (set, unset) = if r.is_some() {
                (rank_var, world_vars.join(" or "))
            } else {
                (world_var, rank_var.to_string())
            };
            return Err(invalid(format!(
                "{} launch: {set} is set but {unset} is not; {rank_var} and {} go together{hint}",
                launcher.name(),
                world_vars.join("/")
            )));
        }
    };
    if world == 0 || rank >= world {
        return Err(invalid(format!(
            "{} launch: {rank_var}={rank} with {world_var}={world}: the rank must be below the \
             number of ranks{hint}",
            launcher.name()
        )));
    }
    let local_rank = match launcher.local_variables() {
        None => None,
        Some((local_var, local_size_var)) => {
            let local = read(local_var)?;
            // Slurm's tasks per node is a list ("2(x3),1"): not a number, not checked.
            let size = if launcher == Launcher::Slurm {
                None
            } else {
                read(local_size_var)?
            };
            if let (Some(l), Some(s)) = (local, size) {
                if l >= s || s > world {
                    return Err(invalid(format!(
                        "{} launch: {local_var}={l} with {local_size_var}={s} and {world_var}=\
                         {world}: the local rank must be below the ranks on this machine, and \
                         those no more than all the ranks{hint}",
                        launcher.name()
                    )));
                }
            }
            local
        }
    };
    let job = launcher
        .job_variables()
        .iter()
        .find_map(|v| env.get(v).map(|j| (v, j)))
        .map(|(v, j)| {
            // A Slurm job runs several steps, one after another or at once.
            let step = (*v == "SLURM_JOB_ID")
                .then(|| env.get("SLURM_STEP_ID").or_else(|| env.get("SLURM_STEPID")))
                .flatten();
            match step {
                Some(s) => format!("{}.{}", j.trim(), s.trim()),
                None => j.trim().to_string(),
            }
        });
    let rendezvous = rendezvous(env, launcher, world, job.as_deref())?;
    Ok(Placement {
        launcher,
        rank,
        world,
        local_rank,
        rendezvous,
        job,
        source: source.join(", "),
    })
}

/// `host:port`, `[v6]:port`, `tcp://...`, or `file:PATH`.
fn parse_rendezvous(s: &str) -> Result<Rendezvous> {
    let bad = || {
        invalid(format!(
            "SMEMKIT_RENDEZVOUS={s}: expected host:port (rank 0's host and a free port), \
             [v6-address]:port, or file:PATH"
        ))
    };
    let s = s.trim();
    if let Some(path) = s.strip_prefix("file:") {
        return if path.is_empty() {
            Err(bad())
        } else {
            Ok(Rendezvous::File(PathBuf::from(path)))
        };
    }
    let s = s.strip_prefix("tcp://").unwrap_or(s);
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(bad)?;
    if host.is_empty() || (host.contains(':') && !s.starts_with('[')) {
        return Err(bad());
    }
    Ok(Rendezvous::Tcp {
        host: host.to_string(),
        port,
    })
}

fn parse_port(name: &str, s: &str) -> Result<u16> {
    s.trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| invalid(format!("{name}={s}: expected a port number (1-65535)")))
}

/// Where the ranks meet: `SMEMKIT_RENDEZVOUS`, else `SMEMKIT_NCCL_ID_FILE`, else
/// `MASTER_ADDR:MASTER_PORT`; under Slurm the host defaults to the node list's first, and when
/// every rank runs on this machine (mpirun's local size is the world) to 127.0.0.1.
fn rendezvous(
    env: &dyn Env,
    launcher: Launcher,
    world: usize,
    job: Option<&str>,
) -> Result<Rendezvous> {
    match (env.get(config::RENDEZVOUS), env.get(config::NCCL_ID_FILE)) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "SMEMKIT_RENDEZVOUS and SMEMKIT_NCCL_ID_FILE both name the rendezvous: set one"
                    .into(),
            ))
        }
        (Some(r), None) => return parse_rendezvous(&r),
        (None, Some(p)) => return Ok(Rendezvous::File(PathBuf::from(p))),
        (None, None) => {}
    }
    let port = env
        .get("MASTER_PORT")
        .map(|p| parse_port("MASTER_PORT", &p))
        .transpose()?;
    let host = match env.get("MASTER_ADDR") {
        Some(h) => Some((h.trim().to_string(), "MASTER_ADDR")),
        None if launcher == Launcher::Slurm => {
            let list = [
                "SLURM_STEP_NODELIST",
                "SLURM_JOB_NODELIST",
                "SLURM_NODELIST",
            ]
            .iter()
            .find_map(|v| env.get(v).map(|l| (v, l)));
            match list {
                Some((v, l)) => Some((nodelist::first_host(&l)?, *v)),
                None => None,
            }
        }
        None => {
            let local_size = launcher
                .local_variables()
                .map(|(_, size)| number(env, size))
                .transpose()?
                .flatten();
            (launcher != Launcher::Smemkit && local_size == Some(world))
                .then(|| ("127.0.0.1".to_string(), "every rank on this machine"))
        }
    };
    match (host, port) {
        (Some((host, from)), port) => {
            if port.is_none() && from == "MASTER_ADDR" {
                return Err(invalid(format!(
                    "MASTER_ADDR={host} is set but MASTER_PORT is not: the TCP rendezvous needs \
                     both (rank 0's host and a free port)"
                )));
            }
            Ok(Rendezvous::Tcp {
                host,
                port: port.unwrap_or_else(|| default_port(job)),
            })
        }
        (None, Some(p)) => Err(invalid(format!(
            "MASTER_PORT={p} is set but MASTER_ADDR is not: the TCP rendezvous needs both (rank \
             0's host and a free port)"
        ))),
        (None, None) => Err(invalid(format!(
            "{} launch: no rendezvous for the NCCL id: set MASTER_ADDR and MASTER_PORT (rank 0's \
             host and a free port), SMEMKIT_RENDEZVOUS=host:port, or SMEMKIT_NCCL_ID_FILE (a file \
             on a filesystem every rank sees)",
            launcher.name()
        ))),
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
