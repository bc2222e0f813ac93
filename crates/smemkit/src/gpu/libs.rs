//! Opens the CUDA driver's and NVRTC's shared libraries once per process and keeps them open.
//! cudarc's `is_culib_present` probe opens a library and closes it again, and its first call then
//! opens it anew: for NVRTC (110 MB) that is two loads of 10-80 ms each. Opened here under the
//! names cudarc tries, in its order, the library stays loaded, and cudarc's own open finds it.

use std::sync::OnceLock;

/// Whether `lib` (`"cuda"`, `"nvrtc"`) can be opened; the first success stays open for the
/// process. Each library is tried once per process.
fn keep_open(lib: &'static str, slot: &OnceLock<bool>) -> bool {
    *slot.get_or_init(|| {
        let _t = super::trace::span(match lib {
            "cuda" => "load libcuda",
            _ => "load libnvrtc",
        });
        for name in cudarc::get_lib_name_candidates(lib) {
            // SAFETY: loading NVIDIA's libraries runs their initialisers, which is what cudarc's
            // own load does too; no symbol is called here.
            if let Ok(l) = unsafe { libloading::Library::new(name) } {
                // Kept for the process: cudarc loads the same name and takes this copy.
                std::mem::forget(l);
                return true;
            }
        }
        false
    })
}

/// The CUDA driver library (`libcuda.so`), opened and kept.
pub fn driver() -> bool {
    static SLOT: OnceLock<bool> = OnceLock::new();
    keep_open("cuda", &SLOT)
}

/// NVRTC (`libnvrtc.so.13`), opened and kept. Called only when a kernel must be compiled: a
/// process whose kernels are all in the cache never loads it.
pub fn nvrtc() -> bool {
    static SLOT: OnceLock<bool> = OnceLock::new();
    keep_open("nvrtc", &SLOT)
}

/// Whether NVRTC is mapped into this process (by [`nvrtc`] or by any other path, cudarc's own
/// included), from `/proc/self/maps`; false where that cannot be read.
pub fn nvrtc_loaded() -> bool {
    std::fs::read_to_string("/proc/self/maps").is_ok_and(|m| m.contains("libnvrtc"))
}
