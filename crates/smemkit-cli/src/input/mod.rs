//! Where samples come from: `.npy`, raw binary, one column of a text file, or a generator. The
//! kind of a file is chosen by its extension, so a typo in a name cannot silently be read as raw
//! bytes: raw input needs `--dtype`.

pub mod data;
pub mod edges;
pub mod generate;
pub mod npy;
pub mod progress;
pub mod raw;
pub mod text;
pub mod weights;

use std::path::Path;

use anyhow::{bail, Context, Result};
use memmap2::Mmap;
use smemkit::{SampleType, Samples};

pub use data::SampleData;

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Npy,
    Text,
    Raw,
}

impl FileKind {
    /// The kind the extension names; files with any other extension are raw and need a dtype.
    pub fn of(path: &Path, dtype: Option<SampleType>) -> Result<FileKind> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("npy") => Ok(FileKind::Npy),
            Some("csv" | "tsv" | "txt") => Ok(FileKind::Text),
            _ if dtype.is_some() => Ok(FileKind::Raw),
            Some(e) => bail!(
                "unknown input extension `.{e}` of {}: use .npy, .csv, .tsv or .txt, or pass --dtype to read raw binary",
                path.display()
            ),
            None => bail!("{} has no extension: pass --dtype to read it as raw binary", path.display()),
        }
    }
}

/// Maps a whole file read-only. The map is only read, and the CLI documents that input files
/// must not be modified while it runs. (Raw and native-endian `.npy` files that stream to one GPU
/// are not mapped but read by the library: see [`direct_file`].)
pub fn map_file(path: &Path) -> Result<Mmap> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if meta.is_dir() {
        bail!("cannot read {}: it is a directory", path.display());
    }
    // SAFETY: the map is read-only and private to this process; like every mmap-based reader we
    // rely on the file not being truncated by another process while the command runs.
    unsafe { Mmap::map(&file) }.with_context(|| format!("cannot map {}", path.display()))
}

/// Where the samples of a file lie, when its bytes are the samples as they would lie in memory:
/// a raw file, or a `.npy` file in this machine's byte order (C or Fortran order: a histogram
/// reads both flat, in the order the bytes are stored, as [`npy::read`] does). Such a file can
/// stream to the GPU straight from the file ([`smemkit::FileInput`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DirectFile {
    pub ty: SampleType,
    /// Byte of the first sample.
    pub offset: u64,
    /// Samples the header promises; `None` for a raw file (all its bytes).
    pub len: Option<usize>,
    /// Bytes of samples (of the header's promise, or of the file).
    pub bytes: u64,
}

/// The [`DirectFile`] at `path`, found from its size or its `.npy` header alone (no data is read).
/// `None` for text and big-endian `.npy` files, and for anything the probe cannot read or parse:
/// [`read_file`] then reports it as it always has.
pub fn direct_file(path: &Path, dtype: Option<SampleType>) -> Option<DirectFile> {
    match FileKind::of(path, dtype).ok()? {
        FileKind::Text => None,
        FileKind::Raw => {
            let meta = std::fs::metadata(path).ok()?;
            meta.is_file().then_some(DirectFile {
                ty: dtype?,
                offset: 0,
                len: None,
                bytes: meta.len(),
            })
        }
        FileKind::Npy => {
            let l = npy::read_layout(path).ok()?;
            (l.little_endian == cfg!(target_endian = "little")).then(|| DirectFile {
                ty: l.ty,
                offset: l.data_start as u64,
                len: Some(l.len),
                bytes: (l.len * l.ty.size()) as u64,
            })
        }
    }
}

/// Reads samples from `path`.
pub fn read_file(
    path: &Path,
    dtype: Option<SampleType>,
    column: Option<&str>,
) -> Result<SampleData> {
    let data = match FileKind::of(path, dtype)? {
        FileKind::Npy => npy::read(path)?,
        FileKind::Text => SampleData::Owned(text::read(path, &text::Column::parse(column), dtype)?),
        FileKind::Raw => raw::read(path, dtype.context("raw input needs --dtype")?)?,
    };
    // An empty input is numpy's zero counts (the library handles it), not an error.
    Ok(data)
}

/// Samples as f64, for edges and weights read from files of any numeric type.
pub fn to_f64(samples: Samples<'_>) -> Vec<f64> {
    smemkit::with_samples!(samples, s => s.iter().map(|&x| smemkit::Sample::to_f64(x)).collect())
}
