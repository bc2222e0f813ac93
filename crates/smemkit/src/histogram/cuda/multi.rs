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

use super::bench::DeviceSamples;
use super::prepared::{CudaResult, Prepared, WeightKind};
use super::stream::{StreamInput, StreamOptions, Streamer};
use crate::error::{Error, Result};
use crate::gpu::device::{cuda_err, device_count, gpu_at, Gpu};
use crate::histogram::bins::{Binning, OutOfRange};
use crate::histogram::plan::StrategyChoice;
use crate::histogram::{Counts, Tallies};
use crate::sample::{SampleType, Samples, Weights};

#[cfg(feature = "nccl")]
use crate::gpu::nccl::{self, Communicator, Elem, SumBuffer};

/// Which GPUs a histogram runs on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSet {
    /// GPU 0 alone, through the single-GPU engine.
    #[default]
    Default,
    /// Every GPU the driver reports.
    All,
    /// These ordinals, in this order (the first one's counters hold the result).
    List(Vec<usize>),
}

impl DeviceSet {
    /// `all`, or ordinals separated by commas (`0,1,3`).
    pub fn parse(text: &str) -> Result<DeviceSet> {
        let text = text.trim();
        if text == "all" {
            return Ok(DeviceSet::All);
        }
        let mut list = Vec::new();
        for part in text.split(',') {
            let d: usize = part.trim().parse().map_err(|_| {
                Error::InvalidArgument(format!(
                    "devices `{text}`: expected `all` or GPU ordinals separated by commas (0,1,...)"
                ))
            })?;
            if list.contains(&d) {
                return Err(Error::InvalidArgument(format!(
                    "devices `{text}`: GPU {d} is named twice"
                )));
            }
            list.push(d);
        }
        Ok(DeviceSet::List(list))
    }

    /// The ordinals, checked against the driver's count.
    pub fn resolve(&self) -> Result<Vec<usize>> {
        match self {
            DeviceSet::Default => Ok(vec![0]),
            DeviceSet::All => {
                let n = device_count()?;
                if n == 0 {
                    return Err(Error::CudaUnavailable(
                        "the CUDA driver reports no device".into(),
                    ));
                }
                Ok((0..n).collect())
            }
            DeviceSet::List(list) => {
                let count = device_count()?;
                if let Some(&d) = list.iter().find(|&&d| d >= count) {
                    return Err(Error::DeviceNotFound { ordinal: d, count });
                }
                Ok(list.clone())
            }
        }
    }
}

/// Splits `n` samples into `parts` contiguous shards as even as can be (the first `n % parts` one
/// sample longer); shards of 0 samples when `n < parts`.
pub fn shards(n: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

fn slice_samples<'a>(s: Samples<'a>, r: Range<usize>) -> Samples<'a> {
    crate::with_samples!(s, x => Samples::from(&x[r]))
}

fn slice_weights<'a>(w: Option<Weights<'a>>, r: Range<usize>) -> Option<Weights<'a>> {
    match w {
        None => None,
        Some(Weights::F32(v)) => Some(Weights::F32(&v[r])),
        Some(Weights::F64(v)) => Some(Weights::F64(&v[r])),
    }
}

/// One GPU's counters: unweighted, `nbins` u64 counts followed by the 3 tallies in one buffer (one
/// all-reduce); weighted, `nbins` f64 sums and the tallies apart.
struct Accum {
    counts: CudaSlice<u64>,
    sums: CudaSlice<f64>,
}

impl Accum {
    fn new(gpu: &Gpu, nbins: usize, weighted: bool) -> Result<Accum> {
        gpu.bind()?;
        let s = &gpu.stream;
        Ok(Accum {
            counts: s
                .alloc_zeros::<u64>(if weighted { 3 } else { nbins + 3 })
                .map_err(cuda_err("allocating counters"))?,
            sums: s
                .alloc_zeros::<f64>(if weighted { nbins } else { 0 })
                .map_err(cuda_err("allocating sums"))?,
        })
    }

    fn weighted(&self) -> bool {
        !self.sums.is_empty()
    }

    /// (counters, tallies) device addresses.
    fn ptrs(&self, gpu: &Gpu) -> (u64, u64) {
        let c = self.counts.device_ptr(&gpu.stream).0;
        if self.weighted() {
            (self.sums.device_ptr(&gpu.stream).0, c)
        } else {
            (c, c + 8 * (self.counts.len() as u64 - 3))
        }
    }

    fn zero(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.bind()?;
        gpu.stream
            .memset_zeros(&mut self.counts)
            .map_err(cuda_err("zeroing counters"))?;
        if self.weighted() {
            gpu.stream
                .memset_zeros(&mut self.sums)
                .map_err(cuda_err("zeroing sums"))?;
        }
        Ok(())
    }

    #[cfg(feature = "nccl")]
    fn sum_buffers(&self, gpu: &Gpu) -> Vec<SumBuffer> {
        let c = SumBuffer {
            ptr: self.counts.device_ptr(&gpu.stream).0,
            len: self.counts.len(),
            elem: Elem::U64,
        };
        if self.weighted() {
            vec![
                SumBuffer {
                    ptr: self.sums.device_ptr(&gpu.stream).0,
                    len: self.sums.len(),
                    elem: Elem::F64,
                },
                c,
            ]
        } else {
            vec![c]
        }
    }

    fn read(&self, gpu: &Gpu, nbins: usize) -> Result<(Counts, Tallies)> {
        gpu.bind()?;
        let s = &gpu.stream;
        let c = s.clone_dtoh(&self.counts).map_err(cuda_err(
            "reading the counters back (a kernel or the reduction may have failed)",
        ))?;
        let t = &c[c.len() - 3..];
        let tallies = Tallies {
            below: t[0],
            above: t[1],
            nan: t[2],
        };
        let counts = if self.weighted() {
            Counts::Weighted(
                s.clone_dtoh(&self.sums)
                    .map_err(cuda_err("reading the sums back"))?,
            )
        } else {
            Counts::Unweighted(c[..nbins].to_vec())
        };
        Ok((counts, tallies))
    }
}

/// Which of a GPU's two profiling events.
#[derive(Clone, Copy)]
enum Stamp {
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
struct Profile {
    /// Per GPU: (ordinal, start event, kernels-done event), both timing.
    events: Vec<(usize, CudaEvent, CudaEvent)>,
    what: &'static str,
    t0: Option<Instant>,
    marks: Vec<(String, Duration)>,
    /// Whether the events were recorded in this run (device-resident runs).
    recorded: bool,
    /// Per GPU: its kernels were seen done.
    seen: Vec<bool>,
    /// The reduction finished (the events are complete).
    finished: bool,
}

impl Profile {
    fn wanted() -> bool {
        std::env::var("SMEMKIT_PROFILE_MULTI").is_ok_and(|v| !v.is_empty() && v != "0")
    }

    fn new(gpus: &[Arc<Gpu>]) -> Result<Profile> {
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
    fn begin(&mut self, what: &'static str) {
        self.report();
        self.what = what;
        self.t0 = Some(Instant::now());
        self.marks.clear();
        self.seen.iter_mut().for_each(|s| *s = false);
        self.recorded = false;
        self.finished = false;
    }

    fn record(&self, i: usize, stamp: Stamp, gpu: &Gpu) -> Result<()> {
        let (_, start, kernels) = &self.events[i];
        let e = match stamp {
            Stamp::Start => start,
            Stamp::Kernels => kernels,
        };
        e.record(&gpu.stream)
            .map_err(cuda_err("recording a profiling event"))
    }

    fn mark_at(&mut self, label: String, at: Instant) {
        if let Some(t0) = self.t0 {
            self.marks.push((label, at.saturating_duration_since(t0)));
        }
    }

    fn mark(&mut self, label: String) {
        self.mark_at(label, Instant::now());
    }

    /// Notes the GPUs whose kernels-done event has completed since the last poll.
    fn poll_kernels(&mut self, parts: &[Prepared]) {
        if !self.recorded || self.t0.is_none() {
            return;
        }
        let now = Instant::now();
        let mut done = Vec::new();
        for ((seen, (ordinal, _, kernels)), part) in
            self.seen.iter_mut().zip(&self.events).zip(parts)
        {
            if !*seen && part.gpu.bind().is_ok() && kernels.is_complete() {
                *seen = true;
                done.push(*ordinal);
            }
        }
        for ordinal in done {
            self.mark_at(format!("GPU {ordinal} kernels done"), now);
        }
    }

    /// Writes the run's line to stderr, once.
    fn report(&mut self) {
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

/// Says whether a peer process has failed (its message): stops waits early.
pub type Watchdog = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// A histogram ready to run on several GPUs: one [`Prepared`] plan, counters and (lazily) one
/// streaming pipeline per GPU, and the NCCL communicators that sum the counters.
pub struct MultiPrepared {
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
    #[allow(clippy::too_many_arguments)]
    pub fn with_communicators(
        comms: Vec<Communicator>,
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        policy: OutOfRange,
        choice: StrategyChoice,
        shard_lens: Option<&[usize]>,
        watchdog: Option<Watchdog>,
    ) -> Result<MultiPrepared> {
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
                        let p = Prepared::sized(
                            g.clone(),
                            sample_type,
                            weights,
                            binning,
                            policy,
                            choice,
                            samples,
                        )?;
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
    ) -> Result<CudaResult> {
        self.accumulate_host(samples, weights, ranges, opts, progress)?;
        self.reduce()?;
        let (counts, tallies) = self.read()?;
        self.profile_read_back();
        let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        Ok(CudaResult {
            counts,
            tallies,
            detail: format!("{}, streamed", self.detail(&lens)),
        })
    }

    /// Device-resident shards: launches, reduces and reads back.
    pub fn run_device(&mut self, shards: &[&DeviceSamples]) -> Result<CudaResult> {
        self.accumulate_device(shards)?;
        self.reduce()?;
        let (counts, tallies) = self.read()?;
        self.profile_read_back();
        let lens: Vec<usize> = shards.iter().map(|s| s.n).collect();
        Ok(CudaResult {
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
#[allow(clippy::too_many_arguments)]
pub fn histogram(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    choice: &StrategyChoice,
    opts: &StreamOptions,
    devices: &[usize],
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<CudaResult> {
    let ranges = shards(samples.len(), devices.len());
    histogram_shards(
        samples, weights, binning, policy, choice, opts, devices, &ranges, progress,
    )
}

/// [`histogram`] with the shards given (`ranges[i]` on `devices[i]`; uneven and empty shards
/// allowed, as tests need).
#[allow(clippy::too_many_arguments)]
pub fn histogram_shards(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    binning: &Binning,
    policy: OutOfRange,
    choice: &StrategyChoice,
    opts: &StreamOptions,
    devices: &[usize],
    ranges: &[Range<usize>],
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<CudaResult> {
    let wkind = match weights {
        None => WeightKind::None,
        Some(Weights::F32(_)) => WeightKind::F32,
        Some(Weights::F64(_)) => WeightKind::F64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_input_in_order() {
        assert_eq!(shards(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(shards(2, 4), vec![0..1, 1..2, 2..2, 2..2]);
        assert_eq!(shards(0, 2), vec![0..0, 0..0]);
        assert_eq!(shards(5, 1), vec![0..5]);
        for n in [0, 1, 7, 1000, 1 << 20] {
            for k in 1..9 {
                let s = shards(n, k);
                assert_eq!(s.len(), k);
                assert_eq!(s.iter().map(|r| r.len()).sum::<usize>(), n);
                assert!(s.windows(2).all(|w| w[0].end == w[1].start));
                let (lo, hi) = (
                    s.iter().map(|r| r.len()).min().unwrap(),
                    s.iter().map(|r| r.len()).max().unwrap(),
                );
                assert!(hi - lo <= 1);
            }
        }
    }

    #[test]
    fn device_sets_parse() {
        assert_eq!(DeviceSet::parse("all").unwrap(), DeviceSet::All);
        assert_eq!(
            DeviceSet::parse("0, 2,1").unwrap(),
            DeviceSet::List(vec![0, 2, 1])
        );
        for bad in ["", "0,,1", "x", "-1", "0,0"] {
            assert!(DeviceSet::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(DeviceSet::Default.resolve().unwrap(), vec![0]);
    }
}
