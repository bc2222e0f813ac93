//! Every `SMEMKIT_*` environment variable, in one place, each with what it does. The library reads
//! no `SMEMKIT_*` variable elsewhere, and the `smemkit` binary reads its own through here too, so
//! this module is the list of what the environment can change.
//!
//! Kernel tuning and diagnostic switches are read once per process (a `OnceLock`): they are looked
//! at on every launch plan. What a launcher, a script or a test sets per process (the ranks, the
//! rendezvous, the deadlines, the cache folder, a test's pause) is read when it is needed, as
//! before, so that an error in it is reported by the call that uses it.
//!
//! The launcher variables (`SMEMKIT_RANK`, `SMEMKIT_WORLD_SIZE`, `SMEMKIT_LAUNCHER`,
//! `SMEMKIT_RENDEZVOUS`, `SMEMKIT_NCCL_ID_FILE`) are read through [`crate::launch`]'s environment
//! abstraction, which its tests replace; their names are here.
//!
//! `SMEMKIT_ONE_KERNEL`, `SMEMKIT_KERNEL_<name>` and `SMEMKIT_LAB_MODULE` are preprocessor defines
//! of the kernel sources, not environment variables.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{Error, Result};

/// This process's rank among several (with [`WORLD_SIZE`]); wins over the launchers' variables.
pub const RANK: &str = "SMEMKIT_RANK";
/// How many ranks there are (with [`RANK`]).
pub const WORLD_SIZE: &str = "SMEMKIT_WORLD_SIZE";
/// Which launcher's variables give the rank (`torchrun`, `slurm`, `openmpi`, `pmi`), or `none`.
pub const LAUNCHER: &str = "SMEMKIT_LAUNCHER";
/// `host:port` where the ranks meet to exchange the NCCL id over TCP.
pub const RENDEZVOUS: &str = "SMEMKIT_RENDEZVOUS";
/// A file on a filesystem every rank sees, through which rank 0 hands out the NCCL id.
pub const NCCL_ID_FILE: &str = "SMEMKIT_NCCL_ID_FILE";
/// The GPU of this rank (default: the local rank).
pub const DEVICE: &str = "SMEMKIT_DEVICE";
/// Seconds every NCCL wait and rendezvous may take (default 120).
pub const NCCL_TIMEOUT: &str = "SMEMKIT_NCCL_TIMEOUT";
/// The folder of the compiled-kernel and matmul-autotune caches (default
/// `$XDG_CACHE_HOME/smemkit/ptx` or `~/.cache/smemkit/ptx`).
pub const CACHE_DIR: &str = "SMEMKIT_CACHE_DIR";
/// `1`: kernels built with `-lineinfo` (source lines in profilers; CUBINs 2.5 times larger).
pub const LINEINFO: &str = "SMEMKIT_LINEINFO";
/// `1`: the matmul autotuner measures again instead of using its cached choices.
pub const MATMUL_RETUNE: &str = "SMEMKIT_MATMUL_RETUNE";
/// Kernel tuning: the most uniform float32 bins whose edges are read from a table (0: never).
pub const EDGE_TABLE_MAX_BINS: &str = "SMEMKIT_EDGE_TABLE_MAX_BINS";
/// Kernel tuning: 256 or 512 threads per block for the narrow-counter one-block-per-SM kernels.
pub const PACKED_BLOCK_THREADS: &str = "SMEMKIT_PACKED_BLOCK_THREADS";
/// Kernel tuning: the joint histogram kernels' variant, `legacy`, `default` or either followed by
/// comma-separated `key=value` changes (`edges=table|computed`, `unroll=1..4`, `prefetch=0|1`,
/// `hot=each|step`, `aggregate=0|1`, `window=auto|off|8|16`): see
/// `histogramdd::cuda::variant::JointVariant`. Unset: `default`; unparsable: every joint
/// histogram on the GPU fails with an error naming the variable.
pub const HISTDD_VARIANT: &str = "SMEMKIT_HISTDD_VARIANT";
/// Kernel tuning: the bucket count up to which the partition scatter ranks samples by warp votes.
pub const PARTITION_SPLIT_MAX_BUCKETS: &str = "SMEMKIT_PARTITION_SPLIT_MAX_BUCKETS";
/// Diagnostics: set, prints the time of each partition pass.
pub const PROFILE_PARTITION: &str = "SMEMKIT_PROFILE_PARTITION";
/// Diagnostics: set (not `0`), the multi-GPU path records and prints each GPU's phases.
pub const PROFILE_MULTI: &str = "SMEMKIT_PROFILE_MULTI";
/// Test aid: milliseconds a rank sleeps between the ranks' agreement and its histogram, so that a
/// test can kill it in the middle of a run.
pub const TEST_RANK_PAUSE_MS: &str = "SMEMKIT_TEST_RANK_PAUSE_MS";
/// Test aid: milliseconds a rank sleeps after sending the first chunk of its part to rank 0
/// (`--gather`), so that a test can kill it in the middle of the gather.
pub const TEST_GATHER_PAUSE_MS: &str = "SMEMKIT_TEST_GATHER_PAUSE_MS";
/// Kernel check (the `dump_ptx` test): the folder the PTX of every kernel set is written to.
pub const PTX_DUMP: &str = "SMEMKIT_PTX_DUMP";
/// With [`PTX_DUMP`]: comma-separated substrings of the set names to dump.
pub const PTX_DUMP_ONLY: &str = "SMEMKIT_PTX_DUMP_ONLY";
/// With [`PTX_DUMP`]: `1` keeps `-lineinfo` in the dump.
pub const PTX_DUMP_LINEINFO: &str = "SMEMKIT_PTX_DUMP_LINEINFO";
/// With [`PTX_DUMP`]: a folder to read the kernel files from instead of the embedded ones.
pub const PTX_DUMP_SOURCES: &str = "SMEMKIT_PTX_DUMP_SOURCES";
/// `smemkit bench`: the commit named in the result rows (default: `git describe` of the build).
pub const COMMIT: &str = "SMEMKIT_COMMIT";
/// `smemkit bench stream`: the folder of its input files (default: the system's temp folder).
pub const BENCH_DIR: &str = "SMEMKIT_BENCH_DIR";

/// Every variable above, for the documentation and the test that nothing reads another.
pub const ALL: &[&str] = &[
    RANK,
    WORLD_SIZE,
    LAUNCHER,
    RENDEZVOUS,
    NCCL_ID_FILE,
    DEVICE,
    NCCL_TIMEOUT,
    CACHE_DIR,
    LINEINFO,
    MATMUL_RETUNE,
    EDGE_TABLE_MAX_BINS,
    PACKED_BLOCK_THREADS,
    HISTDD_VARIANT,
    PARTITION_SPLIT_MAX_BUCKETS,
    PROFILE_PARTITION,
    PROFILE_MULTI,
    TEST_RANK_PAUSE_MS,
    TEST_GATHER_PAUSE_MS,
    PTX_DUMP,
    PTX_DUMP_ONLY,
    PTX_DUMP_LINEINFO,
    PTX_DUMP_SOURCES,
    COMMIT,
    BENCH_DIR,
    TRACE,
    PY_TRACE,
];

/// Any value but empty or `0`: one stderr line per phase of a call with its wall time
/// ([`crate::gpu::trace`]).
pub const TRACE: &str = "SMEMKIT_TRACE";
/// `1`: the Python package times each fast-path run's phases on the host.
pub const PY_TRACE: &str = "SMEMKIT_PY_TRACE";

/// [`TRACE`] asks for the phase trace (read once).
pub fn trace() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| var(TRACE).is_some_and(|v| !v.is_empty() && v != "0"))
}

/// [`PY_TRACE`] is `1` (read once).
pub fn py_trace() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| var(PY_TRACE).is_some_and(|v| v == "1"))
}

/// Not ours but the CUDA driver's: `1` turns off the driver's cache of compiled modules, `0`
/// keeps it on. When it is unset, the `smemkit` binary sets it to `1` before CUDA starts unless this
/// machine needed the PTX fallback ([`crate::gpu::driver_cache`]).
pub const CUDA_CACHE_DISABLE: &str = "CUDA_CACHE_DISABLE";

/// [`CUDA_CACHE_DISABLE`] as the user set it, read at each call.
pub fn cuda_cache_disable() -> Option<std::ffi::OsString> {
    std::env::var_os(CUDA_CACHE_DISABLE)
}

/// The default of [`NCCL_TIMEOUT`].
pub const DEFAULT_NCCL_TIMEOUT: Duration = Duration::from_secs(120);

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A variable parsed as `T` once per process; unset or unparsable is `None`.
fn parsed_once<T: std::str::FromStr + Copy>(cell: &OnceLock<Option<T>>, name: &str) -> Option<T> {
    *cell.get_or_init(|| var(name).and_then(|v| v.parse().ok()))
}

/// [`CACHE_DIR`], read at each call.
pub fn cache_dir() -> Option<PathBuf> {
    std::env::var_os(CACHE_DIR).map(PathBuf::from)
}

/// [`LINEINFO`] is `1` (read once).
pub fn lineinfo() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| var(LINEINFO).is_some_and(|v| v == "1"))
}

/// [`MATMUL_RETUNE`] is `1` (read once).
pub fn matmul_retune() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(MATMUL_RETUNE).is_some_and(|v| v == "1"))
}

/// [`EDGE_TABLE_MAX_BINS`] when it is a number (read once).
pub fn edge_table_max_bins() -> Option<usize> {
    static V: OnceLock<Option<usize>> = OnceLock::new();
    parsed_once(&V, EDGE_TABLE_MAX_BINS)
}

/// [`PACKED_BLOCK_THREADS`] when it is 256, 512 or 1024 (read once); other values are ignored.
pub fn packed_block_threads() -> Option<u32> {
    static V: OnceLock<Option<u32>> = OnceLock::new();
    parsed_once(&V, PACKED_BLOCK_THREADS).filter(|t| [256, 512, 1024].contains(t))
}

/// [`HISTDD_VARIANT`] as set (read once).
pub fn histdd_variant() -> Option<&'static str> {
    static V: OnceLock<Option<String>> = OnceLock::new();
    V.get_or_init(|| var(HISTDD_VARIANT)).as_deref()
}

/// [`PARTITION_SPLIT_MAX_BUCKETS`] when it is a number (read once).
pub fn partition_split_max_buckets() -> Option<usize> {
    static V: OnceLock<Option<usize>> = OnceLock::new();
    parsed_once(&V, PARTITION_SPLIT_MAX_BUCKETS)
}

/// [`PROFILE_PARTITION`] is set (read once).
pub fn profile_partition() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(PROFILE_PARTITION).is_some())
}

/// [`PROFILE_MULTI`] is set and not `0` (read once).
pub fn profile_multi() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| var(PROFILE_MULTI).is_some_and(|v| !v.is_empty() && v != "0"))
}

/// [`NCCL_TIMEOUT`] seconds, else [`DEFAULT_NCCL_TIMEOUT`]; read at each call, an error naming
/// the variable when it is not a positive number.
pub fn nccl_timeout() -> Result<Duration> {
    match var(NCCL_TIMEOUT) {
        None => Ok(DEFAULT_NCCL_TIMEOUT),
        Some(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{NCCL_TIMEOUT}={s}: expected a positive number of seconds"
                ))
            }),
    }
}

/// [`DEVICE`], read at each call; an error naming it when it is not a non-negative integer.
pub fn device() -> Result<Option<usize>> {
    match var(DEVICE) {
        None => Ok(None),
        Some(s) => s.trim().parse().map(Some).map_err(|_| {
            Error::InvalidArgument(format!("{DEVICE}={s}: expected a non-negative integer"))
        }),
    }
}

/// [`TEST_RANK_PAUSE_MS`] when it is a number of milliseconds, read at each call.
pub fn test_rank_pause() -> Option<Duration> {
    var(TEST_RANK_PAUSE_MS)
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// [`TEST_GATHER_PAUSE_MS`] when it is a number of milliseconds, read at each call.
pub fn test_gather_pause() -> Option<Duration> {
    var(TEST_GATHER_PAUSE_MS)
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// [`COMMIT`], read at each call.
pub fn commit() -> Option<String> {
    var(COMMIT)
}

/// [`BENCH_DIR`], read at each call.
pub fn bench_dir() -> Option<PathBuf> {
    std::env::var_os(BENCH_DIR).map(PathBuf::from)
}

/// A [`PTX_DUMP`] variable when set and not empty, read at each call.
pub fn ptx_dump(name: &str) -> Option<String> {
    var(name).filter(|s| !s.is_empty())
}
