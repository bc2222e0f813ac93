//! Host samples and weights copied to the device a batch at a time, for the layers that feed host
//! slices to the device engine ([`super::device_engine::DeviceEngine`]): the host-slice histogram
//! and the window passes of bins sharded over ranks. Both copy through the same buffers, so that
//! the engine's run, not the layer, is what differs between them. Integer weights are copied in
//! their own type and widened to int64 on the device ([`super::int_weights`]) where the layer asks
//! for it ([`HostStage::widening`]).

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};

use super::int_weights::IntStaging;
use super::prepared::WeightKind;
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, Gpu};
use crate::sample::Weights;

/// Calls `$body` with `$s` bound to the samples as the kernels read them: a typed slice, 16-bit
/// floats as their u16 codes (see `half_table`).
macro_rules! with_codes {
    ($samples:expr, $s:ident => $body:expr) => {{
        use half::slice::HalfFloatSliceExt;
        use $crate::sample::Samples;
        match $samples {
            Samples::F16(x) => {
                let $s: &[u16] = x.reinterpret_cast();
                $body
            }
            Samples::BF16(x) => {
                let $s: &[u16] = x.reinterpret_cast();
                $body
            }
            Samples::U8($s) => $body,
            Samples::U16($s) => $body,
            Samples::U32($s) => $body,
            Samples::U64($s) => $body,
            Samples::I8($s) => $body,
            Samples::I16($s) => $body,
            Samples::I32($s) => $body,
            Samples::I64($s) => $body,
            Samples::F32($s) => $body,
            Samples::F64($s) => $body,
        }
    }};
}
pub(crate) use with_codes;

/// Device buffers for one batch of samples of `T` and their weights.
pub(crate) struct HostStage<'w, T> {
    samples: CudaSlice<T>,
    w32: CudaSlice<f32>,
    w64: CudaSlice<f64>,
    ints: Option<(Arc<Gpu>, IntStaging)>,
    weights: Option<Weights<'w>>,
    batch: usize,
}

/// Where a staged batch lies: what [`super::device_histogram::RawBuffers`] and the engine's
/// `weights` argument take.
pub(crate) struct Staged {
    /// The batch's first sample.
    pub input: u64,
    /// Its first weight, 0 without weights.
    pub weights: u64,
    /// The weights' length and kind, `None` without weights.
    pub kind: Option<(usize, WeightKind)>,
}

impl<'w, T: DeviceRepr> HostStage<'w, T> {
    /// Buffers on `stream` for batches of up to `batch` (at least 1) of `len` samples with
    /// `weights`, which must be as many (or one clear error).
    pub(crate) fn new(
        stream: &Arc<CudaStream>,
        len: usize,
        weights: Option<Weights<'w>>,
        batch: usize,
    ) -> Result<HostStage<'w, T>> {
        Self::build(None, stream, len, weights, batch)
    }

    /// As [`HostStage::new`], and integer weights too, widened to int64 on `gpu`.
    pub(crate) fn widening(
        gpu: &Arc<Gpu>,
        stream: &Arc<CudaStream>,
        len: usize,
        weights: Option<Weights<'w>>,
        batch: usize,
    ) -> Result<HostStage<'w, T>> {
        Self::build(Some(gpu), stream, len, weights, batch)
    }

    fn build(
        gpu: Option<&Arc<Gpu>>,
        stream: &Arc<CudaStream>,
        len: usize,
        weights: Option<Weights<'w>>,
        batch: usize,
    ) -> Result<HostStage<'w, T>> {
        if let Some(w) = weights {
            if w.len() != len {
                return Err(Error::WeightsLength {
                    samples: len,
                    weights: w.len(),
                });
            }
        }
        let kind = match weights {
            None => WeightKind::None,
            Some(Weights::F32(_)) => WeightKind::F32,
            Some(Weights::F64(_)) => WeightKind::F64,
            Some(Weights::Int(_)) if gpu.is_some() => WeightKind::I64,
            Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
        };
        let batch = batch.max(1);
        // SAFETY: uninitialised device memory; every batch is copied in before a kernel reads it.
        let samples = unsafe { stream.alloc::<T>(batch) }
            .map_err(cuda_err("allocating the sample buffer"))?;
        let wlen = |k| if kind == k { batch } else { 0 };
        let w32 = stream
            .alloc_zeros::<f32>(wlen(WeightKind::F32))
            .map_err(cuda_err("allocating the weight buffer"))?;
        let w64 = stream
            .alloc_zeros::<f64>(wlen(WeightKind::F64))
            .map_err(cuda_err("allocating the weight buffer"))?;
        let ints = match (weights, gpu) {
            (Some(Weights::Int(w)), Some(gpu)) => {
                Some((gpu.clone(), IntStaging::new(stream, w.int_type(), batch)?))
            }
            _ => None,
        };
        Ok(HostStage {
            samples,
            w32,
            w64,
            ints,
            weights,
            batch,
        })
    }

    /// The most samples one batch holds.
    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    /// Enqueues on `stream` the copies of `samples[at]` (at most a batch) and their weights into
    /// the buffers. A kernel still reading the previous batch must be ordered before the copy:
    /// on the same stream it is.
    pub(crate) fn load(
        &mut self,
        stream: &Arc<CudaStream>,
        samples: &[T],
        at: Range<usize>,
    ) -> Result<Staged> {
        let len = at.len();
        if len > self.batch {
            return Err(Error::InvalidArgument(format!(
                "internal: a batch of {len} samples into a buffer of {}",
                self.batch
            )));
        }
        stream
            .memcpy_htod(&samples[at.clone()], &mut self.samples.slice_mut(0..len))
            .map_err(cuda_err("copying samples to the device"))?;
        let (weights, kind) = match self.weights {
            None => (0, None),
            Some(Weights::F32(w)) => {
                stream
                    .memcpy_htod(&w[at], &mut self.w32.slice_mut(0..len))
                    .map_err(cuda_err("copying weights"))?;
                (self.w32.device_ptr(stream).0, Some((len, WeightKind::F32)))
            }
            Some(Weights::F64(w)) => {
                stream
                    .memcpy_htod(&w[at], &mut self.w64.slice_mut(0..len))
                    .map_err(cuda_err("copying weights"))?;
                (self.w64.device_ptr(stream).0, Some((len, WeightKind::F64)))
            }
            Some(Weights::Int(w)) => {
                let (gpu, staging) = self
                    .ints
                    .as_mut()
                    .ok_or_else(crate::histogram::int_sums::unwidened)?;
                let (ptr, kind) = staging.upload(gpu, stream, &w.slice(at))?;
                (ptr, Some((len, kind)))
            }
        };
        Ok(Staged {
            input: self.samples.device_ptr(stream).0,
            weights,
            kind,
        })
    }
}
