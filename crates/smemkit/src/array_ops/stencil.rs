//! The 1D stencil: `out[i] = sum over j in [-r, r] of w[j + r] * in[i + j]` (floats, with weights)
//! or the plain sum (integers), with a boundary mode for the samples beyond either end. One entry
//! point, [`stencil1d`], validates the request and runs the CPU or CUDA engine.

use crate::backend::Backend;
use crate::element::StencilElement;
use crate::error::{Error, Result};

/// Largest radius the kernels take (the halo is staged in shared memory beside the tile).
pub const MAX_RADIUS: usize = 64;

/// What a stencil reads beyond the ends of the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Boundary {
    /// Zeros.
    #[default]
    Zero,
    /// The nearest element.
    Clamp,
    /// The array repeats (periodic).
    Wrap,
}

impl Boundary {
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "zero" => Ok(Boundary::Zero),
            "clamp" => Ok(Boundary::Clamp),
            "wrap" => Ok(Boundary::Wrap),
            _ => Err(Error::InvalidArgument(format!(
                "unknown boundary `{text}` (expected zero, clamp or wrap)"
            ))),
        }
    }
    /// The code the kernel takes.
    pub fn code(self) -> i32 {
        match self {
            Boundary::Zero => 0,
            Boundary::Clamp => 1,
            Boundary::Wrap => 2,
        }
    }
}

/// Checks a stencil request; returns the weights to apply (all ones for a plain sum).
pub fn check<T: StencilElement>(radius: usize, weights: Option<&[T]>) -> Result<()> {
    if !(1..=MAX_RADIUS).contains(&radius) {
        return Err(Error::InvalidArgument(format!(
            "stencil radius {radius} is outside 1..={MAX_RADIUS}"
        )));
    }
    match (T::WEIGHTED, weights) {
        (true, Some(w)) if w.len() != 2 * radius + 1 => Err(Error::InvalidArgument(format!(
            "a radius-{radius} stencil takes {} weights, got {}",
            2 * radius + 1,
            w.len()
        ))),
        (true, None) => Err(Error::InvalidArgument(format!(
            "a {} stencil needs weights",
            T::C_TYPE
        ))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!(
            "{} stencils take the plain sum; weights apply to float32 and float64",
            T::C_TYPE
        ))),
        _ => Ok(()),
    }
}

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
