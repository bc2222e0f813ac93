//! `numpy.digitize` on the GPU (`kernels/digitize.cu`): the CPU engine's rule (float64
//! comparisons, numpy's `right=`, increasing and decreasing bins, NaN after every bin) as a
//! branch-free binary search over bins held in shared memory. [`DeviceDigitize`] is built once per
//! (sample type, bins, right) and runs on device memory and the caller's stream (a cudarc view,
//! or raw pointers for memory another framework owns); [`digitize`] is the host entry point.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{sys, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut};
use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr};

use super::{direction, Direction};
use crate::error::{Error, Result};
use crate::gpu::compile::DIGITIZE;
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::sample::{Sample, SampleType, Samples};
use crate::search_table::{top_step, KernelSearchTable, SearchTable};

/// Threads per block (the kernel's launch bound).
const BLOCK: u32 = 512;

/// The compile defines of `digitize.cu` for a sample type.
fn defines(t: SampleType) -> Result<Vec<(&'static str, String)>> {
    let c_type = match t {
        SampleType::U8 => "unsigned char",
        SampleType::U16 => "unsigned short",
        SampleType::U32 => "unsigned int",
        SampleType::U64 => "unsigned long long",
        SampleType::I8 => "signed char",
        SampleType::I16 => "short",
        SampleType::I32 => "int",
        SampleType::I64 => "long long",
        SampleType::F32 => "float",
        SampleType::F64 => "double",
        SampleType::F16 | SampleType::BF16 => {
            return Err(Error::NotImplemented(format!(
                "digitize of {t} samples on the CUDA engine (use the CPU backend)"
            )))
        }
    };
    Ok(vec![
        ("SAMPLE_T", c_type.to_string()),
        (
            "SAMPLE_IS_FLOAT",
            matches!(t, SampleType::F32 | SampleType::F64)
                .then_some("1")
                .unwrap_or("0")
                .to_string(),
        ),
    ])
}

/// The kernel's `mode` for a direction and `right`.
fn mode(dir: Direction, right: bool) -> i32 {
    match (dir, right) {
        (Direction::Increasing, false) => 0,
        (Direction::Increasing, true) => 1,
        (Direction::Decreasing, false) => 2,
        (Direction::Decreasing, true) => 3,
    }
}

/// `numpy.digitize` of samples of one type against fixed bins, ready to run on the GPU.
pub struct DeviceDigitize {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    bins: CudaSlice<f64>,
    nbins: u32,
    mode: i32,
    in_shared: bool,
    /// The table that narrows each sample's search (`crate::search_table`), or none.
    _search: Option<CudaSlice<u32>>,
    table: KernelSearchTable,
    /// Resident blocks over the whole device (the grid for large inputs).
    max_grid: u32,
    shared_bytes: u32,
    sample_type: SampleType,
}

impl DeviceDigitize {
    /// Compiles the kernel for `sample_type` and copies `bins` to `gpu`, returning once they are
    /// there (runs may come on any stream). The bins must be monotonic (numpy's rule, [`super::digitize`]'s error otherwise).
    pub fn new(
        gpu: &Arc<Gpu>,
        sample_type: SampleType,
        bins: &[f64],
        right: bool,
    ) -> Result<DeviceDigitize> {
        if bins.iter().any(|b| b.is_nan()) {
            return Err(Error::NotImplemented(
                "NaN bins in the GPU digitize kernel (numpy orders NaN after every number): search the bins without their NaN end and place the NaN samples".into(),
            ));
        }
        let dir = direction(bins)?;
        let nbins = u32::try_from(bins.len())
            .ok()
            .filter(|&n| n < 1 << 31)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{} bins: digitize on the GPU takes fewer than 2^31",
                    bins.len()
                ))
            })?;
        let defines = defines(sample_type)?;
        gpu.bind()?;
        let func = gpu.function(&DIGITIZE, &defines, "digitize")?;
        let bins_dev = gpu
            .stream
            .clone_htod(if bins.is_empty() { &[0.0][..] } else { bins })
            .map_err(cuda_err("copying the bins"))?;
        let mode = mode(dir, right);
        let holds: fn(f64, f64) -> bool = match mode {
            0 => |b, x| b <= x,
            1 => |b, x| b < x,
            2 => |b, x| b > x,
            _ => |b, x| b >= x,
        };
        let (search, table) = match SearchTable::build(bins, holds) {
            Some(table) => {
                let t = gpu
                    .stream
                    .clone_htod(&table.starts)
                    .map_err(cuda_err("copying the bins' search table"))?;
                let k = table.kernel(t.device_ptr(&gpu.stream).0);
                (Some(t), k)
            }
            None => (None, KernelSearchTable::default()),
        };
        let bytes = bins.len() * 8;
        let in_shared = bytes <= gpu.limits.smem_per_block_optin as usize;
        let shared_bytes = if in_shared { bytes as u32 } else { 0 };
        let shape = LaunchShape {
            grid: 1,
            block: BLOCK,
            shared_bytes,
            cluster: 1,
        };
        launch::prepare_function(&func, &shape, gpu.limits.smem_per_block_optin)?;
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, shared_bytes as usize, None)
            .map_err(cuda_err("querying occupancy"))?;
        if per_sm == 0 {
            return Err(Error::StrategyUnsupported {
                strategy: "digitize".into(),
                reason: format!("a block with {shared_bytes} bytes of bins does not fit an SM"),
            });
        }
        // The bins were copied on the library's stream; runs come on the caller's, which need
        // not wait for that one: building waits for the copies here.
        gpu.stream
            .synchronize()
            .map_err(cuda_err("copying the digitize bins"))?;
        Ok(DeviceDigitize {
            gpu: gpu.clone(),
            func,
            bins: bins_dev,
            nbins,
            mode,
            in_shared,
            _search: search,
            table,
            max_grid: per_sm * gpu.limits.sm_count,
            shared_bytes,
            sample_type,
        })
    }

    /// The sample type the kernel was built for.
    pub fn sample_type(&self) -> SampleType {
        self.sample_type
    }

    /// Whether the bins are searched in shared memory (else through L1).
    pub fn bins_in_shared_memory(&self) -> bool {
        self.in_shared
    }

    /// The index of every sample of `input` into `out` (as long as `input`), on `stream`.
    pub fn run<T: Sample + DeviceRepr>(
        &self,
        input: &CudaView<'_, T>,
        out: &mut CudaViewMut<'_, i64>,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        if out.len() != input.len() {
            return Err(Error::InvalidArgument(format!(
                "{} samples, {} output indices",
                input.len(),
                out.len()
            )));
        }
        let (in_ptr, _in_guard) = input.device_ptr(stream);
        let (out_ptr, _out_guard) = out.device_ptr_mut(stream);
        // SAFETY: the views hold input.len() samples of T and as many i64, borrowed for this
        // call; the caller keeps them alive until the stream has run.
        unsafe { self.enqueue(stream, in_ptr, input.len(), T::TYPE, out_ptr) }
    }

    /// [`DeviceDigitize::run`] on memory and a stream that another framework owns: `input` holds
    /// `n` samples of `sample_type`, `out` `n` int64.
    ///
    /// # Safety
    /// Both pointers must be device memory of this GPU's (primary) context holding what is said
    /// above, valid until `stream` has run; `stream` a live stream of that context.
    pub unsafe fn run_raw(
        &self,
        input: u64,
        n: usize,
        sample_type: SampleType,
        out: u64,
        stream: sys::CUstream,
    ) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: the caller's stream of this context; the wrapper does not own it.
        let stream = unsafe { self.gpu.ctx.wrap_borrowed_stream(stream) };
        // SAFETY: forwarded from the caller.
        unsafe { self.enqueue(&stream, input, n, sample_type, out) }
    }

    /// # Safety
    /// As [`DeviceDigitize::run_raw`], with `stream` of this context.
    unsafe fn enqueue(
        &self,
        stream: &Arc<CudaStream>,
        input: u64,
        n: usize,
        sample_type: SampleType,
        out: u64,
    ) -> Result<()> {
        if stream.context().cu_ctx() != self.gpu.ctx.cu_ctx() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to another CUDA context than device {}'s",
                self.gpu.ordinal
            )));
        }
        if sample_type != self.sample_type {
            return Err(Error::InvalidArgument(format!(
                "this digitize was built for {} samples, the input holds {sample_type}",
                self.sample_type
            )));
        }
        if n == 0 {
            return Ok(());
        }
        // The kernel reads 16 bytes of samples and writes 16 bytes of indices at a time.
        if input % 16 != 0 || out % 16 != 0 {
            return Err(Error::InvalidArgument(format!(
                "samples at {input:#x} and indices at {out:#x}: both must be 16-byte aligned"
            )));
        }
        let per_block = BLOCK as usize * (16 / sample_type.size());
        let grid = (n.div_ceil(per_block)).min(self.max_grid as usize).max(1) as u32;
        let shape = LaunchShape {
            grid,
            block: BLOCK,
            shared_bytes: self.shared_bytes,
            cluster: 1,
        };
        let (mut in_ptr, mut n64) = (input, n as u64);
        let mut bins_ptr = self.bins.device_ptr(stream).0;
        let (mut nbins, mut top) = (self.nbins, top_step(self.nbins));
        let (mut mode, mut in_shared) = (self.mode, self.in_shared as i32);
        let mut out_ptr = out;
        let mut table = self.table;
        let mut args: [*mut c_void; 9] = [
            &mut in_ptr as *mut u64 as *mut c_void,
            &mut n64 as *mut u64 as *mut c_void,
            &mut bins_ptr as *mut u64 as *mut c_void,
            &mut nbins as *mut u32 as *mut c_void,
            &mut top as *mut u32 as *mut c_void,
            &mut mode as *mut i32 as *mut c_void,
            &mut in_shared as *mut i32 as *mut c_void,
            &mut out_ptr as *mut u64 as *mut c_void,
            &mut table as *mut KernelSearchTable as *mut c_void,
        ];
        // SAFETY: the list matches digitize(in, n, bins, nbins, top, mode, in_shared, out,
        // table), `table` by value with the C layout of `SearchTable`; the caller guarantees the
        // sample and index pointers, `bins` and the table's starts live as long as `self`.
        unsafe { launch::launch(&self.func, stream, &shape, &mut args) }
    }
}

/// `numpy.digitize(x, bins, right)` on the default GPU: the samples copied in, their indices
/// copied back (the same values as [`super::digitize`]).
pub fn digitize(x: Samples<'_>, bins: &[f64], right: bool) -> Result<Vec<i64>> {
    let gpu = crate::gpu::gpu()?;
    let d = DeviceDigitize::new(&gpu, x.sample_type(), bins, right)?;
    if x.is_empty() {
        return Ok(Vec::new());
    }
    let stream = &gpu.stream;
    let input = stream
        .clone_htod(crate::gpu::host_memory::sample_bytes(x))
        .map_err(cuda_err("copying the samples"))?;
    let mut out = stream
        .alloc_zeros::<i64>(x.len())
        .map_err(cuda_err("allocating the indices"))?;
    let (in_ptr, out_ptr) = (input.device_ptr(stream).0, out.device_ptr_mut(stream).0);
    // SAFETY: `input` holds the samples' bytes and `out` x.len() i64, both alive until the copy
    // back below has synchronised the stream.
    unsafe { d.enqueue(stream, in_ptr, x.len(), x.sample_type(), out_ptr)? };
    stream.clone_dtoh(&out).map_err(cuda_err(
        "copying the indices back (the kernel may have failed)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_starts_at_the_largest_power_of_two_not_above_the_bins() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 1000, 1024, 1025].map(top_step),
            [0, 1, 2, 2, 4, 4, 512, 1024, 1024]
        );
        assert_eq!(top_step((1 << 31) - 1), 1 << 30);
    }

    /// The kernel's search (`digitize_one` in digitize.cu), step for step.
    fn kernel_search(bins: &[f64], x: f64, mode: i32) -> usize {
        let holds = |b: f64| match mode {
            0 => b <= x,
            1 => b < x,
            2 => b > x,
            _ => b >= x,
        };
        if x.is_nan() {
            return if mode < 2 { bins.len() } else { 0 };
        }
        let (n, mut pos, mut step) = (bins.len() as u32, 0u32, top_step(bins.len() as u32));
        while step > 0 {
            let next = pos + step;
            if next <= n && holds(bins[next as usize - 1]) {
                pos = next;
            }
            step >>= 1;
        }
        pos as usize
    }

    #[test]
    fn the_branch_free_search_gives_the_cpu_engines_index() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(23);
        for nbins in [0usize, 1, 2, 3, 7, 8, 9, 100, 1000, 1025] {
            for decreasing in [false, true] {
                let mut bins: Vec<f64> = (0..nbins)
                    .map(|_| r.gen_range(-20i32..20) as f64 / 2.0)
                    .collect();
                bins.sort_by(f64::total_cmp);
                if decreasing {
                    bins.reverse();
                }
                let dir = direction(&bins).unwrap();
                for right in [false, true] {
                    let m = mode(dir, right);
                    let mut xs: Vec<f64> = bins.clone();
                    xs.extend((0..200).map(|_| r.gen_range(-12.0..12.0)));
                    xs.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0]);
                    let want = super::super::digitize(Samples::F64(&xs), &bins, right).unwrap();
                    for (&x, &w) in xs.iter().zip(&want) {
                        assert_eq!(
                            kernel_search(&bins, x, m) as i64,
                            w,
                            "{bins:?} {x} right {right}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn half_samples_are_refused_with_a_clear_error() {
        let e = defines(SampleType::BF16).unwrap_err();
        assert!(e.to_string().contains("bfloat16"), "{e}");
        assert_eq!(defines(SampleType::F64).unwrap()[1].1, "1");
        assert_eq!(defines(SampleType::I64).unwrap()[1].1, "0");
    }

    #[test]
    fn kernel_compiles_for_hopper_for_every_sample_type() {
        if !crate::gpu::compile::tests::toolchain() {
            return;
        }
        for t in SampleType::ALL {
            let opts = crate::gpu::compile::options("compute_90a", &defines(t).unwrap());
            let ptx = crate::gpu::compile::compile_uncached(&DIGITIZE, &opts)
                .unwrap_or_else(|e| panic!("{t}: {e}"));
            assert!(ptx.contains(".entry digitize("), "{t}");
        }
    }
}
