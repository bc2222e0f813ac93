//! GPU histograms: the strategy the planner picked (or the caller forced) is compiled for the
//! sample type, launched over the input in batches, and its u64 counts (or f64 sums) and tallies are
//! copied back. `Prepared` separates the one-time work (compile, plan, occupancy) from the launches,
//! which every entry point enqueues through the device engine (`super::device_engine`).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

use super::half_table;
use super::params::{kernel_params, mode_name, KernelBinParams};
use crate::error::{Error, Result};
use crate::gpu::compile::HISTOGRAM;
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::job::Job;
use crate::histogram::plan::{self, DeviceLimits, Plan, Strategy, StrategyChoice, Workload};
use crate::sample::{Sample, SampleType, Samples, Weights};
use crate::search_table::SearchTable;

pub use crate::histogram::result::EngineOutput;

mod naming;
pub use naming::*;
mod host;
pub use host::*;
mod partition;
pub use partition::*;
mod skew_probe;
use skew_probe::*;
mod pass_profile;
use pass_profile::*;

/// Samples per launch: keeps per-block u32 counters far from overflow and indices in range.
pub const LAUNCH_BATCH: usize = 1 << 30;
/// Samples copied to the device at a time when the input lives on the host.
pub const HOST_BATCH: usize = 1 << 28;

/// What a prepared kernel counts: the sample and weight types, the bins and the out-of-range policy.
#[derive(Debug, Clone, Copy)]
pub struct Counting<'a> {
    pub sample_type: SampleType,
    pub weights: WeightKind,
    pub binning: &'a Binning,
    pub policy: OutOfRange,
}

/// The type of the weights as the kernels read them, if any. `I64`: int64 weights (every integer
/// and bool type is widened to them on the device first, [`super::int_weights`]) summed as exact
/// 64-bit integers, modulo 2^64 (two's-complement wrapping, as numpy's int64 sums wrap), into u64
/// counters read back as [`Counts::Integer`] of int64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightKind {
    None,
    F32,
    F64,
    I64,
}

impl WeightKind {
    /// The kind the kernels read `w` as (integer weights: int64, after the device's widening).
    pub(crate) fn of(w: &Option<Weights<'_>>) -> WeightKind {
        match w {
            None => WeightKind::None,
            Some(Weights::F32(_)) => WeightKind::F32,
            Some(Weights::F64(_)) => WeightKind::F64,
            Some(Weights::Int(_)) => WeightKind::I64,
        }
    }
    fn suffix(self) -> &'static str {
        match self {
            WeightKind::None => "none",
            WeightKind::F32 => "f32",
            WeightKind::F64 => "f64",
            WeightKind::I64 => "i64",
        }
    }
    /// Bytes per weight as the kernels read them (0 without weights).
    pub fn size(self) -> usize {
        match self {
            WeightKind::None => 0,
            WeightKind::F32 => 4,
            WeightKind::F64 | WeightKind::I64 => 8,
        }
    }
}

/// A histogram ready to launch: compiled, planned, sized by occupancy.
pub(crate) struct Prepared {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) plan: Plan,
    pub(crate) shape: LaunchShape,
    pub(crate) params: KernelBinParams,
    pub(crate) nbins: usize,
    pub(crate) weights: WeightKind,
    pub(crate) sample_type: SampleType,
    func: cudarc::driver::CudaFunction,
    /// Spill with the width left to the kernels: the 4-bit kernel, launched after `func` (the
    /// 8-bit one) with the same arguments; the kernel not chosen returns before counting.
    second: Option<cudarc::driver::CudaFunction>,
    /// Global strategy, counts: the u32 counters and the kernel that folds them into u64.
    fold: Option<Fold>,
    /// Sliced counts: the 16-bit lanes their blocks flush into and the kernel that folds them.
    lanes16: Option<Lanes16>,
    /// Partition strategy: the later passes and their buffers.
    partition: Option<Partition>,
    /// `auto`'s probed plans (partition, sliced): the skew probe and the global plan it may switch
    /// to.
    skew: Option<SkewProbe>,
    _edges: Option<CudaSlice<f64>>,
    /// numpy's float32 edges of uniform float32 bins, read by the correction step instead of
    /// recomputing two edges per sample (see `edge_table`).
    _edges32: Option<CudaSlice<f32>>,
    /// Explicit edges: the table that narrows each sample's search (`crate::search_table`).
    _edge_search: Option<CudaSlice<u32>>,
    /// 16-bit float samples: the slot of each code (`half_table`), u16 for the shared-memory
    /// table kernel, u32 for the others.
    _lut16: Option<CudaSlice<u16>>,
    _lut32: Option<CudaSlice<u32>>,
}

/// Float samples in bins on a power-of-two grid, which the `uniform32x` and `uniform64x` kernels
/// bin without numpy's correction.
pub(crate) fn on_grid(binning: &Binning, sample_type: SampleType) -> bool {
    match binning {
        Binning::UniformF32(u) => u.exact_grid().is_some(),
        Binning::UniformF64(u) => sample_type == SampleType::F64 && u.exact_grid().is_some(),
        _ => false,
    }
}

impl Prepared {
    /// Compiles and plans a histogram of what `what` counts, for runs over `samples` samples
    /// (one GPU's shard) where known, else (`None`) as a large input with the persistent grid.
    /// Knowing the length, the planner may pick the global strategy for a tiny shard and
    /// launches no more blocks than the shard can keep busy ([`plan::grid_for_samples`]). Launching it over more samples
    /// stays correct (the kernels are grid-stride loops), only with a smaller grid.
    pub fn sized(
        gpu: Arc<Gpu>,
        what: Counting<'_>,
        choice: StrategyChoice,
        samples: Option<usize>,
    ) -> Result<Prepared> {
        let Counting {
            sample_type,
            weights,
            binning,
            policy,
        } = what;
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
            // A table lookup (16-bit floats) costs about what integer bins cost.
            .with_exact_float_bins(
                half_table::is_half(sample_type) || on_grid(binning, sample_type),
            )
            .with_computed_integer_bins(!matches!(binning, Binning::Integer { .. }));
        let mut plan = plan::plan(&workload, &gpu.limits, choice)?;
        // 16-bit float counts under `auto`: the table in shared memory beside the counters where
        // both fit one block (hist_lut_shared_none), the generic kernels reading it through L1
        // otherwise and for every forced strategy.
        let table16 = (half_table::is_half(sample_type)
            && weights == WeightKind::None
            && choice == StrategyChoice::Auto)
            .then(|| half_table::table16_shared_bytes(nbins, &gpu.limits))
            .flatten();
        if let Some(shared_bytes) = table16 {
            plan = Plan {
                strategy: Strategy::Shared,
                grid: gpu.limits.sm_count,
                block: half_table::TABLE16_BLOCK,
                shared_bytes,
                bins_per_block: nbins,
                reason: format!(
                    "{nbins} bins of {sample_type}: the slot table of every code and the counters in shared memory"
                ),
            };
        }
        // Only where one block fills an SM: the other plans' kernels are built for 512 threads.
        if let (Strategy::Packed { .. }, Some(threads)) = (plan.strategy, packed_block_override()) {
            if plan.block == plan::ONE_BLOCK_THREADS {
                plan.block = threads;
            }
        }
        // Every kernel this histogram may launch, compiled in parallel where not cached.
        let main = match table16 {
            Some(_) => "hist_lut_shared_none".to_string(),
            None => kernel_name(&plan, &gpu.limits, &what),
        };
        let probed = plan::skew_probe_threshold(&plan, &workload, choice).is_some();
        let crowded = probed
            .then(|| plan::crowded_alternative(&plan, &workload, &gpu.limits))
            .flatten();
        let mut kernels = companions(&plan, &what, probed);
        kernels.extend(crowded.iter().map(|p| kernel_name(p, &gpu.limits, &what)));
        kernels.push(main.clone());
        let names: Vec<&str> = kernels.iter().map(String::as_str).collect();
        gpu.prepare(&HISTOGRAM, &sample_defines(sample_type), &names)?;
        let func = gpu.function(&HISTOGRAM, &sample_defines(sample_type), &main)?;
        let cluster = plan.strategy.cluster_size();
        let unit = plan.strategy.grid_unit();
        let stage_ring = stage_ring_bytes(
            &plan,
            mode_name(binning, sample_type),
            policy,
            weights,
            &gpu.limits,
        );
        let mut shape = LaunchShape {
            grid: plan.grid,
            block: plan.block,
            shared_bytes: plan.shared_bytes + stage_ring.unwrap_or(0),
            cluster,
        };
        launch::prepare_function(&func, &shape, gpu.limits.smem_per_block_optin)?;
        let second = match spill_second_kernel(&plan, &what) {
            Some(name) => {
                let f = gpu.function(&HISTOGRAM, &sample_defines(sample_type), &name)?;
                launch::prepare_function(&f, &shape, gpu.limits.smem_per_block_optin)?;
                Some(f)
            }
            None => None,
        };
        // Persistent grid sized by what the driver says fits, not by the input length.
        match plan.strategy {
            Strategy::Cluster { size }
            | Strategy::Exchange { size, .. }
            | Strategy::ClusterPacked { size, .. } => {
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
        params.stage_ring = stage_ring.is_some() as u32;
        if let Strategy::Spill { bits } = plan.strategy {
            params.spill_bits = bits;
        }
        let edge_search = match binning {
            Binning::Edges(e) => match SearchTable::build(e, |edge, x| edge <= x) {
                Some(table) => {
                    let t = gpu
                        .stream
                        .clone_htod(&table.starts)
                        .map_err(cuda_err("copying the edges' search table"))?;
                    params.table = table.kernel(t.device_ptr(&gpu.stream).0);
                    Some(t)
                }
                None => None,
            },
            _ => None,
        };
        let (lut16, lut32) = if !half_table::is_half(sample_type) {
            (None, None)
        } else if table16.is_some() {
            let table = half_table::slot_table16(binning, sample_type)
                .expect("table16_shared_bytes checked that the counters fit a u16");
            let t = gpu
                .stream
                .clone_htod(&table)
                .map_err(cuda_err("copying the 16-bit float slot table"))?;
            params.lut = t.device_ptr(&gpu.stream).0;
            (Some(t), None)
        } else {
            let table = half_table::slot_table32(binning, sample_type);
            let t = gpu
                .stream
                .clone_htod(&table)
                .map_err(cuda_err("copying the 16-bit float slot table"))?;
            params.lut = t.device_ptr(&gpu.stream).0;
            (None, Some(t))
        };
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
            let tallies = gpu
                .stream
                .alloc_zeros::<u64>(3)
                .map_err(cuda_err("allocating the fold's tallies"))?;
            let func = gpu.function(&HISTOGRAM, &sample_defines(sample_type), "hist_fold_u32")?;
            Some(Fold {
                counters: scratch,
                tallies,
                func,
            })
        } else {
            None
        };
        // The launch grid, not the plan's, sets how many blocks add into one lane.
        let launched = Plan {
            grid: shape.grid,
            ..plan.clone()
        };
        let lanes16 = if lanes16_fit(&launched, weights) {
            let lanes = gpu
                .stream
                .alloc_zeros::<u64>(nbins.div_ceil(4).max(1))
                .map_err(cuda_err("allocating the sliced flush's lanes"))?;
            params.lanes16 = lanes.device_ptr(&gpu.stream).0;
            let func = gpu.function(
                &HISTOGRAM,
                &sample_defines(sample_type),
                "hist_fold_lanes16",
            )?;
            Some(Lanes16 { lanes, func })
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
                    what,
                    samples,
                    threshold,
                    &plan,
                    crowded.as_ref().and_then(|p| match p.strategy {
                        Strategy::Sliced { bits, slices } => Some(StrategyChoice::Sliced {
                            bits: Some(bits),
                            slices: Some(slices),
                        }),
                        _ => None,
                    }),
                    plan::spill_share_for_sliced(&plan, &workload),
                )
            })
            .transpose()?;
        Ok(Prepared {
            lanes16,
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
            second,
            _edges: edges,
            _edges32: edges32,
            _edge_search: edge_search,
            _lut16: lut16,
            _lut32: lut32,
        })
    }

    /// One-line description for reports.
    pub fn detail(&self) -> String {
        let probe = match &self.skew {
            Some(skew) => skew.describe(&self.gpu),
            None => String::new(),
        };
        format!(
            "{}, {}{}, {} blocks x {} threads, {} B shared{}{}{probe}",
            self.gpu.name,
            self.plan.strategy,
            if self._lut16.is_some() {
                " (16-bit float slot table in shared memory)"
            } else if self._lut32.is_some() {
                " (16-bit float slot table through L1)"
            } else {
                ""
            },
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

    /// Whether a run of `n` samples writes every one of the `nbins` counters and the 3 tallies
    /// itself, so that [`Prepared::enqueue`] may overwrite a result nobody cleared: global-memory
    /// counts, whose fold (the last launch) can write its u32 counters and its tallies rather
    /// than add them, with no skew verdict choosing between two plans that add into the same
    /// counters (`probe`: whether the run may probe, see [`Prepared::enqueue`]).
    pub(crate) fn writes_every_bin(&self, n: usize, probe: bool) -> bool {
        n > 0 && self.fold.is_some() && !(probe && self.probes(n))
    }

    /// Whether a probing run of `n` samples launches the skew verdict (and both gated plans).
    fn probes(&self, n: usize) -> bool {
        self.skew.is_some() && n >= plan::SKEW_PROBE_MIN_SAMPLES
    }

    /// Enqueues the launches of one run over `run.n` device-resident samples at `run.input`
    /// (weights at `run.weights`, 0 if none), adding into `run.out` (u64 counts or f64 sums,
    /// `nbins` long) and `run.tallies` (3 u64), on `run.stream` (of this GPU's context): every
    /// launch of the run, `auto`'s skew verdict included, is enqueued there and nothing waits
    /// for the host, so a run can be captured in a CUDA graph. Where the plan has a skew probe and the input is long
    /// enough, the planned strategy, global and any crowded-slice or spill alternative are enqueued, each
    /// gated on the verdict (`gated_off` in the kernels): those not chosen return at once.
    ///
    /// Without `probe` the planned strategy runs whatever the data, with no verdict (the chunks of
    /// a stream: the bus, not the strategy, bounds them, and a verdict per chunk would cost a
    /// launch and a gated plan per chunk).
    ///
    /// With `overwrite` (only where [`Prepared::writes_every_bin`]) the run writes the counters
    /// and tallies instead of adding into them, so that they need no clearing first.
    ///
    /// # Safety
    /// `run`'s addresses must be device allocations of this context holding `n` samples of the
    /// prepared type, `n` weights of the prepared kind, `nbins` counters and 3 tallies, valid
    /// until `run.stream` has finished the launches.
    pub(crate) unsafe fn enqueue(&self, run: &Run<'_>, overwrite: bool, probe: bool) -> Result<()> {
        let Run {
            stream, input, n, ..
        } = *run;
        if overwrite && !self.writes_every_bin(n, probe) {
            return Err(Error::InvalidArgument(
                "internal: a run that does not write every bin was asked to overwrite them".into(),
            ));
        }
        // Raw launches use the thread's current context: on the multi-GPU paths one thread
        // launches on several GPUs in turn.
        self.gpu.bind()?;
        match &self.skew {
            Some(skew) if probe && self.probes(n) => {
                // SAFETY: `input` holds `n` samples (the caller's guarantee).
                let verdict = unsafe { skew.launch_verdict(self, stream, input, n)? };
                // SAFETY: forwarded from the caller; both plans add into the same counters, and
                // exactly one of them runs.
                unsafe {
                    skew.global.launch_planned(run, Some((verdict, 1)), false)?;
                    if let Some(crowded) = &skew.crowded {
                        crowded.launch_planned(run, Some((verdict, 2)), false)?;
                    }
                    if let Some((spill, _)) = &skew.spill {
                        spill.launch_planned(run, Some((verdict, 3)), false)?;
                    }
                    self.launch_planned(run, Some((verdict, 0)), false)
                }
            }
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.launch_planned(run, None, overwrite) },
        }
    }

    /// Makes every buffer a run over up to `n` samples needs (the partition index array), so that
    /// [`Prepared::enqueue`] allocates nothing for such runs.
    pub(crate) fn reserve(&self, n: usize) -> Result<()> {
        match &self.partition {
            Some(part) => part.reserve(&self.gpu.stream, n),
            None => Ok(()),
        }
    }

    /// The planned strategy's launches of `run`; with `gate` = (verdict address, wanted verdict),
    /// gated on the skew verdict; with `overwrite` (ungated global counts only), the first fold
    /// writes the counters and tallies instead of adding.
    ///
    /// # Safety
    /// As [`Prepared::enqueue`].
    unsafe fn launch_planned(
        &self,
        run: &Run<'_>,
        gate: Option<(u64, u32)>,
        overwrite: bool,
    ) -> Result<()> {
        let Run {
            stream,
            input,
            n,
            weights,
            out,
            tallies,
        } = *run;
        let mut params = self.params;
        let (gate_ptr, gate_want) = gate.unwrap_or((0, 0));
        params.gate = gate_ptr;
        params.gate_want = gate_want;
        if let Some(part) = &self.partition {
            // SAFETY: forwarded from the caller.
            return unsafe { part.launch(self, run, params) };
        }
        let elem = self.sample_type.size() as u64;
        let welem = self.weights.size() as u64;
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
            let mut params = params;
            // Global counts: the kernel counts into the fold's u32 counters and tallies, which
            // the fold then moves into the result.
            let (mut out_ptr, mut t_ptr) = match &self.fold {
                Some(f) => (
                    f.counters.device_ptr(stream).0,
                    f.tallies.device_ptr(stream).0,
                ),
                None => (out, tallies),
            };
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
            unsafe { launch::launch(&self.func, stream, &self.shape, &mut args)? };
            if let Some(second) = &self.second {
                // SAFETY: the same argument list and kernel signature as the launch above.
                unsafe { launch::launch(second, stream, &self.shape, &mut args)? };
            }
            if let Some(lanes) = &self.lanes16 {
                // SAFETY: as for the launch above; `out` holds nbins counters.
                unsafe { lanes.fold(&self.gpu, stream, out, self.nbins, gate_ptr, gate_want)? };
            }
            if let Some(fold) = &self.fold {
                let (scratch_ptr, n_bins) = (fold.counters.device_ptr(stream).0, self.nbins as u64);
                let cfg = LaunchConfig {
                    grid_dim: (self.gpu.limits.sm_count * 4, 1, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: 0,
                };
                // Only the first batch may write: later ones add to what it wrote.
                let write = u32::from(overwrite && gate.is_none() && start == 0);
                let mut b = stream.launch_builder(&fold.func);
                b.arg(&scratch_ptr)
                    .arg(&out)
                    .arg(&n_bins)
                    .arg(&gate_ptr)
                    .arg(&gate_want)
                    .arg(&write)
                    .arg(&t_ptr)
                    .arg(&tallies);
                // SAFETY: hist_fold_u32(u32* scratch, u64* out, n, gate, gate_want, overwrite,
                // u64* scratch_tallies, u64* tallies): scratch and out hold nbins counters, both
                // tallies 3 words; `gate` is 0 or the verdict.
                unsafe { b.launch(cfg) }.map_err(cuda_err("launching the u32 fold"))?;
            }
            start += len;
        }
        Ok(())
    }
}

/// The global strategy's counts: u32 counters and 3 tallies the kernel adds into, and the kernel
/// that moves both into the result (and clears them) after each launch.
struct Fold {
    counters: CudaSlice<u32>,
    tallies: CudaSlice<u64>,
    func: cudarc::driver::CudaFunction,
}

/// Sliced counts: the 16-bit lanes (four bins to a u64 word) the blocks flush into, and the
/// kernel that adds them to the result and clears them after each launch.
struct Lanes16 {
    lanes: CudaSlice<u64>,
    func: cudarc::driver::CudaFunction,
}

impl Lanes16 {
    /// Enqueues the fold of the lanes into `out` (`nbins` u64 counters), gated as the launch it
    /// follows.
    ///
    /// # Safety
    /// `out` must be a device allocation of this context holding `nbins` u64 counters, valid until
    /// `stream` has run the fold.
    unsafe fn fold(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        out: u64,
        nbins: usize,
        gate: u64,
        gate_want: u32,
    ) -> Result<()> {
        let lanes = self.lanes.device_ptr(stream).0;
        let n = nbins as u64;
        let cfg = LaunchConfig {
            grid_dim: (gpu.limits.sm_count * 4, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = stream.launch_builder(&self.func);
        b.arg(&lanes).arg(&out).arg(&n).arg(&gate).arg(&gate_want);
        // SAFETY: hist_fold_lanes16(u64* lanes, u64* out, n, gate, gate_want): the lanes hold
        // ceil(n / 4) words, `out` n counters (the caller's guarantee); `gate` is 0 or the verdict.
        unsafe { b.launch(cfg) }.map_err(cuda_err("launching the lanes' fold"))?;
        Ok(())
    }
}

/// One run's stream and device addresses, as [`Prepared::enqueue`] received them: `n` samples at
/// `input`, their weights at `weights` (0 without), the bins at `out` and 3 tallies at `tallies`.
#[derive(Clone, Copy)]
pub(crate) struct Run<'a> {
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) input: u64,
    pub(crate) n: usize,
    pub(crate) weights: u64,
    pub(crate) out: u64,
    pub(crate) tallies: u64,
}

/// Most uniform float32 bins whose edges the kernels read from a table (64 KiB); beyond it they
/// recompute each edge as numpy's linspace does. The table pays while L1 holds it, and L1 is what
/// the shared-memory counters leave of an SM's 256 KiB (bench/NOTES.md, "Measured thresholds").
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
    crate::config::edge_table_max_bins()
}
