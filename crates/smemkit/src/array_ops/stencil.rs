//! The 1D stencil: `out[i] = sum over j in [-r, r] of w[j + r] * in[i + j]` (floats, with weights)
//! or the plain sum (integers), with a boundary mode for the samples beyond either end. One entry
//! point, [`stencil1d`], validates the request and runs the CPU or CUDA engine.

use crate::backend::Backend;
use crate::element::StencilElement;
use crate::error::Result;

pub use super::kinds::{check, Boundary, MAX_RADIUS};

/// Runs the stencil on `backend` (`Auto`: the GPU when there is one).
pub fn stencil1d<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
    backend: Backend,
) -> Result<Vec<T>> {
    check(radius, weights)?;
    match crate::backend::resolve_backend(backend) {
        Backend::Cuda => crate::array_ops::cuda::stencil1d(input, radius, weights, boundary),
        _ => Ok(crate::array_ops::cpu::stencil::stencil1d(
            input, radius, weights, boundary,
        )),
    }
}
