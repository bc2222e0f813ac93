//! The CPU engine: rayon-parallel implementations of every operation. It lets smemkit run on a
//! machine without a GPU, and it is the reference the GPU engine is tested against.

pub mod histogram;
pub(crate) mod huge_pages;
pub mod matmul;
pub mod reverse;
pub mod stencil;
pub mod transpose;
