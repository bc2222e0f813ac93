//! Device scratch kept between calls. The stream-ordered pool gives freed memory back to the
//! driver at each synchronisation (its release threshold is 0 unless a framework raised it), so a
//! scratch buffer of a few MB allocated on every call is mapped anew each time: about 0.1 ms at
//! 2-16 MB and 0.2 ms at 64 MB on an H100 (bench/NOTES.md, session 19), a third of a pass over
//! 2^28 float32 samples. The estimators' per-call buffers (the draws, the windows' copy) take the
//! device's one kept buffer instead, and give it back when done.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaSlice, CudaStream};

use crate::error::Result;
use crate::gpu::device::{cuda_err, Gpu};

/// The largest buffer a device keeps (larger ones are allocated and freed per call).
pub(crate) const KEPT_MAX: usize = 256 << 20;

/// The buffer a device keeps between calls (none at first).
#[derive(Default)]
pub(crate) struct Kept(Mutex<Option<CudaSlice<u8>>>);

impl Kept {
    fn lock(&self) -> MutexGuard<'_, Option<CudaSlice<u8>>> {
        // A panic while holding the lock leaves at worst a buffer to drop: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Scratch device memory for work on one stream: the device's kept buffer (given back when
/// dropped) or a buffer of its own.
pub(crate) struct Scratch {
    slice: Option<CudaSlice<u8>>,
    /// Where a kept buffer goes back, and the stream whose work must end first.
    home: Option<(Arc<Gpu>, Arc<CudaStream>)>,
}

impl Scratch {
    /// A buffer of the caller's, freed when dropped.
    pub(crate) fn plain(slice: CudaSlice<u8>) -> Scratch {
        Scratch {
            slice: Some(slice),
            home: None,
        }
    }

    /// At least `bytes` of device memory (contents unset) for work on `stream`: the device's kept
    /// buffer where it is large enough, else a new one (up to [`KEPT_MAX`] kept after this use).
    pub(crate) fn take(gpu: &Arc<Gpu>, stream: &Arc<CudaStream>, bytes: usize) -> Result<Scratch> {
        let bytes = bytes.max(8);
        let held = gpu.kept.lock().take();
        if let Some(slice) = held.filter(|s| s.len() >= bytes) {
            return Ok(Scratch {
                slice: Some(slice),
                home: Some((gpu.clone(), stream.clone())),
            });
        }
        if bytes > KEPT_MAX {
            // SAFETY: scratch: its users write before they read.
            let slice = unsafe { stream.alloc::<u8>(bytes) }
                .map_err(cuda_err("allocating the estimator's scratch"))?;
            return Ok(Scratch::plain(slice));
        }
        // On the library's stream, so that it outlives any caller's stream, and finished before
        // `stream` first uses it.
        // SAFETY: scratch: its users write before they read.
        let slice = unsafe { gpu.stream.alloc::<u8>(bytes) }
            .map_err(cuda_err("allocating the estimator's scratch"))?;
        gpu.stream
            .synchronize()
            .map_err(cuda_err("allocating the estimator's scratch"))?;
        Ok(Scratch {
            slice: Some(slice),
            home: Some((gpu.clone(), stream.clone())),
        })
    }

    pub(crate) fn slice(&self) -> &CudaSlice<u8> {
        self.slice.as_ref().expect("held until dropped")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let (Some(slice), Some((gpu, stream))) = (self.slice.take(), self.home.take()) else {
            return;
        };
        // Kept only once the work that used it is done; otherwise freed on the library's stream.
        if stream.synchronize().is_ok() {
            let mut kept = gpu.kept.lock();
            if !matches!(kept.as_ref(), Some(k) if k.len() >= slice.len()) {
                *kept = Some(slice);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use cudarc::driver::DevicePtr;

    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_a_kept_buffer_serves_the_next_call_that_it_fits() {
        let gpu = crate::gpu::gpu().unwrap();
        let stream = gpu.ctx.new_stream().unwrap();
        let at = |s: &Scratch| s.slice().device_ptr(&stream).0;
        let first = Scratch::take(&gpu, &stream, 1 << 20).unwrap();
        let first_at = at(&first);
        drop(first);
        // Smaller: the same buffer; larger: a new one, which is kept in its place.
        let again = Scratch::take(&gpu, &stream, 1000).unwrap();
        assert_eq!(at(&again), first_at);
        assert!(again.slice().len() >= 1 << 20);
        let larger = Scratch::take(&gpu, &stream, 3 << 20).unwrap();
        assert!(larger.slice().len() >= 3 << 20);
        drop(again);
        let larger_at = at(&larger);
        drop(larger);
        assert_eq!(
            at(&Scratch::take(&gpu, &stream, 2 << 20).unwrap()),
            larger_at
        );
        // Beyond the most kept: the caller's own, never kept.
        let huge = Scratch::take(&gpu, &stream, KEPT_MAX + 1).unwrap();
        assert!(huge.home.is_none());
    }
}
