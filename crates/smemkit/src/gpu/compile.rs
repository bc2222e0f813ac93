//! Run-time compilation of the repository's CUDA C++ kernels with NVRTC. At run time NVRTC
//! compiles a kernel for the device's exact architecture as machine code (CUBIN, `sm_90a` on
//! Hopper), so that the driver loads it without compiling anything; PTX for the driver to compile
//! is the fallback where the driver refuses the CUBIN. Sources built one kernel at a time
//! (`KernelSource::one_kernel`) compile only the entry point a plan launches. Results are cached
//! in memory and on disk (`SMEMKIT_CACHE_DIR`, compressed: `cache_file`), keyed by the source and
//! its headers, the options (the architecture among them), the output kind and the driver
//! version, so a kernel is compiled once per machine. NVRTC's version is not in the key: asking it means loading NVRTC, which a
//! call whose kernels are all cached would otherwise never do, and a cached CUBIN stays machine
//! code the driver checks as it loads it (one it refuses is built anew). A new NVRTC's code is
//! therefore taken up once the cache folder is emptied.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use sha2::{Digest, Sha256};

pub use super::kernel_sources::*;
pub use super::load_stats::ptx_load_reasons;
pub use super::nvrtc::Output;
use crate::error::{Error, Result};

/// True when the NVRTC library can be loaded (it is then loaded, and stays: call this only where
/// a kernel is to be compiled).
pub fn nvrtc_available() -> bool {
    super::libs::nvrtc()
}

/// NVRTC's version ("13.0"), or "unknown" where NVRTC cannot say.
pub fn nvrtc_version() -> String {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| {
        if nvrtc_available() {
            super::nvrtc::version().unwrap_or_else(|| "unknown".into())
        } else {
            "unknown".into()
        }
    })
    .clone()
}

/// Whether builds keep line information (`-lineinfo`, for profilers' source views):
/// `SMEMKIT_LINEINFO=1`. Off by default: it embeds the PTX in every CUBIN, 2.5 times its size.
fn lineinfo() -> bool {
    crate::config::lineinfo()
}

/// NVRTC options for `arch` (`compute_90a` for PTX, `sm_90a` for a CUBIN) and `-D` defines. No
/// include path: the kernels include only their own headers, which NVRTC is handed by name.
pub fn options(arch: &str, defines: &[(&str, String)]) -> Vec<String> {
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
    ];
    if lineinfo() {
        opts.push("-lineinfo".to_string());
    }
    opts.extend(defines.iter().map(|(k, v)| format!("-D{k}={v}")));
    opts
}

/// The defines that make a one-kernel source build `kernel` alone (`kernels/one_kernel.cuh`).
pub fn one_kernel_defines(kernel: &str) -> [(String, String); 2] {
    [
        ("SMEMKIT_ONE_KERNEL".into(), "1".into()),
        (format!("SMEMKIT_KERNEL_{kernel}"), "1".into()),
    ]
}

/// What to build: a source, its defines, and for a one-kernel source the kernel.
#[derive(Debug, Clone, Copy)]
pub struct Build<'a> {
    pub src: &'a KernelSource,
    pub defines: &'a [(&'a str, String)],
    pub kernel: &'a str,
}

impl Build<'_> {
    /// The NVRTC options of this build for `arch`.
    pub fn options(&self, arch: &str) -> Vec<String> {
        let mut opts = options(arch, self.defines);
        if self.src.one_kernel {
            opts.extend(
                one_kernel_defines(self.kernel)
                    .iter()
                    .map(|(k, v)| format!("-D{k}={v}")),
            );
        }
        opts
    }

    /// Names the module the build makes: kernels of a source that is not built one kernel at a
    /// time share one.
    pub fn module_key(&self, arch: &str) -> String {
        format!("{}|{}", self.src.name, self.options(arch).join(" "))
    }
}

/// A compiled module: machine code for one architecture, or PTX for the driver to compile.
#[derive(Debug)]
pub enum Image {
    Cubin(Vec<u8>),
    Ptx(String),
}

impl Image {
    pub fn len(&self) -> usize {
        match self {
            Image::Cubin(b) => b.len(),
            Image::Ptx(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What cudarc loads.
    pub fn to_loadable(&self) -> cudarc::nvrtc::Ptx {
        match self {
            Image::Cubin(b) => cudarc::nvrtc::Ptx::from_binary(b.clone()),
            Image::Ptx(t) => cudarc::nvrtc::Ptx::from_src(t.as_str()),
        }
    }
}

/// Whether a build is written to the disk cache: `Trial` keeps it in memory only (the matmul
/// autotuner's candidates, of which one is used again), until a later `Disk` build of it writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Disk,
    Trial,
}

/// The builds of this process by cache key, each with whether it is in the disk cache.
type Builds = HashMap<String, (Arc<Image>, bool)>;

fn memory_cache() -> &'static Mutex<Builds> {
    static CACHE: OnceLock<Mutex<Builds>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The folder of the on-disk caches: `SMEMKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/smemkit/ptx` or
/// `~/.cache/smemkit/ptx`. The compiled kernels and the matmul autotuner's choices live there.
pub fn disk_cache_dir() -> Option<PathBuf> {
    if let Some(d) = crate::config::cache_dir() {
        return Some(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("smemkit").join("ptx"))
}

/// Compilations running now, and those finished in this process with their summed seconds.
static BUILDING: AtomicUsize = AtomicUsize::new(0);
static BUILT: AtomicU64 = AtomicU64::new(0);
static BUILD_NANOS: AtomicU64 = AtomicU64::new(0);
static FROM_DISK: AtomicU64 = AtomicU64::new(0);
/// Whether the on-disk kernel cache holds any built kernel (a CUBIN): the automatic backend's
/// sign that a call's kernels will be loaded rather than compiled. It does not check the very
/// kernels a call needs (that takes the GPU's architecture and the plan, which the choice is
/// made before): a machine that built some has usually built the common ones (`smemkit warmup`).
pub fn cache_holds_kernels() -> bool {
    // Asked on every automatic call: a folder found holding kernels is not read again (a
    // per-call directory read would be a good share of a small call's host time).
    static HOLDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if HOLDS.load(Ordering::Relaxed) {
        return true;
    }
    let holds = disk_cache_dir().is_some_and(|dir| holds_file_ending(&dir, ".cubin"));
    HOLDS.store(holds, Ordering::Relaxed);
    holds
}

/// Whether `dir` holds a file whose name ends with `ending` (`.cubin`, `.ptx`).
pub(crate) fn holds_file_ending(dir: &std::path::Path, ending: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(ending))
    })
}

/// What this process's kernel builds cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BuildStats {
    /// NVRTC compilations finished.
    pub compiled: u64,
    /// Their summed seconds (several run at once: more than the wall time they took).
    pub compile_seconds: f64,
    /// Modules read from the disk cache.
    pub from_disk: u64,
    /// Modules loaded into a context as CUBIN, and as PTX ([`ptx_load_reasons`] says why;
    /// `load_stats`).
    pub cubin_loads: u64,
    pub ptx_loads: u64,
}

/// The process's build counters.
pub fn build_stats() -> BuildStats {
    BuildStats {
        compiled: BUILT.load(Ordering::Relaxed),
        compile_seconds: BUILD_NANOS.load(Ordering::Relaxed) as f64 * 1e-9,
        from_disk: FROM_DISK.load(Ordering::Relaxed),
        cubin_loads: super::load_stats::cubin_loads(),
        ptx_loads: super::load_stats::ptx_loads(),
    }
}

/// True while an NVRTC compilation runs (for a caller that tells its user why it waits).
pub fn compiling_now() -> bool {
    BUILDING.load(Ordering::Relaxed) > 0
}

/// Builds `build` for `arch` as `output` through the memory and disk caches. `salt` joins the cache
/// key (the driver version: a newer driver may want the kernels compiled anew). With
/// [`Keep::Trial`] a new build stays out of the disk cache.
pub fn build(
    build: &Build<'_>,
    arch: &str,
    output: Output,
    salt: &str,
    keep: Keep,
) -> Result<Arc<Image>> {
    build_in(disk_cache_dir(), build, arch, output, salt, keep)
}

/// [`build`] with the disk cache in `dir`.
fn build_in(
    dir: Option<PathBuf>,
    build: &Build<'_>,
    arch: &str,
    output: Output,
    salt: &str,
    keep: Keep,
) -> Result<Arc<Image>> {
    let options = build.options(arch);
    let key = cache_key(build.src, &options, output, salt);
    let ext = match output {
        Output::Ptx => "ptx",
        Output::Cubin => "cubin",
    };
    let disk = dir.map(|d| d.join(format!("{key}.{ext}")));
    if let Some((image, on_disk)) = memory_cache().lock().expect("cache lock").get_mut(&key) {
        if keep == Keep::Disk && !*on_disk {
            if let Some(path) = &disk {
                write_cache(path, &key, image);
            }
            *on_disk = true;
        }
        return Ok(image.clone());
    }
    let read_span = super::trace::span("kernel cache read");
    let cached = disk.as_ref().and_then(|p| read_cache(p, output));
    drop(read_span);
    let (image, on_disk) = match cached {
        Some((image, compressed)) => {
            FROM_DISK.fetch_add(1, Ordering::Relaxed);
            if let (false, Some(path)) = (compressed, &disk) {
                // Written before entries were compressed: rewritten once, smaller.
                write_cache(path, &key, &image);
            }
            (Arc::new(image), true)
        }
        None => {
            let image = Arc::new(compile_image(build.src, &options, output)?);
            if let (Some(path), Keep::Disk) = (&disk, keep) {
                write_cache(path, &key, &image);
            }
            (image, keep == Keep::Disk)
        }
    };
    memory_cache()
        .lock()
        .expect("cache lock")
        .insert(key, (image.clone(), on_disk));
    Ok(image)
}

/// Writes `build`'s image to the disk cache if this process built it as a [`Keep::Trial`] (an
/// autotuner's winner); compiles nothing.
pub fn keep_on_disk(build: &Build<'_>, arch: &str, output: Output, salt: &str) {
    keep_on_disk_in(disk_cache_dir(), build, arch, output, salt)
}

fn keep_on_disk_in(dir: Option<PathBuf>, b: &Build<'_>, arch: &str, output: Output, salt: &str) {
    let key = cache_key(b.src, &b.options(arch), output, salt);
    if memory_cache()
        .lock()
        .expect("cache lock")
        .contains_key(&key)
    {
        // Found in memory: this build does not compile.
        let _ = build_in(dir, b, arch, output, salt, Keep::Disk);
    }
}

/// Forgets a cached module (memory and disk), after the driver refused it.
pub fn evict(build: &Build<'_>, arch: &str, output: Output, salt: &str) {
    let key = cache_key(build.src, &build.options(arch), output, salt);
    memory_cache().lock().expect("cache lock").remove(&key);
    if let Some(dir) = disk_cache_dir() {
        for ext in ["ptx", "cubin"] {
            let _ = std::fs::remove_file(dir.join(format!("{key}.{ext}")));
        }
    }
}

fn cache_key(src: &KernelSource, options: &[String], output: Output, salt: &str) -> String {
    let mut hasher = Sha256::new();
    let joined = options.join("\u{1f}");
    let kind = format!("{output:?}");
    let headers = src.headers.iter().flat_map(|h| [h.name, h.text]);
    for part in [src.text, &joined, salt, &kind].into_iter().chain(headers) {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The image of the cache file `path`, with whether it was stored compressed; `None` for a miss.
/// A file that cannot be used whole (torn, corrupted, of another format version, not a CUBIN or
/// not PTX as its name says) is a miss too, said in the trace: the kernel is built again and the
/// file overwritten.
fn read_cache(path: &std::path::Path, output: Output) -> Option<(Image, bool)> {
    let unusable = |why: String| {
        let what = format!(
            "kernel cache entry {} unusable ({why}): built again",
            path.display()
        );
        super::trace::record(&what, std::time::Duration::ZERO);
        None
    };
    let file = match std::fs::read(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return unusable(e.to_string()),
    };
    let (bytes, compressed) = match super::cache_file::decode(file) {
        Ok(super::cache_file::Entry::Compressed(b)) => (b, true),
        Ok(super::cache_file::Entry::Uncompressed(b)) => (b, false),
        Err(why) => return unusable(why.to_string()),
    };
    let image = match output {
        // A CUBIN is an ELF file.
        Output::Cubin if bytes.starts_with(b"\x7fELF") => Image::Cubin(bytes),
        Output::Cubin => return unusable("not an ELF file".into()),
        Output::Ptx => match String::from_utf8(bytes) {
            Ok(text) => Image::Ptx(text),
            Err(_) => return unusable("PTX that is not UTF-8".into()),
        },
    };
    Some((image, compressed))
}

/// The cache is an optimisation: a failure to write it is not an error. Written compressed
/// ([`super::cache_file`]) to a temporary file then renamed, so that a concurrent reader never
/// sees half a file.
fn write_cache(path: &std::path::Path, key: &str, image: &Image) {
    let Some(dir) = path.parent() else { return };
    let _ = std::fs::create_dir_all(dir);
    // A name of this write's own: two threads of a process may write one key at once.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!("{key}.{}.{n}.tmp", std::process::id()));
    let bytes = match image {
        Image::Cubin(b) => b.as_slice(),
        Image::Ptx(t) => t.as_bytes(),
    };
    if std::fs::write(&tmp, super::cache_file::encode(bytes)).is_ok() {
        if std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// One NVRTC compilation to `output`, with the log in the error, counted in [`build_stats`].
pub fn compile_image(src: &KernelSource, options: &[String], output: Output) -> Result<Image> {
    if !nvrtc_available() {
        return Err(Error::CudaUnavailable(
            "the NVRTC library (libnvrtc.so.13) cannot be loaded; add its folder to LD_LIBRARY_PATH".into(),
        ));
    }
    BUILDING.fetch_add(1, Ordering::Relaxed);
    let start = Instant::now();
    let result = super::nvrtc::compile(src.name, src.text, &src.header_pairs(), options, output);
    BUILD_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    super::trace::record("NVRTC compile (one module)", start.elapsed());
    BUILT.fetch_add(1, Ordering::Relaxed);
    BUILDING.fetch_sub(1, Ordering::Relaxed);
    let bytes = result.map_err(|f| Error::Compile {
        kernel: src.name.into(),
        options: options.to_vec(),
        log: if f.log.is_empty() { f.status } else { f.log },
    })?;
    match output {
        Output::Cubin => Ok(Image::Cubin(bytes)),
        Output::Ptx => String::from_utf8(bytes)
            .map(Image::Ptx)
            .map_err(|_| Error::Compile {
                kernel: src.name.into(),
                options: options.to_vec(),
                log: "NVRTC returned PTX that is not UTF-8".into(),
            }),
    }
}

/// One NVRTC compilation to PTX (the compile checks read it).
pub fn compile_uncached(src: &KernelSource, options: &[String]) -> Result<String> {
    match compile_image(src, options, Output::Ptx)? {
        Image::Ptx(ptx) => Ok(ptx),
        Image::Cubin(_) => Err(Error::Compile {
            kernel: src.name.into(),
            options: options.to_vec(),
            log: "NVRTC returned a CUBIN where PTX was asked for".into(),
        }),
    }
}

#[cfg(test)]
#[path = "compile_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "compile_cache_tests.rs"]
mod cache_tests;
