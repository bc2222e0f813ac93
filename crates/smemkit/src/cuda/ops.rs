//! The shared-memory array operations on the GPU: 1D stencil with halo, tiled transpose, reversal
//! (static, dynamic and carved shared memory). Each copies the input to the device, poisons the
//! output (so an element no thread wrote cannot pass for a result), launches, and copies back.

use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use super::compile::{KernelSource, LAB, REVERSE, STENCIL, TRANSPOSE};
use super::device::{cuda_err, gpu, Gpu};
use super::launch::{self, check, LaunchShape};
use crate::element::{Element, StencilElement};
use crate::error::Result;
use crate::reverse::ReverseKernel;
use crate::stencil::Boundary;

/// Outputs per block of the stencil (and the tile it stages, plus the halo).
pub const STENCIL_BLOCK: u32 = 256;
/// Elements per tile of the dynamic and carved reversal kernels (the static one is compiled with
/// the same length).
pub const REVERSE_TILE: u32 = 2048;

/// Which transpose kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransposeKernel {
    /// Tiles padded by one element per row: column reads hit distinct banks.
    Padded,
    /// Unpadded tiles: 32-way bank conflicts on the column reads (for the bank-conflict lab).
    Unpadded,
}

/// Bytes of the carved reversal's allocation: the values, then (aligned for u32) the positions.
pub fn carve_bytes(tile: u32, elem_size: usize) -> u32 {
    let values = (tile as usize * elem_size + 3) & !3;
    (values + 4 * tile as usize) as u32
}

fn elem_defines<T: Element>() -> Vec<(&'static str, String)> {
    vec![("ELEM_T", T::C_TYPE.to_string())]
}

/// The input on the device and a poisoned output of the same length.
fn upload<T: Element>(g: &Gpu, input: &[T]) -> Result<(CudaSlice<T>, CudaSlice<T>)> {
    let d_in = g
        .stream
        .clone_htod(input)
        .map_err(cuda_err("copying the input"))?;
    // SAFETY: every byte is set by the memset below before anything reads it.
    let d_out =
        unsafe { g.stream.alloc::<T>(input.len()) }.map_err(cuda_err("allocating the output"))?;
    let ptr = d_out.device_ptr(&g.stream).0;
    // SAFETY: `ptr` addresses len * size_of::<T>() bytes of this context, written on its stream.
    unsafe {
        check(
            sys::cuMemsetD8Async(
                ptr,
                0xA5,
                std::mem::size_of_val(input),
                g.stream.cu_stream(),
            ),
            "poisoning the output",
        )?;
    }
    Ok((d_in, d_out))
}

fn grid_for(g: &Gpu, work_items: u64, per_block: u64) -> u32 {
    work_items
        .div_ceil(per_block)
        .clamp(1, g.limits.sm_count as u64 * 16) as u32
}

fn function(
    g: &Gpu,
    src: &KernelSource,
    defines: &[(&str, String)],
    name: &str,
    shared: u32,
) -> Result<cudarc::driver::CudaFunction> {
    let f = g.function(src, defines, name)?;
    launch::prepare_function(
        &f,
        &LaunchShape {
            grid: 1,
            block: 1,
            shared_bytes: shared,
            cluster: 1,
        },
        g.limits.smem_per_block_optin,
    )?;
    Ok(f)
}

pub fn stencil1d<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
) -> Result<Vec<T>> {
    stencil1d_timed(input, radius, weights, boundary, 0).map(|(out, _)| out)
}

/// The stencil, then `reps` timed repetitions of its kernel (milliseconds each, CUDA events).
pub fn stencil1d_timed<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
    reps: usize,
) -> Result<(Vec<T>, Vec<f32>)> {
    if input.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let g = gpu()?;
    g.bind()?;
    let shared = (STENCIL_BLOCK as usize + 2 * radius) * std::mem::size_of::<T>();
    let mut defines = elem_defines::<T>();
    defines.push(("ACC_T", T::ACC_C_TYPE.to_string()));
    defines.push(("WEIGHTED", (T::WEIGHTED as u8).to_string()));
    let f = function(&g, &STENCIL, &defines, "stencil1d", shared as u32)?;
    let (d_in, d_out) = upload(&g, input)?;
    let w = g
        .stream
        .clone_htod(weights.unwrap_or(&[T::default()]))
        .map_err(cuda_err("copying the weights"))?;
    let (n, r, b) = (input.len() as u64, radius as i32, boundary.code());
    let (pi, po, pw) = (
        d_in.device_ptr(&g.stream).0,
        d_out.device_ptr(&g.stream).0,
        w.device_ptr(&g.stream).0,
    );
    let cfg = LaunchConfig {
        grid_dim: (grid_for(&g, n, STENCIL_BLOCK as u64), 1, 1),
        block_dim: (STENCIL_BLOCK, 1, 1),
        shared_mem_bytes: shared as u32,
    };
    let times = run(&g, reps, || {
        let mut l = g.stream.launch_builder(&f);
        l.arg(&pi).arg(&po).arg(&pw).arg(&n).arg(&r).arg(&b);
        // SAFETY: stencil1d(in, out, w, n, r, boundary); in and out hold n elements, w 2r+1 (or 1 unused).
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(cuda_err("launching the stencil"))
    })?;
    let out = g.stream.clone_dtoh(&d_out).map_err(cuda_err(
        "reading the stencil back (the kernel may have failed)",
    ))?;
    Ok((out, times))
}

pub fn transpose<T: Element>(
    input: &[T],
    rows: usize,
    cols: usize,
    kernel: TransposeKernel,
) -> Result<Vec<T>> {
    transpose_timed(input, rows, cols, kernel, 0).map(|(out, _)| out)
}

/// The transpose, then `reps` timed repetitions of its kernel.
pub fn transpose_timed<T: Element>(
    input: &[T],
    rows: usize,
    cols: usize,
    kernel: TransposeKernel,
    reps: usize,
) -> Result<(Vec<T>, Vec<f32>)> {
    if input.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let g = gpu()?;
    g.bind()?;
    let name = match kernel {
        TransposeKernel::Padded => "transpose_padded",
        TransposeKernel::Unpadded => "transpose_unpadded",
    };
    let f = function(&g, &TRANSPOSE, &elem_defines::<T>(), name, 0)?;
    let (d_in, d_out) = upload(&g, input)?;
    let (r, c) = (rows as u64, cols as u64);
    let tiles = r.div_ceil(32) * c.div_ceil(32);
    let (pi, po) = (d_in.device_ptr(&g.stream).0, d_out.device_ptr(&g.stream).0);
    let cfg = LaunchConfig {
        grid_dim: (grid_for(&g, tiles, 1), 1, 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let times = run(&g, reps, || {
        let mut l = g.stream.launch_builder(&f);
        l.arg(&pi).arg(&po).arg(&r).arg(&c);
        // SAFETY: transpose_*(in, out, rows, cols); both hold rows * cols elements.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(cuda_err("launching the transpose"))
    })?;
    let out = g.stream.clone_dtoh(&d_out).map_err(cuda_err(
        "reading the transpose back (the kernel may have failed)",
    ))?;
    Ok((out, times))
}

pub fn reverse<T: Element>(input: &[T], kernel: ReverseKernel) -> Result<Vec<T>> {
    reverse_timed(input, kernel, 0).map(|(out, _)| out)
}

/// The reversal, then `reps` timed repetitions of its kernel.
pub fn reverse_timed<T: Element>(
    input: &[T],
    kernel: ReverseKernel,
    reps: usize,
) -> Result<(Vec<T>, Vec<f32>)> {
    if input.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let g = gpu()?;
    g.bind()?;
    let size = std::mem::size_of::<T>();
    let (name, shared) = match kernel {
        ReverseKernel::Static => ("reverse_static", 0),
        ReverseKernel::Dynamic => ("reverse_dynamic", REVERSE_TILE * size as u32),
        ReverseKernel::Carved => ("reverse_carved", carve_bytes(REVERSE_TILE, size)),
    };
    let f = function(&g, &REVERSE, &elem_defines::<T>(), name, shared)?;
    let (d_in, d_out) = upload(&g, input)?;
    let n = input.len() as u64;
    let (pi, po) = (d_in.device_ptr(&g.stream).0, d_out.device_ptr(&g.stream).0);
    let cfg = LaunchConfig {
        grid_dim: (grid_for(&g, n, REVERSE_TILE as u64), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: shared,
    };
    let times = run(&g, reps, || {
        let mut l = g.stream.launch_builder(&f);
        l.arg(&pi).arg(&po).arg(&n);
        if kernel != ReverseKernel::Static {
            l.arg(&REVERSE_TILE);
        }
        // SAFETY: reverse_static(in, out, n) / reverse_{dynamic,carved}(in, out, n, tile) with the
        // shared memory sized for the tile; in and out hold n elements.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(cuda_err("launching the reversal"))
    })?;
    let out = g.stream.clone_dtoh(&d_out).map_err(cuda_err(
        "reading the reversal back (the kernel may have failed)",
    ))?;
    Ok((out, times))
}

/// Runs `launch` once, then `reps` more times between timing events; milliseconds per run.
fn run(g: &Gpu, reps: usize, mut launch: impl FnMut() -> Result<()>) -> Result<Vec<f32>> {
    launch()?;
    if reps == 0 {
        return Ok(Vec::new());
    }
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = g
        .ctx
        .new_event(timing)
        .map_err(cuda_err("creating an event"))?;
    let end = g
        .ctx
        .new_event(timing)
        .map_err(cuda_err("creating an event"))?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        start
            .record(&g.stream)
            .map_err(cuda_err("recording an event"))?;
        launch()?;
        end.record(&g.stream)
            .map_err(cuda_err("recording an event"))?;
        times.push(
            start
                .elapsed_ms(&end)
                .map_err(cuda_err("timing a kernel (it may have failed)"))?,
        );
    }
    Ok(times)
}

/// Times the bank probe for each stride (median of 5 after a warm-up) and reports bandwidth and
/// slowdown against the first stride.
pub fn bank_probe(strides: &[u32]) -> Result<Vec<crate::lab::BankMeasurement>> {
    let g = gpu()?;
    g.bind()?;
    let f = g.function(&LAB, &[], "bank_probe")?;
    let (block, iters) = (1024u32, 4096u32);
    let grid = g.limits.sm_count * 2;
    let out = g
        .stream
        .alloc_zeros::<u32>((grid * block) as usize)
        .map_err(cuda_err("allocating the probe output"))?;
    let po = out.device_ptr(&g.stream).0;
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = g
        .ctx
        .new_event(timing)
        .map_err(cuda_err("creating an event"))?;
    let end = g
        .ctx
        .new_event(timing)
        .map_err(cuda_err("creating an event"))?;
    let mut rows = Vec::new();
    for &stride in strides {
        let mut times = Vec::new();
        for rep in 0..6 {
            start
                .record(&g.stream)
                .map_err(cuda_err("recording an event"))?;
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = g.stream.launch_builder(&f);
            l.arg(&po).arg(&stride).arg(&iters);
            // SAFETY: bank_probe(out, stride, iters); out holds grid * block words.
            unsafe { l.launch(cfg) }.map_err(cuda_err("launching the bank probe"))?;
            end.record(&g.stream)
                .map_err(cuda_err("recording an event"))?;
            let ms = start
                .elapsed_ms(&end)
                .map_err(cuda_err("timing the bank probe"))?;
            if rep > 0 {
                times.push(ms);
            }
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let ms = times[times.len() / 2];
        let bytes = grid as f64 * block as f64 * iters as f64 * 4.0;
        rows.push(crate::lab::BankMeasurement {
            stride,
            predicted: crate::lab::predicted_degree(stride),
            ms,
            gbps: bytes / (ms as f64 / 1e3) / 1e9,
            slowdown: 0.0,
        });
    }
    let base = rows.first().map(|r| r.ms).unwrap_or(1.0) as f64;
    for r in &mut rows {
        r.slowdown = r.ms as f64 / base;
    }
    Ok(rows)
}
