//! The device limits the planner works with. Today there is no GPU query here: every caller gets
//! the H100's limits and a line saying so. The CUDA engine will return the real device's limits
//! from this one function, and `smemkit plan` follows without change.

use smemkit::plan::DeviceLimits;

/// The limits to plan with, and a line describing where they came from.
pub fn device_limits() -> (DeviceLimits, String) {
    (
        DeviceLimits::H100,
        "(no GPU found: limits of an H100 80GB HBM3)".to_string(),
    )
}
