//! Histograms of samples in host memory through one GPU: copy in batches, run each through the
//! engine a [`DeviceHistogram`](crate::histogram::cuda::device_histogram::DeviceHistogram) runs on
//! (one plan, one launch path for both), read back.

use super::*;
use crate::histogram::cuda::device_engine::DeviceEngine;
use crate::histogram::cuda::device_histogram::{DeviceOutput, RawBuffers};
use crate::histogram::cuda::host_stage::{with_codes, HostStage};
use crate::histogram::sums::NUMPY_BLOCK;

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
    // Batches are whole numbers of numpy's blocks: in numpy's order (`job.sums`) each batch's
    // sums continue the total of the ones before.
    const _: () = assert!(HOST_BATCH % NUMPY_BLOCK == 0);
    let engine = DeviceEngine::with_sums(
        &gpu,
        Counting {
            sample_type,
            weights: WeightKind::of(&weights),
            binning,
            policy,
        },
        job.strategy,
        job.sums,
        batch,
        None,
    )?;
    drop(prepare_span);
    with_codes!(samples, s => run_host(&engine, s, sample_type, weights, policy))
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
        let mut stage =
            HostStage::<T>::widening(engine.gpu(), stream, samples.len(), weights, batch)?;
        drop(alloc_span);
        // Events around each batch's copies and kernels split the call's time for the summary
        // (`gpu::work_time`). Each batch waits for its kernels before the next copy: a pageable
        // copy on this stream does not overlap them anyway.
        let timing = BatchTimer::new(engine.gpu())?;
        let mut start = 0;
        while start < samples.len() {
            let len = (samples.len() - start).min(batch);
            timing.before_copy()?;
            let staged = stage.load(stream, samples, start..start + len)?;
            timing.before_kernels()?;
            let buffers = RawBuffers {
                input: staged.input,
                n: len,
                sample_type,
                weights: staged.weights,
                bins: out_ptr,
                tallies: t_ptr,
            };
            // SAFETY: on the GPU's own stream (of the engine's context), the staged buffers hold
            // `len` samples of `sample_type` (16-bit floats as their u16 codes) and weights, the
            // output 3 tallies and then nbins words; all live until the synchronising read below
            // (the stage until `after_kernels` has waited for this batch). Every batch adds: the
            // output was zeroed when allocated.
            unsafe { engine.enqueue(stream, &buffers, staged.kind, true)? };
            timing.after_kernels()?;
            start += len;
        }
        // The next copy into the stage waits for the kernel on the same stream; the loop needs
        // no sync.
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
