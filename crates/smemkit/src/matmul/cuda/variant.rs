//! The kernel variants (the classic progression and the warp-tiled configurations), their
//! names and compile defines.

use super::*;

/// One concrete kernel: what [`MatmulKernel`] names once `Auto` and `WarpTiled` are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// A kernel of `matmul.cu`: tiled16, regblock, vec4 or async.
    Classic(MatmulKernel),
    /// The FP32 warp-tiled kernel with a tile configuration.
    Warp(WarpConfig),
    /// The TF32 tensor-core kernel with a tile configuration.
    Tf32(WarpConfig),
}

impl Variant {
    /// Printable name, e.g. `async`, `warp:128x128x16-w64x32-s3-b1`.
    pub fn name(&self) -> String {
        match self {
            Variant::Classic(k) => k.name().to_string(),
            Variant::Warp(c) => format!("warp:{}", c.name()),
            Variant::Tf32(c) => format!("tf32:{}", c.name()),
        }
    }

    /// The variant a fixed kernel choice names; `None` for `Auto`, which needs the autotuner.
    pub fn fixed(kernel: MatmulKernel) -> Option<Variant> {
        match kernel {
            MatmulKernel::Auto => None,
            MatmulKernel::WarpTiled => Some(Variant::Warp(WarpConfig::DEFAULT)),
            MatmulKernel::Tf32 => Some(Variant::Tf32(WarpConfig::TF32)),
            k => Some(Variant::Classic(k)),
        }
    }

    /// Source, defines, entry point, threads per block and dynamic shared memory.
    pub(super) fn compile_unit(
        &self,
        trans_a: bool,
        trans_b: bool,
    ) -> (
        &'static crate::gpu::compile::KernelSource,
        Vec<(&'static str, String)>,
        &'static str,
        u32,
        u32,
    ) {
        match self {
            Variant::Classic(k) => {
                let (name, _, block) = classic_shape(*k);
                (
                    &MATMUL,
                    defines(trans_a, trans_b),
                    name,
                    block.0 * block.1,
                    0,
                )
            }
            Variant::Warp(c) => (
                &MATMUL_WARP,
                c.defines(trans_a, trans_b, false),
                "matmul_warp",
                c.threads(),
                c.smem_bytes(false),
            ),
            Variant::Tf32(c) => (
                &MATMUL_WARP,
                c.defines(trans_a, trans_b, true),
                "matmul_tf32",
                c.threads(),
                c.smem_bytes(true),
            ),
        }
    }
}

/// Kernel name, block tile edge, and block shape of the `matmul.cu` kernels.
pub(super) fn classic_shape(kernel: MatmulKernel) -> (&'static str, usize, (u32, u32, u32)) {
    match kernel {
        MatmulKernel::Tiled16 => ("matmul_tiled16", 16, (16, 16, 1)),
        MatmulKernel::RegisterBlocked => ("matmul_regblock", 128, (256, 1, 1)),
        MatmulKernel::Vectorized => ("matmul_vec4", 128, (256, 1, 1)),
        // Async; the other kinds never reach here (see `Variant::fixed`).
        _ => ("matmul_async", 128, (256, 1, 1)),
    }
}

/// The kernel's entry point in `matmul.cu` (`matmul_warp` / `matmul_tf32` in `matmul_warp.cu`).
pub fn kernel_name(kernel: MatmulKernel) -> &'static str {
    match kernel {
        MatmulKernel::WarpTiled | MatmulKernel::Auto => "matmul_warp",
        MatmulKernel::Tf32 => "matmul_tf32",
        k => classic_shape(k).0,
    }
}

/// The defines a pair of transpose flags compiles with.
pub fn defines(trans_a: bool, trans_b: bool) -> Vec<(&'static str, String)> {
    vec![
        ("TRANS_A", (trans_a as u8).to_string()),
        ("TRANS_B", (trans_b as u8).to_string()),
    ]
}

/// The defines of a warp-tiled configuration (FP32, or TF32), for compile checks.
pub fn warp_defines(
    config: &WarpConfig,
    trans_a: bool,
    trans_b: bool,
    tf32: bool,
) -> Vec<(&'static str, String)> {
    config.defines(trans_a, trans_b, tf32)
}
