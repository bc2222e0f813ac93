//! The skew probe: a sample of the input decides, on the device, between the planned strategy and
//! global atomics.

use super::*;

/// `auto`'s look at the data before the partition or sliced passes (see `hist_verdict` in the
/// kernels): where one bin holds at least `threshold` of the probed samples, the global plan runs
/// instead. The verdict stays on the device; the gated kernels read it.
pub(super) struct SkewProbe {
    pub(super) func: cudarc::driver::CudaFunction,
    /// The verdict (1: global) and the commonest bin's count among the probed samples.
    pub(super) verdict: CudaSlice<u32>,
    pub(super) global: Box<Prepared>,
    /// Before slices of 4-bit counters: the slices of 8-bit counters that run where one slice is
    /// crowded (`plan::crowded_alternative`, verdict 2).
    pub(super) crowded: Option<Box<Prepared>>,
    /// Before slices of cheap bins: the spill plan that runs where its best window holds at least
    /// the share beside it of the probed samples (`plan::spill_share_for_sliced`, verdict 3).
    pub(super) spill: Option<(Box<Prepared>, f64)>,
    pub(super) threshold: f64,
    /// Before slices of 4-bit counters: the bins of one slice and the busiest slice's share from
    /// which the crowded alternative (or global, where there is none) runs instead; `(0, 0.0)`
    /// otherwise (8-bit counters measured about as fast on crowded data as on spread data).
    pub(super) slice: (u32, f64),
    /// The plan the probe may replace (for reports).
    pub(super) planned: Strategy,
    /// Whether a verdict was ever launched (reports read it back only then).
    pub(super) probed: std::sync::atomic::AtomicBool,
}

// The verdict's hash table (VERDICT_SLOTS in the kernels) holds twice the probed samples.
const _: () = assert!(plan::SKEW_PROBE_SAMPLES <= 2048);

impl SkewProbe {
    pub(super) fn new(
        gpu: &Arc<Gpu>,
        what: Counting<'_>,
        samples: Option<usize>,
        threshold: f64,
        planned: &Plan,
        crowded: Option<StrategyChoice>,
        spill_share: Option<f64>,
    ) -> Result<SkewProbe> {
        let (slice_bins, planned) = (planned.bins_per_block, planned.strategy);
        let (sample_type, binning) = (what.sample_type, what.binning);
        let func = gpu.function(
            &HISTOGRAM,
            &sample_defines(sample_type),
            &format!("hist_verdict_{}", mode_name(binning, sample_type)),
        )?;
        let verdict = gpu
            .stream
            .alloc_zeros::<u32>(2)
            .map_err(cuda_err("allocating the skew verdict"))?;
        let global = Prepared::sized(gpu.clone(), what, StrategyChoice::Global, samples)?;
        let crowded = crowded
            .map(|choice| Prepared::sized(gpu.clone(), what, choice, samples).map(Box::new))
            .transpose()?;
        let spill = spill_share
            .map(|share| {
                Prepared::sized(gpu.clone(), what, StrategyChoice::Spill(None), samples)
                    .map(|p| (Box::new(p), share))
            })
            .transpose()?;
        Ok(SkewProbe {
            func,
            verdict,
            global: Box::new(global),
            spill,
            slice: match planned {
                Strategy::Sliced { slices, bits: 4 } => (
                    slice_bins as u32,
                    plan::crowded_slice_share(slices, crowded.is_some()),
                ),
                _ => (0, 0.0),
            },
            crowded,
            threshold,
            planned,
            probed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Enqueues the verdict on `stream` and returns its device address (for the gates).
    ///
    /// # Safety
    /// `input` must be a device allocation of this context holding `n` (at least 1) samples of
    /// the prepared type.
    pub(super) unsafe fn launch_verdict(
        &self,
        p: &Prepared,
        stream: &Arc<CudaStream>,
        input: u64,
        n: usize,
    ) -> Result<u64> {
        let probes = plan::SKEW_PROBE_SAMPLES as u32;
        let verdict = self.verdict.device_ptr(stream).0;
        let (mut in_ptr, mut n64, mut params, mut count) = (input, n as u64, p.params, probes);
        let (mut threshold, mut v_ptr) = (self.threshold, verdict);
        let (mut slice_bins, mut slice_threshold) = self.slice;
        let mut crowded: u32 = if self.crowded.is_some() { 2 } else { 1 };
        // Pairs of probes in one bin count as crowding only where the alternative takes them.
        let mut pair_threshold: u32 = if self.crowded.is_some() {
            plan::crowded_probe_pairs(self.planned_slices())
        } else {
            0
        };
        let (mut spill_len, mut spill_share) = match &self.spill {
            Some((p, share)) => (p.plan.bins_per_block as u32, *share),
            None => (0u32, 0.0f64),
        };
        let mut args: [*mut c_void; 12] = [
            &mut in_ptr as *mut u64 as *mut c_void,
            &mut n64 as *mut u64 as *mut c_void,
            &mut params as *mut KernelBinParams as *mut c_void,
            &mut count as *mut u32 as *mut c_void,
            &mut threshold as *mut f64 as *mut c_void,
            &mut slice_bins as *mut u32 as *mut c_void,
            &mut slice_threshold as *mut f64 as *mut c_void,
            &mut crowded as *mut u32 as *mut c_void,
            &mut pair_threshold as *mut u32 as *mut c_void,
            &mut spill_len as *mut u32 as *mut c_void,
            &mut spill_share as *mut f64 as *mut c_void,
            &mut v_ptr as *mut u64 as *mut c_void,
        ];
        let shape = LaunchShape {
            grid: 1,
            block: 1024,
            shared_bytes: 0,
            cluster: 1,
        };
        // SAFETY: hist_verdict_*(in, n, BinParams, probes, threshold, slice_bins,
        // slice_threshold, crowded, pair_threshold, spill_len, spill_threshold, verdict): `in`
        // holds n samples (the caller's guarantee), `verdict` 2 u32.
        unsafe { launch::launch(&self.func, stream, &shape, &mut args)? };
        self.probed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(verdict)
    }

    /// The planned plan's slice count (0 for a plan that is not sliced).
    fn planned_slices(&self) -> u32 {
        match self.planned {
            Strategy::Sliced { slices, .. } => slices,
            _ => 0,
        }
    }

    /// For reports: reads the last verdict back (waiting for the GPU), if any was launched.
    pub(super) fn describe(&self, gpu: &Gpu) -> String {
        let seen = if self.probed.load(std::sync::atomic::Ordering::Relaxed) {
            match gpu
                .ctx
                .synchronize()
                .and_then(|_| gpu.stream.clone_dtoh(&self.verdict))
            {
                Ok(v) => format!(
                    "; last probe: commonest bin {:.1}% -> {}",
                    v[1] as f64 * 100.0 / plan::SKEW_PROBE_SAMPLES as f64,
                    match (v[0], &self.crowded) {
                        (1, _) => "global".to_string(),
                        (3, _) => self
                            .spill
                            .as_ref()
                            .map(|(p, _)| p.plan.strategy.name())
                            .unwrap_or_default(),
                        (2, Some(c)) => c.plan.strategy.name(),
                        _ => self.planned.name(),
                    }
                ),
                Err(e) => format!("; last probe unreadable: {e:?}"),
            }
        } else {
            String::new()
        };
        let crowded = match (self.slice.0 > 0, &self.crowded) {
            (true, Some(c)) => format!(
                "; {} where one slice holds >= {:.0}% or >= {} pairs share a bin",
                c.plan.strategy.name(),
                self.slice.1 * 100.0,
                plan::crowded_probe_pairs(self.planned_slices())
            ),
            (true, None) => format!(" or one slice >= {:.0}%", self.slice.1 * 100.0),
            (false, _) => String::new(),
        };
        let spill = match &self.spill {
            Some((p, share)) => format!(
                "; {} where its window holds >= {:.0}%",
                p.plan.strategy,
                share * 100.0
            ),
            None => String::new(),
        };
        format!(
            ", skew probe (global where one bin holds >= {:.0}%{crowded}{spill} of {} samples{seen})",
            self.threshold * 100.0,
            plan::SKEW_PROBE_SAMPLES
        )
    }
}
