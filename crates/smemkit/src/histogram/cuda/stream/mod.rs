//! Streaming histograms: data that lives in host memory or in a file, however large (larger than
//! the device included), histogrammed while it crosses the bus. The input goes through `depth`
//! chunk slots; each slot has a page-locked staging buffer and a device buffer of its own (cudarc's
//! per-buffer event tracking would serialise views of one buffer across streams). Per chunk:
//!
//! 1. the host waits until the slot's previous copy has left its staging buffer (event `copied`),
//!    then several CPU threads (rayon) fill the staging buffer from pageable memory or a file;
//!    page-locked inputs skip this and are copied from where they lie;
//! 2. the copy stream waits until the kernel that read the slot's device buffer is done (event
//!    `consumed`) and enqueues the asynchronous host-to-device copy, then records `copied`;
//! 3. the compute stream (the engine's own) waits for `copied`, runs the chunk through the
//!    [`DeviceEngine`] every GPU entry point shares (the first chunk clears the output or
//!    overwrites it, the others add into it; no skew probe per chunk, see [`Probing::AsPlanned`]),
//!    and records `consumed`.
//!
//! So the filling of chunk c+1, the copy of chunk c and the kernel of chunk c-1 run at once. The
//! sizes come from [`StreamOptions`]; [`chunk_plan`] (pure, tested without a GPU) fits them into a
//! device-memory budget, which tests set small to simulate an input larger than the device.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr};
use rayon::prelude::*;

use super::device_engine::{DeviceEngine, Probing};
use super::device_histogram::{DeviceOutput, RawBuffers};
use super::prepared::{Counting, EngineOutput, WeightKind, LAUNCH_BATCH};
pub use crate::histogram::stream_options::{StreamOptions, DEFAULT_CHUNK_BYTES, DEFAULT_DEPTH};

mod mode;
pub use mode::*;
mod file;
pub use file::*;
#[cfg(test)]
mod tests;
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::host_memory::{copy_htod_async, sample_bytes, LockedSamples, PinnedBuffer};
use crate::histogram::bins::{BinSpec, Binning, OutOfRange};
use crate::histogram::job::Job;
use crate::sample::{Sample, SampleType, Samples, Weights};

/// `StreamMode::Auto` streams inputs of at least this many bytes (and any input larger than the
/// device's free memory): below it the plain copy path costs no more.
pub const AUTO_STREAM_BYTES: usize = 256 << 20;
/// CPU threads copy or read pieces of this size into a staging buffer.
const FILL_PIECE: usize = 2 << 20;
/// [`FileInput::binning`] reads the file this many bytes at a time when the bins need the data's range.
pub const EXTREMES_PIECE: usize = 16 << 20;

/// Where streamed samples come from.
pub enum StreamInput<'a> {
    /// Pageable memory (a `Vec`, a memory-mapped file): CPU threads copy it into pinned staging
    /// buffers, which the copy engine then reads at full speed.
    Host(Samples<'a>),
    /// Page-locked memory ([`PinnedBuffer`], [`crate::gpu::host_memory::Registered`]): copied straight
    /// from where it lies, no staging.
    Locked(LockedSamples<'a>),
    /// A file read into the staging buffers by several threads.
    File(&'a FileInput),
}

impl StreamInput<'_> {
    /// How many samples.
    pub fn len(&self) -> usize {
        match self {
            StreamInput::Host(s) => s.len(),
            StreamInput::Locked(s) => s.len(),
            StreamInput::File(f) => f.len(),
        }
    }
    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The samples' type.
    pub fn sample_type(&self) -> SampleType {
        match self {
            StreamInput::Host(s) => s.sample_type(),
            StreamInput::Locked(s) => s.sample_type(),
            StreamInput::File(f) => f.sample_type(),
        }
    }
}

/// One array streamed chunk by chunk (the samples, or the weights).
enum Lane<'a> {
    Pageable(&'a [u8]),
    Locked(&'a [u8]),
    File(&'a FileInput),
}

/// A lane's buffers in one slot.
struct SlotLane {
    /// Allocated on first use: page-locked inputs need none.
    staging: Option<PinnedBuffer<u8>>,
    dev: CudaSlice<u8>,
}

struct Slot {
    lanes: Vec<SlotLane>,
    copied: CudaEvent,
    consumed: CudaEvent,
}

/// A streaming pipeline's streams, events and buffers, sized once and reused across runs (so that
/// benchmarks time the streaming, not the allocation of pinned memory).
pub struct Streamer {
    gpu: Arc<Gpu>,
    copy: Arc<CudaStream>,
    slots: Vec<Slot>,
    chunk_samples: usize,
    sample_type: SampleType,
    weights: WeightKind,
    pool: Option<rayon::ThreadPool>,
}

fn weight_size(w: WeightKind) -> usize {
    w.size()
}

impl Streamer {
    /// A pipeline for up to `n` samples per run (longer inputs work too, in more chunks): chunk size
    /// from `opts`, fitted into the device budget.
    pub fn new(
        gpu: Arc<Gpu>,
        sample_type: SampleType,
        weights: WeightKind,
        n: usize,
        opts: &StreamOptions,
    ) -> Result<Streamer> {
        gpu.bind()?;
        let free = if opts.device_budget.is_some() {
            0
        } else {
            gpu.memory()?.0
        };
        let elem = sample_type.size();
        let plan = chunk_plan(n, elem, elem + weight_size(weights), opts, free)?;
        let copy = gpu
            .ctx
            .new_stream()
            .map_err(cuda_err("creating the copy stream"))?;
        let sizes: Vec<usize> = std::iter::once(elem)
            .chain((weights != WeightKind::None).then_some(weight_size(weights)))
            .collect();
        let mut slots = Vec::with_capacity(plan.depth);
        for _ in 0..plan.depth {
            let mut lanes = Vec::with_capacity(sizes.len());
            for &size in &sizes {
                // SAFETY: uninitialised device memory; every chunk is copied in before a kernel
                // reads it, and a kernel reads only the bytes of its chunk.
                let dev = unsafe { gpu.stream.alloc::<u8>(plan.chunk_samples * size) }.map_err(
                    cuda_err("allocating a device chunk buffer (is the device budget too large?)"),
                )?;
                lanes.push(SlotLane { staging: None, dev });
            }
            slots.push(Slot {
                lanes,
                copied: gpu
                    .ctx
                    .new_event(None)
                    .map_err(cuda_err("creating an event"))?,
                consumed: gpu
                    .ctx
                    .new_event(None)
                    .map_err(cuda_err("creating an event"))?,
            });
        }
        // The buffers were allocated on the compute stream; the copy stream uses them next.
        gpu.stream
            .synchronize()
            .map_err(cuda_err("allocating the chunk buffers"))?;
        let pool = match opts.fill_threads {
            0 => None,
            t => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .map_err(|e| Error::InvalidArgument(format!("fill threads: {e}")))?,
            ),
        };
        Ok(Streamer {
            gpu,
            copy,
            slots,
            chunk_samples: plan.chunk_samples,
            sample_type,
            weights,
            pool,
        })
    }

    /// Samples per chunk.
    pub fn chunk_samples(&self) -> usize {
        self.chunk_samples
    }
    /// Slots in flight.
    pub fn depth(&self) -> usize {
        self.slots.len()
    }

    /// Streams `input` (and `weights`, from pageable memory) through `engine` (of this pipeline's
    /// GPU) into fresh counters. `progress` is told the bytes of samples handed to the device so
    /// far.
    pub fn run(
        &mut self,
        engine: &DeviceEngine,
        input: &StreamInput<'_>,
        weights: Option<Weights<'_>>,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<EngineOutput> {
        self.gpu.bind()?;
        let gpu = self.gpu.clone();
        let stream = &gpu.stream;
        // Tallies and bins in one allocation, cleared (or overwritten) by the first chunk's run.
        // The caller checks the out-of-range policy.
        let out = DeviceOutput::uncleared(engine, OutOfRange::Ignore)?;
        let (out_ptr, t_ptr) = (out.bins_ptr(stream), out.tallies_ptr(stream));
        // SAFETY: `out_ptr` holds nbins counters (or sums) of the engine's kind and `t_ptr` 3
        // tallies, allocated above and alive until the read below has synchronised.
        unsafe { self.run_into(engine, input, weights, (out_ptr, t_ptr), false, progress)? };
        let (counts, tallies) = out.read_unchecked(stream)?;
        self.copy
            .synchronize()
            .map_err(cuda_err("finishing the copies"))?;
        Ok(EngineOutput {
            counts,
            tallies,
            detail: format!(
                "{}, streamed in chunks of {} samples through {} slots (each chunk as planned, no skew probe)",
                engine.detail(),
                self.chunk_samples,
                self.slots.len()
            ),
        })
    }

    /// Streams `input` (and `weights`, from pageable memory) through `engine`, one
    /// [`DeviceEngine::enqueue_with`] per chunk, into the device counters `(out_ptr, t_ptr)`
    /// (`nbins` u64 counts, or f64 sums with weights, and 3 u64 tallies): the counters stay on the
    /// device (several GPUs reduce them with NCCL). Without `accumulate` the first chunk's run
    /// clears them (an empty input clears them too); with it every chunk adds into them. Both
    /// streams are drained before it returns, errors included.
    ///
    /// # Safety
    /// `out_ptr` and `t_ptr` must be device allocations of this pipeline's context holding
    /// `nbins` counters of the engine's kind and 3 u64 tallies.
    pub unsafe fn run_into(
        &mut self,
        engine: &DeviceEngine,
        input: &StreamInput<'_>,
        weights: Option<Weights<'_>>,
        (out_ptr, t_ptr): (u64, u64),
        accumulate: bool,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<()> {
        if engine.sample_type() != self.sample_type || input.sample_type() != self.sample_type {
            return Err(Error::InvalidArgument(format!(
                "the pipeline streams {} samples; the kernel takes {} and the input holds {}",
                self.sample_type,
                engine.sample_type(),
                input.sample_type()
            )));
        }
        if engine.gpu().ctx.cu_ctx() != self.gpu.ctx.cu_ctx() {
            return Err(Error::InvalidArgument(format!(
                "the pipeline runs on GPU {}, the histogram was built for GPU {}",
                self.gpu.ordinal,
                engine.gpu().ordinal
            )));
        }
        let wkind = match weights {
            None => WeightKind::None,
            Some(Weights::F32(_)) => WeightKind::F32,
            Some(Weights::F64(_)) => WeightKind::F64,
            Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
        };
        if wkind != self.weights || engine.weight_kind() != self.weights {
            return Err(Error::InvalidArgument(
                "the weights do not match the ones the pipeline and kernel were built for".into(),
            ));
        }
        let n = input.len();
        if let Some(w) = &weights {
            if w.len() != n {
                return Err(Error::WeightsLength {
                    samples: n,
                    weights: w.len(),
                });
            }
        }
        let mut lanes = vec![match input {
            StreamInput::Host(s) => Lane::Pageable(sample_bytes(*s)),
            StreamInput::Locked(s) => Lane::Locked(sample_bytes(s.samples())),
            StreamInput::File(f) => Lane::File(f),
        }];
        match weights {
            None => {}
            Some(Weights::F32(w)) => lanes.push(Lane::Pageable(sample_bytes(Samples::F32(w)))),
            Some(Weights::F64(w)) => lanes.push(Lane::Pageable(sample_bytes(Samples::F64(w)))),
            Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
        }
        self.gpu.bind()?;
        let gpu = self.gpu.clone();
        let stream = &gpu.stream;
        let weighted = self.weights != WeightKind::None;
        // Whatever happens below, no copy may still read the caller's memory (or the slots) after
        // this function returns.
        let _drain = Drain {
            copy: &self.copy,
            compute: stream,
        };
        let sizes: Vec<usize> = std::iter::once(self.sample_type.size())
            .chain(weighted.then_some(weight_size(self.weights)))
            .collect();
        let chunk = self.chunk_samples;
        let depth = self.slots.len();
        // What every chunk's run passes besides its samples and weights.
        let (sample_type, wkind) = (self.sample_type, self.weights);
        let buffers = |input: u64, len: usize, weights: u64| RawBuffers {
            input,
            n: len,
            sample_type,
            weights,
            bins: out_ptr,
            tallies: t_ptr,
        };
        let wlen = |len: usize| weighted.then_some((len, wkind));
        if n == 0 && !accumulate {
            // SAFETY: no samples are read; the counters are the caller's (its guarantee), cleared
            // on the compute stream, which `_drain` waits for.
            unsafe {
                engine.enqueue_with(
                    stream,
                    &buffers(0, 0, 0),
                    wlen(0),
                    false,
                    Probing::AsPlanned,
                )?
            };
        }
        let (mut start, mut c) = (0usize, 0usize);
        while start < n {
            let len = (n - start).min(chunk);
            let slot = &mut self.slots[c % depth];
            // 1. The slot's staging buffers are free once its previous copy has finished.
            slot.copied.synchronize().map_err(cuda_err(
                "waiting for a chunk copy (a copy may have failed)",
            ))?;
            let mut srcs = Vec::with_capacity(lanes.len());
            for ((lane, sl), &size) in lanes.iter().zip(&mut slot.lanes).zip(&sizes) {
                let (lo, bytes) = (start * size, len * size);
                let src: *const u8 = match lane {
                    Lane::Locked(b) => b[lo..lo + bytes].as_ptr(),
                    Lane::Pageable(b) => {
                        let staging = staging(&gpu, &mut sl.staging, chunk * size)?;
                        let dst = &mut staging.as_mut_slice()[..bytes];
                        let src = &b[lo..lo + bytes];
                        install(&self.pool, || par_copy(dst, src));
                        staging.as_slice().as_ptr()
                    }
                    Lane::File(f) => {
                        let staging = staging(&gpu, &mut sl.staging, chunk * size)?;
                        let dst = &mut staging.as_mut_slice()[..bytes];
                        install(&self.pool, || f.read_into(lo as u64, dst))?;
                        staging.as_slice().as_ptr()
                    }
                };
                srcs.push((src, bytes));
            }
            // 2. The device buffers are free once the kernel that read them has finished.
            self.copy
                .wait(&slot.consumed)
                .map_err(cuda_err("ordering a copy after a kernel"))?;
            let mut dev_ptrs = [0u64; 2];
            for (i, ((src, bytes), sl)) in srcs.iter().zip(&slot.lanes).enumerate() {
                let dst = sl.dev.device_ptr(&self.copy).0;
                dev_ptrs[i] = dst;
                // SAFETY: `dst` holds `chunk * size >= bytes` bytes; `src` is page-locked staging
                // owned by this pipeline, or the caller's page-locked input borrowed for this call;
                // neither changes until `copied` has completed (step 1 of a later chunk, or `_drain`).
                unsafe { copy_htod_async(dst, *src, *bytes, self.copy.cu_stream())? };
            }
            slot.copied
                .record(&self.copy)
                .map_err(cuda_err("recording a copy"))?;
            // 3. The kernel counts the chunk once it is on the device.
            stream
                .wait(&slot.copied)
                .map_err(cuda_err("ordering a kernel after a copy"))?;
            // SAFETY: the slot's device buffers hold this chunk's `len` samples (and weights,
            // `chunk_samples` long: the engine's size check passes), `out_ptr` nbins counters,
            // `t_ptr` 3 tallies; all live until `_drain` has waited. The first chunk of a fresh
            // run clears (or overwrites) the counters, the others add. As planned, without the
            // skew probe: the same launches per chunk as a plan that has none.
            unsafe {
                engine.enqueue_with(
                    stream,
                    &buffers(dev_ptrs[0], len, dev_ptrs[1]),
                    wlen(len),
                    accumulate || c > 0,
                    Probing::AsPlanned,
                )?
            };
            slot.consumed
                .record(stream)
                .map_err(cuda_err("recording a kernel"))?;
            start += len;
            c += 1;
            if let Some(p) = progress {
                p((start * self.sample_type.size()) as u64);
            }
        }
        Ok(())
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        // Buffers are freed below; nothing may still use them.
        let _ = self.copy.synchronize();
        let _ = self.gpu.stream.synchronize();
    }
}

/// Waits for both streams when dropped (errors included: they were reported already).
struct Drain<'a> {
    copy: &'a CudaStream,
    compute: &'a CudaStream,
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        let _ = self.copy.synchronize();
        let _ = self.compute.synchronize();
    }
}

fn staging<'s>(
    gpu: &Gpu,
    slot: &'s mut Option<PinnedBuffer<u8>>,
    bytes: usize,
) -> Result<&'s mut PinnedBuffer<u8>> {
    if slot.is_none() {
        *slot = Some(PinnedBuffer::new(gpu, bytes)?);
    }
    Ok(slot.as_mut().expect("allocated above"))
}

fn install<R: Send>(pool: &Option<rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// `dst.copy_from_slice(src)` by several threads.
fn par_copy(dst: &mut [u8], src: &[u8]) {
    dst.par_chunks_mut(FILL_PIECE)
        .zip(src.par_chunks(FILL_PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Streams `input` to the GPU and histograms it (compiling and planning first).
pub fn histogram(input: &StreamInput<'_>, job: &Job<'_>) -> Result<EngineOutput> {
    let Job {
        weights,
        binning,
        policy,
        ..
    } = *job;
    let (choice, opts, progress) = (&job.strategy, &job.stream, job.progress);
    let gpu = crate::gpu::gpu()?;
    let wkind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
        Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
    };
    // Planned for a large input (`None`), as the single-GPU engine was tested and measured on the
    // GPU; the shard-sized plan is used by the multi-GPU paths. Unbounded: its scratch (the
    // partition index array) is made by the first chunk's run, for one chunk, and the plan's
    // buffers are on the device before the pipeline measures the free memory.
    let engine = DeviceEngine::unbounded(
        &gpu,
        Counting {
            sample_type: input.sample_type(),
            weights: wkind,
            binning,
            policy,
        },
        *choice,
        None,
    )?;
    let mut streamer = Streamer::new(gpu, input.sample_type(), wkind, input.len(), opts)?;
    streamer.run(&engine, input, weights, progress)
}

/// Histogram of samples that kernels read where they lie in host memory ([`crate::gpu::host_memory::
/// MappedBuffer::zero_copy`], [`crate::gpu::host_memory::Registered::zero_copy`]): no copy, no device
/// buffer, every sample crosses the bus once. One run of `engine` (the skew probe included where
/// its plan has one), which must take at least the input's length.
pub fn run_zero_copy(
    engine: &DeviceEngine,
    input: &crate::gpu::host_memory::ZeroCopySamples<'_>,
) -> Result<EngineOutput> {
    let (ptr, samples) = (input.device_ptr(), input.samples());
    if samples.sample_type() != engine.sample_type() || engine.weighted() {
        return Err(Error::InvalidArgument(format!(
            "zero-copy input of {} samples for a kernel of {} samples{}",
            samples.sample_type(),
            engine.sample_type(),
            if engine.weighted() {
                " with weights (zero-copy weights are not implemented)"
            } else {
                ""
            }
        )));
    }
    // The kernels load 16 bytes at a time (the engine checks it too; this names the memory).
    if ptr % 16 != 0 {
        return Err(Error::InvalidArgument(format!(
            "zero-copy input at device address {ptr:#x} is not 16-byte aligned, as the kernels' vector loads need"
        )));
    }
    let gpu = engine.gpu().clone();
    gpu.bind()?;
    let stream = &gpu.stream;
    let out = DeviceOutput::uncleared(engine, OutOfRange::Ignore)?;
    let buffers = RawBuffers {
        input: ptr,
        n: samples.len(),
        sample_type: samples.sample_type(),
        weights: 0,
        bins: out.bins_ptr(stream),
        tallies: out.tallies_ptr(stream),
    };
    // SAFETY: `ptr` is the device address of `samples.len()` page-locked, mapped samples of
    // the engine's type, borrowed for this call, and the stream is synchronised below (or on
    // an error here) before the borrow ends; the output is this call's, cleared by the run.
    unsafe { engine.enqueue(stream, &buffers, None, false) }.inspect_err(|_| {
        let _ = stream.synchronize();
    })?;
    let (counts, tallies) = out.read_unchecked(stream)?;
    Ok(EngineOutput {
        counts,
        tallies,
        detail: format!("{}, zero-copy from mapped host memory", engine.detail()),
    })
}
