//! The CUDA engine: a device context opened on first use, kernels compiled at run time by NVRTC
//! ([`compile`]), launches with clusters ([`launch`]), the histogram strategies ([`histogram`])
//! and matrix multiply ([`matmul`]); several GPUs and processes through NCCL ([`multi`],
//! [`ranks`]). Everything is loaded dynamically: without a driver or a GPU the library still
//! builds and runs, and [`is_available`] says false.

pub mod autotune;
pub mod bench;
pub mod cache_lab;
pub mod compile;
pub mod cublas;
pub mod device;
pub mod histogram;
pub mod host_memory;
#[cfg(test)]
mod kernel_builds_tests;
mod kernel_sources;
pub mod launch;
pub mod matmul;
pub mod multi;
#[cfg(feature = "nccl")]
pub mod nccl;
mod nvrtc;
pub mod ops;
pub mod params;
pub mod ranks;
pub mod stream;

pub use device::{device_count, gpu, gpu_at, Gpu};

/// `Auto` becomes `Cuda` when a GPU can be used and `Cpu` otherwise; explicit choices stay.
pub fn resolve_backend(backend: crate::Backend) -> crate::Backend {
    match backend {
        crate::Backend::Auto if is_available() => crate::Backend::Cuda,
        crate::Backend::Auto => crate::Backend::Cpu,
        b => b,
    }
}

/// True when a CUDA driver and at least one device can be used.
pub fn is_available() -> bool {
    gpu().is_ok()
}
