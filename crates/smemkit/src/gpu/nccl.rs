//! NCCL, thinly: the communicators and the one collective several GPUs need (an in-place sum of
//! counters), with deadlines. cudarc's safe `Comm` blocks in `ncclCommInitRank` and in stream
//! synchronisation, so a rank that dies leaves the others waiting for ever; here every
//! communicator is non-blocking (`ncclConfig_t::blocking = 0`), every wait polls
//! `ncclCommGetAsyncError` (and `cuStreamQuery` for the collective) against a deadline and a
//! watchdog (a peer's failure marker, see `crate::histogram::cuda::ranks`), and a communicator that misses its
//! deadline is aborted (`ncclCommAbort`, which also stops NCCL kernels spinning on a dead peer).
//!
//! libnccl is loaded at run time by cudarc (`libnccl.so`): without it, [`load`] says so. NVLink
//! multicast (NVLS) is never wanted here: unless the caller set `NCCL_NVLS_ENABLE`, [`load`] sets it
//! to 0 before NCCL reads its environment.

use std::ffi::CStr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cudarc::nccl::sys;

use super::device::Gpu;
use crate::error::{Error, Result};

#[path = "nccl_reduce.rs"]
mod reduce;
pub use reduce::{start_reduce_to_owners, OwnerBuffer};

/// How long a rendezvous, a communicator's start or a collective may take unless
/// `SMEMKIT_NCCL_TIMEOUT` (seconds) says otherwise.
pub const DEFAULT_TIMEOUT: Duration = crate::config::DEFAULT_NCCL_TIMEOUT;

/// `NCCL_VERSION(2, 28, 0)`: the layout of `ncclConfig_t` the bindings were generated for.
const CONFIG_VERSION: u32 = 22800;
/// `NCCL_CONFIG_UNDEF_INT`: "NCCL's default" for the integer fields of `ncclConfig_t`.
const UNDEF: i32 = i32::MIN;

/// The deadline of every NCCL wait: `SMEMKIT_NCCL_TIMEOUT` seconds, else [`DEFAULT_TIMEOUT`].
pub fn timeout() -> Result<Duration> {
    crate::config::nccl_timeout()
}

/// Loads libnccl (once) and returns its version code (e.g. 22803 for 2.28.3).
pub fn load() -> Result<i32> {
    static LOADED: OnceLock<std::result::Result<i32, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            // NVLink SHARP multicast can take a shared host's GPUs down; a histogram's reduction
            // gains nothing from it. Set before libnccl is loaded, so before any thread of NCCL's
            // reads the environment; callers that want it set NCCL_NVLS_ENABLE themselves.
            if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
                std::env::set_var("NCCL_NVLS_ENABLE", "0");
            }
            // SAFETY: only tries to open the shared library.
            if !unsafe { sys::is_culib_present() } {
                return Err(
                    "libnccl.so could not be loaded (NCCL is not installed, or its folder is \
                            not on LD_LIBRARY_PATH; on the GPU machines it is \
                            /usr/lib/x86_64-linux-gnu/libnccl.so)"
                        .to_string(),
                );
            }
            let mut version = 0;
            // SAFETY: valid out pointer.
            let r = unsafe { sys::ncclGetVersion(&mut version) };
            if r != sys::ncclResult_t::ncclSuccess {
                return Err(format!("ncclGetVersion failed: {}", describe(r)));
            }
            Ok(version)
        })
        .clone()
        .map_err(|message| Error::Nccl {
            context: "loading NCCL".into(),
            message,
        })
}

/// NCCL's text for a result code.
fn describe(r: sys::ncclResult_t) -> String {
    // SAFETY: ncclGetErrorString returns a static NUL-terminated string for any code.
    let p = unsafe { sys::ncclGetErrorString(r) };
    let text = if p.is_null() {
        String::new()
    } else {
        // SAFETY: non-null, NUL-terminated, static.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    format!("{r:?} ({text})")
}

fn check(r: sys::ncclResult_t, context: &str) -> Result<()> {
    match r {
        sys::ncclResult_t::ncclSuccess | sys::ncclResult_t::ncclInProgress => Ok(()),
        e => Err(Error::Nccl {
            context: context.to_string(),
            message: describe(e),
        }),
    }
}

/// The 128 bytes that name one communicator; made by one rank and given to all the others.
#[derive(Clone, Copy)]
pub struct UniqueId(pub [u8; 128]);

impl UniqueId {
    /// A fresh id (NCCL opens its bootstrap listener on this host).
    pub fn new() -> Result<UniqueId> {
        load()?;
        let mut id = sys::ncclUniqueId { internal: [0; 128] };
        // SAFETY: valid out pointer.
        check(
            unsafe { sys::ncclGetUniqueId(&mut id) },
            "creating a unique id",
        )?;
        Ok(UniqueId(id.internal.map(|c| c as u8)))
    }

    fn raw(&self) -> sys::ncclUniqueId {
        sys::ncclUniqueId {
            internal: self.0.map(|b| b as ::core::ffi::c_char),
        }
    }
}

fn nonblocking_config() -> sys::ncclConfig_t {
    sys::ncclConfig_t {
        size: std::mem::size_of::<sys::ncclConfig_t>(),
        magic: 0xcafe_beef,
        version: CONFIG_VERSION,
        blocking: 0,
        cgaClusterSize: UNDEF,
        minCTAs: UNDEF,
        maxCTAs: UNDEF,
        netName: std::ptr::null(),
        splitShare: UNDEF,
        trafficClass: UNDEF,
        commName: std::ptr::null(),
        collnetEnable: UNDEF,
        CTAPolicy: UNDEF,
        shrinkShare: UNDEF,
        nvlsCTAs: UNDEF,
        nChannelsPerNetPeer: UNDEF,
        nvlinkCentricSched: UNDEF,
    }
}

/// Says, when asked, whether a peer has failed (its message), so that waits stop early.
pub type Watchdog<'a> = &'a (dyn Fn() -> Option<String> + Sync);

/// One rank of a communicator, on one GPU.
pub struct Communicator {
    comm: sys::ncclComm_t,
    pub gpu: Arc<Gpu>,
    pub rank: usize,
    pub world: usize,
    aborted: bool,
    /// Finalized (every operation flushed): it can be destroyed without aborting.
    finalized: bool,
}

// SAFETY: an NCCL communicator may be used from any thread as long as calls on it do not overlap;
// `Communicator`'s methods take `&mut self` or are called on all communicators from one thread.
unsafe impl Send for Communicator {}

impl Communicator {
    /// One communicator per GPU of this process (ranks in the order given), started together.
    pub fn init_all(gpus: &[Arc<Gpu>], timeout: Duration) -> Result<Vec<Communicator>> {
        load()?;
        let id = UniqueId::new()?;
        let describe =
            |_rank: usize, gpu: &Gpu| format!("starting the communicator of GPU {}", gpu.ordinal);
        let mut comms = Self::start_group(gpus, 0, gpus.len(), &id, &describe)?;
        wait_ready(
            &mut comms,
            Instant::now() + timeout,
            "starting the communicators",
            None,
        )?;
        Ok(comms)
    }

    /// This process's ranks `first_rank..first_rank + gpus.len()` (one per GPU, in order; one
    /// GPU is a group of one) of a communicator of `world` ranks named by `id` (made by the
    /// process of rank 0), started in one group as NCCL requires when a process holds several
    /// ranks; polled until the deadline, and stopped early by the watchdog (a peer's failure
    /// heard through the rendezvous).
    pub fn init_ranks(
        gpus: &[Arc<Gpu>],
        first_rank: usize,
        world: usize,
        id: &UniqueId,
        timeout: Duration,
        watchdog: Option<Watchdog<'_>>,
    ) -> Result<Vec<Communicator>> {
        load()?;
        if gpus.is_empty() || first_rank + gpus.len() > world {
            return Err(Error::InvalidArgument(format!(
                "ranks {first_rank}..{} of a world of {world}",
                first_rank + gpus.len()
            )));
        }
        let last = first_rank + gpus.len() - 1;
        let describe = |rank: usize, gpu: &Gpu| {
            format!("starting rank {rank} of {world} (GPU {})", gpu.ordinal)
        };
        let mut comms = Self::start_group(gpus, first_rank, world, id, &describe)?;
        if comms.len() != gpus.len() {
            return Err(Error::Nccl {
                context: format!("starting ranks {first_rank}..={last} of {world}"),
                message: "NCCL returned no communicator".into(),
            });
        }
        wait_ready(
            &mut comms,
            Instant::now() + timeout,
            &format!(
                "starting ranks {first_rank}..={last} of {world} (is every rank running, at the \
                 same rendezvous, with as many GPUs?)"
            ),
            watchdog,
        )?;
        Ok(comms)
    }

    /// Starts ranks `first_rank..` of a world of `world` named by `id`, one per GPU, in one NCCL
    /// group (non-blocking: [`wait_ready`] then polls them). `describe(rank, gpu)` names a rank
    /// in its error. The communicators started before a failure are aborted by their Drop.
    fn start_group(
        gpus: &[Arc<Gpu>],
        first_rank: usize,
        world: usize,
        id: &UniqueId,
        describe: &dyn Fn(usize, &Gpu) -> String,
    ) -> Result<Vec<Communicator>> {
        let mut comms: Vec<Communicator> = Vec::with_capacity(gpus.len());
        // One config per rank, alive until the group has started them all.
        let mut configs: Vec<sys::ncclConfig_t> =
            gpus.iter().map(|_| nonblocking_config()).collect();
        // SAFETY: group calls are plain calls; each started communicator is recorded in `comms`
        // (aborted on error by its Drop).
        check(unsafe { sys::ncclGroupStart() }, "starting a group")?;
        let mut failed = None;
        for (i, gpu) in gpus.iter().enumerate() {
            if let Err(e) = gpu.bind() {
                failed = Some(e);
                break;
            }
            let rank = first_rank + i;
            let mut comm: sys::ncclComm_t = std::ptr::null_mut();
            // SAFETY: valid out pointer and config (alive until this function returns); the id is
            // the same for every rank of every process.
            let r = unsafe {
                sys::ncclCommInitRankConfig(
                    &mut comm,
                    world as i32,
                    id.raw(),
                    rank as i32,
                    &mut configs[i],
                )
            };
            if !comm.is_null() {
                comms.push(Communicator {
                    comm,
                    gpu: gpu.clone(),
                    rank,
                    world,
                    aborted: false,
                    finalized: false,
                });
            }
            if let Err(e) = check(r, &describe(rank, gpu)) {
                failed = Some(e);
                break;
            }
        }
        // SAFETY: closes the group opened above.
        let end = check(unsafe { sys::ncclGroupEnd() }, "starting the communicators");
        if let Some(e) = failed {
            return Err(e);
        }
        end?;
        Ok(comms)
    }

    /// The communicator's asynchronous state: `Ok(true)` ready, `Ok(false)` still in progress.
    fn state(&self) -> Result<bool> {
        let mut raw: u32 = 0;
        // SAFETY: `comm` is a live communicator; the state is written as the C enum's u32 and read
        // as a number, so a code this binding does not know cannot make an invalid Rust enum.
        let r = unsafe {
            sys::ncclCommGetAsyncError(self.comm, &mut raw as *mut u32 as *mut sys::ncclResult_t)
        };
        check(r, "querying a communicator")?;
        match raw {
            0 => Ok(true),
            7 => Ok(false),
            code => {
                // SAFETY: ncclGetLastError returns a NUL-terminated string owned by NCCL (or null).
                let last = unsafe { sys::ncclGetLastError(self.comm) };
                let detail = if last.is_null() {
                    String::new()
                } else {
                    // SAFETY: non-null and NUL-terminated.
                    unsafe { CStr::from_ptr(last) }
                        .to_string_lossy()
                        .into_owned()
                };
                Err(Error::Nccl {
                    context: format!(
                        "rank {} of {} (GPU {})",
                        self.rank, self.world, self.gpu.ordinal
                    ),
                    message: format!("asynchronous error {code}: {detail}"),
                })
            }
        }
    }

    /// Whether the communicator was aborted (after an error or a missed deadline).
    pub fn is_aborted(&self) -> bool {
        self.aborted
    }

    /// Aborts the communicator (its pending operations and kernels stop); it is unusable after.
    pub fn abort(&mut self) {
        if !self.aborted {
            self.aborted = true;
            // SAFETY: a live communicator, aborted once.
            let _ = unsafe { sys::ncclCommAbort(self.comm) };
        }
    }
}

impl Communicator {
    /// Flushes the communicators' operations (`ncclCommFinalize`, polled against `timeout`), so
    /// that dropping them destroys them cleanly; on an error or at the deadline they are aborted.
    pub fn finalize_all(comms: &mut [Communicator], timeout: Duration) -> Result<()> {
        if comms.iter().any(|c| c.aborted) {
            // Some were aborted: the others cannot be flushed against them.
            comms.iter_mut().for_each(Communicator::abort);
            return Ok(());
        }
        for i in 0..comms.len() {
            // SAFETY: a live, not aborted communicator; finalized once.
            let r = unsafe { sys::ncclCommFinalize(comms[i].comm) };
            if let Err(e) = check(r, "finishing a communicator") {
                comms.iter_mut().for_each(Communicator::abort);
                return Err(e);
            }
        }
        let deadline = Instant::now() + timeout;
        wait_ready(comms, deadline, "finishing the communicators", None)?;
        comms.iter_mut().for_each(|c| c.finalized = true);
        Ok(())
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        if self.aborted {
            return;
        }
        if self.finalized {
            // SAFETY: a finalized communicator, destroyed once.
            if unsafe { sys::ncclCommDestroy(self.comm) } == sys::ncclResult_t::ncclSuccess {
                self.aborted = true;
                return;
            }
        }
        // Not flushed (an error path) or not destroyed: abort never waits for peers.
        self.abort();
    }
}

/// Polls until every communicator is ready; on an error, a peer's failure or the deadline, aborts
/// them all and says why.
fn wait_ready(
    comms: &mut [Communicator],
    deadline: Instant,
    what: &str,
    watchdog: Option<Watchdog<'_>>,
) -> Result<()> {
    wait(comms, deadline, what, watchdog, || {}, |_| Ok(true)).map(|_| ())
}

/// The element type of a buffer to sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    U64,
    F64,
}

/// A device buffer to sum in place across the ranks: address, element count, type.
#[derive(Debug, Clone, Copy)]
pub struct SumBuffer {
    pub ptr: u64,
    pub len: usize,
    pub elem: Elem,
}

/// Sums `buffers[i]` (the same list on every communicator: `buffers[i][j]` lives on `comms[i]`'s
/// GPU) in place across all ranks, then waits until the sums are done, against the deadline.
///
/// # Safety
/// Each buffer must be a live device allocation on its communicator's GPU holding `len` elements,
/// not used by anything else until this returns.
pub unsafe fn all_reduce_sum(
    comms: &mut [Communicator],
    buffers: &[Vec<SumBuffer>],
    timeout: Duration,
    watchdog: Option<Watchdog<'_>>,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { start_all_reduce_sum(comms, buffers)? };
    finish_all_reduce(comms, timeout, watchdog, || {}).map(|_| ())
}

/// Enqueues the in-place sums of [`all_reduce_sum`] (one NCCL group over every communicator of
/// this process) without waiting; [`finish_all_reduce`] waits. A non-blocking communicator may
/// still be launching them in NCCL's own thread when this returns (`ncclInProgress`), so nothing
/// may be enqueued on the streams after them (e.g. an event) before `finish_all_reduce` returns.
/// On an error every communicator is aborted.
///
/// # Safety
/// As [`all_reduce_sum`]: the buffers must stay live and untouched until `finish_all_reduce`
/// has returned.
pub unsafe fn start_all_reduce_sum(
    comms: &mut [Communicator],
    buffers: &[Vec<SumBuffer>],
) -> Result<()> {
    if comms.len() != buffers.len() {
        return Err(Error::InvalidArgument(
            "one list of buffers per communicator".into(),
        ));
    }
    // SAFETY: group calls are plain calls.
    check(unsafe { sys::ncclGroupStart() }, "starting a group")?;
    let mut failed = None;
    for (c, bufs) in comms.iter().zip(buffers) {
        if let Err(e) = c.gpu.bind() {
            failed = Some(e);
            break;
        }
        for b in bufs {
            let dtype = match b.elem {
                Elem::U64 => sys::ncclDataType_t::ncclUint64,
                Elem::F64 => sys::ncclDataType_t::ncclFloat64,
            };
            // SAFETY: the caller guarantees the buffer; in place (send = receive) is allowed; the
            // stream is the GPU's compute stream, which orders the sum after the kernels.
            let r = unsafe {
                sys::ncclAllReduce(
                    b.ptr as *const std::ffi::c_void,
                    b.ptr as *mut std::ffi::c_void,
                    b.len,
                    dtype,
                    sys::ncclRedOp_t::ncclSum,
                    c.comm,
                    c.gpu.stream.cu_stream() as sys::cudaStream_t,
                )
            };
            if let Err(e) = check(r, "enqueuing an all-reduce") {
                failed = Some(e);
                break;
            }
        }
        if failed.is_some() {
            break;
        }
    }
    // SAFETY: closes the group opened above.
    let end = check(unsafe { sys::ncclGroupEnd() }, "launching the all-reduce");
    if let Some(e) = failed.or(end.err()) {
        comms.iter_mut().for_each(Communicator::abort);
        return Err(e);
    }
    Ok(())
}

/// Waits for the sums enqueued by [`start_all_reduce_sum`]: enqueued once every communicator is
/// out of `ncclInProgress`, done once every stream is idle (so also every kernel enqueued before
/// them). `tick` runs once per polling round (profiling). Against the deadline and the watchdog;
/// on an error or a missed deadline every communicator is aborted.
pub fn finish_all_reduce(
    comms: &mut [Communicator],
    timeout: Duration,
    watchdog: Option<Watchdog<'_>>,
    tick: impl FnMut(),
) -> Result<WaitStats> {
    let deadline = Instant::now() + timeout;
    wait(
        comms,
        deadline,
        "the all-reduce of the counters",
        watchdog,
        tick,
        |c| {
            c.gpu.bind()?;
            // SAFETY: queries a live stream of the bound context.
            let r = unsafe { cudarc::driver::sys::cuStreamQuery(c.gpu.stream.cu_stream()) };
            match r {
                cudarc::driver::sys::CUresult::CUDA_SUCCESS => Ok(true),
                cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
                e => Err(Error::Cuda {
                    context: format!("the all-reduce on GPU {}", c.gpu.ordinal),
                    message: format!("{e:?}"),
                }),
            }
        },
    )
}

/// How long [`wait`] polls without sleeping: every collective of a histogram (the device-resident
/// kernels of 2^30 samples take 1-3 ms) ends within it, so its end is seen within microseconds, as
/// a CUDA stream synchronisation (which spins too) sees it on one GPU; sleeping from the start
/// overshot short waits by a large fraction (bench/NOTES.md).
const SPIN: Duration = Duration::from_millis(20);
/// After [`SPIN`], the sleeps between rounds start here and double up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_micros(50);
const MAX_PAUSE: Duration = Duration::from_millis(1);
/// The watchdog (a peer's failure marker: file-system calls) is asked at most this often.
const WATCH_EVERY: Duration = Duration::from_millis(5);

/// What a completed [`wait`] saw.
#[derive(Debug, Clone, Copy)]
pub struct WaitStats {
    /// When every communicator was first seen out of `ncclInProgress` (for a collective: NCCL's
    /// thread has launched it on every stream).
    pub ready_at: Option<Instant>,
    /// Polling rounds.
    pub polls: u64,
}

/// Polls the communicators (and `done` on each once it is ready) until all are done; aborts them
/// all on an error, a peer's failure, or the deadline. Spins (yielding the CPU between rounds) for
/// the first [`SPIN`], then sleeps between rounds; `tick` runs once per round.
fn wait(
    comms: &mut [Communicator],
    deadline: Instant,
    what: &str,
    watchdog: Option<Watchdog<'_>>,
    mut tick: impl FnMut(),
    done: impl Fn(&Communicator) -> Result<bool>,
) -> Result<WaitStats> {
    let started = Instant::now();
    let mut next_watch = started + WATCH_EVERY;
    let mut pause = FIRST_PAUSE;
    let mut stats = WaitStats {
        ready_at: None,
        polls: 0,
    };
    loop {
        tick();
        stats.polls += 1;
        let mut all = true;
        let mut ready = true;
        let mut error = None;
        for c in comms.iter() {
            match c.state().and_then(|r| {
                ready &= r;
                if r {
                    done(c)
                } else {
                    Ok(false)
                }
            }) {
                Ok(ok) => all &= ok,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let now = Instant::now();
        if ready && error.is_none() && stats.ready_at.is_none() {
            stats.ready_at = Some(now);
        }
        if error.is_none() && !all {
            let msg = if now >= next_watch {
                next_watch = now + WATCH_EVERY;
                watchdog.and_then(|w| w())
            } else {
                None
            };
            if let Some(msg) = msg {
                error = Some(Error::MultiGpu(format!("{what}: {msg}")));
            } else if now >= deadline {
                error = Some(Error::MultiGpu(format!(
                    "{what}: not done after {:.0} s (SMEMKIT_NCCL_TIMEOUT); a rank may have \
                     failed or stopped, or is still working (raise the timeout)",
                    started.elapsed().as_secs_f64()
                )));
            }
        }
        if let Some(e) = error {
            comms.iter_mut().for_each(Communicator::abort);
            return Err(e);
        }
        if all {
            return Ok(stats);
        }
        if now.duration_since(started) < SPIN {
            std::thread::yield_now();
        } else {
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}
