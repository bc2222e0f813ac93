//! Histograms of samples in host memory through one GPU: copy in batches, launch, read back.

use half::slice::HalfFloatSliceExt;

use super::*;

/// Histogram of host-resident samples on the GPU.
pub fn histogram(samples: Samples<'_>, job: &Job<'_>) -> Result<EngineOutput> {
    let Job {
        weights,
        binning,
        policy,
        ..
    } = *job;
    let choice = &job.strategy;
    let gpu = crate::gpu::gpu()?;
    // Planned for a large input, as the single-GPU engine was tested and measured on the GPU;
    // the shard-sized plan (`Prepared::sized`) is used by the multi-GPU paths only until it
    // has run on a GPU.
    let prepare_span = crate::gpu::trace::span("plan and kernel modules (built or loaded)");
    let prepared = Prepared::new(
        gpu,
        samples.sample_type(),
        WeightKind::of(&weights),
        binning,
        policy,
        *choice,
    )?;
    drop(prepare_span);
    match samples {
        // The kernels read 16-bit floats as their codes (half_table.rs).
        Samples::F16(s) => run_host(&prepared, s.reinterpret_cast(), weights),
        Samples::BF16(s) => run_host(&prepared, s.reinterpret_cast(), weights),
        Samples::U8(s) => run_host(&prepared, s, weights),
        Samples::U16(s) => run_host(&prepared, s, weights),
        Samples::U32(s) => run_host(&prepared, s, weights),
        Samples::U64(s) => run_host(&prepared, s, weights),
        Samples::I8(s) => run_host(&prepared, s, weights),
        Samples::I16(s) => run_host(&prepared, s, weights),
        Samples::I32(s) => run_host(&prepared, s, weights),
        Samples::I64(s) => run_host(&prepared, s, weights),
        Samples::F32(s) => run_host(&prepared, s, weights),
        Samples::F64(s) => run_host(&prepared, s, weights),
    }
}

pub(super) fn run_host<T: Sample + DeviceRepr>(
    p: &Prepared,
    samples: &[T],
    weights: Option<Weights<'_>>,
) -> Result<EngineOutput> {
    let stream = &p.gpu.stream;
    let alloc_span = crate::gpu::trace::span("alloc and zero (counters, sample buffer)");
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
        drop(alloc_span);
        // Events around each batch's copies and kernels split the call's time for the summary
        // (`gpu::work_time`). Each batch waits for its kernels before the next copy: a pageable
        // copy on this stream does not overlap them anyway.
        let timing = BatchTimer::new(p)?;
        let mut start = 0;
        while start < samples.len() {
            let len = (samples.len() - start).min(batch);
            timing.before_copy()?;
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
            timing.before_kernels()?;
            // SAFETY: the buffers above hold `len` samples / weights, `nbins` counters and 3 tallies,
            // and live until the synchronising copies below.
            unsafe { p.launch_device(in_ptr, len, w_ptr, out_ptr, t_ptr)? };
            timing.after_kernels()?;
            start += len;
        }
        // The next copy into `buf` waits for the kernel on the same stream; the loop needs no sync.
    }
    let back = std::time::Instant::now();
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
    crate::gpu::work_time::add_transfer("copy back (counts, tallies)", back.elapsed());
    Ok(EngineOutput {
        counts,
        tallies,
        detail: p.detail(),
    })
}

/// Three timing events on the GPU's stream: before a batch's copies, before its kernels, after
/// them; each batch's copy and kernel time go to [`crate::gpu::work_time`].
struct BatchTimer {
    stream: Arc<cudarc::driver::CudaStream>,
    events: [cudarc::driver::CudaEvent; 3],
}

impl BatchTimer {
    fn new(p: &Prepared) -> Result<BatchTimer> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = || {
            p.gpu
                .ctx
                .new_event(flags)
                .map_err(cuda_err("creating a timing event"))
        };
        Ok(BatchTimer {
            stream: p.gpu.stream.clone(),
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
