//! The CUDA engine (work in progress): run-time compiled kernels through cudarc and NVRTC.

pub mod histogram;

/// True when a CUDA driver and at least one device can be used.
pub fn is_available() -> bool {
    false
}
