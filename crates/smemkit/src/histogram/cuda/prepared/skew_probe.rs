//! The skew probe: a sample of the input decides between the planned strategy and global atomics.

use super::*;

/// `auto`'s look at the data before the partition passes (see `hist_probe` in histogram.cu):
/// where one bin holds at least `threshold` of the probed samples, the global plan runs instead.
pub(super) struct SkewProbe {
    pub(super) func: cudarc::driver::CudaFunction,
    pub(super) bins: std::sync::Mutex<CudaSlice<u32>>,
    pub(super) global: Box<Prepared>,
    pub(super) threshold: f64,
    /// The plan the probe may replace (for reports).
    pub(super) planned: Strategy,
    /// The last probe's share of the commonest bin, as f64 bits (for reports); NaN before any.
    pub(super) last_share: std::sync::atomic::AtomicU64,
}

impl SkewProbe {
    pub(super) fn new(
        gpu: &Arc<Gpu>,
        what: Counting<'_>,
        samples: Option<usize>,
        threshold: f64,
        planned: Strategy,
    ) -> Result<SkewProbe> {
        let (sample_type, binning) = (what.sample_type, what.binning);
        let func = gpu.function(
            &HISTOGRAM,
            &sample_defines(sample_type),
            &format!("hist_probe_{}", mode_name(binning)),
        )?;
        let bins = gpu
            .stream
            .alloc_zeros::<u32>(plan::SKEW_PROBE_SAMPLES)
            .map_err(cuda_err("allocating the skew probe"))?;
        let global = Prepared::sized(gpu.clone(), what, StrategyChoice::Global, samples)?;
        Ok(SkewProbe {
            func,
            bins: std::sync::Mutex::new(bins),
            global: Box::new(global),
            threshold,
            planned,
            last_share: std::sync::atomic::AtomicU64::new(f64::NAN.to_bits()),
        })
    }

    /// Whether the commonest bin of the probed samples reaches the threshold. Waits for the stream
    /// (the probe's bins come back to the host).
    ///
    /// # Safety
    /// `input` must be a device allocation of this context holding `n` samples of the prepared
    /// type.
    pub(super) unsafe fn is_hot(&self, p: &Prepared, input: u64, n: usize) -> Result<bool> {
        let stream = &p.gpu.stream;
        let guard = self.bins.lock().expect("skew probe buffer");
        let probes = plan::SKEW_PROBE_SAMPLES as u32;
        let (mut in_ptr, mut n64, mut params, mut count) = (input, n as u64, p.params, probes);
        let mut bins_ptr = guard.device_ptr(stream).0;
        let mut args: [*mut c_void; 5] = [
            &mut in_ptr as *mut u64 as *mut c_void,
            &mut n64 as *mut u64 as *mut c_void,
            &mut params as *mut KernelBinParams as *mut c_void,
            &mut count as *mut u32 as *mut c_void,
            &mut bins_ptr as *mut u64 as *mut c_void,
        ];
        let shape = LaunchShape {
            grid: probes.div_ceil(256),
            block: 256,
            shared_bytes: 0,
            cluster: 1,
        };
        // SAFETY: hist_probe_*(in, n, BinParams, probes, bins): `in` holds n samples (the
        // caller's guarantee), `bins` SKEW_PROBE_SAMPLES u32.
        unsafe { launch::launch(&self.func, stream, &shape, &mut args)? };
        let bins = stream.clone_dtoh(&*guard).map_err(cuda_err(
            "reading the skew probe back (the probe may have failed)",
        ))?;
        let share = plan::commonest_share(&bins);
        self.last_share
            .store(share.to_bits(), std::sync::atomic::Ordering::Relaxed);
        Ok(share >= self.threshold)
    }

    pub(super) fn describe(&self) -> String {
        let last = f64::from_bits(self.last_share.load(std::sync::atomic::Ordering::Relaxed));
        let seen = if last.is_nan() {
            String::new()
        } else {
            format!(
                "; last probe: commonest bin {:.1}% -> {}",
                last * 100.0,
                if last >= self.threshold {
                    "global".to_string()
                } else {
                    self.planned.name()
                }
            )
        };
        format!(
            ", skew probe (global where one bin holds >= {:.0}% of {} samples{seen})",
            self.threshold * 100.0,
            plan::SKEW_PROBE_SAMPLES
        )
    }
}
