//! Histograms on the CPU. Each rayon worker counts a contiguous part of the input into private
//! counters; the parts are merged at the end. Small bin counts use several interleaved u32
//! sub-histograms, so that runs of equal samples (skewed data) do not serialise on one counter's
//! load-add-store chain. Bin counts too large for the cache go through a partition pass: bin indices
//! are first scattered into buckets that each cover a cache-sized range of bins, then each bucket is
//! counted while its range is hot.

use rayon::prelude::*;

use crate::bins::{locate_in_edges, Binning, OutOfRange, Slot};
use crate::histogram::{Counts, Tallies};
use crate::sample::{Sample, Weights};

/// Counts and tallies of one run of the CPU engine, before the policy is checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuResult {
    pub counts: Counts,
    pub tallies: Tallies,
}

/// Sub-histograms used for bin counts up to this many bins (4 x u32 x 16384 = 256 KiB, L2-sized).
const INTERLEAVED_MAX_BINS: usize = 1 << 14;
/// Above this many bins, the counters leave the cache and the partitioned path pays off.
const PARTITION_MIN_BINS: usize = 1 << 20;
/// Bins covered by one partition bucket (u32 counters: 1 MiB).
const BUCKET_BINS_LOG2: u32 = 18;
/// Smallest piece of input one worker takes.
const MIN_CHUNK: usize = 1 << 16;
/// Largest piece one worker counts in u32 counters before flushing them into u64.
const MAX_CHUNK: usize = 1 << 30;

/// Histogram of `samples` under `binning` with `policy` (the policy's `error` check is the caller's:
/// the tallies carry what it needs).
pub fn histogram<T: Sample>(
    samples: &[T],
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
) -> CpuResult {
    let clamp = policy == OutOfRange::Clamp;
    let nbins = binning.nbins();
    match binning {
        Binning::Integer { nbins } => {
            let n = *nbins as u64;
            run(
                samples,
                weights,
                nbins_usize(n),
                clamp,
                move |x: T| match x.to_bin_candidate() {
                    None => Slot::Below,
                    Some(v) if v >= n => Slot::Above,
                    Some(v) => Slot::Bin(v as usize),
                },
            )
        }
        Binning::UniformF32(u) => run(samples, weights, nbins, clamp, |x: T| u.locate(x.to_f32())),
        Binning::UniformF64(u) => run(samples, weights, nbins, clamp, |x: T| u.locate(x.to_f64())),
        Binning::Edges(e) => run(samples, weights, nbins, clamp, |x: T| {
            locate_in_edges(e, x.to_f64())
        }),
    }
}

fn nbins_usize(n: u64) -> usize {
    n as usize
}

/// Resolves a slot to a counter index under the policy, tallying what falls outside.
#[inline(always)]
fn resolve(slot: Slot, nbins: usize, clamp: bool, t: &mut Tallies) -> Option<usize> {
    match slot {
        Slot::Bin(i) => Some(i),
        Slot::Below => {
            t.below += 1;
            clamp.then_some(0)
        }
        Slot::Above => {
            t.above += 1;
            clamp.then_some(nbins - 1)
        }
        Slot::Nan => {
            t.nan += 1;
            None
        }
    }
}

fn chunk_len(len: usize) -> usize {
    let workers = rayon::current_num_threads().max(1);
    len.div_ceil(workers * 2).clamp(MIN_CHUNK, MAX_CHUNK)
}

fn run<T: Sample, L: Fn(T) -> Slot + Sync>(
    samples: &[T],
    weights: Option<Weights<'_>>,
    nbins: usize,
    clamp: bool,
    locate: L,
) -> CpuResult {
    match weights {
        Some(w) => run_weighted(samples, w, nbins, clamp, &locate),
        None if nbins >= PARTITION_MIN_BINS => run_partitioned(samples, nbins, clamp, &locate),
        None => run_counts(samples, nbins, clamp, &locate),
    }
}

/// Per-worker state for unweighted counting.
struct CountAcc {
    counts: Vec<u64>,
    scratch: Vec<u32>,
    tallies: Tallies,
}

impl CountAcc {
    fn merge(mut self, other: CountAcc) -> CountAcc {
        if self.counts.is_empty() {
            return other;
        }
        if !other.counts.is_empty() {
            add_into(&mut self.counts, &other.counts);
        }
        self.tallies.add(&other.tallies);
        self
    }
}

fn add_into(acc: &mut [u64], other: &[u64]) {
    acc.iter_mut().zip(other).for_each(|(a, b)| *a += b);
}

fn run_counts<T: Sample, L: Fn(T) -> Slot + Sync>(
    samples: &[T],
    nbins: usize,
    clamp: bool,
    locate: &L,
) -> CpuResult {
    let ways = if nbins <= INTERLEAVED_MAX_BINS { 4 } else { 1 };
    let acc = samples
        .par_chunks(chunk_len(samples.len()))
        .fold(
            || CountAcc {
                counts: Vec::new(),
                scratch: Vec::new(),
                tallies: Tallies::default(),
            },
            |mut acc, chunk| {
                if acc.counts.is_empty() {
                    acc.counts = vec![0; nbins];
                    acc.scratch = vec![0; nbins * ways];
                }
                count_chunk(
                    chunk,
                    nbins,
                    ways,
                    clamp,
                    locate,
                    &mut acc.scratch,
                    &mut acc.tallies,
                );
                // Flush the u32 counters into u64 (a chunk holds fewer than 2^32 samples).
                for (w, sub) in acc.scratch.chunks_mut(nbins).enumerate() {
                    let _ = w;
                    for (c, s) in acc.counts.iter_mut().zip(sub.iter_mut()) {
                        *c += *s as u64;
                        *s = 0;
                    }
                }
                acc
            },
        )
        .reduce(
            || CountAcc {
                counts: Vec::new(),
                scratch: Vec::new(),
                tallies: Tallies::default(),
            },
            CountAcc::merge,
        );
    let counts = if acc.counts.is_empty() {
        vec![0; nbins]
    } else {
        acc.counts
    };
    CpuResult {
        counts: Counts::Unweighted(counts),
        tallies: acc.tallies,
    }
}

/// Counts one chunk into `ways` interleaved sub-histograms laid out one after another.
#[inline(always)]
fn count_chunk<T: Sample, L: Fn(T) -> Slot>(
    chunk: &[T],
    nbins: usize,
    ways: usize,
    clamp: bool,
    locate: &L,
    scratch: &mut [u32],
    tallies: &mut Tallies,
) {
    if ways == 4 {
        let (s0, rest) = scratch.split_at_mut(nbins);
        let (s1, rest) = rest.split_at_mut(nbins);
        let (s2, s3) = rest.split_at_mut(nbins);
        let mut quads = chunk.chunks_exact(4);
        for q in &mut quads {
            if let Some(i) = resolve(locate(q[0]), nbins, clamp, tallies) {
                s0[i] += 1;
            }
            if let Some(i) = resolve(locate(q[1]), nbins, clamp, tallies) {
                s1[i] += 1;
            }
            if let Some(i) = resolve(locate(q[2]), nbins, clamp, tallies) {
                s2[i] += 1;
            }
            if let Some(i) = resolve(locate(q[3]), nbins, clamp, tallies) {
                s3[i] += 1;
            }
        }
        for &x in quads.remainder() {
            if let Some(i) = resolve(locate(x), nbins, clamp, tallies) {
                s0[i] += 1;
            }
        }
    } else {
        for &x in chunk {
            if let Some(i) = resolve(locate(x), nbins, clamp, tallies) {
                scratch[i] += 1;
            }
        }
    }
}

/// Large bin counts: bin indices are scattered into buckets of `2^BUCKET_BINS_LOG2` bins, then each
/// bucket is counted while its slice of the counters stays in cache.
fn run_partitioned<T: Sample, L: Fn(T) -> Slot + Sync>(
    samples: &[T],
    nbins: usize,
    clamp: bool,
    locate: &L,
) -> CpuResult {
    let nbuckets = nbins.div_ceil(1 << BUCKET_BINS_LOG2);
    let acc = samples
        .par_chunks(chunk_len(samples.len()))
        .fold(
            || CountAcc {
                counts: Vec::new(),
                scratch: Vec::new(),
                tallies: Tallies::default(),
            },
            |mut acc, chunk| {
                if acc.counts.is_empty() {
                    acc.counts = vec![0; nbins];
                }
                // Bounded staging: one block of the chunk at a time keeps the buckets cache-friendly.
                const BLOCK: usize = 1 << 20;
                let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); nbuckets];
                for block in chunk.chunks(BLOCK) {
                    for b in buckets.iter_mut() {
                        b.clear();
                    }
                    for &x in block {
                        if let Some(i) = resolve(locate(x), nbins, clamp, &mut acc.tallies) {
                            buckets[i >> BUCKET_BINS_LOG2].push(i as u32);
                        }
                    }
                    for b in &buckets {
                        for &i in b {
                            acc.counts[i as usize] += 1;
                        }
                    }
                }
                acc
            },
        )
        .reduce(
            || CountAcc {
                counts: Vec::new(),
                scratch: Vec::new(),
                tallies: Tallies::default(),
            },
            CountAcc::merge,
        );
    let counts = if acc.counts.is_empty() {
        vec![0; nbins]
    } else {
        acc.counts
    };
    CpuResult {
        counts: Counts::Unweighted(counts),
        tallies: acc.tallies,
    }
}

fn run_weighted<T: Sample, L: Fn(T) -> Slot + Sync>(
    samples: &[T],
    weights: Weights<'_>,
    nbins: usize,
    clamp: bool,
    locate: &L,
) -> CpuResult {
    let cs = chunk_len(samples.len());
    let (sums, tallies) = samples
        .par_chunks(cs)
        .enumerate()
        .fold(
            || (Vec::<f64>::new(), Tallies::default()),
            |(mut sums, mut t), (ci, chunk)| {
                if sums.is_empty() {
                    sums = vec![0.0; nbins];
                }
                let base = ci * cs;
                for (k, &x) in chunk.iter().enumerate() {
                    if let Some(i) = resolve(locate(x), nbins, clamp, &mut t) {
                        sums[i] += weights.get(base + k);
                    }
                }
                (sums, t)
            },
        )
        .reduce(
            || (Vec::new(), Tallies::default()),
            |(mut a, mut ta), (b, tb)| {
                if a.is_empty() {
                    return (b, {
                        let mut t = tb;
                        t.add(&ta);
                        t
                    });
                }
                if !b.is_empty() {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                }
                ta.add(&tb);
                (a, ta)
            },
        );
    let sums = if sums.is_empty() {
        vec![0.0; nbins]
    } else {
        sums
    };
    CpuResult {
        counts: Counts::Weighted(sums),
        tallies,
    }
}
