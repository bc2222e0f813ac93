//! `.npy` input. npyz parses the header; the data bytes are then viewed in place in a memory map
//! when they are native-endian and aligned, and decoded into a vector otherwise (big-endian files).
//! A histogram does not depend on the order of its samples, so C and Fortran order arrays of any
//! shape are both read flat, in the order the bytes are stored; the shape and order go with them
//! so that weights can be paired by logical index ([`super::shape`]).

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use npyz::{DType, TypeChar};
use smemkit::sample::SampleType;

use super::data::{decode, MappedSamples, SampleData};
use super::{map_file, progress, Parsed, Shape};

/// What the header says about the data.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyLayout {
    pub ty: SampleType,
    pub little_endian: bool,
    pub len: usize,
    /// Offset of the first data byte.
    pub data_start: usize,
    /// Dimensions and storage order.
    pub shape: Shape,
    /// numpy bool (`'|b1'`), read as uint8: every byte must be 0 or 1 ([`check_bool`]).
    pub bool_data: bool,
}

/// A bool array read as uint8 must hold only 0 and 1 (numpy writes nothing else, and another byte
/// has no numpy meaning to reproduce).
pub fn check_bool(bytes: &[u8], path: &Path) -> Result<()> {
    if bytes.iter().any(|&b| b > 1) {
        bail!(
            "{}: a bool array holding a byte other than 0 or 1",
            super::stream::name(path)
        );
    }
    Ok(())
}

/// Reads a `.npy` file (mapped when possible), with its shape.
pub fn read(path: &Path) -> Result<Parsed<SampleData>> {
    let map = map_file(path)?;
    let layout =
        parse(&map).with_context(|| format!("{} is not a valid .npy file", path.display()))?;
    let shape = layout.shape.clone();
    Ok(Parsed {
        values: read_data(path, map, layout)?,
        shape,
        header: None,
    })
}

/// The samples of a mapped `.npy` file whose header was parsed into `layout`.
fn read_data(path: &Path, map: memmap2::Mmap, layout: NpyLayout) -> Result<SampleData> {
    let bytes = &map[layout.data_start..layout.data_start + layout.len * layout.ty.size()];
    progress::touch(bytes, "reading");
    if layout.bool_data {
        check_bool(bytes, path)?;
    }
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
    let layout = parse_header(file)?;
    let (len, ty) = (layout.len, layout.ty);
    // `parse_header` checked that this product fits.
    let need = len * ty.size();
    let have = file.len() - layout.data_start;
    if have < need {
        bail!("truncated: the header promises {len} elements of {ty} ({need} bytes) but the file holds {have} data bytes");
    }
    Ok(layout)
}

/// The first bytes of every `.npy` file.
pub const MAGIC: &[u8] = b"\x93NUMPY";

/// Reads only the header of the `.npy` file at `path` (the data may be any size, and is not
/// checked: whoever reads it checks that it is all there).
pub fn read_layout(path: &Path) -> Result<NpyLayout> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    read_header(&mut file, path)
}

/// Reads the header of the `.npy` data in `reader` and leaves the reader at the first data byte
/// (it never reads past the header, so a pipe can be read on from there).
pub fn read_header(reader: &mut dyn Read, path: &Path) -> Result<NpyLayout> {
    /// Headers are a few hundred bytes; a larger length field is a forged or foreign file.
    const MAX_HEADER: usize = 1 << 20;
    let name = super::stream::name(path);
    let mut head = Vec::with_capacity(12);
    reader
        .take(12)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {name}"))?;
    let invalid = || format!("{name} is not a valid .npy file");
    // Magic (6 bytes), version (2), then the header's length: 2 bytes in version 1, 4 after.
    let total = match head.get(6..12) {
        Some([1, _, a, b, ..]) => 10 + u16::from_le_bytes([*a, *b]) as usize,
        Some([2 | 3, _, a, b, c, d]) => 12 + u32::from_le_bytes([*a, *b, *c, *d]) as usize,
        _ => bail!("{}: bad header: unknown version or too short", invalid()),
    };
    if total > MAX_HEADER {
        bail!("{}: a header of {total} bytes", invalid());
    }
    if total < head.len() {
        bail!("{}: a header of {total} bytes", invalid());
    }
    reader
        .take((total - head.len()) as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {name}"))?;
    if head.len() < total {
        bail!("{}: the header is cut short", invalid());
    }
    parse_header(&head).with_context(invalid)
}

/// Parses the header at the start of `file`; the data after it is not looked at. Never panics.
fn parse_header(file: &[u8]) -> Result<NpyLayout> {
    check_shape_fits(file)?;
    let head = native_byte_order(file);
    let mut rest = &head[..];
    let header =
        npyz::NpyHeader::from_reader(&mut rest).map_err(|e| anyhow::anyhow!("bad header: {e}"))?;
    let data_start = head.len() - rest.len();
    let (ty, little_endian) = sample_type(&header.dtype())?;
    let len: usize = header
        .shape()
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .context("the shape holds more elements than this machine can address")?;
    len.checked_mul(ty.size())
        .context("the array is larger than this machine can address")?;
    // Every dimension fits: their product does (a zero dimension leaves the others unchecked).
    let dims = header
        .shape()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .context("a dimension of the shape is larger than this machine can address")?;
    Ok(NpyLayout {
        ty,
        little_endian,
        len,
        data_start,
        shape: Shape {
            dims,
            fortran: header.order() == npyz::Order::Fortran,
        },
        bool_data: matches!(header.dtype(), DType::Plain(ts) if ts.type_char() == TypeChar::Bool),
    })
}

/// The header bytes with a descr of native byte order (`'=i4'`, which numpy writes and reads)
/// spelled as this machine's order (`'<i4'`), which npyz understands; everything else as it was.
/// Only the header (as long as its length field says, at most the file) is copied.
pub(crate) fn native_byte_order(file: &[u8]) -> Vec<u8> {
    let total = match file.get(6..12) {
        Some([1, _, a, b, ..]) => 10 + u16::from_le_bytes([*a, *b]) as usize,
        Some([2 | 3, _, a, b, c, d]) => {
            12usize.saturating_add(u32::from_le_bytes([*a, *b, *c, *d]) as usize)
        }
        _ => file.len(),
    };
    let mut head = file[..total.min(file.len())].to_vec();
    let native = if cfg!(target_endian = "little") {
        b'<'
    } else {
        b'>'
    };
    if let Some(key) = find(&head, b"descr") {
        // The key's closing quote, the colon and spaces, then the value's opening quote.
        let mut i = key + b"descr".len();
        while i < head.len() && matches!(head[i], b'\'' | b'"' | b':' | b' ' | b'\t') {
            i += 1;
        }
        if i > key + b"descr".len()
            && matches!(head[i - 1], b'\'' | b'"')
            && head.get(i) == Some(&b'=')
        {
            head[i] = native;
        }
    }
    head
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
        // numpy histograms bool arrays as uint8 (its own conversion): the same bytes.
        (TypeChar::Bool, 1) => SampleType::U8,
        // numpy's float16; bfloat16 has no .npy type of its own (ml_dtypes writes it as raw
        // 2-byte voids), so it comes as raw input with --dtype bf16.
        (TypeChar::Float, 2) => SampleType::F16,
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
        assert_eq!(l.shape, Shape::flat(3));
        let l = parse(&npy("<i2", true, &[2, 3], &[0; 12])).unwrap();
        assert_eq!(
            (l.shape.dims.as_slice(), l.shape.fortran),
            (&[2, 3][..], true)
        );
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

    #[test]
    fn the_layout_is_read_from_the_header_alone() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = [1.5f32, -2.0, 3.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let f = npy("<f4", false, &[3], &data);
        let path = dir.path().join("a.npy");
        std::fs::write(&path, &f).unwrap();
        let l = read_layout(&path).unwrap();
        assert_eq!(l, parse(&f).unwrap());
        assert_eq!(
            (l.ty, l.little_endian, l.len, l.data_start),
            (SampleType::F32, true, 3, f.len() - 12)
        );
        // Data cut short is not the header's business (the reader of the data checks it).
        std::fs::write(&path, &f[..f.len() - 5]).unwrap();
        assert_eq!(read_layout(&path).unwrap(), l);
        // Version 2.0: a 4-byte header length, so the data starts 2 bytes later.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        let header_len = u16::from_le_bytes([f[8], f[9]]) as u32;
        v2.extend_from_slice(&header_len.to_le_bytes());
        v2.extend_from_slice(&f[10..]);
        std::fs::write(&path, &v2).unwrap();
        let l2 = read_layout(&path).unwrap();
        assert_eq!(
            (l2.ty, l2.len, l2.data_start),
            (SampleType::F32, 3, l.data_start + 2)
        );
        assert_eq!(&v2[l2.data_start..], &data[..]);
        // Big-endian and Fortran order, 2-D.
        let f = npy(">i8", true, &[2, 3], &[0u8; 48]);
        std::fs::write(&path, &f).unwrap();
        let l = read_layout(&path).unwrap();
        assert_eq!((l.ty, l.little_endian, l.len), (SampleType::I64, false, 6));
        // Not a header: a clear error, never a panic.
        for bad in [
            &b""[..],
            b"\x93NUMPY",
            b"\x93NUMPY\x01\x00\xff\xff{",
            b"\x93NUMPY\x09\x00\x00\x00",
        ] {
            std::fs::write(&path, bad).unwrap();
            let e = format!("{:#}", read_layout(&path).unwrap_err());
            assert!(e.contains("not a valid .npy file"), "{e}");
        }
    }

    #[test]
    fn native_byte_order_is_this_machines() {
        let data: Vec<u8> = [7i32, -1].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let l = parse(&npy("=i4", false, &[2], &data)).unwrap();
        assert_eq!(
            (l.ty, l.little_endian, l.len),
            (SampleType::I32, cfg!(target_endian = "little"), 2)
        );
        for descr in ["|u1", "=u1", "|i1"] {
            assert_eq!(parse(&npy(descr, false, &[2], &[1, 2])).unwrap().len, 2);
        }
        // `|` on a multi-byte type says nothing of the byte order: still refused.
        assert!(parse(&npy("|i4", false, &[2], &data)).is_err());
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
