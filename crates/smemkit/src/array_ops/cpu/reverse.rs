//! Reversal on the CPU: the output split across rayon workers, each copying its mirrored range.

use rayon::prelude::*;

use crate::element::Element;

pub fn reverse<T: Element>(input: &[T]) -> Vec<T> {
    let n = input.len();
    let mut out = vec![T::default(); n];
    out.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let start = ci << 16;
            for (k, o) in chunk.iter_mut().enumerate() {
                *o = input[n - 1 - (start + k)];
            }
        });
    out
}
