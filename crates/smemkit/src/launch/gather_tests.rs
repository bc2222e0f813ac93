//! The gather with ranks as threads of this process over 127.0.0.1, parts of known content. A
//! rank that "dies" drops its session without a word, which closes its sockets as a killed
//! process's are.

use std::net::TcpListener;
use std::thread::JoinHandle;

use super::super::tcp::Peer;
use super::*;
use crate::histogram::cuda::bin_shards::BinShards;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn join(rank: usize, world: usize, port: u16, timeout_s: f64) -> Session {
    Session::join(&Peer {
        rank,
        world,
        job: Some("gather".into()),
        host: "127.0.0.1".into(),
        port,
        timeout: Duration::from_secs_f64(timeout_s),
    })
    .unwrap()
}

fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    std::thread::spawn(f)
}

fn layout(nbins: usize, world: usize) -> Vec<Range<usize>> {
    let b = BinShards::new(nbins, world).unwrap();
    (0..world).map(|r| b.owned(r)).collect()
}

/// Bin `i`'s known content: counts, or sums with fractions, negative zero and huge values.
fn content(weighted: bool, bins: Range<usize>) -> Counts {
    if weighted {
        Counts::Weighted(
            bins.map(|i| match i % 5 {
                0 => -0.0,
                1 => 1e300,
                _ => i as f64 * 0.25 - 3.0,
            })
            .collect(),
        )
    } else {
        Counts::Unweighted(
            bins.map(|i| (i as u64).wrapping_mul(0x9E37_79B9) ^ 5)
                .collect(),
        )
    }
}

const TALLIES: Tallies = Tallies {
    below: 3,
    above: 1 << 40,
    nan: 7,
};

/// Every rank of `world` as a thread: the gather's result per rank (rank 0 first), each rank
/// telling the others its failure as the CLI does.
fn run_world(world: usize, nbins: usize, weighted: bool) -> Vec<Result<Gathered>> {
    let port = free_port();
    let lay = layout(nbins, world);
    let ranks: Vec<_> = (0..world)
        .map(|r| {
            let lay = lay.clone();
            spawn(move || {
                let s = join(r, world, port, 20.0);
                let bins = lay[r].clone();
                let got = gather(
                    &s,
                    bins.clone(),
                    content(weighted, bins),
                    TALLIES,
                    &lay,
                    Duration::from_secs(20),
                    Gather::Whole,
                );
                match &got {
                    Ok(_) => s.finish(),
                    Err(e) => s.fail(&e.to_string()),
                }
                got
            })
        })
        .collect();
    ranks.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn headers_round_trip_and_garbage_is_refused() {
    let h = PartHeader {
        weighted: true,
        bins: 5..9,
        nbins: 12,
        tallies: TALLIES,
    };
    assert_eq!(PartHeader::decode(&h.encode()), Some(h.clone()));
    assert_eq!(PartHeader::decode(&h.encode()[1..]), None);
    let mut bad = h.encode();
    bad[0] = 2;
    assert_eq!(PartHeader::decode(&bad), None);
}

#[test]
fn parts_of_two_to_four_ranks_make_the_whole() {
    // 300_001 bins: parts of several chunks each, cut mid-chunk; 5 bins over 4 ranks: the last
    // rank owns none (an empty part).
    for (nbins, weighted) in [(300_001, false), (300_001, true), (5, false), (1, true)] {
        for world in 2..=4 {
            let got = run_world(world, nbins, weighted);
            let lay = layout(nbins, world);
            for (r, g) in got.into_iter().enumerate() {
                let g = g.unwrap_or_else(|e| panic!("rank {r} of {world}, {nbins} bins: {e}"));
                let want = if r == 0 {
                    Gathered::Whole(content(weighted, 0..nbins))
                } else {
                    Gathered::Sent(content(weighted, lay[r].clone()))
                };
                // Bit for bit (sums compared by their bits: -0.0 stays -0.0).
                let bits = |g: &Gathered| {
                    let (Gathered::Whole(c) | Gathered::Sent(c)) = g;
                    (0..c.len())
                        .map(|i| c.get_f64(i).to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(std::mem::discriminant(&g), std::mem::discriminant(&want));
                assert_eq!(bits(&g), bits(&want), "rank {r} of {world}, {nbins} bins");
            }
        }
    }
}

/// Runs ranks 0 and 1 normally (gathering 1000 bins over `world`) and rank 2 as `two` does;
/// returns rank 0's and rank 1's errors and how long they took.
fn with_a_bad_rank_2(
    world: usize,
    timeout_s: f64,
    two: impl FnOnce(Session, Vec<Range<usize>>) + Send + 'static,
) -> (String, String, Duration) {
    let port = free_port();
    let lay = layout(1000, world);
    let start = Instant::now();
    let normal = |r: usize| {
        let lay = lay.clone();
        spawn(move || {
            let s = join(r, world, port, timeout_s);
            let got = gather(
                &s,
                lay[r].clone(),
                content(false, lay[r].clone()),
                TALLIES,
                &lay,
                Duration::from_secs_f64(timeout_s),
                Gather::Whole,
            );
            match &got {
                Ok(_) => s.finish(),
                Err(e) => s.fail(&e.to_string()),
            }
            got.map(|_| ()).unwrap_err().to_string()
        })
    };
    let zero = normal(0);
    let one = normal(1);
    let lay2 = lay.clone();
    let bad = spawn(move || two(join(2, world, port, timeout_s), lay2));
    let (e0, e1) = (zero.join().unwrap(), one.join().unwrap());
    let took = start.elapsed();
    bad.join().unwrap();
    (e0, e1, took)
}

#[test]
fn a_rank_that_dies_before_sending_ends_every_rank() {
    // Rank 2 is asked for its part (every rank has joined, and rank 0 is gathering), and dies.
    let (e0, e1, took) = with_a_bad_rank_2(3, 30.0, |s, _| {
        wait_for(&s, |g| g.pulled, Duration::from_secs(20), "no pull").unwrap();
        drop(s);
    });
    assert!(e0.contains("rank 2 stopped without a word"), "{e0}");
    assert!(e1.contains("rank 2 stopped without a word"), "{e1}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_rank_that_dies_mid_stream_ends_every_rank() {
    let (e0, e1, took) = with_a_bad_rank_2(3, 30.0, |s, lay| {
        let bins = lay[2].clone();
        let header = PartHeader {
            weighted: false,
            bins: bins.clone(),
            nbins: 1000,
            tallies: TALLIES,
        };
        let words: Vec<u64> = (bins.start as u64..bins.end as u64).collect();
        die_mid_stream(s, &header, &words[..words.len() / 2]);
    });
    assert!(e0.contains("rank 2 stopped without a word"), "{e0}");
    assert!(e1.contains("rank 2 stopped without a word"), "{e1}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_part_that_does_not_fit_is_refused_on_every_rank() {
    // Rank 2 counted other bins (its layout says 2000 bins): rank 0 names the mismatch.
    let (e0, e1, _) = with_a_bad_rank_2(3, 30.0, |s, _| {
        let lay = layout(2000, 3);
        let got = gather(
            &s,
            lay[2].clone(),
            content(false, lay[2].clone()),
            TALLIES,
            &lay,
            Duration::from_secs(30),
            Gather::Whole,
        );
        let e = got.unwrap_err().to_string();
        assert!(e.contains("2000") && e.contains("1000"), "{e}");
        s.fail(&e);
    });
    assert!(e0.contains("rank 2 holds a part of 2000 counts"), "{e0}");
    assert!(e1.contains("rank 2 holds a part of 2000 counts"), "{e1}");
}

#[test]
fn a_silent_rank_ends_the_gather_at_the_deadline() {
    // Rank 2 joins and stays, but never sends: rank 0 stops after the timeout without news.
    let (e0, e1, took) = with_a_bad_rank_2(3, 1.0, |s, _| {
        std::thread::sleep(Duration::from_secs(4));
        drop(s);
    });
    assert!(e0.contains("no word of the part of rank 2 for 1 s"), "{e0}");
    assert!(e1.contains("no word of the part of rank 2"), "{e1}");
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn rank_0_failing_or_dying_ends_every_rank() {
    for dies in [false, true] {
        let port = free_port();
        let world = 3;
        let lay = layout(10, world);
        let start = Instant::now();
        let others: Vec<_> = (1..world)
            .map(|r| {
                let lay = lay.clone();
                spawn(move || {
                    let s = join(r, world, port, 30.0);
                    let got = gather(
                        &s,
                        lay[r].clone(),
                        content(true, lay[r].clone()),
                        TALLIES,
                        &lay,
                        Duration::from_secs(30),
                        Gather::Whole,
                    );
                    got.map(|_| ()).unwrap_err().to_string()
                })
            })
            .collect();
        let root = join(0, world, port, 30.0);
        // Rank 0 cannot gather (here: its own part is not the layout's first).
        let e = gather(
            &root,
            0..3,
            content(true, 0..3),
            TALLIES,
            &lay,
            Duration::from_secs(30),
            Gather::Whole,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not tile"), "{e}");
        if dies {
            drop(root);
        } else {
            root.fail(&e);
        }
        for o in others {
            let m = o.join().unwrap();
            if dies {
                assert!(m.contains("rank 0 stopped without a word"), "{m}");
            } else {
                assert!(
                    m.contains("rank 0 failed") && m.contains("does not tile"),
                    "{m}"
                );
            }
        }
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn layouts_that_do_not_tile_the_bins_are_refused() {
    let s = join(0, 1, free_port(), 5.0);
    #[allow(clippy::reversed_empty_ranges, clippy::single_range_in_vec_init)]
    let cases = [
        (0..3, vec![0..3, 3..7]), // two parts for one rank
        (1..3, vec![1..3]),       // not from bin 0
        (0..3, vec![0..2]),       // not this rank's bins
        (0..9, vec![0..9]),       // the counters are not these bins' (7 of them)
        (3..0, vec![3..0]),       // reversed (and not from bin 0)
    ];
    for (bins, lay) in cases {
        let counts = content(false, 0..7);
        let e = gather(
            &s,
            bins,
            counts,
            TALLIES,
            &lay,
            Duration::from_secs(5),
            Gather::Whole,
        );
        assert!(e.unwrap_err().to_string().contains("does not tile"));
    }
    s.finish();
}

#[test]
fn a_world_of_one_gathers_its_own_part() {
    let s = join(0, 1, free_port(), 5.0);
    let got = gather(
        &s,
        0..7,
        content(false, 0..7),
        TALLIES,
        &layout(7, 1),
        Duration::from_secs(5),
        Gather::Whole,
    )
    .unwrap();
    assert_eq!(got, Gathered::Whole(content(false, 0..7)));
    s.finish();
}

/// Ranks 1 and 2 gather under [`Gather::UntilWritten`] (timeout `timeout_s`); rank 0 gathers,
/// holds its session and does `then` with it. The other ranks' results and when they ended.
fn until_written(
    timeout_s: f64,
    then: impl FnOnce(Held),
) -> Vec<(std::result::Result<Gathered, String>, Instant)> {
    let port = free_port();
    let world = 3;
    let lay = layout(1000, world);
    let others: Vec<_> = (1..world)
        .map(|r| {
            let lay = lay.clone();
            spawn(move || {
                let s = join(r, world, port, timeout_s);
                let got = gather(
                    &s,
                    lay[r].clone(),
                    content(true, lay[r].clone()),
                    TALLIES,
                    &lay,
                    Duration::from_secs_f64(timeout_s),
                    Gather::UntilWritten,
                );
                match &got {
                    Ok(_) => s.finish(),
                    Err(e) => s.fail(&e.to_string()),
                }
                (got.map_err(|e| e.to_string()), Instant::now())
            })
        })
        .collect();
    let root = join(0, world, port, timeout_s);
    let whole = gather(
        &root,
        lay[0].clone(),
        content(true, lay[0].clone()),
        TALLIES,
        &lay,
        Duration::from_secs_f64(timeout_s),
        Gather::UntilWritten,
    )
    .unwrap();
    assert_eq!(whole, Gathered::Whole(content(true, 0..1000)));
    then(hold(root, Duration::from_secs_f64(timeout_s)));
    others.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn until_written_the_others_wait_past_the_timeout_and_hear_rank_0s_write_fail() {
    // Rank 0 writes for 2.5 timeouts: its keep-alive holds the others, then its failure ends them.
    let mut told = None;
    let got = until_written(1.0, |held| {
        std::thread::sleep(Duration::from_millis(2500));
        told = Some(Instant::now());
        held.written(Err("--out /full/counts.npy: no space left on device".into()));
    });
    for (r, at) in got {
        let e = r.unwrap_err();
        assert!(
            e.contains("rank 0 failed: after gathering the histogram: --out /full/counts.npy"),
            "{e}"
        );
        assert!(at >= told.unwrap(), "ended before rank 0's word");
    }
}

#[test]
fn until_written_the_others_finish_once_rank_0_has_written() {
    let got = until_written(5.0, |held| {
        std::thread::sleep(Duration::from_millis(200));
        park(held);
        written(Ok(()));
    });
    for (r, _) in got {
        assert!(matches!(r, Ok(Gathered::Sent(_))), "{r:?}");
    }
}

#[test]
fn until_written_rank_0_never_telling_ends_the_others() {
    // Rank 0 drops its held session (it stopped, or its caller forgot): the others hear it.
    let got = until_written(5.0, drop);
    for (r, _) in got {
        let e = r.unwrap_err();
        assert!(e.contains("rank 0 stopped without a word"), "{e}");
    }
}
