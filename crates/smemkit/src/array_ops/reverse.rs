//! Reversal of a whole array. On the GPU three kernels do it through shared memory: a static tile, a
//! dynamic tile, and a dynamic allocation carved into two arrays of different types; they exist to
//! show the three ways of declaring shared memory and are selectable for measurement.

use crate::backend::Backend;
use crate::element::Element;
use crate::error::Result;

pub use super::kinds::ReverseKernel;

/// `input` reversed.
pub fn reverse<T: Element>(input: &[T], backend: Backend, kernel: ReverseKernel) -> Result<Vec<T>> {
    match crate::backend::resolve_backend(backend) {
        Backend::Cuda => crate::array_ops::cuda::reverse(input, kernel),
        _ => Ok(crate::array_ops::cpu::reverse::reverse(input)),
    }
}
