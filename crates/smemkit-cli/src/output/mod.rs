//! What `hist` produces: the summary and terminal chart on stdout, and files (`--out`, `--plot`).
//! Files are written to a temporary file in the target's folder and renamed into place, so a
//! reader never sees a half-written histogram and a failure leaves nothing behind.

pub mod chart;
pub mod csv;
pub mod json;
pub mod npy;
pub mod plot;
pub mod summary;

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::Histogram;

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

/// Writes `path` whole or not at all: `write` fills a temporary file in the same folder, which is
/// then renamed over `path` (a rename within one folder is atomic).
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::NamedTempFile::new_in(folder)
        .with_context(|| format!("cannot create a file in {}", folder.display()))?;
    {
        let mut w = BufWriter::new(tmp.as_file());
        write(&mut w).with_context(|| format!("cannot write {}", path.display()))?;
        w.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Like [`write_atomic`] for writers that want a path: `write` fills the temporary file at the
/// path it is given (which ends with `suffix`), then it is renamed over `path`.
pub fn write_atomic_at_path(
    path: &Path,
    suffix: &str,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .suffix(suffix)
        .tempfile_in(folder)
        .with_context(|| format!("cannot create a file in {}", folder.display()))?;
    write(tmp.path()).with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Writes the histogram to `path` in `format`.
pub fn write_histogram(path: &Path, format: OutFormat, h: &Histogram) -> Result<()> {
    write_atomic(path, |w| match format {
        OutFormat::Csv => csv::write(w, h),
        OutFormat::Json => json::write(w, h),
        OutFormat::Npy => npy::write(w, h),
    })
}
