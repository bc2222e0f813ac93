//! How several processes find each other: which launcher started them (torchrun, Slurm, Open
//! MPI, PMI, or the explicit `SMEMKIT_*` variables) and so each one's rank, and the rendezvous
//! where rank 0 hands the NCCL unique id to the others, over TCP or through a shared file.
//! Nothing here needs a GPU or NCCL: the payload is bytes, so all of it is tested on the CPU.

pub mod env;
pub mod file;
pub mod gather;
pub mod nodelist;
pub mod tcp;

use std::time::Duration;

pub use env::{detect, Launcher, Placement, Rendezvous};

use crate::error::Result;

/// A failure watchdog: a peer's message once one has failed or vanished.
pub type Watchdog = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// A rendezvous joined by this rank, whichever kind: rank 0 shares the payload, the others
/// receive it; every rank can say it failed and hear that a peer did.
pub enum Channel {
    File(file::FileRendezvous),
    Tcp(tcp::Session),
}

impl Channel {
    /// Joins: over TCP every rank has connected to rank 0 when this returns (or it failed, and
    /// rank 0 has told those that had joined); a file needs nothing yet.
    pub fn open(
        rendezvous: &Rendezvous,
        rank: usize,
        world: usize,
        job: Option<&str>,
        timeout: Duration,
    ) -> Result<Channel> {
        Ok(match rendezvous {
            Rendezvous::File(path) => Channel::File(file::FileRendezvous::open(path, rank, world)),
            Rendezvous::Tcp { host, port } => Channel::Tcp(tcp::Session::join(&tcp::Peer {
                rank,
                world,
                job: job.map(str::to_string),
                host: host.clone(),
                port: *port,
                timeout,
            })?),
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        match self {
            Channel::File(f) => f.rank,
            Channel::Tcp(s) => s.rank(),
        }
    }

    /// The one exchange every job starts with, whichever kind: rank 0 makes the payload with
    /// `make` and shares it, the other ranks receive it within `timeout` (or hear that a peer
    /// failed); every rank returns it. A failure of `make` is rank 0's to report (see
    /// [`Channel::fail`]).
    pub fn exchange(
        &self,
        timeout: Duration,
        make: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        if self.rank() == 0 {
            let payload = make()?;
            self.share(&payload)?;
            Ok(payload)
        } else {
            self.receive(timeout)
        }
    }

    /// Rank 0: gives every other rank `payload`.
    pub fn share(&self, payload: &[u8]) -> Result<()> {
        match self {
            Channel::File(f) => f.share(payload),
            Channel::Tcp(s) => s.share(payload),
        }
    }

    /// The other ranks: rank 0's payload, within `timeout`.
    pub fn receive(&self, timeout: Duration) -> Result<Vec<u8>> {
        match self {
            Channel::File(f) => f.receive(timeout),
            Channel::Tcp(s) => s.receive(timeout),
        }
    }

    /// Rank 0 gathers the parts of bins sharded over the ranks ([`gather::gather`]); only over
    /// TCP (a file rendezvous has no connection to carry them).
    pub fn gather(
        &self,
        bins: std::ops::Range<usize>,
        counts: crate::histogram::result::Counts,
        tallies: crate::histogram::result::Tallies,
        layout: &[std::ops::Range<usize>],
        timeout: Duration,
        mode: gather::Gather,
    ) -> Result<gather::Gathered> {
        match self {
            Channel::Tcp(s) => gather::gather(s, bins, counts, tallies, layout, timeout, mode),
            Channel::File(f) => Err(crate::error::Error::InvalidArgument(format!(
                "gathering the parts needs the TCP rendezvous, and rank {} met through a file",
                f.rank
            ))),
        }
    }

    /// Every rank has used the payload: a file is removed.
    pub fn joined(&self) {
        if let Channel::File(f) = self {
            f.joined();
        }
    }

    /// A peer's failure, if any.
    pub fn failure(&self) -> Option<String> {
        match self {
            Channel::File(f) => f.failure(),
            Channel::Tcp(s) => s.failure(),
        }
    }

    /// [`Channel::failure`] for waits elsewhere.
    pub fn watchdog(&self) -> Watchdog {
        match self {
            Channel::File(f) => {
                let f = f.clone();
                Box::new(move || f.failure())
            }
            Channel::Tcp(s) => {
                let w = s.watcher();
                Box::new(move || w.failure())
            }
        }
    }

    /// This rank failed with `message`: the others hear it.
    pub fn fail(self, message: &str) {
        match self {
            Channel::File(f) => f.fail(message),
            Channel::Tcp(s) => s.fail(message),
        }
    }

    /// Rank 0 after a gather under [`gather::Gather::UntilWritten`]: its session stays open
    /// until its caller has written the whole ([`gather::written`]).
    pub fn park_until_written(self, timeout: Duration) {
        match self {
            Channel::Tcp(s) => gather::park(gather::hold(s, timeout)),
            other => other.finish(),
        }
    }

    /// This rank is done: its leaving is no failure.
    pub fn finish(self) {
        if let Channel::Tcp(s) = self {
            s.finish();
        }
    }
}

#[cfg(test)]
#[path = "channel_tests.rs"]
mod tests;
