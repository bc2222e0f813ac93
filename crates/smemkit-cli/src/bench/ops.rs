//! `smemkit bench --backend cuda --op stencil1d|transpose|reverse`: the shared-memory array
//! operations timed on the GPU (CUDA events, median of the timed runs after one untimed run), GB/s
//! counting bytes read plus written, with the device copy of the peers (`copy_d2d`) as the anchor.
//! Each result is checked against the CPU definition at a few thousand random positions (the full
//! CPU reference of a 1 GiB radius-64 stencil would take minutes).

use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde_json::json;
use smemkit::internals::array_ops::cuda::{self as ops, TransposeKernel};
use smemkit::internals::histogram::cuda::bench::median;
use smemkit::ops::{Boundary, Element, ReverseKernel, StencilElement};

use crate::bench::{rows, MIN_RUNS};
use crate::cli::BenchArgs;

/// Positions checked per result.
const CHECKS: usize = 4096;

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| {
            let x = (i as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            ((x >> 40) as f32) / 16_777_216.0 - 0.5
        })
        .collect()
}

/// What every row names besides its measurement.
struct Rows<'a> {
    stamp: &'a rows::Stamp,
}

impl Rows<'_> {
    fn row(
        &self,
        op: &str,
        variant: &str,
        bytes: usize,
        times: &[f32],
        correct: bool,
        extra: serde_json::Value,
    ) -> serde_json::Value {
        let ms = median(times) as f64;
        let r = self.stamp.row(json!({
            "impl": format!("smemkit/{op}-{variant}"),
            "op": op,
            "memory": variant,
            "bytes": bytes,
            "ms": ms,
            "gbps": rows::gbps(2 * bytes, ms),
            "correct": correct,
        }));
        rows::with(r, extra)
    }
}

/// Checks `out[i] == want(i)` at random positions.
fn spot_check<T: Element>(out: &[T], seed: u64, want: impl Fn(usize) -> T) -> bool {
    if out.is_empty() {
        return true;
    }
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..CHECKS).all(|_| {
        let i = r.gen_range(0..out.len());
        out[i] == want(i)
    })
}

fn stencil_at<T: StencilElement>(x: &[T], w: &[T], r: usize, i: usize) -> T {
    // Zero boundary, left to right with the element's own step (fused multiply-add for floats).
    let mut acc = T::default();
    for (j, &wj) in w.iter().enumerate() {
        let g = i as i64 + j as i64 - r as i64;
        let v = if (0..x.len() as i64).contains(&g) {
            x[g as usize]
        } else {
            T::default()
        };
        acc = T::step(acc, wj, v);
    }
    acc
}

/// One transpose kernel timed on arrays of any element size.
struct Transpose<'a> {
    kernel: TransposeKernel,
    runs: usize,
    seed: u64,
    rows_of: &'a Rows<'a>,
    bytes: usize,
}

impl Transpose<'_> {
    /// Times the transpose of `data` (`2^log2_len` elements) as a `2^(log2_len / 2)`-row matrix.
    fn row<T: Element>(&self, data: &[T], log2_len: u32, dtype: &str) -> Result<serde_json::Value> {
        let rows = 1usize << (log2_len / 2);
        let cols = data.len() / rows;
        let (res, times) = ops::transpose_timed(data, rows, cols, self.kernel, self.runs)?;
        let ok = spot_check(&res, self.seed, |i| data[(i % rows) * cols + i / rows]);
        let name = self.kernel.label();
        Ok(self.rows_of.row(
            "transpose",
            name,
            self.bytes,
            &times,
            ok,
            json!({"dtype": dtype, "rows": rows, "cols": cols}),
        ))
    }
}

/// The bytes of `x` as 1-, 2- and 8-byte elements.
fn other_sizes(x: &[f32]) -> (Vec<u8>, Vec<u16>, Vec<u64>) {
    let bytes8: Vec<u8> = x.par_iter().flat_map_iter(|v| v.to_le_bytes()).collect();
    let halves: Vec<u16> = x
        .par_iter()
        .flat_map_iter(|v| {
            let b = v.to_bits();
            [b as u16, (b >> 16) as u16]
        })
        .collect();
    let words: Vec<u64> = x
        .par_chunks_exact(2)
        .map(|p| (p[0].to_bits() as u64) << 32 | p[1].to_bits() as u64)
        .collect();
    (bytes8, halves, words)
}

/// One reversal kernel timed on arrays of any element size.
struct Reverse<'a> {
    kernel: ReverseKernel,
    name: &'a str,
    /// Reverse all but the last element.
    odd: bool,
    runs: usize,
    seed: u64,
    rows_of: &'a Rows<'a>,
}

impl Reverse<'_> {
    fn row<T: Element>(&self, data: &[T], dtype: &str) -> Result<serde_json::Value> {
        let data = &data[..data.len() - self.odd as usize];
        let n = data.len();
        let (res, times) = ops::reverse_timed(data, self.kernel, self.runs)?;
        let ok = spot_check(&res, self.seed, |i| data[n - 1 - i]);
        let variant = format!("{}{}", self.name, if self.odd { "-odd" } else { "" });
        Ok(self.rows_of.row(
            "reverse",
            &variant,
            std::mem::size_of_val(data),
            &times,
            ok,
            json!({"dtype": dtype, "n": n}),
        ))
    }
}

pub fn bench_ops(args: &BenchArgs, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    let gpu = smemkit::internals::gpu::gpu()?;
    let n = 1usize << args.log2_n.min(30);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let x = random_f32(n, args.seed);
    let bytes = n * 4;
    let stamp = rows::Stamp::new(commit, &gpu.name);
    let rows_of = Rows { stamp: &stamp };
    match args.op.as_str() {
        "stencil1d" => {
            for radius in [1usize, 3, 8, 64] {
                let w: Vec<f32> = (0..2 * radius + 1)
                    .map(|j| 1.0 / (j as f32 + 2.0))
                    .collect();
                let (res, times) =
                    ops::stencil1d_timed(&x, radius, Some(&w), Boundary::Zero, args.runs)?;
                let ok = spot_check(&res, args.seed, |i| stencil_at(&x, &w, radius, i));
                let r = rows_of.row(
                    "stencil1d",
                    "shared",
                    bytes,
                    &times,
                    ok,
                    json!({"radius": radius, "dtype": "f32"}),
                );
                rows::emit(&mut out, &r)?;
            }
        }
        "transpose" => {
            // 4-byte elements, then 1, 2 and 8 bytes over the same number of bytes (built once).
            let log2 = args.log2_n.min(30);
            let (bytes8, halves, words) = other_sizes(&x);
            for k in [TransposeKernel::Padded, TransposeKernel::Unpadded] {
                let run = Transpose {
                    kernel: k,
                    runs: args.runs,
                    seed: args.seed,
                    rows_of: &rows_of,
                    bytes,
                };
                rows::emit(&mut out, &run.row(&x, log2, "f32")?)?;
                rows::emit(&mut out, &run.row(&bytes8, log2 + 2, "u8")?)?;
                rows::emit(&mut out, &run.row(&halves, log2 + 1, "u16")?)?;
                rows::emit(&mut out, &run.row(&words, log2.saturating_sub(1), "u64")?)?;
            }
        }
        "reverse" => {
            // Every kernel on 4-byte elements, then on 1, 2 and 8 bytes over the same bytes; and on
            // one element fewer (n % (16 / size) != 0: each output chunk cut out of two input
            // chunks), labelled "-odd".
            let (bytes8, halves, words) = other_sizes(&x);
            for (k, name) in [
                (ReverseKernel::Static, "static"),
                (ReverseKernel::Dynamic, "dynamic"),
                (ReverseKernel::Carved, "carved"),
            ] {
                for odd in [false, true] {
                    let run = Reverse {
                        kernel: k,
                        name,
                        odd,
                        runs: args.runs,
                        seed: args.seed,
                        rows_of: &rows_of,
                    };
                    rows::emit(&mut out, &run.row(&x, "f32")?)?;
                    rows::emit(&mut out, &run.row(&bytes8, "u8")?)?;
                    rows::emit(&mut out, &run.row(&halves, "u16")?)?;
                    rows::emit(&mut out, &run.row(&words, "u64")?)?;
                }
            }
        }
        other => bail!("--op {other}: expected hist, stencil1d, transpose or reverse"),
    }
    Ok(())
}
