//! The shared-memory array operations on the GPU: 1D stencil with halo, tiled transpose, reversal
//! (static, dynamic and carved shared memory). Each copies the input to the device, poisons the
//! output (so an element no thread wrote cannot pass for a result), launches, and copies back.

use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use crate::array_ops::kinds::Boundary;
use crate::array_ops::kinds::ReverseKernel;
use crate::element::{Element, StencilElement};
use crate::error::Result;
use crate::gpu::compile::{KernelSource, REVERSE, STENCIL, TRANSPOSE};
use crate::gpu::device::{cuda_err, gpu, Gpu};
use crate::gpu::launch::{self, check, LaunchShape};
use crate::gpu::timing::time_launches;

/// Threads per block of the stencil kernels.
pub const STENCIL_BLOCK: u32 = 256;
/// Bytes per tile of the reversal kernels: 256 threads, four 16-byte chunks each (the static
/// kernel is compiled with the same tile, see `kernels/reverse.cu`).
pub const REVERSE_TILE_BYTES: u32 = 16384;
/// Threads per block of the reversal kernels.
pub const REVERSE_BLOCK: u32 = 256;

/// Elements per tile of the reversal kernels for elements of `elem_size` bytes.
pub fn reverse_tile(elem_size: usize) -> u32 {
    REVERSE_TILE_BYTES / elem_size as u32
}

/// Which transpose kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransposeKernel {
    /// Shared-memory tiles padded so that the transposing (column) reads hit distinct banks: 16
    /// bytes more per group of 4 rows (2 for 8-byte elements) in the 16-byte path, one element per
    /// row in the one-element path.
    Padded,
    /// The same tiles unpadded, for the bank-conflict lab: 8-way conflicts on the 16-byte column
    /// reads (32-way for 4-byte elements in the one-element path).
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

/// Bytes of the dynamic reversal's allocation for a tile of `tile` elements: the tile and one more
/// 16-byte chunk.
pub fn dynamic_bytes(tile: u32, elem_size: usize) -> u32 {
    tile * elem_size as u32 + 16
}

/// Bytes of the carved reversal's allocation for a tile of `tile` elements: the values (the tile
/// and one more 16-byte chunk), then (aligned for u32) one position per 16-byte chunk of the tile.
pub fn carve_bytes(tile: u32, elem_size: usize) -> u32 {
    let values = (dynamic_bytes(tile, elem_size) as usize + 3) & !3;
    let chunks = tile as usize * elem_size / 16;
    (values + 4 * chunks) as u32
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
    crate::array_ops::kinds::check(radius, weights)?;
    stencil1d_run(input, radius, weights, boundary, kernel, &[], 0).map(|(out, _)| out)
}

/// The shared-memory stencil compiled WITHOUT the barrier between staging the tile and reading it
/// (`-DSTENCIL_SKIP_BARRIER_FOR_RACECHECK=1`). Its results are undefined (some outputs do come out
/// wrong): it exists only so that a test can
/// show compute-sanitizer's racecheck reporting the hazard. In both layouts the threads at the end
/// of each warp's span read chunks that threads of the next warp staged, so the hazards are
/// between warps (racecheck's `--racecheck-report hazard` lists them as read-after-write errors).
#[doc(hidden)]
pub fn stencil1d_without_barrier_for_racecheck<T: StencilElement>(
    input: &[T],
    radius: usize,
    weights: Option<&[T]>,
    boundary: Boundary,
) -> Result<Vec<T>> {
    crate::array_ops::kinds::check(radius, weights)?;
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

/// Radii up to this take the shared-memory stencil's memory-bound layout (two runs of one 16-byte
/// chunk of outputs per thread); larger radii take the register-blocked one (one run of
/// [`stencil_run_large`] outputs per thread). Mirrors `STENCIL_SMALL_RADIUS` in
/// `kernels/stencil.cu`.
pub const STENCIL_SMALL_RADIUS: usize = 8;

/// Consecutive outputs per thread in the register-blocked layout (radii above
/// [`STENCIL_SMALL_RADIUS`]): 16 for 4-byte elements, 8 for 8-byte ones. Mirrors
/// `STENCIL_K_LARGE` in `kernels/stencil.cu`.
pub fn stencil_run_large(elem_size: usize) -> u64 {
    if elem_size == 4 {
        16
    } else {
        8
    }
}

/// Outputs per block (one tile) of the shared-memory stencil for elements of `elem_size` bytes at
/// `radius` (see `kernels/stencil.cu`). A mismatch with the kernel would only change the grid: the
/// kernel strides over its tiles.
pub fn stencil_tile(elem_size: usize, radius: usize) -> u64 {
    let per_thread = if radius <= STENCIL_SMALL_RADIUS {
        2 * (16 / elem_size as u64)
    } else {
        stencil_run_large(elem_size)
    };
    STENCIL_BLOCK as u64 * per_thread
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
        let name = match kernel {
            StencilKernel::Shared => "stencil1d",
            StencilKernel::L1 => "stencil1d_l1",
        };
        let function = function(g, &STENCIL, &defines, name, 0)?;
        let grid = match kernel {
            // A persistent grid: as many blocks as fit the GPU at once (each strides over the
            // tiles, prefetching its next tile while it computes one), so that no partial last
            // wave leaves SMs idle.
            StencilKernel::Shared => {
                let per_sm = function
                    .occupancy_max_active_blocks_per_multiprocessor(STENCIL_BLOCK, 0, None)
                    .map_err(cuda_err("querying the stencil's occupancy"))?
                    .max(1);
                let tiles = n.div_ceil(stencil_tile(size, radius)).max(1);
                tiles.min(per_sm as u64 * g.limits.sm_count as u64) as u32
            }
            StencilKernel::L1 => grid_for(g, n, STENCIL_BLOCK as u64),
        };
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
            grid,
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

/// Threads per block of the tiled (padded and unpadded) transposes.
pub const TRANSPOSE_BLOCK: u32 = 256;

/// The tile (rows, columns in elements) one block of the tiled transposes handles for a `rows x
/// cols` matrix of `elem_size`-byte elements: 16 or 32 KiB tiles moved in 16-byte chunks when every
/// input and output row is a whole number of chunks, else 32 x 32 elements moved one at a time.
/// Mirrors `kernels/transpose.cu` (a mismatch would only change the grid size: the kernels stride
/// over their tiles).
pub fn transpose_tile(elem_size: usize, rows: u64, cols: u64) -> (u64, u64) {
    let e = elem_size as u64;
    if (rows * e) % 16 != 0 || (cols * e) % 16 != 0 {
        return (32, 32);
    }
    match elem_size {
        1 => (256, 128),
        2 => (128, 128),
        _ => (64, 256 / e),
    }
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
        let (grid, block) = match kernel {
            TransposeKernel::Padded | TransposeKernel::Unpadded => {
                // One tile per block (the kernels stride over the tiles if the grid is smaller).
                let (tr, tc) = transpose_tile(std::mem::size_of::<T>(), r, c);
                let tiles = r.div_ceil(tr) * c.div_ceil(tc);
                (
                    tiles.clamp(1, i32::MAX as u64) as u32,
                    (TRANSPOSE_BLOCK, 1, 1),
                )
            }
            TransposeKernel::Naive | TransposeKernel::L1 => {
                let tiles = r.div_ceil(32) * c.div_ceil(32);
                (grid_for(g, tiles, 1), (32, 8, 1))
            }
        };
        Ok(TransposeLaunch {
            function,
            cfg: LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: block,
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
    let tile = reverse_tile(size);
    let (name, shared) = match kernel {
        ReverseKernel::Static => ("reverse_static", 0),
        ReverseKernel::Dynamic => ("reverse_dynamic", dynamic_bytes(tile, size)),
        ReverseKernel::Carved => ("reverse_carved", carve_bytes(tile, size)),
    };
    let f = function(&g, &REVERSE, &elem_defines::<T>(), name, shared)?;
    let (d_in, d_out) = upload(&g, input)?;
    let n = input.len() as u64;
    let (pi, po) = (d_in.device_ptr(&g.stream).0, d_out.device_ptr(&g.stream).0);
    // One tile per block (the kernels stride over the tiles if the grid is smaller).
    let tiles = n.div_ceil(tile as u64).clamp(1, i32::MAX as u64) as u32;
    let cfg = LaunchConfig {
        grid_dim: (tiles, 1, 1),
        block_dim: (REVERSE_BLOCK, 1, 1),
        shared_mem_bytes: shared,
    };
    let times = run(&g, reps, || {
        let mut l = g.stream.launch_builder(&f);
        l.arg(&pi).arg(&po).arg(&n);
        if kernel != ReverseKernel::Static {
            l.arg(&tile);
        }
        // SAFETY: reverse_static(in, out, n) / reverse_{dynamic,carved}(in, out, n, tile) with the
        // shared memory sized for the tile (dynamic_bytes / carve_bytes); in and out hold n elements
        // in 16-byte aligned device allocations.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(cuda_err("launching the reversal"))
    })?;
    let out = g.stream.clone_dtoh(&d_out).map_err(cuda_err(
        "reading the reversal back (the kernel may have failed)",
    ))?;
    Ok((out, times))
}

/// Runs `launch` once, then `reps` more times between timing events; milliseconds per run
/// ([`time_launches`] with one untimed run).
pub(crate) fn run(g: &Gpu, reps: usize, launch: impl FnMut() -> Result<()>) -> Result<Vec<f32>> {
    let launch = std::cell::RefCell::new(launch);
    time_launches(g, 1, reps, &|| (launch.borrow_mut())())
}
