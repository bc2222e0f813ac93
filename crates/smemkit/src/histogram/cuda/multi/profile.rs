//! Timestamps of the multi-GPU phases for `SMEMKIT_PROFILE_MULTI` (tuning only).

use super::*;

/// Which of a GPU's two profiling events.
#[derive(Clone, Copy)]
pub(super) enum Stamp {
    /// Before the counters are zeroed.
    Start,
    /// After the kernels (before the all-reduce).
    Kernels,
}

/// `SMEMKIT_PROFILE_MULTI=1`: one line on stderr per run (`accumulate_*`, `reduce`, and the read
/// back where the run reads back) with the host's view of each phase, in microseconds since the
/// run began: counters zeroed and kernels enqueued, the all-reduce enqueued, NCCL's thread done
/// launching it, each GPU's kernels seen done (its event, polled while waiting), the all-reduce
/// seen done, the read back; and for device-resident runs each GPU's own time from zeroing to the
/// end of its kernels (CUDA events). Events are made once, here; without the variable nothing is
/// recorded and nothing is printed.
pub(super) struct Profile {
    /// Per GPU: (ordinal, start event, kernels-done event), both timing.
    pub(super) events: Vec<(usize, CudaEvent, CudaEvent)>,
    pub(super) what: &'static str,
    pub(super) t0: Option<Instant>,
    pub(super) marks: Vec<(String, Duration)>,
    /// Whether the events were recorded in this run (device-resident runs).
    pub(super) recorded: bool,
    /// Per GPU: its kernels were seen done.
    pub(super) seen: Vec<bool>,
    /// The reduction finished (the events are complete).
    pub(super) finished: bool,
}

impl Profile {
    pub(super) fn wanted() -> bool {
        crate::config::profile_multi()
    }

    pub(super) fn new(gpus: &[Arc<Gpu>]) -> Result<Profile> {
        let event = |g: &Gpu| {
            g.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("creating a profiling event"))
        };
        let events = gpus
            .iter()
            .map(|g| Ok((g.ordinal, event(g)?, event(g)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Profile {
            seen: vec![false; events.len()],
            events,
            what: "",
            t0: None,
            marks: Vec::new(),
            recorded: false,
            finished: false,
        })
    }

    /// A new run (the previous one's line is written first if it was not yet).
    pub(super) fn begin(&mut self, what: &'static str) {
        self.report();
        self.what = what;
        self.t0 = Some(Instant::now());
        self.marks.clear();
        self.seen.iter_mut().for_each(|s| *s = false);
        self.recorded = false;
        self.finished = false;
    }

    pub(super) fn record(&self, i: usize, stamp: Stamp, gpu: &Gpu) -> Result<()> {
        let (_, start, kernels) = &self.events[i];
        let e = match stamp {
            Stamp::Start => start,
            Stamp::Kernels => kernels,
        };
        e.record(&gpu.stream)
            .map_err(cuda_err("recording a profiling event"))
    }

    pub(super) fn mark_at(&mut self, label: String, at: Instant) {
        if let Some(t0) = self.t0 {
            self.marks.push((label, at.saturating_duration_since(t0)));
        }
    }

    pub(super) fn mark(&mut self, label: String) {
        self.mark_at(label, Instant::now());
    }

    /// Notes the GPUs whose kernels-done event has completed since the last poll.
    pub(super) fn poll_kernels(&mut self, parts: &[DeviceEngine]) {
        if !self.recorded || self.t0.is_none() {
            return;
        }
        let now = Instant::now();
        let mut done = Vec::new();
        for ((seen, (ordinal, _, kernels)), part) in
            self.seen.iter_mut().zip(&self.events).zip(parts)
        {
            if !*seen && part.gpu().bind().is_ok() && kernels.is_complete() {
                *seen = true;
                done.push(*ordinal);
            }
        }
        for ordinal in done {
            self.mark_at(format!("GPU {ordinal} kernels done"), now);
        }
    }

    /// Writes the run's line to stderr, once.
    pub(super) fn report(&mut self) {
        if self.t0.take().is_none() {
            return;
        }
        self.marks.sort_by_key(|(_, d)| *d);
        let phases: Vec<String> = self
            .marks
            .iter()
            .map(|(label, d)| format!("{label} {:.0} us", d.as_secs_f64() * 1e6))
            .collect();
        let mut line = format!(
            "smemkit profile: {} on {} GPU(s): {}",
            self.what,
            self.events.len(),
            phases.join(", ")
        );
        if !self.finished {
            line.push_str(" (the run did not finish)");
        } else if self.recorded {
            let gpu: Vec<String> = self
                .events
                .iter()
                .map(
                    |(ordinal, start, kernels)| match start.elapsed_ms(kernels) {
                        Ok(ms) => format!("GPU {ordinal} {ms:.3} ms"),
                        Err(e) => format!("GPU {ordinal} ? ({e:?})"),
                    },
                )
                .collect();
            line.push_str(&format!(
                "; on the GPUs, zeroing and kernels: {}",
                gpu.join(", ")
            ));
        }
        eprintln!("{line}");
    }
}
