//! Reversal of a whole array. On the GPU three kernels do it through shared memory: a static tile, a
//! dynamic tile, and a dynamic allocation carved into two arrays of different types; they exist to
//! show the three ways of declaring shared memory and are selectable for measurement.

use crate::backend::Backend;
use crate::element::Element;
use crate::error::Result;

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

impl ReverseKernel {
    pub fn parse(text: &str) -> Result<Self> {
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

/// `input` reversed.
pub fn reverse<T: Element>(input: &[T], backend: Backend, kernel: ReverseKernel) -> Result<Vec<T>> {
    match crate::backend::resolve_backend(backend) {
        Backend::Cuda => crate::array_ops::cuda::reverse(input, kernel),
        _ => Ok(crate::array_ops::cpu::reverse::reverse(input)),
    }
}
