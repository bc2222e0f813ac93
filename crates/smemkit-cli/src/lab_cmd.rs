//! `smemkit lab banks`: shared-memory reads at strides 1, 2, 4, ... 32 words, timed on the GPU beside
//! the conflict degree the 32-bank rule predicts. Without a GPU it prints the predictions alone and
//! says so.

use std::io::Write;

use anyhow::{bail, Result};
use clap::Args;
use smemkit::lab::{measure_banks, predicted_degree, STRIDES};

#[derive(Debug, Args)]
pub struct LabArgs {
    /// The experiment: banks.
    pub experiment: String,
}

pub fn run(a: &LabArgs, out: &mut dyn Write) -> Result<()> {
    if a.experiment != "banks" {
        bail!("unknown lab experiment `{}` (expected banks)", a.experiment);
    }
    match measure_banks() {
        Ok(rows) => {
            writeln!(
                out,
                "{:>6} {:>9} {:>10} {:>12} {:>9}",
                "stride", "predicted", "ms", "GB/s", "slowdown"
            )?;
            for r in rows {
                writeln!(
                    out,
                    "{:>6} {:>8}x {:>10.3} {:>12.1} {:>8.2}x",
                    r.stride, r.predicted, r.ms, r.gbps, r.slowdown
                )?;
            }
        }
        Err(e) => {
            writeln!(
                out,
                "no GPU measurement ({e}): the 32-bank rule's predictions only"
            )?;
            writeln!(out, "{:>6} {:>9}", "stride", "predicted")?;
            for s in STRIDES {
                writeln!(out, "{:>6} {:>8}x", s, predicted_degree(s))?;
            }
        }
    }
    Ok(())
}
