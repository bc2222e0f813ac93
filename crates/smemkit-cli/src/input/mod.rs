//! Where samples come from: `.npy`, raw binary, one column of a text file, or a generator. The
//! kind of a file is chosen by its extension, so a typo in a name cannot silently be read as raw
//! bytes: raw input needs `--dtype`.

pub mod data;
pub mod generate;
pub mod npy;
pub mod progress;
pub mod raw;
pub mod shape;
pub mod text;
pub mod weights;

use std::path::Path;

use anyhow::{bail, Context, Result};
use memmap2::Mmap;
use smemkit::{SampleType, Samples};

pub use data::SampleData;
pub use shape::Shape;

/// What was read from a file: the values, their logical shape (weights pair with samples by it),
/// and the header line a text file's summary should name.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<T> {
    pub values: T,
    pub shape: Shape,
    pub header: Option<String>,
}

impl<T> Parsed<T> {
    /// One line for the summary when a header was skipped.
    pub fn note(&self, path: &Path) -> Option<String> {
        self.header
            .as_ref()
            .map(|h| format!("{}: skipped the header line `{h}`", path.display()))
    }
}

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
    crate::sigbus::watch(path);
    // SAFETY: the map is read-only and private to this process. A file truncated by another
    // process while the command runs raises SIGBUS on the lost pages, which `crate::sigbus` turns
    // into one error line naming the file and exit status 1.
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
    /// The array's logical shape (one-dimensional for a raw file).
    pub shape: Shape,
}

/// The [`DirectFile`] at `path`, found from its size or its `.npy` header alone (no data is read).
/// `None` for text and big-endian `.npy` files, and for anything the probe cannot read or parse:
/// [`read_file`] then reports it as it always has.
pub fn direct_file(path: &Path, dtype: Option<SampleType>) -> Option<DirectFile> {
    match FileKind::of(path, dtype).ok()? {
        FileKind::Text => None,
        FileKind::Raw => {
            let meta = std::fs::metadata(path).ok()?;
            let ty = dtype?;
            meta.is_file().then(|| DirectFile {
                ty,
                offset: 0,
                len: None,
                bytes: meta.len(),
                shape: Shape::flat(usize::try_from(meta.len()).unwrap_or(usize::MAX) / ty.size()),
            })
        }
        FileKind::Npy => {
            let l = npy::read_layout(path).ok()?;
            (l.little_endian == cfg!(target_endian = "little")).then(|| DirectFile {
                ty: l.ty,
                offset: l.data_start as u64,
                len: Some(l.len),
                bytes: (l.len * l.ty.size()) as u64,
                shape: l.shape.clone(),
            })
        }
    }
}

/// Reads samples from `path` (with the header line a text file's summary should name).
pub fn read_file(
    path: &Path,
    dtype: Option<SampleType>,
    column: Option<&str>,
) -> Result<Parsed<SampleData>> {
    let read = match FileKind::of(path, dtype)? {
        FileKind::Npy => npy::read(path)?,
        FileKind::Text => {
            let t = text::read(path, &text::Column::parse(column), dtype)?;
            Parsed {
                values: SampleData::Owned(t.values),
                shape: t.shape,
                header: t.header,
            }
        }
        FileKind::Raw => {
            let values = raw::read(path, dtype.context("raw input needs --dtype")?)?;
            Parsed {
                shape: Shape::flat(values.samples().len()),
                values,
                header: None,
            }
        }
    };
    if read.values.samples().is_empty() {
        bail!("{} holds no samples (empty input)", path.display());
    }
    Ok(read)
}

/// Reads a file of numbers (`.npy` or text) as f64: bin edges.
pub fn read_numbers(path: &Path) -> Result<Parsed<Vec<f64>>> {
    match FileKind::of(path, None) {
        Ok(FileKind::Npy) => npy::read_f64(path),
        _ => text::read_f64(path),
    }
}

/// Samples as f64, for edges and weights read from files of any numeric type.
pub fn to_f64(samples: Samples<'_>) -> Vec<f64> {
    smemkit::with_samples!(samples, s => s.iter().map(|&x| smemkit::Sample::to_f64(x)).collect())
}
