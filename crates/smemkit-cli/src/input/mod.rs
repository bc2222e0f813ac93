//! Where samples come from: `.npy`, raw binary, one column of a text file, or a generator. The
//! kind of a file is chosen by its extension (a name without a known one: `.npy` by its magic,
//! else raw with `--dtype`), so a typo in a name cannot silently be read as raw bytes. Pipes and
//! standard input are read as they stream ([`stream`]).

pub mod data;
pub mod edges;
pub mod generate;
pub mod npy;
pub mod progress;
#[cfg(test)]
mod proptests;
pub mod raw;
pub mod shape;
pub mod stream;
pub mod text;
pub mod weights;

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use memmap2::Mmap;
use smemkit::sample::{SampleType, Samples};

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
    /// The kind of the regular file at `path`: by its extension; a name without a known one is a
    /// `.npy` when its first bytes are the magic, else raw when `dtype` is given. `flag` names the dtype flag in messages (`--dtype`,
    /// `--weights-dtype`).
    pub fn of(path: &Path, dtype: Option<SampleType>, flag: &str) -> Result<FileKind> {
        if let Some(kind) = Self::by_extension(path) {
            return Ok(kind);
        }
        let mut head = Vec::new();
        if let Ok(file) = std::fs::File::open(path) {
            // Unreadable files are reported by whoever reads them.
            let _ = file.take(npy::MAGIC.len() as u64).read_to_end(&mut head);
        }
        Self::resolve(path, &head, dtype, false, false, flag)
    }

    fn by_extension(path: &Path) -> Option<FileKind> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("npy") => Some(FileKind::Npy),
            Some("csv" | "tsv" | "txt") => Some(FileKind::Text),
            _ => None,
        }
    }

    /// The kind of `path`, whose first bytes are `head`: by the extension, the `.npy` magic, then
    /// for a stream a chosen column (text), then a dtype (raw), then for a stream (which has no
    /// other way to say) text. A regular file's name says whether it is text.
    pub fn resolve(
        path: &Path,
        head: &[u8],
        dtype: Option<SampleType>,
        column: bool,
        stream: bool,
        flag: &str,
    ) -> Result<FileKind> {
        if let Some(kind) = Self::by_extension(path) {
            return Ok(kind);
        }
        if head.starts_with(npy::MAGIC) {
            return Ok(FileKind::Npy);
        }
        if column && stream {
            return Ok(FileKind::Text);
        }
        if dtype.is_some() {
            return Ok(FileKind::Raw);
        }
        if stream {
            return Ok(FileKind::Text);
        }
        match path.extension() {
            Some(e) => bail!(
                "unknown input extension `.{}` of {}: use .npy, .csv, .tsv or .txt, or pass {flag} to read raw binary",
                e.to_string_lossy(),
                path.display()
            ),
            None => bail!(
                "{} has no extension: pass {flag} to read it as raw binary",
                path.display()
            ),
        }
    }

    /// Refuses the flags that mean nothing for this kind of input, rather than ignoring them:
    /// a dtype for a `.npy` (its header gives it), a column for anything but text.
    pub fn check_flags(
        self,
        path: &Path,
        dtype: Option<SampleType>,
        dtype_flag: &str,
        column: Option<&str>,
    ) -> Result<()> {
        let name = stream::name(path);
        if self == FileKind::Npy && dtype.is_some() {
            bail!("{dtype_flag} does not apply to {name}: it is a .npy file, whose header gives the type");
        }
        if let (Some(c), false) = (column, self == FileKind::Text) {
            let what = if self == FileKind::Npy {
                "a .npy file"
            } else {
                "raw binary"
            };
            bail!(
                "--column {c} does not apply to {name}: it is {what}, not a text file of columns"
            );
        }
        Ok(())
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
/// stream to the GPU straight from the file ([`smemkit::histogram::FileInput`]).
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
    if stream::is_stream(path) {
        return None;
    }
    let direct = direct_file_of_any_type(path, dtype)?;
    // 16-bit floats stay on the mapped path (the file streaming path has not run with them on
    // a GPU yet); the CUDA engine takes them from there.
    (!matches!(direct.ty, SampleType::F16 | SampleType::BF16)).then_some(direct)
}

fn direct_file_of_any_type(path: &Path, dtype: Option<SampleType>) -> Option<DirectFile> {
    match FileKind::of(path, dtype, "--dtype").ok()? {
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
            // Bool data is read through the map, where its bytes are checked.
            (l.little_endian == cfg!(target_endian = "little") && !l.bool_data).then(|| {
                DirectFile {
                    ty: l.ty,
                    offset: l.data_start as u64,
                    len: Some(l.len),
                    bytes: (l.len * l.ty.size()) as u64,
                    shape: l.shape.clone(),
                }
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
    if stream::is_stream(path) {
        let (kind, reader) = stream::open(path, dtype, column.is_some(), "--dtype")?;
        kind.check_flags(path, dtype, "--dtype", column)?;
        // Empty: numpy's zero counts, as for files.
        return stream::read_samples(kind, reader, path, dtype, column);
    }
    let kind = FileKind::of(path, dtype, "--dtype")?;
    kind.check_flags(path, dtype, "--dtype", column)?;
    let read = match kind {
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
    // An empty input is numpy's zero counts (the library handles it), not an error.
    Ok(read)
}

/// Samples as f64, for edges and weights read from files of any numeric type.
pub fn to_f64(samples: Samples<'_>) -> Vec<f64> {
    smemkit::sample::with_samples!(samples, s => s.iter().map(|&x| smemkit::sample::Sample::to_f64(x)).collect())
}
