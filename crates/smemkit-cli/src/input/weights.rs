//! `--weights FILE`: one weight per sample, in the formats samples take: a `.npy` file (f32, f64,
//! integers and bool are kept as they are: integer and bool weights give sums of their own type,
//! as numpy's histogram does; float16 is widened to f64), raw binary with `--weights-dtype`, or a
//! text file of one number per line (float64, as `numpy.loadtxt` reads it); from a regular file
//! or a stream.
//!
//! The weights are read into memory with plain reads, a piece at a time, never mapped: a mapped
//! file that another process truncates while it is read kills the process with SIGBUS, where a read
//! ends short and becomes an error naming the file. Memory that cannot be had is an error too,
//! asked for before reading (`try_reserve`), not an abort.

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use smemkit::sample::{IntWeights, SampleType, Weights};

use super::data::{decode, OwnedSamples};
use super::{npy, shape, stream, text, FileKind, Parsed, Shape};

/// The flag that gives the type of raw weights.
pub const DTYPE_FLAG: &str = "--weights-dtype";

/// Weights held for the duration of the histogram.
#[derive(Debug)]
pub enum WeightData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Integer weights, of any integer type.
    Int(OwnedSamples),
    /// numpy bool weights (`'|b1'`).
    Bool(Vec<bool>),
}

/// `$body` on each integer variant of an [`OwnedSamples`] (`$v` its vector, `$tag` its
/// variant), `$other` for the float ones.
macro_rules! each_int {
    ($o:expr, $v:ident, $tag:ident => $body:expr, $f:ident => $other:expr) => {
        match $o {
            OwnedSamples::U8($v) => {
                use OwnedSamples::U8 as $tag;
                $body
            }
            OwnedSamples::U16($v) => {
                use OwnedSamples::U16 as $tag;
                $body
            }
            OwnedSamples::U32($v) => {
                use OwnedSamples::U32 as $tag;
                $body
            }
            OwnedSamples::U64($v) => {
                use OwnedSamples::U64 as $tag;
                $body
            }
            OwnedSamples::I8($v) => {
                use OwnedSamples::I8 as $tag;
                $body
            }
            OwnedSamples::I16($v) => {
                use OwnedSamples::I16 as $tag;
                $body
            }
            OwnedSamples::I32($v) => {
                use OwnedSamples::I32 as $tag;
                $body
            }
            OwnedSamples::I64($v) => {
                use OwnedSamples::I64 as $tag;
                $body
            }
            $f => $other,
        }
    };
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
            WeightData::Bool(w) => Weights::Int(IntWeights::Bool(w)),
            WeightData::Int(w) => match w {
                OwnedSamples::U8(v) => Weights::Int(IntWeights::U8(v)),
                OwnedSamples::U16(v) => Weights::Int(IntWeights::U16(v)),
                OwnedSamples::U32(v) => Weights::Int(IntWeights::U32(v)),
                OwnedSamples::U64(v) => Weights::Int(IntWeights::U64(v)),
                OwnedSamples::I8(v) => Weights::Int(IntWeights::I8(v)),
                OwnedSamples::I16(v) => Weights::Int(IntWeights::I16(v)),
                OwnedSamples::I32(v) => Weights::Int(IntWeights::I32(v)),
                OwnedSamples::I64(v) => Weights::Int(IntWeights::I64(v)),
                // `from_reader` keeps only integers here; floats would still be read right.
                OwnedSamples::F32(v) => Weights::F32(v),
                OwnedSamples::F64(v) => Weights::F64(v),
                // (never built: 16-bit floats are widened when read; an empty view would be
                // refused for its length, never summed)
                OwnedSamples::F16(_) | OwnedSamples::BF16(_) => Weights::F64(&[]),
            },
        }
    }

    /// The weights of shape `mine` in the storage order of samples of shape `samples`
    /// ([`shape::pair`]: numpy's pairing, by logical index).
    pub fn pair(self, mine: &Shape, samples: &Shape) -> Result<WeightData> {
        Ok(match self {
            WeightData::F32(w) => WeightData::F32(shape::pair(w, mine, samples)?),
            WeightData::F64(w) => WeightData::F64(shape::pair(w, mine, samples)?),
            WeightData::Bool(w) => WeightData::Bool(shape::pair(w, mine, samples)?),
            WeightData::Int(w) => WeightData::Int(each_int!(w, v, Tag =>
                Tag(shape::pair(v, mine, samples)?), other => other)),
        })
    }

    fn reserve(&mut self, n: usize, path: &Path) -> Result<()> {
        let (r, size) = match self {
            WeightData::F32(v) => (v.try_reserve(n), 4),
            WeightData::F64(v) => (v.try_reserve(n), 8),
            WeightData::Bool(v) => (v.try_reserve(n), 1),
            WeightData::Int(v) => (v.try_reserve(n), v.samples().sample_type().size()),
        };
        r.map_err(|_| {
            anyhow!(
                "{}: {n} weights ({} bytes) do not fit in memory",
                stream::name(path),
                n.saturating_mul(size)
            )
        })
    }

    /// How many weights.
    pub fn len(&self) -> usize {
        match self {
            WeightData::F32(v) => v.len(),
            WeightData::F64(v) => v.len(),
            WeightData::Bool(v) => v.len(),
            WeightData::Int(v) => v.samples().len(),
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
    let mut bool_data = false;
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
            bool_data = l.bool_data;
            (l.ty, Some(l.len), l.little_endian, Some(l.shape))
        }
        FileKind::Raw => {
            let ty = dtype.with_context(|| format!("raw weights need {DTYPE_FLAG}"))?;
            (ty, None, cfg!(target_endian = "little"), None)
        }
    };
    let mut out = match ty {
        SampleType::F32 => WeightData::F32(Vec::new()),
        SampleType::F64 | SampleType::F16 | SampleType::BF16 => WeightData::F64(Vec::new()),
        SampleType::U8 if bool_data => WeightData::Bool(Vec::new()),
        int => WeightData::Int(OwnedSamples::new(int)),
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
            (OwnedSamples::U8(w), WeightData::Bool(v)) => {
                npy::check_bool(&w, path)?;
                v.extend(w.iter().map(|&b| b != 0));
            }
            (decoded, WeightData::Int(v)) => extend_ints(v, decoded)?,
            (_, WeightData::F32(_) | WeightData::Bool(_)) => {
                anyhow::bail!("internal: float32 or bool weights decoded as another type")
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

/// Appends `more` to `v`, both integers of one type.
fn extend_ints(v: &mut OwnedSamples, more: OwnedSamples) -> Result<()> {
    match (v, more) {
        (OwnedSamples::U8(v), OwnedSamples::U8(m)) => v.extend_from_slice(&m),
        (OwnedSamples::U16(v), OwnedSamples::U16(m)) => v.extend_from_slice(&m),
        (OwnedSamples::U32(v), OwnedSamples::U32(m)) => v.extend_from_slice(&m),
        (OwnedSamples::U64(v), OwnedSamples::U64(m)) => v.extend_from_slice(&m),
        (OwnedSamples::I8(v), OwnedSamples::I8(m)) => v.extend_from_slice(&m),
        (OwnedSamples::I16(v), OwnedSamples::I16(m)) => v.extend_from_slice(&m),
        (OwnedSamples::I32(v), OwnedSamples::I32(m)) => v.extend_from_slice(&m),
        (OwnedSamples::I64(v), OwnedSamples::I64(m)) => v.extend_from_slice(&m),
        _ => anyhow::bail!("internal: integer weights decoded as another type"),
    }
    Ok(())
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
        assert!(
            matches!(w.weights(), Weights::Int(IntWeights::I16(v)) if v == [3, -4]),
            "{w:?}"
        );
        let w = WeightData::read(&npy_file(dir.path(), "b.npy", "|b1", &[1, 0, 1], 3), None)
            .unwrap()
            .values;
        assert!(
            matches!(w.weights(), Weights::Int(IntWeights::Bool(v)) if v == [true, false, true])
        );
        let e =
            WeightData::read(&npy_file(dir.path(), "b2.npy", "|b1", &[1, 2], 2), None).unwrap_err();
        assert!(format!("{e:#}").contains("other than 0 or 1"), "{e:#}");
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
