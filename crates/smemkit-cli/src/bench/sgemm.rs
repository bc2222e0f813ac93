//! `smemkit bench --op sgemm --backend cuda`: the matmul kernels against cuBLAS SGEMM in the same
//! process, on the same device buffers, one JSON line per (implementation, shape) in the schema of
//! shared/BENCH.md. Each implementation first runs once into a NaN-poisoned C that is copied back
//! and compared with an f64 CPU reference (every entry for small products; for large ones whole
//! rows and columns at the edges and the middle plus a 64 x 64 grid of random entries, so that
//! the check stays cheap at 8192), then is timed: warm-up launches, then `--runs` launches each
//! between two CUDA events, enqueued back to back so that no host work sits between them, and the
//! median reported.
//!
//! FP32 is the default; `--precision tf32` measures the TF32 tensor-core kernel against cuBLAS in
//! TF32 math instead, with rows labelled `"precision": "tf32"` and a looser tolerance.

use std::io::Write;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde_json::json;
use smemkit::internals::histogram::cuda::bench::median;
use smemkit::internals::matmul::cuda::cublas::{Cublas, CublasMath};
use smemkit::internals::matmul::cuda::{self as gm, DenseProduct};
use smemkit::matmul::MatmulKernel;

use crate::bench::{rows, MIN_RUNS};
use crate::cli::BenchArgs;

/// The shapes (M x N x K): squares, then the rectangular ones.
pub const DEFAULT_SHAPES: [(usize, usize, usize); 8] = [
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 4096, 1024),
    (8192, 1024, 8192),
    (1000, 1000, 1000),
    (4097, 4095, 4099),
];
/// Warm-up launches before the timed ones.
const WARMUP: usize = 2;
/// Products up to this many multiply-adds are checked in full.
const FULL_CHECK_WORK: usize = 1 << 31;
/// Max-norm relative error allowed: FP32, and TF32 (10-bit mantissa inputs).
const TOL_FP32: f64 = 1e-5;
const TOL_TF32: f64 = 5e-3;

/// One implementation measured.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Impl {
    Ours(MatmulKernel),
    /// One of the autotuner's candidates by name (`warp:128x256x8-w64x64-s3-b1-p`), so that a
    /// configuration can be timed or profiled without the tuner choosing it.
    Candidate(gm::Variant),
    Cublas(CublasMath),
}

impl Impl {
    fn name(&self) -> String {
        match self {
            Impl::Ours(k) => format!("smemkit/{}", k.name()),
            Impl::Candidate(v) => format!("smemkit/{}", v.name()),
            Impl::Cublas(CublasMath::Fp32) => "cublas".into(),
            Impl::Cublas(CublasMath::Tf32) => "cublas-tf32".into(),
        }
    }
}

/// `4096` (a square) or `MxNxK`.
pub fn parse_shape(text: &str) -> Result<(usize, usize, usize)> {
    let dims: Vec<usize> = text
        .split('x')
        .map(|d| d.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .with_context(|| format!("--shapes {text}: expected N or MxNxK"))?;
    let shape = match dims[..] {
        [s] => (s, s, s),
        [m, n, k] => (m, n, k),
        _ => bail!("--shapes {text}: expected N or MxNxK"),
    };
    if shape.0 == 0 || shape.1 == 0 || shape.2 == 0 {
        bail!("--shapes {text}: every dimension must be at least 1");
    }
    Ok(shape)
}

/// The implementations `--kernel` names (all of the precision's when none is named).
fn impls(names: &[String], tf32: bool) -> Result<Vec<Impl>> {
    let all: Vec<Impl> = if tf32 {
        vec![
            Impl::Ours(MatmulKernel::Tf32),
            Impl::Cublas(CublasMath::Tf32),
        ]
    } else {
        MatmulKernel::ALL
            .into_iter()
            .map(Impl::Ours)
            .chain([Impl::Cublas(CublasMath::Fp32)])
            .collect()
    };
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|name| {
            let i = match name.as_str() {
                "cublas" if tf32 => Impl::Cublas(CublasMath::Tf32),
                "cublas" => Impl::Cublas(CublasMath::Fp32),
                other if other.contains(':') && !tf32 => {
                    match smemkit::internals::matmul::cuda::autotune::parse_choice(other) {
                        Some(v) => Impl::Candidate(v),
                        None => bail!(
                            "--kernel {other}: not one of the autotuner's candidates ({})",
                            candidate_names()
                        ),
                    }
                }
                other => Impl::Ours(other.parse::<MatmulKernel>().context("--kernel")?),
            };
            if !all.contains(&i) && !matches!(i, Impl::Candidate(_)) {
                bail!(
                    "--kernel {name} does not run in {} precision (the TF32 kernel needs --precision tf32, and the FP32 kernels run without it)",
                    if tf32 { "tf32" } else { "fp32" }
                );
            }
            Ok(i)
        })
        .collect()
}

fn candidate_names() -> String {
    smemkit::internals::matmul::cuda::autotune::candidates()
        .iter()
        .map(|v| v.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Uniform values in [-1, 1) from a hash of the index (the same matrix on any number of threads).
fn random_matrix(len: usize, seed: u64) -> Vec<f32> {
    (0..len)
        .into_par_iter()
        .map(|i| {
            let mut x = (i as u64).wrapping_add(seed.wrapping_mul(0xD6E8_FEB8_6659_FD93));
            x = (x ^ (x >> 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            ((x >> 40) as f32) / 8_388_608.0 - 1.0
        })
        .collect()
}

/// Reference values of C = A B (A m x k, B k x n, dense row-major) at chosen entries, in f64.
pub struct Reference {
    /// (row, column, value).
    pub entries: Vec<(usize, usize, f64)>,
    /// max |value|
    pub scale: f64,
}

fn dot_row_col(a_row: &[f32], col: &[f64]) -> f64 {
    a_row.iter().zip(col).map(|(&x, &y)| x as f64 * y).sum()
}

impl Reference {
    /// Every entry when the product has at most `full_limit` multiply-adds, else sampled rows,
    /// columns and a random grid.
    pub fn new(
        a: &[f32],
        b: &[f32],
        (m, n, k): (usize, usize, usize),
        seed: u64,
        full_limit: usize,
    ) -> Self {
        let full = m.saturating_mul(n).saturating_mul(k) <= full_limit;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5EED);
        let (rows, cols): (Vec<usize>, Vec<usize>) = if full {
            ((0..m).collect(), Vec::new())
        } else {
            let mut r = vec![0, m / 2, m - 1];
            let mut c = vec![0, n / 2, n - 1];
            r.dedup();
            c.dedup();
            (r, c)
        };
        // Whole rows: row i of A times B, accumulated along B's rows (contiguous).
        let mut entries: Vec<(usize, usize, f64)> = rows
            .par_iter()
            .flat_map_iter(|&i| {
                let mut acc = vec![0.0f64; n];
                for p in 0..k {
                    let x = a[i * k + p] as f64;
                    for (s, &y) in acc.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                        *s += x * y as f64;
                    }
                }
                acc.into_iter().enumerate().map(move |(j, v)| (i, j, v))
            })
            .collect();
        if !full {
            // Whole columns, and a grid of random rows x random columns.
            let grid_rows: Vec<usize> = (0..64).map(|_| rng.gen_range(0..m)).collect();
            let grid_cols: Vec<usize> = (0..64).map(|_| rng.gen_range(0..n)).collect();
            let column = |j: usize| -> Vec<f64> { (0..k).map(|p| b[p * n + j] as f64).collect() };
            for &j in &cols {
                let col = column(j);
                entries.par_extend(
                    (0..m)
                        .into_par_iter()
                        .map(|i| (i, j, dot_row_col(&a[i * k..(i + 1) * k], &col))),
                );
            }
            let gathered: Vec<Vec<f64>> = grid_cols.par_iter().map(|&j| column(j)).collect();
            entries.par_extend(grid_rows.par_iter().flat_map_iter(|&i| {
                let a_row = &a[i * k..(i + 1) * k];
                grid_cols
                    .iter()
                    .zip(&gathered)
                    .map(move |(&j, col)| (i, j, dot_row_col(a_row, col)))
                    .collect::<Vec<_>>()
            }));
        }
        let scale = entries.iter().fold(0.0f64, |s, e| s.max(e.2.abs()));
        Reference { entries, scale }
    }

    /// max |C - ref| / max |ref| over the entries of a dense m x n C (infinite if any is not
    /// finite).
    pub fn error(&self, c: &[f32], n: usize) -> f64 {
        let worst = self
            .entries
            .par_iter()
            .map(|&(i, j, v)| {
                let got = c[i * n + j] as f64;
                if got.is_finite() {
                    (got - v).abs()
                } else {
                    f64::INFINITY
                }
            })
            .reduce(|| 0.0, f64::max);
        worst / self.scale.max(f64::MIN_POSITIVE)
    }
}

pub fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    let tf32 = match args.precision.as_str() {
        "fp32" => false,
        "tf32" => true,
        other => bail!("--precision {other}: expected fp32 or tf32"),
    };
    let impls = impls(&args.kernel, tf32)?;
    let shapes: Vec<(usize, usize, usize)> = if args.shapes.is_empty() {
        DEFAULT_SHAPES.to_vec()
    } else {
        args.shapes
            .iter()
            .map(|s| parse_shape(s))
            .collect::<Result<_>>()?
    };
    let g = smemkit::internals::gpu::gpu().context("the sgemm benchmark needs a GPU")?;
    g.bind()?;
    let stamp = rows::Stamp::new(&rows::commit(), &g.name);
    let precision = if tf32 { "tf32" } else { "fp32" };
    let tolerance = if tf32 { TOL_TF32 } else { TOL_FP32 };
    let blas = if impls.iter().any(|i| matches!(i, Impl::Cublas(_))) {
        let math = if tf32 {
            CublasMath::Tf32
        } else {
            CublasMath::Fp32
        };
        match Cublas::new(&g, math) {
            Ok(b) => Some(b),
            // Our rows are still worth having; the missing peer is said once, on stderr.
            Err(e) => {
                eprintln!("warning: no cuBLAS rows: {e}");
                None
            }
        }
    } else {
        None
    };
    for (si, &shape) in shapes.iter().enumerate() {
        let (m, n, k) = shape;
        let seed = args.seed.wrapping_add(si as u64 * 2);
        let a = random_matrix(m * k, seed);
        let b = random_matrix(k * n, seed + 1);
        let reference = Reference::new(&a, &b, shape, seed, FULL_CHECK_WORK);
        let d = DenseProduct::upload(&g, &a, &b, shape)?;
        drop((a, b));
        let p = d.problem;
        for &imp in &impls {
            let ours = match imp {
                Impl::Ours(kernel) => Some(gm::resolve(&g, &p, kernel)?),
                Impl::Candidate(v) => Some(v),
                Impl::Cublas(_) => None,
            };
            let (variant, launch): (String, Box<dyn Fn() -> smemkit::Result<()>>) = match ours {
                Some(v) => {
                    let prepared = gm::prepare(&g, &p, v)?;
                    let g2 = g.clone();
                    // SAFETY: A, B and C are this shape's buffers (`d`, alive until the end of
                    // the iteration, past the synchronisation in `time_launches`), of the
                    // problem's dense shapes.
                    (v.name(), Box::new(move || unsafe { prepared.launch(&g2) }))
                }
                None => {
                    let Some(blas) = blas.as_ref() else { continue };
                    // SAFETY: as above.
                    (
                        "cublasSgemm".into(),
                        Box::new(move || unsafe { blas.sgemm(&p) }),
                    )
                }
            };
            // The checked run, into NaN.
            d.poison_c(&g)?;
            launch()?;
            let host_c = d.read_c(&g)?;
            let err = reference.error(&host_c, n);
            drop(host_c);
            let times = gm::time_launches(&g, WARMUP, args.runs, &*launch)?;
            let ms = median(&times) as f64;
            let row = stamp.row(json!({
                "impl": imp.name(),
                "op": "sgemm",
                "ms": ms,
                "tflops": 2.0 * m as f64 * n as f64 * k as f64 / (ms / 1e3) / 1e12,
                "correct": err < tolerance,
                "rel_err": err,
                "checked": reference.entries.len(),
                "m": m,
                "n": n,
                "k": k,
                "precision": precision,
                "variant": variant,
            }));
            rows::emit(out, &row)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_kernel_names_parse() {
        assert_eq!(parse_shape("1024").unwrap(), (1024, 1024, 1024));
        assert_eq!(parse_shape("4097x4095x4099").unwrap(), (4097, 4095, 4099));
        assert!(parse_shape("4x4").is_err());
        assert!(parse_shape("0").is_err());
        assert!(parse_shape("ax1x1").is_err());
        let all = impls(&[], false).unwrap();
        assert_eq!(all.len(), MatmulKernel::ALL.len() + 1);
        assert!(all.contains(&Impl::Cublas(CublasMath::Fp32)));
        assert!(!all.contains(&Impl::Ours(MatmulKernel::Tf32)));
        let some = impls(&["warp".into(), "cublas".into()], false).unwrap();
        assert_eq!(
            some,
            [
                Impl::Ours(MatmulKernel::WarpTiled),
                Impl::Cublas(CublasMath::Fp32)
            ]
        );
        // TF32 only when asked for, and then only TF32.
        assert!(impls(&["tf32".into()], false).is_err());
        assert!(impls(&["warp".into()], true).is_err());
        assert_eq!(
            impls(&["cublas".into()], true).unwrap(),
            [Impl::Cublas(CublasMath::Tf32)]
        );
        assert_eq!(Impl::Cublas(CublasMath::Tf32).name(), "cublas-tf32");
        assert_eq!(Impl::Ours(MatmulKernel::Auto).name(), "smemkit/auto");
        // A tuner candidate by name (FP32 only); an unknown configuration is refused.
        let named = impls(&["warp:128x256x8-w64x64-s3-b1-p".into()], false).unwrap();
        assert_eq!(named[0].name(), "smemkit/warp:128x256x8-w64x64-s3-b1-p");
        assert!(impls(&["warp:1x1x1-w1x1-s1-b1".into()], false).is_err());
        assert!(impls(&["warp:128x256x8-w64x64-s3-b1-p".into()], true).is_err());
    }

    #[test]
    fn the_reference_matches_a_triple_loop_and_scores_errors() {
        let (m, n, k) = (37, 29, 53);
        let a = random_matrix(m * k, 3);
        let b = random_matrix(k * n, 4);
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let naive = |i: usize, j: usize| -> f64 {
            (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum()
        };
        let full = Reference::new(&a, &b, (m, n, k), 1, FULL_CHECK_WORK);
        assert_eq!(full.entries.len(), m * n);
        for &(i, j, v) in &full.entries {
            assert!((v - naive(i, j)).abs() < 1e-12);
        }
        let c: Vec<f32> = (0..m * n).map(|e| naive(e / n, e % n) as f32).collect();
        assert!(full.error(&c, n) < 1e-7);
        let mut bad = c.clone();
        bad[5] = f32::NAN;
        assert_eq!(full.error(&bad, n), f64::INFINITY);
        bad[5] = c[5] + 1.0;
        assert!(full.error(&bad, n) > 1e-3);
    }

    #[test]
    fn large_products_are_sampled_at_the_edges() {
        let (m, n, k) = (140, 150, 30);
        let a = vec![1.0f32; m * k];
        let b = vec![0.5f32; k * n];
        let r = Reference::new(&a, &b, (m, n, k), 7, 1000);
        assert!(r.entries.len() < m * n + 64 * 64 + 3 * m + 3 * n);
        for corner in [(0, 0), (m - 1, n - 1), (0, n - 1), (m - 1, 0)] {
            assert!(r.entries.iter().any(|e| (e.0, e.1) == corner), "{corner:?}");
        }
        assert!(r.entries.iter().all(|e| e.2 == 0.5 * k as f64));
    }
}
