//! Device-side benchmark support: data drawn on the GPU (so the host-to-device copy stays out of the
//! timing, and 2^28 samples need no host generation), runs of the device engine (the launch path
//! every entry point shares, [`DeviceEngine`]) timed with CUDA events after a warm-up, and the data
//! copied back once for the correctness check against the CPU engine.

use std::sync::Arc;

use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

use super::device_engine::DeviceEngine;
use super::device_histogram::{DeviceOutput, RawBuffers};
pub use super::device_samples::{DeviceSamples, HostSamples};
use super::prepared::EngineOutput;
use crate::error::{Error, Result};
use crate::gpu::compile::GENERATE;
use crate::gpu::device::{cuda_err, Gpu};
pub use crate::gpu::timing::median;
use crate::histogram::bins::OutOfRange;
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

/// The buffers of one run of `engine` over `data` into `out` (no weights).
fn buffers(engine: &DeviceEngine, data: &DeviceSamples, out: &DeviceOutput) -> Result<RawBuffers> {
    if data.sample_type != engine.sample_type() {
        return Err(Error::InvalidArgument(
            "benchmark data and kernel disagree on the sample type".into(),
        ));
    }
    let s = &engine.gpu().stream;
    Ok(RawBuffers {
        input: data.ptr(engine.gpu()),
        n: data.n,
        sample_type: data.sample_type,
        weights: 0,
        bins: out.bins_ptr(s),
        tallies: out.tallies_ptr(s),
    })
}

/// One run of `engine` over `data` (counts, `auto`'s skew probe included), exactly as a timed
/// one, into an output poisoned first (so that the check covers the run's clearing or
/// overwriting it), read back for the correctness check.
pub fn run_once(engine: &DeviceEngine, data: &DeviceSamples) -> Result<EngineOutput> {
    let gpu = engine.gpu();
    let stream = &gpu.stream;
    let out = DeviceOutput::uncleared(engine, OutOfRange::Ignore)?;
    let buffers = buffers(engine, data, &out)?;
    // SAFETY: the output's own allocation, its full length.
    unsafe {
        cudarc::driver::result::memset_d8_async(
            out.tallies_ptr(stream),
            0xA5,
            out.words().len() * 8,
            stream.cu_stream(),
        )
    }
    .map_err(cuda_err("poisoning the output"))?;
    // SAFETY: on the GPU's own stream, `data` holds n samples of the engine's type (checked by
    // `buffers`) and `out` 3 tallies then nbins words; both live until the read below has
    // synchronised.
    unsafe { engine.enqueue(stream, &buffers, None, false)? };
    let (counts, tallies) = out.read_unchecked(stream)?;
    Ok(EngineOutput {
        counts,
        tallies,
        detail: engine.detail(),
    })
}

/// Times `reps` runs after `warmup` runs, CUDA events around each: one run of the device
/// engine as every entry point enqueues it (the output cleared by the run, or overwritten where
/// its kernels write every bin, as every peer's timing includes producing a fresh histogram;
/// `auto`'s skew verdict and both gated plans where it probes); milliseconds per run.
pub fn time(
    engine: &DeviceEngine,
    data: &DeviceSamples,
    warmup: usize,
    reps: usize,
) -> Result<Vec<f32>> {
    let gpu = engine.gpu();
    let stream = &gpu.stream;
    let out = DeviceOutput::uncleared(engine, OutOfRange::Ignore)?;
    let buffers = buffers(engine, data, &out)?;
    let event = || {
        gpu.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("creating an event"))
    };
    let (start, end) = (event()?, event()?);
    let mut times = Vec::with_capacity(reps);
    for i in 0..warmup + reps {
        start
            .record(stream)
            .map_err(cuda_err("recording an event"))?;
        // SAFETY: as in `run_once`; each run ends (the synchronisation below) before the next.
        unsafe { engine.enqueue(stream, &buffers, None, false)? };
        end.record(stream).map_err(cuda_err("recording an event"))?;
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
