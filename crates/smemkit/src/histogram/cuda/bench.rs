//! Device-side benchmark support: data drawn on the GPU (so the host-to-device copy stays out of the
//! timing, and 2^28 samples need no host generation), kernels timed with CUDA events after a warm-up,
//! and the data copied back once for the correctness check against the CPU engine.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

pub use super::device_samples::{DeviceSamples, HostSamples};
use super::prepared::{read_result, EngineOutput, Prepared};
use crate::error::{Error, Result};
use crate::gpu::compile::GENERATE;
use crate::gpu::device::{cuda_err, Gpu};
pub use crate::gpu::timing::median;
use crate::sample::SampleType;

/// The hot share of shared/BENCH.md's skewed workload: 7 of 8 samples in one bin.
pub const BENCH_HOT_SHARE: f64 = 0.875;

/// Draws `n` samples on the device: each equals `7 % nbins` with probability `hot_share` (0 for the
/// uniform workload, [`BENCH_HOT_SHARE`] for the hot one), else uniform in `[0, nbins)`. The share
/// is rounded to a multiple of 1/65536.
pub fn generate(
    gpu: &Arc<Gpu>,
    sample_type: SampleType,
    n: usize,
    nbins: usize,
    hot_share: f64,
    seed: u64,
) -> Result<DeviceSamples> {
    if !(0.0..=1.0).contains(&hot_share) {
        return Err(Error::InvalidArgument(format!(
            "hot share {hot_share}: expected a fraction in [0, 1]"
        )));
    }
    let kernel = match sample_type {
        SampleType::I32 => "generate_i32",
        SampleType::U8 => "generate_u8",
        SampleType::F32 => "generate_f32",
        t => {
            return Err(Error::InvalidArgument(format!(
                "the device generator draws int32, uint8 and float32 samples, not {t}"
            )))
        }
    };
    let func = gpu.function(&GENERATE, &[], kernel)?;
    // SAFETY: filled completely by the generator below before anything reads it.
    let buf = unsafe { gpu.stream.alloc::<u8>(n * sample_type.size()) }
        .map_err(cuda_err("allocating benchmark samples"))?;
    let (n64, nbins64) = (n as u64, nbins as u64);
    let hot32 = (hot_share * 65536.0).round() as u32;
    let ptr = buf.device_ptr(&gpu.stream).0;
    let cfg = LaunchConfig {
        grid_dim: (gpu.limits.sm_count * 8, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream.launch_builder(&func);
    b.arg(&ptr).arg(&n64).arg(&nbins64).arg(&seed).arg(&hot32);
    // SAFETY: generate_* takes (out*, n, nbins, seed, hot: u32); `buf` holds n samples of the type.
    unsafe { b.launch(cfg) }.map_err(cuda_err("launching the generator"))?;
    Ok(DeviceSamples {
        sample_type,
        n,
        buf,
    })
}

/// Runs `prepared` once on fresh zeroed counters and returns the result (for the correctness check).
pub fn run_once(prepared: &Prepared, data: &DeviceSamples) -> Result<EngineOutput> {
    let gpu = &prepared.gpu;
    let (counts, tallies) = zeroed(prepared)?;
    // SAFETY: `data` holds `n` samples of the prepared type (checked by the caller), `counts` nbins
    // counters and `tallies` 3; all live until the copies below have synchronised.
    unsafe {
        prepared.launch_device(
            data.ptr(gpu),
            data.n,
            0,
            counts.device_ptr(&gpu.stream).0,
            tallies.device_ptr(&gpu.stream).0,
        )?
    };
    let (counts, tallies) = read_result(
        &gpu.stream,
        &tallies,
        &counts,
        None,
        prepared.nbins,
        "reading tallies (a kernel may have failed)",
    )?;
    Ok(EngineOutput {
        counts,
        tallies,
        detail: prepared.detail(),
    })
}

fn zeroed(prepared: &Prepared) -> Result<(CudaSlice<u64>, CudaSlice<u64>)> {
    let s = &prepared.gpu.stream;
    Ok((
        s.alloc_zeros::<u64>(prepared.nbins)
            .map_err(cuda_err("allocating counters"))?,
        s.alloc_zeros::<u64>(3)
            .map_err(cuda_err("allocating tallies"))?,
    ))
}

/// Times `reps` runs after `warmup` runs with CUDA events around each launch (counter zeroing
/// included, as every peer's timing includes producing a fresh histogram); milliseconds per run.
pub fn time(
    prepared: &Prepared,
    data: &DeviceSamples,
    warmup: usize,
    reps: usize,
) -> Result<Vec<f32>> {
    if data.sample_type != prepared.sample_type {
        return Err(Error::InvalidArgument(
            "benchmark data and kernel disagree on the sample type".into(),
        ));
    }
    let gpu = &prepared.gpu;
    let (mut counts, mut tallies) = zeroed(prepared)?;
    let start = gpu
        .ctx
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda_err("creating an event"))?;
    let end = gpu
        .ctx
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda_err("creating an event"))?;
    let mut times = Vec::with_capacity(reps);
    for i in 0..warmup + reps {
        start
            .record(&gpu.stream)
            .map_err(cuda_err("recording an event"))?;
        gpu.stream
            .memset_zeros(&mut counts)
            .map_err(cuda_err("zeroing counters"))?;
        gpu.stream
            .memset_zeros(&mut tallies)
            .map_err(cuda_err("zeroing tallies"))?;
        // SAFETY: as in `run_once`.
        unsafe {
            prepared.launch_device(
                data.ptr(gpu),
                data.n,
                0,
                counts.device_ptr(&gpu.stream).0,
                tallies.device_ptr(&gpu.stream).0,
            )?
        };
        end.record(&gpu.stream)
            .map_err(cuda_err("recording an event"))?;
        end.synchronize().map_err(cuda_err(
            "waiting for a timed run (a kernel may have failed)",
        ))?;
        if i >= warmup {
            times.push(
                start
                    .elapsed_ms(&end)
                    .map_err(cuda_err("reading an event"))?,
            );
        }
    }
    Ok(times)
}

/// Times `runs` device-to-device copies of `bytes` bytes (after `warmup` untimed ones) with CUDA
/// events around each: the reference a histogram reading the same bytes is measured against.
pub fn time_device_copy(gpu: &Gpu, bytes: usize, warmup: usize, runs: usize) -> Result<Vec<f32>> {
    gpu.bind()?;
    let s = &gpu.stream;
    let src = s
        .alloc_zeros::<u8>(bytes.max(1))
        .map_err(cuda_err("allocating the copy's source"))?;
    let mut dst = s
        .alloc_zeros::<u8>(bytes.max(1))
        .map_err(cuda_err("allocating the copy's destination"))?;
    let event = || {
        gpu.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("creating an event"))
    };
    let (start, end) = (event()?, event()?);
    let mut times = Vec::with_capacity(runs);
    for i in 0..warmup + runs {
        start.record(s).map_err(cuda_err("recording an event"))?;
        s.memcpy_dtod(&src, &mut dst)
            .map_err(cuda_err("copying on the device"))?;
        end.record(s).map_err(cuda_err("recording an event"))?;
        end.synchronize()
            .map_err(cuda_err("waiting for a timed copy"))?;
        if i >= warmup {
            times.push(
                start
                    .elapsed_ms(&end)
                    .map_err(cuda_err("reading an event"))?,
            );
        }
    }
    Ok(times)
}
