//! The TCP rendezvous: rank 0 listens on a port, every other rank connects to `host:port` and
//! says who it is; once all have joined, rank 0 sends them one payload (the NCCL unique id, but
//! the exchange is about bytes). This is how NCCL jobs usually start (torch's store does the
//! same), and it needs no filesystem shared by the machines.
//!
//! The connections stay open for the whole run as the ranks' failure channel: a rank that fails
//! sends its message to rank 0, which sends it on to every other rank; a rank whose connection
//! closes without a word (killed, or its machine gone) is reported the same way by rank 0, and
//! rank 0's own death by every other rank. [`Session::failure`] is the watchdog that the NCCL
//! waits poll, so no rank waits past its deadline for a peer that is gone. Every wait of the
//! rendezvous itself has the same deadline.

use std::io::{self, Read, Write};
use std::net::ToSocketAddrs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

const MAGIC: &[u8; 4] = b"SMK1";
/// The largest frame body accepted: a payload, a message or one chunk of a gathered part.
pub(super) const MAX_BODY: usize = 1 << 20;
/// How long one connection attempt, or the wait for rank 0's answer to it, may take before the
/// next attempt (within the deadline).
const ATTEMPT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A rank joins: rank, number of ranks (u64 LE each), the job's name.
    Hello = 1,
    /// Rank 0 accepted the rank.
    Welcome = 2,
    /// Rank 0 belongs to another job: the rank keeps looking until its deadline.
    Reject = 3,
    /// Rank 0's payload.
    Payload = 4,
    /// A failure's message: from a rank to rank 0, or from rank 0 to every rank.
    Failed = 5,
    /// The rank finished its work: its connection closing next is no failure.
    Done = 6,
    /// Rank 0 is ready for the gather ([`super::gather`]): send your part.
    Pull = 7,
    /// A rank's part follows: what it holds ([`super::gather::PartHeader`]).
    Part = 8,
    /// The next words of a rank's part.
    Chunk = 9,
    /// Rank 0 holds every part.
    Gathered = 10,
    /// Rank 0 is still writing the gathered histogram (a keep-alive).
    Writing = 11,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Hello,
            2 => Kind::Welcome,
            3 => Kind::Reject,
            4 => Kind::Payload,
            5 => Kind::Failed,
            6 => Kind::Done,
            7 => Kind::Pull,
            8 => Kind::Part,
            9 => Kind::Chunk,
            10 => Kind::Gathered,
            11 => Kind::Writing,
            _ => return None,
        })
    }
}

pub(super) fn write_frame(s: &mut impl Write, kind: Kind, body: &[u8]) -> io::Result<()> {
    let mut frame = Vec::with_capacity(9 + body.len());
    frame.extend_from_slice(MAGIC);
    frame.push(kind as u8);
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(body);
    s.write_all(&frame)?;
    s.flush()
}

/// The next frame; `None` when the peer closed the connection between frames.
fn read_frame(s: &mut impl Read) -> io::Result<Option<(Kind, Vec<u8>)>> {
    let mut head = [0u8; 9];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let garbled = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    if &head[..4] != MAGIC {
        return Err(garbled("not an smemkit rendezvous message"));
    }
    let kind = Kind::from_u8(head[4]).ok_or_else(|| garbled("an unknown message"))?;
    let len = u32::from_le_bytes(head[5..9].try_into().expect("4 bytes")) as usize;
    if len > MAX_BODY {
        return Err(garbled("a message too long"));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(Some((kind, body)))
}

fn hello(rank: usize, world: usize, job: Option<&str>) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(rank as u64).to_le_bytes());
    b.extend_from_slice(&(world as u64).to_le_bytes());
    b.extend_from_slice(job.unwrap_or("").as_bytes());
    b
}

fn parse_hello(b: &[u8]) -> Option<(usize, usize, String)> {
    if b.len() < 16 {
        return None;
    }
    let n = |r: &[u8]| u64::from_le_bytes(r.try_into().expect("8 bytes")) as usize;
    let job = String::from_utf8_lossy(&b[16..]).into_owned();
    Some((n(&b[..8]), n(&b[8..16]), job))
}

/// One rank's side of the rendezvous: who it is and where rank 0 listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub rank: usize,
    pub world: usize,
    /// The launcher's name for the job (see `launch::env`): a rank refuses a rank 0 of another.
    pub job: Option<String>,
    pub host: String,
    pub port: u16,
    /// The deadline of every wait (`SMEMKIT_NCCL_TIMEOUT`).
    pub timeout: Duration,
}

impl Peer {
    fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Seconds as people write them: `120`, `1.5`.
pub(super) fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

fn failed(msg: String) -> Error {
    Error::MultiGpu(msg)
}

#[derive(Default)]
pub(super) struct State {
    pub(super) failure: Option<String>,
    payload: Option<Vec<u8>>,
    /// This rank is done (or failed and said so): connections closing are no longer news.
    closing: bool,
    /// The gather ([`super::gather`]): rank 0's whole being filled, the others' word from it.
    pub(super) gather: super::gather::GatherState,
}

pub(super) struct Link {
    pub(super) rank: usize,
    pub(super) stream: Mutex<TcpStream>,
}

pub(super) struct Inner {
    pub(super) rank: usize,
    pub(super) world: usize,
    /// Rank 0: one per other rank; the others: the one to rank 0.
    pub(super) links: Vec<Link>,
    state: Mutex<State>,
    pub(super) changed: Condvar,
}

impl Inner {
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the first failure; true when it was the first.
    fn record(&self, msg: &str) -> bool {
        let mut s = self.state();
        if s.closing || s.failure.is_some() {
            return false;
        }
        s.failure = Some(msg.to_string());
        self.changed.notify_all();
        true
    }

    /// Sends a frame on every link but `except`'s (best effort: a dead link is news already).
    pub(super) fn send_all(&self, kind: Kind, body: &[u8], except: Option<usize>) {
        for l in self.links.iter().filter(|l| Some(l.rank) != except) {
            let mut s = l.stream.lock().unwrap_or_else(|p| p.into_inner());
            let _ = write_frame(&mut *s, kind, body);
        }
    }

    fn close(&self, how: Shutdown) {
        self.state().closing = true;
        for l in &self.links {
            let s = l.stream.lock().unwrap_or_else(|p| p.into_inner());
            let _ = s.shutdown(how);
        }
    }
}

/// A joined rendezvous: every rank is connected (to rank 0), until the session ends.
pub struct Session {
    pub(super) inner: Arc<Inner>,
}

/// The failure watchdog of a [`Session`], for waits elsewhere (cheap to call often).
#[derive(Clone)]
pub struct Watcher(Arc<Inner>);

impl Watcher {
    pub fn failure(&self) -> Option<String> {
        self.0.state().failure.clone()
    }
}

impl Session {
    /// Joins the rendezvous: rank 0 listens until every other rank has joined, the others
    /// connect to it. A rank that is missing at the deadline, a rank of another world size, two
    /// ranks of one number or a port already in use are errors, which rank 0 sends to every
    /// rank that has joined.
    pub fn join(peer: &Peer) -> Result<Session> {
        if peer.world == 0 || peer.rank >= peer.world {
            return Err(Error::InvalidArgument(format!(
                "rank {} of a world of {}: the rank must be below the world size",
                peer.rank, peer.world
            )));
        }
        if peer.rank == 0 {
            serve(peer)
        } else {
            connect(peer)
        }
    }

    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    pub fn world(&self) -> usize {
        self.inner.world
    }

    pub fn watcher(&self) -> Watcher {
        Watcher(self.inner.clone())
    }

    /// A peer's failure (its message), once one has failed or vanished.
    pub fn failure(&self) -> Option<String> {
        self.inner.state().failure.clone()
    }

    /// Rank 0: sends `payload` to every other rank.
    pub fn share(&self, payload: &[u8]) -> Result<()> {
        if self.inner.rank != 0 {
            return Err(Error::InvalidArgument(
                "only rank 0 shares the rendezvous payload".into(),
            ));
        }
        if let Some(m) = self.failure() {
            return Err(failed(m));
        }
        for l in &self.inner.links {
            let mut s = l.stream.lock().unwrap_or_else(|p| p.into_inner());
            write_frame(&mut *s, Kind::Payload, payload).map_err(|e| {
                failed(format!(
                    "rank 0 could not send the NCCL id to rank {}: {e}",
                    l.rank
                ))
            })?;
        }
        Ok(())
    }

    /// The other ranks: rank 0's payload, waiting at most `timeout` (stops early with a peer's
    /// failure).
    pub fn receive(&self, timeout: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut s = self.inner.state();
        loop {
            if let Some(p) = s.payload.take() {
                return Ok(p);
            }
            if let Some(m) = &s.failure {
                return Err(failed(m.clone()));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(failed(format!(
                    "rank {}: no NCCL id from rank 0 after {} s (SMEMKIT_NCCL_TIMEOUT): rank 0 \
                     joined the rendezvous but sent nothing (still busy, or stuck)",
                    self.inner.rank,
                    secs(timeout)
                )));
            }
            s = self
                .inner
                .changed
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// This rank failed: tells every other rank (through rank 0) and ends the session.
    pub fn fail(self, message: &str) {
        let inner = &self.inner;
        // Closing before saying so: a peer that hears the failure may end and close its link
        // before the message reaches the others, and rank 0 would pass that on as news first.
        inner.state().closing = true;
        if inner.rank == 0 {
            inner.send_all(
                Kind::Failed,
                format!("rank 0 failed: {message}").as_bytes(),
                None,
            );
        } else {
            inner.send_all(Kind::Failed, message.as_bytes(), None);
        }
        inner.close(Shutdown::Write);
    }

    /// This rank finished its work: its connections closing next are no failure.
    pub fn finish(self) {
        self.inner.state().closing = true;
        self.inner.send_all(Kind::Done, &[], None);
        self.inner.close(Shutdown::Write);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Without `finish` or `fail` (an error path that said nothing): the peers see the
        // connection close and report this rank gone. Either way the reader threads end.
        self.inner.close(Shutdown::Both);
    }
}

/// The address rank 0 listens on: the host itself when it is a loopback address (nothing
/// outside this machine then needs to reach it), else every interface.
fn listen_address(host: &str, port: u16) -> SocketAddr {
    match host.parse::<IpAddr>() {
        Ok(ip) if ip.is_loopback() => SocketAddr::new(ip, port),
        Ok(IpAddr::V6(_)) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
        _ if host == "localhost" => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        _ => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
    }
}

fn serve(peer: &Peer) -> Result<Session> {
    let (world, timeout) = (peer.world, peer.timeout);
    let at = listen_address(&peer.host, peer.port);
    let listener = TcpListener::bind(at).map_err(|e| {
        failed(format!(
            "rank 0 could not listen on {at} for the rendezvous: {e}{}",
            if e.kind() == io::ErrorKind::AddrInUse {
                " (another job, or an earlier run, holds the port: choose another with \
                 MASTER_PORT or SMEMKIT_RENDEZVOUS=host:port)"
            } else {
                ""
            }
        ))
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| failed(format!("the rendezvous listener: {e}")))?;
    let deadline = Instant::now() + timeout;
    let mut joined: Vec<Option<TcpStream>> = (0..world).map(|_| None).collect();
    // Ends the rendezvous for every rank that has joined (and `extra`, an offender), with `msg`.
    let fatal = |joined: &mut Vec<Option<TcpStream>>, extra: Option<TcpStream>, msg: String| {
        for mut s in joined.iter_mut().filter_map(Option::take).chain(extra) {
            let _ = s.set_nonblocking(false);
            let _ = write_frame(&mut s, Kind::Failed, msg.as_bytes());
            let _ = s.shutdown(Shutdown::Write);
        }
        failed(msg)
    };
    loop {
        if joined[1..].iter().all(Option::is_some) {
            break;
        }
        match listener.accept() {
            Ok((mut s, from)) => {
                let answer = (|| {
                    s.set_nonblocking(false)?;
                    s.set_nodelay(true)?;
                    let wait = deadline
                        .saturating_duration_since(Instant::now())
                        .min(ATTEMPT);
                    s.set_read_timeout(Some(wait.max(Duration::from_millis(10))))?;
                    read_frame(&mut s)
                })();
                // Anything but a hello is not one of ours (a port scanner, another program).
                let Ok(Some((Kind::Hello, body))) = answer else {
                    continue;
                };
                let Some((r, w, job)) = parse_hello(&body) else {
                    continue;
                };
                let ours = peer.job.as_deref().unwrap_or("");
                if job != ours {
                    let _ = write_frame(
                        &mut s,
                        Kind::Reject,
                        format!(
                            "{} belongs to job {ours:?}, this rank to job {job:?}",
                            peer.address()
                        )
                        .as_bytes(),
                    );
                    continue;
                }
                if w != world {
                    let msg = format!(
                        "rank {r} was started with {w} ranks and rank 0 with {world}: every rank \
                         needs the same world size"
                    );
                    return Err(fatal(&mut joined, Some(s), msg));
                }
                if r == 0 || r >= world {
                    let msg = format!(
                        "a process at {from} says it is rank {r} of {w}; rank 0 is this process, \
                         and the others must be 1..{}",
                        world - 1
                    );
                    return Err(fatal(&mut joined, Some(s), msg));
                }
                if joined[r].is_some() {
                    let msg = format!(
                        "two processes say they are rank {r} (the second from {from}): every \
                         rank needs its own number"
                    );
                    return Err(fatal(&mut joined, Some(s), msg));
                }
                if write_frame(&mut s, Kind::Welcome, &[]).is_ok() {
                    joined[r] = Some(s);
                }
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let msg = format!("rank 0's rendezvous listener on {at} failed: {e}");
                return Err(fatal(&mut joined, None, msg));
            }
        }
        // A rank that joined and then failed or vanished ends the rendezvous now.
        for r in 1..world {
            if let Some(msg) = joined[r].as_mut().and_then(|s| news(r, s)) {
                return Err(fatal(&mut joined, None, msg));
            }
        }
        if Instant::now() >= deadline {
            let missing: Vec<String> = (1..world)
                .filter(|&r| joined[r].is_none())
                .map(|r| r.to_string())
                .collect();
            let msg = format!(
                "rank{} {} did not join the rendezvous at {} within {} s \
                 (SMEMKIT_NCCL_TIMEOUT): are they running, with the same rendezvous address and \
                 world size?",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                peer.address(),
                secs(timeout)
            );
            return Err(fatal(&mut joined, None, msg));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let links = joined
        .into_iter()
        .enumerate()
        .filter_map(|(r, s)| s.map(|s| (r, s)))
        .collect();
    start(peer, links)
}

/// Whether joined rank `r` has failed (a message) or gone (end of stream) while the others join.
fn news(r: usize, s: &mut TcpStream) -> Option<String> {
    if s.set_nonblocking(true).is_err() {
        return None;
    }
    let mut byte = [0u8; 1];
    let peeked = s.peek(&mut byte);
    let _ = s.set_nonblocking(false);
    match peeked {
        Ok(0) => Some(format!(
            "rank {r} left the rendezvous before every rank had joined (it stopped, or was killed)"
        )),
        Ok(_) => match read_frame(s) {
            Ok(Some((Kind::Failed, m))) => {
                Some(format!("rank {r} failed: {}", String::from_utf8_lossy(&m)))
            }
            _ => Some(format!("rank {r} sent rank 0 something unexpected")),
        },
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        Err(e) => Some(format!("rank {r}'s connection failed: {e}")),
    }
}

fn connect(peer: &Peer) -> Result<Session> {
    let deadline = Instant::now() + peer.timeout;
    let address = peer.address();
    let mut last = "nothing listening yet".to_string();
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(failed(format!(
                "rank {}: no smemkit rank 0 at {address} after {} s (SMEMKIT_NCCL_TIMEOUT; \
                 last: {last}): is rank 0 running, with the same rendezvous address?",
                peer.rank,
                secs(peer.timeout)
            )));
        }
        let attempt = (deadline - now).min(ATTEMPT);
        let addrs: Vec<SocketAddr> = match (peer.host.as_str(), peer.port).to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => {
                last = format!("{} does not resolve: {e}", peer.host);
                Vec::new()
            }
        };
        for a in addrs {
            let mut s = match TcpStream::connect_timeout(&a, attempt) {
                Ok(s) => s,
                Err(e) => {
                    last = format!("{a}: {e}");
                    continue;
                }
            };
            let answer = (|| {
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(attempt))?;
                write_frame(
                    &mut s,
                    Kind::Hello,
                    &hello(peer.rank, peer.world, peer.job.as_deref()),
                )?;
                read_frame(&mut s)
            })();
            match answer {
                Ok(Some((Kind::Welcome, _))) => {
                    return start(peer, vec![(0, s)]);
                }
                Ok(Some((Kind::Failed, m))) => {
                    return Err(failed(String::from_utf8_lossy(&m).into_owned()))
                }
                Ok(Some((Kind::Reject, m))) => last = String::from_utf8_lossy(&m).into_owned(),
                Ok(_) => last = format!("{a} answered, but not as smemkit's rank 0"),
                Err(e) => last = format!("{a} answered, but not as smemkit's rank 0 ({e})"),
            }
        }
        std::thread::sleep(
            Duration::from_millis(50).min(deadline.saturating_duration_since(Instant::now())),
        );
    }
}

/// The joined session: one reader thread per link, which records (and on rank 0 forwards) what
/// the peers say.
fn start(peer: &Peer, links: Vec<(usize, TcpStream)>) -> Result<Session> {
    let mut readers = Vec::with_capacity(links.len());
    let mut kept = Vec::with_capacity(links.len());
    for (r, s) in links {
        // The readers block until their peer speaks or goes, however long the work takes.
        s.set_read_timeout(None)
            .map_err(|e| failed(format!("the rendezvous connection to rank {r}: {e}")))?;
        let reader = s
            .try_clone()
            .map_err(|e| failed(format!("the rendezvous connection to rank {r}: {e}")))?;
        readers.push((r, reader));
        kept.push(Link {
            rank: r,
            stream: Mutex::new(s),
        });
    }
    let inner = Arc::new(Inner {
        rank: peer.rank,
        world: peer.world,
        links: kept,
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    });
    for (r, s) in readers {
        let inner = inner.clone();
        std::thread::Builder::new()
            .name(format!("smemkit-rendezvous-{r}"))
            .spawn(move || listen(&inner, r, s))
            .map_err(|e| failed(format!("starting the rendezvous reader: {e}")))?;
    }
    Ok(Session { inner })
}

/// Reads what rank `r` says until it is done, fails or vanishes.
fn listen(inner: &Inner, r: usize, mut s: TcpStream) {
    let root = inner.rank == 0;
    loop {
        let msg = match read_frame(&mut s) {
            Ok(Some((Kind::Payload, p))) if !root => {
                inner.state().payload = Some(p);
                inner.changed.notify_all();
                continue;
            }
            Ok(Some((Kind::Done, _))) => {
                if !root {
                    super::gather::rank_0_done(inner);
                }
                return;
            }
            Ok(Some((
                kind @ (Kind::Pull | Kind::Part | Kind::Chunk | Kind::Gathered | Kind::Writing),
                body,
            ))) => match super::gather::accept(inner, r, kind, &body) {
                Ok(()) => continue,
                Err(m) => m,
            },
            Ok(Some((Kind::Failed, m))) => {
                let m = String::from_utf8_lossy(&m).into_owned();
                if root {
                    format!("rank {r} failed: {m}")
                } else {
                    m
                }
            }
            Ok(Some((kind, _))) => format!("rank {r} sent an unexpected {kind:?}"),
            Ok(None) | Err(_) => {
                if inner.state().closing {
                    return;
                }
                format!("rank {r} stopped without a word (killed, or its connection was lost)")
            }
        };
        if inner.record(&msg) && root {
            inner.send_all(Kind::Failed, msg.as_bytes(), Some(r));
        }
        return;
    }
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
