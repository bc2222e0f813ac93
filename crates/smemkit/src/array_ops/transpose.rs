//! Matrix transpose of a row-major `rows x cols` array of 1-, 2-, 4- or 8-byte elements, any shape.
//! The GPU kernel goes through padded shared-memory tiles (see `kernels/transpose.cu`): 16 KiB tiles
//! moved in 16-byte chunks when every input and output row is a whole number of 16-byte chunks,
//! 32 x 32 element tiles otherwise.

use crate::backend::Backend;
use crate::element::Element;
use crate::error::{Error, Result};

/// Transposes `input` (`rows x cols`, row-major) into a `cols x rows` row-major array.
pub fn transpose<T: Element>(
    input: &[T],
    rows: usize,
    cols: usize,
    backend: Backend,
) -> Result<Vec<T>> {
    if rows.checked_mul(cols) != Some(input.len()) {
        return Err(Error::InvalidArgument(format!(
            "a {rows} x {cols} matrix has {} elements, the input has {}",
            rows as u128 * cols as u128,
            input.len()
        )));
    }
    match crate::backend::resolve_backend(backend) {
        Backend::Cuda => crate::array_ops::cuda::transpose(
            input,
            rows,
            cols,
            crate::array_ops::cuda::TransposeKernel::Padded,
        ),
        _ => Ok(crate::array_ops::cpu::transpose::transpose(
            input, rows, cols,
        )),
    }
}
