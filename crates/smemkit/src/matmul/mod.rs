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
//! use smemkit::{matmul::{matmul, MatmulKernel, MatrixMut, MatrixRef}, Backend};
//! let a = [1.0f32, 2.0, 3.0, 4.0]; // 2 x 2
//! let b = [1.0f32, 0.0, 0.0, 1.0]; // identity
//! let mut c = [0.0f32; 4];
//! matmul(MatrixRef::new(&a, 2, 2).transposed(), MatrixRef::new(&b, 2, 2),
//!        MatrixMut::new(&mut c, 2, 2), 1.0, 0.0, Backend::Cpu, MatmulKernel::default()).unwrap();
//! assert_eq!(c, [1.0, 3.0, 2.0, 4.0]);
//! ```

#[doc(hidden)]
pub mod cpu;
#[doc(hidden)]
pub mod cuda;
#[doc(hidden)]
pub mod matrix;

use crate::backend::Backend;
use crate::error::Result;

use matrix::check;
pub use matrix::{MatmulKernel, MatrixMut, MatrixRef};

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
    use crate::error::Error;

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
            assert_eq!(k.name().parse::<MatmulKernel>().unwrap(), k);
        }
        assert!("cublas".parse::<MatmulKernel>().is_err());
    }
}
