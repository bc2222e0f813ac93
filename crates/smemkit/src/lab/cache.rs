//! The cache lab on the GPU (see `crate::lab`): the shared-memory stencil and transpose against
//! their variants without shared memory, each timed under the driver's default carveout and under
//! every requested preferred carveout; then shared-memory atomics against global atomics. One input
//! on the device serves every kernel of an experiment; each kernel's output is poisoned, produced
//! once and checked before it is timed (CUDA events, median).
//!
//! The kernels are compiled into modules of their own (an extra define), because a carveout is a
//! function attribute: setting it on the library's own functions would change later calls.

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use rayon::prelude::*;

use crate::array_ops::cuda::{
    self as ops, StencilKernel, StencilLaunch, TransposeKernel, TransposeLaunch,
};
use crate::array_ops::kinds::Boundary;
use crate::element::StencilElement;
use crate::error::Result;
use crate::gpu::compile::LAB;
use crate::gpu::device::{cuda_err, gpu, Gpu};
use crate::gpu::launch::check;
use crate::gpu::timing::median;
use crate::lab::cache_options::{CacheExperiment, CacheMeasurement, CacheOptions};
use cudarc::driver::sys;

/// The define that puts the lab's kernels in modules of their own.
fn lab_module() -> [(&'static str, String); 1] {
    [("SMEMKIT_LAB_MODULE", "cache".to_string())]
}

/// Positions checked against the CPU definition per output.
const CHECKS: usize = 4096;
/// Threads per block of the atomics kernels.
const ATOMIC_BLOCK: u32 = 512;

/// splitmix64: a fixed, fast hash for data and positions (no state, so any thread can make any
/// element).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn random_f32(n: usize) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| (mix(i as u64) >> 40) as f32 / 16_777_216.0 - 0.5)
        .collect()
}

/// Random positions in `0..len`.
fn positions(len: usize, salt: u64) -> impl Iterator<Item = usize> {
    (0..CHECKS as u64).map(move |k| (mix(k ^ salt.rotate_left(17)) % len as u64) as usize)
}

fn poison<T>(g: &Gpu, buf: &CudaSlice<T>) -> Result<()> {
    let ptr = buf.device_ptr(&g.stream).0;
    // SAFETY: `ptr` addresses the buffer's len * size_of::<T>() bytes, written on its own stream.
    unsafe {
        check(
            sys::cuMemsetD8Async(
                ptr,
                0xA5,
                buf.len() * std::mem::size_of::<T>(),
                g.stream.cu_stream(),
            ),
            "poisoning an output",
        )
    }
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.par_iter()
            .zip(b.par_iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// What every measurement of one experiment shares.
struct Experiment<'a> {
    g: &'a Gpu,
    options: &'a CacheOptions,
    experiment: CacheExperiment,
    bytes: u64,
    rows: Vec<CacheMeasurement>,
}

impl Experiment<'_> {
    /// Times `launch` under the default carveout and each requested one (set on `function` when
    /// given; the default is restored afterwards).
    fn time(
        &mut self,
        variant: &'static str,
        uses_shared: bool,
        correct: bool,
        function: Option<&cudarc::driver::CudaFunction>,
        mut launch: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let carveouts: Vec<Option<u32>> = match function {
            Some(_) => std::iter::once(None)
                .chain(self.options.carveouts.iter().map(|&c| Some(c)))
                .collect(),
            None => vec![None],
        };
        for carveout in carveouts {
            if let Some(f) = function {
                ops::set_carveout(f, carveout)?;
            }
            let times = ops::run(self.g, self.options.runs, &mut launch);
            if let Some(f) = function {
                ops::set_carveout(f, None)?;
            }
            let ms = median(&times?);
            self.rows.push(CacheMeasurement {
                experiment: self.experiment,
                variant,
                uses_shared,
                carveout,
                ms,
                bytes: self.bytes,
                gbps: self.bytes as f64 / (ms as f64 / 1e3) / 1e9,
                ratio_to_shared: f64::NAN,
                correct,
            });
        }
        Ok(())
    }

    /// The rows, each with its ratio to the shared kernel at the default carveout.
    fn finish(mut self) -> Vec<CacheMeasurement> {
        let base = self
            .rows
            .iter()
            .find(|r| r.uses_shared && r.carveout.is_none())
            .map(|r| r.gbps);
        for r in &mut self.rows {
            r.ratio_to_shared = base.map_or(f64::NAN, |b| r.gbps / b);
        }
        self.rows
    }
}

pub fn measure(options: &CacheOptions) -> Result<Vec<CacheMeasurement>> {
    let g = gpu()?;
    g.bind()?;
    let n = 1usize << options.log2_n;
    let x = random_f32(n);
    let mut rows = Vec::new();
    {
        let d_in = g
            .stream
            .clone_htod(&x)
            .map_err(cuda_err("copying the input"))?;
        // SAFETY: poisoned before each kernel writes it; read back only after a kernel ran.
        let d_out =
            unsafe { g.stream.alloc::<f32>(n) }.map_err(cuda_err("allocating the output"))?;
        for &radius in &options.radii {
            rows.extend(stencil(&g, options, &x, &d_in, &d_out, radius)?);
        }
        rows.extend(transpose(&g, options, &x, &d_in, &d_out)?);
    }
    drop(x);
    for &bins in &options.atomic_bins {
        for hot in [false, true] {
            rows.extend(atomics(&g, options, bins, hot)?);
        }
    }
    Ok(rows)
}

fn stencil_at(x: &[f32], w: &[f32], r: usize, i: usize) -> f32 {
    let mut acc = 0.0f32;
    for (j, &wj) in w.iter().enumerate() {
        let k = i as i64 + j as i64 - r as i64;
        let v = if (0..x.len() as i64).contains(&k) {
            x[k as usize]
        } else {
            0.0
        };
        acc = f32::step(acc, wj, v);
    }
    acc
}

fn stencil(
    g: &Gpu,
    options: &CacheOptions,
    x: &[f32],
    d_in: &CudaSlice<f32>,
    d_out: &CudaSlice<f32>,
    radius: usize,
) -> Result<Vec<CacheMeasurement>> {
    let n = x.len();
    let w: Vec<f32> = (0..2 * radius + 1)
        .map(|j| 1.0 / (j as f32 + 2.0))
        .collect();
    let d_w = g
        .stream
        .clone_htod(&w)
        .map_err(cuda_err("copying the weights"))?;
    let (pi, po, pw) = (
        d_in.device_ptr(&g.stream).0,
        d_out.device_ptr(&g.stream).0,
        d_w.device_ptr(&g.stream).0,
    );
    let mut e = Experiment {
        g,
        options,
        experiment: CacheExperiment::Stencil { radius },
        bytes: 2 * 4 * n as u64,
        rows: Vec::new(),
    };
    let mut reference: Option<(Vec<f32>, bool)> = None;
    for (variant, kernel) in [("shared", StencilKernel::Shared), ("l1", StencilKernel::L1)] {
        let k = StencilLaunch::new::<f32>(
            g,
            n as u64,
            radius,
            Some(&w),
            Boundary::Zero,
            kernel,
            &lab_module(),
        )?;
        poison(g, d_out)?;
        k.launch(g, pi, po, pw)?;
        let out = g.stream.clone_dtoh(d_out).map_err(cuda_err(
            "reading the stencil back (the kernel may have failed)",
        ))?;
        let correct = match &reference {
            None => positions(n, radius as u64)
                .all(|i| out[i].to_bits() == stencil_at(x, &w, radius, i).to_bits()),
            Some((want, ok)) => *ok && same_bits(&out, want),
        };
        if reference.is_none() {
            reference = Some((out, correct));
        }
        e.time(
            variant,
            kernel == StencilKernel::Shared,
            correct,
            Some(&k.function),
            || k.launch(g, pi, po, pw),
        )?;
    }
    Ok(e.finish())
}

fn transpose(
    g: &Gpu,
    options: &CacheOptions,
    x: &[f32],
    d_in: &CudaSlice<f32>,
    d_out: &CudaSlice<f32>,
) -> Result<Vec<CacheMeasurement>> {
    let n = x.len();
    let rows = 1usize << (options.log2_n / 2);
    let cols = n / rows;
    let (pi, po) = (d_in.device_ptr(&g.stream).0, d_out.device_ptr(&g.stream).0);
    let mut e = Experiment {
        g,
        options,
        experiment: CacheExperiment::Transpose,
        bytes: 2 * 4 * n as u64,
        rows: Vec::new(),
    };
    let mut reference: Option<(Vec<f32>, bool)> = None;
    for (variant, kernel) in [
        ("shared", TransposeKernel::Padded),
        ("naive", TransposeKernel::Naive),
        ("l1", TransposeKernel::L1),
    ] {
        let k = TransposeLaunch::new::<f32>(g, rows, cols, kernel, &lab_module())?;
        poison(g, d_out)?;
        k.launch(g, pi, po)?;
        let out = g.stream.clone_dtoh(d_out).map_err(cuda_err(
            "reading the transpose back (the kernel may have failed)",
        ))?;
        let correct = match &reference {
            None => positions(n, 7)
                .all(|i| out[i].to_bits() == x[(i % rows) * cols + i / rows].to_bits()),
            Some((want, ok)) => *ok && same_bits(&out, want),
        };
        if reference.is_none() {
            reference = Some((out, correct));
        }
        e.time(
            variant,
            kernel == TransposeKernel::Padded,
            correct,
            Some(&k.function),
            || k.launch(g, pi, po),
        )?;
    }
    Ok(e.finish())
}

fn atomics(g: &Gpu, options: &CacheOptions, bins: u32, hot: bool) -> Result<Vec<CacheMeasurement>> {
    let n = 1usize << options.log2_n;
    let values: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|i| {
            let h = mix(i as u64 ^ 0xA70);
            if hot && h % 8 != 0 {
                7 % bins
            } else {
                ((h >> 32) % bins as u64) as u32
            }
        })
        .collect();
    let want: Vec<u64> = values
        .par_chunks(1 << 20)
        .fold(
            || vec![0u64; bins as usize],
            |mut c, chunk| {
                for &v in chunk {
                    c[v as usize] += 1;
                }
                c
            },
        )
        .reduce(
            || vec![0u64; bins as usize],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    let d_in = g
        .stream
        .clone_htod(&values)
        .map_err(cuda_err("copying the values"))?;
    drop(values);
    let d_bins = g
        .stream
        .alloc_zeros::<u32>(bins as usize)
        .map_err(cuda_err("allocating the counters"))?;
    let (pi, pb) = (d_in.device_ptr(&g.stream).0, d_bins.device_ptr(&g.stream).0);
    let n64 = n as u64;
    let mut e = Experiment {
        g,
        options,
        experiment: CacheExperiment::Atomics { bins, hot },
        bytes: 4 * n as u64,
        rows: Vec::new(),
    };
    // 2048 threads per SM on every GPU since Volta (1536 on some consumer parts: the grid strides).
    let blocks_per_sm = 2048 / ATOMIC_BLOCK;
    for (variant, name, shared) in [
        ("shared", "atomic_shared", bins * 4),
        ("global", "atomic_global", 0),
    ] {
        let f = ops::function(g, &LAB, &[], name, shared)?;
        let cfg = LaunchConfig {
            grid_dim: (g.limits.sm_count * blocks_per_sm, 1, 1),
            block_dim: (ATOMIC_BLOCK, 1, 1),
            shared_mem_bytes: shared,
        };
        let launch = || -> Result<()> {
            // SAFETY: the counters hold `bins` u32 words of this context, zeroed on its stream.
            unsafe {
                check(
                    sys::cuMemsetD32Async(pb, 0, bins as usize, g.stream.cu_stream()),
                    "zeroing the counters",
                )?;
            }
            let mut l = g.stream.launch_builder(&f);
            l.arg(&pi).arg(&n64).arg(&pb).arg(&bins);
            // SAFETY: atomic_{shared,global}(in, n, bins, nbins); `in` holds n u32, `bins` nbins
            // u32, the shared kernel gets nbins words of dynamic shared memory.
            unsafe { l.launch(cfg) }
                .map(|_| ())
                .map_err(cuda_err("launching the atomics"))
        };
        launch()?;
        let got = g.stream.clone_dtoh(&d_bins).map_err(cuda_err(
            "reading the counters back (the kernel may have failed)",
        ))?;
        let correct = got.iter().zip(&want).all(|(&a, &b)| a as u64 == b);
        e.time(variant, shared > 0, correct, None, launch)?;
    }
    Ok(e.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_stay_in_range_and_spread() {
        let p: Vec<usize> = positions(1000, 3).collect();
        assert_eq!(p.len(), CHECKS);
        assert!(p.iter().all(|&i| i < 1000));
        assert!(p.iter().collect::<std::collections::BTreeSet<_>>().len() > 900);
    }

    #[test]
    fn the_reference_stencil_uses_zero_boundaries() {
        let x = [1.0f32, 2.0, 3.0];
        let w = [1.0f32, 10.0, 100.0];
        assert_eq!(stencil_at(&x, &w, 1, 0), 10.0 + 200.0);
        assert_eq!(stencil_at(&x, &w, 1, 2), 2.0 + 30.0);
    }
}
