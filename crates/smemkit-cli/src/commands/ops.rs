//! `smemkit stencil`, `smemkit transpose` and `smemkit reverse`: the shared-memory array operations
//! over `.npy` files. The input is read whole (npyz converts any byte order), the operation runs on
//! the chosen backend, and the result is written as `.npy` to a temporary file and renamed.
//! Stencil and reverse work on the array flattened in logical (C) order, so a Fortran-order file
//! gives the same result as the same array stored in C order.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use npyz::{Deserialize, NpyFile, Order, WriterBuilder};
use smemkit::{
    ops::{Boundary, Element, ReverseKernel, StencilElement},
    Backend,
};

use crate::output::write_atomic;

#[derive(Debug, Args)]
pub struct StencilArgs {
    /// Input .npy (float32, float64: weighted sums; int32, int64: plain sums), any shape, read flat
    /// in C (row-major) order whatever the file's order.
    pub input: PathBuf,
    /// Stencil radius r (1 to 64): each output combines 2r + 1 inputs.
    #[arg(long)]
    pub radius: usize,
    /// Weights w[-r..=r], comma-separated (float inputs only).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub weights: Vec<f64>,
    /// Beyond the ends: zero, clamp or wrap.
    #[arg(long, default_value = "zero")]
    pub boundary: String,
    /// Output .npy.
    #[arg(long)]
    pub out: PathBuf,
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
}

#[derive(Debug, Args)]
pub struct TransposeArgs {
    /// Input .npy: a 2-D array of 1-, 2-, 4- or 8-byte elements.
    pub input: PathBuf,
    /// Output .npy (C order).
    #[arg(long)]
    pub out: PathBuf,
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
}

#[derive(Debug, Args)]
pub struct ReverseArgs {
    /// Input .npy of any numeric type and shape, reversed flat (in C order whatever the file's order).
    pub input: PathBuf,
    /// Output .npy.
    #[arg(long)]
    pub out: PathBuf,
    /// GPU kernel: static, dynamic or carved shared memory.
    #[arg(long, default_value = "dynamic")]
    pub kernel: String,
    /// auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
}

/// A whole `.npy` array: its elements in file order, shape and memory order.
pub(crate) struct Array<T> {
    pub(crate) data: Vec<T>,
    pub(crate) shape: Vec<u64>,
    pub(crate) fortran: bool,
}

/// A `.npy` file whose header was read ahead (and given an explicit byte order) and whose data
/// follows from the file.
pub(crate) type NpyReader = NpyFile<std::io::Chain<std::io::Cursor<Vec<u8>>, BufReader<File>>>;

/// Opens a `.npy` file. A header of native byte order (`'=f4'`, which numpy writes and reads) is
/// spelled as this machine's order first, since npyz refuses `=`.
pub(crate) fn open(path: &Path) -> Result<NpyReader> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = BufReader::new(f);
    let mut ahead = Vec::new();
    (&mut reader)
        .take(12)
        .read_to_end(&mut ahead)
        .with_context(|| format!("cannot read {}", path.display()))?;
    // The header's length: 2 bytes after the version in version 1, 4 after that; headers are
    // small, so a larger claim is left for npyz to refuse.
    let total = match ahead.get(6..12) {
        Some([1, _, a, b, ..]) => 10 + u16::from_le_bytes([*a, *b]) as usize,
        Some([2 | 3, _, a, b, c, d]) => 12 + u32::from_le_bytes([*a, *b, *c, *d]) as usize,
        _ => 0,
    };
    if total > ahead.len() && total <= 1 << 20 {
        (&mut reader)
            .take((total - ahead.len()) as u64)
            .read_to_end(&mut ahead)
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    let mut head = crate::input::npy::native_byte_order(&ahead);
    head.extend_from_slice(&ahead[head.len().min(ahead.len())..]);
    NpyFile::new(std::io::Cursor::new(head).chain(reader))
        .with_context(|| format!("{} is not a valid .npy file", path.display()))
}

pub(crate) fn read<T: Deserialize>(npy: NpyReader, path: &Path) -> Result<Array<T>> {
    let shape = npy.shape().to_vec();
    let fortran = npy.order() == Order::Fortran;
    // The header's shape sizes the buffer the reader allocates: it must be what the file holds
    // and what this process can hold (the array, its result, and a reordered copy of a
    // Fortran-order array) before anything is allocated.
    let elements = shape
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(d as u128))
        .unwrap_or(u128::MAX);
    let bytes = elements.saturating_mul(std::mem::size_of::<T>() as u128);
    let file_len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if bytes > file_len as u128 {
        bail!(
            "{} is truncated: its header gives shape {shape:?} ({bytes} bytes of data), the file \
             holds {file_len} bytes in all",
            path.display()
        );
    }
    crate::limits::check(
        format_args!("{} (shape {shape:?}) with its result", path.display()),
        bytes.saturating_mul(if fortran { 3 } else { 2 }),
    )?;
    let data = npy
        .into_vec::<T>()
        .with_context(|| format!("reading the data of {}", path.display()))?;
    if data.is_empty() && shape.iter().product::<u64>() != 0 {
        bail!("{} is truncated", path.display());
    }
    Ok(Array {
        data,
        shape,
        fortran,
    })
}

/// The elements of `arr` in logical (C, row-major) order: a Fortran-order array's memory holds
/// them column-major, so element `(i0, .., ik)` is at `i0 + d0 * (i1 + d1 * (..))`. Operations
/// that read the array flat (stencil, reverse) must see the same sequence whatever the storage.
pub(crate) fn logical<T: Copy>(arr: Array<T>) -> Vec<T> {
    if !arr.fortran || arr.shape.len() < 2 || arr.data.is_empty() {
        return arr.data;
    }
    let dims: Vec<usize> = arr.shape.iter().map(|&d| d as usize).collect();
    // Fortran strides: the first axis is contiguous.
    let mut strides = vec![1usize; dims.len()];
    for k in 1..dims.len() {
        strides[k] = strides[k - 1] * dims[k - 1];
    }
    let mut out = Vec::with_capacity(arr.data.len());
    let mut index = vec![0usize; dims.len()];
    let mut offset = 0usize;
    for _ in 0..arr.data.len() {
        out.push(arr.data[offset]);
        // Next C-order index: the last axis moves fastest, carries go left.
        for k in (0..dims.len()).rev() {
            index[k] += 1;
            offset += strides[k];
            if index[k] < dims[k] {
                break;
            }
            offset -= strides[k] * dims[k];
            index[k] = 0;
        }
    }
    out
}

pub(crate) fn write<T: Element + npyz::AutoSerialize>(
    path: &Path,
    data: &[T],
    shape: &[u64],
) -> Result<()> {
    write_atomic(path, |w: &mut dyn Write| {
        let mut out = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .writer(w)
            .begin_nd()?;
        out.extend(data.iter().copied())?;
        out.finish()?;
        Ok(())
    })
}

/// Checks `--out` before any work: a `.npy` in an existing folder, and none of `inputs`
/// (described, paths) by identity.
pub(crate) fn check_out(path: &Path, inputs: &[(&str, &Path)]) -> Result<()> {
    for (what, input) in inputs {
        crate::output::identity::protect(what, input);
    }
    crate::output::identity::check_output("--out", path)?;
    if path.extension().and_then(|e| e.to_str()) != Some("npy") {
        bail!("--out {}: the result is written as .npy", path.display());
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!(
            "--out {}: the folder {} does not exist",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// The dtype descriptor of the file, like `<f4`.
pub(crate) fn type_code(npy: &NpyReader) -> Result<(char, u64)> {
    match npy.dtype() {
        npyz::DType::Plain(t) => {
            let code = match t.type_char() {
                npyz::TypeChar::Int => 'i',
                npyz::TypeChar::Uint => 'u',
                npyz::TypeChar::Float => 'f',
                other => bail!("unsupported .npy element kind {other}"),
            };
            Ok((code, t.size_field()))
        }
        other => bail!("unsupported .npy dtype {}", other.descr()),
    }
}

pub fn stencil(a: &StencilArgs) -> Result<()> {
    check_out(&a.out, &[("the input", &a.input)])?;
    let backend = a.backend.parse::<Backend>().context("--backend")?;
    let boundary = a.boundary.parse::<Boundary>().context("--boundary")?;
    let npy = open(&a.input)?;
    fn go<T: StencilElement + Deserialize + npyz::AutoSerialize>(
        a: &StencilArgs,
        npy: NpyReader,
        weights: Option<Vec<T>>,
        boundary: Boundary,
        backend: Backend,
    ) -> Result<()> {
        let arr = read::<T>(npy, &a.input)?;
        let shape = arr.shape.clone();
        let data = logical(arr);
        let out = smemkit::ops::stencil1d(&data, a.radius, weights.as_deref(), boundary, backend)?;
        write(&a.out, &out, &shape)
    }
    let no_weights = |kind: &str| -> Result<()> {
        if a.weights.is_empty() {
            Ok(())
        } else {
            bail!("--weights apply to float inputs; {kind} inputs take the plain sum")
        }
    };
    match type_code(&npy)? {
        ('f', 4) => go(
            a,
            npy,
            Some(a.weights.iter().map(|&w| w as f32).collect()),
            boundary,
            backend,
        ),
        ('f', 8) => go(a, npy, Some(a.weights.clone()), boundary, backend),
        ('i', 4) => no_weights("int32").and_then(|()| go::<i32>(a, npy, None, boundary, backend)),
        ('i', 8) => no_weights("int64").and_then(|()| go::<i64>(a, npy, None, boundary, backend)),
        (c, s) => bail!("the stencil takes float32, float64, int32 or int64 arrays, not {c}{s}"),
    }
}

/// Runs `$body` with `$t` bound to the Rust type of the file's numeric dtype.
macro_rules! by_type {
    ($npy:expr, $t:ident => $body:expr) => {
        match type_code(&$npy)? {
            ('u', 1) => {
                type $t = u8;
                $body
            }
            ('i', 1) => {
                type $t = i8;
                $body
            }
            ('u', 2) => {
                type $t = u16;
                $body
            }
            ('i', 2) => {
                type $t = i16;
                $body
            }
            ('u', 4) => {
                type $t = u32;
                $body
            }
            ('i', 4) => {
                type $t = i32;
                $body
            }
            ('f', 4) => {
                type $t = f32;
                $body
            }
            ('u', 8) => {
                type $t = u64;
                $body
            }
            ('i', 8) => {
                type $t = i64;
                $body
            }
            ('f', 8) => {
                type $t = f64;
                $body
            }
            (c, s) => {
                bail!("unsupported element type {c}{s}: integers and floats of 1 to 8 bytes only")
            }
        }
    };
}

pub fn transpose(a: &TransposeArgs) -> Result<()> {
    check_out(&a.out, &[("the input", &a.input)])?;
    let backend = a.backend.parse::<Backend>().context("--backend")?;
    let npy = open(&a.input)?;
    by_type!(npy, T => {
        let arr = read::<T>(npy, &a.input)?;
        let [rows, cols] = arr.shape[..] else {
            bail!("transpose takes a 2-D array; {} has shape {:?}", a.input.display(), arr.shape);
        };
        // A Fortran-order (r, c) array is stored as its transpose in C order: the bytes are the
        // answer already.
        let out = if arr.fortran { arr.data } else { smemkit::ops::transpose(&arr.data, rows as usize, cols as usize, backend)? };
        write(&a.out, &out, &[cols, rows])
    })
}

pub fn reverse(a: &ReverseArgs) -> Result<()> {
    check_out(&a.out, &[("the input", &a.input)])?;
    let backend = a.backend.parse::<Backend>().context("--backend")?;
    let kernel = a.kernel.parse::<ReverseKernel>().context("--kernel")?;
    let npy = open(&a.input)?;
    by_type!(npy, T => {
        let data = logical(read::<T>(npy, &a.input)?);
        let out = smemkit::ops::reverse(&data, backend, kernel)?;
        write(&a.out, &out, &[data.len() as u64])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fortran_array_reads_back_in_c_order_in_any_dimension() {
        let dims = [2usize, 3, 4];
        let value = |i: usize, j: usize, k: usize| (100 * i + 10 * j + k) as u32;
        let mut memory = vec![0u32; 24];
        let mut want = Vec::new();
        for i in 0..dims[0] {
            for j in 0..dims[1] {
                for k in 0..dims[2] {
                    memory[i + dims[0] * (j + dims[1] * k)] = value(i, j, k);
                    want.push(value(i, j, k));
                }
            }
        }
        let shape: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
        let fortran = Array {
            data: memory,
            shape: shape.clone(),
            fortran: true,
        };
        assert_eq!(logical(fortran), want);
        let c = Array {
            data: want.clone(),
            shape,
            fortran: false,
        };
        assert_eq!(logical(c), want);
    }
}
