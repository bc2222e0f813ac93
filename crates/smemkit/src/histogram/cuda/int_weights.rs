//! Integer and bool weights on the device: the histogram kernels have one integer weight kind,
//! int64 summed exactly in 64-bit counters ([`WeightKind::I64`]), so that every integer type adds
//! three entry points per binning mode rather than twenty-seven; narrower types are widened to
//! int64 on the device by one small kernel (`kernels/int_weights.cu`), after a copy of their own
//! bytes (no widening on the host, and no more bytes over the bus than the weights hold).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};

use super::prepared::WeightKind;
use crate::error::Result;
use crate::gpu::compile::INT_WEIGHTS;
use crate::gpu::device::{cuda_err, Gpu};
use crate::int_weights::{IntType, IntWeights};

/// Threads per block of the widening kernel (its `__launch_bounds__`).
const WIDEN_BLOCK: u32 = 256;

/// Enqueues on `stream` the widening of `n` weights of type `ty` at device address `src` into
/// `n` int64 at `dst` (64-bit types: a copy of their bits).
///
/// # Safety
/// `src` must hold `n` weights of `ty` and `dst` room for `n` int64, both device memory of
/// `gpu`'s context valid until `stream` has run the kernel; `stream` must be of that context.
pub(crate) unsafe fn widen_on_device(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    src: u64,
    ty: IntType,
    n: usize,
    dst: u64,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let func = gpu.function(&INT_WEIGHTS, &[], "widen_weights_i64")?;
    let blocks = n
        .div_ceil(WIDEN_BLOCK as usize)
        .min(gpu.limits.sm_count as usize * 16) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks.max(1), 1, 1),
        block_dim: (WIDEN_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (width, signed, len) = (ty.bytes() as u32, u32::from(ty.is_signed()), n as u64);
    let mut b = stream.launch_builder(&func);
    b.arg(&src).arg(&width).arg(&signed).arg(&len).arg(&dst);
    // SAFETY: widen_weights_i64(const void* in, unsigned width, unsigned is_signed, u64 n,
    // long long* out); the caller guarantees `n` weights at `src` and room for `n` at `dst`.
    unsafe { b.launch(cfg) }.map_err(cuda_err("widening integer weights to int64"))?;
    Ok(())
}

/// The device buffers of a host-slice run's integer weights, for batches of up to `batch`: the
/// weights' own bytes as copied in, and their int64 widening the kernels read.
pub(crate) struct IntStaging {
    raw: CudaSlice<u8>,
    wide: CudaSlice<i64>,
    ty: IntType,
}

impl IntStaging {
    /// Buffers for batches of up to `batch` weights of `ty` (64-bit types need no staging copy).
    pub(crate) fn new(stream: &Arc<CudaStream>, ty: IntType, batch: usize) -> Result<IntStaging> {
        let raw_len = if ty.bytes() == 8 {
            0
        } else {
            batch * ty.bytes()
        };
        // SAFETY: uninitialised device memory; every batch is copied (and widened) in before a
        // kernel reads it.
        let raw = unsafe { stream.alloc::<u8>(raw_len) }
            .map_err(cuda_err("allocating the integer weight buffer"))?;
        // SAFETY: as above.
        let wide = unsafe { stream.alloc::<i64>(batch) }
            .map_err(cuda_err("allocating the int64 weight buffer"))?;
        Ok(IntStaging { raw, wide, ty })
    }

    /// Copies `w` (one batch, at most the buffers' length, of the type they were made for) in
    /// and widens it on `stream`; returns the device address of its int64 weights and their kind.
    pub(crate) fn upload(
        &mut self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        w: &IntWeights<'_>,
    ) -> Result<(u64, WeightKind)> {
        let (ty, n) = (w.int_type(), w.len());
        assert!(
            ty == self.ty && n <= self.wide.len(),
            "IntStaging::upload: a batch of another type or longer than its buffers"
        );
        let wide_ptr = self.wide.device_ptr(stream).0;
        if ty.bytes() == 8 {
            // int64, or uint64 as its two's-complement bits: copied straight into the int64 buffer.
            let mut view = self.wide.slice_mut(0..n);
            let as_i64: &[i64] = match *w {
                IntWeights::I64(v) => v,
                // SAFETY: u64 and i64 have one size and alignment and every bit pattern is valid.
                IntWeights::U64(v) => unsafe {
                    std::slice::from_raw_parts(v.as_ptr().cast::<i64>(), v.len())
                },
                _ => unreachable!("8-byte integer weights are int64 or uint64"),
            };
            stream
                .memcpy_htod(as_i64, &mut view)
                .map_err(cuda_err("copying weights"))?;
            return Ok((wide_ptr, WeightKind::I64));
        }
        let bytes = w.as_bytes();
        let mut view = self.raw.slice_mut(0..bytes.len());
        stream
            .memcpy_htod(bytes, &mut view)
            .map_err(cuda_err("copying weights"))?;
        let raw_ptr = self.raw.device_ptr(stream).0;
        // SAFETY: `raw` holds the batch's n weights of `ty` (copied above, on the same stream) and
        // `wide` room for n int64; both live in `self`, which the caller keeps until the stream
        // has run the batch's kernels.
        unsafe { widen_on_device(gpu, stream, raw_ptr, ty, n, wide_ptr)? };
        Ok((wide_ptr, WeightKind::I64))
    }
}
