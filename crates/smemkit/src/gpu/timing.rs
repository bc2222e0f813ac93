//! Kernel timings: the one way every benchmark and autotuner of the library launches and times
//! repeated runs between CUDA events, and the median it reports.

use cudarc::driver::sys;

use crate::error::Result;
use crate::gpu::device::{cuda_err, Gpu};

/// Median of timings.
pub fn median(times: &[f32]) -> f32 {
    let mut t = times.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    if t.is_empty() {
        return f32::NAN;
    }
    t[t.len() / 2]
}

/// Milliseconds of each of `runs` calls of `launch` after `warmup` untimed ones, every call
/// between its own pair of CUDA events, all enqueued before one wait at the end (so that no host
/// work sits between a start event and its launch while the device idles).
pub fn time_launches(
    g: &Gpu,
    warmup: usize,
    runs: usize,
    launch: &dyn Fn() -> Result<()>,
) -> Result<Vec<f32>> {
    for _ in 0..warmup {
        launch()?;
    }
    let ev = || {
        g.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("creating an event"))
    };
    let mut pairs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (start, end) = (ev()?, ev()?);
        start
            .record(&g.stream)
            .map_err(cuda_err("recording an event"))?;
        launch()?;
        end.record(&g.stream)
            .map_err(cuda_err("recording an event"))?;
        pairs.push((start, end));
    }
    g.stream.synchronize().map_err(cuda_err(
        "waiting for timed runs (a kernel may have failed)",
    ))?;
    pairs
        .iter()
        .map(|(s, e)| s.elapsed_ms(e).map_err(cuda_err("reading an event")))
        .collect()
}
