//! `--weights FILE`: one weight per sample, in the formats samples take: a `.npy` file (f32 and
//! f64 are kept as they are, integer arrays are converted to f64), raw binary with
//! `--weights-dtype`, or a text file of one number per line; from a regular file or a stream.
//!
//! The weights are read into memory with plain reads, a piece at a time, never mapped: a mapped
//! file that another process truncates while it is read kills the process with SIGBUS, where a read
//! ends short and becomes an error naming the file. Memory that cannot be had is an error too,
//! asked for before reading (`try_reserve`), not an abort.

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use smemkit::sample::{SampleType, Weights};

use super::data::{decode, OwnedSamples};
use super::{npy, shape, stream, text, FileKind, Parsed, Shape};

/// The flag that gives the type of raw weights.
pub const DTYPE_FLAG: &str = "--weights-dtype";

/// Weights held for the duration of the histogram.
#[derive(Debug)]
pub enum WeightData {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl WeightData {
    /// Reads the weights at `path`; `dtype` is the type of raw weights (`--weights-dtype`).
    pub fn read(path: &Path, dtype: Option<SampleType>) -> Result<Parsed<WeightData>> {
        let (kind, reader): (FileKind, Box<dyn BufRead>) = if stream::is_stream(path) {
            stream::open(path, dtype, false, DTYPE_FLAG)?
        } else {
            let kind = FileKind::of(path, dtype, DTYPE_FLAG)?;
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            (kind, Box::new(BufReader::with_capacity(1 << 20, file)))
        };
        check_flags(kind, path, dtype)?;
        from_reader(kind, reader, path, dtype)
    }

    pub fn weights(&self) -> Weights<'_> {
        match self {
            WeightData::F32(w) => Weights::F32(w),
            WeightData::F64(w) => Weights::F64(w),
        }
    }

    /// The weights of shape `mine` in the storage order of samples of shape `samples`
    /// ([`shape::pair`]: numpy's pairing, by logical index).
    pub fn pair(self, mine: &Shape, samples: &Shape) -> Result<WeightData> {
        Ok(match self {
            WeightData::F32(w) => WeightData::F32(shape::pair(w, mine, samples)?),
            WeightData::F64(w) => WeightData::F64(shape::pair(w, mine, samples)?),
        })
    }

    fn reserve(&mut self, n: usize, path: &Path) -> Result<()> {
        let (r, size) = match self {
            WeightData::F32(v) => (v.try_reserve(n), 4),
            WeightData::F64(v) => (v.try_reserve(n), 8),
        };
        r.map_err(|_| {
            anyhow!(
                "{}: {n} weights ({} bytes) do not fit in memory",
                stream::name(path),
                n.saturating_mul(size)
            )
        })
    }

    fn len(&self) -> usize {
        match self {
            WeightData::F32(v) => v.len(),
            WeightData::F64(v) => v.len(),
        }
    }
}

/// Refuses `--weights-dtype` where it means nothing: on a `.npy` file (its header gives the
/// type) and on text (read as f64).
pub fn check_flags(kind: FileKind, path: &Path, dtype: Option<SampleType>) -> Result<()> {
    kind.check_flags(path, dtype, DTYPE_FLAG, None)?;
    if kind == FileKind::Text && dtype.is_some() {
        anyhow::bail!(
            "{DTYPE_FLAG} does not apply to {}: it is a text file, whose weights are read as f64 \
             ({DTYPE_FLAG} gives the type of raw binary weights)",
            stream::name(path)
        );
    }
    Ok(())
}

/// Reads weights of the given kind from `reader` (positioned at the start of the file).
pub fn from_reader(
    kind: FileKind,
    mut reader: Box<dyn BufRead>,
    path: &Path,
    dtype: Option<SampleType>,
) -> Result<Parsed<WeightData>> {
    let (ty, count, little_endian, shape) = match kind {
        FileKind::Text => {
            let t = text::parse_f64(reader, path)?;
            return Ok(Parsed {
                values: WeightData::F64(t.values),
                shape: t.shape,
                header: t.header,
            });
        }
        FileKind::Npy => {
            let l = npy::read_header(&mut reader, path)?;
            (l.ty, Some(l.len), l.little_endian, Some(l.shape))
        }
        FileKind::Raw => {
            let ty = dtype.with_context(|| format!("raw weights need {DTYPE_FLAG}"))?;
            (ty, None, cfg!(target_endian = "little"), None)
        }
    };
    let mut out = match ty {
        SampleType::F32 => WeightData::F32(Vec::new()),
        _ => WeightData::F64(Vec::new()),
    };
    if let Some(n) = count {
        out.reserve(n, path)?;
    }
    let what = format!("{ty} weights");
    stream::read_pieces(&mut reader, ty.size(), count, path, &what, |piece| {
        out.reserve(piece.len() / ty.size(), path)?;
        match (decode(piece, ty, little_endian), &mut out) {
            (OwnedSamples::F32(w), WeightData::F32(v)) => v.extend_from_slice(&w),
            (OwnedSamples::F64(w), WeightData::F64(v)) => v.extend_from_slice(&w),
            (other, WeightData::F64(v)) => v.extend(super::to_f64(other.samples())),
            (_, WeightData::F32(_)) => {
                anyhow::bail!("internal: float32 weights decoded as another type")
            }
        }
        Ok(())
    })?;
    let shape = shape.unwrap_or_else(|| Shape::flat(out.len()));
    Ok(Parsed {
        values: out,
        shape,
        header: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_file(
        dir: &Path,
        name: &str,
        descr: &str,
        data: &[u8],
        len: usize,
    ) -> std::path::PathBuf {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn float_and_integer_weights_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let f: Vec<f32> = vec![0.5, 1.25, -3.0];
        let bytes: Vec<u8> = f.iter().flat_map(|x| x.to_le_bytes()).collect();
        let w = WeightData::read(&npy_file(dir.path(), "f.npy", "<f4", &bytes, 3), None)
            .unwrap()
            .values;
        assert!(matches!(w.weights(), Weights::F32(v) if v == f.as_slice()));
        let be: Vec<u8> = [2.5f64, 7.0].iter().flat_map(|x| x.to_be_bytes()).collect();
        let w = WeightData::read(&npy_file(dir.path(), "d.npy", ">f8", &be, 2), None)
            .unwrap()
            .values;
        assert!(matches!(w.weights(), Weights::F64(v) if v == [2.5, 7.0]));
        let i: Vec<u8> = [3i16, -4].iter().flat_map(|x| x.to_le_bytes()).collect();
        let w = WeightData::read(&npy_file(dir.path(), "i.npy", "<i2", &i, 2), None)
            .unwrap()
            .values;
        assert!(matches!(w.weights(), Weights::F64(v) if v == [3.0, -4.0]));
    }

    #[test]
    fn a_cut_short_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let p = npy_file(dir.path(), "short.npy", "<f8", &bytes, 5);
        let e = format!("{:#}", WeightData::read(&p, None).unwrap_err());
        assert!(e.contains("short.npy") && e.contains("ends early"), "{e}");
    }
}
