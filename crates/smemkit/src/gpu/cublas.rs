//! cuBLAS SGEMM as the in-process peer of the matmul kernels: the benchmark's yardstick, measured
//! on the same device buffers and stream. cudarc loads libcublas on first use, so the library still
//! runs where it is missing; [`Cublas::new`] says so with a typed error instead of panicking.
//!
//! cuBLAS is column-major. A row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
//! and a row-major matrix with leading dimension ld is, as stored, its transpose in column-major
//! with the same ld: so the call swaps the operands (and M with N) and keeps each transpose flag.

use std::sync::Arc;

use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t};
use cudarc::cublas::CudaBlas;

use super::device::Gpu;
use crate::error::{Error, Result};
use crate::matmul::cuda::DeviceGemm;

/// Math mode of the handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CublasMath {
    /// `CUBLAS_DEFAULT_MATH`: FP32 SGEMM on the CUDA cores (no TF32).
    Fp32,
    /// `CUBLAS_TF32_TENSOR_OP_MATH`: inputs rounded to TF32 on the tensor cores.
    Tf32,
}

/// A cuBLAS handle on the device's stream.
pub struct Cublas {
    blas: CudaBlas,
}

fn blas_err(context: &str) -> impl Fn(cudarc::cublas::result::CublasError) -> Error + '_ {
    move |e| Error::Cuda {
        context: context.to_string(),
        message: format!("{e:?}"),
    }
}

impl Cublas {
    /// Opens a handle on `g`'s stream with the given math mode.
    pub fn new(g: &Arc<Gpu>, math: CublasMath) -> Result<Self> {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(Error::CudaUnavailable(
                "cuBLAS (libcublas.so.13) cannot be loaded; add its folder (e.g. /usr/local/cuda/lib64) to LD_LIBRARY_PATH".into(),
            ));
        }
        g.bind()?;
        let blas = CudaBlas::new(g.stream.clone()).map_err(blas_err("creating a cuBLAS handle"))?;
        let mode = match math {
            CublasMath::Fp32 => cublasMath_t::CUBLAS_DEFAULT_MATH,
            CublasMath::Tf32 => cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
        };
        // SAFETY: a live handle owned by `blas`; the mode is a plain enum value.
        let status = unsafe { cudarc::cublas::sys::cublasSetMathMode(*blas.handle(), mode) };
        if status != cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(Error::Cuda {
                context: "setting cuBLAS's math mode".into(),
                message: format!("{status:?}"),
            });
        }
        Ok(Cublas { blas })
    }

    /// Runs `p` (row-major, see the module comment) with `cublasSgemm`.
    ///
    /// # Safety
    /// As [`crate::matmul::cuda::PreparedGemm::launch`]: the addresses hold views of the stated shapes in
    /// this context until the call has finished on the stream.
    pub unsafe fn sgemm(&self, p: &DeviceGemm) -> Result<()> {
        p.validate()?;
        let int = |x: usize, what: &str| {
            i32::try_from(x).map_err(|_| {
                Error::InvalidArgument(format!("cuBLAS takes {what} up to 2^31 - 1 (got {x})"))
            })
        };
        let op = |t: bool| {
            if t {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (m, n, k) = (int(p.m, "M")?, int(p.n, "N")?, int(p.k, "K")?);
        let (lda, ldb, ldc) = (int(p.lda, "lda")?, int(p.ldb, "ldb")?, int(p.ldc, "ldc")?);
        // SAFETY: the handle is live; the column-major problem N x M x K reads B (ldb) and A (lda)
        // and writes C (ldc) exactly where the row-major one does (module comment); the caller
        // guarantees the memory; alpha and beta are host values (the default pointer mode).
        unsafe {
            cudarc::cublas::result::sgemm(
                *self.blas.handle(),
                op(p.trans_b),
                op(p.trans_a),
                n,
                m,
                k,
                &p.alpha,
                p.b as *const f32,
                ldb,
                p.a as *const f32,
                lda,
                &p.beta,
                p.c as *mut f32,
                ldc,
            )
        }
        .map_err(blas_err("cublasSgemm"))
    }
}
