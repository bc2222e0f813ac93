//! The device-resident joint histogram: samples, weights and output already on the GPU (another
//! framework's memory, or a benchmark's), one call enqueues the joint histogram on a stream and
//! returns. [`DeviceJoint::new`] resolves the axes (edges, the per-axis tables) once and keeps them
//! on the device; [`DeviceJoint::run_raw`] takes raw device pointers, each axis's base and stride,
//! and a raw stream, in the style of `DeviceHistogram::run_raw`, for the Python binding.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaFunction, CudaSlice, CudaStream, DevicePtr};

use crate::error::{Error, Result};
use crate::gpu::compile::{Header, KernelSource};
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::BinSpec;
use crate::histogram::cuda::prepared::{sample_defines, WeightKind};
use crate::histogram::plan::{counter_capacity, packed_bytes, Plan, Strategy, StrategyChoice};
use crate::sample::SampleType;

use super::super::axis::Axis;
use super::params::{
    kernel_axis, AxisTables, DeviceAxis, JointLayout, KernelJoint, HISTDD_MAX_DIMS,
};
use super::plan::{joint_plan, kernel_name, window_of, JointWindow};
use super::variant::JointVariant;

macro_rules! header {
    ($file:literal) => {
        Header {
            name: $file,
            text: include_str!(concat!("../../../kernels/", $file)),
        }
    };
}

/// The joint histogram kernels (and the 1-D strategies' headers whose sinks they count through).
pub const HISTDD: KernelSource = KernelSource {
    name: "histdd.cu",
    text: include_str!("../../../kernels/histdd.cu"),
    headers: &[
        header!("one_kernel.cuh"),
        header!("search_table.cuh"),
        header!("hist_bins.cuh"),
        header!("hist_walk.cuh"),
        header!("hist_shared.cuh"),
        header!("hist_packed.cuh"),
        header!("hist_cluster.cuh"),
        header!("hist_global.cuh"),
    ],
    one_kernel: true,
};

/// Words of the tallies a run writes: samples outside some axis, an unused word, samples NaN on
/// some axis.
pub const JOINT_TALLY_WORDS: usize = 3;

/// What a device-resident joint histogram counts.
#[derive(Debug, Clone, PartialEq)]
pub struct JointSpec {
    pub sample_type: SampleType,
    /// One per axis: a bin count with a range, or edges (the data is not read for a range).
    pub bins: Vec<BinSpec>,
    pub weights: WeightKind,
    pub strategy: StrategyChoice,
}

/// One run's device memory: `axes[j]` gives axis j's coordinate of sample 0 (a device address)
/// and the elements from one sample's coordinate to the next's (axis j's coordinate of sample i
/// lies at `ptr + i * stride * size`); `weights` (0 without) `n` contiguous weights of the spec's
/// kind; `out` the joint bins in C order, `nbins` u64 counts or f64 sums; `tallies`
/// [`JOINT_TALLY_WORDS`] u64 (samples outside some axis, 0, samples NaN on some axis). With
/// `accumulate` the result is added to what `out` and `tallies` hold.
#[derive(Debug, Clone, Copy)]
pub struct JointRun<'a> {
    pub axes: &'a [DeviceAxis],
    pub n: usize,
    pub weights: u64,
    pub out: u64,
    pub tallies: u64,
    pub accumulate: bool,
}

/// What one run launched (for reports and benchmark rows).
#[derive(Debug, Clone)]
pub struct JointLaunch {
    pub plan: Plan,
    /// Where the plan's global counters became a window plan.
    pub window: Option<JointWindow>,
    pub variant: JointVariant,
    pub layout: JointLayout,
    pub kernel: String,
    pub grid: u32,
}

impl JointLaunch {
    /// The counting tier's name: the plan's strategy, or `window8` / `window16`.
    pub fn tier(&self) -> String {
        match self.window {
            Some(w) => format!("window{}", w.bits),
            None => self.plan.strategy.name(),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} ({} layout, variant {}), grid {} x {}, {} bytes of shared memory per block: {}",
            self.tier(),
            self.layout.name(),
            self.variant.name(),
            self.grid,
            self.plan.block,
            self.plan.shared_bytes,
            self.plan.reason
        )
    }
}

/// A joint histogram whose axes live on the device, ready to run on device samples.
pub struct DeviceJoint {
    gpu: Arc<Gpu>,
    spec: JointSpec,
    axes: Vec<Axis>,
    nbins: usize,
    params: KernelJoint,
    variant: JointVariant,
    tables: AxisTables,
    /// Device addresses of the float64 edges, the float32 edges and the 8-bit tables (0: none).
    table_ptrs: (u64, u64, u64),
    functions: Mutex<HashMap<String, CudaFunction>>,
    _edges: CudaSlice<f64>,
    _edges32: Option<CudaSlice<f32>>,
    _lut: Option<CudaSlice<u32>>,
}

impl DeviceJoint {
    /// Resolves the axes (numpy.histogramdd's edges) and copies their tables to the device.
    pub fn new(gpu: &Arc<Gpu>, spec: &JointSpec) -> Result<DeviceJoint> {
        let dims = spec.bins.len();
        if dims == 0 || dims > HISTDD_MAX_DIMS {
            return Err(Error::InvalidArgument(format!(
                "the GPU engine of joint histograms takes 1 to {HISTDD_MAX_DIMS} axes (got {dims})"
            )));
        }
        if matches!(spec.sample_type, SampleType::F16 | SampleType::BF16) {
            return Err(Error::NotImplemented(format!(
                "joint histograms of {} samples (convert them to float32)",
                spec.sample_type
            )));
        }
        let axes = spec
            .bins
            .iter()
            .enumerate()
            .map(|(j, b)| Axis::resolve_without_data(b, j))
            .collect::<Result<Vec<Axis>>>()?;
        let nbins = super::super::joint_bins(&axes)?;
        Self::with_axes(gpu, spec.clone(), axes, nbins)
    }

    pub(crate) fn with_axes(
        gpu: &Arc<Gpu>,
        spec: JointSpec,
        axes: Vec<Axis>,
        nbins: usize,
    ) -> Result<DeviceJoint> {
        gpu.bind()?;
        let tables = AxisTables::new(&axes, spec.sample_type);
        let s = &gpu.stream;
        let edges = s
            .clone_htod(&tables.edges)
            .map_err(cuda_err("copying the edges"))?;
        let edges32 = (!tables.edges32.is_empty())
            .then(|| s.clone_htod(&tables.edges32))
            .transpose()
            .map_err(cuda_err("copying the float32 edges"))?;
        let lut = (!tables.lut.is_empty())
            .then(|| s.clone_htod(&tables.lut))
            .transpose()
            .map_err(cuda_err("copying the bin tables"))?;
        let e = edges.device_ptr(s).0;
        let e32 = edges32.as_ref().map_or(0, |v| v.device_ptr(s).0);
        let l = lut.as_ref().map_or(0, |v| v.device_ptr(s).0);
        let variant = JointVariant::from_env()?;
        let params = KernelJoint {
            nbins: nbins as u64,
            dims: axes.len() as i32,
            ..KernelJoint::default()
        };
        s.synchronize()
            .map_err(cuda_err("copying the axis tables"))?;
        let mut joint = DeviceJoint {
            gpu: gpu.clone(),
            spec,
            axes,
            nbins,
            params,
            variant,
            tables,
            table_ptrs: (e, e32, l),
            functions: Mutex::new(HashMap::new()),
            _edges: edges,
            _edges32: edges32,
            _lut: lut,
        };
        joint.set_variant(variant);
        Ok(joint)
    }

    /// Runs from now on take `variant` (the default: `SMEMKIT_HISTDD_VARIANT`, else
    /// [`JointVariant::DEFAULT`]).
    pub fn set_variant(&mut self, variant: JointVariant) {
        self.variant = variant;
        let computed = variant.edges == super::variant::EdgeCheck::Computed;
        for (j, a) in self.axes.iter().enumerate() {
            self.params.axis[j] = kernel_axis(a, j, &self.tables, self.table_ptrs, computed);
        }
        self.params.aggregate = variant.aggregate as i32;
    }

    /// The variant runs take.
    pub fn variant(&self) -> JointVariant {
        self.variant
    }

    /// Each axis's edge mode code (`EDGES_*` in the kernels), for tests and reports.
    pub fn edge_modes(&self) -> Vec<i32> {
        (0..self.axes.len())
            .map(|j| self.params.axis[j].edge_mode)
            .collect()
    }

    /// Joint bins (the product of every axis's bins).
    pub fn nbins(&self) -> usize {
        self.nbins
    }
    /// Bins per axis.
    pub fn shape(&self) -> Vec<usize> {
        self.axes.iter().map(Axis::nbins).collect()
    }
    /// Each axis's edges, as numpy.histogramdd returns them.
    pub fn edges(&self) -> Vec<Vec<f64>> {
        self.axes.iter().map(|a| a.edges.clone()).collect()
    }
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The plan a run over `n` samples takes.
    pub fn plan(&self, n: usize) -> Result<Plan> {
        Ok(self.tier(n)?.0)
    }

    /// The plan of a run over `n` samples and, where the planner chose global counters for counts
    /// (`auto` only) and the variant has a window, the window plan that replaces them: packed
    /// counters for as many whole planes of the first axis as one block holds, centred, in a
    /// block of 1024 threads per SM.
    pub fn tier(&self, n: usize) -> Result<(Plan, Option<JointWindow>)> {
        let weighted = self.spec.weights != WeightKind::None;
        let plan = joint_plan(
            self.nbins,
            self.spec.sample_type,
            weighted,
            n,
            &self.gpu.limits,
            self.spec.strategy,
        )?;
        let bits = match self.variant.window_bits(weighted) {
            Some(b)
                if plan.strategy == Strategy::Global
                    && self.spec.strategy == StrategyChoice::Auto =>
            {
                b
            }
            _ => return Ok((plan, None)),
        };
        let limits = &self.gpu.limits;
        let Some(window) = window_of(&self.shape(), limits, bits) else {
            return Ok((plan, None));
        };
        let JointWindow { lo, len, .. } = window;
        Ok((
            Plan {
                strategy: Strategy::Global,
                grid: limits.sm_count,
                block: 1024,
                shared_bytes: packed_bytes(len, bits) as u32,
                bins_per_block: len,
                reason: format!(
                    "window{bits}: joint bins {lo}..{} in {bits}-bit shared counters, the rest in \
                     global memory (in place of {})",
                    lo + len,
                    plan.reason
                ),
            },
            Some(window),
        ))
    }

    /// Enqueues `run` on a stream that another framework owns (see [`JointRun`] for what each
    /// pointer holds). Without `run.accumulate`, the output and tallies are cleared first.
    ///
    /// # Safety
    /// Every pointer of `run` must be device memory of this GPU's primary context holding what
    /// [`JointRun`] says, staying valid and unwritten by others until `stream` has run the
    /// histogram; `stream` a live stream of that context (or the legacy or per-thread default
    /// stream).
    pub unsafe fn run_raw(&self, run: &JointRun<'_>, stream: sys::CUstream) -> Result<JointLaunch> {
        let gpu = &self.gpu;
        gpu.bind()?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `stream` is a live stream (the caller's guarantee); `ctx` a valid out pointer.
        unsafe {
            launch::check(
                sys::cuStreamGetCtx(stream, &mut ctx),
                "asking which context the stream belongs to",
            )?
        };
        if ctx != gpu.ctx.cu_ctx() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to another CUDA context than device {}'s primary context",
                gpu.ordinal
            )));
        }
        // SAFETY: the stream is the caller's and of this context; the wrapper does not own it.
        let stream = unsafe { gpu.ctx.wrap_borrowed_stream(stream) };
        // SAFETY: forwarded from the caller.
        unsafe { self.enqueue(run, &stream) }
    }

    /// The checks (on the host) and the launch of one run.
    ///
    /// # Safety
    /// As [`DeviceJoint::run_raw`], with `stream` of this context.
    pub unsafe fn enqueue(
        &self,
        run: &JointRun<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<JointLaunch> {
        let JointRun {
            axes,
            n,
            weights,
            out,
            tallies,
            accumulate,
        } = *run;
        let dims = self.axes.len();
        if axes.len() != dims {
            return Err(Error::InvalidArgument(format!(
                "the joint histogram has {dims} axes, the run passes {}",
                axes.len()
            )));
        }
        let weighted = self.spec.weights != WeightKind::None;
        if weighted != (weights != 0) {
            return Err(Error::InvalidArgument(if weighted {
                "this joint histogram was built weighted: pass the weights".into()
            } else {
                "this joint histogram was built without weights, the run passes some".into()
            }));
        }
        if out == 0 || tallies == 0 {
            return Err(Error::InvalidArgument(
                "the joint histogram's output and tallies need device memory".into(),
            ));
        }
        let ty = self.spec.sample_type;
        let layout = JointLayout::detect(axes, ty);
        let (plan, window) = self.tier(n.max(1))?;
        let wname = match self.spec.weights {
            WeightKind::None => "none",
            WeightKind::F32 => "f32",
            WeightKind::F64 => "f64",
            // numpy's histogramdd sums integer weights as float64: so do the callers.
            WeightKind::I64 => {
                return Err(Error::NotImplemented(
                    "int64 weights in a joint histogram (numpy's histogramdd sums integer weights                      as float64): pass them as float64"
                        .into(),
                ))
            }
        };
        let kernel = match window {
            Some(w) => format!("histdd_window{}_{}_{wname}", w.bits, layout.name()),
            None => kernel_name(plan.strategy, &layout.name(), wname),
        };
        let variant = self.variant;
        if !accumulate {
            // SAFETY: `out` holds nbins 8-byte words and `tallies` 3 (the caller's guarantee).
            unsafe {
                cudarc::driver::result::memset_d8_async(out, 0, self.nbins * 8, stream.cu_stream())
                    .and_then(|_| {
                        cudarc::driver::result::memset_d8_async(
                            tallies,
                            0,
                            JOINT_TALLY_WORDS * 8,
                            stream.cu_stream(),
                        )
                    })
                    .map_err(cuda_err("clearing the joint histogram output"))?;
            }
        }
        if n == 0 {
            return Ok(JointLaunch {
                plan,
                window,
                variant,
                layout,
                kernel,
                grid: 0,
            });
        }
        let f = self.function(&kernel)?;
        let cluster = plan.strategy.cluster_size();
        let (shared_bytes, lut_shared) = self.tables_in_shared(&plan);
        let mut shape = LaunchShape {
            grid: plan.grid,
            block: plan.block,
            shared_bytes,
            cluster,
        };
        launch::prepare_function(&f, &shape, self.gpu.limits.smem_per_block_optin)?;
        // The plan sizes the grid by shared memory; the kernel's registers may allow fewer blocks.
        let resident = if cluster > 1 {
            launch::max_active_clusters(&f, stream, &shape)? * cluster
        } else {
            f.occupancy_max_active_blocks_per_multiprocessor(
                plan.block,
                shared_bytes as usize,
                None,
            )
            .map_err(cuda_err("querying occupancy"))?
                * self.gpu.limits.sm_count
        };
        if resident == 0 {
            return Err(Error::StrategyUnsupported {
                strategy: plan.strategy.name(),
                reason: format!(
                    "{kernel} cannot run one {} of {} threads with {} bytes of shared memory on this device",
                    if cluster > 1 { "cluster" } else { "block" },
                    plan.block,
                    shared_bytes
                ),
            });
        }
        shape.grid = shape.grid.min(resident).max(cluster);
        let mut p = self.params;
        p.n = n as u64;
        p.bins_per_block = plan.bins_per_block as u32;
        p.lut_shared = lut_shared as i32;
        if let Some(w) = window {
            p.window_lo = w.lo as u64;
            p.window_len = w.len as u64;
        }
        for (j, a) in axes.iter().enumerate() {
            p.axis[j].base = a.ptr;
            p.axis[j].stride = a.stride;
        }
        let (mut w, mut o, mut t) = (weights, out, tallies);
        let mut args: [*mut c_void; 4] = [
            (&mut p as *mut KernelJoint).cast(),
            (&mut w as *mut u64).cast(),
            (&mut o as *mut u64).cast(),
            (&mut t as *mut u64).cast(),
        ];
        // SAFETY: histdd_<strategy>_<layout>_<weights>(Joint p, const W* w, Out* out, u64* t):
        // four arguments of those types (pointers as u64), living across the call; every device
        // address is the caller's guarantee (or this histogram's tables); the shape's shared memory
        // is what the plan sized the counters for.
        unsafe { launch::launch(&f, stream, &shape, &mut args)? };
        Ok(JointLaunch {
            plan,
            window,
            variant,
            layout,
            kernel,
            grid: shape.grid,
        })
    }

    /// The dynamic shared memory of a plan's launch, and whether the 8-bit samples' tables go
    /// there (after the counters, 16-byte aligned: `tables_at` in the kernels) rather than stay in
    /// global memory: where they fit beside the counters.
    fn tables_in_shared(&self, plan: &Plan) -> (u32, bool) {
        let lut_bytes = if self.spec.sample_type.size() == 1 {
            self.axes.len() * 256 * 4
        } else {
            0
        };
        let at = (plan.shared_bytes as usize).next_multiple_of(16);
        if lut_bytes > 0 && at + lut_bytes <= counter_capacity(&self.gpu.limits) {
            ((at + lut_bytes) as u32, true)
        } else {
            (plan.shared_bytes, false)
        }
    }

    fn function(&self, kernel: &str) -> Result<CudaFunction> {
        let key = format!("{kernel} {}", self.variant.name());
        let mut cache = self.functions.lock().expect("histdd function cache");
        if let Some(f) = cache.get(&key) {
            return Ok(f.clone());
        }
        let mut defines = sample_defines(self.spec.sample_type);
        defines.extend(self.variant.defines());
        let f = self.gpu.function(&HISTDD, &defines, kernel)?;
        cache.insert(key, f.clone());
        Ok(f)
    }
}

/// numpy.histogramdd's edges of one axis of `nbins` bins with no range given, from the extremes of
/// that axis's data (`None`: no samples), for callers whose data stays on the device (they find
/// the extremes there): `BinSpec::Edges` of what the CPU engine would build from the data. `equal`
/// is whether min == max in the data's own type (for 64-bit integers beyond 2^53 it can differ
/// from `min == max` in f64). NaN or infinite extremes are refused as numpy refuses them.
pub fn data_range_bins(
    sample_type: SampleType,
    nbins: usize,
    extremes: Option<(f64, f64, bool)>,
) -> Result<BinSpec> {
    if nbins == 0 {
        return Err(Error::ZeroBins);
    }
    Ok(BinSpec::Edges(
        Axis::from_extremes(nbins, sample_type, extremes)?.edges,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::histogramdd::{histogramdd, JointOptions, JointSamples};
    use crate::sample::Samples;

    /// The edges from the extremes are the CPU engine's edges from the data, for float32 (built in
    /// float32), float64 and integers, one-valued axes and no data.
    #[test]
    fn data_range_bins_are_the_edges_of_the_data() {
        let uniform = BinSpec::Uniform {
            nbins: 7,
            range: None,
        };
        let cpu = |s: JointSamples<'_>| {
            histogramdd(
                &s,
                None,
                &JointOptions::new(vec![uniform.clone()]).backend(Backend::Cpu),
            )
            .unwrap()
            .edges
        };
        let f = [0.1f32, -2.7, 3.3];
        let want =
            cpu(JointSamples::separate(vec![Samples::F32(&f), Samples::F32(&[1.0; 3])]).unwrap());
        let got = [
            data_range_bins(
                SampleType::F32,
                7,
                Some((-2.7f32 as f64, 3.3f32 as f64, false)),
            )
            .unwrap(),
            data_range_bins(SampleType::F32, 7, Some((1.0, 1.0, true))).unwrap(),
        ];
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, &BinSpec::Edges(w.clone()));
        }
        let d = [0.1f64, -2.7, 3.3];
        let i = [5i32, 5, 5];
        let want = cpu(JointSamples::separate(vec![Samples::F64(&d), Samples::F64(&d)]).unwrap());
        assert_eq!(
            data_range_bins(SampleType::F64, 7, Some((-2.7, 3.3, false))).unwrap(),
            BinSpec::Edges(want[0].clone())
        );
        let want = cpu(JointSamples::separate(vec![Samples::I32(&i)]).unwrap());
        assert_eq!(
            data_range_bins(SampleType::I32, 7, Some((5.0, 5.0, true))).unwrap(),
            BinSpec::Edges(want[0].clone())
        );
        let want = cpu(JointSamples::separate(vec![Samples::F32(&[])]).unwrap());
        assert_eq!(
            data_range_bins(SampleType::F32, 7, None).unwrap(),
            BinSpec::Edges(want[0].clone())
        );
        assert!(data_range_bins(SampleType::F64, 7, Some((f64::NAN, 1.0, false))).is_err());
        assert!(data_range_bins(SampleType::F64, 0, None).is_err());
    }
}
