//! How the modules loaded into contexts came: as CUBIN (machine code for the device) or as PTX,
//! which the driver compiles and keeps in its own cache (`CUDA_CACHE_PATH`). PTX is only a
//! fallback, so each PTX load is kept with its reason, for the trace and for the GPU test that
//! expects none on Hopper.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use super::compile::Image;

static CUBIN_LOADS: AtomicU64 = AtomicU64::new(0);
static PTX_LOADS: AtomicU64 = AtomicU64::new(0);

/// Why each module loaded as PTX (the first 64) was not a CUBIN.
fn ptx_reasons() -> &'static Mutex<Vec<String>> {
    static R: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(Vec::new()))
}

/// Counts a module loaded into a context: a CUBIN, or PTX for `reason` (which the driver compiles
/// and keeps in its own cache, `CUDA_CACHE_PATH`).
pub(crate) fn count_load(image: &Image, what: &str, reason: Option<&str>) {
    match image {
        Image::Cubin(_) => {
            CUBIN_LOADS.fetch_add(1, Ordering::Relaxed);
        }
        Image::Ptx(_) => {
            PTX_LOADS.fetch_add(1, Ordering::Relaxed);
            let why = format!("{what}: {}", reason.unwrap_or("no CUBIN was built"));
            if super::trace::enabled() {
                eprintln!("smemkit trace: module loaded from PTX (the driver compiles it): {why}");
            }
            let mut r = ptx_reasons().lock().expect("reasons lock");
            if r.len() < 64 {
                r.push(why);
            }
        }
    }
}

/// The modules this process loaded from PTX so far, each with why its CUBIN was not used.
pub fn ptx_load_reasons() -> Vec<String> {
    ptx_reasons().lock().expect("reasons lock").clone()
}

/// Modules loaded as CUBIN so far.
pub(crate) fn cubin_loads() -> u64 {
    CUBIN_LOADS.load(Ordering::Relaxed)
}

/// Modules loaded as PTX so far.
pub(crate) fn ptx_loads() -> u64 {
    PTX_LOADS.load(Ordering::Relaxed)
}
