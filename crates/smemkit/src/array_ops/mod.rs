//! The shared-memory array operations: the 1D stencil with its halo ([`stencil`]), the tiled
//! transpose ([`transpose`]) and the reversal ([`reverse`]); each an API with a CPU engine
//! ([`cpu`]) and a CUDA engine ([`cuda`]).

#[doc(hidden)]
pub mod cpu;
#[doc(hidden)]
pub mod cuda;
pub mod kinds;
pub mod reverse;
pub mod stencil;
pub mod transpose;
