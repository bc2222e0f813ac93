//! The 1D stencil on the CPU: outputs split across rayon workers; each output sums its window left
//! to right with the same operation as the kernel (`StencilElement::step`), so CPU and GPU agree to
//! the bit.

use rayon::prelude::*;

use crate::array_ops::stencil::Boundary;
use crate::element::StencilElement;

/// The element at `g` (which may lie outside the array) under the boundary mode.
#[inline(always)]
fn at<T: StencilElement>(input: &[T], g: i64, boundary: Boundary) -> T {
    let n = input.len() as i64;
    if (0..n).contains(&g) {
        return input[g as usize];
    }
    match boundary {
        Boundary::Zero => T::default(),
        Boundary::Clamp => input[if g < 0 { 0 } else { (n - 1) as usize }],
        Boundary::Wrap => input[g.rem_euclid(n) as usize],
    }
}

pub fn stencil1d<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
) -> Vec<T> {
    let mut out = vec![T::default(); input.len()];
    let r = radius as i64;
    let ones = vec![T::default(); 2 * radius + 1];
    let w = weights.unwrap_or(&ones);
    out.par_chunks_mut(1 << 14)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let base = (ci << 14) as i64;
            for (k, o) in chunk.iter_mut().enumerate() {
                let i = base + k as i64;
                let mut acc = T::default();
                for (j, &wj) in w.iter().enumerate() {
                    acc = T::step(acc, wj, at(input, i + j as i64 - r, boundary));
                }
                *o = acc;
            }
        });
    out
}
