//! One line on stderr when the GPU kernels take more than about a second to build: a first call
//! compiles them (once per machine and sample type), and without a word it would look hung.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Watches the library's compilations from its start to its drop.
pub struct Watch {
    /// Dropped to end the watch: the thread's wait returns at once (a sleep would hold the drop,
    /// and so every call, for up to one polling period).
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// How often the watch asks whether a compilation runs.
const POLL: Duration = Duration::from_millis(50);

impl Watch {
    pub fn start() -> Watch {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(POLL) {
                if start.elapsed() >= Duration::from_secs(1)
                    && smemkit::internals::gpu::compile::compiling_now()
                {
                    let place = smemkit::internals::gpu::compile::disk_cache_dir()
                        .map(|d| format!("cached in {}", d.display()))
                        .unwrap_or_else(|| "not cached: set SMEMKIT_CACHE_DIR".into());
                    eprintln!("compiling the GPU kernels for this machine, once ({place})");
                    return;
                }
            }
        });
        Watch {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ending_a_watch_does_not_wait_for_its_polling_period() {
        // Five watches ended at once: a drop that waited out the thread's sleep would take a
        // polling period each (250 ms in all); room is left for a busy machine's scheduling.
        let mut waited = Duration::ZERO;
        for _ in 0..5 {
            let w = Watch::start();
            let t = Instant::now();
            drop(w);
            waited += t.elapsed();
        }
        assert!(waited < 2 * POLL, "{waited:?}");
    }
}
