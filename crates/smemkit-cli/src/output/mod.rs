//! What `hist` produces: the summary and terminal chart on stdout, and files (`--out`, `--plot`).
//! Files are written to a partial file in the target's folder and renamed into place, so a
//! reader never sees a half-written histogram and a failure (or SIGINT/SIGTERM) leaves nothing
//! behind; no output may be one of the inputs.

pub mod chart;
pub mod csv;
pub mod heatmap;
pub mod identity;
pub mod joint;
pub mod json;
pub mod npy;
pub mod partial;
pub mod plot;
pub mod slices;
pub mod summary;

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::histogram::Histogram;

use partial::Partial;

/// `--out` formats, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutFormat {
    Csv,
    Json,
    Npy,
}

impl OutFormat {
    pub fn of(path: &Path) -> Result<OutFormat> {
        match extension(path).as_deref() {
            Some("csv") => Ok(OutFormat::Csv),
            Some("json") => Ok(OutFormat::Json),
            Some("npy") => Ok(OutFormat::Npy),
            _ => bail!(
                "--out {}: unknown output extension (use .csv, .json or .npy)",
                path.display()
            ),
        }
    }
}

/// `--plot` formats, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotFormat {
    Png,
    Svg,
}

impl PlotFormat {
    pub fn of(path: &Path) -> Result<PlotFormat> {
        match extension(path).as_deref() {
            Some("png") => Ok(PlotFormat::Png),
            Some("svg") => Ok(PlotFormat::Svg),
            _ => bail!(
                "--plot {}: unknown plot extension (use .png or .svg)",
                path.display()
            ),
        }
    }
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
}

/// Writes `path` whole or not at all: `write` fills a partial file in the same folder
/// ([`partial::Partial`]), which is then renamed over `path` (a rename within one folder is
/// atomic). A `path` that is one of the command's inputs is refused ([`identity`]).
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    identity::check_output("the output", path)?;
    let tmp = Partial::create(path, "")?;
    {
        let mut w = BufWriter::new(tmp.as_file());
        write(&mut w).with_context(|| format!("cannot write {}", path.display()))?;
        w.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    tmp.persist(path)
}

/// Like [`write_atomic`] for writers that want a path: `write` fills the partial file at the
/// path it is given (which ends with `suffix`), then it is renamed over `path`.
pub fn write_atomic_at_path(
    path: &Path,
    suffix: &str,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    identity::check_output("the output", path)?;
    let tmp = Partial::create(path, suffix)?;
    write(tmp.path()).with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
}

/// Writes the histogram to `path` in `format`.
/// Writes `h` to `path` whole or not at all; the JSON document carries `timing` too.
pub fn write_histogram(
    path: &Path,
    format: OutFormat,
    h: &Histogram,
    timing: &summary::Timing,
) -> Result<()> {
    write_atomic(path, |w| match format {
        OutFormat::Csv => csv::write(w, h),
        OutFormat::Json => json::write(w, h, Some(timing)),
        OutFormat::Npy => npy::write(w, h),
    })
}
