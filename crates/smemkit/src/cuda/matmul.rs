//! Matrix multiply on the GPU with the kernels of `kernels/matmul.cu`: copies the spans of A, B and
//! C that the views cover to the device, launches the chosen kernel (compiled per pair of transpose
//! flags, so the kernels index without run-time branches on layout), and copies C's rows back.
//! When beta is 0 the kernel must not read C, so C's device copy is a scratch buffer poisoned with
//! NaN instead of a copy: an output element that no thread wrote comes back as NaN.
//!
//! Not yet run on a GPU: the kernels are compile-checked by NVRTC, the tests in
//! `tests/gpu_matmul.rs` wait for a device.

use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use super::compile::MATMUL;
use super::device::{cuda_err, gpu, Gpu};
use super::launch::check;
use crate::error::{Error, Result};
use crate::matmul::{span, MatmulKernel, MatrixMut, MatrixRef};

/// Largest M, N or K: the kernels index tiles with 32-bit ints and add up to a tile to them.
pub const MAX_DIM: usize = 1 << 30;
/// Largest grid y dimension (block rows of C).
const MAX_GRID_Y: usize = 65_535;

/// Kernel name, block tile edge, and block shape.
fn kernel_shape(kernel: MatmulKernel) -> (&'static str, usize, (u32, u32, u32)) {
    match kernel {
        MatmulKernel::Tiled16 => ("matmul_tiled16", 16, (16, 16, 1)),
        MatmulKernel::RegisterBlocked => ("matmul_regblock", 128, (256, 1, 1)),
        MatmulKernel::Vectorized => ("matmul_vec4", 128, (256, 1, 1)),
        MatmulKernel::AsyncCopy => ("matmul_async", 128, (256, 1, 1)),
    }
}

/// The kernel's entry point in `matmul.cu`.
pub fn kernel_name(kernel: MatmulKernel) -> &'static str {
    kernel_shape(kernel).0
}

/// The defines a pair of transpose flags compiles with.
pub fn defines(trans_a: bool, trans_b: bool) -> Vec<(&'static str, String)> {
    vec![
        ("TRANS_A", (trans_a as u8).to_string()),
        ("TRANS_B", (trans_b as u8).to_string()),
    ]
}

/// The view's span on the device (checked views: the span lies inside the slice).
fn upload(g: &Gpu, x: &MatrixRef<f32>, what: &str) -> Result<CudaSlice<f32>> {
    let n = span(x.rows, x.cols, x.ld).unwrap_or(0);
    g.stream.clone_htod(&x.data[..n]).map_err(cuda_err(what))
}

/// C's span on the device: a copy when the kernel reads C (beta != 0), else NaN-poisoned scratch.
fn upload_c(g: &Gpu, c: &MatrixMut<f32>, len: usize, beta: f32) -> Result<CudaSlice<f32>> {
    if beta != 0.0 {
        return g
            .stream
            .clone_htod(&c.data[..len])
            .map_err(cuda_err("copying C to the device"));
    }
    // SAFETY: every byte is set by the memset below before anything reads it.
    let d = unsafe { g.stream.alloc::<f32>(len) }.map_err(cuda_err("allocating C"))?;
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

/// C = alpha * op(A) * op(B) + beta * C for views checked by [`crate::matmul`], M, N, K > 0.
pub fn matmul(
    a: &MatrixRef<f32>,
    b: &MatrixRef<f32>,
    c: &mut MatrixMut<f32>,
    alpha: f32,
    beta: f32,
    kernel: MatmulKernel,
) -> Result<()> {
    let (m, k) = a.op_shape();
    let n = b.op_shape().1;
    if m.max(n).max(k) > MAX_DIM {
        return Err(Error::InvalidArgument(format!(
            "the GPU matmul takes M, N and K up to {MAX_DIM}; this product is {m} x {n} x {k}"
        )));
    }
    let (name, tile, block) = kernel_shape(kernel);
    let grid = (n.div_ceil(tile), m.div_ceil(tile));
    if grid.1 > MAX_GRID_Y {
        return Err(Error::InvalidArgument(format!(
            "kernel {} takes at most {} rows of C ({} tile rows); C has {m}",
            kernel.name(),
            MAX_GRID_Y * tile,
            MAX_GRID_Y
        )));
    }
    let g = gpu()?;
    g.bind()?;
    let f = g.function(&MATMUL, &defines(a.transposed, b.transposed), name)?;
    let d_a = upload(&g, a, "copying A to the device")?;
    let d_b = upload(&g, b, "copying B to the device")?;
    let c_len = span(m, n, c.ld).unwrap_or(0);
    let d_c = upload_c(&g, c, c_len, beta)?;
    let (pa, pb, pc) = (
        d_a.device_ptr(&g.stream).0,
        d_b.device_ptr(&g.stream).0,
        d_c.device_ptr(&g.stream).0,
    );
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let (lda, ldb, ldc) = (a.ld as i64, b.ld as i64, c.ld as i64);
    // Fresh allocations are 256-byte aligned, so 16-byte access needs only ld % 4 == 0.
    let (vec_a, vec_b, vec_c) = (
        (a.ld % 4 == 0) as i32,
        (b.ld % 4 == 0) as i32,
        (c.ld % 4 == 0) as i32,
    );
    let cfg = LaunchConfig {
        grid_dim: (grid.0 as u32, grid.1 as u32, 1),
        block_dim: block,
        shared_mem_bytes: 0,
    };
    let mut l = g.stream.launch_builder(&f);
    l.arg(&pa).arg(&pb).arg(&pc);
    l.arg(&mi).arg(&ni).arg(&ki);
    l.arg(&lda).arg(&ldb).arg(&ldc);
    l.arg(&alpha).arg(&beta);
    l.arg(&vec_a).arg(&vec_b).arg(&vec_c);
    // SAFETY: matmul_*(a, b, c, M, N, K, lda, ldb, ldc, alpha, beta, vec_a, vec_b, vec_c): every
    // kernel has this parameter list. a, b and c hold the spans of checked views of op(A) (M x K),
    // op(B) (K x N) and C (M x N) with these leading dimensions; the vec flags are set only where
    // ld % 4 == 0 on a 256-byte aligned allocation; the buffers outlive the launch (the copy back
    // below waits for it on the same stream).
    unsafe { l.launch(cfg) }.map_err(cuda_err("launching the matmul kernel"))?;
    let host = g
        .stream
        .clone_dtoh(&d_c)
        .map_err(cuda_err("reading C back (the kernel may have failed)"))?;
    // Row by row: the elements between C's rows are not the kernel's to change (and in scratch
    // they are NaN).
    for (dst, src) in c.data.chunks_mut(c.ld).zip(host.chunks(c.ld)).take(m) {
        dst[..n].copy_from_slice(&src[..n]);
    }
    Ok(())
}
