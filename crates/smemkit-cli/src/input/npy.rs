//! `.npy` input. npyz parses the header; the data bytes are then viewed in place in a memory map
//! when they are native-endian and aligned, and decoded into a vector otherwise (big-endian files).
//! A histogram does not depend on the order of its samples, so C and Fortran order arrays of any
//! shape are both read flat, in the order the bytes are stored.

use std::path::Path;

use anyhow::{bail, Context, Result};
use npyz::{DType, TypeChar};
use smemkit::SampleType;

use super::data::{decode, MappedSamples, SampleData};
use super::{map_file, progress};

/// What the header says about the data.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyLayout {
    pub ty: SampleType,
    pub little_endian: bool,
    pub len: usize,
    /// Offset of the first data byte.
    pub data_start: usize,
}

/// Reads a `.npy` file (mapped when possible).
pub fn read(path: &Path) -> Result<SampleData> {
    let map = map_file(path)?;
    let layout =
        parse(&map).with_context(|| format!("{} is not a valid .npy file", path.display()))?;
    let bytes = &map[layout.data_start..layout.data_start + layout.len * layout.ty.size()];
    progress::touch(bytes, "reading");
    if layout.little_endian == cfg!(target_endian = "little") {
        let (start, len, ty) = (layout.data_start, layout.len, layout.ty);
        if let Some(m) = MappedSamples::new(map, start, len, ty) {
            return Ok(SampleData::Mapped(m));
        }
        // Misaligned data (an odd header length): fall through and copy.
        let map = map_file(path)?;
        return Ok(SampleData::Owned(decode(
            &map[start..start + len * ty.size()],
            ty,
            layout.little_endian,
        )));
    }
    Ok(SampleData::Owned(decode(
        bytes,
        layout.ty,
        layout.little_endian,
    )))
}

/// Parses the header of the `.npy` bytes in `file` and checks that the data is all there.
/// Never panics, whatever the bytes.
pub fn parse(file: &[u8]) -> Result<NpyLayout> {
    check_shape_fits(file)?;
    let mut rest = file;
    let header =
        npyz::NpyHeader::from_reader(&mut rest).map_err(|e| anyhow::anyhow!("bad header: {e}"))?;
    let data_start = file.len() - rest.len();
    let (ty, little_endian) = sample_type(&header.dtype())?;
    let len: usize = header
        .shape()
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .context("the shape holds more elements than this machine can address")?;
    let need = len
        .checked_mul(ty.size())
        .context("the array is larger than this machine can address")?;
    if rest.len() < need {
        bail!("truncated: the header promises {len} elements of {ty} ({need} bytes) but the file holds {} data bytes", rest.len());
    }
    Ok(NpyLayout {
        ty,
        little_endian,
        len,
        data_start,
    })
}

/// The sample type and byte order of a plain numeric dtype.
fn sample_type(dtype: &DType) -> Result<(SampleType, bool)> {
    let DType::Plain(ts) = dtype else {
        bail!(
            "unsupported dtype {} (structured or sub-array dtypes cannot be histogrammed)",
            dtype.descr()
        );
    };
    let size = ts.size_field();
    let ty = match (ts.type_char(), size) {
        (TypeChar::Uint, 1) => SampleType::U8,
        (TypeChar::Uint, 2) => SampleType::U16,
        (TypeChar::Uint, 4) => SampleType::U32,
        (TypeChar::Uint, 8) => SampleType::U64,
        (TypeChar::Int, 1) => SampleType::I8,
        (TypeChar::Int, 2) => SampleType::I16,
        (TypeChar::Int, 4) => SampleType::I32,
        (TypeChar::Int, 8) => SampleType::I64,
        (TypeChar::Float, 4) => SampleType::F32,
        (TypeChar::Float, 8) => SampleType::F64,
        _ => bail!("unsupported dtype {ts} (expected an integer or float of 1 to 8 bytes)"),
    };
    // One-byte types carry `|` (no byte order): either reading is the same.
    let little_endian = !matches!(ts.endianness(), npyz::Endianness::Big);
    Ok((ty, little_endian))
}

/// npyz multiplies the shape's dimensions without an overflow check (a panic in debug builds), so
/// a forged shape is rejected here first, from the header text itself.
fn check_shape_fits(file: &[u8]) -> Result<()> {
    let Some(pos) = find(file, b"'shape'") else {
        return Ok(());
    };
    let tail = &file[pos..];
    let (Some(open), Some(close)) = (find(tail, b"("), find(tail, b")")) else {
        return Ok(());
    };
    if open > close {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&tail[open + 1..close]);
    let mut product = 1u64;
    for dim in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let Ok(d) = dim.trim_end_matches('L').parse::<u64>() else {
            continue;
        };
        product = product
            .checked_mul(d)
            .context("bad header: the shape's element count overflows 64 bits")?;
    }
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads a `.npy` file of numbers as f64 (bin edges, weights in text-free form).
pub fn read_f64(path: &Path) -> Result<Vec<f64>> {
    let data = read(path)?;
    Ok(super::to_f64(data.samples()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A `.npy` file built by hand from the format's specification (version 1.0).
    fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let shape = if dims.len() == 1 {
            format!("({},)", dims[0])
        } else {
            format!("({})", dims.join(", "))
        };
        let order = if fortran { "True" } else { "False" };
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn reads_a_hand_made_file() {
        let data: Vec<u8> = [1i32, -2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let f = npy("<i4", false, &[3], &data);
        let l = parse(&f).unwrap();
        assert_eq!(
            (l.ty, l.little_endian, l.len, l.data_start),
            (SampleType::I32, true, 3, f.len() - 12)
        );
        assert_eq!(l.data_start % 64, 0);
    }

    #[test]
    fn rejects_truncated_data_and_huge_shapes() {
        let f = npy("<f8", false, &[4], &[0u8; 31]);
        assert!(format!("{:#}", parse(&f).unwrap_err()).contains("truncated"));
        let f = npy("<u1", false, &[1 << 40, 1 << 40], &[]);
        assert!(parse(&f).is_err());
        let f = npy("<c16", false, &[1], &[0u8; 16]);
        assert!(format!("{:#}", parse(&f).unwrap_err()).contains("unsupported dtype"));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse(&bytes);
            let mut with_magic = b"\x93NUMPY\x01\x00".to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = parse(&with_magic);
        }

        #[test]
        fn truncated_files_are_errors(values in proptest::collection::vec(any::<i16>(), 1..50), cut in 0usize..1000) {
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
            let f = npy(">i2", false, &[values.len()], &data);
            let cut = cut % f.len();
            prop_assert!(parse(&f[..cut]).is_err());
        }

        #[test]
        fn valid_arrays_round_trip(values in proptest::collection::vec(any::<i64>(), 0..60), big in any::<bool>(), fortran in any::<bool>()) {
            let data: Vec<u8> = values.iter().flat_map(|v| if big { v.to_be_bytes() } else { v.to_le_bytes() }).collect();
            let f = npy(if big { ">i8" } else { "<i8" }, fortran, &[values.len()], &data);
            let l = parse(&f).unwrap();
            prop_assert_eq!(l.len, values.len());
            let got = decode(&f[l.data_start..], l.ty, l.little_endian);
            prop_assert_eq!(got, super::super::data::OwnedSamples::I64(values));
        }

        #[test]
        fn float_arrays_round_trip(values in proptest::collection::vec(any::<f32>(), 0..60), rows in 1usize..4) {
            let n = values.len() / rows * rows;
            let values = &values[..n];
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let f = npy("<f4", true, &[rows, n / rows], &data);
            let l = parse(&f).unwrap();
            prop_assert_eq!((l.ty, l.len), (SampleType::F32, n));
            let super::super::data::OwnedSamples::F32(got) = decode(&f[l.data_start..], l.ty, true) else { panic!("type") };
            prop_assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), values.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
    }
}
