//! `smemkit matmul A.npy B.npy --out C.npy`: C = op(A) * op(B) over float32 2-D `.npy` files, on
//! the chosen backend and GPU kernel. It reuses the `.npy` reading and atomic writing of
//! [`crate::commands::ops`]. A Fortran-order file is used in place as a column-major matrix (a transposed
//! row-major view), so no input is ever copied into another layout.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use smemkit::{
    matmul::{MatmulKernel, MatrixMut, MatrixRef},
    Backend,
};

use crate::commands::ops::{check_out, open, read, type_code, write, Array};

#[derive(Debug, Args)]
pub struct MatmulArgs {
    /// Left matrix A: a float32 2-D .npy (C or Fortran order).
    pub a: PathBuf,
    /// Right matrix B: a float32 2-D .npy (C or Fortran order).
    pub b: PathBuf,
    /// Output .npy: float32, C order.
    #[arg(long)]
    pub out: PathBuf,
    /// GPU kernel: tiled16, regblock, vec4, async, warp, auto (autotuned, cached on disk) or tf32
    /// (tensor cores, TF32 precision: only when asked for).
    #[arg(long, default_value = "auto")]
    pub kernel: String,
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Multiply by the transpose of A.
    #[arg(long)]
    pub transpose_a: bool,
    /// Multiply by the transpose of B.
    #[arg(long)]
    pub transpose_b: bool,
}

fn load(path: &Path, which: &str) -> Result<Array<f32>> {
    let npy = open(path)?;
    match type_code(&npy)? {
        ('f', 4) => {}
        (c, s) => bail!(
            "matmul takes float32 arrays; {which} ({}) is {c}{s}",
            path.display()
        ),
    }
    let arr = read::<f32>(npy, path)?;
    if arr.shape.len() != 2 {
        bail!(
            "matmul takes 2-D arrays; {which} ({}) has shape {:?}",
            path.display(),
            arr.shape
        );
    }
    Ok(arr)
}

/// The view of a loaded (r, c) array, transposed on request. A Fortran-order array's bytes are the
/// row-major (c, r) matrix, used transposed.
fn view(arr: &Array<f32>, transpose: bool) -> MatrixRef<'_, f32> {
    let (r, c) = (arr.shape[0] as usize, arr.shape[1] as usize);
    let v = if arr.fortran {
        MatrixRef::col_major(&arr.data, r, c, r)
    } else {
        MatrixRef::new(&arr.data, r, c)
    };
    if transpose {
        v.transposed()
    } else {
        v
    }
}

pub fn run(a: &MatmulArgs) -> Result<()> {
    check_out(&a.out, &[("A", &a.a), ("B", &a.b)])?;
    let backend = a.backend.parse::<Backend>().context("--backend")?;
    let kernel = a.kernel.parse::<MatmulKernel>().context("--kernel")?;
    let (am, bm) = (load(&a.a, "A")?, load(&a.b, "B")?);
    let (va, vb) = (view(&am, a.transpose_a), view(&bm, a.transpose_b));
    let (m, n) = (va.op_shape().0, vb.op_shape().1);
    let len = m
        .checked_mul(n)
        .context("the product is too large to allocate")?;
    let mut c = crate::oom::try_vec(&format!("the {m} x {n} float32 product"), len, 0.0f32)?;
    smemkit::matmul::matmul(
        va,
        vb,
        MatrixMut::new(&mut c, m, n),
        1.0,
        0.0,
        backend,
        kernel,
    )?;
    write(&a.out, &c, &[m as u64, n as u64])
}
