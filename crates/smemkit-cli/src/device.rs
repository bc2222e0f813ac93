//! The device limits the planner works with: the real GPU's when one can be opened, otherwise the
//! H100's (so `smemkit plan` is useful on a machine without a GPU), with a line saying which.

use smemkit::internals::histogram::plan::DeviceLimits;

/// The limits to plan with, and a line describing where they came from.
pub fn device_limits() -> (DeviceLimits, String) {
    match smemkit::internals::gpu::gpu() {
        Ok(gpu) => (
            gpu.limits,
            format!("(limits of the {} in this machine)", gpu.name),
        ),
        Err(e) => (
            DeviceLimits::H100,
            format!("(no GPU found: limits of an H100 80GB HBM3; {e})"),
        ),
    }
}
