//! An opt-in phase trace (`SMEMKIT_TRACE=1`): one stderr line per phase of a call with its wall
//! milliseconds and when it ended since the trace's epoch, so that a short call's time (a warm
//! CLI call of a quarter second) can be split into driver start, context, kernel loads, copies,
//! kernels and the program's own work without a profiler. Off, a phase costs one relaxed load.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Whether `SMEMKIT_TRACE` asks for the trace (any value but empty or `0`), read once.
pub fn enabled() -> bool {
    crate::config::trace()
}

/// The instant the trace counts from: the first call of [`epoch`] (a program calls it first
/// thing in `main`).
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// One trace line: `phase` took `took`, ending now.
pub fn record(phase: &str, took: Duration) {
    if enabled() {
        eprintln!("{}", line(phase, took, epoch().elapsed()));
    }
}

/// The text of one trace line (kept apart for its test).
fn line(phase: &str, took: Duration, at: Duration) -> String {
    format!(
        "smemkit trace: {:>9.3} ms at +{:.3} ms  {phase}",
        took.as_secs_f64() * 1e3,
        at.as_secs_f64() * 1e3
    )
}

/// Times a phase from now to its drop ([`record`]); nothing when the trace is off.
pub struct Span {
    phase: &'static str,
    start: Instant,
}

/// A [`Span`] for `phase` when the trace is on.
pub fn span(phase: &'static str) -> Option<Span> {
    enabled().then(|| Span {
        phase,
        start: Instant::now(),
    })
}

impl Drop for Span {
    fn drop(&mut self) {
        record(self.phase, self.start.elapsed());
    }
}

/// Milliseconds from the process's start (the kernel's start time in `/proc/self/stat`) to now,
/// at the 10 ms resolution the kernel keeps it in; `None` off Linux or where `/proc` cannot say.
pub fn since_process_start() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    since_start(&stat, &uptime, 100.0)
}

/// [`since_process_start`] from the two files' texts and the clock ticks per second (100 on
/// every Linux this runs on: `USER_HZ`).
fn since_start(stat: &str, uptime: &str, ticks_per_second: f64) -> Option<Duration> {
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 22 (starttime) is the 20th after the name.
    let start_ticks: f64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let up: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    let secs = up - start_ticks / ticks_per_second;
    Some(Duration::from_secs_f64(secs.max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_after_a_command_name_with_spaces() {
        let stat = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 0 0";
        // Field 22 is 12345 ticks = 123.45 s after boot; the uptime is 123.70 s.
        let d = since_start(stat, "123.70 456.00\n", 100.0).unwrap();
        assert!((d.as_secs_f64() - 0.25).abs() < 1e-9, "{d:?}");
        assert_eq!(since_start("no parenthesis", "1.0 1.0", 100.0), None);
        assert_eq!(since_start(stat, "", 100.0), None);
    }

    #[test]
    fn a_line_names_the_phase_with_its_milliseconds() {
        let l = line(
            "module load",
            Duration::from_micros(1500),
            Duration::from_millis(20),
        );
        assert_eq!(l, "smemkit trace:     1.500 ms at +20.000 ms  module load");
    }
}
