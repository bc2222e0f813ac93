//! Sample arrays the CLI holds: either memory-mapped file bytes viewed in place (large `.npy` and
//! raw files are never copied when their byte order and alignment allow it) or owned vectors
//! (converted, parsed or generated data). Both hand the library a borrowed `Samples` slice.

use memmap2::Mmap;
use smemkit::sample::{SampleType, Samples};

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
    F16(Vec<half::f16>),
    BF16(Vec<half::bf16>),
}

impl OwnedSamples {
    /// No samples yet, of type `ty`.
    pub fn new(ty: SampleType) -> OwnedSamples {
        match ty {
            SampleType::U8 => OwnedSamples::U8(Vec::new()),
            SampleType::U16 => OwnedSamples::U16(Vec::new()),
            SampleType::U32 => OwnedSamples::U32(Vec::new()),
            SampleType::U64 => OwnedSamples::U64(Vec::new()),
            SampleType::I8 => OwnedSamples::I8(Vec::new()),
            SampleType::I16 => OwnedSamples::I16(Vec::new()),
            SampleType::I32 => OwnedSamples::I32(Vec::new()),
            SampleType::I64 => OwnedSamples::I64(Vec::new()),
            SampleType::F32 => OwnedSamples::F32(Vec::new()),
            SampleType::F64 => OwnedSamples::F64(Vec::new()),
            SampleType::F16 => OwnedSamples::F16(Vec::new()),
            SampleType::BF16 => OwnedSamples::BF16(Vec::new()),
        }
    }

    /// Room for `more` samples, or an error (never an abort) when memory cannot be had.
    pub fn try_reserve(&mut self, more: usize) -> Result<(), std::collections::TryReserveError> {
        match self {
            OwnedSamples::U8(v) => v.try_reserve(more),
            OwnedSamples::U16(v) => v.try_reserve(more),
            OwnedSamples::U32(v) => v.try_reserve(more),
            OwnedSamples::U64(v) => v.try_reserve(more),
            OwnedSamples::I8(v) => v.try_reserve(more),
            OwnedSamples::I16(v) => v.try_reserve(more),
            OwnedSamples::I32(v) => v.try_reserve(more),
            OwnedSamples::I64(v) => v.try_reserve(more),
            OwnedSamples::F32(v) => v.try_reserve(more),
            OwnedSamples::F64(v) => v.try_reserve(more),
            OwnedSamples::F16(v) => v.try_reserve(more),
            OwnedSamples::BF16(v) => v.try_reserve(more),
        }
    }

    /// Decodes `bytes` (whole samples of this type, in the given byte order) onto the end.
    pub fn extend_decoded(&mut self, bytes: &[u8], little_endian: bool) {
        macro_rules! dec {
            ($v:expr, $t:ty) => {{
                const N: usize = std::mem::size_of::<$t>();
                $v.extend(bytes.chunks_exact(N).map(|c| {
                    let a: [u8; N] = c.try_into().expect("chunks_exact gives N bytes");
                    if little_endian {
                        <$t>::from_le_bytes(a)
                    } else {
                        <$t>::from_be_bytes(a)
                    }
                }))
            }};
        }
        match self {
            OwnedSamples::U8(v) => dec!(v, u8),
            OwnedSamples::U16(v) => dec!(v, u16),
            OwnedSamples::U32(v) => dec!(v, u32),
            OwnedSamples::U64(v) => dec!(v, u64),
            OwnedSamples::I8(v) => dec!(v, i8),
            OwnedSamples::I16(v) => dec!(v, i16),
            OwnedSamples::I32(v) => dec!(v, i32),
            OwnedSamples::I64(v) => dec!(v, i64),
            OwnedSamples::F32(v) => dec!(v, f32),
            OwnedSamples::F64(v) => dec!(v, f64),
            OwnedSamples::F16(v) => dec!(v, half::f16),
            OwnedSamples::BF16(v) => dec!(v, half::bf16),
        }
    }

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
            OwnedSamples::F16(v) => Samples::F16(v),
            OwnedSamples::BF16(v) => Samples::BF16(v),
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
            SampleType::F16 => Samples::F16(bytemuck::cast_slice(b)),
            SampleType::BF16 => Samples::BF16(bytemuck::cast_slice(b)),
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
    let mut out = OwnedSamples::new(ty);
    out.extend_decoded(bytes, little_endian);
    out
}
