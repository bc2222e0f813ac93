//! Helpers shared by the library's test files that read numpy's fixtures: arrays stored as a dtype
//! name and the hex of their little-endian bytes, decoded into owned vectors.
#![allow(dead_code)]

use smemkit::sample::{Samples, Weights};

/// Sample data decoded from a fixture, owned.
pub enum Owned {
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

/// The bytes of a hex string.
pub fn unhex(text: &str) -> Vec<u8> {
    assert!(text.len() % 2 == 0, "odd hex length");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

macro_rules! le {
    ($bytes:expr, $t:ty) => {
        $bytes
            .chunks_exact(std::mem::size_of::<$t>())
            .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
            .collect::<Vec<$t>>()
    };
}

/// The array of numpy dtype `dtype` whose little-endian bytes are `hex`.
pub fn decode(dtype: &str, hex: &str) -> Owned {
    let b = unhex(hex);
    match dtype {
        "uint8" => Owned::U8(b),
        "uint16" => Owned::U16(le!(b, u16)),
        "uint32" => Owned::U32(le!(b, u32)),
        "uint64" => Owned::U64(le!(b, u64)),
        "int8" => Owned::I8(le!(b, i8)),
        "int16" => Owned::I16(le!(b, i16)),
        "int32" => Owned::I32(le!(b, i32)),
        "int64" => Owned::I64(le!(b, i64)),
        "float32" => Owned::F32(le!(b, f32)),
        "float64" => Owned::F64(le!(b, f64)),
        other => panic!("unknown dtype {other}"),
    }
}

impl Owned {
    /// The samples, borrowed.
    pub fn samples(&self) -> Samples<'_> {
        match self {
            Owned::U8(v) => Samples::U8(v),
            Owned::U16(v) => Samples::U16(v),
            Owned::U32(v) => Samples::U32(v),
            Owned::U64(v) => Samples::U64(v),
            Owned::I8(v) => Samples::I8(v),
            Owned::I16(v) => Samples::I16(v),
            Owned::I32(v) => Samples::I32(v),
            Owned::I64(v) => Samples::I64(v),
            Owned::F32(v) => Samples::F32(v),
            Owned::F64(v) => Samples::F64(v),
        }
    }

    /// The array as weights (float32 or float64 only).
    pub fn weights(&self) -> Weights<'_> {
        match self {
            Owned::F32(v) => Weights::F32(v),
            Owned::F64(v) => Weights::F64(v),
            _ => panic!("weights must be float32 or float64"),
        }
    }

    /// A float array widened to f64 (edges, densities).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Owned::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Owned::F64(v) => v.clone(),
            _ => panic!("expected a float array"),
        }
    }
}
