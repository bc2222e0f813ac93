//! Matrix multiply, C = alpha * op(A) * op(B) + beta * C, in f32. This module is the public face:
//! strided matrix views, the kernel choice, and the checks that every call passes through (shapes,
//! leading dimensions, slice lengths) before an engine sees the data, so that the engines can
//! index without re-checking and bad input becomes a typed error, never a panic.
//!
//! Layout: every view is row-major with a leading dimension `ld` (the distance between rows, at
//! least the number of columns). A view marked transposed is used as its transpose, so a
//! column-major matrix is a transposed row-major view of the same memory
//! ([`MatrixRef::col_major`]).
//!
//! ```
//! use smemkit::{matmul, Backend, MatmulKernel, MatrixMut, MatrixRef};
//! let a = [1.0f32, 2.0, 3.0, 4.0]; // 2 x 2
//! let b = [1.0f32, 0.0, 0.0, 1.0]; // identity
//! let mut c = [0.0f32; 4];
//! matmul(MatrixRef::new(&a, 2, 2).transposed(), MatrixRef::new(&b, 2, 2),
//!        MatrixMut::new(&mut c, 2, 2), 1.0, 0.0, Backend::Cpu, MatmulKernel::default()).unwrap();
//! assert_eq!(c, [1.0, 3.0, 2.0, 4.0]);
//! ```

pub mod cpu;
pub mod cuda;

use crate::backend::Backend;
use crate::error::{Error, Result};

/// A read-only matrix view: `rows x cols` stored row-major, row `r` starting at `r * ld`.
#[derive(Debug, Clone, Copy)]
pub struct MatrixRef<'a, T> {
    pub data: &'a [T],
    /// Rows of the stored matrix (before any transpose).
    pub rows: usize,
    /// Columns of the stored matrix (before any transpose).
    pub cols: usize,
    /// Elements from one row to the next; at least `cols`.
    pub ld: usize,
    /// Use the transpose of the stored matrix.
    pub transposed: bool,
}

impl<'a, T> MatrixRef<'a, T> {
    /// A dense row-major `rows x cols` matrix (`ld = cols`), used as stored.
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        MatrixRef {
            data,
            rows,
            cols,
            ld: cols,
            transposed: false,
        }
    }

    /// A column-major `rows x cols` matrix whose columns start `ld` elements apart: the same memory
    /// is a row-major `cols x rows` matrix, used transposed.
    pub fn col_major(data: &'a [T], rows: usize, cols: usize, ld: usize) -> Self {
        MatrixRef {
            data,
            rows: cols,
            cols: rows,
            ld,
            transposed: true,
        }
    }

    /// The same view with another leading dimension.
    pub fn with_ld(self, ld: usize) -> Self {
        MatrixRef { ld, ..self }
    }

    /// The view used as its transpose (flips the flag).
    pub fn transposed(self) -> Self {
        MatrixRef {
            transposed: !self.transposed,
            ..self
        }
    }

    /// Rows and columns of the matrix as used, op(X).
    pub fn op_shape(&self) -> (usize, usize) {
        if self.transposed {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }
}

/// The output view: `rows x cols` row-major with leading dimension `ld`. Elements between rows
/// (from `cols` to `ld`) are never read or written.
#[derive(Debug)]
pub struct MatrixMut<'a, T> {
    pub data: &'a mut [T],
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
}

impl<'a, T> MatrixMut<'a, T> {
    /// A dense row-major `rows x cols` matrix (`ld = cols`).
    pub fn new(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        MatrixMut {
            data,
            rows,
            cols,
            ld: cols,
        }
    }

    /// The same view with another leading dimension.
    pub fn with_ld(self, ld: usize) -> Self {
        MatrixMut { ld, ..self }
    }
}

/// Which GPU kernel multiplies; each step of the progression stays selectable so that it can be
/// measured. The CPU backend ignores the choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MatmulKernel {
    /// The CUDA programming guide's kernel: 16 x 16 tiles in shared memory, one output per thread.
    Tiled16,
    /// 128 x 128 block tiles, BK = 8, each thread computes an 8 x 8 block of outputs in registers.
    RegisterBlocked,
    /// As `RegisterBlocked`, with 16-byte global and shared loads and a transposed, padded A tile.
    Vectorized,
    /// As `Vectorized` with BK = 16, double-buffered shared memory filled by `cp.async`.
    AsyncCopy,
    /// Warp tiling (128 x 128 block tiles, each warp owns 64 x 32 of C, each lane 8 x 8 of it) over
    /// a four-stage shared-memory pipeline (BK = 8): `cp.async` for operands laid out along M or N,
    /// register-staged transposing loads for the others; blocks ordered for L2 reuse.
    WarpTiled,
    /// The autotuner's choice for the shape class among the warp-tiled configurations and
    /// `AsyncCopy`, measured once on the device and cached on disk.
    #[default]
    Auto,
    /// TF32 tensor cores (inputs rounded to a 10-bit mantissa, FP32 accumulation): not FP32
    /// accurate (relative error around 1e-3), so never chosen unless asked for by name.
    Tf32,
}

impl MatmulKernel {
    /// The FP32 kernels (everything but [`MatmulKernel::Tf32`]).
    pub const ALL: [MatmulKernel; 6] = [
        MatmulKernel::Tiled16,
        MatmulKernel::RegisterBlocked,
        MatmulKernel::Vectorized,
        MatmulKernel::AsyncCopy,
        MatmulKernel::WarpTiled,
        MatmulKernel::Auto,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MatmulKernel::Tiled16 => "tiled16",
            MatmulKernel::RegisterBlocked => "regblock",
            MatmulKernel::Vectorized => "vec4",
            MatmulKernel::AsyncCopy => "async",
            MatmulKernel::WarpTiled => "warp",
            MatmulKernel::Auto => "auto",
            MatmulKernel::Tf32 => "tf32",
        }
    }

    pub fn parse(text: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .chain([MatmulKernel::Tf32])
            .find(|k| k.name() == text)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown matmul kernel `{text}` (expected tiled16, regblock, vec4, async, warp, auto or tf32)"
                ))
            })
    }
}

/// Elements a view spans: from its first element to the last one it uses.
pub(crate) fn span(rows: usize, cols: usize, ld: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (rows - 1).checked_mul(ld)?.checked_add(cols)
}

fn check_view(matrix: &'static str, rows: usize, cols: usize, ld: usize, len: usize) -> Result<()> {
    if ld < cols {
        return Err(Error::LeadingDimension { matrix, ld, cols });
    }
    match span(rows, cols, ld) {
        Some(n) if n <= len => Ok(()),
        _ => Err(Error::MatrixTooShort {
            matrix,
            rows,
            cols,
            ld,
            needed: (rows.max(1) as u128 - 1) * ld as u128 + cols as u128,
            len,
        }),
    }
}

/// The checked problem size (M, N, K).
pub(crate) fn check<T>(
    a: &MatrixRef<T>,
    b: &MatrixRef<T>,
    c: &MatrixMut<T>,
) -> Result<(usize, usize, usize)> {
    check_view("A", a.rows, a.cols, a.ld, a.data.len())?;
    check_view("B", b.rows, b.cols, b.ld, b.data.len())?;
    check_view("C", c.rows, c.cols, c.ld, c.data.len())?;
    let (m, k) = a.op_shape();
    let (kb, n) = b.op_shape();
    if k != kb {
        return Err(Error::MatrixShape(format!(
            "op(A) is {m} x {k} but op(B) is {kb} x {n}: the inner dimensions differ"
        )));
    }
    if (c.rows, c.cols) != (m, n) {
        return Err(Error::MatrixShape(format!(
            "op(A) * op(B) is {m} x {n} but C is {} x {}",
            c.rows, c.cols
        )));
    }
    Ok((m, n, k))
}

/// C = alpha * op(A) * op(B) + beta * C on `backend`, with `kernel` on the GPU.
///
/// As in BLAS, C is not read when `beta == 0` (NaN there does not propagate), and A and B are not
/// read when `alpha == 0` or K is 0: then C = beta * C, computed on the CPU whatever the backend.
pub fn matmul(
    a: MatrixRef<f32>,
    b: MatrixRef<f32>,
    mut c: MatrixMut<f32>,
    alpha: f32,
    beta: f32,
    backend: Backend,
    kernel: MatmulKernel,
) -> Result<()> {
    let (m, n, k) = check(&a, &b, &c)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 || alpha == 0.0 {
        crate::matmul::cpu::scale(&mut c, beta);
        return Ok(());
    }
    match crate::backend::resolve_backend(backend) {
        Backend::Cuda => crate::matmul::cuda::matmul(&a, &b, &mut c, alpha, beta, kernel),
        _ => {
            crate::matmul::cpu::matmul(&a, &b, &mut c, alpha, beta);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: MatrixRef<f32>, b: MatrixRef<f32>, c: MatrixMut<f32>) -> Result<()> {
        matmul(a, b, c, 1.0, 0.0, Backend::Cpu, MatmulKernel::default())
    }

    #[test]
    fn bad_shapes_and_leading_dimensions_are_typed_errors() {
        let x = vec![0.0f32; 12];
        let mut y = vec![0.0f32; 12];
        // 3 x 4 times 3 x 4: inner dimensions differ.
        let e = run(
            MatrixRef::new(&x, 3, 4),
            MatrixRef::new(&x, 3, 4),
            MatrixMut::new(&mut y, 3, 4),
        );
        assert!(matches!(e, Err(Error::MatrixShape(_))), "{e:?}");
        // 3 x 4 times (3 x 4)^T is 3 x 3, not 3 x 4.
        let e = run(
            MatrixRef::new(&x, 3, 4),
            MatrixRef::new(&x, 3, 4).transposed(),
            MatrixMut::new(&mut y, 3, 4),
        );
        assert!(matches!(e, Err(Error::MatrixShape(_))), "{e:?}");
        let e = run(
            MatrixRef::new(&x, 3, 4).with_ld(3),
            MatrixRef::new(&x, 4, 3),
            MatrixMut::new(&mut y, 3, 3),
        );
        assert!(
            matches!(
                e,
                Err(Error::LeadingDimension {
                    matrix: "A",
                    ld: 3,
                    cols: 4
                })
            ),
            "{e:?}"
        );
        // ld 5 for 3 rows of 4 needs 2 * 5 + 4 = 14 elements.
        let e = run(
            MatrixRef::new(&x, 3, 4).with_ld(5),
            MatrixRef::new(&x, 4, 3),
            MatrixMut::new(&mut y, 3, 3),
        );
        assert!(
            matches!(
                e,
                Err(Error::MatrixTooShort {
                    matrix: "A",
                    needed: 14,
                    len: 12,
                    ..
                })
            ),
            "{e:?}"
        );
        let e = run(
            MatrixRef::new(&x, 3, 4),
            MatrixRef::new(&x, 4, 3),
            MatrixMut::new(&mut y[..8], 3, 3),
        );
        assert!(
            matches!(e, Err(Error::MatrixTooShort { matrix: "C", .. })),
            "{e:?}"
        );
        // A leading dimension so large that the span overflows.
        let e = run(
            MatrixRef::new(&x, 3, 4).with_ld(usize::MAX),
            MatrixRef::new(&x, 4, 3),
            MatrixMut::new(&mut y, 3, 3),
        );
        assert!(matches!(e, Err(Error::MatrixTooShort { .. })), "{e:?}");
    }

    #[test]
    fn empty_products_and_k_zero() {
        let mut c = vec![f32::NAN, 2.0, 3.0, 4.0];
        // K = 0: C = beta * C, and beta = 0 clears even NaN.
        matmul(
            MatrixRef::new(&[], 2, 0),
            MatrixRef::new(&[], 0, 2),
            MatrixMut::new(&mut c, 2, 2),
            1.0,
            0.0,
            Backend::Cpu,
            MatmulKernel::Tiled16,
        )
        .unwrap();
        assert_eq!(c, [0.0; 4]);
        let mut c = vec![1.0f32, 2.0, 3.0, 4.0];
        matmul(
            MatrixRef::new(&[], 2, 0),
            MatrixRef::new(&[], 0, 2),
            MatrixMut::new(&mut c, 2, 2),
            1.0,
            2.0,
            Backend::Cpu,
            MatmulKernel::Tiled16,
        )
        .unwrap();
        assert_eq!(c, [2.0, 4.0, 6.0, 8.0]);
        // M = 0: nothing to do.
        let mut none: [f32; 0] = [];
        run(
            MatrixRef::new(&[], 0, 3),
            MatrixRef::new(&[0.0; 6], 3, 2),
            MatrixMut::new(&mut none, 0, 2),
        )
        .unwrap();
    }

    #[test]
    fn column_major_views_and_kernel_names() {
        // Column-major 2 x 3 [[1, 2, 3], [4, 5, 6]] stored as 1 4 2 5 3 6, ld 2.
        let a = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0];
        let v = MatrixRef::col_major(&a, 2, 3, 2);
        assert_eq!(v.op_shape(), (2, 3));
        let ones = [1.0f32; 3];
        let mut c = [0.0f32; 2];
        run(v, MatrixRef::new(&ones, 3, 1), MatrixMut::new(&mut c, 2, 1)).unwrap();
        assert_eq!(c, [6.0, 15.0]);
        for k in MatmulKernel::ALL {
            assert_eq!(MatmulKernel::parse(k.name()).unwrap(), k);
        }
        assert!(MatmulKernel::parse("cublas").is_err());
    }
}
