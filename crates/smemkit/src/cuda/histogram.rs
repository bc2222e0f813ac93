//! GPU histograms: the strategy the planner picked (or the caller forced) is compiled for the
//! sample type, launched over the input in batches, and its u64 counts (or f64 sums) and tallies are
//! copied back. [`Prepared`] separates the one-time work (compile, plan, occupancy) from the launches,
//! so benchmarks time the kernels alone.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

use super::compile::HISTOGRAM;
use super::device::{cuda_err, Gpu};
use super::launch::{self, LaunchShape};
use super::params::{kernel_params, mode_name, KernelBinParams};
use crate::bins::{Binning, OutOfRange};
use crate::error::{Error, Result};
use crate::histogram::{Counts, Tallies};
use crate::plan::{self, DeviceLimits, Plan, Strategy, StrategyChoice, Workload};
use crate::sample::{Sample, SampleType, Samples, Weights};

/// Result of a GPU run.
#[derive(Debug, Clone)]
pub struct CudaResult {
    pub counts: Counts,
    pub tallies: Tallies,
    pub detail: String,
}

/// Samples per launch: keeps per-block u32 counters far from overflow and indices in range.
pub const LAUNCH_BATCH: usize = 1 << 30;
/// Samples copied to the device at a time when the input lives on the host.
pub const HOST_BATCH: usize = 1 << 28;

/// The type of the weights, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightKind {
    None,
    F32,
    F64,
}

impl WeightKind {
    fn of(w: &Option<Weights<'_>>) -> WeightKind {
        match w {
            None => WeightKind::None,
            Some(Weights::F32(_)) => WeightKind::F32,
            Some(Weights::F64(_)) => WeightKind::F64,
        }
    }
    fn suffix(self) -> &'static str {
        match self {
            WeightKind::None => "none",
            WeightKind::F32 => "f32",
            WeightKind::F64 => "f64",
        }
    }
}

/// The NVRTC defines that specialise `histogram.cu` for a sample type.
pub fn sample_defines(t: SampleType) -> Vec<(&'static str, String)> {
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
    };
    let signed = matches!(
        t,
        SampleType::I8 | SampleType::I16 | SampleType::I32 | SampleType::I64
    );
    vec![
        ("SAMPLE_T", c_type.to_string()),
        ("SAMPLE_IS_FLOAT", (t.is_float() as u8).to_string()),
        ("SAMPLE_IS_F32", ((t == SampleType::F32) as u8).to_string()),
        ("SAMPLE_IS_SIGNED", (signed as u8).to_string()),
    ]
}

/// The kernel for a strategy, binning and weight kind.
pub fn kernel_name(
    plan: &Plan,
    limits: &DeviceLimits,
    binning: &Binning,
    weights: WeightKind,
) -> String {
    let s = match plan.strategy {
        // u32 counts with at most 1024 threads per SM: the prefetching build.
        Strategy::Shared if plan::prefetch_build(plan, limits, weights != WeightKind::None) => {
            return format!("hist_sharedp_{}_none", mode_name(binning));
        }
        Strategy::Shared => "shared",
        // Counts only (the planner refuses weights): one kernel per width, in two builds (4-bit
        // counters: the prefetching one only, which plan::prefetch_build says).
        Strategy::Packed { bits } => {
            let build = if plan::prefetch_build(plan, limits, false) {
                "p"
            } else {
                ""
            };
            return format!("hist_shared{bits}{build}_{}_none", mode_name(binning));
        }
        Strategy::Cluster { .. } => "cluster",
        // Counts only, one kernel per counter width.
        Strategy::Exchange { bits, .. } => {
            return format!("hist_exchange{bits}_{}_none", mode_name(binning))
        }
        // Counts only, one kernel per counter width: 1024-thread blocks, prefetching.
        Strategy::Sliced { bits, .. } => {
            return format!("hist_sliced{bits}_{}_none", mode_name(binning))
        }
        Strategy::Global => "global",
        // The first of the partition passes; the others are looked up beside it.
        Strategy::Partition => return format!("hist_part_count_{}", mode_name(binning)),
    };
    format!("hist_{s}_{}_{}", mode_name(binning), weights.suffix())
}

/// The kernels a prepared histogram launches besides its plan's own: the fold of global u32
/// counters, the later partition passes, and where `auto` probes for skew, the probe and the
/// global plan it may switch to.
pub fn companions(
    plan: &Plan,
    binning: &Binning,
    weights: WeightKind,
    probed: bool,
) -> Vec<String> {
    let mode = mode_name(binning);
    let mut names = Vec::new();
    let global_counts = weights == WeightKind::None;
    if plan.strategy == Strategy::Global && global_counts {
        names.push("hist_fold_u32".to_string());
    }
    if plan.strategy == Strategy::Partition {
        names.push(format!("hist_part_scatter_{mode}"));
        names.push("hist_part_bins".to_string());
        names.push("hist_part_scan".to_string());
    }
    if probed {
        names.push(format!("hist_probe_{mode}"));
        names.push(format!("hist_global_{mode}_{}", weights.suffix()));
        if global_counts {
            names.push("hist_fold_u32".to_string());
        }
    }
    names.dedup();
    names
}

/// Whether warps combine equal bins before their atomics. Measured on the H100 (bench/NOTES.md):
/// shared-memory atomics on one address are cheap enough that `__match_any_sync` only costs (2980
/// against 515 GB/s at 256 uniform bins, and 2960 against 2250 on hot data), while remote (cluster)
/// and global atomics on one address serialise without it (hot data, 256 bins: cluster2 1200 against
/// 275 GB/s, global 85 against 6). Weighted sums never aggregate.
pub fn aggregate_default(strategy: &Strategy, weights: WeightKind) -> bool {
    weights == WeightKind::None
        && !matches!(
            strategy,
            Strategy::Shared | Strategy::Packed { .. } | Strategy::Sliced { .. }
        )
}

/// A histogram ready to launch: compiled, planned, sized by occupancy.
pub struct Prepared {
    pub gpu: Arc<Gpu>,
    pub plan: Plan,
    pub shape: LaunchShape,
    pub params: KernelBinParams,
    pub nbins: usize,
    pub weights: WeightKind,
    pub sample_type: SampleType,
    func: cudarc::driver::CudaFunction,
    /// Global strategy, counts: the u32 counters and the kernel that folds them into u64.
    fold: Option<(CudaSlice<u32>, cudarc::driver::CudaFunction)>,
    /// Partition strategy: the later passes and their buffers.
    partition: Option<Partition>,
    /// `auto`'s probed plans (partition, sliced): the skew probe and the global plan it may switch
    /// to.
    skew: Option<SkewProbe>,
    _edges: Option<CudaSlice<f64>>,
    /// numpy's float32 edges of uniform float32 bins, read by the correction step instead of
    /// recomputing two edges per sample (see `edge_table`).
    _edges32: Option<CudaSlice<f32>>,
}

impl Prepared {
    /// Compiles and plans a histogram of `sample_type` samples (of any number: planned as a large
    /// input, with the persistent grid).
    pub fn new(
        gpu: Arc<Gpu>,
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        choice: StrategyChoice,
    ) -> Result<Prepared> {
        Self::sized(gpu, sample_type, weights, binning, policy, choice, None)
    }

    /// [`Prepared::new`] for a run over `samples` samples (one GPU's shard) when known: the
    /// planner may then pick the global strategy for a tiny shard and launches no more blocks
    /// than the shard can keep busy ([`plan::grid_for_samples`]). Launching it over more samples
    /// stays correct (the kernels are grid-stride loops), only with a smaller grid.
    #[allow(clippy::too_many_arguments)]
    pub fn sized(
        gpu: Arc<Gpu>,
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        choice: StrategyChoice,
        samples: Option<usize>,
    ) -> Result<Prepared> {
        gpu.bind()?;
        let nbins = binning.nbins();
        if nbins >= u32::MAX as usize {
            return Err(Error::BinsTooLarge {
                what: "the CUDA engine",
                nbins,
                limit: u32::MAX as usize - 1,
            });
        }
        let workload = Workload::new(nbins, sample_type, weights != WeightKind::None)
            .with_samples(samples)
            .with_exact_float_bins(matches!(
                binning,
                Binning::UniformF32(u) if u.exact_power_of_two_width().is_some()
            ));
        let mut plan = plan::plan(&workload, &gpu.limits, choice)?;
        // Only where one block fills an SM: the other plans' kernels are built for 512 threads.
        if let (Strategy::Packed { .. }, Some(threads)) = (plan.strategy, packed_block_override()) {
            if plan.block == plan::ONE_BLOCK_THREADS {
                plan.block = threads;
            }
        }
        // Every kernel this histogram may launch, compiled in parallel where not cached.
        let main = kernel_name(&plan, &gpu.limits, binning, weights);
        let probed = plan::skew_probe_threshold(&plan, &workload, choice).is_some();
        let mut kernels = companions(&plan, binning, weights, probed);
        kernels.push(main.clone());
        let names: Vec<&str> = kernels.iter().map(String::as_str).collect();
        gpu.prepare(&HISTOGRAM, &sample_defines(sample_type), &names)?;
        let func = gpu.function(&HISTOGRAM, &sample_defines(sample_type), &main)?;
        let cluster = plan.strategy.cluster_size();
        let unit = plan.strategy.grid_unit();
        let mut shape = LaunchShape {
            grid: plan.grid,
            block: plan.block,
            shared_bytes: plan.shared_bytes,
            cluster,
        };
        launch::prepare_function(&func, &shape, gpu.limits.smem_per_block_optin)?;
        // Persistent grid sized by what the driver says fits, not by the input length.
        match plan.strategy {
            Strategy::Cluster { size } | Strategy::Exchange { size, .. } => {
                let active = launch::max_active_clusters(
                    &func,
                    &gpu.stream,
                    &LaunchShape {
                        grid: size,
                        ..shape
                    },
                )?;
                if active == 0 {
                    return Err(Error::StrategyUnsupported {
                        strategy: plan.strategy.name(),
                        reason: format!("no cluster of {size} blocks with {} bytes of shared memory each fits the device", shape.shared_bytes),
                    });
                }
                shape.grid = plan::grid_for_samples(active * size, size, samples, sample_type);
            }
            _ => {
                let per_sm = func
                    .occupancy_max_active_blocks_per_multiprocessor(
                        shape.block,
                        shape.shared_bytes as usize,
                        None,
                    )
                    .map_err(cuda_err("querying occupancy"))?;
                if per_sm == 0 {
                    return Err(Error::StrategyUnsupported {
                        strategy: plan.strategy.name(),
                        reason: format!("a block of {} threads with {} bytes of shared memory does not fit an SM", shape.block, shape.shared_bytes),
                    });
                }
                // Sliced: a multiple of the slice count (plan::sliced_choice checked it fits).
                let blocks = per_sm * gpu.limits.sm_count / unit * unit;
                if blocks == 0 {
                    return Err(Error::StrategyUnsupported {
                        strategy: plan.strategy.name(),
                        reason: format!(
                            "{unit} slices need {unit} blocks at once, the device holds {}",
                            per_sm * gpu.limits.sm_count
                        ),
                    });
                }
                shape.grid = plan::grid_for_samples(blocks, unit, samples, sample_type);
            }
        }
        plan.grid = shape.grid;
        let edges = match binning {
            Binning::Edges(e) => Some(
                gpu.stream
                    .clone_htod(e)
                    .map_err(cuda_err("copying the bin edges"))?,
            ),
            _ => None,
        };
        let edges_ptr = edges
            .as_ref()
            .map(|e| e.device_ptr(&gpu.stream).0)
            .unwrap_or(0);
        let mut params = kernel_params(
            binning,
            policy,
            aggregate_default(&plan.strategy, weights),
            edges_ptr,
        );
        params.bins_per_block = plan.bins_per_block as u32;
        let edges32 = match edge_table(binning, &params) {
            Some(table) => {
                let t = gpu
                    .stream
                    .clone_htod(table)
                    .map_err(cuda_err("copying the float32 bin edges"))?;
                params.edges32 = t.device_ptr(&gpu.stream).0;
                Some(t)
            }
            None => None,
        };
        // Global-memory counts go through u32 counters folded into the u64 result after each launch.
        let fold = if plan.strategy == Strategy::Global && weights == WeightKind::None {
            let scratch = gpu
                .stream
                .alloc_zeros::<u32>(nbins.max(1))
                .map_err(cuda_err("allocating u32 counters"))?;
            let f = gpu.function(&HISTOGRAM, &sample_defines(sample_type), "hist_fold_u32")?;
            Some((scratch, f))
        } else {
            None
        };
        let partition = if plan.strategy == Strategy::Partition {
            let p = Partition::new(&gpu, sample_type, binning, &func)?;
            shape.grid = p.count_grid;
            plan.grid = p.bins_grid;
            Some(p)
        } else {
            None
        };
        let skew = plan::skew_probe_threshold(&plan, &workload, choice)
            .map(|threshold| {
                SkewProbe::new(
                    &gpu,
                    sample_type,
                    weights,
                    binning,
                    policy,
                    samples,
                    threshold,
                    plan.strategy,
                )
            })
            .transpose()?;
        Ok(Prepared {
            partition,
            skew,
            fold,
            gpu,
            plan,
            shape,
            params,
            nbins,
            weights,
            sample_type,
            func,
            _edges: edges,
            _edges32: edges32,
        })
    }

    /// One-line description for reports.
    pub fn detail(&self) -> String {
        let probe = match &self.skew {
            Some(skew) => skew.describe(),
            None => String::new(),
        };
        format!(
            "{}, {}, {} blocks x {} threads, {} B shared{}{}{probe}",
            self.gpu.name,
            self.plan.strategy,
            self.shape.grid,
            self.shape.block,
            self.shape.shared_bytes,
            if self.params.aggregate != 0 {
                ", warp-aggregated"
            } else {
                ""
            },
            if self.shape.cluster > 1 {
                format!(", clusters of {}", self.shape.cluster)
            } else {
                String::new()
            }
        )
    }

    /// Launches over `n` device-resident samples at `input` (weights at `weights`, 0 if none),
    /// adding into `out` (u64 counts or f64 sums, `nbins` long) and `tallies` (3 u64).
    ///
    /// # Safety
    /// The pointers must be device allocations of this context holding `n` samples of the prepared
    /// type, `n` weights of the prepared kind, `nbins` counters and 3 tallies, valid until the
    /// stream has finished the launches.
    pub unsafe fn launch_device(
        &self,
        input: u64,
        n: usize,
        weights: u64,
        out: u64,
        tallies: u64,
    ) -> Result<()> {
        if let Some(skew) = &self.skew {
            // The probe launches raw, which uses the thread's current context: on the multi-GPU
            // paths one thread launches on several GPUs in turn.
            self.gpu.bind()?;
            // SAFETY: `input` holds `n` samples (the caller's guarantee).
            if n >= plan::SKEW_PROBE_MIN_SAMPLES && unsafe { skew.is_hot(self, input, n)? } {
                // SAFETY: forwarded from the caller; both plans add into the same counters.
                return unsafe {
                    skew.global
                        .launch_as_planned(input, n, weights, out, tallies)
                };
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_as_planned(input, n, weights, out, tallies) }
    }

    /// [`Prepared::launch_device`] without the skew probe: the planned strategy whatever the data.
    /// For launches that must not wait on the host (the chunks of a streaming pipeline).
    ///
    /// # Safety
    /// As [`Prepared::launch_device`].
    pub unsafe fn launch_as_planned(
        &self,
        input: u64,
        n: usize,
        weights: u64,
        out: u64,
        tallies: u64,
    ) -> Result<()> {
        self.gpu.bind()?;
        if let Some(part) = &self.partition {
            // SAFETY: forwarded from the caller.
            return unsafe { part.launch(self, input, n, out, tallies) };
        }
        let elem = self.sample_type.size() as u64;
        let welem = match self.weights {
            WeightKind::F64 => 8,
            _ => 4,
        };
        let mut start = 0usize;
        while start < n {
            let len = (n - start).min(LAUNCH_BATCH);
            let mut in_ptr = input + start as u64 * elem;
            let mut len64 = len as u64;
            let mut w_ptr = if weights == 0 {
                0
            } else {
                weights + start as u64 * welem
            };
            let mut params = self.params;
            let mut out_ptr = match &self.fold {
                Some((scratch, _)) => scratch.device_ptr(&self.gpu.stream).0,
                None => out,
            };
            let mut t_ptr = tallies;
            let mut args: [*mut c_void; 6] = [
                &mut in_ptr as *mut u64 as *mut c_void,
                &mut len64 as *mut u64 as *mut c_void,
                &mut w_ptr as *mut u64 as *mut c_void,
                &mut params as *mut KernelBinParams as *mut c_void,
                &mut out_ptr as *mut u64 as *mut c_void,
                &mut t_ptr as *mut u64 as *mut c_void,
            ];
            // SAFETY: the argument list matches hist_* (in, n, w, BinParams, out, tallies); the caller
            // guarantees the pointers.
            unsafe { launch::launch(&self.func, &self.gpu.stream, &self.shape, &mut args)? };
            if let Some((scratch, fold)) = &self.fold {
                let (scratch_ptr, n_bins) =
                    (scratch.device_ptr(&self.gpu.stream).0, self.nbins as u64);
                let cfg = LaunchConfig {
                    grid_dim: (self.gpu.limits.sm_count * 4, 1, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = self.gpu.stream.launch_builder(fold);
                b.arg(&scratch_ptr).arg(&out).arg(&n_bins);
                // SAFETY: hist_fold_u32(u32* scratch, u64* out, n): both hold nbins counters.
                unsafe { b.launch(cfg) }.map_err(cuda_err("launching the u32 fold"))?;
            }
            start += len;
        }
        Ok(())
    }
}

/// Histogram of host-resident samples on the GPU.
pub fn histogram(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    choice: &StrategyChoice,
) -> Result<CudaResult> {
    let gpu = super::gpu()?;
    // Planned for a large input, as the single-GPU engine was tested and measured on the GPU;
    // the shard-sized plan (`Prepared::sized`) is used by the multi-GPU paths only until it
    // has run on a GPU.
    let prepared = Prepared::new(
        gpu,
        samples.sample_type(),
        WeightKind::of(&weights),
        binning,
        policy,
        *choice,
    )?;
    crate::with_samples!(samples, s => run_host(&prepared, s, weights))
}

fn run_host<T: Sample + DeviceRepr>(
    p: &Prepared,
    samples: &[T],
    weights: Option<Weights<'_>>,
) -> Result<CudaResult> {
    let stream = &p.gpu.stream;
    let tallies = stream
        .alloc_zeros::<u64>(3)
        .map_err(cuda_err("allocating tallies"))?;
    let weighted = weights.is_some();
    let counts_u64 = stream
        .alloc_zeros::<u64>(if weighted { 0 } else { p.nbins.max(1) })
        .map_err(cuda_err("allocating counters"))?;
    let sums_f64 = stream
        .alloc_zeros::<f64>(if weighted { p.nbins.max(1) } else { 0 })
        .map_err(cuda_err("allocating sums"))?;
    let out_ptr = if weighted {
        sums_f64.device_ptr(stream).0
    } else {
        counts_u64.device_ptr(stream).0
    };
    let t_ptr = tallies.device_ptr(stream).0;
    let batch = samples.len().min(HOST_BATCH);
    if batch > 0 {
        // SAFETY: uninitialised device memory; every batch is copied in before a kernel reads it.
        let mut buf = unsafe { stream.alloc::<T>(batch) }
            .map_err(cuda_err("allocating the sample buffer"))?;
        let mut wbuf32 = stream
            .alloc_zeros::<f32>(if matches!(weights, Some(Weights::F32(_))) {
                batch
            } else {
                0
            })
            .map_err(cuda_err("allocating the weight buffer"))?;
        let mut wbuf64 = stream
            .alloc_zeros::<f64>(if matches!(weights, Some(Weights::F64(_))) {
                batch
            } else {
                0
            })
            .map_err(cuda_err("allocating the weight buffer"))?;
        let mut start = 0;
        while start < samples.len() {
            let len = (samples.len() - start).min(batch);
            let mut view = buf.slice_mut(0..len);
            stream
                .memcpy_htod(&samples[start..start + len], &mut view)
                .map_err(cuda_err("copying samples to the device"))?;
            let w_ptr = match weights {
                None => 0,
                Some(Weights::F32(w)) => {
                    let mut v = wbuf32.slice_mut(0..len);
                    stream
                        .memcpy_htod(&w[start..start + len], &mut v)
                        .map_err(cuda_err("copying weights"))?;
                    wbuf32.device_ptr(stream).0
                }
                Some(Weights::F64(w)) => {
                    let mut v = wbuf64.slice_mut(0..len);
                    stream
                        .memcpy_htod(&w[start..start + len], &mut v)
                        .map_err(cuda_err("copying weights"))?;
                    wbuf64.device_ptr(stream).0
                }
            };
            let in_ptr = buf.device_ptr(stream).0;
            // SAFETY: the buffers above hold `len` samples / weights, `nbins` counters and 3 tallies,
            // and live until the synchronising copies below.
            unsafe { p.launch_device(in_ptr, len, w_ptr, out_ptr, t_ptr)? };
            start += len;
        }
        // The next copy into `buf` waits for the kernel on the same stream; the loop needs no sync.
    }
    let (counts, tallies) = read_result(
        stream,
        &tallies,
        &counts_u64,
        weighted.then_some(&sums_f64),
        p.nbins,
        "reading the tallies back (a kernel may have failed)",
    )?;
    stream
        .synchronize()
        .map_err(cuda_err("finishing the histogram"))?;
    Ok(CudaResult {
        counts,
        tallies,
        detail: p.detail(),
    })
}

/// Reads a run's result from the device: the 3 tallies (below, above, NaN), then the first `nbins`
/// sums (`sums`, with weights) or counts. The first read waits for the stream's work, so a failed
/// kernel or copy surfaces there: `tallies_context` says what may have failed.
pub(crate) fn read_result(
    stream: &Arc<cudarc::driver::CudaStream>,
    tallies: &CudaSlice<u64>,
    counts: &CudaSlice<u64>,
    sums: Option<&CudaSlice<f64>>,
    nbins: usize,
    tallies_context: &str,
) -> Result<(Counts, Tallies)> {
    let t = stream
        .clone_dtoh(tallies)
        .map_err(cuda_err(tallies_context))?;
    let counts = match sums {
        Some(sums) => {
            let mut v = stream
                .clone_dtoh(sums)
                .map_err(cuda_err("reading the sums back"))?;
            v.truncate(nbins);
            Counts::Weighted(v)
        }
        None => {
            let mut v = stream
                .clone_dtoh(counts)
                .map_err(cuda_err("reading the counts back"))?;
            v.truncate(nbins);
            Counts::Unweighted(v)
        }
    };
    let tallies = Tallies {
        below: t[0],
        above: t[1],
        nan: t[2],
    };
    Ok((counts, tallies))
}

/// Most uniform float32 bins whose edges the kernels read from a table (64 KiB); beyond it they
/// recompute each edge as numpy's linspace does. The table pays while L1 holds it, and L1 is what
/// the shared-memory counters leave of an SM's 256 KiB: H100, 2^28 float32 samples, auto, uniform
/// GB/s with the table / recomputed (4854e83): 4096 bins 1110 / 833, 16384 925 / 836 (three blocks
/// of 64 KiB of counters), 24576 304 / 849 (two of 96 KiB), 32768 753 / 957, 49152 249 / 955,
/// 65536 411 / 822; hot data loses less (24576: 867 / 849).
const EDGE_TABLE_MAX_BINS: usize = 1 << 14;

/// The float32 edges the kernel's correction step may read instead of recomputing them: only with
/// the multiply estimate (at most 2^24 bins, so bin numbers fit the kernel's 32-bit arithmetic)
/// and for tables small enough to stay cached. They are the edges the CPU engine corrects against.
fn edge_table<'a>(binning: &'a Binning, params: &KernelBinParams) -> Option<&'a [f32]> {
    let max_bins = edge_table_override().unwrap_or(EDGE_TABLE_MAX_BINS);
    match binning {
        Binning::UniformF32(u) if params.multiply == 1 && u.nbins <= max_bins => Some(&u.edges),
        _ => None,
    }
}

/// Kernel tuning only: SMEMKIT_EDGE_TABLE_MAX_BINS=N reads float32 edges from the table up to N bins
/// instead of [`EDGE_TABLE_MAX_BINS`] (0: never), so that one device call can time both ways.
fn edge_table_override() -> Option<usize> {
    std::env::var("SMEMKIT_EDGE_TABLE_MAX_BINS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
}

/// Samples per batch of the partition passes (the index array holds one u16 per sample).
pub const PARTITION_BATCH: usize = 1 << 28;

/// Samples each thread of the scatter pass sorts per tile (`PART_K` in `histogram.cu`).
const PARTITION_TILE_PER_THREAD: usize = 16;

/// Kernel tuning only: SMEMKIT_PACKED_BLOCK_THREADS=512 (or 256) launches the narrow-counter
/// kernels of one-block-per-SM plans with blocks of that many threads instead of 1024, so that one
/// device call can time both block sizes (bench/NOTES.md, run 9). Other values are ignored.
fn packed_block_override() -> Option<u32> {
    std::env::var("SMEMKIT_PACKED_BLOCK_THREADS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|t| [256, 512, 1024].contains(t))
}

/// Bucket counts up to which the scatter ranks samples by warp votes (see `Partition::split_bits`).
/// Off: on the H100 (c8b0c9a, 2^28 int32) the votes cost more than the contended atomics they save
/// on uniform data (131072 bins 405 against 466 GB/s, 1M 348 against 466) and gain less on hot data
/// (397 against 358); SMEMKIT_PARTITION_SPLIT_MAX_BUCKETS=256 brings them back for experiments.
const PARTITION_SPLIT_MAX_BUCKETS: usize = 0;

// The index array holds each bin's offset within its bucket in 16 bits.
const _: () = assert!(plan::PARTITION_BITS <= 16);

/// The partition strategy's later passes, launch sizes and buffers (see `histogram.cu`).
struct Partition {
    scan: cudarc::driver::CudaFunction,
    scatter: cudarc::driver::CudaFunction,
    bins: cudarc::driver::CudaFunction,
    nbuckets: usize,
    /// Decided once per plan (see `Partition::split_bits`), not per launch.
    split_bits: u32,
    count_grid: u32,
    scatter_grid: u32,
    bins_grid: u32,
    buffers: std::sync::Mutex<PartitionBuffers>,
}

/// `auto`'s look at the data before the partition passes (see `hist_probe` in histogram.cu):
/// where one bin holds at least `threshold` of the probed samples, the global plan runs instead.
struct SkewProbe {
    func: cudarc::driver::CudaFunction,
    bins: std::sync::Mutex<CudaSlice<u32>>,
    global: Box<Prepared>,
    threshold: f64,
    /// The plan the probe may replace (for reports).
    planned: Strategy,
    /// The last probe's share of the commonest bin, as f64 bits (for reports); NaN before any.
    last_share: std::sync::atomic::AtomicU64,
}

impl SkewProbe {
    #[allow(clippy::too_many_arguments)]
    fn new(
        gpu: &Arc<Gpu>,
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        samples: Option<usize>,
        threshold: f64,
        planned: Strategy,
    ) -> Result<SkewProbe> {
        let func = gpu.function(
            &HISTOGRAM,
            &sample_defines(sample_type),
            &format!("hist_probe_{}", mode_name(binning)),
        )?;
        let bins = gpu
            .stream
            .alloc_zeros::<u32>(plan::SKEW_PROBE_SAMPLES)
            .map_err(cuda_err("allocating the skew probe"))?;
        let global = Prepared::sized(
            gpu.clone(),
            sample_type,
            weights,
            binning,
            policy,
            StrategyChoice::Global,
            samples,
        )?;
        Ok(SkewProbe {
            func,
            bins: std::sync::Mutex::new(bins),
            global: Box::new(global),
            threshold,
            planned,
            last_share: std::sync::atomic::AtomicU64::new(f64::NAN.to_bits()),
        })
    }

    /// Whether the commonest bin of the probed samples reaches the threshold. Waits for the stream
    /// (the probe's bins come back to the host).
    ///
    /// # Safety
    /// `input` must be a device allocation of this context holding `n` samples of the prepared
    /// type.
    unsafe fn is_hot(&self, p: &Prepared, input: u64, n: usize) -> Result<bool> {
        let stream = &p.gpu.stream;
        let guard = self.bins.lock().expect("skew probe buffer");
        let probes = plan::SKEW_PROBE_SAMPLES as u32;
        let (mut in_ptr, mut n64, mut params, mut count) = (input, n as u64, p.params, probes);
        let mut bins_ptr = guard.device_ptr(stream).0;
        let mut args: [*mut c_void; 5] = [
            &mut in_ptr as *mut u64 as *mut c_void,
            &mut n64 as *mut u64 as *mut c_void,
            &mut params as *mut KernelBinParams as *mut c_void,
            &mut count as *mut u32 as *mut c_void,
            &mut bins_ptr as *mut u64 as *mut c_void,
        ];
        let shape = LaunchShape {
            grid: probes.div_ceil(256),
            block: 256,
            shared_bytes: 0,
            cluster: 1,
        };
        // SAFETY: hist_probe_*(in, n, BinParams, probes, bins): `in` holds n samples (the
        // caller's guarantee), `bins` SKEW_PROBE_SAMPLES u32.
        unsafe { launch::launch(&self.func, stream, &shape, &mut args)? };
        let bins = stream.clone_dtoh(&*guard).map_err(cuda_err(
            "reading the skew probe back (the probe may have failed)",
        ))?;
        let share = plan::commonest_share(&bins);
        self.last_share
            .store(share.to_bits(), std::sync::atomic::Ordering::Relaxed);
        Ok(share >= self.threshold)
    }

    fn describe(&self) -> String {
        let last = f64::from_bits(self.last_share.load(std::sync::atomic::Ordering::Relaxed));
        let seen = if last.is_nan() {
            String::new()
        } else {
            format!(
                "; last probe: commonest bin {:.1}% -> {}",
                last * 100.0,
                if last >= self.threshold {
                    "global".to_string()
                } else {
                    self.planned.name()
                }
            )
        };
        format!(
            ", skew probe (global where one bin holds >= {:.0}% of {} samples{seen})",
            self.threshold * 100.0,
            plan::SKEW_PROBE_SAMPLES
        )
    }
}

struct PartitionBuffers {
    bucket_counts: CudaSlice<u64>,
    cursor: CudaSlice<u64>,
    offsets: CudaSlice<u64>,
    idx: Option<CudaSlice<u16>>,
}

impl Partition {
    fn new(
        gpu: &Arc<Gpu>,
        sample_type: SampleType,
        binning: &Binning,
        count: &cudarc::driver::CudaFunction,
    ) -> Result<Partition> {
        let defines = sample_defines(sample_type);
        let scatter = gpu.function(
            &HISTOGRAM,
            &defines,
            &format!("hist_part_scatter_{}", mode_name(binning)),
        )?;
        let bins = gpu.function(&HISTOGRAM, &defines, "hist_part_bins")?;
        let scan = gpu.function(&HISTOGRAM, &defines, "hist_part_scan")?;
        let nbuckets = binning.nbins().div_ceil(1 << plan::PARTITION_BITS);
        let optin = gpu.limits.smem_per_block_optin;
        let grid = |f: &cudarc::driver::CudaFunction, shared: u32| -> Result<u32> {
            launch::prepare_function(
                f,
                &LaunchShape {
                    grid: 1,
                    block: plan::BLOCK_THREADS,
                    shared_bytes: shared,
                    cluster: 1,
                },
                optin,
            )?;
            let per_sm = f
                .occupancy_max_active_blocks_per_multiprocessor(
                    plan::BLOCK_THREADS,
                    shared as usize,
                    None,
                )
                .map_err(cuda_err("querying occupancy"))?;
            Ok(per_sm.max(1) * gpu.limits.sm_count)
        };
        let count_grid = grid(count, Self::count_shared(nbuckets))?;
        let scatter_grid = grid(&scatter, Self::scatter_shared(nbuckets))?;
        let bins_grid = grid(&bins, 4 << plan::PARTITION_BITS)?;
        let s = &gpu.stream;
        let buffers = PartitionBuffers {
            bucket_counts: s
                .alloc_zeros::<u64>(nbuckets)
                .map_err(cuda_err("allocating bucket counts"))?,
            cursor: s
                .alloc_zeros::<u64>(nbuckets)
                .map_err(cuda_err("allocating bucket cursors"))?,
            offsets: s
                .alloc_zeros::<u64>(nbuckets + 1)
                .map_err(cuda_err("allocating bucket offsets"))?,
            idx: None,
        };
        Ok(Partition {
            split_bits: Self::split_bits(nbuckets),
            scan,
            scatter,
            bins,
            nbuckets,
            count_grid,
            scatter_grid,
            bins_grid,
            buffers: std::sync::Mutex::new(buffers),
        })
    }

    fn count_shared(nbuckets: usize) -> u32 {
        (nbuckets * 4) as u32
    }

    /// Per bucket three u32 (count, local offset, shift), then the tile's bins (see `part_scatter`).
    fn scatter_shared(nbuckets: usize) -> u32 {
        (nbuckets * 12 + plan::BLOCK_THREADS as usize * PARTITION_TILE_PER_THREAD * 4) as u32
    }

    /// Bits of the bucket number that the scatter's warps vote on to rank samples with one shared
    /// atomic per group of lanes (0: one atomic per sample). The votes pay where a warp's lanes share
    /// few buckets; SMEMKIT_PARTITION_SPLIT_MAX_BUCKETS overrides the bucket count up to which they
    /// are used (kernel tuning only).
    fn split_bits(nbuckets: usize) -> u32 {
        let max = std::env::var("SMEMKIT_PARTITION_SPLIT_MAX_BUCKETS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(PARTITION_SPLIT_MAX_BUCKETS);
        if nbuckets > max || nbuckets < 2 {
            0
        } else {
            usize::BITS - (nbuckets - 1).leading_zeros()
        }
    }

    /// # Safety
    /// As [`Prepared::launch_device`].
    unsafe fn launch(
        &self,
        p: &Prepared,
        input: u64,
        n: usize,
        out: u64,
        tallies: u64,
    ) -> Result<()> {
        let stream = &p.gpu.stream;
        let mut guard = self.buffers.lock().expect("partition buffers");
        let bufs = &mut *guard;
        let batch = n.min(PARTITION_BATCH);
        if !bufs.idx.as_ref().is_some_and(|b| b.len() >= batch) {
            // SAFETY: every index the third pass reads was written by the second.
            bufs.idx = Some(
                unsafe { stream.alloc::<u16>(batch.max(1)) }
                    .map_err(cuda_err("allocating the partition index array"))?,
            );
        }
        let (bits, nb) = (plan::PARTITION_BITS, self.nbuckets as u32);
        let split_bits = self.split_bits;
        let elem = p.sample_type.size() as u64;
        let cfg = |grid: u32, shared: u32| LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (plan::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: shared,
        };
        // Diagnostic for kernel work: SMEMKIT_PROFILE_PARTITION=1 prints each pass's time.
        let profile = PassProfile::from_env(&p.gpu)?;
        let mark = |i: usize| -> Result<()> {
            match &profile {
                Some(prof) => prof.record(i, stream),
                None => Ok(()),
            }
        };
        let mut start = 0usize;
        while start < n {
            let len = (n - start).min(PARTITION_BATCH);
            mark(0)?;
            let (in_ptr, len64) = (input + start as u64 * elem, len as u64);
            stream
                .memset_zeros(&mut bufs.bucket_counts)
                .map_err(cuda_err("zeroing bucket counts"))?;
            let counts_ptr = bufs.bucket_counts.device_ptr(stream).0;
            let mut b = stream.launch_builder(&p.func);
            b.arg(&in_ptr)
                .arg(&len64)
                .arg(&p.params)
                .arg(&bits)
                .arg(&nb)
                .arg(&counts_ptr)
                .arg(&tallies);
            // SAFETY: hist_part_count_*(in, n, BinParams, bits, nbuckets, bucket_counts, tallies).
            unsafe { b.launch(cfg(self.count_grid, Self::count_shared(self.nbuckets))) }
                .map_err(cuda_err("launching the bucket count"))?;
            mark(1)?;
            let cursor_ptr = bufs.cursor.device_ptr(stream).0;
            let offsets_ptr = bufs.offsets.device_ptr(stream).0;
            let mut b = stream.launch_builder(&self.scan);
            b.arg(&counts_ptr)
                .arg(&nb)
                .arg(&offsets_ptr)
                .arg(&cursor_ptr);
            // SAFETY: hist_part_scan(counts, nbuckets, offsets, cursor): nbuckets counts in,
            // nbuckets + 1 offsets and nbuckets cursors out; one block of 1024 threads.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1024, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(cuda_err("launching the bucket offsets scan"))?;
            mark(2)?;
            let idx_ptr = bufs
                .idx
                .as_ref()
                .expect("allocated above")
                .device_ptr(stream)
                .0;
            let mut b = stream.launch_builder(&self.scatter);
            b.arg(&in_ptr)
                .arg(&len64)
                .arg(&p.params)
                .arg(&bits)
                .arg(&nb)
                .arg(&split_bits)
                .arg(&cursor_ptr)
                .arg(&idx_ptr);
            // SAFETY: hist_part_scatter_*(in, n, BinParams, bits, nbuckets, split_bits, cursor, idx); idx holds
            // at least `len` entries and the cursors start at the offsets of the counted samples.
            unsafe { b.launch(cfg(self.scatter_grid, Self::scatter_shared(self.nbuckets))) }
                .map_err(cuda_err("launching the scatter"))?;
            mark(3)?;
            let nbins = p.nbins as u64;
            let mut b = stream.launch_builder(&self.bins);
            b.arg(&idx_ptr)
                .arg(&offsets_ptr)
                .arg(&nb)
                .arg(&bits)
                .arg(&nbins)
                .arg(&out);
            // SAFETY: hist_part_bins(idx, offsets, nbuckets, bits, nbins, out); out holds nbins u64.
            unsafe { b.launch(cfg(self.bins_grid, 4 << bits)) }
                .map_err(cuda_err("launching the bucket histograms"))?;
            mark(4)?;
            if let Some(prof) = &profile {
                prof.report(len)?;
            }
            start += len;
        }
        Ok(())
    }
}

/// Events between the partition passes, for `SMEMKIT_PROFILE_PARTITION` (kernel tuning only).
struct PassProfile {
    events: Vec<cudarc::driver::CudaEvent>,
}

impl PassProfile {
    const PASSES: [&'static str; 4] = ["count", "scan", "scatter", "bins"];

    fn from_env(gpu: &Gpu) -> Result<Option<PassProfile>> {
        if std::env::var_os("SMEMKIT_PROFILE_PARTITION").is_none() {
            return Ok(None);
        }
        let events = (0..=Self::PASSES.len())
            .map(|_| {
                gpu.ctx
                    .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(cuda_err("creating a profiling event"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(PassProfile { events }))
    }

    fn record(&self, i: usize, stream: &cudarc::driver::CudaStream) -> Result<()> {
        self.events[i]
            .record(stream)
            .map_err(cuda_err("recording a profiling event"))
    }

    fn report(&self, samples: usize) -> Result<()> {
        let last = self.events.last().expect("one event per pass boundary");
        last.synchronize()
            .map_err(cuda_err("waiting for the partition passes"))?;
        let mut line = format!("partition passes, {samples} samples:");
        for (i, name) in Self::PASSES.iter().enumerate() {
            let ms = self.events[i]
                .elapsed_ms(&self.events[i + 1])
                .map_err(cuda_err("reading a profiling event"))?;
            line += &format!(" {name} {ms:.3} ms");
        }
        eprintln!("{line}");
        Ok(())
    }
}
