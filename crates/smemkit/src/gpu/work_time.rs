//! The time GPU calls spent copying samples and results and running kernels, summed over the
//! process like [`super::setup_time`]: a caller reads it before and after a call and reports the
//! difference, so that a summary can split a call into setup, transfer and kernel time. Engines
//! whose copies overlap their kernels (the streaming pipeline) add nothing here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static TRANSFER_NANOS: AtomicU64 = AtomicU64::new(0);
static KERNEL_NANOS: AtomicU64 = AtomicU64::new(0);

/// Copy and kernel time so far in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkTime {
    /// Host to device and back.
    pub transfer: Duration,
    pub kernel: Duration,
}

impl WorkTime {
    /// The time from `earlier` to `self`.
    pub fn since(self, earlier: WorkTime) -> WorkTime {
        WorkTime {
            transfer: self.transfer.saturating_sub(earlier.transfer),
            kernel: self.kernel.saturating_sub(earlier.kernel),
        }
    }
}

/// The process's sums so far.
pub fn work_time() -> WorkTime {
    WorkTime {
        transfer: Duration::from_nanos(TRANSFER_NANOS.load(Ordering::Relaxed)),
        kernel: Duration::from_nanos(KERNEL_NANOS.load(Ordering::Relaxed)),
    }
}

fn add(counter: &AtomicU64, d: Duration) {
    counter.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// Adds a copy's time (and traces it as `phase`).
pub(crate) fn add_transfer(phase: &'static str, d: Duration) {
    add(&TRANSFER_NANOS, d);
    super::trace::record(phase, d);
}

/// Adds kernels' time (and traces it).
pub(crate) fn add_kernel(d: Duration) {
    add(&KERNEL_NANOS, d);
    super::trace::record("kernels", d);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_the_difference_and_never_negative() {
        let a = WorkTime {
            transfer: Duration::from_millis(3),
            kernel: Duration::from_millis(1),
        };
        let b = WorkTime {
            transfer: Duration::from_millis(5),
            kernel: Duration::from_millis(4),
        };
        let d = b.since(a);
        assert_eq!(d.transfer, Duration::from_millis(2));
        assert_eq!(d.kernel, Duration::from_millis(3));
        assert_eq!(a.since(b), WorkTime::default());
    }
}
