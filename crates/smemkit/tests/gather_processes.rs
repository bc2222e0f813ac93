//! The gather of bins sharded over ranks (`--gather`, `launch::gather`) between real processes on
//! 127.0.0.1: parts of known content gathered whole, a rank killed (SIGKILL, so nothing of its
//! runs) in the middle of sending its part, and rank 0 killed while another rank is mid-stream.
//! Each other rank is this test executable started again, running [`child`] with its part in
//! `SMEMKIT_GATHER_CHILD`; a rank to be killed mid-stream pauses after its first chunk
//! (`SMEMKIT_TEST_GATHER_PAUSE_MS`).

use std::ops::Range;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use smemkit::histogram::{Counts, Tallies};
use smemkit::internals::histogram::cuda::bin_shards::BinShards;
use smemkit::internals::launch::gather::{gather, Gather, Gathered};
use smemkit::internals::launch::tcp::{Peer, Session};

const CHILD: &str = "SMEMKIT_GATHER_CHILD";
/// Over 3 ranks: parts of 333,334 bins, three chunks each.
const NBINS: usize = 1_000_000;
const WORLD: usize = 3;
const TALLIES: Tallies = Tallies {
    below: 1,
    above: 2,
    nan: 3,
};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn join(rank: usize, port: u16) -> Session {
    Session::join(&Peer {
        rank,
        world: WORLD,
        job: Some("gather-processes".into()),
        host: "127.0.0.1".into(),
        port,
        timeout: Duration::from_secs(30),
    })
    .unwrap()
}

fn layout() -> Vec<Range<usize>> {
    let b = BinShards::new(NBINS, WORLD).unwrap();
    (0..WORLD).map(|r| b.owned(r)).collect()
}

fn content(bins: Range<usize>) -> Vec<u64> {
    bins.map(|i| (i as u64) * 3 + 1).collect()
}

/// This rank's gather; rank 0's whole is checked bin for bin. Tells the others a failure.
fn run_rank(rank: usize, port: u16) -> Result<String, String> {
    run_rank_as(rank, port, Gather::Whole)
}

fn run_rank_as(rank: usize, port: u16, mode: Gather) -> Result<String, String> {
    let s = join(rank, port);
    let lay = layout();
    let got = gather(
        &s,
        lay[rank].clone(),
        Counts::Unweighted(content(lay[rank].clone())),
        TALLIES,
        &lay,
        Duration::from_secs(30),
        mode,
    );
    match got {
        Ok(g) => {
            s.finish();
            Ok(match g {
                Gathered::Whole(c) => {
                    assert_eq!(c, Counts::Unweighted(content(0..NBINS)));
                    "whole".to_string()
                }
                Gathered::Sent(c) => {
                    assert_eq!(c, Counts::Unweighted(content(lay[rank].clone())));
                    "sent".to_string()
                }
            })
        }
        Err(e) => {
            s.fail(&e.to_string());
            Err(e.to_string())
        }
    }
}

fn spawn_rank(rank: usize, port: u16, pause_ms: Option<u64>) -> Child {
    spawn_rank_as(rank, port, pause_ms, "whole")
}

fn spawn_rank_as(rank: usize, port: u16, pause_ms: Option<u64>, mode: &str) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{rank},{port},{mode}"))
        .env_remove("SMEMKIT_TEST_GATHER_PAUSE_MS")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(ms) = pause_ms {
        c.env("SMEMKIT_TEST_GATHER_PAUSE_MS", ms.to_string());
    }
    c.spawn().unwrap()
}

fn result(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.split_once("RESULT: ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no result in {text:?}"))
        .to_string()
}

/// Not a test of its own: the body of the ranks [`spawn_rank`] starts.
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let v: Vec<&str> = spec.split(',').collect();
    let mode = match v[2] {
        "until-written" => Gather::UntilWritten,
        _ => Gather::Whole,
    };
    match run_rank_as(v[0].parse().unwrap(), v[1].parse().unwrap(), mode) {
        Ok(m) => println!("RESULT: {m}"),
        Err(e) => println!("RESULT: error: {e}"),
    }
}

#[test]
fn three_processes_gather_the_whole() {
    let port = free_port();
    let others = [spawn_rank(1, port, None), spawn_rank(2, port, None)];
    assert_eq!(run_rank(0, port).unwrap(), "whole");
    for o in others {
        assert_eq!(result(o), "sent");
    }
}

/// Kills `victim` after `after`, from another thread.
fn kill_later(mut victim: Child, after: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        victim.kill().unwrap();
        let _ = victim.wait();
    })
}

#[test]
fn a_rank_killed_mid_stream_ends_every_rank() {
    let port = free_port();
    let one = spawn_rank(1, port, None);
    // Rank 2 sends its header and first chunk, then waits a minute: it is killed there.
    let killer = kill_later(spawn_rank(2, port, Some(60_000)), Duration::from_secs(3));
    let start = Instant::now();
    let e = run_rank(0, port).unwrap_err();
    assert!(e.contains("rank 2 stopped without a word"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    let r1 = result(one);
    assert!(
        r1.starts_with("error:") && r1.contains("rank 2 stopped without a word"),
        "{r1}"
    );
    killer.join().unwrap();
}

#[test]
fn rank_0_killed_while_a_rank_is_mid_stream_ends_every_rank() {
    let port = free_port();
    let root = spawn_rank(0, port, None);
    // Rank 1 pauses mid-stream for 4 s; rank 0 is killed in that pause.
    let one = spawn_rank(1, port, Some(4_000));
    let killer = kill_later(root, Duration::from_secs(2));
    let start = Instant::now();
    let e = run_rank(2, port).unwrap_err();
    assert!(e.contains("rank 0 stopped without a word"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    let r1 = result(one);
    assert!(r1.starts_with("error:") && r1.contains("rank 0"), "{r1}");
    killer.join().unwrap();
}

#[test]
fn rank_0_failing_to_write_ends_the_ranks_that_wait_for_it() {
    let port = free_port();
    let others = [
        spawn_rank_as(1, port, None, "until-written"),
        spawn_rank_as(2, port, None, "until-written"),
    ];
    let s = join(0, port);
    let lay = layout();
    let whole = gather(
        &s,
        lay[0].clone(),
        Counts::Unweighted(content(lay[0].clone())),
        TALLIES,
        &lay,
        Duration::from_secs(30),
        Gather::UntilWritten,
    )
    .unwrap();
    assert_eq!(
        whole,
        Gathered::Whole(Counts::Unweighted(content(0..NBINS)))
    );
    let held = smemkit::internals::launch::gather::hold(s, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    held.written(Err("writing counts.npy: no space left on device".into()));
    for o in others {
        let r = result(o);
        assert!(
            r.starts_with("error:")
                && r.contains("rank 0 failed: after gathering the histogram: writing counts.npy"),
            "{r}"
        );
    }
}
