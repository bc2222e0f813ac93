//! The file rendezvous, for ranks that share a filesystem but perhaps no network path to rank 0's
//! port: rank 0 writes the payload to the file atomically (a temporary file renamed into place)
//! and the others poll for it. A rank that fails leaves `<file>.failed.<rank>` with its message,
//! which the others' watchdogs read; a killed rank leaves nothing, and its peers stop at their
//! deadline. The file should be fresh per job: rank 0 removes it once every rank has joined.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Result};

/// One rank's view of the rendezvous file.
#[derive(Debug, Clone)]
pub struct FileRendezvous {
    pub path: PathBuf,
    pub rank: usize,
    pub world: usize,
    /// Markers older than this (less clock skew) are an earlier run's.
    started: SystemTime,
}

impl FileRendezvous {
    /// Rank 0 removes the markers and the file of an earlier run.
    pub fn open(path: &Path, rank: usize, world: usize) -> FileRendezvous {
        let f = FileRendezvous {
            path: path.to_path_buf(),
            rank,
            world,
            started: SystemTime::now(),
        };
        if rank == 0 {
            for r in 0..world {
                let _ = std::fs::remove_file(f.marker(r));
            }
            let _ = std::fs::remove_file(&f.path);
        }
        f
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self
            .path
            .file_name()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    fn marker(&self, rank: usize) -> PathBuf {
        self.sibling(&format!(".failed.{rank}"))
    }

    /// Rank 0: publishes the payload.
    pub fn share(&self, payload: &[u8]) -> Result<()> {
        write_atomically(&self.path, payload).map_err(|e| {
            Error::MultiGpu(format!(
                "rank 0 could not write the id file {}: {e}",
                self.path.display()
            ))
        })
    }

    /// The others: rank 0's payload, polled for at most `timeout`, or a peer's failure.
    pub fn receive(&self, timeout: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(bytes) = std::fs::read(&self.path) {
                return Ok(bytes);
            }
            if let Some(m) = self.failure() {
                return Err(Error::MultiGpu(m));
            }
            if Instant::now() >= deadline {
                return Err(Error::MultiGpu(format!(
                    "rank {}: no id file {} from rank 0 after {} s (SMEMKIT_NCCL_TIMEOUT); is \
                     rank 0 running, with the same SMEMKIT_NCCL_ID_FILE on a filesystem both see?",
                    self.rank,
                    self.path.display(),
                    timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every rank has joined (so has read the file): rank 0 removes it.
    pub fn joined(&self) {
        if self.rank == 0 {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Leaves this rank's failure marker with `message` for the others (best effort).
    pub fn fail(&self, message: &str) {
        let _ = write_atomically(&self.marker(self.rank), message.as_bytes());
    }

    /// The first other rank's failure marker written since this run began (less a few seconds
    /// of clock skew between machines), as a message.
    pub fn failure(&self) -> Option<String> {
        let since = self.started - Duration::from_secs(5);
        (0..self.world).filter(|&r| r != self.rank).find_map(|r| {
            let path = self.marker(r);
            let fresh = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            fresh
                .then(|| std::fs::read_to_string(&path).ok())
                .flatten()
                .map(|m| format!("rank {r} failed: {}", m.trim()))
        })
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so that readers
/// see the whole file or none.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path
        .file_name()
        .map(|s| s.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_markers_and_stale_files() {
        let dir = tempfile_dir();
        let id = dir.join("id");
        // An earlier run's leftovers, removed by rank 0's open.
        std::fs::write(&id, b"old").unwrap();
        std::fs::write(dir.join("id.failed.2"), b"old failure").unwrap();
        let b = FileRendezvous::open(&id, 2, 3);
        let a = FileRendezvous::open(&id, 0, 3);
        assert!(!id.exists());
        assert_eq!(a.failure(), None);
        // Waiting without rank 0's file: the deadline, named.
        let e = b
            .receive(Duration::from_millis(120))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no id file") && e.contains("0.12 s"), "{e}");
        a.share(b"payload").unwrap();
        assert_eq!(b.receive(Duration::from_secs(1)).unwrap(), b"payload");
        a.joined();
        assert!(!id.exists(), "rank 0 removes the file once all have joined");
        b.fail("no GPU 2\n");
        assert_eq!(a.failure().unwrap(), "rank 2 failed: no GPU 2");
        assert_eq!(b.failure(), None, "a rank's own marker is not a peer's");
        // A marker from before this run (by more than the skew allowance) is an earlier run's.
        let mut later = a.clone();
        later.started = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(later.failure(), None);
        // A peer's failure ends a wait for the file at once.
        let c = FileRendezvous::open(&id, 1, 3);
        let t = Instant::now();
        let e = c.receive(Duration::from_secs(30)).unwrap_err().to_string();
        assert!(e.contains("rank 2 failed: no GPU 2"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "smemkit-file-rendezvous-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
