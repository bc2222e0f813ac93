//! The TCP rendezvous between real processes on 127.0.0.1: ranks that are killed (SIGKILL, so
//! nothing of theirs runs) before joining, after joining, and rank 0 itself. Each other rank is
//! this test executable started again, running [`child`] with its part in `SMEMKIT_RDV_CHILD`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use smemkit::internals::launch::tcp::{Peer, Session};

const CHILD: &str = "SMEMKIT_RDV_CHILD";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn peer(rank: usize, world: usize, port: u16, timeout_s: u64) -> Peer {
    Peer {
        rank,
        world,
        job: Some("processes".into()),
        host: "127.0.0.1".into(),
        port,
        timeout: Duration::from_secs(timeout_s),
    }
}

/// Rank `rank` in a process of its own: joins, receives (or, as rank 0, shares `id`), then either
/// works for a minute (to be killed) or watches for a peer's failure for 20 s; prints
/// `RESULT: <what happened>`.
fn spawn_rank(rank: usize, world: usize, port: u16, then: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{rank},{world},{port},{then}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
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
    let parts: Vec<&str> = spec.split(',').collect();
    let n = |i: usize| parts[i].parse::<usize>().unwrap();
    let (rank, world, port, then) = (n(0), n(1), n(2) as u16, parts[3]);
    let outcome = (|| -> Result<String, String> {
        let s = Session::join(&peer(rank, world, port, 20)).map_err(|e| e.to_string())?;
        if rank == 0 {
            s.share(b"the id").map_err(|e| e.to_string())?;
        } else {
            let got = s
                .receive(Duration::from_secs(20))
                .map_err(|e| e.to_string())?;
            assert_eq!(got, b"the id");
        }
        println!("JOINED");
        if then == "work" {
            std::thread::sleep(Duration::from_secs(60));
            return Ok("worked".to_string());
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Some(m) = s.failure() {
                return Ok(format!("heard: {m}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok("heard nothing".to_string())
    })();
    match outcome {
        Ok(m) => println!("RESULT: {m}"),
        Err(e) => println!("RESULT: error: {e}"),
    }
}

#[test]
fn a_rank_killed_after_joining_is_reported_to_every_rank() {
    let port = free_port();
    let one = spawn_rank(1, 3, port, "watch");
    let mut two = spawn_rank(2, 3, port, "work");
    let root = Session::join(&peer(0, 3, port, 30)).unwrap();
    root.share(b"the id").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    two.kill().unwrap();
    let _ = two.wait();
    let killed = Instant::now();
    let mut heard = None;
    while killed.elapsed() < Duration::from_secs(10) && heard.is_none() {
        heard = root.failure();
        std::thread::sleep(Duration::from_millis(10));
    }
    let heard = heard.expect("rank 0 heard within 10 s");
    assert!(heard.contains("rank 2 stopped without a word"), "{heard}");
    assert_eq!(result(one), format!("heard: {heard}"));
    root.fail("stopping");
}

#[test]
fn a_rank_killed_before_joining_ends_every_rank_at_the_deadline() {
    let port = free_port();
    // Rank 2 is killed while it waits for rank 0 to listen.
    let mut two = spawn_rank(2, 3, port, "watch");
    std::thread::sleep(Duration::from_millis(300));
    two.kill().unwrap();
    let _ = two.wait();
    let one = spawn_rank(1, 3, port, "watch");
    let start = Instant::now();
    let e = Session::join(&peer(0, 3, port, 3))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rank 2 did not join"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
    let r1 = result(one);
    assert!(
        r1.starts_with("error:") && r1.contains("rank 2 did not join"),
        "{r1}"
    );
}

#[test]
fn rank_0_killed_is_reported_to_every_rank() {
    let port = free_port();
    let mut root = spawn_rank(0, 3, port, "work");
    let two = spawn_rank(2, 3, port, "watch");
    let s = Session::join(&peer(1, 3, port, 30)).unwrap();
    assert_eq!(s.receive(Duration::from_secs(30)).unwrap(), b"the id");
    root.kill().unwrap();
    let _ = root.wait();
    let start = Instant::now();
    let mut heard = None;
    while start.elapsed() < Duration::from_secs(10) && heard.is_none() {
        heard = s.failure();
        std::thread::sleep(Duration::from_millis(10));
    }
    let heard = heard.expect("rank 1 heard within 10 s");
    assert!(heard.contains("rank 0 stopped without a word"), "{heard}");
    // Rank 2 heard it while watching, or while still waiting for the id.
    let r2 = result(two);
    assert!(r2.ends_with(&heard), "{r2}");
}
