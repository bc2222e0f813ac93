//! The CUDA runtime every operation shares: a device context opened on first use ([`device`]),
//! kernels compiled at run time by NVRTC ([`compile`]), launches with clusters ([`launch`]),
//! page-locked and mapped host memory ([`host_memory`]), cuBLAS ([`cublas`]) and NCCL. Everything is loaded dynamically: without a driver or a GPU the library still
//! builds and runs, and [`is_available`] says false.

pub mod compile;
pub mod cublas;
pub mod device;
pub mod host_memory;
pub mod launch;
#[cfg(feature = "nccl")]
pub mod nccl;

pub use device::{device_count, gpu, gpu_at, Gpu};

/// True when a CUDA driver and at least one device can be used.
pub fn is_available() -> bool {
    gpu().is_ok()
}
