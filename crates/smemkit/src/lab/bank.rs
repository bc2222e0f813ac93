//! The bank-conflict lab: what the 32-bank rule predicts for strided shared-memory reads (no GPU
//! needed) and the probe kernel that measures what the hardware does.

use cudarc::driver::sys;
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

use crate::error::Result;
use crate::gpu::compile::LAB;
use crate::gpu::device::{cuda_err, gpu};

/// Shared memory banks (4-byte words each) on every GPU since Kepler's 4-byte mode.
pub const BANKS: u32 = 32;

/// The conflict degree the bank rule predicts when the 32 lanes of a warp read 4-byte words
/// `stride` words apart: the number of lanes that share each bank, `gcd(stride, 32)`.
pub fn predicted_degree(stride: u32) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if stride == 0 {
        return BANKS; // every lane reads the same word: a broadcast, but one bank
    }
    gcd(stride, BANKS)
}

/// One measured stride.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BankMeasurement {
    pub stride: u32,
    pub predicted: u32,
    /// Milliseconds for the probe kernel.
    pub ms: f32,
    /// Shared-memory read bandwidth in GB/s (4 bytes per lane per read).
    pub gbps: f64,
    /// Time relative to stride 1.
    pub slowdown: f64,
}

/// Strides the lab walks through: 1, 2, 4, ..., 32, and 33 (odd: conflict-free again).
pub const STRIDES: [u32; 7] = [1, 2, 4, 8, 16, 32, 33];

/// Runs the probe on the GPU for every stride of [`STRIDES`].
pub fn measure_banks() -> Result<Vec<BankMeasurement>> {
    bank_probe(&STRIDES)
}

/// Times the bank probe for each stride (median of 5 after a warm-up) and reports bandwidth and
/// slowdown against the first stride.
pub fn bank_probe(strides: &[u32]) -> Result<Vec<BankMeasurement>> {
    let g = gpu()?;
    g.bind()?;
    let f = g.function(&LAB, &[], "bank_probe")?;
    let (block, iters) = (1024u32, 4096u32);
    let grid = g.limits.sm_count * 2;
    let out = g
        .stream
        .alloc_zeros::<u32>((grid * block) as usize)
        .map_err(cuda_err("allocating the probe output"))?;
    let po = out.device_ptr(&g.stream).0;
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = g
        .ctx
        .new_event(timing)
        .map_err(cuda_err("creating an event"))?;
    let end = g
        .ctx
        .new_event(timing)
        .map_err(cuda_err("creating an event"))?;
    let mut rows = Vec::new();
    for &stride in strides {
        let mut times = Vec::new();
        for rep in 0..6 {
            start
                .record(&g.stream)
                .map_err(cuda_err("recording an event"))?;
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = g.stream.launch_builder(&f);
            l.arg(&po).arg(&stride).arg(&iters);
            // SAFETY: bank_probe(out, stride, iters); out holds grid * block words.
            unsafe { l.launch(cfg) }.map_err(cuda_err("launching the bank probe"))?;
            end.record(&g.stream)
                .map_err(cuda_err("recording an event"))?;
            let ms = start
                .elapsed_ms(&end)
                .map_err(cuda_err("timing the bank probe"))?;
            if rep > 0 {
                times.push(ms);
            }
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let ms = times[times.len() / 2];
        let bytes = grid as f64 * block as f64 * iters as f64 * 4.0;
        rows.push(BankMeasurement {
            stride,
            predicted: predicted_degree(stride),
            ms,
            gbps: bytes / (ms as f64 / 1e3) / 1e9,
            slowdown: 0.0,
        });
    }
    let base = rows.first().map(|r| r.ms).unwrap_or(1.0) as f64;
    for r in &mut rows {
        r.slowdown = r.ms as f64 / base;
    }
    Ok(rows)
}
