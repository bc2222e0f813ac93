//! Rank 0 gathering a histogram whose bins are sharded over the ranks (`--gather`): every other
//! rank streams its slice of the bins to rank 0 over the TCP rendezvous's connection
//! ([`super::tcp`]), which needs no filesystem shared by the machines and no GPU memory (NCCL
//! stays for the counting). Rank 0 then holds the whole histogram, as one process would have
//! counted it, and writes it; a rank never holds a second full copy of its part (it sends it in
//! chunks of at most [`super::tcp::MAX_BODY`] bytes).
//!
//! Order: rank 0 makes room for the whole, then asks every rank for its part (`Pull`);
//! each answers with what it holds ([`PartHeader`]) and its counters in chunks; once every part
//! is in, rank 0 tells them (`Gathered`) and they are done, or under
//! [`Gather::UntilWritten`] (the CLI's `--gather`) they wait until rank 0 has written the whole,
//! so that its failure to write ends them too ([`hold`], [`written`]). Failures follow the
//! rendezvous's rules: a rank that fails, vanishes or sends a part that does not fit ends the
//! gather on every rank with its message, and no wait outlasts the timeout without news (rank
//! 0's wait restarts with every chunk, so a large gather over a slow link is not cut short).

use std::io::Write;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::tcp::{secs, write_frame, Inner, Kind, Session, MAX_BODY};
use crate::error::{Error, Result};
use crate::histogram::result::{Counts, Tallies};

/// The words a chunk carries at most.
const CHUNK_WORDS: usize = MAX_BODY / 8;
/// How much longer than the timeout a rank waits for rank 0's word that every part is in.
const CONFIRM_GRACE: Duration = Duration::from_secs(2);
/// The header's length: element kind, bins start and end, nbins, three tallies.
const HEADER_BYTES: usize = 1 + 8 * 6;

/// What a rank's part holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartHeader {
    /// Counts (false) or sums of weights (true), 8 bytes a bin either way.
    pub weighted: bool,
    /// Its bins, of `0..nbins`.
    pub bins: Range<usize>,
    /// The whole histogram's bins.
    pub nbins: usize,
    /// The tallies every rank holds (all-reduced while counting).
    pub tallies: Tallies,
}

impl PartHeader {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES);
        b.push(u8::from(self.weighted));
        for v in [
            self.bins.start as u64,
            self.bins.end as u64,
            self.nbins as u64,
            self.tallies.below,
            self.tallies.above,
            self.tallies.nan,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8]) -> Option<PartHeader> {
        if b.len() != HEADER_BYTES || b[0] > 1 {
            return None;
        }
        let n = |i: usize| u64::from_le_bytes(b[1 + 8 * i..9 + 8 * i].try_into().expect("8 bytes"));
        let size = |i: usize| usize::try_from(n(i)).ok();
        Some(PartHeader {
            weighted: b[0] == 1,
            bins: size(0)?..size(1)?,
            nbins: size(2)?,
            tallies: Tallies {
                below: n(3),
                above: n(4),
                nan: n(5),
            },
        })
    }
}

/// Whether rank 0 gathers the parts of bins sharded over the ranks (`--gather`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gather {
    /// Each rank keeps its part.
    #[default]
    Off,
    /// Rank 0's histogram is the whole; the others are done once rank 0 holds every part.
    Whole,
    /// As `Whole`, and the others wait until rank 0 has written it: rank 0's session is parked
    /// ([`park`]) until its caller says how the write went ([`written`]), so that a failure to
    /// write ends every rank with its message. Rank 0 keeps the others waiting (with a word every
    /// quarter of the timeout) until then, or until it exits.
    UntilWritten,
}

/// What a rank ends the gather with.
#[derive(Debug, Clone, PartialEq)]
pub enum Gathered {
    /// Rank 0: the whole histogram's counts (or sums).
    Whole(Counts),
    /// The others: their part, sent, given back.
    Sent(Counts),
}

/// Rank 0's whole histogram being filled, part by part.
struct Whole {
    mine: PartHeader,
    words: Vec<u64>,
    /// Every rank's bins (the layout), in rank order.
    parts: Vec<Range<usize>>,
    /// Per rank: `None` until its header came, then the words received.
    got: Vec<Option<usize>>,
    /// When the last header or chunk came.
    progress: Instant,
}

impl Whole {
    fn missing(&self) -> Vec<usize> {
        (1..self.parts.len())
            .filter(|&r| self.got[r] != Some(self.parts[r].len()))
            .collect()
    }
}

/// The gather's part of a session's state.
#[derive(Default)]
pub(super) struct GatherState {
    whole: Option<Whole>,
    /// The others: rank 0 asked for the part.
    pulled: bool,
    /// The others: rank 0 holds every part.
    gathered: bool,
    /// The others: rank 0 finished (after writing, under [`Gather::UntilWritten`]).
    done: bool,
    /// The others: when rank 0 last said it was still at work.
    news: Option<Instant>,
}

/// Rank 0 said it is done (its session's `Done`).
pub(super) fn rank_0_done(inner: &Inner) {
    inner.state().gather.done = true;
    inner.changed.notify_all();
}

/// A gather frame that rank `r` sent this rank (on its reader thread); an error is the failure
/// every rank hears.
pub(super) fn accept(
    inner: &Inner,
    r: usize,
    kind: Kind,
    body: &[u8],
) -> std::result::Result<(), String> {
    let root = inner.rank == 0;
    let mut s = inner.state();
    match kind {
        Kind::Pull if !root => s.gather.pulled = true,
        Kind::Gathered if !root => {
            s.gather.gathered = true;
            s.gather.news = Some(Instant::now());
        }
        Kind::Writing if !root => s.gather.news = Some(Instant::now()),
        Kind::Part if root => {
            let Some(w) = s.gather.whole.as_mut() else {
                return Err(format!(
                    "rank {r} sent its part of the histogram before rank 0 asked for it"
                ));
            };
            let h = PartHeader::decode(body)
                .ok_or_else(|| format!("rank {r} sent rank 0 a garbled part header"))?;
            let mine = &w.mine;
            if h.weighted != mine.weighted || h.nbins != mine.nbins {
                return Err(format!(
                    "rank {r} holds a part of {} {} and rank 0 of {} {}: the ranks did not count \
                     the same histogram",
                    h.nbins,
                    if h.weighted { "sums" } else { "counts" },
                    mine.nbins,
                    if mine.weighted { "sums" } else { "counts" },
                ));
            }
            if h.bins != w.parts[r] {
                return Err(format!(
                    "rank {r} holds bins {}..{}, and its share is {}..{}",
                    h.bins.start, h.bins.end, w.parts[r].start, w.parts[r].end
                ));
            }
            if h.tallies != mine.tallies {
                return Err(format!(
                    "rank {r} tallies {:?} outside the bins and rank 0 {:?}: the ranks did not \
                     count the same histogram",
                    h.tallies, mine.tallies
                ));
            }
            if w.got[r].is_some() {
                return Err(format!("rank {r} sent its part twice"));
            }
            w.got[r] = Some(0);
            w.progress = Instant::now();
        }
        Kind::Chunk if root => {
            let w = s.gather.whole.as_mut().filter(|w| w.got[r].is_some());
            let Some(w) = w else {
                return Err(format!(
                    "rank {r} sent part of its counters before saying what they are"
                ));
            };
            let got = w.got[r].expect("checked");
            let n = body.len() / 8;
            if body.len() % 8 != 0 || got + n > w.parts[r].len() {
                return Err(format!(
                    "rank {r} sent more than its {} bins, or a torn counter",
                    w.parts[r].len()
                ));
            }
            let at = w.parts[r].start + got;
            for (dst, src) in w.words[at..at + n].iter_mut().zip(body.chunks_exact(8)) {
                *dst = u64::from_le_bytes(src.try_into().expect("8 bytes"));
            }
            w.got[r] = Some(got + n);
            w.progress = Instant::now();
        }
        _ => return Err(format!("rank {r} sent an unexpected {kind:?}")),
    }
    inner.changed.notify_all();
    Ok(())
}

/// The counters as 8-byte words (sums as their bits), in place where the types allow.
fn words_of(counts: Counts) -> Result<(bool, Vec<u64>)> {
    match counts {
        Counts::Unweighted(c) => Ok((false, c)),
        Counts::Weighted(c) => Ok((true, c.into_iter().map(f64::to_bits).collect())),
        Counts::Integer { .. } => Err(Error::NotImplemented(
            "gathering sums of integer weights sharded over ranks".into(),
        )),
    }
}

fn counts_of(weighted: bool, words: Vec<u64>) -> Counts {
    if weighted {
        Counts::Weighted(words.into_iter().map(f64::from_bits).collect())
    } else {
        Counts::Unweighted(words)
    }
}

/// The gather, on every rank: this rank holds `bins` of the whole (`counts`, and the tallies
/// every rank holds); `layout` is every rank's bins in rank order, tiling `0..nbins`. Rank 0
/// returns the whole, the others their part once rank 0 holds every part. An error is this
/// rank's to tell the others ([`Session::fail`]), unless it reports a peer's failure.
pub fn gather(
    session: &Session,
    bins: Range<usize>,
    counts: Counts,
    tallies: Tallies,
    layout: &[Range<usize>],
    timeout: Duration,
    mode: Gather,
) -> Result<Gathered> {
    let (rank, world) = (session.rank(), session.world());
    let nbins = layout.last().map_or(0, |r| r.end);
    let tiled = layout.len() == world
        && layout.first().is_some_and(|r| r.start == 0)
        && layout.iter().all(|r| r.start <= r.end)
        && layout.windows(2).all(|p| p[0].end == p[1].start);
    if !tiled || layout[rank] != bins || counts.len() != bins.len() {
        return Err(Error::InvalidArgument(format!(
            "rank {rank}: a gather of bins {}..{} ({} counters) in a layout of {} parts over {} \
             ranks that does not tile the bins",
            bins.start,
            bins.end,
            counts.len(),
            layout.len(),
            world
        )));
    }
    let (weighted, words) = words_of(counts)?;
    let header = PartHeader {
        weighted,
        bins,
        nbins,
        tallies,
    };
    if rank == 0 {
        collect(session, header, words, layout, timeout)
            .map(|w| Gathered::Whole(counts_of(weighted, w)))
    } else {
        send(session, &header, &words, timeout)?;
        if mode == Gather::UntilWritten {
            wait_written(session, timeout)?;
        }
        Ok(Gathered::Sent(counts_of(weighted, words)))
    }
}

fn failed(msg: String) -> Error {
    Error::MultiGpu(msg)
}

/// Rank 0: makes room for the whole, asks every rank for its part, waits for every part.
fn collect(
    session: &Session,
    mine: PartHeader,
    mut words: Vec<u64>,
    layout: &[Range<usize>],
    timeout: Duration,
) -> Result<Vec<u64>> {
    let inner = &session.inner;
    let nbins = mine.nbins;
    words.try_reserve_exact(nbins - words.len()).map_err(|e| {
        failed(format!(
            "rank 0 cannot hold the whole histogram to gather it ({nbins} bins, {} bytes): {e}",
            nbins as u128 * 8
        ))
    })?;
    words.resize(nbins, 0);
    {
        let mut s = inner.state();
        if let Some(m) = &s.failure {
            return Err(failed(m.clone()));
        }
        let world = layout.len();
        let mut got = vec![None; world];
        got[0] = Some(layout[0].len());
        s.gather.whole = Some(Whole {
            mine,
            words,
            parts: layout.to_vec(),
            got,
            progress: Instant::now(),
        });
    }
    for l in &inner.links {
        let mut s = l.stream.lock().unwrap_or_else(|p| p.into_inner());
        write_frame(&mut *s, Kind::Pull, &[]).map_err(|e| {
            failed(format!(
                "rank 0 could not ask rank {} for its part of the histogram: {e}",
                l.rank
            ))
        })?;
    }
    let mut s = inner.state();
    loop {
        if let Some(m) = &s.failure {
            return Err(failed(m.clone()));
        }
        let w = s.gather.whole.as_ref().expect("set above");
        let missing = w.missing();
        if missing.is_empty() {
            break;
        }
        let quiet = w.progress.elapsed();
        if quiet >= timeout {
            let names: Vec<String> = missing.iter().map(usize::to_string).collect();
            return Err(failed(format!(
                "rank 0: no word of the part{} of rank{} {} for {} s (SMEMKIT_NCCL_TIMEOUT) \
                 while gathering the histogram (stuck, or its connection stalled)",
                if names.len() > 1 { "s" } else { "" },
                if names.len() > 1 { "s" } else { "" },
                names.join(", "),
                secs(timeout)
            )));
        }
        s = inner
            .changed
            .wait_timeout(s, timeout - quiet)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    let whole = s.gather.whole.take().expect("set above");
    drop(s);
    // Best effort: a rank gone after sending its part has nothing left to hear.
    for l in &inner.links {
        let mut s = l.stream.lock().unwrap_or_else(|p| p.into_inner());
        let _ = write_frame(&mut *s, Kind::Gathered, &[]);
    }
    Ok(whole.words)
}

/// Waits until `flag` says so, a peer fails, or `timeout` passes (`what` names the wait).
fn wait_for(
    session: &Session,
    flag: fn(&GatherState) -> bool,
    timeout: Duration,
    what: &str,
) -> Result<()> {
    let inner = &session.inner;
    let deadline = Instant::now() + timeout;
    let mut s = inner.state();
    loop {
        if flag(&s.gather) {
            return Ok(());
        }
        if let Some(m) = &s.failure {
            return Err(failed(m.clone()));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(failed(format!(
                "rank {}: {what} within {} s (SMEMKIT_NCCL_TIMEOUT)",
                inner.rank,
                secs(timeout)
            )));
        }
        s = inner
            .changed
            .wait_timeout(s, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// The other ranks: waits for rank 0's ask, streams the part, waits until rank 0 holds every
/// part.
fn send(session: &Session, header: &PartHeader, words: &[u64], timeout: Duration) -> Result<()> {
    let inner = &session.inner;
    let rank = inner.rank;
    wait_for(
        session,
        |g| g.pulled,
        timeout,
        "rank 0 did not ask for this rank's part of the histogram",
    )?;
    let link = inner
        .links
        .first()
        .expect("a rank other than 0 has its link to rank 0");
    let sent = {
        let mut s = link.stream.lock().unwrap_or_else(|p| p.into_inner());
        stream_part(&mut s, header, words, timeout)
    };
    if let Err(e) = sent {
        // Rank 0's own word, when it failed or vanished, says more than the broken pipe: its
        // reader may record it a moment after the write failed.
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            if let Some(m) = session.failure() {
                return Err(failed(m));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        return Err(failed(format!(
            "rank {rank} could not send its part of the histogram to rank 0: {e} (rank 0 \
             stopped, or the connection was lost)"
        )));
    }
    // Rank 0 names a rank whose part stalls at its own deadline: a little grace here lets that
    // message, rather than this one, end this rank.
    wait_for(
        session,
        |g| g.gathered,
        timeout + CONFIRM_GRACE,
        "rank 0 did not confirm it received every part of the histogram",
    )
}

/// The other ranks under [`Gather::UntilWritten`]: waits for rank 0's word that it wrote the
/// whole (its `Done`), or its failure; rank 0 silent for the timeout (no keep-alive) is an error.
fn wait_written(session: &Session, timeout: Duration) -> Result<()> {
    let inner = &session.inner;
    let mut s = inner.state();
    loop {
        if s.gather.done {
            return Ok(());
        }
        if let Some(m) = &s.failure {
            return Err(failed(m.clone()));
        }
        let quiet = s.gather.news.map_or(Duration::ZERO, |t| t.elapsed());
        if quiet >= timeout {
            return Err(failed(format!(
                "rank {}: rank 0 said nothing for {} s (SMEMKIT_NCCL_TIMEOUT) while it wrote the \
                 gathered histogram (stuck, or its connection stalled)",
                inner.rank,
                secs(timeout)
            )));
        }
        s = inner
            .changed
            .wait_timeout(s, timeout - quiet)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// Rank 0's session after a gather under [`Gather::UntilWritten`], kept open (with a keep-alive
/// to the others) until [`Held::written`].
pub struct Held {
    session: Option<Session>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    beat: Option<std::thread::JoinHandle<()>>,
}

/// Keeps rank 0's `session` open after a gather: every quarter of `timeout` the others hear that
/// rank 0 is still at work, until [`Held::written`].
pub fn hold(session: Session, timeout: Duration) -> Held {
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let every = (timeout / 4).max(Duration::from_millis(10));
    let inner = session.inner.clone();
    let flag = stop.clone();
    let beat = std::thread::Builder::new()
        .name("smemkit-gather-writing".into())
        .spawn(move || {
            let (lock, cv) = &*flag;
            let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
            while !*stopped {
                inner.send_all(Kind::Writing, &[], None);
                stopped = cv
                    .wait_timeout(stopped, every)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        })
        .ok();
    Held {
        session: Some(session),
        stop,
        beat,
    }
}

impl Held {
    /// How rank 0's write went: the others finish, or end with `rank 0 failed after gathering
    /// the histogram: <why>`.
    pub fn written(mut self, result: std::result::Result<(), String>) {
        self.stop_beat();
        if let Some(s) = self.session.take() {
            match result {
                Ok(()) => s.finish(),
                Err(why) => s.fail(&format!("after gathering the histogram: {why}")),
            }
        }
    }

    fn stop_beat(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.beat.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Held {
    /// Never told: the others hear that rank 0 stopped (its session closes without a word).
    fn drop(&mut self) {
        self.stop_beat();
    }
}

/// Where [`park`] keeps rank 0's held session for [`written`]: the histogram call that gathered
/// returns before its caller writes.
static PARKED: Mutex<Option<Held>> = Mutex::new(None);

/// Parks rank 0's held session until [`written`] (a session parked before is told it failed).
pub fn park(held: Held) {
    let old = PARKED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .replace(held);
    if let Some(old) = old {
        old.written(Err(
            "a later gather replaced it before it was written".into()
        ));
    }
}

/// Rank 0, after writing what a gather under [`Gather::UntilWritten`] returned: tells the other
/// ranks how it went (nothing to do when no session is parked: another rank, or no gather).
pub fn written(result: std::result::Result<(), String>) {
    let held = PARKED.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(h) = held {
        h.written(result);
    }
}

/// The header and the words in chunks, each write bounded by `timeout` (a rank 0 that stopped
/// reading does not block this rank for ever).
fn stream_part(
    s: &mut std::net::TcpStream,
    header: &PartHeader,
    words: &[u64],
    timeout: Duration,
) -> std::io::Result<()> {
    s.set_write_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    write_frame(s, Kind::Part, &header.encode())?;
    let mut body = Vec::with_capacity(CHUNK_WORDS.min(words.len()) * 8);
    for (i, chunk) in words.chunks(CHUNK_WORDS).enumerate() {
        body.clear();
        chunk
            .iter()
            .for_each(|w| body.extend_from_slice(&w.to_le_bytes()));
        write_frame(s, Kind::Chunk, &body)?;
        // Test aid: a rank paused mid-stream can be killed there (tests/gather_processes.rs).
        if i == 0 {
            if let Some(pause) = crate::config::test_gather_pause() {
                std::thread::sleep(pause);
            }
        }
    }
    s.flush()?;
    s.set_write_timeout(None)
}

/// Test aid: streams the header and only the first `words` of a part, then closes this rank's
/// connections as a process killed mid-stream would.
#[cfg(test)]
pub(super) fn die_mid_stream(session: Session, header: &PartHeader, words: &[u64]) {
    let inner = &session.inner;
    wait_for(&session, |g| g.pulled, Duration::from_secs(20), "no pull").unwrap();
    {
        let link = &inner.links[0];
        let mut s = link.stream.lock().unwrap();
        write_frame(&mut *s, Kind::Part, &header.encode()).unwrap();
        let half: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        write_frame(&mut *s, Kind::Chunk, &half).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    drop(session);
}

#[cfg(test)]
#[path = "gather_tests.rs"]
mod tests;
