//! The exchange through either kind of rendezvous, as threads of this process: every rank gets
//! rank 0's payload, rank 0 makes it once, and a rank 0 that cannot make it ends the others'
//! waits with its message rather than at their deadline.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::*;

const WORLD: usize = 3;

fn rendezvous_kinds(tag: &str) -> Vec<(Rendezvous, PathBuf)> {
    let dir = std::env::temp_dir().join(format!("smemkit-channel-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    vec![
        (Rendezvous::File(dir.join("id")), dir.clone()),
        (
            Rendezvous::Tcp {
                host: "127.0.0.1".into(),
                port,
            },
            dir,
        ),
    ]
}

/// Every rank of `rendezvous` opens its channel and exchanges; rank 0 makes the payload with
/// `make`. Each rank's result, by rank.
fn exchange_all(
    rendezvous: &Rendezvous,
    make: impl Fn() -> Result<Vec<u8>> + Send + Sync + 'static,
) -> Vec<Result<Vec<u8>>> {
    let make = Arc::new(make);
    let handles: Vec<_> = (0..WORLD)
        .map(|rank| {
            let (rendezvous, make) = (rendezvous.clone(), make.clone());
            std::thread::spawn(move || {
                let timeout = Duration::from_secs(20);
                let channel = Channel::open(&rendezvous, rank, WORLD, Some("job"), timeout)?;
                let r = channel.exchange(timeout, || make());
                match &r {
                    Ok(_) => channel.finish(),
                    Err(e) => channel.fail(&e.to_string()),
                }
                r
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn every_rank_gets_rank_0s_payload_made_once() {
    for (rendezvous, dir) in rendezvous_kinds("ok") {
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let results = exchange_all(&rendezvous, move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(b"the id".to_vec())
        });
        for (rank, r) in results.into_iter().enumerate() {
            assert_eq!(r.unwrap(), b"the id", "{rendezvous}: rank {rank}");
        }
        assert_eq!(made.load(Ordering::SeqCst), 1, "{rendezvous}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn rank_0_failing_to_make_the_payload_ends_every_wait_with_its_message() {
    for (rendezvous, dir) in rendezvous_kinds("fail") {
        let start = Instant::now();
        let results = exchange_all(&rendezvous, || {
            Err(crate::error::Error::MultiGpu("no NCCL id today".into()))
        });
        for (rank, r) in results.into_iter().enumerate() {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("no NCCL id today"),
                "{rendezvous}: rank {rank}: {e}"
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{rendezvous}: the others waited for their deadline"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
