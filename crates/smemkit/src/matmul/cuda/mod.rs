//! Matrix multiply on the GPU. Two layers:
//!
//! - [`DeviceGemm`] + [`prepare`]: a product whose operands already live on the device, bound to
//!   one kernel variant ([`Variant`]: a step of the `kernels/matmul.cu` progression, a warp-tiled
//!   configuration of `kernels/matmul_warp.cu`, or its TF32 tensor-core twin) and launched as
//!   often as wanted. The benchmark times these launches alone; the autotuner
//!   ([`autotune`]) compares variants with them.
//! - [`matmul`]: the host API's engine. It copies the spans of A, B and C that the views cover to
//!   the device, launches, and copies C's rows back. When beta is 0 the kernels must not read C, so
//!   C's device copy is a scratch buffer poisoned with NaN instead of a copy: an output element
//!   that no thread wrote comes back as NaN.
//!
//! Kernels are compiled per pair of transpose flags (and per tile configuration), so they index
//! without run-time branches on layout. The 16-byte paths are enabled per operand only where the
//! device address and the leading dimension are both multiples of 4 floats; otherwise the kernels
//! take their scalar, bounds-checked paths.

pub mod autotune;

use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use crate::error::{Error, Result};
use crate::gpu::compile::{MATMUL, MATMUL_WARP};
use crate::gpu::device::{cuda_err, gpu, Gpu};
use crate::gpu::launch::{check, prepare_function, LaunchShape};
use crate::matmul::{span, MatmulKernel, MatrixMut, MatrixRef};

/// Largest M, N or K: the kernels index tiles with 32-bit ints and add up to a tile to them.
pub const MAX_DIM: usize = 1 << 30;
/// Largest grid y dimension (block rows of C) of the `matmul.cu` kernels.
const MAX_GRID_Y: usize = 65_535;

/// One tile configuration of `kernels/matmul_warp.cu` (see the file's header for the meaning of
/// each field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WarpConfig {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub wm: u32,
    pub wn: u32,
    pub stages: u32,
    /// Blocks per SM asked of the compiler (`__launch_bounds__`): 2 caps registers at 128.
    pub min_blocks: u32,
    /// K split in this many parts (a launch parameter, not compiled in): each part writes a
    /// partial product to a workspace that a second kernel sums into C, so that products with
    /// few tiles of C still fill the GPU. 1: no split.
    pub split: u32,
    /// The prefetching FP32 loop (`PREFETCH=1` in matmul_warp.cu): fragments of step k + 1 read
    /// during the FMAs of step k, one barrier per tile; the warp tile then sets the lane tile
    /// (WM/8 lane rows: 64 x 32 gives 8 x 8 outputs per lane, 64 x 64 gives 8 x 16).
    pub prefetch: bool,
}

impl WarpConfig {
    /// The `warp` kernel: 128 x 128 x 8 block tiles, 8 warps of 64 x 32, four stages, two blocks
    /// per SM (ptxas fits it in 128 registers without spilling for every layout).
    pub const DEFAULT: WarpConfig = WarpConfig {
        bm: 128,
        bn: 128,
        bk: 8,
        wm: 64,
        wn: 32,
        stages: 4,
        min_blocks: 2,
        split: 1,
        prefetch: false,
    };

    /// The prefetching loop on the default tiles: 128 x 128 x 8, 8 warps of 64 x 32 (8 x 8 per
    /// lane), three stages, two blocks per SM (127 registers by ptxas 13.0 for sm_90a, no spill in
    /// any layout).
    pub const PREFETCH: WarpConfig = WarpConfig {
        stages: 3,
        prefetch: true,
        ..WarpConfig::DEFAULT
    };

    /// The TF32 kernel's tiles: 8 warps, each 4 x 4 mma tiles of 16 x 8.
    pub const TF32: WarpConfig = WarpConfig {
        bm: 128,
        bn: 128,
        bk: 16,
        wm: 64,
        wn: 32,
        stages: 3,
        min_blocks: 1,
        split: 1,
        prefetch: false,
    };

    /// The configurations the autotuner measures (the default first). Registers by ptxas 13.0
    /// for sm_90a (NN layout): 127, 128, 127, 149, 149, 151,
    /// 153, 127, 127, 128 for the first ten, then 127, 123, 128, 235, 237, 241, 127, 127, 167 and
    /// 127 for those added in session 3, 237, 241, 239 and 233 for the four of session 5 (with
    /// the unchecked loads and shifted edge tiles of session 8). None spills, except
    /// 128x128x16-w64x32-s3-b2-p with both operands transposed (4 bytes). The split-K ones are
    /// measured only for products with fewer tiles than the GPU has SMs.
    pub const CANDIDATES: [WarpConfig; 24] = [
        WarpConfig::DEFAULT,
        WarpConfig {
            stages: 3,
            ..WarpConfig::DEFAULT
        },
        // One block per SM, registers unconstrained.
        WarpConfig {
            min_blocks: 1,
            ..WarpConfig::DEFAULT
        },
        WarpConfig {
            bk: 16,
            stages: 3,
            min_blocks: 1,
            ..WarpConfig::DEFAULT
        },
        WarpConfig {
            bk: 16,
            stages: 2,
            min_blocks: 1,
            ..WarpConfig::DEFAULT
        },
        // 128 x 64: twice the blocks, for products with few tiles of 128 x 128.
        WarpConfig {
            bn: 64,
            bk: 16,
            stages: 3,
            min_blocks: 2,
            ..WarpConfig::DEFAULT
        },
        // 64 x 64 with two warps of 32 x 64: for small products.
        WarpConfig {
            bm: 64,
            bn: 64,
            bk: 16,
            wm: 32,
            wn: 64,
            stages: 3,
            min_blocks: 4,
            split: 1,
            prefetch: false,
        },
        WarpConfig {
            split: 2,
            ..WarpConfig::DEFAULT
        },
        WarpConfig {
            split: 4,
            ..WarpConfig::DEFAULT
        },
        // Double buffering at 2 blocks per SM (16.9 KB of shared memory per block, no spill at
        // 128 registers in any layout): on the H200 run at 3181add the 3-stage candidate beat the
        // 4-stage default by 2-3 % at every large shape, though one BK-8 tile already takes ~1 us,
        // longer than a DRAM access; if the gain came from the smaller shared-memory footprint,
        // 2 stages take it further. (H100, 7b30472: never the tuner's choice.)
        WarpConfig {
            stages: 2,
            ..WarpConfig::DEFAULT
        },
        // Session 3: the prefetching loop (fragments of step k + 1 read during the FMAs of step
        // k, one barrier per tile). On the H100 at 7b30472 the tuner picked the 128 x 256 one
        // below at 2048^3 and 4096^3, split K 4 at 1000^3 and 1024^3, the 4-warp 128 x 128 one at
        // 4097x4095x4099 (bench/NOTES.md).
        WarpConfig::PREFETCH,
        WarpConfig {
            stages: 2,
            ..WarpConfig::PREFETCH
        },
        // BK 16: half the barriers and per-tile load work, still 127 registers at 2 blocks/SM.
        WarpConfig {
            bk: 16,
            ..WarpConfig::PREFETCH
        },
        // 8 x 16 outputs per lane (128 accumulators, 6 fragment loads per 128 FMAs), one block
        // of 8 warps per SM, block tiles of 128 x 256 and 256 x 128.
        WarpConfig {
            bn: 256,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bm: 256,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        // 8 x 16 per lane on 128 x 128 tiles: 4 warps, two blocks per SM.
        WarpConfig {
            wn: 64,
            ..WarpConfig::PREFETCH
        },
        // Split K for products with few tiles (1000^3: 64 tiles of 128 x 128).
        WarpConfig {
            split: 2,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            split: 4,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bm: 64,
            bn: 64,
            bk: 16,
            wm: 32,
            wn: 64,
            stages: 3,
            min_blocks: 4,
            split: 1,
            prefetch: true,
        },
        // The original loop at BK 16 and 2 blocks per SM: it spilled 104-156 bytes before the
        // operands' per-group addresses were folded into one (session 3), and fits now.
        WarpConfig {
            bk: 16,
            stages: 3,
            ..WarpConfig::DEFAULT
        },
        // Session 5: the 8 x 16 lane tiles that won at 2048^3 and 4096^3 (one block of 8 warps
        // per SM), with BK 16 (half the barriers and per-tile load work; 233-249 registers, no
        // spill) and with a fourth stage of BK 8 (two tiles of loads in flight behind the one
        // being multiplied; 75 KB of shared memory).
        WarpConfig {
            bn: 256,
            bk: 16,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bm: 256,
            bk: 16,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bn: 256,
            wn: 64,
            stages: 4,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        // 4 warps of 64 x 64 on 128 x 128 x 16 tiles, two blocks per SM (237-255 registers).
        WarpConfig {
            bk: 16,
            wn: 64,
            ..WarpConfig::PREFETCH
        },
    ];

    pub fn threads(&self) -> u32 {
        (self.bm / self.wm) * (self.bn / self.wn) * 32
    }

    /// Floats of padding per shared-memory row: 4 for the FP32 kernel (16-byte rows), 8 for TF32
    /// (conflict-free mma fragment reads).
    fn pad(tf32: bool) -> u32 {
        if tf32 {
            8
        } else {
            4
        }
    }

    /// Dynamic shared memory of one block.
    pub fn smem_bytes(&self, tf32: bool) -> u32 {
        let pad = Self::pad(tf32);
        self.stages * self.bk * (self.bm + pad + self.bn + pad) * 4
    }

    /// A printable, parseable name, e.g. `128x128x16-w64x32-s3-b1` (`-p` appended for the
    /// prefetching loop, then `-k2` for a split).
    pub fn name(&self) -> String {
        let split = if self.split > 1 {
            format!("-k{}", self.split)
        } else {
            String::new()
        };
        let prefetch = if self.prefetch { "-p" } else { "" };
        format!(
            "{}x{}x{}-w{}x{}-s{}-b{}{prefetch}{split}",
            self.bm, self.bn, self.bk, self.wm, self.wn, self.stages, self.min_blocks
        )
    }

    /// Outputs per lane, rows x columns: 8 x 8 for the original loop; with `prefetch`, WM/8 lane
    /// rows and the columns that the warp tile leaves to each lane.
    pub fn lane_tile(&self) -> (u32, u32) {
        if !self.prefetch {
            return (8, 8);
        }
        let lanes_m = self.wm / 8;
        let lanes_n = 32 / lanes_m.max(1);
        (8, self.wn / lanes_n.max(1))
    }

    /// Blocks of the product's grid: tiles of C times the K split.
    pub fn blocks(&self, m: usize, n: usize) -> usize {
        m.div_ceil(self.bm as usize) * n.div_ceil(self.bn as usize) * self.split.max(1) as usize
    }

    fn defines(&self, trans_a: bool, trans_b: bool, tf32: bool) -> Vec<(&'static str, String)> {
        let mut d = defines(trans_a, trans_b);
        for (k, v) in [
            ("BM", self.bm),
            ("BN", self.bn),
            ("BK", self.bk),
            ("WM", self.wm),
            ("WN", self.wn),
            ("STAGES", self.stages),
            ("MINB", self.min_blocks),
            ("PAD", Self::pad(tf32)),
            ("TF32", tf32 as u32),
            ("PREFETCH", self.prefetch as u32),
        ] {
            d.push((k, v.to_string()));
        }
        d
    }
}

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
    fn compile_unit(
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
fn classic_shape(kernel: MatmulKernel) -> (&'static str, usize, (u32, u32, u32)) {
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

/// C = alpha * op(A) * op(B) + beta * C on device memory, row-major: op(A) is M x K, op(B) K x N,
/// C M x N; `a`, `b`, `c` are device addresses of element (0, 0) of the stored matrices, `ld*`
/// their leading dimensions in elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceGemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: u64,
    pub lda: usize,
    pub trans_a: bool,
    pub b: u64,
    pub ldb: usize,
    pub trans_b: bool,
    pub c: u64,
    pub ldc: usize,
    pub alpha: f32,
    pub beta: f32,
}

impl DeviceGemm {
    /// Checks what the kernels assume: M, N, K in 1..=2^30 and leading dimensions that cover the
    /// stored columns.
    pub fn validate(&self) -> Result<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        if m == 0 || n == 0 || k == 0 || m.max(n).max(k) > MAX_DIM {
            return Err(Error::InvalidArgument(format!(
                "the GPU matmul kernels take M, N and K from 1 to {MAX_DIM}; this product is {m} x {n} x {k}"
            )));
        }
        let a_cols = if self.trans_a { m } else { k };
        let b_cols = if self.trans_b { k } else { n };
        for (matrix, ld, cols) in [
            ("A", self.lda, a_cols),
            ("B", self.ldb, b_cols),
            ("C", self.ldc, n),
        ] {
            if ld < cols {
                return Err(Error::LeadingDimension { matrix, ld, cols });
            }
        }
        Ok(())
    }

    /// Whether 16-byte accesses are allowed for A, B and C.
    fn vec_flags(&self) -> (i32, i32, i32) {
        let ok = |ptr: u64, ld: usize| (ptr % 16 == 0 && ld % 4 == 0) as i32;
        (
            ok(self.a, self.lda),
            ok(self.b, self.ldb),
            ok(self.c, self.ldc),
        )
    }
}

/// Compiles and loads the variant's kernel for a pair of transpose flags (through the caches), so
/// that later launches find it ready; callers may do this from several threads at once.
pub fn compile_variant(g: &Gpu, variant: Variant, trans_a: bool, trans_b: bool) -> Result<()> {
    let (src, defs, name, _, _) = variant.compile_unit(trans_a, trans_b);
    g.function(src, &defs, name).map(|_| ())
}

/// A kernel bound to a product, ready to launch on the device's stream.
pub struct PreparedGemm {
    func: CudaFunction,
    cfg: LaunchConfig,
    problem: DeviceGemm,
    /// Split K: the partial products and the kernel that sums them into C.
    split: Option<SplitK>,
    pub variant: Variant,
}

struct SplitK {
    parts: u32,
    workspace: CudaSlice<f32>,
    reduce: CudaFunction,
}

/// Compiles (or takes from the caches) the variant's kernel and sizes its grid for `p`.
pub fn prepare(g: &Gpu, p: &DeviceGemm, variant: Variant) -> Result<PreparedGemm> {
    p.validate()?;
    let (src, defs, name, threads, smem) = variant.compile_unit(p.trans_a, p.trans_b);
    let func = g.function(src, &defs, name)?;
    let config = match variant {
        Variant::Classic(k) => {
            let (_, tile, block) = classic_shape(k);
            let grid = (p.n.div_ceil(tile), p.m.div_ceil(tile));
            if grid.1 > MAX_GRID_Y {
                return Err(Error::InvalidArgument(format!(
                    "kernel {} takes at most {} rows of C ({MAX_GRID_Y} tile rows); C has {}",
                    k.name(),
                    MAX_GRID_Y * tile,
                    p.m
                )));
            }
            return Ok(PreparedGemm {
                func,
                cfg: LaunchConfig {
                    grid_dim: (grid.0 as u32, grid.1 as u32, 1),
                    block_dim: block,
                    shared_mem_bytes: 0,
                },
                problem: *p,
                split: None,
                variant,
            });
        }
        Variant::Warp(c) | Variant::Tf32(c) => c,
    };
    let tiles = p.m.div_ceil(config.bm as usize) * p.n.div_ceil(config.bn as usize);
    let parts = config.split.max(1);
    if tiles > i32::MAX as usize || parts > 65_535 {
        return Err(Error::InvalidArgument(format!(
            "{} x {} needs {tiles} blocks (split {parts}) of {}; the kernel numbers them with an int",
            p.m,
            p.n,
            variant.name()
        )));
    }
    if smem > g.limits.smem_per_block_optin {
        return Err(Error::InvalidArgument(format!(
            "{} needs {smem} bytes of shared memory per block; the device offers {}",
            variant.name(),
            g.limits.smem_per_block_optin
        )));
    }
    prepare_function(
        &func,
        &LaunchShape {
            grid: tiles as u32,
            block: threads,
            shared_bytes: smem,
            cluster: 1,
        },
        g.limits.smem_per_block_optin,
    )?;
    let split = if parts > 1 {
        let len = (parts as usize)
            .checked_mul(p.m)
            .and_then(|x| x.checked_mul(p.n))
            .ok_or_else(|| Error::InvalidArgument("split-K workspace too large".into()))?;
        // SAFETY: every slice is written by the split kernel (each block of each part writes its
        // whole tile, zeros where its K range is empty) before the reduction reads it.
        let workspace = unsafe { g.stream.alloc::<f32>(len) }
            .map_err(cuda_err("allocating the split-K workspace"))?;
        Some(SplitK {
            parts,
            workspace,
            reduce: g.function(src, &defs, "matmul_splitk_reduce")?,
        })
    } else {
        None
    };
    Ok(PreparedGemm {
        func,
        cfg: LaunchConfig {
            grid_dim: (tiles as u32, parts, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: smem,
        },
        problem: *p,
        split,
        variant,
    })
}

impl PreparedGemm {
    /// The product this launch computes.
    pub fn problem(&self) -> &DeviceGemm {
        &self.problem
    }

    /// Launches the kernel on the device's stream.
    ///
    /// # Safety
    /// The problem's addresses must hold views of the stated shapes and leading dimensions (A and
    /// B readable, C writable, and readable too when beta != 0) in this context, valid until the
    /// kernel has finished.
    pub unsafe fn launch(&self, g: &Gpu) -> Result<()> {
        let p = &self.problem;
        let (mi, ni, ki) = (p.m as i32, p.n as i32, p.k as i32);
        let (lda, ldb) = (p.lda as i64, p.ldb as i64);
        let (vec_a, vec_b, vec_c) = p.vec_flags();
        // Split K: the parts go to the dense workspace (ldc = N, alpha 1, beta 0).
        let (c, ldc, alpha, beta, vec_c) = match &self.split {
            Some(s) => (
                s.workspace.device_ptr(&g.stream).0,
                p.n as i64,
                1.0f32,
                0.0f32,
                (p.n % 4 == 0) as i32,
            ),
            None => (p.c, p.ldc as i64, p.alpha, p.beta, vec_c),
        };
        let mut l = g.stream.launch_builder(&self.func);
        l.arg(&p.a).arg(&p.b).arg(&c);
        l.arg(&mi).arg(&ni).arg(&ki);
        l.arg(&lda).arg(&ldb).arg(&ldc);
        l.arg(&alpha).arg(&beta);
        l.arg(&vec_a).arg(&vec_b).arg(&vec_c);
        // SAFETY: every matmul kernel takes (a, b, c, M, N, K, lda, ldb, ldc, alpha, beta, vec_a,
        // vec_b, vec_c); `prepare` validated the sizes (1..=2^30) and leading dimensions, the vec
        // flags are set only for 16-byte aligned addresses with ld % 4 == 0 (the workspace is a
        // fresh allocation), and the caller guarantees the memory; the workspace holds
        // parts x M x N floats, one dense slice per part (grid y).
        unsafe { l.launch(self.cfg) }.map_err(cuda_err("launching a matmul kernel"))?;
        if let Some(s) = &self.split {
            let parts = s.parts as i32;
            let (ldc, alpha, beta) = (p.ldc as i64, p.alpha, p.beta);
            let blocks = (p.m * p.n).div_ceil(256).clamp(1, 65_535 * 32) as u32;
            let mut r = g.stream.launch_builder(&s.reduce);
            r.arg(&c).arg(&p.c).arg(&mi).arg(&ni).arg(&ldc);
            r.arg(&parts).arg(&alpha).arg(&beta);
            // SAFETY: matmul_splitk_reduce(w, c, M, N, ldc, splits, alpha, beta): w is the
            // workspace the launch above filled on this stream, c the caller's C (M x N, ldc);
            // the grid-stride loop covers M * N with any grid.
            unsafe {
                r.launch(LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(cuda_err("launching the split-K reduction"))?;
        }
        Ok(())
    }
}

/// The view's span on the device (checked views: the span lies inside the slice).
fn upload(g: &Gpu, x: &MatrixRef<f32>, what: &str) -> Result<CudaSlice<f32>> {
    let n = span(x.rows, x.cols, x.ld).unwrap_or(0);
    g.stream.clone_htod(&x.data[..n]).map_err(cuda_err(what))
}

/// A device buffer of `len` floats filled with NaN (all-ones bytes).
pub fn nan_buffer(g: &Gpu, len: usize) -> Result<CudaSlice<f32>> {
    // SAFETY: every byte is set by the memset below before anything reads it.
    let d = unsafe { g.stream.alloc::<f32>(len.max(1)) }.map_err(cuda_err("allocating C"))?;
    let ptr = d.device_ptr(&g.stream).0;
    // SAFETY: `ptr` addresses len * 4 bytes of this context, written on its stream; all-ones bytes
    // are a NaN as an f32.
    unsafe {
        check(
            sys::cuMemsetD8Async(ptr, 0xFF, len * 4, g.stream.cu_stream()),
            "poisoning C's scratch buffer",
        )?;
    }
    Ok(d)
}

/// C's span on the device: a copy when the kernel reads C (beta != 0), else NaN-poisoned scratch.
fn upload_c(g: &Gpu, c: &MatrixMut<f32>, len: usize, beta: f32) -> Result<CudaSlice<f32>> {
    if beta != 0.0 {
        return g
            .stream
            .clone_htod(&c.data[..len])
            .map_err(cuda_err("copying C to the device"));
    }
    nan_buffer(g, len)
}

/// Dense row-major operands of one product on the device (for benchmarks and the tuner's users):
/// A (M x K), B (K x N) and C (M x N), and the [`DeviceGemm`] that multiplies them (alpha 1,
/// beta 0).
pub struct DenseProduct {
    pub a: CudaSlice<f32>,
    pub b: CudaSlice<f32>,
    pub c: CudaSlice<f32>,
    pub problem: DeviceGemm,
}

impl DenseProduct {
    /// Copies A and B to the device and allocates C (NaN-poisoned).
    pub fn upload(g: &Gpu, a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Result<Self> {
        if a.len() != m * k || b.len() != k * n {
            return Err(Error::InvalidArgument(format!(
                "{m} x {n} x {k}: A needs {} elements (has {}), B {} (has {})",
                m * k,
                a.len(),
                k * n,
                b.len()
            )));
        }
        let d_a = g.stream.clone_htod(a).map_err(cuda_err("copying A"))?;
        let d_b = g.stream.clone_htod(b).map_err(cuda_err("copying B"))?;
        let d_c = nan_buffer(g, m * n)?;
        let problem = DeviceGemm {
            m,
            n,
            k,
            a: d_a.device_ptr(&g.stream).0,
            lda: k,
            trans_a: false,
            b: d_b.device_ptr(&g.stream).0,
            ldb: n,
            trans_b: false,
            c: d_c.device_ptr(&g.stream).0,
            ldc: n,
            alpha: 1.0,
            beta: 0.0,
        };
        Ok(DenseProduct {
            a: d_a,
            b: d_b,
            c: d_c,
            problem,
        })
    }

    /// Fills C with NaN (all-ones bytes), so that an entry no kernel wrote cannot pass.
    pub fn poison_c(&self, g: &Gpu) -> Result<()> {
        let ptr = self.c.device_ptr(&g.stream).0;
        // SAFETY: `ptr` addresses C's len floats in this context, written on its stream.
        unsafe {
            check(
                sys::cuMemsetD8Async(ptr, 0xFF, self.c.len() * 4, g.stream.cu_stream()),
                "poisoning C",
            )
        }
    }

    /// C copied to the host (waits for the stream).
    pub fn read_c(&self, g: &Gpu) -> Result<Vec<f32>> {
        g.stream
            .clone_dtoh(&self.c)
            .map_err(cuda_err("reading C back (a kernel may have failed)"))
    }
}

/// Milliseconds of each of `runs` calls of `launch` after `warmup` untimed ones, every call
/// between its own pair of CUDA events, all enqueued before one wait at the end (so that no host
/// work sits between a start event and its launch while the device idles).
pub fn time_launches(
    g: &Gpu,
    warmup: usize,
    runs: usize,
    launch: &dyn Fn() -> Result<()>,
) -> Result<Vec<f32>> {
    for _ in 0..warmup {
        launch()?;
    }
    let ev = || {
        g.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("creating an event"))
    };
    let mut pairs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (start, end) = (ev()?, ev()?);
        start
            .record(&g.stream)
            .map_err(cuda_err("recording an event"))?;
        launch()?;
        end.record(&g.stream)
            .map_err(cuda_err("recording an event"))?;
        pairs.push((start, end));
    }
    g.stream.synchronize().map_err(cuda_err(
        "waiting for timed runs (a kernel may have failed)",
    ))?;
    pairs
        .iter()
        .map(|(s, e)| s.elapsed_ms(e).map_err(cuda_err("reading an event")))
        .collect()
}

/// The variant a kernel choice runs for `p` (the autotuner's for `Auto`).
pub fn resolve(g: &Gpu, p: &DeviceGemm, kernel: MatmulKernel) -> Result<Variant> {
    match Variant::fixed(kernel) {
        Some(v) => Ok(v),
        None => autotune::choose(g, p),
    }
}

/// What multiplies in [`matmul_with`]: one of our kernel variants, or cuBLAS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Variant(Variant),
    Cublas(crate::gpu::cublas::CublasMath),
}

/// C = alpha * op(A) * op(B) + beta * C for views checked by [`crate::matmul()`], M, N, K > 0.
pub fn matmul(
    a: &MatrixRef<f32>,
    b: &MatrixRef<f32>,
    c: &mut MatrixMut<f32>,
    alpha: f32,
    beta: f32,
    kernel: MatmulKernel,
) -> Result<()> {
    run(a, b, c, alpha, beta, false, &|g, p| {
        let variant = resolve(g, p, kernel)?;
        let prepared = prepare(g, p, variant)?;
        // SAFETY: `run` passes device copies of checked views that outlive the launch.
        unsafe { prepared.launch(g) }
    })
}

/// As [`matmul`] with a given engine; with `misalign`, every operand is placed 4 bytes past a
/// 16-byte boundary on the device, so that the kernels' 16-byte paths must switch themselves off
/// (the tests use this to reach the scalar paths with any leading dimension).
pub fn matmul_with(
    a: &MatrixRef<f32>,
    b: &MatrixRef<f32>,
    c: &mut MatrixMut<f32>,
    alpha: f32,
    beta: f32,
    engine: Engine,
    misalign: bool,
) -> Result<()> {
    crate::matmul::check(a, b, c)?;
    let (m, k) = a.op_shape();
    let n = b.op_shape().1;
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::InvalidArgument(
            "matmul_with takes M, N, K >= 1 (crate::matmul handles empty products)".into(),
        ));
    }
    let blas = match engine {
        Engine::Cublas(math) => Some(crate::gpu::cublas::Cublas::new(&gpu()?, math)?),
        Engine::Variant(_) => None,
    };
    run(
        a,
        b,
        c,
        alpha,
        beta,
        misalign,
        &|g, p| match (engine, &blas) {
            (Engine::Variant(v), _) => {
                let prepared = prepare(g, p, v)?;
                // SAFETY: `run` passes device copies of checked views that outlive the launch.
                unsafe { prepared.launch(g) }
            }
            // SAFETY: as above.
            (Engine::Cublas(_), Some(blas)) => unsafe { blas.sgemm(p) },
            (Engine::Cublas(_), None) => unreachable!("opened above"),
        },
    )
}

/// The view's span on the device, `offset` floats into its buffer.
fn upload_at(g: &Gpu, data: &[f32], offset: usize, what: &str) -> Result<CudaSlice<f32>> {
    let mut host = vec![0.0f32; offset];
    host.extend_from_slice(data);
    g.stream.clone_htod(&host).map_err(cuda_err(what))
}

/// Copies the views to the device (`misalign`: one float into each buffer), calls `launch` on
/// the device problem, and copies C's rows back.
#[allow(clippy::too_many_arguments)]
fn run(
    a: &MatrixRef<f32>,
    b: &MatrixRef<f32>,
    c: &mut MatrixMut<f32>,
    alpha: f32,
    beta: f32,
    misalign: bool,
    launch: &dyn Fn(&Gpu, &DeviceGemm) -> Result<()>,
) -> Result<()> {
    let (m, k) = a.op_shape();
    let n = b.op_shape().1;
    if m.max(n).max(k) > MAX_DIM {
        return Err(Error::InvalidArgument(format!(
            "the GPU matmul takes M, N and K up to {MAX_DIM}; this product is {m} x {n} x {k}"
        )));
    }
    let g = gpu()?;
    g.bind()?;
    let off = misalign as usize;
    let (d_a, d_b) = if misalign {
        let sa = span(a.rows, a.cols, a.ld).unwrap_or(0);
        let sb = span(b.rows, b.cols, b.ld).unwrap_or(0);
        (
            upload_at(&g, &a.data[..sa], 1, "copying A to the device")?,
            upload_at(&g, &b.data[..sb], 1, "copying B to the device")?,
        )
    } else {
        (
            upload(&g, a, "copying A to the device")?,
            upload(&g, b, "copying B to the device")?,
        )
    };
    let c_len = span(m, n, c.ld).unwrap_or(0);
    let d_c = if misalign {
        // The float before C is scratch; C itself is a copy or NaN as below.
        let mut host = vec![f32::NAN; c_len + 1];
        if beta != 0.0 {
            host[1..].copy_from_slice(&c.data[..c_len]);
        }
        g.stream
            .clone_htod(&host)
            .map_err(cuda_err("copying C to the device"))?
    } else {
        upload_c(&g, c, c_len, beta)?
    };
    let base = |d: &CudaSlice<f32>| d.device_ptr(&g.stream).0 + 4 * off as u64;
    let problem = DeviceGemm {
        m,
        n,
        k,
        a: base(&d_a),
        lda: a.ld,
        trans_a: a.transposed,
        b: base(&d_b),
        ldb: b.ld,
        trans_b: b.transposed,
        c: base(&d_c),
        ldc: c.ld,
        alpha,
        beta,
    };
    // d_a, d_b and d_c hold the spans of checked views of op(A) (M x K), op(B) (K x N) and C
    // (M x N) with these leading dimensions (C copied in when beta != 0); they outlive the launch,
    // since the copy back below waits for it on the same stream.
    launch(&g, &problem)?;
    let host = g
        .stream
        .clone_dtoh(&d_c)
        .map_err(cuda_err("reading C back (the kernel may have failed)"))?;
    // Row by row: the elements between C's rows are not the kernel's to change (and in scratch
    // they are NaN).
    for (dst, src) in c
        .data
        .chunks_mut(c.ld)
        .zip(host[off..].chunks(c.ld))
        .take(m)
    {
        dst[..n].copy_from_slice(&src[..n]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warp_configurations_fit_their_kernel() {
        for c in WarpConfig::CANDIDATES
            .iter()
            .chain([&WarpConfig::DEFAULT, &WarpConfig::TF32])
        {
            assert_eq!(c.bm % c.wm, 0, "{}", c.name());
            assert_eq!(c.bn % c.wn, 0, "{}", c.name());
            // The lanes tile the warp tile with whole float4 fragments.
            let (tm, tn) = c.lane_tile();
            assert_eq!((c.wm / tm) * (c.wn / tn), 32, "{}", c.name());
            assert_eq!(c.wm % tm, 0, "{}", c.name());
            assert_eq!(tn % 4, 0, "{}", c.name());
            let t = c.threads();
            assert_eq!((c.bm * c.bk / 4) % t, 0, "{}", c.name());
            assert_eq!((c.bn * c.bk / 4) % t, 0, "{}", c.name());
            // Within the H100's opt-in limit (and Ampere's 163 KiB).
            assert!(c.smem_bytes(true) <= 160 * 1024, "{}", c.name());
            // 64 accumulators + staging: 2 blocks per SM must fit 64K registers at <= 128 each.
            assert!(t * c.min_blocks <= 2048, "{}", c.name());
        }
        assert_eq!(WarpConfig::DEFAULT.smem_bytes(false), 4 * 8 * 264 * 4);
        let split = WarpConfig {
            split: 4,
            ..WarpConfig::DEFAULT
        };
        assert_eq!(split.name(), "128x128x8-w64x32-s4-b2-k4");
        assert_eq!(split.blocks(1000, 1000), 8 * 8 * 4);
        assert_eq!(WarpConfig::DEFAULT.blocks(129, 128), 2);
        assert_eq!(
            Variant::Warp(WarpConfig::DEFAULT).name(),
            "warp:128x128x8-w64x32-s4-b2"
        );
        assert_eq!(
            WarpConfig {
                split: 4,
                ..WarpConfig::PREFETCH
            }
            .name(),
            "128x128x8-w64x32-s3-b2-p-k4"
        );
        assert_eq!(WarpConfig::PREFETCH.lane_tile(), (8, 8));
        let wide = WarpConfig {
            bn: 256,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        };
        assert_eq!(wide.lane_tile(), (8, 16));
        assert_eq!(wide.threads(), 256);
        // Every candidate has its own name (the tuner's file stores names).
        for (i, a) in WarpConfig::CANDIDATES.iter().enumerate() {
            for b in &WarpConfig::CANDIDATES[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }

    #[test]
    fn device_problems_are_validated() {
        let p = DeviceGemm {
            m: 4,
            n: 8,
            k: 3,
            a: 0,
            lda: 3,
            trans_a: false,
            b: 0,
            ldb: 8,
            trans_b: false,
            c: 256,
            ldc: 8,
            alpha: 1.0,
            beta: 0.0,
        };
        assert!(p.validate().is_ok());
        assert_eq!(p.vec_flags(), (0, 1, 1));
        assert!(DeviceGemm { k: 0, ..p }.validate().is_err());
        assert!(DeviceGemm { ldb: 7, ..p }.validate().is_err());
        // A transposed: stored K x M, so lda must cover M = 4.
        assert!(DeviceGemm { trans_a: true, ..p }.validate().is_err());
        assert!(DeviceGemm {
            trans_a: true,
            lda: 4,
            ..p
        }
        .validate()
        .is_ok());
        // An address that is not 16-byte aligned turns the 16-byte path off.
        assert_eq!(DeviceGemm { c: 260, ..p }.vec_flags(), (0, 1, 0));
    }
}
