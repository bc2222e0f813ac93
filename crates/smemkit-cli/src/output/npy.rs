//! `--out FILE.npy`: the counts alone (u64, or f64 sums with float weights, sums of the weights'
//! own type with integer or bool weights, as numpy's histogram returns them; f64 densities with
//! `--density`), for numpy users.

use std::io::Write;

use anyhow::Result;
use npyz::WriterBuilder;
use smemkit::{
    histogram::{Counts, Histogram},
    sample::IntType,
};

pub fn write(w: &mut dyn Write, h: &Histogram) -> Result<()> {
    let shape = [h.nbins() as u64];
    // With --density, what numpy's density=True returns: the densities in float64.
    if let Some(d) = &h.density {
        let mut out = npyz::WriteOptions::<f64>::new()
            .default_dtype()
            .shape(&shape)
            .writer(w)
            .begin_nd()?;
        out.extend(d.iter().copied())?;
        out.finish()?;
        return Ok(());
    }
    match &h.counts {
        Counts::Unweighted(c) => {
            let mut out = npyz::WriteOptions::<u64>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .begin_nd()?;
            out.extend(c.iter().copied())?;
            out.finish()?;
        }
        Counts::Weighted(c) => typed(w, &shape, c.iter().copied())?,
        Counts::Integer { sums, dtype } => {
            // Every sum lies in its type's range (the library wraps it there): the casts are exact.
            let s = sums.iter();
            match dtype {
                IntType::Bool => typed(w, &shape, s.map(|&v| v != 0))?,
                IntType::U8 => typed(w, &shape, s.map(|&v| v as u8))?,
                IntType::U16 => typed(w, &shape, s.map(|&v| v as u16))?,
                IntType::U32 => typed(w, &shape, s.map(|&v| v as u32))?,
                IntType::U64 => typed(w, &shape, s.map(|&v| v as u64))?,
                IntType::I8 => typed(w, &shape, s.map(|&v| v as i8))?,
                IntType::I16 => typed(w, &shape, s.map(|&v| v as i16))?,
                IntType::I32 => typed(w, &shape, s.map(|&v| v as i32))?,
                IntType::I64 => typed(w, &shape, s.copied())?,
            }
        }
    }
    Ok(())
}

/// A 1-D array of `T` (numpy's default dtype for it) of the values.
fn typed<T: npyz::AutoSerialize>(
    w: &mut dyn Write,
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> Result<()> {
    let mut out = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    out.extend(values)?;
    out.finish()?;
    Ok(())
}
