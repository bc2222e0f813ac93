//! The one-call entry points of several GPUs: open the device set, cut the input into shards, run
//! them through a [`MultiPrepared`] and read the sum back.

use super::*;

/// Opens the GPUs of a device set.
pub fn open(devices: &[usize]) -> Result<Vec<Arc<Gpu>>> {
    devices.iter().map(|&d| gpu_at(d)).collect()
}

/// Histogram of host-resident samples on several GPUs: one even shard per GPU.
pub fn histogram(samples: Samples<'_>, devices: &[usize], job: &Job<'_>) -> Result<EngineOutput> {
    let ranges = shards(samples.len(), devices.len());
    histogram_shards(samples, devices, &ranges, job)
}

/// [`histogram`] with the shards given (`ranges[i]` on `devices[i]`; uneven and empty shards
/// allowed, as tests need).
pub fn histogram_shards(
    samples: Samples<'_>,
    devices: &[usize],
    ranges: &[Range<usize>],
    job: &Job<'_>,
) -> Result<EngineOutput> {
    let Job {
        weights,
        binning,
        policy,
        ..
    } = *job;
    let (choice, opts, progress) = (&job.strategy, &job.stream, job.progress);
    let wkind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
        Some(Weights::Int(_)) => return Err(crate::histogram::int_sums::unwidened()),
    };
    let gpus = open(devices)?;
    let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
    let mut m = MultiPrepared::for_shards(
        &gpus,
        samples.sample_type(),
        wkind,
        binning,
        policy,
        *choice,
        Some(&lens),
    )?;
    m.run_host(samples, weights, ranges, opts, progress)
}
