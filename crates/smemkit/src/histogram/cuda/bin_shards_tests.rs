use super::*;
use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::cpu;
use crate::histogram::cuda::multi::shards;
use crate::histogram::Counts;

fn counts(c: &Counts) -> &[u64] {
    match c {
        Counts::Unweighted(v) => v,
        _ => panic!("unweighted"),
    }
}

const GIB: u64 = 1 << 30;

#[test]
fn owners_cover_every_bin_once() {
    for nbins in [1, 2, 7, 8, 9, 1000, 1 << 20] {
        for world in 1..10 {
            let s = BinShards::new(nbins, world).unwrap();
            let mut next = 0;
            for r in 0..world {
                let o = s.owned(r);
                assert_eq!(o.start, next.min(nbins), "{nbins} {world} {r}");
                assert!(o.len() <= s.slice);
                for b in o.clone() {
                    assert_eq!(s.owner(b), r);
                }
                next = o.end;
            }
            assert_eq!(next, nbins);
            assert!(s.slice * world >= nbins && (s.slice - 1) * world < nbins);
        }
    }
    // 9 bins over 4 ranks: slices of 3, the last rank owns none.
    let s = BinShards::new(9, 4).unwrap();
    assert_eq!(
        (0..4).map(|r| s.owned(r)).collect::<Vec<_>>(),
        vec![0..3, 3..6, 6..9, 9..9]
    );
    assert!(BinShards::new(0, 2).is_err() && BinShards::new(5, 0).is_err());
}

#[test]
fn the_plan_shards_when_counters_do_not_fit_or_when_asked() {
    let n30 = 1usize << 30;
    // 2^30 u64 counters (8 GiB) fit in 100 GiB: the all-reduce, unless asked.
    let p = plan(n30, 8, 8, 100 * GIB, ShardBins::Auto).unwrap();
    assert_eq!(p.reduction, Reduction::AllReduce);
    assert_eq!(p.passes().len(), 1);
    assert_eq!(p.result_bins(3), 0..n30);
    // Asked: one pass, one reduce-scatter, each GPU holding an eighth of the counters.
    let p = plan(n30, 8, 8, 100 * GIB, ShardBins::Always).unwrap();
    assert_eq!(p.reduction, Reduction::Sharded { owners_per_pass: 8 });
    assert_eq!(p.device_bytes, (n30 as u64 + 3) * 8);
    assert!(p.reason.contains("one reduce-scatter"), "{}", p.reason);
    assert_eq!(p.result_bins(3), 3 * (n30 / 8)..4 * (n30 / 8));
    // The 2^28-bin target of the issue on two GPUs: each holds half the counters.
    let p = plan(1 << 28, 2, 8, 100 * GIB, ShardBins::Always).unwrap();
    assert_eq!(p.result_bins(1), (1 << 27)..(1 << 28));
    // 2^33 counters (64 GiB) on GPUs with 20 GiB free: sharded in passes that fit.
    let n33 = 1usize << 33;
    let p = plan(n33, 8, 8, 20 * GIB, ShardBins::Auto).unwrap();
    let Reduction::Sharded { owners_per_pass } = p.reduction else {
        panic!("{p:?}")
    };
    // A slice is 8 GiB: a window of one owner plus its own slice is 16 GiB; two would be 24.
    assert_eq!(owners_per_pass, 1);
    assert_eq!(p.passes().len(), 8);
    assert!(p.device_bytes <= 20 * GIB);
    assert!(p.reason.contains("8 passes"), "{}", p.reason);
    // With 40 GiB: three owners per pass (32 GiB), three passes.
    let p = plan(n33, 8, 8, 40 * GIB, ShardBins::Auto).unwrap();
    assert_eq!(p.reduction, Reduction::Sharded { owners_per_pass: 3 });
    assert_eq!(
        p.passes()
            .iter()
            .map(|p| p.owners.clone())
            .collect::<Vec<_>>(),
        vec![0..3, 3..6, 6..8]
    );
    // Never, when they do not fit: the error says what would.
    let e = plan(n33, 8, 8, 40 * GIB, ShardBins::Never)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("64.00 GiB") && e.contains("--shard-bins auto"),
        "{e}"
    );
    // Too few ranks for any pass: how many would do.
    let e = plan(n33, 2, 8, 20 * GIB, ShardBins::Auto)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 7 ranks"), "{e}");
    // One rank: the all-reduce when it fits, unless asked to shard (the sharded path on one
    // GPU: one pass and a reduce-scatter over the one rank).
    let p = plan(1000, 1, 8, GIB, ShardBins::Auto).unwrap();
    assert_eq!(p.reduction, Reduction::AllReduce);
    let p = plan(1000, 1, 8, GIB, ShardBins::Always).unwrap();
    assert_eq!(p.reduction, Reduction::Sharded { owners_per_pass: 1 });
    assert_eq!(p.passes().len(), 1);
    assert!(p.reason.contains("one reduce-scatter"), "{}", p.reason);
}

#[test]
fn passes_tile_the_bins_in_the_padded_layout() {
    for nbins in [1, 5, 9, 64, 1001] {
        for world in 1..7 {
            for g in 1..=world {
                let shards = BinShards::new(nbins, world).unwrap();
                let p = ReductionPlan {
                    shards,
                    reduction: Reduction::Sharded { owners_per_pass: g },
                    device_bytes: 0,
                    reason: String::new(),
                };
                let passes = p.passes();
                assert_eq!(passes.len(), world.div_ceil(g));
                let mut next = (0, 0);
                for pass in &passes {
                    assert_eq!((pass.owners.start, pass.bins.start), next);
                    assert_eq!(pass.buffer, pass.owners.len() * shards.slice);
                    assert!(pass.bins.len() <= pass.buffer);
                    next = (pass.owners.end, pass.bins.end);
                }
                assert_eq!(next, (world, nbins));
            }
        }
    }
}

/// The whole sharded reduction simulated on the CPU: each rank's samples counted by the CPU
/// engine, each pass's window cut from them into the padded pass buffer, one "reduction" per
/// owner summing its segment over the ranks, the tallies summed once. The owners' slices put
/// together must be the CPU engine's histogram of all the samples.
#[test]
fn owned_slices_put_together_are_the_whole_histogram() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let samples: Vec<i32> = (0..20_011)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1100) as i32 - 50
        })
        .collect();
    for nbins in [1000, 999, 7] {
        let binning = Binning::Integer { nbins };
        let whole = cpu::histogram(&samples, None, &binning, OutOfRange::Ignore);
        for world in 1..6 {
            let per_rank: Vec<_> = shards(samples.len(), world)
                .into_iter()
                .map(|r| cpu::histogram(&samples[r], None, &binning, OutOfRange::Ignore))
                .collect();
            for g in 1..=world {
                let shards = BinShards::new(nbins, world).unwrap();
                let p = ReductionPlan {
                    shards,
                    reduction: Reduction::Sharded { owners_per_pass: g },
                    device_bytes: 0,
                    reason: String::new(),
                };
                let mut owned: Vec<Vec<u64>> = vec![Vec::new(); world];
                for pass in p.passes() {
                    // Every rank's window of this pass, in the padded layout.
                    let buffers: Vec<Vec<u64>> = per_rank
                        .iter()
                        .map(|h| {
                            let counts = counts(&h.counts);
                            let mut b = vec![0u64; pass.buffer];
                            for bin in pass.bins.clone() {
                                b[pass.buffer_index(bin)] = counts[bin];
                            }
                            b
                        })
                        .collect();
                    // The reductions: every segment summed over the ranks (its owner keeps it).
                    let sum: Vec<u64> = (0..pass.buffer)
                        .map(|j| buffers.iter().map(|b| b[j]).sum())
                        .collect();
                    for (i, owner) in pass.owners.clone().enumerate() {
                        let seg = pass.owned_segment(&shards, owner).unwrap();
                        assert_eq!(seg.start, i * shards.slice);
                        owned[owner] = sum[seg.clone()].to_vec();
                        // The padding past the owner's bins stays zero.
                        let pad = seg.end..(i + 1) * shards.slice;
                        assert!(sum[pad].iter().all(|&c| c == 0));
                    }
                    for rank in (0..world).filter(|r| !pass.owners.contains(r)) {
                        assert_eq!(pass.owned_segment(&shards, rank), None);
                    }
                }
                let joined: Vec<u64> = owned.concat();
                assert_eq!(
                    joined,
                    counts(&whole.counts),
                    "{nbins} bins, {world} ranks, {g} per pass"
                );
                let tallies = per_rank.iter().fold((0, 0, 0), |t, h| {
                    (
                        t.0 + h.tallies.below,
                        t.1 + h.tallies.above,
                        t.2 + h.tallies.nan,
                    )
                });
                assert_eq!(
                    tallies,
                    (whole.tallies.below, whole.tallies.above, whole.tallies.nan)
                );
                for (r, o) in owned.iter().enumerate() {
                    assert_eq!(o.len(), p.result_bins(r).len());
                }
            }
        }
    }
}

#[test]
fn parts_are_named_by_rank() {
    assert_eq!(
        part_path(Path::new("/o/counts.csv"), 3, 8),
        Path::new("/o/counts.part-0003-of-0008.csv")
    );
    assert_eq!(
        part_path(Path::new("h"), 12, 100000),
        Path::new("h.part-00012-of-100000")
    );
    assert_eq!("always".parse::<ShardBins>().unwrap(), ShardBins::Always);
    assert!("sometimes".parse::<ShardBins>().is_err());
}
