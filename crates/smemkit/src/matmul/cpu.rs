//! Matrix multiply on the CPU through the `matrixmultiply` crate (pure Rust, SIMD kernels chosen at
//! run time, any row and column strides), parallelised here with rayon over bands of C's rows:
//! the crate's own threading would bring a second thread pool beside rayon's.
//!
//! Callers pass views already checked by [`crate::matmul::matmul()`]: every element these functions index
//! lies inside its slice.

use rayon::prelude::*;

use crate::matmul::matrix::{MatrixMut, MatrixRef};

/// Below this many multiply-adds one call is cheaper than splitting.
const PARALLEL_MIN_WORK: usize = 1 << 21;
/// Fewest rows of C per band: thinner bands repack B too often.
const MIN_BAND: usize = 32;

/// C = beta * C over C's `rows x cols` (C is not read when beta is 0).
pub fn scale(c: &mut MatrixMut<f32>, beta: f32) {
    let (rows, cols, ld) = (c.rows, c.cols, c.ld);
    if cols == 0 {
        return;
    }
    for row in c.data.chunks_mut(ld).take(rows) {
        for v in &mut row[..cols] {
            *v = if beta == 0.0 { 0.0 } else { beta * *v };
        }
    }
}

/// Row and column strides of op(X) for a row-major view.
fn strides<T>(x: &MatrixRef<T>) -> (isize, isize) {
    if x.transposed {
        (1, x.ld as isize)
    } else {
        (x.ld as isize, 1)
    }
}

/// C = alpha * op(A) * op(B) + beta * C for checked views with M, N, K > 0.
pub fn matmul(
    a: &MatrixRef<f32>,
    b: &MatrixRef<f32>,
    c: &mut MatrixMut<f32>,
    alpha: f32,
    beta: f32,
) {
    let (m, k) = a.op_shape();
    let n = b.op_shape().1;
    let (rsa, csa) = strides(a);
    let (rsb, csb) = strides(b);
    let ldc = c.ld;
    let threads = rayon::current_num_threads();
    let band = if m.saturating_mul(n).saturating_mul(k) < PARALLEL_MIN_WORK || threads == 1 {
        m
    } else {
        m.div_ceil(4 * threads).max(MIN_BAND)
    };
    // Each band of C's rows is a chunk of `band * ldc` elements; chunks past row m (when the slice
    // is longer than the matrix) are skipped.
    c.data
        .par_chunks_mut(band * ldc.max(1))
        .enumerate()
        .for_each(|(i, c_band)| {
            let r0 = i * band;
            if r0 >= m {
                return;
            }
            let rows = band.min(m - r0);
            let a_off = r0 * rsa as usize;
            // SAFETY: the views were checked: op(A)'s rows r0..r0+rows and its k columns lie in
            // a.data at offsets a_off + i*rsa + p*csa; op(B)'s k x n elements lie in b.data; C's
            // rows r0..r0+rows of n columns at stride ldc lie in this band's chunk (a band's last
            // row needs only n elements). C's rows do not alias (ldc >= n).
            unsafe {
                matrixmultiply::sgemm(
                    rows,
                    k,
                    n,
                    alpha,
                    a.data.as_ptr().add(a_off),
                    rsa,
                    csa,
                    b.data.as_ptr(),
                    rsb,
                    csb,
                    beta,
                    c_band.as_mut_ptr(),
                    ldc as isize,
                    1,
                );
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::{matmul as api, MatmulKernel};
    use crate::Backend;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A stored matrix with padding between rows, as the view `rows x cols, ld`.
    fn random(r: &mut Xoshiro256PlusPlus, rows: usize, cols: usize, ld: usize) -> Vec<f32> {
        (0..crate::matmul::matrix::span(rows, cols, ld).unwrap())
            .map(|_| r.gen_range(-1.0f32..1.0))
            .collect()
    }

    /// op(X)[i][j] in f64.
    fn at(x: &MatrixRef<f32>, i: usize, j: usize) -> f64 {
        let (r, c) = if x.transposed { (j, i) } else { (i, j) };
        x.data[r * x.ld + c] as f64
    }

    /// The plain triple loop in f64, and the largest |reference| (the scale of the error).
    fn reference(
        a: &MatrixRef<f32>,
        b: &MatrixRef<f32>,
        c: &[f32],
        ldc: usize,
        alpha: f32,
        beta: f32,
    ) -> (Vec<f64>, f64) {
        let (m, k) = a.op_shape();
        let n = b.op_shape().1;
        let mut out = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|p| at(a, i, p) * at(b, p, j)).sum();
                let old = if beta == 0.0 {
                    0.0
                } else {
                    beta as f64 * c[i * ldc + j] as f64
                };
                out[i * n + j] = alpha as f64 * dot + old;
            }
        }
        let scale = out.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        (out, scale)
    }

    #[test]
    fn odd_shapes_transposes_alpha_beta_and_leading_dimensions_match_f64() {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(7);
        let shapes = [
            (1, 1, 1),
            (1, 7, 1),
            (5, 1, 9),
            (17, 33, 65),
            (64, 64, 64),
            (129, 67, 300),
            (300, 257, 129),
        ];
        for (m, n, k) in shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                for (alpha, beta) in [(1.0f32, 0.0f32), (-0.5, 1.5), (2.0, -1.0)] {
                    let pad = r.gen_range(0..3usize);
                    let (ar, ac) = if ta { (k, m) } else { (m, k) };
                    let (br, bc) = if tb { (n, k) } else { (k, n) };
                    let (lda, ldb, ldc) = (ac + pad, bc + 2 * pad, n + pad);
                    let av = random(&mut r, ar, ac, lda);
                    let bv = random(&mut r, br, bc, ldb);
                    let mut cv = random(&mut r, m, n, ldc);
                    if beta == 0.0 {
                        // Not read: NaN must not leak through.
                        cv.iter_mut().for_each(|v| *v = f32::NAN);
                    }
                    let a = MatrixRef {
                        data: &av,
                        rows: ar,
                        cols: ac,
                        ld: lda,
                        transposed: ta,
                    };
                    let b = MatrixRef {
                        data: &bv,
                        rows: br,
                        cols: bc,
                        ld: ldb,
                        transposed: tb,
                    };
                    let (want, scale) = reference(&a, &b, &cv, ldc, alpha, beta);
                    let before = cv.clone();
                    api(
                        a,
                        b,
                        MatrixMut::new(&mut cv, m, n).with_ld(ldc),
                        alpha,
                        beta,
                        Backend::Cpu,
                        MatmulKernel::default(),
                    )
                    .unwrap();
                    let what =
                        format!("{m}x{n}x{k} ta {ta} tb {tb} alpha {alpha} beta {beta} pad {pad}");
                    let mut worst = 0.0f64;
                    for i in 0..m {
                        for j in 0..ldc {
                            let Some(&got) = cv.get(i * ldc + j) else {
                                break;
                            };
                            if j >= n {
                                // Padding between rows is left alone.
                                let old = before[i * ldc + j];
                                assert_eq!(got.to_bits(), old.to_bits(), "{what}: pad");
                                continue;
                            }
                            worst = worst.max((got as f64 - want[i * n + j]).abs());
                        }
                    }
                    assert!(
                        worst / scale.max(f64::MIN_POSITIVE) < 1e-5,
                        "{what}: relative error {}",
                        worst / scale
                    );
                }
            }
        }
    }

    #[test]
    fn parallel_bands_cover_every_row() {
        // Large enough to split into bands, with a row count that is no multiple of the band.
        let (m, n, k) = (1001, 37, 200);
        let a = vec![1.0f32; m * k];
        let b = vec![1.0f32; k * n];
        let mut c = vec![-1.0f32; m * n];
        api(
            MatrixRef::new(&a, m, k),
            MatrixRef::new(&b, k, n),
            MatrixMut::new(&mut c, m, n),
            1.0,
            1.0,
            Backend::Cpu,
            MatmulKernel::default(),
        )
        .unwrap();
        assert!(c.iter().all(|&v| v == k as f32 - 1.0));
    }
}
