//! The CUDA runtime every operation shares: a device context opened on first use ([`device`]),
//! kernels compiled at run time by NVRTC (a CUBIN for the device, cached; [`compile`]), launches
//! with clusters ([`launch`]), page-locked and mapped host memory ([`host_memory`]), NCCL, device
//! limits ([`limits`]) and timing ([`timing`]). Everything is loaded dynamically: without a driver or a GPU the library still
//! builds and runs, and [`is_available`] says false.

mod cache_file;
pub mod compile;
pub mod device;
pub mod driver_cache;
pub mod host_memory;
mod kernel_sources;
pub mod launch;
pub mod libs;
pub mod limits;
mod load_stats;
#[cfg(feature = "nccl")]
pub mod nccl;
mod nvrtc;
pub(crate) mod scratch;
pub mod timing;
pub mod trace;
pub mod work_time;

pub use device::{device_count, gpu, gpu_at, setup_time, Gpu};

/// True when a CUDA driver and at least one device can be used.
pub fn is_available() -> bool {
    gpu().is_ok()
}
