//! The array operations on the CPU: rayon-parallel, the reference the GPU kernels are tested
//! against and the engine on machines without a GPU.

pub mod reverse;
pub mod stencil;
pub mod transpose;
