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

/// Threads per block of the stencil kernels.
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
    /// No shared memory: coalesced reads, scattered writes (for the cache lab).
    Naive,
    /// No shared memory: reads gathered through the read-only (L1) path, coalesced writes (for the
    /// cache lab).
    L1,
}

impl TransposeKernel {
    /// The kernel's name in benchmark rows and tables.
    pub fn label(self) -> &'static str {
        match self {
            TransposeKernel::Padded => "padded",
            TransposeKernel::Unpadded => "unpadded",
            TransposeKernel::Naive => "naive",
            TransposeKernel::L1 => "l1",
        }
    }
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
pub(crate) fn upload<T: Element>(g: &Gpu, input: &[T]) -> Result<(CudaSlice<T>, CudaSlice<T>)> {
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

pub(crate) fn grid_for(g: &Gpu, work_items: u64, per_block: u64) -> u32 {
    work_items
        .div_ceil(per_block)
        .clamp(1, g.limits.sm_count as u64 * 16) as u32
}

pub(crate) fn function(
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

/// Which stencil kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StencilKernel {
    /// The tile and its halo staged in shared memory (the library's kernel).
    #[default]
    Shared,
    /// No shared memory: every neighbour read through the read-only (L1) path (the cache lab's).
    L1,
}

pub fn stencil1d<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
) -> Result<Vec<T>> {
    stencil1d_timed(input, radius, weights, boundary, 0).map(|(out, _)| out)
}

/// The stencil with the chosen kernel.
pub fn stencil1d_with<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
    kernel: StencilKernel,
) -> Result<Vec<T>> {
    crate::stencil::check(radius, weights)?;
    stencil1d_run(input, radius, weights, boundary, kernel, &[], 0).map(|(out, _)| out)
}

/// The shared-memory stencil compiled WITHOUT the barrier between staging the tile and reading it
/// (`-DSTENCIL_SKIP_BARRIER_FOR_RACECHECK=1`). Its results are undefined: it exists only so that a
/// test can show compute-sanitizer's racecheck reporting the hazard.
#[doc(hidden)]
pub fn stencil1d_without_barrier_for_racecheck<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
) -> Result<Vec<T>> {
    crate::stencil::check(radius, weights)?;
    let skip = [("STENCIL_SKIP_BARRIER_FOR_RACECHECK", "1".to_string())];
    stencil1d_run(
        input,
        radius,
        weights,
        boundary,
        StencilKernel::Shared,
        &skip,
        0,
    )
    .map(|(out, _)| out)
}

/// The stencil, then `reps` timed repetitions of its kernel (milliseconds each, CUDA events).
pub fn stencil1d_timed<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
    reps: usize,
) -> Result<(Vec<T>, Vec<f32>)> {
    stencil1d_run(
        input,
        radius,
        weights,
        boundary,
        StencilKernel::Shared,
        &[],
        reps,
    )
}

/// A stencil kernel compiled, configured and ready to launch on any input of `n` elements.
pub(crate) struct StencilLaunch {
    pub(crate) function: cudarc::driver::CudaFunction,
    kernel: StencilKernel,
    grid: u32,
    n: u64,
    radius: i32,
    boundary: i32,
    /// The shared kernel's by-value weights parameter: 2r + 1 elements (zeros for integer sums).
    weights: Vec<u8>,
}

/// Outputs per block of the shared-memory stencil: 256 threads, two 16-byte chunks each (see
/// `kernels/stencil.cu`).
pub fn stencil_tile(elem_size: usize) -> u64 {
    STENCIL_BLOCK as u64 * 2 * (16 / elem_size as u64)
}

impl StencilLaunch {
    /// `extra` adds defines (a separate module: the cache lab's carveouts must not touch the
    /// library's own functions).
    pub(crate) fn new<T: StencilElement>(
        g: &Gpu,
        n: u64,
        radius: usize,
        weights: Option<&[T]>,
        boundary: Boundary,
        kernel: StencilKernel,
        extra: &[(&str, String)],
    ) -> Result<Self> {
        let mut defines = elem_defines::<T>();
        defines.push(("ACC_T", T::ACC_C_TYPE.to_string()));
        defines.push(("WEIGHTED", (T::WEIGHTED as u8).to_string()));
        defines.push(("RADIUS", radius.to_string()));
        defines.extend(extra.iter().cloned());
        let size = std::mem::size_of::<T>();
        let (name, per_block) = match kernel {
            StencilKernel::Shared => ("stencil1d", stencil_tile(size)),
            StencilKernel::L1 => ("stencil1d_l1", STENCIL_BLOCK as u64),
        };
        let function = function(g, &STENCIL, &defines, name, 0)?;
        let taps = 2 * radius + 1;
        let mut bytes = vec![0u8; taps * size];
        if let Some(w) = weights.filter(|w| w.len() == taps) {
            // SAFETY: `w` holds `taps` plain numeric elements (no padding), `taps * size` bytes.
            let src = unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, taps * size) };
            bytes.copy_from_slice(src);
        }
        Ok(StencilLaunch {
            function,
            kernel,
            grid: grid_for(g, n, per_block),
            n,
            radius: radius as i32,
            boundary: boundary.code(),
            weights: bytes,
        })
    }

    /// Launches on device pointers: `pi` and `po` hold `n` elements; `pw` (read by the L1 kernel
    /// only) the 2r + 1 weights, or one unused element for the plain sum.
    pub(crate) fn launch(&self, g: &Gpu, pi: u64, po: u64, pw: u64) -> Result<()> {
        match self.kernel {
            StencilKernel::Shared => {
                let (mut pi, mut po, mut n, mut b) = (pi, po, self.n, self.boundary);
                let mut w = self.weights.clone();
                let mut args = [
                    &mut pi as *mut u64 as *mut std::ffi::c_void,
                    &mut po as *mut u64 as *mut std::ffi::c_void,
                    w.as_mut_ptr() as *mut std::ffi::c_void,
                    &mut n as *mut u64 as *mut std::ffi::c_void,
                    &mut b as *mut i32 as *mut std::ffi::c_void,
                ];
                let shape = LaunchShape {
                    grid: self.grid,
                    block: STENCIL_BLOCK,
                    shared_bytes: 0,
                    cluster: 1,
                };
                // SAFETY: stencil1d(in, out, stencil_weights (2r + 1 elements by value), n,
                // boundary): one pointer per parameter, each to a value of the parameter's size
                // (the weights' bytes for the struct); the caller passes buffers of n elements.
                unsafe { launch::launch(&self.function, &g.stream, &shape, &mut args) }
            }
            StencilKernel::L1 => {
                let cfg = LaunchConfig {
                    grid_dim: (self.grid, 1, 1),
                    block_dim: (STENCIL_BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut l = g.stream.launch_builder(&self.function);
                l.arg(&pi)
                    .arg(&po)
                    .arg(&pw)
                    .arg(&self.n)
                    .arg(&self.radius)
                    .arg(&self.boundary);
                // SAFETY: stencil1d_l1(in, out, w, n, r, boundary); the caller passes buffers of
                // n elements (in, out) and 2r + 1 (w, weighted) or 1 unused element (integers).
                unsafe { l.launch(cfg) }
                    .map(|_| ())
                    .map_err(cuda_err("launching the stencil"))
            }
        }
    }
}

fn stencil1d_run<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
    kernel: StencilKernel,
    extra: &[(&str, String)],
    reps: usize,
) -> Result<(Vec<T>, Vec<f32>)> {
    if input.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let g = gpu()?;
    g.bind()?;
    let k = StencilLaunch::new::<T>(
        &g,
        input.len() as u64,
        radius,
        weights,
        boundary,
        kernel,
        extra,
    )?;
    let (d_in, d_out) = upload(&g, input)?;
    let w = g
        .stream
        .clone_htod(weights.unwrap_or(&[T::default()]))
        .map_err(cuda_err("copying the weights"))?;
    let (pi, po, pw) = (
        d_in.device_ptr(&g.stream).0,
        d_out.device_ptr(&g.stream).0,
        w.device_ptr(&g.stream).0,
    );
    let times = run(&g, reps, || k.launch(&g, pi, po, pw))?;
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
    let k = TransposeLaunch::new::<T>(&g, rows, cols, kernel, &[])?;
    let (d_in, d_out) = upload(&g, input)?;
    let (pi, po) = (d_in.device_ptr(&g.stream).0, d_out.device_ptr(&g.stream).0);
    let times = run(&g, reps, || k.launch(&g, pi, po))?;
    let out = g.stream.clone_dtoh(&d_out).map_err(cuda_err(
        "reading the transpose back (the kernel may have failed)",
    ))?;
    Ok((out, times))
}

/// A transpose kernel compiled, configured and ready to launch on a `rows x cols` array.
pub(crate) struct TransposeLaunch {
    pub(crate) function: cudarc::driver::CudaFunction,
    cfg: LaunchConfig,
    rows: u64,
    cols: u64,
}

impl TransposeLaunch {
    /// `extra` adds defines (a separate module, as for [`StencilLaunch::new`]).
    pub(crate) fn new<T: Element>(
        g: &Gpu,
        rows: usize,
        cols: usize,
        kernel: TransposeKernel,
        extra: &[(&str, String)],
    ) -> Result<Self> {
        let name = match kernel {
            TransposeKernel::Padded => "transpose_padded",
            TransposeKernel::Unpadded => "transpose_unpadded",
            TransposeKernel::Naive => "transpose_naive",
            TransposeKernel::L1 => "transpose_l1",
        };
        let mut defines = elem_defines::<T>();
        defines.extend(extra.iter().cloned());
        let function = function(g, &TRANSPOSE, &defines, name, 0)?;
        let (r, c) = (rows as u64, cols as u64);
        let tiles = r.div_ceil(32) * c.div_ceil(32);
        Ok(TransposeLaunch {
            function,
            cfg: LaunchConfig {
                grid_dim: (grid_for(g, tiles, 1), 1, 1),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            },
            rows: r,
            cols: c,
        })
    }

    /// Launches on device pointers that both hold rows * cols elements.
    pub(crate) fn launch(&self, g: &Gpu, pi: u64, po: u64) -> Result<()> {
        let mut l = g.stream.launch_builder(&self.function);
        l.arg(&pi).arg(&po).arg(&self.rows).arg(&self.cols);
        // SAFETY: transpose_*(in, out, rows, cols); the caller passes two buffers of rows * cols
        // elements.
        unsafe { l.launch(self.cfg) }
            .map(|_| ())
            .map_err(cuda_err("launching the transpose"))
    }
}

/// Sets a function's preferred shared memory carveout: the percentage of the SM's combined L1 /
/// shared memory to give to shared memory (`None`: the driver's default). It is a hint; the driver
/// rounds to a configuration the hardware has and that fits the launch.
pub(crate) fn set_carveout(f: &cudarc::driver::CudaFunction, percent: Option<u32>) -> Result<()> {
    let value = percent.map(|p| p.min(100) as i32).unwrap_or(-1);
    f.set_attribute(
        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
        value,
    )
    .map_err(cuda_err("setting the shared memory carveout"))
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
pub(crate) fn run(
    g: &Gpu,
    reps: usize,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<Vec<f32>> {
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
