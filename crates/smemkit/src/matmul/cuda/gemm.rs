//! Products on device memory: the problem ([`DeviceGemm`]), its checks, and a variant prepared
//! for it ([`PreparedGemm`], split-K included).

use super::*;
use crate::gpu::compile::Keep;

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
    pub(super) fn vec_flags(&self) -> (i32, i32, i32) {
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

/// As [`compile_variant`] for a candidate the autotuner may not choose: the build stays out of
/// the disk cache until [`keep_variant`].
pub fn compile_trial(g: &Gpu, variant: Variant, trans_a: bool, trans_b: bool) -> Result<()> {
    let (src, defs, name, _, _) = variant.compile_unit(trans_a, trans_b);
    g.function_kept(src, &defs, name, Keep::Trial).map(|_| ())
}

/// Writes a variant built by [`compile_trial`] to the disk cache (the autotuner's choice).
pub fn keep_variant(g: &Gpu, variant: Variant, trans_a: bool, trans_b: bool) {
    let (src, defs, name, _, _) = variant.compile_unit(trans_a, trans_b);
    g.keep_on_disk(src, &defs, name);
}

/// A kernel bound to a product, ready to launch on the device's stream.
pub struct PreparedGemm {
    pub(super) func: CudaFunction,
    pub(super) cfg: LaunchConfig,
    pub(super) problem: DeviceGemm,
    /// Split K: the partial products and the kernel that sums them into C.
    pub(super) split: Option<SplitK>,
    pub variant: Variant,
}

pub(super) struct SplitK {
    pub(super) parts: u32,
    pub(super) workspace: CudaSlice<f32>,
    pub(super) reduce: CudaFunction,
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
