//! The text summary printed after a histogram: what was counted, what was not, and how fast.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use smemkit::{Counts, Histogram};

/// Facts about the input the library does not know.
pub struct InputFacts<'a> {
    pub what: String,
    pub dtype: &'a str,
    pub bytes: usize,
    pub read_time: Duration,
    /// GPU setup within the histogram's time: context, kernels compiled or loaded (zero on the
    /// CPU, and where an earlier call set the GPU up).
    pub setup: Duration,
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

pub fn write(w: &mut dyn Write, h: &Histogram, input: &InputFacts<'_>) -> Result<()> {
    let secs = h.elapsed.as_secs_f64();
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
    let clamped = if h.policy == smemkit::OutOfRange::Clamp {
        " (clamped into the end bins)"
    } else {
        ""
    };
    writeln!(w, "below       {}{clamped}", thousands(h.tallies.below))?;
    writeln!(w, "above       {}{clamped}", thousands(h.tallies.above))?;
    writeln!(w, "NaN         {}", thousands(h.tallies.nan))?;
    if let Counts::Weighted(c) = &h.counts {
        writeln!(w, "weight sum  {}", c.iter().sum::<f64>())?;
    }
    writeln!(
        w,
        "backend     {} ({})",
        super::json::backend_name(h.engine.backend),
        h.engine.detail
    )?;
    writeln!(
        w,
        "read        {:.1} ms",
        input.read_time.as_secs_f64() * 1e3
    )?;
    let setup = input.setup.as_secs_f64().min(secs);
    if setup > 0.0 {
        writeln!(
            w,
            "time        {:.3} ms: GPU setup {:.3} ms (context, kernels compiled or loaded), transfer and kernels {:.3} ms",
            secs * 1e3,
            setup * 1e3,
            (secs - setup) * 1e3
        )?;
    } else {
        writeln!(w, "time        {:.3} ms", secs * 1e3)?;
    }
    if secs > 0.0 {
        let gbs = |s: f64| input.bytes as f64 / s / 1e9;
        if setup > 0.0 && secs > setup {
            writeln!(
                w,
                "throughput  {:.2} GB/s of samples ({:.2} GB/s without the setup)",
                gbs(secs),
                gbs(secs - setup)
            )?;
        } else {
            writeln!(w, "throughput  {:.2} GB/s of samples", gbs(secs))?;
        }
    }
    Ok(())
}
