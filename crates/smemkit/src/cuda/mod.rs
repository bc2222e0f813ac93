//! The CUDA engine: a device context opened on first use, kernels compiled at run time by NVRTC
//! ([`compile`]), launches with clusters ([`launch`]), and the histogram strategies
//! ([`histogram`]). Everything is loaded dynamically: without a driver or a GPU the library still
//! builds and runs, and [`is_available`] says false.

pub mod bench;
pub mod compile;
pub mod device;
pub mod histogram;
pub mod launch;
pub mod params;

pub use device::{gpu, Gpu};

/// True when a CUDA driver and at least one device can be used.
pub fn is_available() -> bool {
    gpu().is_ok()
}
