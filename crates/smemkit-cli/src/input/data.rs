//! Sample arrays the CLI holds: either memory-mapped file bytes viewed in place (large `.npy` and
//! raw files are never copied when their byte order and alignment allow it) or owned vectors
//! (converted, parsed or generated data). Both hand the library a borrowed `Samples` slice.

use memmap2::Mmap;
use smemkit::{SampleType, Samples};

/// Owned samples of a type chosen at run time.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedSamples {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl OwnedSamples {
    pub fn samples(&self) -> Samples<'_> {
        match self {
            OwnedSamples::U8(v) => Samples::U8(v),
            OwnedSamples::U16(v) => Samples::U16(v),
            OwnedSamples::U32(v) => Samples::U32(v),
            OwnedSamples::U64(v) => Samples::U64(v),
            OwnedSamples::I8(v) => Samples::I8(v),
            OwnedSamples::I16(v) => Samples::I16(v),
            OwnedSamples::I32(v) => Samples::I32(v),
            OwnedSamples::I64(v) => Samples::I64(v),
            OwnedSamples::F32(v) => Samples::F32(v),
            OwnedSamples::F64(v) => Samples::F64(v),
        }
    }
}

/// A mapped file whose bytes `start..start + len * size` are native-endian samples of `ty`,
/// aligned for `ty` (checked by [`MappedSamples::new`]).
#[derive(Debug)]
pub struct MappedSamples {
    map: Mmap,
    start: usize,
    len: usize,
    ty: SampleType,
}

impl MappedSamples {
    /// `None` when the bytes cannot be viewed in place (misaligned, or out of the map).
    pub fn new(map: Mmap, start: usize, len: usize, ty: SampleType) -> Option<Self> {
        let end = len.checked_mul(ty.size())?.checked_add(start)?;
        if end > map.len() || (map.as_ptr() as usize + start) % ty.size() != 0 {
            return None;
        }
        Some(MappedSamples {
            map,
            start,
            len,
            ty,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map[self.start..self.start + self.len * self.ty.size()]
    }

    pub fn samples(&self) -> Samples<'_> {
        let b = self.bytes();
        // Alignment and length were checked in `new`, so these casts cannot fail.
        match self.ty {
            SampleType::U8 => Samples::U8(b),
            SampleType::U16 => Samples::U16(bytemuck::cast_slice(b)),
            SampleType::U32 => Samples::U32(bytemuck::cast_slice(b)),
            SampleType::U64 => Samples::U64(bytemuck::cast_slice(b)),
            SampleType::I8 => Samples::I8(bytemuck::cast_slice(b)),
            SampleType::I16 => Samples::I16(bytemuck::cast_slice(b)),
            SampleType::I32 => Samples::I32(bytemuck::cast_slice(b)),
            SampleType::I64 => Samples::I64(bytemuck::cast_slice(b)),
            SampleType::F32 => Samples::F32(bytemuck::cast_slice(b)),
            SampleType::F64 => Samples::F64(bytemuck::cast_slice(b)),
        }
    }
}

/// Samples from wherever they came.
#[derive(Debug)]
pub enum SampleData {
    Mapped(MappedSamples),
    Owned(OwnedSamples),
}

impl SampleData {
    pub fn samples(&self) -> Samples<'_> {
        match self {
            SampleData::Mapped(m) => m.samples(),
            SampleData::Owned(o) => o.samples(),
        }
    }
    /// How the data is held, for the summary.
    pub fn how(&self) -> &'static str {
        match self {
            SampleData::Mapped(_) => "memory-mapped",
            SampleData::Owned(_) => "in memory",
        }
    }
}

/// Decodes `bytes` (a whole number of elements of `ty`, in the given byte order) into owned samples.
pub fn decode(bytes: &[u8], ty: SampleType, little_endian: bool) -> OwnedSamples {
    macro_rules! dec {
        ($t:ty, $tag:ident) => {{
            const N: usize = std::mem::size_of::<$t>();
            OwnedSamples::$tag(
                bytes
                    .chunks_exact(N)
                    .map(|c| {
                        let a: [u8; N] = c.try_into().expect("chunks_exact gives N bytes");
                        if little_endian {
                            <$t>::from_le_bytes(a)
                        } else {
                            <$t>::from_be_bytes(a)
                        }
                    })
                    .collect(),
            )
        }};
    }
    match ty {
        SampleType::U8 => dec!(u8, U8),
        SampleType::U16 => dec!(u16, U16),
        SampleType::U32 => dec!(u32, U32),
        SampleType::U64 => dec!(u64, U64),
        SampleType::I8 => dec!(i8, I8),
        SampleType::I16 => dec!(i16, I16),
        SampleType::I32 => dec!(i32, I32),
        SampleType::I64 => dec!(i64, I64),
        SampleType::F32 => dec!(f32, F32),
        SampleType::F64 => dec!(f64, F64),
    }
}
