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
    let prepared = Prepared::new(
        gpu,
        samples.sample_type(),
        WeightKind::of(&weights),
        binning,
        policy,
        *choice,
    )?;
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
    Ok(EngineOutput {
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
