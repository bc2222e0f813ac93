//! `--out FILE.csv`: one row per bin with its edges, for spreadsheets and pandas.

use std::io::Write;

use anyhow::Result;
use smemkit::histogram::Histogram;

/// Columns `bin,left,right,count` (and `density` with `--density`); floats in Rust's shortest
/// form that reads back exactly, sums of integer weights as integers.
pub fn write(w: &mut dyn Write, h: &Histogram) -> Result<()> {
    let density = h.density.as_deref();
    writeln!(
        w,
        "bin,left,right,count{}",
        if density.is_some() { ",density" } else { "" }
    )?;
    // A rank's part of bins sharded over ranks numbers its bins as the whole histogram does, so
    // that the parts, concatenated, are the whole.
    let first = h.part.as_ref().map_or(0, |p| p.bins.start);
    for i in 0..h.nbins() {
        let count = match &h.counts {
            smemkit::histogram::Counts::Unweighted(c) => c[i].to_string(),
            smemkit::histogram::Counts::Weighted(c) => c[i].to_string(),
            // numpy prints bool sums as True and False (pandas reads them back as bool).
            smemkit::histogram::Counts::Integer {
                sums,
                dtype: smemkit::sample::IntType::Bool,
            } => if sums[i] != 0 { "True" } else { "False" }.to_string(),
            smemkit::histogram::Counts::Integer { sums, .. } => sums[i].to_string(),
        };
        let d = density.map(|d| format!(",{}", d[i])).unwrap_or_default();
        writeln!(
            w,
            "{},{},{},{count}{d}",
            first + i,
            h.edges[i],
            h.edges[i + 1]
        )?;
    }
    Ok(())
}
