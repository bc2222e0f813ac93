//! Histograms of samples in host memory through one GPU: copy in batches, run each through the
//! engine a [`DeviceHistogram`](crate::histogram::cuda::device_histogram::DeviceHistogram) runs on
//! (one plan, one launch path for both), read back.

use half::slice::HalfFloatSliceExt;

use super::*;
use crate::histogram::cuda::device_engine::DeviceEngine;
use crate::histogram::cuda::device_histogram::{DeviceOutput, RawBuffers};
use crate::histogram::cuda::int_weights::IntStaging;

/// Histogram of host-resident samples on the GPU.
pub fn histogram(samples: Samples<'_>, job: &Job<'_>) -> Result<EngineOutput> {
    let Job {
        weights,
        binning,
        policy,
        ..
    } = *job;
    let gpu = crate::gpu::gpu()?;
    let sample_type = samples.sample_type();
    let batch = samples.len().min(HOST_BATCH);
    // Planned for a large input (`None`), as the single-GPU engine was tested and measured on
    // the GPU; the shard-sized plan is used by the multi-GPU paths and the device-resident API.
    // Scratch (the partition index array) for one batch, made here rather than in the first
    // launch.
    let prepare_span = crate::gpu::trace::span("plan and kernel modules (built or loaded)");
    let engine = DeviceEngine::new(
        &gpu,
        Counting {
            sample_type,
            weights: WeightKind::of(&weights),
            binning,
            policy,
        },
        job.strategy,
        false,
        batch,
        None,
    )?;
    drop(prepare_span);
    match samples {
        // The kernels read 16-bit floats as their codes (half_table.rs).
        Samples::F16(s) => run_host(&engine, s.reinterpret_cast(), sample_type, weights, policy),
        Samples::BF16(s) => run_host(&engine, s.reinterpret_cast(), sample_type, weights, policy),
        Samples::U8(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::U16(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::U32(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::U64(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::I8(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::I16(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::I32(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::I64(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::F32(s) => run_host(&engine, s, sample_type, weights, policy),
        Samples::F64(s) => run_host(&engine, s, sample_type, weights, policy),
    }
}

/// Copies `samples` (of `sample_type`, viewed as `T`: 16-bit floats as their codes) and their
/// weights in batches of at most [`HOST_BATCH`] and runs each through `engine`, adding into one
/// output; reads it back. The out-of-range policy is checked by the caller.
fn run_host<T: Sample + DeviceRepr>(
    engine: &DeviceEngine,
    samples: &[T],
    sample_type: SampleType,
    weights: Option<Weights<'_>>,
    policy: OutOfRange,
) -> Result<EngineOutput> {
    let stream = &engine.gpu().stream;
    let alloc_span = crate::gpu::trace::span("alloc and zero (counters, sample buffer)");
    // One allocation for the tallies and the bins, zeroed here: every batch adds into it.
    let out = DeviceOutput::zeroed(engine, policy)?;
    let (t_ptr, out_ptr) = (out.tallies_ptr(stream), out.bins_ptr(stream));
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
        // Integer weights: copied in their own type and widened to int64 on the device.
        let mut ints = match weights {
            Some(Weights::Int(w)) => Some(IntStaging::new(stream, w.int_type(), batch)?),
            _ => None,
        };
        drop(alloc_span);
        // Events around each batch's copies and kernels split the call's time for the summary
        // (`gpu::work_time`). Each batch waits for its kernels before the next copy: a pageable
        // copy on this stream does not overlap them anyway.
        let timing = BatchTimer::new(engine.gpu())?;
        let mut start = 0;
        while start < samples.len() {
            let len = (samples.len() - start).min(batch);
            timing.before_copy()?;
            let mut view = buf.slice_mut(0..len);
            stream
                .memcpy_htod(&samples[start..start + len], &mut view)
                .map_err(cuda_err("copying samples to the device"))?;
            let (w_ptr, w) = match weights {
                None => (0, None),
                Some(Weights::F32(w)) => {
                    let mut v = wbuf32.slice_mut(0..len);
                    stream
                        .memcpy_htod(&w[start..start + len], &mut v)
                        .map_err(cuda_err("copying weights"))?;
                    (wbuf32.device_ptr(stream).0, Some((len, WeightKind::F32)))
                }
                Some(Weights::F64(w)) => {
                    let mut v = wbuf64.slice_mut(0..len);
                    stream
                        .memcpy_htod(&w[start..start + len], &mut v)
                        .map_err(cuda_err("copying weights"))?;
                    (wbuf64.device_ptr(stream).0, Some((len, WeightKind::F64)))
                }
                Some(Weights::Int(w)) => {
                    let staging = ints.as_mut().expect("made above for integer weights");
                    let (ptr, kind) =
                        staging.upload(engine.gpu(), stream, &w.slice(start..start + len))?;
                    (ptr, Some((len, kind)))
                }
            };
            let in_ptr = buf.device_ptr(stream).0;
            timing.before_kernels()?;
            let buffers = RawBuffers {
                input: in_ptr,
                n: len,
                sample_type,
                weights: w_ptr,
                bins: out_ptr,
                tallies: t_ptr,
            };
            // SAFETY: on the GPU's own stream (of the engine's context), the buffers above hold
            // `len` samples of `sample_type` (16-bit floats as their u16 codes) and weights, the
            // output 3 tallies and then nbins words; all live until the synchronising read below
            // (`buf` and the weights until `after_kernels` has waited for this batch). Every
            // batch adds: the output was zeroed when allocated.
            unsafe { engine.enqueue(stream, &buffers, w, true)? };
            timing.after_kernels()?;
            start += len;
        }
        // The next copy into `buf` waits for the kernel on the same stream; the loop needs no sync.
    }
    let back = std::time::Instant::now();
    let (counts, tallies) = out.read_unchecked(stream)?;
    stream
        .synchronize()
        .map_err(cuda_err("finishing the histogram"))?;
    crate::gpu::work_time::add_transfer("copy back (counts, tallies)", back.elapsed());
    Ok(EngineOutput {
        counts,
        tallies,
        detail: engine.detail(),
    })
}

/// Three timing events on the GPU's stream: before a batch's copies, before its kernels, after
/// them; each batch's copy and kernel time go to [`crate::gpu::work_time`].
struct BatchTimer {
    stream: Arc<cudarc::driver::CudaStream>,
    events: [cudarc::driver::CudaEvent; 3],
}

impl BatchTimer {
    fn new(gpu: &Arc<Gpu>) -> Result<BatchTimer> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = || {
            gpu.ctx
                .new_event(flags)
                .map_err(cuda_err("creating a timing event"))
        };
        Ok(BatchTimer {
            stream: gpu.stream.clone(),
            events: [event()?, event()?, event()?],
        })
    }

    fn mark(&self, i: usize) -> Result<()> {
        self.events[i]
            .record(&self.stream)
            .map_err(cuda_err("recording a timing event"))
    }

    fn before_copy(&self) -> Result<()> {
        self.mark(0)
    }

    fn before_kernels(&self) -> Result<()> {
        self.mark(1)
    }

    /// Records the end, waits for it, and adds the batch's two spans.
    fn after_kernels(&self) -> Result<()> {
        self.mark(2)?;
        let ms = |a: usize, b: usize| {
            self.events[a]
                .elapsed_ms(&self.events[b])
                .map(|ms| std::time::Duration::from_secs_f64(f64::from(ms.max(0.0)) * 1e-3))
                .map_err(cuda_err("finishing a batch (a kernel may have failed)"))
        };
        crate::gpu::work_time::add_transfer("copy in (samples, weights)", ms(0, 1)?);
        crate::gpu::work_time::add_kernel(ms(1, 2)?);
        Ok(())
    }
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
