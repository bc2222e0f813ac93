//! Several ranks as threads of this process, over 127.0.0.1. A rank that "dies" drops its
//! session without a word, which closes its sockets as a killed process's are
//! (`crates/smemkit/tests/rendezvous_processes.rs` kills real processes).

use std::thread::JoinHandle;

use super::*;

/// A port nothing listens on now (the OS picks it; released at once).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn peer(rank: usize, world: usize, port: u16, timeout_s: f64) -> Peer {
    Peer {
        rank,
        world,
        job: Some("job-1".into()),
        host: "127.0.0.1".into(),
        port,
        timeout: Duration::from_secs_f64(timeout_s),
    }
}

fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    std::thread::spawn(f)
}

/// Waits until `watch` reports a failure, at most `limit`.
fn failure_within(s: &Session, limit: Duration) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(m) = s.failure() {
            return Some(m);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

#[test]
fn frames_round_trip_and_garbage_is_refused() {
    let mut buf = Vec::new();
    write_frame(&mut buf, Kind::Payload, b"abc").unwrap();
    write_frame(&mut buf, Kind::Done, b"").unwrap();
    let mut r = &buf[..];
    assert_eq!(
        read_frame(&mut r).unwrap(),
        Some((Kind::Payload, b"abc".to_vec()))
    );
    assert_eq!(read_frame(&mut r).unwrap(), Some((Kind::Done, vec![])));
    assert_eq!(read_frame(&mut r).unwrap(), None);
    let mut torn = &buf[..5];
    assert_eq!(
        read_frame(&mut torn).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    let mut http = &b"GET / HTTP/1.1\r\n\r\n"[..];
    assert_eq!(
        read_frame(&mut http).unwrap_err().kind(),
        io::ErrorKind::InvalidData
    );
    let mut huge = Vec::from(&MAGIC[..]);
    huge.push(Kind::Payload as u8);
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    assert!(read_frame(&mut &huge[..]).is_err());
    assert_eq!(
        parse_hello(&hello(3, 8, Some("j"))),
        Some((3, 8, "j".to_string()))
    );
    assert_eq!(parse_hello(b"short"), None);
}

#[test]
fn every_rank_gets_rank_0s_payload() {
    let port = free_port();
    let world = 4;
    // The others start first and wait for rank 0.
    let others: Vec<_> = (1..world)
        .map(|r| {
            spawn(move || {
                let s = Session::join(&peer(r, world, port, 20.0)).unwrap();
                let got = s.receive(Duration::from_secs(20)).unwrap();
                assert_eq!(s.failure(), None);
                s.finish();
                got
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let payload: Vec<u8> = (0..128).collect();
    let root = Session::join(&peer(0, world, port, 20.0)).unwrap();
    root.share(&payload).unwrap();
    for o in others {
        assert_eq!(o.join().unwrap(), payload);
    }
    // Every rank said it was done: no failure at rank 0, whose own finish is quiet too.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(root.failure(), None);
    root.finish();
}

#[test]
fn a_world_of_one_needs_nobody() {
    let s = Session::join(&peer(0, 1, free_port(), 1.0)).unwrap();
    s.share(b"x").unwrap();
    assert_eq!(s.failure(), None);
    assert!(Session::join(&peer(1, 1, free_port(), 1.0)).is_err());
}

#[test]
fn a_rank_that_never_joins_ends_every_rank_at_the_deadline() {
    let port = free_port();
    let start = Instant::now();
    let one = spawn(move || {
        Session::join(&peer(1, 3, port, 20.0)).map(|s| s.receive(Duration::from_secs(20)))
    });
    let root = Session::join(&peer(0, 3, port, 1.5));
    let e = root.err().expect("rank 2 never came").to_string();
    assert!(
        e.contains("rank 2 did not join") && e.contains("127.0.0.1:") && e.contains("1.5 s"),
        "{e}"
    );
    // Rank 1 joined, and hears rank 0's message instead of waiting its own 20 s.
    let e1 = match one.join().unwrap() {
        Err(e) | Ok(Err(e)) => e.to_string(),
        Ok(Ok(_)) => panic!("rank 1 got a payload"),
    };
    assert!(e1.contains("rank 2 did not join"), "{e1}");
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn rank_0_missing_ends_the_others_at_their_deadline() {
    let start = Instant::now();
    let e = Session::join(&peer(2, 3, free_port(), 1.0))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("rank 2: no smemkit rank 0 at 127.0.0.1:") && e.contains("SMEMKIT_NCCL_TIMEOUT"),
        "{e}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_rank_that_dies_while_the_others_join_ends_the_rendezvous() {
    let port = free_port();
    // Rank 1 joins and dies; rank 2 comes later than that.
    let one = spawn(move || {
        let s = Session::join(&peer(1, 3, port, 20.0)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        drop(s);
    });
    let two = spawn(move || {
        std::thread::sleep(Duration::from_millis(2000));
        Session::join(&peer(2, 3, port, 3.0))
            .err()
            .map(|e| e.to_string())
    });
    let start = Instant::now();
    let e = Session::join(&peer(0, 3, port, 20.0))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rank 1 left the rendezvous"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    one.join().unwrap();
    // Rank 2 found nobody (rank 0 had given up): an error at its deadline, never a hang.
    let e2 = two.join().unwrap().expect("rank 2 failed");
    assert!(e2.contains("no smemkit rank 0"), "{e2}");
}

#[test]
fn a_rank_that_dies_after_the_rendezvous_is_reported_to_every_rank() {
    let port = free_port();
    let world = 3;
    let ranks: Vec<_> = (1..world)
        .map(|r| {
            spawn(move || {
                let s = Session::join(&peer(r, world, port, 20.0)).unwrap();
                s.receive(Duration::from_secs(20)).unwrap();
                if r == 2 {
                    std::thread::sleep(Duration::from_millis(200));
                    drop(s); // dies in the middle of the work
                    None
                } else {
                    failure_within(&s, Duration::from_secs(10))
                }
            })
        })
        .collect();
    let root = Session::join(&peer(0, world, port, 20.0)).unwrap();
    root.share(b"id").unwrap();
    let m0 = failure_within(&root, Duration::from_secs(10)).expect("rank 0 heard");
    assert!(m0.contains("rank 2 stopped without a word"), "{m0}");
    let mut it = ranks.into_iter();
    let m1 = it.next().unwrap().join().unwrap().expect("rank 1 heard");
    assert_eq!(m1, m0);
    assert_eq!(it.next().unwrap().join().unwrap(), None);
    root.fail("stopping");
}

#[test]
fn a_failing_rank_sends_its_message_to_every_rank() {
    let port = free_port();
    let world = 3;
    let ranks: Vec<_> = (1..world)
        .map(|r| {
            spawn(move || {
                let s = Session::join(&peer(r, world, port, 20.0)).unwrap();
                if r == 1 {
                    // Normally after every rank has joined; if not, the join ends with it.
                    std::thread::sleep(Duration::from_millis(300));
                    s.fail("there is no CUDA device 9");
                    None
                } else {
                    // Waiting for the id, rank 2 stops with rank 1's message instead.
                    Some(s.receive(Duration::from_secs(20)).unwrap_err().to_string())
                }
            })
        })
        .collect();
    let m0 = match Session::join(&peer(0, world, port, 20.0)) {
        Ok(root) => {
            let m0 = failure_within(&root, Duration::from_secs(10)).expect("rank 0 heard");
            assert_eq!(m0, "rank 1 failed: there is no CUDA device 9");
            assert!(root.share(b"id").unwrap_err().to_string().contains(&m0));
            m0
        }
        Err(e) => e.to_string(),
    };
    assert!(
        m0.contains("rank 1 failed: there is no CUDA device 9"),
        "{m0}"
    );
    let mut it = ranks.into_iter();
    assert_eq!(it.next().unwrap().join().unwrap(), None);
    let m2 = it.next().unwrap().join().unwrap().unwrap();
    assert!(
        m2.contains("rank 1 failed: there is no CUDA device 9"),
        "{m2}"
    );
}

#[test]
fn rank_0_failing_or_dying_is_reported_to_every_rank() {
    for dies in [false, true] {
        let port = free_port();
        let others: Vec<_> = (1..3)
            .map(|r| {
                spawn(move || {
                    let s = Session::join(&peer(r, 3, port, 20.0)).unwrap();
                    s.receive(Duration::from_secs(20)).unwrap_err().to_string()
                })
            })
            .collect();
        let root = Session::join(&peer(0, 3, port, 20.0)).unwrap();
        if dies {
            drop(root);
        } else {
            root.fail("could not load NCCL");
        }
        for o in others {
            let m = o.join().unwrap();
            let want = if dies {
                "rank 0 stopped without a word"
            } else {
                "rank 0 failed: could not load NCCL"
            };
            assert!(m.contains(want), "{m}");
        }
    }
}

#[test]
fn a_wrong_world_size_stops_every_rank_with_both_sizes() {
    let port = free_port();
    let one = spawn(move || Session::join(&peer(1, 3, port, 10.0)).map(|_| ()));
    let root = Session::join(&peer(0, 2, port, 10.0));
    let e = root.err().unwrap().to_string();
    assert!(
        e.contains("rank 1 was started with 3 ranks and rank 0 with 2"),
        "{e}"
    );
    let e1 = one.join().unwrap().unwrap_err().to_string();
    assert_eq!(e1, e);
}

#[test]
fn two_ranks_of_one_number_are_refused() {
    let port = free_port();
    // Whichever joins first is welcomed and then hears the error; the second is refused.
    let twins: Vec<_> = (0..2)
        .map(|_| {
            spawn(move || {
                match Session::join(&peer(1, 3, port, 10.0))
                    .and_then(|s| s.receive(Duration::from_secs(10)))
                {
                    Err(e) => e.to_string(),
                    Ok(_) => panic!("a payload"),
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let e = Session::join(&peer(0, 3, port, 10.0))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("two processes say they are rank 1"), "{e}");
    for t in twins {
        assert_eq!(t.join().unwrap(), e);
    }
}

#[test]
fn a_port_in_use_is_named_and_the_others_stop_at_their_deadline() {
    // Another program holds the port and never answers.
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let start = Instant::now();
    let one = spawn(move || {
        Session::join(&peer(1, 2, port, 1.5))
            .err()
            .map(|e| e.to_string())
    });
    let e = Session::join(&peer(0, 2, port, 10.0))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&format!("127.0.0.1:{port}")) && e.contains("holds the port"),
        "{e}"
    );
    let e1 = one.join().unwrap().expect("rank 1 stopped");
    assert!(
        e1.contains("no smemkit rank 0") && e1.contains("not as smemkit's rank 0"),
        "{e1}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn another_jobs_rank_0_is_not_joined() {
    let port = free_port();
    // This job's rank 1 finds another job's rank 0 on the port, and keeps looking.
    let stranger = spawn(move || {
        let mut p = peer(1, 2, port, 1.5);
        p.job = Some("job-2".into());
        Session::join(&p).err().map(|e| e.to_string())
    });
    let root = spawn(move || {
        Session::join(&peer(0, 2, port, 3.0))
            .err()
            .map(|e| e.to_string())
    });
    let e = stranger.join().unwrap().expect("no rank 0 of its own");
    assert!(
        e.contains("belongs to job \"job-1\", this rank to job \"job-2\""),
        "{e}"
    );
    let e0 = root.join().unwrap().expect("rank 1 of job-1 never came");
    assert!(e0.contains("rank 1 did not join"), "{e0}");
}

#[test]
fn strangers_on_the_port_are_ignored() {
    let port = free_port();
    let root = spawn(move || {
        let s = Session::join(&peer(0, 2, port, 10.0)).unwrap();
        s.share(b"ok").unwrap();
        s
    });
    std::thread::sleep(Duration::from_millis(200));
    // A port scanner, then a program speaking something else.
    drop(TcpStream::connect(("127.0.0.1", port)).unwrap());
    let mut http = TcpStream::connect(("127.0.0.1", port)).unwrap();
    http.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let s = Session::join(&peer(1, 2, port, 10.0)).unwrap();
    assert_eq!(s.receive(Duration::from_secs(10)).unwrap(), b"ok");
    s.finish();
    root.join().unwrap().finish();
}
