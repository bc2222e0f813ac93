//! `--out FILE.npy`: the counts alone (u64, or f64 sums with weights), for numpy users.

use std::io::Write;

use anyhow::Result;
use npyz::WriterBuilder;
use smemkit::{Counts, Histogram};

pub fn write(w: &mut dyn Write, h: &Histogram) -> Result<()> {
    let shape = [h.nbins() as u64];
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
        Counts::Weighted(c) => {
            let mut out = npyz::WriteOptions::<f64>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .begin_nd()?;
            out.extend(c.iter().copied())?;
            out.finish()?;
        }
    }
    Ok(())
}
