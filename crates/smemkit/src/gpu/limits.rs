//! The device limits that plans depend on, read from the device by [`crate::gpu::device`] or taken
//! from a known GPU for planning without one.

/// What the planner needs to know about the device (read from it by [`crate::gpu::device`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    pub sm_count: u32,
    /// Opt-in dynamic shared memory per block, in bytes (232448 on the H100).
    pub smem_per_block_optin: u32,
    pub smem_per_sm: u32,
    /// 0 when the device has no clusters (compute capability below 9.0).
    pub max_cluster_portable: u32,
    pub max_cluster_nonportable: u32,
    pub l2_bytes: u32,
    pub compute_capability: (u32, u32),
}

impl DeviceLimits {
    /// The H100 80GB HBM3 of the device machine (for tests and `smemkit plan` without a GPU).
    pub const H100: DeviceLimits = DeviceLimits {
        sm_count: 132,
        smem_per_block_optin: 232_448,
        smem_per_sm: 233_472,
        max_cluster_portable: 8,
        max_cluster_nonportable: 16,
        l2_bytes: 52_428_800,
        compute_capability: (9, 0),
    };

    pub fn has_clusters(&self) -> bool {
        self.compute_capability.0 >= 9 && self.max_cluster_portable > 1
    }
}
