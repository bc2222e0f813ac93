//! The text summary printed after a histogram: what was counted, what was not, and how fast.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use smemkit::histogram::{Counts, Histogram};

/// Facts about the input the library does not know.
pub struct InputFacts<'a> {
    pub what: String,
    pub dtype: &'a str,
    pub bytes: usize,
    pub read_time: Duration,
    /// GPU setup before the histogram call (the context opened to decide how the input is read),
    /// counted into the call's time; the call's own setup is in [`Histogram::phases`].
    pub setup_before: Duration,
    pub bins: String,
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The split of a call's time and its rates, as numbers (the JSON output's `timing`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Timing {
    /// The whole call: the histogram's time and the setup paid before it.
    pub total_ms: f64,
    /// Context, kernels compiled or loaded.
    pub setup_ms: f64,
    /// Host to device and back, and the kernels: 0 on the CPU; `None` on a GPU path that does not
    /// time them apart (streamed copies overlapping the kernels, several GPUs or ranks).
    pub transfer_ms: Option<f64>,
    pub kernel_ms: Option<f64>,
    /// What is left: allocations, planning, host work (and the copies and kernels not timed
    /// apart).
    pub other_ms: f64,
    /// GB/s of samples over the whole call, and in the kernels alone (`None` without kernel time).
    pub call_gbps: Option<f64>,
    pub kernel_gbps: Option<f64>,
}

impl Timing {
    pub fn of(h: &Histogram, bytes: usize, setup_before: Duration) -> Timing {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let total_ms = ms(h.elapsed + setup_before);
        let setup_ms = ms(h.phases.setup + setup_before).min(total_ms);
        let (transfer, kernel) = (ms(h.phases.transfer), ms(h.phases.kernel));
        let on_gpu = h.engine.backend == smemkit::Backend::Cuda;
        let split = !on_gpu || transfer + kernel > 0.0;
        let other_ms = (total_ms - setup_ms - transfer - kernel).max(0.0);
        let gbps = |ms: f64| (ms > 0.0).then(|| bytes as f64 / (ms * 1e-3) / 1e9);
        Timing {
            total_ms,
            setup_ms,
            transfer_ms: split.then_some(transfer),
            kernel_ms: split.then_some(kernel),
            other_ms,
            call_gbps: gbps(total_ms),
            kernel_gbps: gbps(kernel),
        }
    }
}

/// The summary's `time` and `throughput` lines.
fn timing_lines(h: &Histogram, input: &InputFacts<'_>) -> Vec<String> {
    let t = Timing::of(h, input.bytes, input.setup_before);
    let mut lines = Vec::new();
    let setup = format!(
        "time        {:.3} ms: GPU setup {:.3} ms (context, kernels compiled or loaded)",
        t.total_ms, t.setup_ms
    );
    match (t.transfer_ms, t.kernel_ms) {
        (Some(x), Some(k)) if t.setup_ms + x + k > 0.0 => lines.push(format!(
            "{setup}, transfer {x:.3} ms, kernels {k:.3} ms, other {:.3} ms",
            t.other_ms
        )),
        (None, _) | (_, None) => lines.push(format!(
            "{setup}, copies and kernels (overlapped, not timed apart) {:.3} ms",
            t.other_ms
        )),
        _ => lines.push(format!("time        {:.3} ms", t.total_ms)),
    }
    match (t.call_gbps, t.kernel_gbps) {
        (Some(call), Some(kernel)) => lines.push(format!(
            "throughput  {call:.2} GB/s of samples over the whole call, {kernel:.2} GB/s in the kernels"
        )),
        (Some(call), None) => lines.push(format!("throughput  {call:.2} GB/s of samples")),
        _ => {}
    }
    lines
}

pub fn write(w: &mut dyn Write, h: &Histogram, input: &InputFacts<'_>) -> Result<()> {
    writeln!(w, "input       {}", input.what)?;
    writeln!(
        w,
        "samples     {} {} ({:.1} MB)",
        thousands(h.samples),
        input.dtype,
        input.bytes as f64 / 1e6
    )?;
    writeln!(w, "bins        {}", input.bins)?;
    writeln!(w, "counted     {}", thousands(h.counted()))?;
    let clamped = if h.policy == smemkit::bins::OutOfRange::Clamp {
        " (clamped into the end bins)"
    } else {
        ""
    };
    writeln!(w, "below       {}{clamped}", thousands(h.tallies.below))?;
    writeln!(w, "above       {}{clamped}", thousands(h.tallies.above))?;
    writeln!(w, "NaN         {}", thousands(h.tallies.nan))?;
    match &h.counts {
        Counts::Weighted(c) => writeln!(w, "weight sum  {}", c.iter().sum::<f64>())?,
        Counts::Integer { sums, dtype } => writeln!(
            w,
            "weight sum  {} (sums of {dtype} weights, each bin's in {dtype})",
            sums.iter().map(|&s| s as i128).sum::<i128>()
        )?,
        Counts::Unweighted(_) => {}
    }
    writeln!(
        w,
        "backend     {} ({})",
        super::json::backend_name(h.engine.backend),
        h.engine.detail
    )?;
    if let Some(why) = &h.auto_choice {
        writeln!(w, "auto        {why}")?;
    }
    writeln!(
        w,
        "read        {:.1} ms",
        input.read_time.as_secs_f64() * 1e3
    )?;
    for line in timing_lines(h, input) {
        writeln!(w, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use smemkit::internals::histogram::{EngineReport, Phases};
    use smemkit::{bins::OutOfRange, histogram::Tallies, Backend};

    fn histogram(elapsed_ms: u64, phases: Phases) -> Histogram {
        Histogram {
            counts: Counts::Unweighted(vec![3, 1]),
            edges: vec![0.0, 1.0, 2.0],
            tallies: Tallies::default(),
            samples: 4,
            policy: OutOfRange::Ignore,
            engine: EngineReport {
                backend: Backend::Cuda,
                detail: "test".into(),
            },
            elapsed: Duration::from_millis(elapsed_ms),
            density: None,
            phases,
            auto_choice: Some("auto picked the GPU: estimated CPU 2.0 ms > GPU 1.0 ms".into()),
            part: None,
        }
    }

    fn facts(setup_before_ms: u64) -> InputFacts<'static> {
        InputFacts {
            what: "x.npy".into(),
            dtype: "int32",
            bytes: 1_000_000_000,
            read_time: Duration::ZERO,
            setup_before: Duration::from_millis(setup_before_ms),
            bins: "2 integer bins".into(),
        }
    }

    #[test]
    fn a_gpu_call_is_split_into_setup_transfer_kernels_and_the_rest() {
        let phases = Phases {
            setup: Duration::from_millis(20),
            transfer: Duration::from_millis(100),
            kernel: Duration::from_millis(10),
        };
        // 150 ms in the call and 100 ms of context opened before it.
        let h = histogram(150, phases);
        let t = Timing::of(&h, 1_000_000_000, Duration::from_millis(100));
        assert_eq!(t.total_ms, 250.0);
        assert_eq!(t.setup_ms, 120.0);
        assert_eq!((t.transfer_ms, t.kernel_ms), (Some(100.0), Some(10.0)));
        assert!((t.other_ms - 20.0).abs() < 1e-9, "{t:?}");
        assert_eq!(t.call_gbps, Some(4.0));
        assert_eq!(t.kernel_gbps, Some(100.0));
        let mut out = Vec::new();
        write(&mut out, &h, &facts(100)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("auto        auto picked the GPU: estimated CPU 2.0 ms > GPU 1.0 ms\n"),
            "{text}"
        );
        assert!(text.contains("time        250.000 ms: GPU setup 120.000 ms (context, kernels compiled or loaded), transfer 100.000 ms, kernels 10.000 ms, other 20.000 ms\n"), "{text}");
        assert!(text.contains("throughput  4.00 GB/s of samples over the whole call, 100.00 GB/s in the kernels\n"), "{text}");
    }

    #[test]
    fn a_cpu_call_shows_its_time_and_one_rate() {
        let mut h = histogram(500, Phases::default());
        h.auto_choice = None;
        h.engine.backend = Backend::Cpu;
        let mut out = Vec::new();
        write(&mut out, &h, &facts(0)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("time        500.000 ms\n"), "{text}");
        assert!(
            text.contains("throughput  2.00 GB/s of samples\n"),
            "{text}"
        );
        assert!(!text.contains("auto "), "{text}");
        let t = Timing::of(&h, 1_000_000_000, Duration::ZERO);
        assert_eq!(
            (t.setup_ms, t.kernel_ms, t.kernel_gbps),
            (0.0, Some(0.0), None)
        );
    }

    #[test]
    fn a_streamed_gpu_call_says_its_copies_and_kernels_were_not_timed_apart() {
        let phases = Phases {
            setup: Duration::from_millis(30),
            ..Phases::default()
        };
        let h = histogram(100, phases);
        let t = Timing::of(&h, 1_000_000_000, Duration::ZERO);
        assert_eq!(
            (t.transfer_ms, t.kernel_ms, t.kernel_gbps),
            (None, None, None)
        );
        let mut out = Vec::new();
        write(&mut out, &h, &facts(0)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("time        100.000 ms: GPU setup 30.000 ms (context, kernels compiled or loaded), copies and kernels (overlapped, not timed apart) 70.000 ms\n"), "{text}");
        assert!(
            text.contains("throughput  10.00 GB/s of samples\n"),
            "{text}"
        );
    }
}
