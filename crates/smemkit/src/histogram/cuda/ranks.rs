//! Several processes (one GPU each, or with `--devices` the same number of GPUs each, one NCCL rank
//! per GPU; on one machine or several), started by a launcher (torchrun, srun, mpirun: see
//! `crate::launch`) or by hand with `SMEMKIT_RANK` and `SMEMKIT_WORLD_SIZE`. Every process reads
//! the same input (a memory-mapped file costs nothing until touched), histograms its contiguous
//! slice of it on its GPU, and one NCCL all-reduce sums the counters of every rank; all ranks then
//! hold the whole histogram (the CLI writes it from rank 0). When the counters would not fit on a
//! GPU (or when asked), the bins are sharded over the ranks instead ([`super::bin_shards`],
//! counted by `super::sharded`): each rank ends with its slice of the bins (the CLI writes one
//! part file per rank), or with [`RankSpec::gather`] rank 0 gathers them over the TCP rendezvous
//! ([`crate::launch::gather`]) and ends with the whole.
//!
//! Rendezvous ([`crate::launch::Channel`]): rank 0 makes the NCCL unique id and hands it to the
//! others over TCP (`MASTER_ADDR:MASTER_PORT`, `SMEMKIT_RENDEZVOUS`, or what the launcher implies)
//! or through a file on a filesystem every rank sees (`SMEMKIT_NCCL_ID_FILE`).
//!
//! Failures never hang: every wait has a deadline (`SMEMKIT_NCCL_TIMEOUT`, seconds, default 120),
//! after which the communicator is aborted; a rank that fails with an error tells the others
//! through the rendezvous (its TCP connection, or a `<id file>.failed.<rank>` marker), and they
//! stop at once with its message. Over TCP a killed rank is noticed at once too (its connection
//! closes); with the file, its peers stop at the deadline (or when NCCL notices).

use std::ops::Range;
use std::path::PathBuf;

use super::bin_shards::ShardBins;
use super::multi::{shards, DeviceSet};
use super::prepared::EngineOutput;
use crate::error::{Error, Result};
use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::job::Job;
use crate::histogram::result::BinPart;
use crate::launch::gather::Gather;
use crate::launch::{Launcher, Placement, Rendezvous};
use crate::sample::Samples;
#[cfg(feature = "nccl")]
use crate::sample::Weights;

/// This process's place among the ranks, from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankSpec {
    /// This process's rank.
    pub rank: usize,
    /// How many ranks.
    pub world: usize,
    /// Where the ranks meet to share the NCCL unique id.
    pub rendezvous: Rendezvous,
    /// The GPU to use (`SMEMKIT_DEVICE`); by default the local rank (or the rank) modulo the
    /// GPUs this process sees.
    pub device: Option<usize>,
    /// Which launcher's variables gave the place, the local rank and the job's name.
    pub launcher: Launcher,
    /// The rank on this machine.
    pub local_rank: Option<usize>,
    /// The job's name, when the launcher gives one.
    pub job: Option<String>,
    /// The variables read, `NAME=value, ...`.
    pub source: String,
    /// Whether the bins are sharded over the ranks ([`super::bin_shards`]).
    pub shard_bins: ShardBins,
    /// Bins sharded over the ranks: every rank sends its part to rank 0 over the TCP rendezvous
    /// ([`crate::launch::gather`]), whose histogram is then the whole one (`part` `None`), as one
    /// process would have counted it; the other ranks keep their parts. Under
    /// [`Gather::UntilWritten`] they also wait, within the call, until rank 0's caller has
    /// written the whole and said so ([`crate::launch::gather::written`]). `Off`: each rank
    /// holds only its part. Needs the TCP rendezvous ([`RankSpec::check_gather`]).
    pub gather: Gather,
}

impl RankSpec {
    /// `None` when no launcher's variables (nor `SMEMKIT_RANK`/`SMEMKIT_WORLD_SIZE`) are set; an
    /// error when they are incomplete or inconsistent ([`crate::launch::detect`]).
    pub fn from_env() -> Result<Option<RankSpec>> {
        let Some(p) = crate::launch::detect(&crate::launch::env::process_env)? else {
            return Ok(None);
        };
        Ok(Some(RankSpec::from_placement(p, crate::config::device()?)))
    }

    /// The rank of a launcher's placement, on `device` when given.
    pub fn from_placement(p: Placement, device: Option<usize>) -> RankSpec {
        RankSpec {
            rank: p.rank,
            world: p.world,
            rendezvous: p.rendezvous,
            device,
            launcher: p.launcher,
            local_rank: p.local_rank,
            job: p.job,
            source: p.source,
            shard_bins: ShardBins::Auto,
            gather: Gather::Off,
        }
    }

    /// Rank `rank` of `world`, meeting through the file `id_file` (no launcher).
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
            rendezvous: Rendezvous::File(id_file),
            device,
            launcher: Launcher::Smemkit,
            local_rank: None,
            job: None,
            source: format!("SMEMKIT_RANK={rank}, SMEMKIT_WORLD_SIZE={world}"),
            shard_bins: ShardBins::Auto,
            gather: Gather::Off,
        })
    }

    /// The gather travels over the TCP rendezvous's connections to rank 0: with the file
    /// rendezvous (`SMEMKIT_NCCL_ID_FILE`) there are none, which is an error before anything is
    /// counted.
    pub fn check_gather(&self) -> Result<()> {
        match &self.rendezvous {
            Rendezvous::File(path) if self.gather != Gather::Off => {
                Err(Error::InvalidArgument(format!(
                "--gather sends every rank's part of the bins to rank 0 over the TCP rendezvous, \
                 and these ranks meet through the file {} (SMEMKIT_NCCL_ID_FILE): use the TCP \
                 rendezvous (MASTER_ADDR and MASTER_PORT, or SMEMKIT_RENDEZVOUS=host:port), or \
                 leave --gather off and each rank writes its part",
                path.display()
            )))
            }
            _ => Ok(()),
        }
    }

    /// One line for the summary: rank, launcher and the variables read, rendezvous.
    pub fn describe(&self) -> String {
        Placement {
            launcher: self.launcher,
            rank: self.rank,
            world: self.world,
            local_rank: self.local_rank,
            rendezvous: self.rendezvous.clone(),
            job: self.job.clone(),
            source: self.source.clone(),
        }
        .describe()
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
}

#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
const ID_MAGIC: &[u8; 16] = b"smemkit-nccl-id1";

#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
/// The rendezvous payload: magic, world size (u64 LE), the 128-byte NCCL unique id.
fn encode_id(world: usize, id: &[u8; 128]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + 8 + 128);
    v.extend_from_slice(ID_MAGIC);
    v.extend_from_slice(&(world as u64).to_le_bytes());
    v.extend_from_slice(id);
    v
}

#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
fn decode_id(bytes: &[u8], world: usize, from: &Rendezvous) -> Result<[u8; 128]> {
    let bad = |why: String| Error::MultiGpu(format!("the NCCL id from {from}: {why}"));
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
/// over every rank: all ranks return the whole histogram, or with bins sharded over the ranks
/// each its part of the bins (the [`BinPart`]). With `devices` other than
/// [`DeviceSet::Default`] this process drives those GPUs (every rank as many), one NCCL rank each
/// ([`RankSpec::slices`]); otherwise one GPU (`SMEMKIT_DEVICE`, or the rank modulo the GPUs).
pub fn histogram(
    spec: &RankSpec,
    devices: &DeviceSet,
    samples: Samples<'_>,
    job: &Job<'_>,
) -> Result<(EngineOutput, Option<BinPart>)> {
    spec.check_gather()?;
    #[cfg(feature = "nccl")]
    {
        let timeout = crate::gpu::nccl::timeout()?;
        let channel = crate::launch::Channel::open(
            &spec.rendezvous,
            spec.rank,
            spec.world,
            spec.job.as_deref(),
            timeout,
        )?;
        let r = run(spec, &channel, timeout, devices, samples, job);
        match &r {
            // Rank 0 gathered, and the others wait until its caller has written the whole.
            Ok((_, None, true)) if spec.gather == Gather::UntilWritten => {
                channel.park_until_written(timeout)
            }
            Ok(_) => channel.finish(),
            Err(e) => channel.fail(&e.to_string()),
        }
        r.map(|(out, part, _)| (out, part))
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (devices, samples, job);
        Err(Error::MultiGpu(format!(
            "several processes ({}) need NCCL, and this smemkit was built without it (rebuild \
             with `--features nccl`)",
            spec.describe()
        )))
    }
}

/// The bins' reduction: the all-reduce, or (when the counters would not fit, or when asked) bins
/// sharded over the ranks ([`super::bin_shards::plan`]). Each GPU may use three quarters of its
/// free memory for counters, the rest being the strategies' per-block counters and the input's
/// staging buffers.
#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
fn sharding(
    spec: &RankSpec,
    nbins: usize,
    nccl_world: usize,
    weighted: bool,
    free: u64,
) -> Result<super::bin_shards::ReductionPlan> {
    // Weighted: the f64 sums, and the u64 counts some strategies keep beside them.
    let counter_bytes = if weighted { 8 + 8 } else { 8 };
    super::bin_shards::plan(
        nbins,
        nccl_world,
        counter_bytes,
        free / 4 * 3,
        spec.shard_bins,
    )
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

/// The one way this process's NCCL ranks start, whichever rendezvous: rank 0 makes the NCCL
/// unique id and the channel hands it to the others ([`crate::launch::Channel::exchange`]), then
/// the ranks of `ordinals` (this process's GPUs, in NCCL rank order) start from it in one group,
/// against `timeout` and the channel's watchdog.
#[cfg(feature = "nccl")]
fn start_nccl(
    spec: &RankSpec,
    channel: &crate::launch::Channel,
    timeout: std::time::Duration,
    ordinals: &[usize],
) -> Result<Vec<crate::gpu::nccl::Communicator>> {
    use crate::gpu::nccl::{Communicator, UniqueId};
    let per_rank = ordinals.len();
    let nccl_world = spec.nccl_world(per_rank);
    let bytes = channel.exchange(timeout, || Ok(encode_id(nccl_world, &UniqueId::new()?.0)))?;
    let id = UniqueId(decode_id(&bytes, nccl_world, &spec.rendezvous)?);
    let gpus = super::multi::open(ordinals)?;
    let watch = channel.watchdog();
    Communicator::init_ranks(
        &gpus,
        spec.nccl_ranks(per_rank).start,
        nccl_world,
        &id,
        timeout,
        Some(&*watch),
    )
}

#[cfg(feature = "nccl")]
fn run(
    spec: &RankSpec,
    channel: &crate::launch::Channel,
    timeout: std::time::Duration,
    devices: &DeviceSet,
    samples: Samples<'_>,
    job: &Job<'_>,
) -> Result<(EngineOutput, Option<BinPart>, bool)> {
    let Job {
        weights,
        binning,
        policy,
        ..
    } = *job;
    let (choice, opts, progress) = (&job.strategy, &job.stream, job.progress);
    use super::multi::MultiPrepared;
    use super::prepared::WeightKind;

    let (rank, world) = (spec.rank, spec.world);
    // Several GPUs per rank: resolved before the NCCL id is shared, so that a missing GPU fails
    // (and tells the others) before they wait for it.
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
    let ordinals = match local {
        Some(list) => list,
        // The launcher's local rank picks among this machine's GPUs (or the one GPU a launcher
        // made visible to each process).
        None => vec![match spec.device {
            Some(d) => d,
            None => spec.local_rank.unwrap_or(rank) % crate::gpu::device_count()?.max(1),
        }],
    };
    let mut comms = start_nccl(spec, channel, timeout, &ordinals)?;
    let nccl_world = spec.nccl_world(per_rank);
    let watch = channel.watchdog();
    // Every rank has joined, so every rank has read the id.
    channel.joined();
    let free = comms
        .iter()
        .map(|c| c.gpu.memory().map(|(free, _)| free as u64))
        .collect::<Result<Vec<u64>>>()?
        .into_iter()
        .min()
        .unwrap_or(0);
    let reduction = sharding(spec, binning.nbins(), nccl_world, weights.is_some(), free)?;
    let wkind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
        Some(Weights::Int(_)) => {
            comms
                .iter_mut()
                .for_each(crate::gpu::nccl::Communicator::abort);
            return Err(crate::histogram::int_sums::unwidened());
        }
    };
    let ranges = spec.slices(samples.len(), per_rank);
    let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
    let what = super::prepared::Counting {
        sample_type: samples.sample_type(),
        weights: wkind,
        binning,
        policy,
    };
    let gpus: Vec<String> = ordinals.iter().map(|d| d.to_string()).collect();
    if let super::bin_shards::Reduction::Sharded { .. } = reduction.reduction {
        let [comm] = &mut comms[..] else {
            comms
                .iter_mut()
                .for_each(crate::gpu::nccl::Communicator::abort);
            return Err(Error::NotImplemented(format!(
                "bins sharded over the ranks with {per_rank} GPUs per rank (--devices): a \
                 sharded run drives one GPU per rank ({})",
                reduction.reason
            )));
        };
        let range = ranges[0].clone();
        let mine = (
            crate::sample::with_samples!(samples, s => Samples::from(&s[range.clone()])),
            weights.map(|w| match w {
                Weights::F32(v) => Weights::F32(&v[range.clone()]),
                Weights::F64(v) => Weights::F64(&v[range.clone()]),
                Weights::Int(v) => Weights::Int(v.slice(range.clone())),
            }),
        );
        let agree = fingerprint(binning, policy, samples, weights.is_some());
        let out = super::sharded::run(comm, &reduction, agree, mine, what, timeout, Some(&*watch))?;
        let (nccl_rank, nccl_world) = (comm.rank, comm.world);
        // A clean flush of the communicator (aborted if it cannot be done within a few seconds:
        // a peer is gone), as the all-reduce's path does when it drops its communicators.
        let limit = timeout.min(std::time::Duration::from_secs(10));
        let _ = crate::gpu::nccl::Communicator::finalize_all(&mut comms, limit);
        let detail = format!(
            "rank {rank} of {world} ({}; GPU {}, samples {}..{}); bins sharded: {}; this rank \
             holds bins {}..{}, counted in {} pass{}, by the window kernel",
            spec.launcher.name(),
            gpus.join(","),
            range.start,
            range.end,
            reduction.reason,
            out.bins.start,
            out.bins.end,
            out.passes,
            if out.passes == 1 { "" } else { "es" }
        );
        let part = BinPart {
            bins: out.bins.clone(),
            nbins: binning.nbins(),
            rank: nccl_rank,
            world: nccl_world,
        };
        let gathered = spec.gather != Gather::Off;
        let (counts, part, detail) = if gathered {
            use crate::launch::gather::Gathered;
            let shards = reduction.shards;
            let layout: Vec<Range<usize>> = (0..nccl_world).map(|r| shards.owned(r)).collect();
            let (bins, counts) = (out.bins, out.counts);
            match channel.gather(bins, counts, out.tallies, &layout, timeout, spec.gather)? {
                Gathered::Whole(c) => (
                    c,
                    None,
                    format!("{detail}; rank 0 gathered the {nccl_world} parts over TCP"),
                ),
                Gathered::Sent(c) => (
                    c,
                    Some(part),
                    format!("{detail}; sent to rank 0, which gathered the whole"),
                ),
            }
        } else {
            (out.counts, Some(part), detail)
        };
        let r = EngineOutput {
            counts,
            tallies: out.tallies,
            detail,
        };
        return Ok((r, part, gathered));
    }
    let mut m = MultiPrepared::with_communicators(comms, what, *choice, Some(&lens), Some(watch))?;
    m.check_agreement(fingerprint(binning, policy, samples, weights.is_some()))?;
    // Test aid: a rank that pauses between the agreement and its histogram can be killed there,
    // in the middle of a run, by the killed-rank test (crates/smemkit-cli/tests/gpu_ranks.rs).
    if let Some(pause) = crate::config::test_rank_pause() {
        std::thread::sleep(pause);
    }
    let mut r = m.run_host(samples, weights, &ranges, opts, progress)?;
    let (first, last) = (
        ranges.first().map_or(0, |r| r.start),
        ranges.last().map_or(0, |r| r.end),
    );
    r.detail = format!(
        "rank {rank} of {world} ({}; GPU {}, samples {first}..{last}); {}",
        spec.launcher.name(),
        gpus.join(","),
        r.detail
    );
    Ok((r, None, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_mismatches_are_named() {
        let id = [7u8; 128];
        let from = Rendezvous::Tcp {
            host: "h".into(),
            port: 5,
        };
        assert_eq!(decode_id(&encode_id(3, &id), 3, &from).unwrap(), id);
        let e = decode_id(&encode_id(3, &id), 2, &from)
            .unwrap_err()
            .to_string();
        assert!(e.contains("world of 3") && e.contains("TCP h:5"), "{e}");
        assert!(decode_id(b"garbage", 2, &from).is_err());
    }

    #[test]
    fn places_and_slices() {
        let a = RankSpec::new(0, 3, PathBuf::from("/x/id"), None).unwrap();
        let b = RankSpec::new(2, 3, PathBuf::from("/x/id"), None).unwrap();
        assert_eq!((a.slice(10), b.slice(10)), (0..4, 7..10));
        assert!(RankSpec::new(3, 3, PathBuf::from("/x/id"), None).is_err());
        assert_eq!(
            b.describe(),
            "rank 2 of 3, launched by smemkit (SMEMKIT_RANK=2, SMEMKIT_WORLD_SIZE=3); \
             rendezvous over the file /x/id"
        );
        // From a launcher's placement: its local rank and job are kept.
        let env = |k: &str| {
            [
                ("RANK", "1"),
                ("WORLD_SIZE", "2"),
                ("LOCAL_RANK", "1"),
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", "29999"),
                ("TORCHELASTIC_RUN_ID", "r"),
            ]
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
        };
        let p = crate::launch::detect(&env).unwrap().unwrap();
        let s = RankSpec::from_placement(p, Some(3));
        assert_eq!(
            (s.rank, s.world, s.local_rank, s.device, s.launcher),
            (1, 2, Some(1), Some(3), Launcher::Torchrun)
        );
        assert_eq!(s.job.as_deref(), Some("r"));
        assert!(
            s.describe().contains("launched by torchrun"),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn the_reduction_is_planned_from_the_free_memory_and_the_ask() {
        use crate::histogram::cuda::bin_shards::Reduction;
        const GIB: u64 = 1 << 30;
        let mut spec = RankSpec::new(0, 2, PathBuf::from("/x/id"), None).unwrap();
        // Counters that fit: the all-reduce, as before.
        let p = sharding(&spec, 1 << 20, 2, false, 80 * GIB).unwrap();
        assert_eq!(p.reduction, Reduction::AllReduce);
        // 2^33 counters (64 GiB) do not fit in three quarters of 80 GiB: sharded over four
        // GPUs, two owners a pass.
        let p = sharding(&spec, 1 << 33, 4, false, 80 * GIB).unwrap();
        assert_eq!(p.reduction, Reduction::Sharded { owners_per_pass: 2 });
        assert!(
            p.reason
                .contains("each of 4 ranks owns 2147483648 bins, counted in 2 passes"),
            "{}",
            p.reason
        );
        // Weighted sums count 16 bytes a bin: the same bins need more room.
        let p = sharding(&spec, 1 << 32, 4, true, 80 * GIB).unwrap();
        assert_eq!(p.reduction, Reduction::Sharded { owners_per_pass: 2 });
        // Over two they cannot be counted at all: how many GPUs would do.
        let e = sharding(&spec, 1 << 33, 2, false, 80 * GIB)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 3 ranks"), "{e}");
        // Asked for: the 2^28-bin target over two GPUs, one pass and a reduce-scatter.
        spec.shard_bins = ShardBins::Always;
        let p = sharding(&spec, 1 << 28, 2, false, 80 * GIB).unwrap();
        assert_eq!(p.reduction, Reduction::Sharded { owners_per_pass: 2 });
        assert!(
            p.reason.contains("--shard-bins always") && p.reason.contains("one reduce-scatter"),
            "{}",
            p.reason
        );
        // Refused sharding where the counters do not fit: named.
        spec.shard_bins = ShardBins::Never;
        let e = sharding(&spec, 1 << 33, 2, false, 80 * GIB)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--shard-bins auto"), "{e}");
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
        let e = decode_id(
            &encode_id(6, &[1; 128]),
            3,
            &Rendezvous::File("/x/id".into()),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("world of 6") && e.contains("--devices"), "{e}");
    }
}
