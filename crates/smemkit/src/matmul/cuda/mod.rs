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
pub mod cublas;

use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use crate::error::{Error, Result};
use crate::gpu::compile::{MATMUL, MATMUL_WARP};
use crate::gpu::device::{cuda_err, gpu, Gpu};
use crate::gpu::launch::{check, prepare_function, LaunchShape};
pub use crate::gpu::timing::time_launches;
use crate::matmul::matrix::{span, MatmulKernel, MatrixMut, MatrixRef};

mod warp_config;
pub use warp_config::*;
mod variant;
pub use variant::*;
mod gemm;
pub use gemm::*;
#[cfg(test)]
mod tests;

/// Largest M, N or K: the kernels index tiles with 32-bit ints and add up to a tile to them.
pub const MAX_DIM: usize = 1 << 30;
/// Largest grid y dimension (block rows of C) of the `matmul.cu` kernels.
const MAX_GRID_Y: usize = 65_535;

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
    Cublas(cublas::CublasMath),
}

/// C = alpha * op(A) * op(B) + beta * C for views checked by [`crate::matmul::matmul()`], M, N, K > 0.
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
    crate::matmul::matrix::check(a, b, c)?;
    let (m, k) = a.op_shape();
    let n = b.op_shape().1;
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::InvalidArgument(
            "matmul_with takes M, N, K >= 1 (crate::matmul handles empty products)".into(),
        ));
    }
    let blas = match engine {
        Engine::Cublas(math) => Some(cublas::Cublas::new(&gpu()?, math)?),
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
