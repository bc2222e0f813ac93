//! The CUDA driver's own cache of compiled modules (`CUDA_CACHE_PATH`, by default
//! `~/.nv/ComputeCache`, 256 MB). It exists to spare the driver compiling PTX again; the library
//! hands the driver CUBINs for the device's exact architecture, which need no compiling, yet the
//! driver stores them there too, so that folder grows with every kernel we load and adds nothing.
//! A process that opens CUDA through this library can turn it off before the driver starts.
//!
//! The driver reads `CUDA_CACHE_DISABLE` once, when it is initialised, so the switch must be set
//! before the first `cuInit` and, since changing the environment while another thread reads it
//! is undefined behaviour, while the process has one thread: the `smemkit` binary does so first
//! thing in `main`. A library user may call [`disable_unless_needed`] the same way, or set
//! `CUDA_CACHE_DISABLE=1` themselves. Where this machine has needed the PTX fallback (NVRTC made
//! no CUBIN for the device, or the driver refused one; the kernel cache then holds `.ptx` files)
//! the driver's cache is left on: there it spares a JIT compile per process.

use std::ffi::OsStr;

/// Whether to turn the driver's cache off: only when the user has not chosen (the variable is
/// unset) and the machine has not needed PTX.
pub fn should_disable(user_choice: Option<&OsStr>, kernel_cache_holds_ptx: bool) -> bool {
    user_choice.is_none() && !kernel_cache_holds_ptx
}

/// Sets `CUDA_CACHE_DISABLE=1` when [`should_disable`] says so; returns whether it did.
///
/// # Safety
/// No other thread may be running (one could be reading the environment), and CUDA must not have
/// been initialised yet in this process (the driver would not see it). Call it first in `main`.
pub unsafe fn disable_unless_needed() -> bool {
    let holds_ptx = super::compile::disk_cache_dir()
        .is_some_and(|dir| super::compile::holds_file_ending(&dir, ".ptx"));
    let disable = should_disable(crate::config::cuda_cache_disable().as_deref(), holds_ptx);
    if disable {
        std::env::set_var(crate::config::CUDA_CACHE_DISABLE, "1");
    }
    disable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_only_when_the_user_has_not_chosen_and_no_ptx_was_needed() {
        assert!(should_disable(None, false));
        assert!(
            !should_disable(None, true),
            "PTX fallback: the driver's JIT cache helps"
        );
        assert!(
            !should_disable(Some(OsStr::new("0")), false),
            "the user keeps it on"
        );
        assert!(!should_disable(Some(OsStr::new("1")), false), "already off");
    }
}
