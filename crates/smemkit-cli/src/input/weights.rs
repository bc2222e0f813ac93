//! `--weights FILE`: one weight per sample, from a `.npy` file (f32 and f64 are kept as they are,
//! integer arrays are converted to f64) or a text file of one number per line.
//!
//! The weights are read into memory with plain reads, a piece at a time, never mapped: a mapped
//! file that another process truncates while it is read kills the process with SIGBUS, where a read
//! ends short and becomes an error naming the file. Memory that cannot be had is an error too,
//! asked for before reading (`try_reserve`), not an abort.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use smemkit::{SampleType, Weights};

use super::data::{decode, OwnedSamples};
use super::{npy, shape, text, FileKind, Parsed, Shape};

/// Bytes read and decoded at a time.
const PIECE: usize = 16 << 20;

/// Weights held for the duration of the histogram.
#[derive(Debug)]
pub enum WeightData {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl WeightData {
    pub fn read(path: &Path) -> Result<Parsed<WeightData>> {
        match FileKind::of(path, None) {
            Ok(FileKind::Npy) => read_npy(path),
            _ => {
                let t = text::read_f64(path)?;
                Ok(Parsed {
                    values: WeightData::F64(t.values),
                    shape: t.shape,
                    header: t.header,
                })
            }
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

    pub fn weights(&self) -> Weights<'_> {
        match self {
            WeightData::F32(w) => Weights::F32(w),
            WeightData::F64(w) => Weights::F64(w),
        }
    }
}

fn reserve<T>(v: &mut Vec<T>, n: usize, path: &Path) -> Result<()> {
    v.try_reserve_exact(n).map_err(|_| {
        anyhow!(
            "{}: {n} weights ({} bytes) do not fit in memory",
            path.display(),
            n.saturating_mul(std::mem::size_of::<T>())
        )
    })
}

fn read_npy(path: &Path) -> Result<Parsed<WeightData>> {
    let layout = npy::read_layout(path)?;
    let size = layout.ty.size();
    let mut out = match layout.ty {
        SampleType::F32 => WeightData::F32(Vec::new()),
        _ => WeightData::F64(Vec::new()),
    };
    match &mut out {
        WeightData::F32(v) => reserve(v, layout.len, path)?,
        WeightData::F64(v) => reserve(v, layout.len, path)?,
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    file.seek(SeekFrom::Start(layout.data_start as u64))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut left = layout.len * size;
    let mut piece = vec![0u8; PIECE.min(left).max(1) / size.max(1) * size.max(1)];
    while left > 0 {
        let want = left.min(piece.len());
        let buf = &mut piece[..want];
        file.read_exact(buf).map_err(|e| {
            let done = layout.len - left / size;
            anyhow!(
                "{}: the data ends early ({e}): {done} of the {} weights the header promises were read",
                path.display(),
                layout.len
            )
        })?;
        match (decode(buf, layout.ty, layout.little_endian), &mut out) {
            (OwnedSamples::F32(w), WeightData::F32(v)) => v.extend_from_slice(&w),
            (OwnedSamples::F64(w), WeightData::F64(v)) => v.extend_from_slice(&w),
            (other, WeightData::F64(v)) => v.extend(super::to_f64(other.samples())),
            (_, WeightData::F32(_)) => bail!("internal: float32 weights decoded as another type"),
        }
        left -= want;
    }
    Ok(Parsed {
        values: out,
        shape: layout.shape,
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
        let w = WeightData::read(&npy_file(dir.path(), "f.npy", "<f4", &bytes, 3))
            .unwrap()
            .values;
        assert!(matches!(w.weights(), Weights::F32(v) if v == f.as_slice()));
        let be: Vec<u8> = [2.5f64, 7.0].iter().flat_map(|x| x.to_be_bytes()).collect();
        let w = WeightData::read(&npy_file(dir.path(), "d.npy", ">f8", &be, 2))
            .unwrap()
            .values;
        assert!(matches!(w.weights(), Weights::F64(v) if v == [2.5, 7.0]));
        let i: Vec<u8> = [3i16, -4].iter().flat_map(|x| x.to_le_bytes()).collect();
        let w = WeightData::read(&npy_file(dir.path(), "i.npy", "<i2", &i, 2))
            .unwrap()
            .values;
        assert!(matches!(w.weights(), Weights::F64(v) if v == [3.0, -4.0]));
    }

    #[test]
    fn a_cut_short_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let p = npy_file(dir.path(), "short.npy", "<f8", &bytes, 5);
        let e = format!("{:#}", WeightData::read(&p).unwrap_err());
        assert!(e.contains("short.npy") && e.contains("ends early"), "{e}");
    }
}
