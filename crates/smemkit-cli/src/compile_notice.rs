//! One line on stderr when the GPU kernels take more than about a second to build: a first call
//! compiles them (once per machine and sample type), and without a word it would look hung.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Watches the library's compilations from its start to its drop.
pub struct Watch {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    pub fn start() -> Watch {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
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
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
