//! Transpose on the CPU: each rayon worker fills a band of output rows (input columns), walking the
//! input row by row so that reads stay sequential within the band.

use rayon::prelude::*;

use crate::element::Element;

/// Output rows per band: the band's write streams stay in cache while the input rows pass by.
const BAND: usize = 32;

pub fn transpose<T: Element>(input: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::default(); input.len()];
    if input.is_empty() {
        return out;
    }
    out.par_chunks_mut(rows * BAND)
        .enumerate()
        .for_each(|(bi, band)| {
            let c0 = bi * BAND;
            let width = band.len() / rows;
            for r in 0..rows {
                let row = &input[r * cols + c0..r * cols + c0 + width];
                for (dc, &v) in row.iter().enumerate() {
                    band[dc * rows + r] = v;
                }
            }
        });
    out
}
