//! Several processes (one GPU each, or with `--devices` the same number of GPUs each, one NCCL rank
//! per GPU; on one machine or several), started by the user or a launcher with `SMEMKIT_RANK`,
//! `SMEMKIT_WORLD_SIZE` and `SMEMKIT_NCCL_ID_FILE`. Every process reads the
//! same input (a memory-mapped file costs nothing until touched), histograms its contiguous slice
//! of it on its GPU, and one NCCL all-reduce sums the counters of every rank; all ranks then hold
//! the whole histogram (the CLI writes it from rank 0).
//!
//! Rendezvous: rank 0 makes the NCCL unique id and writes it to the id file atomically (a
//! temporary file renamed into place); the others poll for it. The file must be on a filesystem
//! every rank sees (a local path for one machine, a shared one across machines) and should be
//! fresh per job: rank 0 deletes it once the communicator is up.
//!
//! Failures never hang: every wait has a deadline (`SMEMKIT_NCCL_TIMEOUT`, seconds, default 120),
//! after which the communicator is aborted; a rank that fails with an error writes
//! `<id file>.failed.<rank>` with its message, and the others, polling it, stop at once with that
//! message. A killed rank leaves no marker: its peers stop at the deadline (or when NCCL itself
//! notices the lost connection).

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::multi::{shards, DeviceSet};
use super::prepared::CudaResult;
use super::stream::StreamOptions;
use crate::error::{Error, Result};
use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::plan::StrategyChoice;
use crate::sample::{Samples, Weights};

/// This process's place among the ranks, from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankSpec {
    pub rank: usize,
    pub world: usize,
    /// The rendezvous file (rank 0 writes the NCCL unique id there).
    pub id_file: PathBuf,
    /// The GPU to use (`SMEMKIT_DEVICE`); by default `rank % device_count`.
    pub device: Option<usize>,
}

fn env_usize(name: &str) -> Result<Option<usize>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(s) => s.trim().parse().map(Some).map_err(|_| {
            Error::InvalidArgument(format!("{name}={s}: expected a non-negative integer"))
        }),
    }
}

impl RankSpec {
    /// `None` when neither `SMEMKIT_RANK` nor `SMEMKIT_WORLD_SIZE` is set; an error when the
    /// variables are incomplete or inconsistent.
    pub fn from_env() -> Result<Option<RankSpec>> {
        let (rank, world) = (env_usize("SMEMKIT_RANK")?, env_usize("SMEMKIT_WORLD_SIZE")?);
        let (rank, world) = match (rank, world) {
            (None, None) => return Ok(None),
            (Some(r), Some(w)) => (r, w),
            _ => {
                return Err(Error::InvalidArgument(
                    "SMEMKIT_RANK and SMEMKIT_WORLD_SIZE go together: set both or neither".into(),
                ))
            }
        };
        let id_file = std::env::var_os("SMEMKIT_NCCL_ID_FILE")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "SMEMKIT_NCCL_ID_FILE must name the rendezvous file, on a filesystem every \
                     rank sees"
                        .into(),
                )
            })?;
        RankSpec::new(rank, world, id_file, env_usize("SMEMKIT_DEVICE")?).map(Some)
    }

    pub fn new(
        rank: usize,
        world: usize,
        id_file: PathBuf,
        device: Option<usize>,
    ) -> Result<RankSpec> {
        if world == 0 || rank >= world {
            return Err(Error::InvalidArgument(format!(
                "rank {rank} of a world of {world}: the rank must be below the world size"
            )));
        }
        Ok(RankSpec {
            rank,
            world,
            id_file,
            device,
        })
    }

    /// This rank's samples out of `n`.
    pub fn slice(&self, n: usize) -> Range<usize> {
        shards(n, self.world)[self.rank].clone()
    }

    /// NCCL ranks in all when every process drives `per_rank` GPUs (`--devices`): one
    /// communicator rank per GPU of every process.
    pub fn nccl_world(&self, per_rank: usize) -> usize {
        self.world * per_rank.max(1)
    }

    /// This process's NCCL ranks when every process drives `per_rank` GPUs: its GPU `i` is NCCL
    /// rank `rank * per_rank + i`, so the NCCL ranks follow the processes and, within one, the
    /// order of its `--devices`.
    pub fn nccl_ranks(&self, per_rank: usize) -> Range<usize> {
        let per_rank = per_rank.max(1);
        self.rank * per_rank..(self.rank + 1) * per_rank
    }

    /// This process's samples out of `n`, one slice per GPU (`per_rank` of them): the even split
    /// of `n` over every NCCL rank ([`shards`]), the slices of this process's NCCL ranks. They
    /// are contiguous, so each process reads one contiguous part of the input; with one GPU per
    /// rank this is [`RankSpec::slice`].
    pub fn slices(&self, n: usize, per_rank: usize) -> Vec<Range<usize>> {
        shards(n, self.nccl_world(per_rank))[self.nccl_ranks(per_rank)].to_vec()
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self
            .id_file
            .file_name()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        name.push(suffix);
        self.id_file.with_file_name(name)
    }

    fn marker(&self, rank: usize) -> PathBuf {
        self.sibling(&format!(".failed.{rank}"))
    }

    /// Leaves `<id file>.failed.<rank>` with `message` for the other ranks (best effort).
    pub fn mark_failed(&self, message: &str) {
        let _ = write_atomically(&self.marker(self.rank), message.as_bytes());
    }

    /// The first other rank's failure marker written since `since` (less a few seconds of clock
    /// skew between machines), as a message: older markers are an earlier run's.
    pub fn peer_failure(&self, since: std::time::SystemTime) -> Option<String> {
        let since = since - std::time::Duration::from_secs(5);
        (0..self.world).filter(|&r| r != self.rank).find_map(|r| {
            let path = self.marker(r);
            let fresh = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            fresh
                .then(|| std::fs::read_to_string(&path).ok())
                .flatten()
                .map(|m| format!("rank {r} failed: {}", m.trim()))
        })
    }

    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    /// Rank 0, before the rendezvous: removes the markers and id of an earlier run.
    fn clear_stale(&self) {
        for r in 0..self.world {
            let _ = std::fs::remove_file(self.marker(r));
        }
        let _ = std::fs::remove_file(&self.id_file);
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so that readers
/// see the whole file or none.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path
        .file_name()
        .map(|s| s.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
const ID_MAGIC: &[u8; 16] = b"smemkit-nccl-id1";

#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
/// The id file's bytes: magic, world size (u64 LE), the 128-byte NCCL unique id.
fn encode_id(world: usize, id: &[u8; 128]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + 8 + 128);
    v.extend_from_slice(ID_MAGIC);
    v.extend_from_slice(&(world as u64).to_le_bytes());
    v.extend_from_slice(id);
    v
}

#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
fn decode_id(bytes: &[u8], world: usize, path: &Path) -> Result<[u8; 128]> {
    let bad = |why: String| Error::MultiGpu(format!("the id file {}: {why}", path.display()));
    if bytes.len() != 16 + 8 + 128 || &bytes[..16] != ID_MAGIC {
        return Err(bad(
            "not an smemkit NCCL id (another program's file, or a different smemkit)".into(),
        ));
    }
    let w = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes")) as usize;
    if w != world {
        return Err(bad(format!(
            "rank 0 runs a world of {w} NCCL ranks, this rank expects {world} (SMEMKIT_WORLD_SIZE \
             times the GPUs of each rank: every rank must be given as many --devices)"
        )));
    }
    Ok(bytes[24..].try_into().expect("128 bytes"))
}

/// Histogram of this rank's slice of `samples` (the whole input, the same on every rank), summed
/// over every rank: all ranks return the whole histogram. With `devices` other than
/// [`DeviceSet::Default`] this process drives those GPUs (every rank as many), one NCCL rank each
/// ([`RankSpec::slices`]); otherwise one GPU (`SMEMKIT_DEVICE`, or the rank modulo the GPUs).
#[allow(clippy::too_many_arguments)]
pub fn histogram(
    spec: &RankSpec,
    devices: &DeviceSet,
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    choice: &StrategyChoice,
    opts: &StreamOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<CudaResult> {
    #[cfg(feature = "nccl")]
    {
        let r = run(
            spec, devices, samples, weights, binning, policy, choice, opts, progress,
        );
        if let Err(e) = &r {
            spec.mark_failed(&e.to_string());
        }
        r
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (
            spec, devices, samples, weights, binning, policy, choice, opts, progress,
        );
        Err(Error::MultiGpu(
            "several processes (SMEMKIT_RANK / SMEMKIT_WORLD_SIZE) need NCCL, and this smemkit \
             was built without it (rebuild with `--features nccl`)"
                .into(),
        ))
    }
}

/// A fingerprint of what every rank must agree on: the bins, the policy, the types.
pub fn fingerprint(
    binning: &Binning,
    policy: OutOfRange,
    samples: Samples<'_>,
    weighted: bool,
) -> u64 {
    use std::hash::{Hash, Hasher};
    // DefaultHasher::new() has fixed keys: the same binary hashes alike in every process.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match binning {
        Binning::Edges(e) => {
            e.len().hash(&mut h);
            e.iter().for_each(|x| x.to_bits().hash(&mut h));
        }
        other => format!("{other:?}").hash(&mut h),
    }
    format!(
        "{policy:?} {} {} {weighted}",
        samples.sample_type(),
        samples.len()
    )
    .hash(&mut h);
    h.finish()
}

#[cfg(feature = "nccl")]
#[allow(clippy::too_many_arguments)]
fn run(
    spec: &RankSpec,
    devices: &DeviceSet,
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    choice: &StrategyChoice,
    opts: &StreamOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<CudaResult> {
    use super::multi::MultiPrepared;
    use super::prepared::WeightKind;
    use crate::gpu::nccl::{self, Communicator, UniqueId};
    use std::time::{Duration, Instant};

    let timeout = nccl::timeout()?;
    let started = std::time::SystemTime::now();
    let (rank, world) = (spec.rank, spec.world);
    // Several GPUs per rank: resolved before the rendezvous, so that a missing GPU fails (and
    // marks this rank failed) before the others wait for it.
    let local: Option<Vec<usize>> = match devices {
        DeviceSet::Default => None,
        set => {
            if spec.device.is_some() {
                return Err(Error::InvalidArgument(
                    "SMEMKIT_DEVICE and --devices both name this rank's GPUs: give one".into(),
                ));
            }
            Some(set.resolve()?)
        }
    };
    let per_rank = local.as_ref().map_or(1, Vec::len);
    let nccl_world = spec.nccl_world(per_rank);
    let id = if rank == 0 {
        spec.clear_stale();
        let id = UniqueId::new()?;
        write_atomically(&spec.id_file, &encode_id(nccl_world, &id.0)).map_err(|e| {
            Error::MultiGpu(format!(
                "rank 0 could not write the id file {}: {e}",
                spec.id_file.display()
            ))
        })?;
        id
    } else {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(bytes) = std::fs::read(&spec.id_file) {
                break UniqueId(decode_id(&bytes, nccl_world, &spec.id_file)?);
            }
            if let Some(m) = spec.peer_failure(started) {
                return Err(Error::MultiGpu(m));
            }
            if Instant::now() >= deadline {
                return Err(Error::MultiGpu(format!(
                    "rank {rank}: no id file {} from rank 0 after {} s (SMEMKIT_NCCL_TIMEOUT); is \
                     rank 0 running, with the same SMEMKIT_NCCL_ID_FILE on a filesystem both see?",
                    spec.id_file.display(),
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let peers = spec.clone();
    let watch = move || peers.peer_failure(started);
    let (comms, ordinals) = match &local {
        None => {
            let device = match spec.device {
                Some(d) => d,
                None => rank % crate::gpu::device_count()?.max(1),
            };
            let gpu = crate::gpu::gpu_at(device)?;
            let comm = Communicator::init_rank(gpu, rank, world, &id, timeout, Some(&watch))?;
            (vec![comm], vec![device])
        }
        Some(list) => {
            let gpus = super::multi::open(list)?;
            let comms = Communicator::init_ranks(
                &gpus,
                spec.nccl_ranks(per_rank).start,
                nccl_world,
                &id,
                timeout,
                Some(&watch),
            )?;
            (comms, list.clone())
        }
    };
    if rank == 0 {
        // Every rank has joined, so every rank has read it.
        let _ = std::fs::remove_file(&spec.id_file);
    }
    let wkind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
    };
    let ranges = spec.slices(samples.len(), per_rank);
    let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
    let mut m = MultiPrepared::with_communicators(
        comms,
        samples.sample_type(),
        wkind,
        binning,
        policy,
        *choice,
        Some(&lens),
        Some(Box::new(watch)),
    )?;
    m.check_agreement(fingerprint(binning, policy, samples, weights.is_some()))?;
    // Test aid: a rank that pauses between the agreement and its histogram can be killed there,
    // in the middle of a run, by the killed-rank test (crates/smemkit-cli/tests/gpu_ranks.rs).
    if let Some(ms) = std::env::var("SMEMKIT_TEST_RANK_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let mut r = m.run_host(samples, weights, &ranges, opts, progress)?;
    let (first, last) = (
        ranges.first().map_or(0, |r| r.start),
        ranges.last().map_or(0, |r| r.end),
    );
    let gpus: Vec<String> = ordinals.iter().map(|d| d.to_string()).collect();
    r.detail = format!(
        "rank {rank} of {world} (GPU {}, samples {first}..{last}); {}",
        gpus.join(","),
        r.detail
    );
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_mismatches_are_named() {
        let id = [7u8; 128];
        let p = Path::new("/x/id");
        assert_eq!(decode_id(&encode_id(3, &id), 3, p).unwrap(), id);
        let e = decode_id(&encode_id(3, &id), 2, p).unwrap_err().to_string();
        assert!(e.contains("world of 3"), "{e}");
        assert!(decode_id(b"garbage", 2, p).is_err());
    }

    #[test]
    fn markers_and_slices() {
        let dir = std::env::temp_dir().join(format!("smemkit-ranks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = RankSpec::new(0, 3, dir.join("id"), None).unwrap();
        let b = RankSpec::new(2, 3, dir.join("id"), None).unwrap();
        let epoch = std::time::UNIX_EPOCH;
        assert_eq!(a.peer_failure(epoch), None);
        b.mark_failed("no GPU 2\n");
        assert_eq!(a.peer_failure(epoch).unwrap(), "rank 2 failed: no GPU 2");
        // A marker from before this run (by more than the skew allowance) is an earlier run's.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(a.peer_failure(later), None);
        assert_eq!(
            b.peer_failure(epoch),
            None,
            "a rank's own marker is not a peer's"
        );
        a.clear_stale();
        assert_eq!(a.peer_failure(epoch), None);
        assert_eq!((a.slice(10), b.slice(10)), (0..4, 7..10));
        assert!(RankSpec::new(3, 3, dir.join("id"), None).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn several_gpus_per_rank_number_and_slice() {
        let spec = |rank, world| RankSpec::new(rank, world, PathBuf::from("/x/id"), None).unwrap();
        // One GPU per rank: the old numbering and slices.
        for (rank, world) in [(0, 1), (0, 3), (2, 3)] {
            let s = spec(rank, world);
            assert_eq!(s.nccl_world(1), world);
            assert_eq!(s.nccl_ranks(1), rank..rank + 1);
            for n in [0, 1, 10, 1001] {
                assert_eq!(s.slices(n, 1), vec![s.slice(n)]);
            }
        }
        // 3 ranks x 2 GPUs: NCCL ranks 0..6, rank 1's GPUs are NCCL ranks 2 and 3.
        assert_eq!(spec(1, 3).nccl_world(2), 6);
        assert_eq!(spec(0, 3).nccl_ranks(2), 0..2);
        assert_eq!(spec(1, 3).nccl_ranks(2), 2..4);
        assert_eq!(spec(2, 3).nccl_ranks(2), 4..6);
        assert_eq!(spec(0, 3).slices(14, 2), vec![0..3, 3..6]);
        assert_eq!(spec(1, 3).slices(14, 2), vec![6..8, 8..10]);
        assert_eq!(spec(2, 3).slices(14, 2), vec![10..12, 12..14]);
        // Fewer samples than GPUs: some slices empty, still one per GPU.
        assert_eq!(spec(1, 2).slices(3, 2), vec![2..3, 3..3]);
        // Every split covers the input once, in order, each rank's part contiguous.
        for n in [0, 1, 7, 1000, 1 << 20] {
            for world in 1..5 {
                for per in 1..5 {
                    let all: Vec<Range<usize>> = (0..world)
                        .flat_map(|r| spec(r, world).slices(n, per))
                        .collect();
                    assert_eq!(all.len(), world * per);
                    assert_eq!(all, shards(n, world * per));
                    for r in 0..world {
                        let s = spec(r, world).slices(n, per);
                        assert!(s.windows(2).all(|w| w[0].end == w[1].start));
                    }
                }
            }
        }
        // The id file carries the NCCL world: a rank given another number of GPUs is refused.
        let e = decode_id(&encode_id(6, &[1; 128]), 3, Path::new("/x/id"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("world of 6") && e.contains("--devices"), "{e}");
    }
}
