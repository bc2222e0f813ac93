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
//! 3. the compute stream (the engine's own) waits for `copied`, runs the histogram kernel, which
//!    accumulates into one device histogram, and records `consumed`.
//!
//! So the filling of chunk c+1, the copy of chunk c and the kernel of chunk c-1 run at once. The
//! sizes come from [`StreamOptions`]; [`chunk_plan`] (pure, tested without a GPU) fits them into a
//! device-memory budget, which tests set small to simulate an input larger than the device.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr};
use rayon::prelude::*;

use super::prepared::{read_result, CudaResult, Prepared, WeightKind, LAUNCH_BATCH};
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::host_memory::{copy_htod_async, sample_bytes, LockedSamples, PinnedBuffer};
use crate::histogram::bins::{BinSpec, Binning, OutOfRange};
use crate::histogram::plan::StrategyChoice;
use crate::sample::{Sample, SampleType, Samples, Weights};

/// Bytes of samples per chunk unless told otherwise, from the H100 sweep of `bench --op
/// hist-stream --chunk-mib 8,16,32,64,128,256 --depth 2,3,4` (2^30 int32, 674e207): pinned memory
/// streams at 98-100 % of the pinned copy at every size; the pageable `Vec` and the cached file,
/// which CPU threads copy into the staging buffers, need large chunks (8 MiB: 33-37 %, 16 MiB:
/// 49-60 %) and from 128 MiB on hold 79-81 % and 69-72 % at every depth (64 MiB: 62-83 %,
/// unsteady). Three slots of 128 MiB take 384 MiB of page-locked and of device memory; the device
/// budget shrinks the chunks where that does not fit.
pub const DEFAULT_CHUNK_BYTES: usize = 128 << 20;
/// Slots in flight unless told otherwise: one being filled, one being copied, one being counted
/// (2 and 4 measured the same within noise at 128 MiB).
pub const DEFAULT_DEPTH: usize = 3;
/// `StreamMode::Auto` streams inputs of at least this many bytes (and any input larger than the
/// device's free memory): below it the plain copy path costs no more.
pub const AUTO_STREAM_BYTES: usize = 256 << 20;
/// CPU threads copy or read pieces of this size into a staging buffer.
const FILL_PIECE: usize = 2 << 20;
/// [`FileInput::binning`] reads the file this many bytes at a time when the bins need the data's range.
pub const EXTREMES_PIECE: usize = 16 << 20;

/// Whether a histogram on the GPU streams its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamMode {
    /// Stream large inputs (see [`should_stream`]).
    #[default]
    Auto,
    Always,
    Never,
}

/// Sizes of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes of samples per chunk (rounded down to whole samples; at least one sample).
    pub chunk_bytes: usize,
    /// Chunk slots in flight, at least 2.
    pub depth: usize,
    /// Device memory the slots may take, in bytes; `None`: half the device's free memory.
    pub device_budget: Option<usize>,
    /// CPU threads that fill staging buffers; 0: rayon's global pool.
    pub fill_threads: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            depth: DEFAULT_DEPTH,
            device_budget: None,
            fill_threads: 0,
        }
    }
}

/// Whether an input of `bytes` streams: always or never when forced; on `Auto` when it is at least
/// [`AUTO_STREAM_BYTES`] or more than `device_room` (the budget, or the free device memory).
pub fn should_stream(mode: StreamMode, bytes: usize, device_room: usize) -> bool {
    match mode {
        StreamMode::Always => true,
        StreamMode::Never => false,
        StreamMode::Auto => bytes >= AUTO_STREAM_BYTES || bytes > device_room,
    }
}

/// How an input is cut: `chunks` chunks of `chunk_samples` samples (the last one shorter) through
/// `depth` slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    pub chunk_samples: usize,
    pub depth: usize,
    pub chunks: usize,
}

/// Fits the chunks of `n` samples (`item_bytes` per sample, weights included) into the options
/// and the device budget (`free_device` when the options give none: half of it is used).
pub fn chunk_plan(
    n: usize,
    sample_bytes: usize,
    item_bytes: usize,
    opts: &StreamOptions,
    free_device: usize,
) -> Result<ChunkPlan> {
    if opts.depth < 2 {
        return Err(Error::InvalidArgument(format!(
            "a streaming pipeline needs at least 2 slots (got depth {})",
            opts.depth
        )));
    }
    let budget = opts.device_budget.unwrap_or(free_device / 2);
    let by_budget = budget / (opts.depth * item_bytes.max(1));
    if by_budget == 0 {
        return Err(Error::InvalidArgument(format!(
            "a device budget of {budget} bytes cannot hold {} slots of even one sample ({item_bytes} bytes each)",
            opts.depth
        )));
    }
    let chunk_samples = (opts.chunk_bytes / sample_bytes.max(1))
        .max(1)
        .min(by_budget)
        .min(LAUNCH_BATCH)
        .min(n.max(1));
    Ok(ChunkPlan {
        chunk_samples,
        depth: opts.depth,
        chunks: n.div_ceil(chunk_samples),
    })
}

/// A file of native-endian samples, read by positioned reads from several threads at once (a file
/// in the page cache streams at memory speed; any file streams without being mapped or loaded).
pub struct FileInput {
    file: File,
    path: PathBuf,
    offset: u64,
    len: usize,
    sample_type: SampleType,
}

impl FileInput {
    /// The `len` samples of `sample_type` at byte `offset` of `path` (`None`: to the end of the
    /// file, which must then hold a whole number of samples).
    pub fn open(
        path: &Path,
        offset: u64,
        sample_type: SampleType,
        len: Option<usize>,
    ) -> Result<FileInput> {
        let err = |message: String| Error::Read {
            path: path.display().to_string(),
            message,
        };
        let file = File::open(path).map_err(|e| err(e.to_string()))?;
        let size = file.metadata().map_err(|e| err(e.to_string()))?.len();
        let avail = size.checked_sub(offset).ok_or_else(|| {
            err(format!(
                "the data offset {offset} is beyond the file's {size} bytes"
            ))
        })?;
        let elem = sample_type.size() as u64;
        let len = match len {
            Some(l) => {
                if (l as u64).saturating_mul(elem) > avail {
                    return Err(err(format!(
                        "{l} {sample_type} samples at byte {offset} need {} bytes, the file holds {avail} there",
                        l as u64 * elem
                    )));
                }
                l
            }
            None => {
                if avail % elem != 0 {
                    return Err(err(format!(
                        "{avail} bytes after byte {offset} are not a whole number of {sample_type} samples"
                    )));
                }
                usize::try_from(avail / elem)
                    .map_err(|_| err("too many samples to address".into()))?
            }
        };
        Ok(FileInput {
            file,
            path: path.to_path_buf(),
            offset,
            len,
            sample_type,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn sample_type(&self) -> SampleType {
        self.sample_type
    }
    /// The file as it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Byte of the file where the samples begin.
    pub fn offset(&self) -> u64 {
        self.offset
    }
    /// Bytes of samples.
    pub fn byte_len(&self) -> usize {
        self.len * self.sample_type.size()
    }

    /// The bins of `spec` for this file's samples, as [`Binning::resolve`] finds them for the same
    /// samples in memory. Only uniform bins without a range look at the data (numpy's rule takes
    /// the data's minimum and maximum): they cost one pass of positioned reads over the file, one
    /// piece of [`EXTREMES_PIECE`] bytes at a time, so any file fits, whatever the host memory.
    pub fn binning(&self, spec: &BinSpec) -> Result<Binning> {
        if !matches!(spec, BinSpec::Uniform { range: None, .. }) {
            // The other specs read only the sample type.
            return Binning::resolve(spec, empty_samples(self.sample_type));
        }
        match self.sample_type {
            SampleType::U8 => self.binning_by_extremes::<u8>(spec),
            SampleType::U16 => self.binning_by_extremes::<u16>(spec),
            SampleType::U32 => self.binning_by_extremes::<u32>(spec),
            SampleType::U64 => self.binning_by_extremes::<u64>(spec),
            SampleType::I8 => self.binning_by_extremes::<i8>(spec),
            SampleType::I16 => self.binning_by_extremes::<i16>(spec),
            SampleType::I32 => self.binning_by_extremes::<i32>(spec),
            SampleType::I64 => self.binning_by_extremes::<i64>(spec),
            SampleType::F32 => self.binning_by_extremes::<f32>(spec),
            SampleType::F64 => self.binning_by_extremes::<f64>(spec),
        }
    }

    /// [`Binning::resolve`] over the two samples that stand for the whole file: its smallest and
    /// largest (two NaNs when it holds a NaN), which give the same minimum, maximum and exact
    /// integer span as all of them; none for an empty file.
    fn binning_by_extremes<T>(&self, spec: &BinSpec) -> Result<Binning>
    where
        T: Sample + Default,
        for<'b> &'b [T]: Into<Samples<'b>>,
    {
        let per_piece = (EXTREMES_PIECE / std::mem::size_of::<T>()).max(1);
        let mut buf: Vec<T> = vec![T::default(); per_piece.min(self.len)];
        let mut acc: Option<(T, T)> = None;
        let mut at = 0usize;
        while at < self.len {
            let k = (self.len - at).min(per_piece);
            let piece = &mut buf[..k];
            // SAFETY: `piece` is `k` initialised numbers, viewed over exactly their own bytes; `T`
            // is one of the ten primitive number types (the only ones `binning` passes), for
            // which every bit pattern the file may hold is a valid value.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    piece.as_mut_ptr().cast::<u8>(),
                    std::mem::size_of_val(piece),
                )
            };
            self.read_into((at * std::mem::size_of::<T>()) as u64, bytes)?;
            let here = piece
                .par_chunks(1 << 16)
                .map(|c| c.iter().fold(None, |a, &x| merge(a, (x, x))))
                .reduce(|| None, |a, b| b.map_or(a, |b| merge(a, b)));
            if let Some(h) = here {
                acc = merge(acc, h);
            }
            if matches!(acc, Some((lo, _)) if lo.is_nan()) {
                // NaN makes the data's range NaN (an error below), whatever else the file holds.
                break;
            }
            at += k;
        }
        let two: Vec<T> = acc.map(|(lo, hi)| vec![lo, hi]).unwrap_or_default();
        Binning::resolve(spec, two.as_slice().into())
    }

    /// Reads bytes `at..at + dst.len()` of the samples into `dst` with several threads.
    fn read_into(&self, at: u64, dst: &mut [u8]) -> Result<()> {
        dst.par_chunks_mut(FILL_PIECE)
            .enumerate()
            .try_for_each(|(i, piece)| self.read_piece(at + (i * FILL_PIECE) as u64, piece))
    }

    #[cfg(unix)]
    fn read_piece(&self, at: u64, mut dst: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let mut pos = self.offset + at;
        while !dst.is_empty() {
            match self.file.read_at(dst, pos) {
                Ok(0) => {
                    return Err(Error::Read {
                        path: self.path.display().to_string(),
                        message: format!(
                            "the file ended at byte {pos}, before the {} bytes it held when streaming began (did it shrink?)",
                            self.offset + (self.len * self.sample_type.size()) as u64
                        ),
                    })
                }
                Ok(k) => {
                    dst = &mut dst[k..];
                    pos += k as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Read {
                        path: self.path.display().to_string(),
                        message: format!("at byte {pos}: {e}"),
                    })
                }
            }
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn read_piece(&self, _at: u64, _dst: &mut [u8]) -> Result<()> {
        Err(Error::NotImplemented(
            "streaming from a file needs positioned reads (unix only so far)".into(),
        ))
    }
}

/// Smallest and largest of two pairs; a NaN on either side makes both NaN.
fn merge<T: Sample>(a: Option<(T, T)>, (lo, hi): (T, T)) -> Option<(T, T)> {
    Some(match a {
        None => (lo, hi),
        Some((a, _)) if a.is_nan() => (a, a),
        Some(_) if lo.is_nan() => (lo, lo),
        Some((alo, ahi)) => (
            if lo < alo { lo } else { alo },
            if hi > ahi { hi } else { ahi },
        ),
    })
}

/// No samples of `ty`.
fn empty_samples(ty: SampleType) -> Samples<'static> {
    match ty {
        SampleType::U8 => Samples::U8(&[]),
        SampleType::U16 => Samples::U16(&[]),
        SampleType::U32 => Samples::U32(&[]),
        SampleType::U64 => Samples::U64(&[]),
        SampleType::I8 => Samples::I8(&[]),
        SampleType::I16 => Samples::I16(&[]),
        SampleType::I32 => Samples::I32(&[]),
        SampleType::I64 => Samples::I64(&[]),
        SampleType::F32 => Samples::F32(&[]),
        SampleType::F64 => Samples::F64(&[]),
    }
}

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
    pub fn len(&self) -> usize {
        match self {
            StreamInput::Host(s) => s.len(),
            StreamInput::Locked(s) => s.len(),
            StreamInput::File(f) => f.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
    match w {
        WeightKind::None => 0,
        WeightKind::F32 => 4,
        WeightKind::F64 => 8,
    }
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

    /// Streams `input` (and `weights`, from pageable memory) through `prepared` into fresh counters.
    /// `progress` is told the bytes of samples handed to the device so far.
    pub fn run(
        &mut self,
        prepared: &Prepared,
        input: &StreamInput<'_>,
        weights: Option<Weights<'_>>,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<CudaResult> {
        self.gpu.bind()?;
        let gpu = self.gpu.clone();
        let stream = &gpu.stream;
        let weighted = self.weights != WeightKind::None;
        let nbins = prepared.nbins.max(1);
        let tallies = stream
            .alloc_zeros::<u64>(3)
            .map_err(cuda_err("allocating tallies"))?;
        let counts = stream
            .alloc_zeros::<u64>(if weighted { 0 } else { nbins })
            .map_err(cuda_err("allocating counters"))?;
        let sums = stream
            .alloc_zeros::<f64>(if weighted { nbins } else { 0 })
            .map_err(cuda_err("allocating sums"))?;
        let out_ptr = if weighted {
            sums.device_ptr(stream).0
        } else {
            counts.device_ptr(stream).0
        };
        let t_ptr = tallies.device_ptr(stream).0;
        // SAFETY: `out_ptr` holds nbins counters (or sums) of the prepared kind and `t_ptr` 3
        // tallies, allocated above and alive until the copies below have synchronised.
        unsafe { self.run_into(prepared, input, weights, out_ptr, t_ptr, progress)? };
        let (counts, tallies) = read_result(
            stream,
            &tallies,
            &counts,
            weighted.then_some(&sums),
            prepared.nbins,
            "reading the tallies back (a copy or kernel may have failed)",
        )?;
        self.copy
            .synchronize()
            .map_err(cuda_err("finishing the copies"))?;
        Ok(CudaResult {
            counts,
            tallies,
            detail: format!(
                "{}, streamed in chunks of {} samples through {} slots",
                prepared.detail(),
                self.chunk_samples,
                self.slots.len()
            ),
        })
    }

    /// Streams `input` (and `weights`, from pageable memory) through `prepared`, adding into the
    /// device counters at `out_ptr` (u64 counts, or f64 sums with weights, `nbins` long) and the 3
    /// tallies at `t_ptr`: the counters stay on the device (several GPUs reduce them with NCCL).
    /// Both streams are drained before it returns, errors included.
    ///
    /// # Safety
    /// `out_ptr` and `t_ptr` must be device allocations of this pipeline's context holding
    /// `nbins` counters of the prepared kind and 3 u64 tallies.
    pub unsafe fn run_into(
        &mut self,
        prepared: &Prepared,
        input: &StreamInput<'_>,
        weights: Option<Weights<'_>>,
        out_ptr: u64,
        t_ptr: u64,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<()> {
        if prepared.sample_type != self.sample_type || input.sample_type() != self.sample_type {
            return Err(Error::InvalidArgument(format!(
                "the pipeline streams {} samples; the kernel takes {} and the input holds {}",
                self.sample_type,
                prepared.sample_type,
                input.sample_type()
            )));
        }
        let wkind = match weights {
            None => WeightKind::None,
            Some(Weights::F32(_)) => WeightKind::F32,
            Some(Weights::F64(_)) => WeightKind::F64,
        };
        if wkind != self.weights || prepared.weights != self.weights {
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
            // SAFETY: the slot's device buffers hold this chunk's `len` samples (and weights),
            // `out_ptr` nbins counters, `t_ptr` 3 tallies; all live until `_drain` has waited.
            // As planned, without the skew probe: it would wait on the host between chunks, and
            // the bus, not the strategy, bounds a stream.
            unsafe { prepared.launch_as_planned(dev_ptrs[0], len, dev_ptrs[1], out_ptr, t_ptr)? };
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
#[allow(clippy::too_many_arguments)]
pub fn histogram(
    input: &StreamInput<'_>,
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    choice: &StrategyChoice,
    opts: &StreamOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<CudaResult> {
    let gpu = crate::gpu::gpu()?;
    let wkind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
    };
    // Planned for a large input, as the single-GPU engine was tested and measured on the GPU;
    // the shard-sized plan (`Prepared::sized`) is used by the multi-GPU paths only until it
    // has run on a GPU.
    let prepared = Prepared::new(
        gpu.clone(),
        input.sample_type(),
        wkind,
        binning,
        policy,
        *choice,
    )?;
    let mut streamer = Streamer::new(gpu, input.sample_type(), wkind, input.len(), opts)?;
    streamer.run(&prepared, input, weights, progress)
}

/// Histogram of samples that kernels read where they lie in host memory ([`crate::gpu::host_memory::
/// MappedBuffer::zero_copy`], [`crate::gpu::host_memory::Registered::zero_copy`]): no copy, no device
/// buffer, every sample crosses the bus once.
pub fn run_zero_copy(
    prepared: &Prepared,
    input: &crate::gpu::host_memory::ZeroCopySamples<'_>,
) -> Result<CudaResult> {
    let (ptr, samples) = (input.device_ptr(), input.samples());
    if samples.sample_type() != prepared.sample_type || prepared.weights != WeightKind::None {
        return Err(Error::InvalidArgument(format!(
            "zero-copy input of {} samples for a kernel of {} samples{}",
            samples.sample_type(),
            prepared.sample_type,
            if prepared.weights != WeightKind::None {
                " with weights (zero-copy weights are not implemented)"
            } else {
                ""
            }
        )));
    }
    // The kernels load 16 bytes at a time.
    if ptr % 16 != 0 {
        return Err(Error::InvalidArgument(format!(
            "zero-copy input at device address {ptr:#x} is not 16-byte aligned, as the kernels' vector loads need"
        )));
    }
    let gpu = &prepared.gpu;
    gpu.bind()?;
    let stream = &gpu.stream;
    let nbins = prepared.nbins.max(1);
    let tallies = stream
        .alloc_zeros::<u64>(3)
        .map_err(cuda_err("allocating tallies"))?;
    let counts = stream
        .alloc_zeros::<u64>(nbins)
        .map_err(cuda_err("allocating counters"))?;
    if !samples.is_empty() {
        // SAFETY: `ptr` is the device address of `samples.len()` page-locked, mapped samples of
        // the prepared type, borrowed for this call, and the stream is synchronised below before
        // the borrow ends.
        unsafe {
            prepared.launch_device(
                ptr,
                samples.len(),
                0,
                counts.device_ptr(stream).0,
                tallies.device_ptr(stream).0,
            )
        }
        .inspect_err(|_| {
            let _ = stream.synchronize();
        })?;
    }
    let (counts, tallies) = read_result(
        stream,
        &tallies,
        &counts,
        None,
        prepared.nbins,
        "reading the tallies back (a zero-copy kernel may have failed)",
    )?;
    Ok(CudaResult {
        counts,
        tallies,
        detail: format!("{}, zero-copy from mapped host memory", prepared.detail()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(chunk_bytes: usize, depth: usize, budget: Option<usize>) -> StreamOptions {
        StreamOptions {
            chunk_bytes,
            depth,
            device_budget: budget,
            fill_threads: 0,
        }
    }

    #[test]
    fn chunks_cover_the_input_and_respect_the_budget() {
        let p = chunk_plan(1000, 4, 4, &opts(400, 3, None), 1 << 30).unwrap();
        assert_eq!((p.chunk_samples, p.chunks), (100, 10));
        // A budget of 1200 bytes over 3 slots leaves 400 bytes a slot: 50 samples with f64 weights.
        let p = chunk_plan(1001, 4, 8 + 4, &opts(1 << 20, 3, Some(1200)), 0).unwrap();
        assert_eq!((p.chunk_samples, p.chunks), (33, 31));
        assert!(p.chunk_samples * 12 * 3 <= 1200);
        // Half the free memory when no budget is given.
        let p = chunk_plan(1 << 30, 4, 4, &opts(1 << 30, 2, None), 4000).unwrap();
        assert_eq!(p.chunk_samples, 250);
        // Never more than the input, never zero chunks of a non-empty input, none of an empty one.
        assert_eq!(
            chunk_plan(5, 8, 8, &opts(1 << 20, 2, None), 1 << 30)
                .unwrap()
                .chunks,
            1
        );
        assert_eq!(
            chunk_plan(0, 8, 8, &opts(1 << 20, 2, None), 1 << 30)
                .unwrap()
                .chunks,
            0
        );
        // A chunk smaller than one sample still holds one.
        assert_eq!(
            chunk_plan(3, 8, 8, &opts(1, 2, None), 1 << 30)
                .unwrap()
                .chunk_samples,
            1
        );
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(chunk_plan(10, 4, 4, &opts(64, 1, None), 1 << 30).is_err());
        let e = chunk_plan(10, 8, 8, &opts(64, 3, Some(20)), 0).unwrap_err();
        assert!(e.to_string().contains("budget"), "{e}");
    }

    #[test]
    fn auto_streams_large_inputs_and_inputs_beyond_the_device() {
        assert!(should_stream(StreamMode::Always, 0, 1 << 30));
        assert!(!should_stream(StreamMode::Never, 1 << 40, 0));
        assert!(!should_stream(StreamMode::Auto, 1 << 20, 1 << 30));
        assert!(should_stream(StreamMode::Auto, AUTO_STREAM_BYTES, 1 << 40));
        assert!(should_stream(StreamMode::Auto, 1 << 20, 1 << 19));
    }

    #[test]
    fn files_are_checked_and_read_in_pieces() {
        let dir = std::env::temp_dir().join(format!("smemkit-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.i32");
        let data: Vec<u8> = (0..(3 * FILL_PIECE as u32 + 10)).map(|i| i as u8).collect();
        std::fs::write(&path, &data).unwrap();
        // 9 header bytes, then samples to the end: not a whole number of i32.
        assert!(FileInput::open(&path, 9, SampleType::I32, None).is_err());
        let f = FileInput::open(&path, 10, SampleType::U16, None).unwrap();
        assert_eq!(f.len(), (data.len() - 10) / 2);
        let mut got = vec![0u8; data.len() - 12];
        f.read_into(2, &mut got).unwrap();
        assert_eq!(&got[..], &data[12..]);
        assert!(FileInput::open(&path, 0, SampleType::U8, Some(data.len() + 1)).is_err());
        // A file that shrinks after opening is an error, not short data.
        let f = FileInput::open(&path, 0, SampleType::U8, None).unwrap();
        std::fs::write(&path, &data[..100]).unwrap();
        let mut got = vec![0u8; data.len()];
        let e = f.read_into(0, &mut got).unwrap_err();
        assert!(e.to_string().contains("shrink"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Writes `values` after a `head`-byte header and checks that the file's bins are the ones
    /// found for the same samples in memory, for every kind of spec.
    fn same_bins<T: Sample>(dir: &Path, name: &str, head: usize, values: &[T])
    where
        for<'b> &'b [T]: Into<Samples<'b>>,
    {
        let path = dir.join(name);
        let mut bytes = vec![7u8; head];
        bytes.extend_from_slice(sample_bytes(values.into()));
        std::fs::write(&path, &bytes).unwrap();
        let f = FileInput::open(&path, head as u64, T::TYPE, Some(values.len())).unwrap();
        let specs = [
            BinSpec::Uniform {
                nbins: 7,
                range: None,
            },
            BinSpec::Uniform {
                nbins: 3,
                range: Some((-1.0, 2.0)),
            },
            BinSpec::Integer { nbins: 5 },
            BinSpec::Edges(vec![0.0, 1.0, 4.0]),
        ];
        for spec in &specs {
            let mem = Binning::resolve(spec, values.into());
            let file = f.binning(spec);
            match (mem, file) {
                (Ok(a), Ok(b)) => assert_eq!(a.edges(), b.edges(), "{name} {spec:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name} {spec:?}"),
                (a, b) => panic!("{name} {spec:?}: in memory {a:?}, from the file {b:?}"),
            }
        }
    }

    #[test]
    fn file_bins_match_the_bins_in_memory() {
        let dir = std::env::temp_dir().join(format!("smemkit-bins-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // More than one piece of EXTREMES_PIECE bytes, extremes in the second piece.
        let n = EXTREMES_PIECE / 4 + 1000;
        let mut v: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
        v[n - 3] = -3.5;
        v[n - 2] = 1e6;
        same_bins(&dir, "a.f32", 128, &v);
        v[n - 1] = f32::NAN;
        same_bins(&dir, "nan.f32", 0, &v);
        same_bins(&dir, "one.f64", 13, &[2.5f64]);
        same_bins(&dir, "const.f64", 0, &[4.0f64; 9]);
        same_bins(&dir, "inf.f64", 0, &[1.0, f64::INFINITY]);
        same_bins::<f32>(&dir, "empty.f32", 64, &[]);
        same_bins(&dir, "a.i64", 3, &[i64::MAX, 5, i64::MIN + 1, -9]);
        same_bins(&dir, "a.u64", 8, &[u64::MAX, 3, (1 << 53) + 1]);
        same_bins(&dir, "a.i8", 1, &[-128i8, 127, 0]);
        same_bins(&dir, "a.u16", 0, &[9u16, 9, 9]);
        // A file that shrinks before the bins' pass over it is an error, as while streaming.
        let f = FileInput::open(&dir.join("a.f32"), 128, SampleType::F32, None).unwrap();
        std::fs::write(dir.join("a.f32"), [0u8; 1000]).unwrap();
        let e = f
            .binning(&BinSpec::Uniform {
                nbins: 4,
                range: None,
            })
            .unwrap_err();
        assert!(e.to_string().contains("shrink"), "{e}");
        // Streaming from a file is for one GPU: the CPU backend is a clear error.
        let f = FileInput::open(&dir.join("a.u16"), 0, SampleType::U16, None).unwrap();
        let options = crate::HistogramOptions::new(BinSpec::Integer { nbins: 4 })
            .backend(crate::Backend::Cpu);
        assert!(!crate::streams_to_one_gpu(f.byte_len(), &options).unwrap());
        let e = crate::histogram_file_with_progress(&f, None, &options, None).unwrap_err();
        assert!(e.to_string().contains("CUDA backend"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
