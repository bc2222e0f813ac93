//! How much memory this process can still take, so every size the user controls (bins, sample
//! counts, benchmark sizes, matrix shapes, array headers) is checked before it is allocated, with
//! an error naming the size and the limit, instead of dying of a failed allocation.
//!
//! The limit is the smallest of: this machine's memory and swap (`/proc/meminfo`), the
//! address-space limit (`ulimit -v`, RLIMIT_AS) less the address space already in use, and the
//! data-segment limit (RLIMIT_DATA) less the data already in use. Allocations the checks do not
//! foresee are caught by [`crate::oom`].

use std::fmt::Display;

use anyhow::{bail, Result};

/// Bytes this process may still allocate, and what sets that limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimit {
    pub bytes: u64,
    pub what: &'static str,
}

/// A `kB` field of a `/proc` file, in bytes.
fn proc_kb(file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// The soft limit of `resource`, or `None` when unlimited.
fn rlimit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we own.
    let ok = unsafe { libc::getrlimit(resource, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// What this process may still allocate now.
pub fn host() -> HostLimit {
    let mut limit = HostLimit {
        bytes: u64::MAX,
        what: "no known limit",
    };
    let mut consider = |bytes: Option<u64>, what: &'static str| {
        if let Some(b) = bytes {
            if b < limit.bytes {
                limit = HostLimit { bytes: b, what };
            }
        }
    };
    let memory = proc_kb("/proc/meminfo", "MemTotal:")
        .map(|m| m.saturating_add(proc_kb("/proc/meminfo", "SwapTotal:").unwrap_or(0)));
    consider(memory, "this machine's memory and swap");
    let used = |field| proc_kb("/proc/self/status", field).unwrap_or(0);
    consider(
        rlimit(libc::RLIMIT_AS).map(|l| l.saturating_sub(used("VmSize:"))),
        "the address-space limit (ulimit -v) less what this process already uses",
    );
    consider(
        rlimit(libc::RLIMIT_DATA).map(|l| l.saturating_sub(used("VmData:"))),
        "the data-segment limit (ulimit -d) less what this process already uses",
    );
    limit
}

/// `bytes` in the largest decimal unit that keeps it readable (`34.4 GB`).
pub fn human(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["bytes", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Refuses `bytes` (what `what` needs) when more than [`host`] allows.
pub fn check(what: impl Display, bytes: u128) -> Result<()> {
    check_against(what, bytes, host())
}

pub fn check_against(what: impl Display, bytes: u128, limit: HostLimit) -> Result<()> {
    if bytes > limit.bytes as u128 {
        bail!(
            "{what} needs {bytes} bytes ({}) of host memory, more than {} allows ({} bytes, {})",
            human(bytes),
            limit.what,
            limit.bytes,
            human(limit.bytes as u128)
        );
    }
    Ok(())
}

/// Host bytes a histogram of `nbins` bins holds at least: the result's counts and edges and the
/// engine's own counters (8 bytes each).
pub fn histogram_bytes(nbins: u128) -> u128 {
    nbins.saturating_add(3).saturating_mul(24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_above_the_limit_are_refused_with_both_named() {
        let limit = HostLimit {
            bytes: 8_000_000_000,
            what: "the test's limit",
        };
        assert!(check_against("x", 8_000_000_000, limit).is_ok());
        let e = check_against("--count 10", 8_000_000_001, limit)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--count 10 needs 8000000001 bytes (8.0 GB)"),
            "{e}"
        );
        assert!(
            e.contains("the test's limit allows (8000000000 bytes"),
            "{e}"
        );
        assert_eq!(human(999), "999 bytes");
        assert!(human(u128::MAX).ends_with(" EB"));
        assert_eq!(human(34_359_738_400), "34.4 GB");
    }

    #[test]
    fn the_host_limit_is_below_the_machine_and_known_on_linux() {
        let l = host();
        assert!(l.bytes < u64::MAX, "{l:?}");
        assert!(l.bytes > 0);
    }
}
