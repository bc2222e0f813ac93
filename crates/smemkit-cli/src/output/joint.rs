//! What `hist2d` and `histdd` write: `.npy` (the D-dimensional counts, or the density when asked
//! for), `.csv` (one row per non-zero bin with its edges on every axis) and `.json` (everything),
//! each written whole or not at all ([`super::write_atomic`]); and the summary on stdout.

use std::io::Write;

use anyhow::Result;
use npyz::WriterBuilder;
use serde::Serialize;
use smemkit::{histogram::Counts, histogramdd::JointHistogram};

use super::json::{backend_name, Floats};
use super::summary::thousands;
use super::OutFormat;

/// Writes `h` to `path` in `format`; `names` name the axes (JSON only).
pub fn write(
    path: &std::path::Path,
    format: OutFormat,
    h: &JointHistogram,
    names: &[String],
) -> Result<()> {
    super::write_atomic(path, |w| match format {
        OutFormat::Npy => npy(w, h),
        OutFormat::Csv => csv(w, h),
        OutFormat::Json => json(w, h, names),
    })
}

/// The counts as an array of the histogram's shape (C order): u64 counts, f64 sums of weights,
/// or f64 densities (what numpy.histogramdd returns with `density=True`).
fn npy(w: &mut dyn Write, h: &JointHistogram) -> Result<()> {
    let shape: Vec<u64> = h.shape.iter().map(|&n| n as u64).collect();
    fn floats(w: &mut dyn Write, shape: &[u64], v: &[f64]) -> Result<()> {
        let mut out = npyz::WriteOptions::<f64>::new()
            .default_dtype()
            .shape(shape)
            .writer(w)
            .begin_nd()?;
        out.extend(v.iter().copied())?;
        out.finish()?;
        Ok(())
    }
    match (&h.density, &h.counts) {
        (Some(d), _) => floats(w, &shape, d),
        (None, Counts::Weighted(c)) => floats(w, &shape, c),
        // histogramdd's sums are float64 whatever the weights (numpy's bincount).
        (None, Counts::Integer { sums, .. }) => {
            let c: Vec<f64> = sums.iter().map(|&s| s as f64).collect();
            floats(w, &shape, &c)
        }
        (None, Counts::Unweighted(c)) => {
            let mut out = npyz::WriteOptions::<u64>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .begin_nd()?;
            out.extend(c.iter().copied())?;
            out.finish()?;
            Ok(())
        }
    }
}

/// The multi-index of flat (C order) bin `flat`.
fn multi_index(flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut rest = flat;
    let mut index = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        index[d] = rest % n;
        rest /= n;
    }
    index
}

/// Columns `bin0,left0,right0,bin1,...,count` (and `density`), one row per bin whose count (or
/// sum of weights) is not zero, in C order; floats in Rust's shortest form that reads back exactly.
fn csv(w: &mut dyn Write, h: &JointHistogram) -> Result<()> {
    let mut header: Vec<String> = (0..h.shape.len())
        .flat_map(|j| [format!("bin{j}"), format!("left{j}"), format!("right{j}")])
        .collect();
    header.push("count".into());
    if h.density.is_some() {
        header.push("density".into());
    }
    writeln!(w, "{}", header.join(","))?;
    for flat in 0..h.counts.len() {
        let value = match &h.counts {
            Counts::Unweighted(c) if c[flat] == 0 => continue,
            Counts::Unweighted(c) => c[flat].to_string(),
            Counts::Weighted(c) if c[flat] == 0.0 => continue,
            Counts::Weighted(c) => c[flat].to_string(),
            Counts::Integer { sums, .. } if sums[flat] == 0 => continue,
            Counts::Integer { sums, .. } => sums[flat].to_string(),
        };
        for (j, i) in multi_index(flat, &h.shape).into_iter().enumerate() {
            write!(w, "{i},{},{},", h.edges[j][i], h.edges[j][i + 1])?;
        }
        match &h.density {
            Some(d) => writeln!(w, "{value},{}", d[flat])?,
            None => writeln!(w, "{value}")?,
        }
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(untagged)]
enum JsonCounts<'a> {
    Unweighted(&'a [u64]),
    Weighted(Floats<'a>),
    Integer(&'a [i64]),
}

#[derive(Serialize)]
struct Tallies {
    outside: u64,
    nan: u64,
}

#[derive(Serialize)]
struct Document<'a> {
    shape: &'a [usize],
    axes: &'a [String],
    /// Flat, in C order (the last axis fastest).
    counts: JsonCounts<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    density: Option<Floats<'a>>,
    edges: Vec<Floats<'a>>,
    tallies: Tallies,
    samples: u64,
    counted: u64,
    weighted: bool,
    backend: &'static str,
    engine: &'a str,
}

fn json(w: &mut dyn Write, h: &JointHistogram, names: &[String]) -> Result<()> {
    let doc = Document {
        shape: &h.shape,
        axes: names,
        counts: match &h.counts {
            Counts::Unweighted(c) => JsonCounts::Unweighted(c),
            Counts::Weighted(c) => JsonCounts::Weighted(Floats(c)),
            Counts::Integer { sums, .. } => JsonCounts::Integer(sums),
        },
        density: h.density.as_deref().map(Floats),
        edges: h.edges.iter().map(|e| Floats(e)).collect(),
        tallies: Tallies {
            outside: h.tallies.outside,
            nan: h.tallies.nan,
        },
        samples: h.samples,
        counted: h.counted(),
        weighted: !matches!(h.counts, Counts::Unweighted(_)),
        backend: backend_name(h.engine.backend),
        engine: &h.engine.detail,
    };
    serde_json::to_writer(&mut *w, &doc)?;
    writeln!(w)?;
    Ok(())
}

/// The summary printed after a joint histogram.
pub struct Facts<'a> {
    pub what: &'a str,
    pub dtype: &'a str,
    pub bytes: usize,
    pub read_time: std::time::Duration,
    pub names: &'a [String],
}

pub fn summary(w: &mut dyn Write, h: &JointHistogram, f: &Facts<'_>) -> Result<()> {
    let secs = h.elapsed.as_secs_f64();
    writeln!(w, "input       {}", f.what)?;
    writeln!(
        w,
        "samples     {} of {} axes, {} ({:.1} MB)",
        thousands(h.samples),
        h.shape.len(),
        f.dtype,
        f.bytes as f64 / 1e6
    )?;
    let shape: Vec<String> = h.shape.iter().map(usize::to_string).collect();
    writeln!(
        w,
        "bins        {} = {} joint bins",
        shape.join(" x "),
        thousands(h.counts.len() as u64)
    )?;
    for (j, e) in h.edges.iter().enumerate() {
        let name = f.names.get(j).map_or(String::new(), |n| format!(" ({n})"));
        writeln!(
            w,
            "axis {j}      {} bins over [{}, {}]{name}",
            e.len() - 1,
            e[0],
            e[e.len() - 1]
        )?;
    }
    writeln!(w, "counted     {}", thousands(h.counted()))?;
    writeln!(w, "outside     {}", thousands(h.tallies.outside))?;
    writeln!(w, "NaN         {}", thousands(h.tallies.nan))?;
    if let Counts::Weighted(c) = &h.counts {
        writeln!(w, "weight sum  {}", c.iter().sum::<f64>())?;
    }
    writeln!(
        w,
        "backend     {} ({})",
        backend_name(h.engine.backend),
        h.engine.detail
    )?;
    writeln!(w, "read        {:.1} ms", f.read_time.as_secs_f64() * 1e3)?;
    writeln!(w, "time        {:.3} ms", secs * 1e3)?;
    if secs > 0.0 {
        writeln!(
            w,
            "throughput  {:.2} GB/s of samples",
            f.bytes as f64 / secs / 1e9
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::multi_index;

    #[test]
    fn multi_index_is_c_order() {
        assert_eq!(multi_index(0, &[2, 3]), vec![0, 0]);
        assert_eq!(multi_index(5, &[2, 3]), vec![1, 2]);
        assert_eq!(multi_index(7, &[2, 2, 2]), vec![1, 1, 1]);
        assert_eq!(multi_index(2, &[2, 2, 2]), vec![0, 1, 0]);
    }
}
