//! Events between the partition passes for `SMEMKIT_PROFILE_PARTITION` (kernel tuning only).

use super::*;

/// Events between the partition passes, for `SMEMKIT_PROFILE_PARTITION` (kernel tuning only).
pub(super) struct PassProfile {
    pub(super) events: Vec<cudarc::driver::CudaEvent>,
}

impl PassProfile {
    const PASSES: [&'static str; 4] = ["count", "scan", "scatter", "bins"];

    pub(super) fn from_env(gpu: &Gpu) -> Result<Option<PassProfile>> {
        if !crate::config::profile_partition() {
            return Ok(None);
        }
        let events = (0..=Self::PASSES.len())
            .map(|_| {
                gpu.ctx
                    .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(cuda_err("creating a profiling event"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(PassProfile { events }))
    }

    pub(super) fn record(&self, i: usize, stream: &cudarc::driver::CudaStream) -> Result<()> {
        self.events[i]
            .record(stream)
            .map_err(cuda_err("recording a profiling event"))
    }

    pub(super) fn report(&self, samples: usize) -> Result<()> {
        let last = self.events.last().expect("one event per pass boundary");
        last.synchronize()
            .map_err(cuda_err("waiting for the partition passes"))?;
        let mut line = format!("partition passes, {samples} samples:");
        for (i, name) in Self::PASSES.iter().enumerate() {
            let ms = self.events[i]
                .elapsed_ms(&self.events[i + 1])
                .map_err(cuda_err("reading a profiling event"))?;
            line += &format!(" {name} {ms:.3} ms");
        }
        eprintln!("{line}");
        Ok(())
    }
}
