//! The choices the array operations take (the stencil's boundary and radius, the reversal kernel)
//! and the stencil's argument check: plain data shared by the APIs and both engines, so that the
//! engines need not import the APIs that call them.

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
    /// The code the kernel takes.
    pub fn code(self) -> i32 {
        match self {
            Boundary::Zero => 0,
            Boundary::Clamp => 1,
            Boundary::Wrap => 2,
        }
    }
}

impl std::str::FromStr for Boundary {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "zero" => Ok(Boundary::Zero),
            "clamp" => Ok(Boundary::Clamp),
            "wrap" => Ok(Boundary::Wrap),
            _ => Err(Error::InvalidArgument(format!(
                "unknown boundary `{text}` (expected zero, clamp or wrap)"
            ))),
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

/// Which GPU kernel reverses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReverseKernel {
    /// `__shared__ T tile[16 KiB / sizeof(T) + one 16-byte chunk]`, sized at compile time.
    Static,
    /// `extern __shared__` sized at launch (the same 16 KiB tile).
    #[default]
    Dynamic,
    /// One dynamic allocation carved into the values and a u32 array of the staged chunk each
    /// output chunk of a tile reads.
    Carved,
}

impl std::str::FromStr for ReverseKernel {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "static" => Ok(ReverseKernel::Static),
            "dynamic" => Ok(ReverseKernel::Dynamic),
            "carved" => Ok(ReverseKernel::Carved),
            _ => Err(crate::Error::InvalidArgument(format!(
                "unknown reverse kernel `{text}` (expected static, dynamic or carved)"
            ))),
        }
    }
}
