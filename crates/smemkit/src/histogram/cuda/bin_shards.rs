//! Bins sharded over ranks, for bin counts whose counters do not fit on one GPU (2^30 u64
//! counters are 8 GiB, on every GPU, under the all-reduce): rank `k` owns one contiguous slice of
//! the bins, and only the owner ever holds a slice's sums. The counters are counted in passes:
//! in each pass every rank counts its samples into the bins of a group of owners' slices (a
//! window of the bins; samples whose bin lies outside it are skipped, not tallied), then one NCCL
//! reduction per owner (a reduce-scatter when one pass covers every owner) leaves each owner its
//! slice summed over the ranks. A GPU then holds the pass's window and its own slice, never every
//! counter. The tallies (below, above, NaN) are counted once, in the first pass, and all-reduced.
//!
//! This module is the bookkeeping, which needs no GPU: who owns which bins, how many owners a
//! pass can cover in a GPU's memory, which bins each pass counts, what each rank writes. The
//! NCCL reductions are `crate::gpu::nccl::reduce_to_owners`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{Error, Result};

/// Whether the bins are sharded over the ranks (`--shard-bins`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShardBins {
    /// When every rank's full counters would not fit on its GPU.
    #[default]
    Auto,
    Always,
    Never,
}

impl FromStr for ShardBins {
    type Err = Error;
    fn from_str(s: &str) -> Result<ShardBins> {
        match s {
            "auto" => Ok(ShardBins::Auto),
            "always" => Ok(ShardBins::Always),
            "never" => Ok(ShardBins::Never),
            _ => Err(Error::InvalidArgument(format!(
                "--shard-bins {s}: expected auto, always or never"
            ))),
        }
    }
}

/// Who owns which bins: rank `k` owns `k * slice .. (k + 1) * slice` (cut at `nbins`; the last
/// ranks may own fewer, or none). NCCL's reduce-scatter hands every rank the same count, so the
/// reduction buffers hold `slice` counters per owner, the bins past `nbins` zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinShards {
    pub nbins: usize,
    pub world: usize,
    pub slice: usize,
}

impl BinShards {
    pub fn new(nbins: usize, world: usize) -> Result<BinShards> {
        if world == 0 || nbins == 0 {
            return Err(Error::InvalidArgument(format!(
                "{nbins} bins over {world} ranks: both must be positive"
            )));
        }
        Ok(BinShards {
            nbins,
            world,
            slice: nbins.div_ceil(world),
        })
    }

    /// The bins rank `rank` owns (empty for a rank past the last bin).
    pub fn owned(&self, rank: usize) -> Range<usize> {
        let start = (rank * self.slice).min(self.nbins);
        start..((rank + 1) * self.slice).min(self.nbins)
    }

    /// The rank that owns `bin`.
    pub fn owner(&self, bin: usize) -> usize {
        bin / self.slice
    }
}

/// How the ranks' counters are summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// Every rank counts every bin; one all-reduce; every rank holds the whole histogram.
    AllReduce,
    /// Each pass counts the slices of `owners_per_pass` owners; each rank ends with its slice.
    Sharded { owners_per_pass: usize },
}

/// One counting pass of a sharded reduction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    /// The owners whose slices this pass counts.
    pub owners: Range<usize>,
    /// Those owners' bins (the window every rank counts into).
    pub bins: Range<usize>,
    /// The pass buffer's length: `slice` counters per owner (the reduction's padded layout).
    pub buffer: usize,
}

impl Pass {
    /// Where the window's bin `bin` is counted in the pass buffer: the window starts the buffer,
    /// owner by owner (each owner's slice starts `slice` counters after the previous one's, as
    /// its bins do), the padding past `nbins` at its end.
    pub fn buffer_index(&self, bin: usize) -> usize {
        bin - self.bins.start
    }

    /// The counters of the pass buffer that rank `rank` holds summed over every rank after the
    /// pass's reduction, when it is one of the pass's owners: its segment's first `owned(rank)`
    /// counters (empty for an owner past the last bin).
    pub fn owned_segment(&self, shards: &BinShards, rank: usize) -> Option<Range<usize>> {
        if !self.owners.contains(&rank) {
            return None;
        }
        let start = (rank - self.owners.start) * shards.slice;
        Some(start..start + shards.owned(rank).len())
    }
}

/// The reduction chosen for `nbins` bins over `world` ranks, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReductionPlan {
    pub shards: BinShards,
    pub reduction: Reduction,
    /// The counters each GPU holds at once, in bytes.
    pub device_bytes: u64,
    pub reason: String,
}

/// The tallies (below, above, NaN) that travel with the counters.
const TALLIES: u64 = 3;

/// Chooses the reduction: the all-reduce while every rank's full counters (`counter_bytes` each)
/// fit in the `free` bytes of its GPU that counters may use (unless `ask` is `Always`), else as few passes as fit. An
/// error when even one owner's slice per pass does not fit, naming how many ranks would.
pub fn plan(
    nbins: usize,
    world: usize,
    counter_bytes: u64,
    free: u64,
    ask: ShardBins,
) -> Result<ReductionPlan> {
    let shards = BinShards::new(nbins, world)?;
    let full = (nbins as u64 + TALLIES) * counter_bytes;
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    let all_reduce = |reason: String| ReductionPlan {
        shards,
        reduction: Reduction::AllReduce,
        device_bytes: full,
        reason,
    };
    let fits = full <= free;
    match ask {
        ShardBins::Never if fits => return Ok(all_reduce("--shard-bins never".into())),
        ShardBins::Never => {
            return Err(Error::InvalidArgument(format!(
                "{nbins} counters need {} on every GPU and {} is available for them: \
                 --shard-bins auto (or always) shards them over the {world} ranks",
                gib(full),
                gib(free)
            )))
        }
        ShardBins::Auto if fits => {
            return Ok(all_reduce(format!(
                "every rank's counters ({}) fit on its GPU",
                gib(full)
            )))
        }
        // `always` with one rank still shards (one pass, a reduce-scatter over one rank): the
        // sharded path, checked on one GPU.
        _ => {}
    }
    let slice = shards.slice as u64;
    // One pass over every owner reduce-scatters in place: the window is the owned slice too.
    let bytes = |g: u64| {
        let window = g * slice + if g == world as u64 { 0 } else { slice };
        (window + TALLIES) * counter_bytes
    };
    let Some(g) = (1..=world as u64).rev().find(|&g| bytes(g) <= free) else {
        // The smallest world whose two slices fit: 2 * nbins / w counters <= free.
        let per_bin = counter_bytes.max(1);
        let room = (free / per_bin).saturating_sub(TALLIES).max(1);
        let need = (2 * nbins as u64).div_ceil(room);
        return Err(Error::InvalidArgument(format!(
            "{nbins} bins over {world} ranks: one rank's slice and a pass's window need {} on \
             its GPU and {} is available for counters; at least {need} ranks would fit",
            gib(bytes(1)),
            gib(free)
        )));
    };
    let passes = (world as u64).div_ceil(g);
    Ok(ReductionPlan {
        shards,
        reduction: Reduction::Sharded {
            owners_per_pass: g as usize,
        },
        device_bytes: bytes(g),
        reason: format!(
            "{} ({} counters on every GPU{}): each of {world} ranks owns {} bins, counted in {} \
             pass{}",
            match ask {
                ShardBins::Always => "--shard-bins always".to_string(),
                _ => format!("every rank's counters would need {}", gib(full)),
            },
            gib(bytes(g)),
            if fits { "" } else { " at most" },
            shards.slice,
            passes,
            if passes == 1 {
                " and one reduce-scatter"
            } else {
                "es, one reduction per owner"
            }
        ),
    })
}

impl ReductionPlan {
    /// The counting passes, in order (one pass of every bin for the all-reduce).
    pub fn passes(&self) -> Vec<Pass> {
        let s = self.shards;
        let g = match self.reduction {
            Reduction::AllReduce => {
                return vec![Pass {
                    owners: 0..s.world,
                    bins: 0..s.nbins,
                    buffer: s.nbins,
                }]
            }
            Reduction::Sharded { owners_per_pass } => owners_per_pass,
        };
        (0..s.world)
            .step_by(g)
            .map(|first| {
                let owners = first..(first + g).min(s.world);
                let bins = s.owned(owners.start).start..s.owned(owners.end - 1).end;
                Pass {
                    buffer: owners.len() * s.slice,
                    owners,
                    bins,
                }
            })
            .collect()
    }

    /// The bins rank `rank` returns: all of them, or its slice.
    pub fn result_bins(&self, rank: usize) -> Range<usize> {
        match self.reduction {
            Reduction::AllReduce => 0..self.shards.nbins,
            Reduction::Sharded { .. } => self.shards.owned(rank),
        }
    }
}

/// The file rank `rank` of `world` writes its slice to when the bins are sharded and not
/// gathered: `counts.csv` becomes `counts.part-0003-of-0008.csv` (each part holds its bins'
/// edges and counts, so the parts concatenate to the whole).
pub fn part_path(out: &Path, rank: usize, world: usize) -> PathBuf {
    let width = world.saturating_sub(1).to_string().len().max(4);
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!(
            "{stem}.part-{rank:0width$}-of-{world:0width$}.{}",
            ext.to_string_lossy()
        ),
        None => format!("{stem}.part-{rank:0width$}-of-{world:0width$}"),
    };
    out.with_file_name(name)
}

#[cfg(test)]
#[path = "bin_shards_tests.rs"]
mod tests;
