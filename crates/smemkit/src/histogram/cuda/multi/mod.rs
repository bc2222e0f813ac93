//! Several GPUs: an input split into one shard per GPU, each GPU running its own compiled plan
//! into its own device counters (a thread per GPU), then one NCCL all-reduce that sums the
//! counters (u64 counts and the three tallies in one buffer, or f64 sums and the tallies) across
//! the GPUs, and the sum read back from the first.
//!
//! Host-resident shards go through each GPU's streaming pipeline ([`Streamer::run_into`]), so every
//! GPU's copies overlap its kernels; device-resident shards (the benchmark's) are launched where
//! they lie. The same [`MultiPrepared`] serves several processes (`crate::histogram::cuda::ranks`): there each
//! process holds its GPUs' communicators of a larger world.
//!
//! Without the `nccl` cargo feature a set of one GPU still works (there is nothing to reduce);
//! more than one is a clear error.
//!
//! `SMEMKIT_PROFILE_MULTI=1` writes one line per run to stderr: when (host clock, microseconds
//! from the start of the run) the kernels were enqueued, the all-reduce enqueued and launched by
//! NCCL, each GPU's kernels seen done, the all-reduce seen done and the counters read back, and
//! each GPU's own time for its kernels (CUDA events, device-resident runs).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice, DevicePtr};

use super::device_samples::DeviceSamples;
use super::prepared::{Counting, EngineOutput, Prepared, WeightKind};
use super::stream::{StreamInput, StreamOptions, Streamer};
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, device_count, gpu_at, Gpu};
use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::job::Job;
use crate::histogram::plan::StrategyChoice;
use crate::histogram::result::{Counts, Tallies};
use crate::sample::{SampleType, Samples, Weights};

#[cfg(feature = "nccl")]
use crate::gpu::nccl::{self, Communicator, Elem, SumBuffer};

mod device_set;
pub use device_set::*;
mod accum;
use accum::*;
mod profile;
use profile::*;
#[cfg(test)]
mod tests;

/// Says whether a peer process has failed (its message): stops waits early.
pub type Watchdog = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// A histogram ready to run on several GPUs: one [`Prepared`] plan, counters and (lazily) one
/// streaming pipeline per GPU, and the NCCL communicators that sum the counters.
pub struct MultiPrepared {
    /// One prepared histogram per GPU.
    pub parts: Vec<Prepared>,
    accums: Vec<Accum>,
    streamers: Vec<Option<Streamer>>,
    #[cfg(feature = "nccl")]
    comms: Vec<Communicator>,
    /// Ranks in the whole communicator (this process's GPUs, or every process's).
    world: usize,
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    watchdog: Option<Watchdog>,
    nbins: usize,
    weights: WeightKind,
    /// `SMEMKIT_PROFILE_MULTI`: where each call's time goes, on stderr.
    profile: Option<Profile>,
}

fn without_nccl() -> Error {
    Error::MultiGpu(
        "more than one GPU needs NCCL, and this smemkit was built without it (rebuild with \
         `--features nccl`)"
            .into(),
    )
}

impl MultiPrepared {
    /// Compiles and plans the histogram on every GPU of `gpus` (in parallel) and starts one NCCL
    /// communicator over them (none for a single GPU). Each GPU plans as for a large input; see
    /// [`MultiPrepared::for_shards`].
    pub fn new(
        gpus: &[Arc<Gpu>],
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        choice: StrategyChoice,
    ) -> Result<MultiPrepared> {
        Self::for_shards(gpus, sample_type, weights, binning, policy, choice, None)
    }

    /// [`MultiPrepared::new`], each GPU planned for its shard when `shard_lens` (one length per
    /// GPU) is given: a tiny shard gets a grid it can keep busy and, below one sample per counter,
    /// the global strategy (`crate::histogram::plan`).
    pub fn for_shards(
        gpus: &[Arc<Gpu>],
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        choice: StrategyChoice,
        shard_lens: Option<&[usize]>,
    ) -> Result<MultiPrepared> {
        if gpus.is_empty() {
            return Err(Error::InvalidArgument("an empty set of GPUs".into()));
        }
        if gpus.len() > 1 && !cfg!(feature = "nccl") {
            return Err(without_nccl());
        }
        let mut m = Self::local(
            gpus,
            sample_type,
            weights,
            binning,
            policy,
            choice,
            shard_lens,
        )?;
        #[cfg(feature = "nccl")]
        if gpus.len() > 1 {
            m.comms = Communicator::init_all(gpus, nccl::timeout()?)?;
        }
        m.world = gpus.len();
        Ok(m)
    }

    /// This process's GPUs of a communicator that spans several processes (`comms`: this
    /// process's ranks, one per GPU, all of the same world); `shard_lens` as in
    /// [`MultiPrepared::for_shards`].
    #[cfg(feature = "nccl")]
    pub fn with_communicators(
        comms: Vec<Communicator>,
        what: Counting<'_>,
        choice: StrategyChoice,
        shard_lens: Option<&[usize]>,
        watchdog: Option<Watchdog>,
    ) -> Result<MultiPrepared> {
        let Counting {
            sample_type,
            weights,
            binning,
            policy,
        } = what;
        let gpus: Vec<Arc<Gpu>> = comms.iter().map(|c| c.gpu.clone()).collect();
        let world = comms
            .first()
            .map(|c| c.world)
            .ok_or_else(|| Error::InvalidArgument("an empty set of communicators".into()))?;
        let mut m = Self::local(
            &gpus,
            sample_type,
            weights,
            binning,
            policy,
            choice,
            shard_lens,
        )?;
        m.world = world;
        m.comms = comms;
        m.watchdog = watchdog;
        Ok(m)
    }

    fn local(
        gpus: &[Arc<Gpu>],
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        choice: StrategyChoice,
        shard_lens: Option<&[usize]>,
    ) -> Result<MultiPrepared> {
        if let Some(lens) = shard_lens {
            if lens.len() != gpus.len() {
                return Err(Error::InvalidArgument(format!(
                    "{} shard lengths for {} GPUs",
                    lens.len(),
                    gpus.len()
                )));
            }
        }
        let nbins = binning.nbins();
        let weighted = weights != WeightKind::None;
        // Compiling is cached per process; loading modules and planning run per GPU at once.
        let parts = std::thread::scope(|s| {
            let handles: Vec<_> = gpus
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let samples = shard_lens.map(|l| l[i]);
                    s.spawn(move || -> Result<(Prepared, Accum)> {
                        let what = Counting {
                            sample_type,
                            weights,
                            binning,
                            policy,
                        };
                        // A `Prepared`, not the device engine that DeviceHistogram and the
                        // host-slice path share (device_engine.rs): each GPU's part also feeds
                        // `Streamer::run_into`, whose public API takes a `Prepared`. The
                        // launches are the same (`Prepared::enqueue`), adding into counters
                        // `Accum` clears.
                        let p = Prepared::sized(g.clone(), what, choice, samples)?;
                        let a = Accum::new(g, nbins, weighted)?;
                        Ok((p, a))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a GPU's preparing thread panicked"))
                .collect::<Result<Vec<_>>>()
        })?;
        let (parts, accums): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        Ok(MultiPrepared {
            streamers: parts.iter().map(|_| None).collect(),
            parts,
            accums,
            #[cfg(feature = "nccl")]
            comms: Vec::new(),
            world: gpus.len(),
            watchdog: None,
            nbins,
            weights,
            profile: if Profile::wanted() {
                Some(Profile::new(gpus)?)
            } else {
                None
            },
        })
    }

    /// GPUs of this process.
    pub fn devices(&self) -> usize {
        self.parts.len()
    }

    /// Ranks summed by the reduction (several processes: the whole world).
    pub fn world(&self) -> usize {
        self.world
    }

    fn gpu(&self, i: usize) -> &Arc<Gpu> {
        &self.parts[i].gpu
    }

    fn zero(&mut self) -> Result<()> {
        for (a, p) in self.accums.iter_mut().zip(&self.parts) {
            a.zero(&p.gpu)?;
        }
        Ok(())
    }

    /// Streams host-resident shards (`ranges[i]` of `samples` and `weights` on GPU `i`) into the
    /// counters, one thread per GPU; `progress` hears the bytes handed to all GPUs so far.
    pub fn accumulate_host(
        &mut self,
        samples: Samples<'_>,
        weights: Option<Weights<'_>>,
        ranges: &[Range<usize>],
        opts: &StreamOptions,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<()> {
        if let Some(r) = ranges
            .iter()
            .find(|r| r.start > r.end || r.end > samples.len())
        {
            return Err(Error::InvalidArgument(format!(
                "shard {r:?} is outside the {} samples",
                samples.len()
            )));
        }
        if let Some(w) = &weights {
            if w.len() != samples.len() {
                return Err(Error::WeightsLength {
                    samples: samples.len(),
                    weights: w.len(),
                });
            }
        }
        let inputs: Vec<StreamInput<'_>> = ranges
            .iter()
            .map(|r| StreamInput::Host(slice_samples(samples, r.clone())))
            .collect();
        let w: Vec<Option<Weights<'_>>> = ranges
            .iter()
            .map(|r| slice_weights(weights, r.clone()))
            .collect();
        self.accumulate_inputs(&inputs, &w, opts, progress)
    }

    /// Streams `inputs[i]` (pageable, page-locked or a file; with `weights[i]`) through GPU `i`'s
    /// pipeline into its counters, one thread per GPU.
    pub fn accumulate_inputs(
        &mut self,
        inputs: &[StreamInput<'_>],
        weights: &[Option<Weights<'_>>],
        opts: &StreamOptions,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<()> {
        if inputs.len() != self.devices() || weights.len() != self.devices() {
            return Err(Error::InvalidArgument(format!(
                "{} shards ({} weight lists) for {} GPUs",
                inputs.len(),
                weights.len(),
                self.devices()
            )));
        }
        if let Some(p) = &mut self.profile {
            p.begin("host-resident (streamed)");
        }
        self.zero()?;
        let done: Vec<AtomicU64> = inputs.iter().map(|_| AtomicU64::new(0)).collect();
        let wkind = self.weights;
        std::thread::scope(|s| {
            let handles: Vec<_> = self
                .parts
                .iter()
                .zip(&self.accums)
                .zip(self.streamers.iter_mut())
                .zip(inputs.iter().zip(weights))
                .enumerate()
                .map(|(i, (((part, accum), streamer), (input, w)))| {
                    let done = &done;
                    s.spawn(move || -> Result<()> {
                        if input.is_empty() {
                            return Ok(());
                        }
                        let gpu = part.gpu.clone();
                        gpu.bind()?;
                        if streamer.is_none() {
                            *streamer = Some(Streamer::new(
                                gpu.clone(),
                                input.sample_type(),
                                wkind,
                                input.len(),
                                opts,
                            )?);
                        }
                        let st = streamer.as_mut().expect("created above");
                        let report = |bytes: u64| {
                            done[i].store(bytes, Ordering::Relaxed);
                            if let Some(p) = progress {
                                p(done.iter().map(|d| d.load(Ordering::Relaxed)).sum());
                            }
                        };
                        let (out, tallies) = accum.ptrs(&gpu);
                        // SAFETY: `out` and `tallies` are this GPU's counters (nbins of the
                        // prepared kind, 3 tallies), alive as long as `self`.
                        unsafe { st.run_into(part, input, *w, out, tallies, Some(&report)) }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a GPU's thread panicked"))
                .collect::<Result<Vec<()>>>()
        })?;
        if let Some(p) = &mut self.profile {
            p.mark("streamed (every pipeline drained)".into());
        }
        Ok(())
    }

    /// Launches device-resident shards (`shards[i]` must live on GPU `i`) into fresh counters.
    pub fn accumulate_device(&mut self, shards: &[&DeviceSamples]) -> Result<()> {
        if shards.len() != self.devices() {
            return Err(Error::InvalidArgument(format!(
                "{} shards for {} GPUs",
                shards.len(),
                self.devices()
            )));
        }
        if self.weights != WeightKind::None {
            return Err(Error::NotImplemented(
                "weighted device-resident shards on several GPUs".into(),
            ));
        }
        if shards
            .iter()
            .zip(&self.parts)
            .any(|(s, p)| s.sample_type != p.sample_type)
        {
            return Err(Error::InvalidArgument(
                "device shards and kernels disagree on the sample type".into(),
            ));
        }
        if let Some(p) = &mut self.profile {
            p.begin("device-resident");
        }
        // Launches are asynchronous: one thread enqueues every GPU's zeroing and kernels (GPU 0's
        // start before GPU 1's are enqueued) and they run at once.
        for (i, shard) in shards.iter().enumerate() {
            let part = &self.parts[i];
            if let Some(p) = &self.profile {
                p.record(i, Stamp::Start, &part.gpu)?;
            }
            self.accums[i].zero(&part.gpu)?;
            if shard.n > 0 {
                let (out, tallies) = self.accums[i].ptrs(&part.gpu);
                // SAFETY: the caller puts shard i on GPU i; it holds `n` samples of the prepared
                // type; the counters are this GPU's and outlive the launches (the reduction waits
                // for them).
                unsafe { part.launch_device(shard.ptr(&part.gpu), shard.n, 0, out, tallies)? };
            }
            if let Some(p) = &self.profile {
                p.record(i, Stamp::Kernels, &part.gpu)?;
            }
        }
        if let Some(p) = &mut self.profile {
            p.recorded = true;
            p.mark("zeroed and launched on every GPU".into());
        }
        Ok(())
    }

    /// Sums the counters across every rank (NCCL all-reduce, in place) and waits until done; with
    /// one rank it only waits for the GPU.
    pub fn reduce(&mut self) -> Result<()> {
        if self.world <= 1 {
            let g = &self.parts[0].gpu;
            g.bind()?;
            g.stream
                .synchronize()
                .map_err(cuda_err("finishing the histogram"))?;
            if let Some(p) = &mut self.profile {
                p.poll_kernels(&self.parts);
                p.mark("finished (one GPU: stream synchronised)".into());
                p.finished = true;
            }
            return Ok(());
        }
        #[cfg(feature = "nccl")]
        {
            let buffers: Vec<Vec<SumBuffer>> = self
                .accums
                .iter()
                .zip(&self.parts)
                .map(|(a, p)| a.sum_buffers(&p.gpu))
                .collect();
            let timeout = nccl::timeout()?;
            let watchdog = self.watchdog.as_deref().map(|w| w as nccl::Watchdog<'_>);
            // SAFETY: each buffer list is the counters of the communicator's GPU, alive in `self`
            // and untouched until `finish_all_reduce` returns (it is called right below; on its
            // errors the communicators are aborted).
            unsafe { nccl::start_all_reduce_sum(&mut self.comms, &buffers)? };
            let parts = &self.parts;
            let mut profile = self.profile.as_mut();
            if let Some(p) = profile.as_deref_mut() {
                p.mark("all-reduce enqueued (ncclGroupEnd returned)".into());
            }
            let stats = nccl::finish_all_reduce(&mut self.comms, timeout, watchdog, || {
                if let Some(p) = profile.as_deref_mut() {
                    p.poll_kernels(parts);
                }
            })?;
            if let Some(p) = profile {
                if let Some(t) = stats.ready_at {
                    p.mark_at("NCCL launched the all-reduce on every GPU".into(), t);
                }
                p.mark(format!(
                    "all-reduce done on every GPU ({} polls)",
                    stats.polls
                ));
                p.finished = true;
            }
            Ok(())
        }
        #[cfg(not(feature = "nccl"))]
        Err(without_nccl())
    }

    /// Checks that every rank holds the same `value` (a fingerprint of the bins and the input):
    /// ranks that disagree would sum histograms of different bins.
    #[cfg(feature = "nccl")]
    pub fn check_agreement(&mut self, value: u64) -> Result<()> {
        let mut bufs = Vec::with_capacity(self.devices());
        for p in &self.parts {
            p.gpu.bind()?;
            bufs.push(
                p.gpu
                    .stream
                    .clone_htod(&[value, 1u64])
                    .map_err(cuda_err("copying the agreement check"))?,
            );
        }
        let lists: Vec<Vec<SumBuffer>> = bufs
            .iter()
            .zip(&self.parts)
            .map(|(b, p)| {
                vec![SumBuffer {
                    ptr: b.device_ptr(&p.gpu.stream).0,
                    len: 2,
                    elem: Elem::U64,
                }]
            })
            .collect();
        let watchdog = self.watchdog.as_deref().map(|w| w as nccl::Watchdog<'_>);
        // SAFETY: each buffer is 2 u64 on its communicator's GPU, alive until this returns.
        unsafe { nccl::all_reduce_sum(&mut self.comms, &lists, nccl::timeout()?, watchdog)? };
        let got = self.parts[0]
            .gpu
            .stream
            .clone_dtoh(&bufs[0])
            .map_err(cuda_err("reading the agreement check"))?;
        let world = self.world as u64;
        if got[1] != world || got[0] != value.wrapping_mul(world) {
            return Err(Error::MultiGpu(format!(
                "the {} ranks disagree on the bins, the policy or the input (each rank must be \
                 given the same file and the same bin options)",
                self.world
            )));
        }
        Ok(())
    }

    /// The reduced histogram, read back from the first GPU.
    pub fn read(&self) -> Result<(Counts, Tallies)> {
        self.accums[0].read(self.gpu(0), self.nbins)
    }

    /// One line for reports.
    pub fn detail(&self, shard_lens: &[usize]) -> String {
        let ords: Vec<String> = self
            .parts
            .iter()
            .map(|p| p.gpu.ordinal.to_string())
            .collect();
        let reduce = if self.world > 1 {
            format!(", NCCL all-reduce over {} ranks", self.world)
        } else {
            String::new()
        };
        format!(
            "{} GPU(s) [{}], shards of {:?} samples{reduce}; {}",
            self.devices(),
            ords.join(","),
            shard_lens,
            self.parts[0].detail()
        )
    }

    /// Host-resident input: shards, streams, reduces and reads back.
    pub fn run_host(
        &mut self,
        samples: Samples<'_>,
        weights: Option<Weights<'_>>,
        ranges: &[Range<usize>],
        opts: &StreamOptions,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<EngineOutput> {
        self.accumulate_host(samples, weights, ranges, opts, progress)?;
        self.reduce()?;
        let (counts, tallies) = self.read()?;
        self.profile_read_back();
        let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        Ok(EngineOutput {
            counts,
            tallies,
            detail: format!("{}, streamed", self.detail(&lens)),
        })
    }

    /// Device-resident shards: launches, reduces and reads back.
    pub fn run_device(&mut self, shards: &[&DeviceSamples]) -> Result<EngineOutput> {
        self.accumulate_device(shards)?;
        self.reduce()?;
        let (counts, tallies) = self.read()?;
        self.profile_read_back();
        let lens: Vec<usize> = shards.iter().map(|s| s.n).collect();
        Ok(EngineOutput {
            counts,
            tallies,
            detail: self.detail(&lens),
        })
    }

    /// Wall-clock milliseconds of `reps` device-resident runs (counters zeroed, kernels on every GPU,
    /// the all-reduce, all finished) after `warmup` untimed ones.
    pub fn time_device(
        &mut self,
        shards: &[&DeviceSamples],
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f32>> {
        let mut times = Vec::with_capacity(reps);
        for i in 0..warmup + reps {
            self.sync_all()?;
            let t = Instant::now();
            self.accumulate_device(shards)?;
            self.reduce()?;
            self.sync_all()?;
            let ms = t.elapsed().as_secs_f32() * 1e3;
            if i >= warmup {
                times.push(ms);
            }
            self.report_profile();
        }
        Ok(times)
    }

    fn profile_read_back(&mut self) {
        if let Some(p) = &mut self.profile {
            p.mark("read back from the first GPU".into());
            p.report();
        }
    }

    /// With `SMEMKIT_PROFILE_MULTI` set, writes the last call's phases to stderr (if not yet
    /// written); callers that time `accumulate_*` and `reduce` themselves call it outside their
    /// timed span. Otherwise nothing.
    pub fn report_profile(&mut self) {
        if let Some(p) = &mut self.profile {
            p.report();
        }
    }

    fn sync_all(&self) -> Result<()> {
        for p in &self.parts {
            p.gpu.bind()?;
            p.gpu
                .stream
                .synchronize()
                .map_err(cuda_err("waiting for a GPU"))?;
        }
        Ok(())
    }
}

#[cfg(feature = "nccl")]
impl Drop for MultiPrepared {
    fn drop(&mut self) {
        // After an abort (an error, a missed deadline) the communicators are only dropped: waiting
        // for the GPUs could wait on a collective that will never end.
        if self.comms.is_empty() || self.comms.iter().any(Communicator::is_aborted) {
            return;
        }
        // Work on the GPUs first, then a clean flush of the communicators (aborted if it cannot
        // be done within a few seconds: a peer is gone).
        let _ = self.sync_all();
        let limit = nccl::timeout()
            .unwrap_or(nccl::DEFAULT_TIMEOUT)
            .min(std::time::Duration::from_secs(10));
        let _ = Communicator::finalize_all(&mut self.comms, limit);
    }
}

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
