//! The arguments every matmul engine takes: strided matrix views, the kernel choice, and the checks
//! each call passes before an engine sees the data.

use crate::error::{Error, Result};

/// A read-only matrix view: `rows x cols` stored row-major, row `r` starting at `r * ld`.
#[derive(Debug, Clone, Copy)]
pub struct MatrixRef<'a, T> {
    /// The elements, row-major.
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
    /// The elements, row-major.
    pub data: &'a mut [T],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements from one row to the next.
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
}

impl std::str::FromStr for MatmulKernel {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
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
