//! `--out FILE.npy`: the counts alone (u64, or f64 sums with weights; f64 densities with
//! `--density`), for numpy users.

use std::io::Write;

use anyhow::Result;
use npyz::WriterBuilder;
use smemkit::histogram::{Counts, Histogram};

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
