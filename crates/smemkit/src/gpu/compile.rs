//! Run-time compilation of the repository's CUDA C++ kernels with NVRTC. At run time NVRTC
//! compiles a kernel for the device's exact architecture as machine code (CUBIN, `sm_90a` on
//! Hopper), so that the driver loads it without compiling anything; PTX for the driver to compile
//! is the fallback where the driver refuses the CUBIN. Sources built one kernel at a time
//! (`KernelSource::one_kernel`) compile only the entry point a plan launches. Results are cached
//! in memory and on disk (`SMEMKIT_CACHE_DIR`), keyed by the source and its headers, the options
//! (the architecture among them), the output kind and the driver version, so a kernel is compiled
//! once per machine. NVRTC's version is not in the key: asking it means loading NVRTC, which a
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

fn memory_cache() -> &'static Mutex<HashMap<String, Arc<Image>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Image>>>> = OnceLock::new();
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
    let holds = disk_cache_dir().is_some_and(|dir| holds_cubin(&dir));
    HOLDS.store(holds, Ordering::Relaxed);
    holds
}

/// Whether `dir` holds a `.cubin` file.
fn holds_cubin(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".cubin"))
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
    /// [`super::load_stats`]).
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
/// key (the driver version: a newer driver may want the kernels compiled anew).
pub fn build(build: &Build<'_>, arch: &str, output: Output, salt: &str) -> Result<Arc<Image>> {
    let options = build.options(arch);
    let key = cache_key(build.src, &options, output, salt);
    if let Some(image) = memory_cache().lock().expect("cache lock").get(&key) {
        return Ok(image.clone());
    }
    let ext = match output {
        Output::Ptx => "ptx",
        Output::Cubin => "cubin",
    };
    let disk = disk_cache_dir().map(|d| d.join(format!("{key}.{ext}")));
    let read_span = super::trace::span("kernel cache read");
    let cached = disk
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|bytes| {
            match output {
                // A CUBIN is an ELF file; anything else (a torn write) is compiled anew.
                Output::Cubin => bytes.starts_with(b"\x7fELF").then_some(Image::Cubin(bytes)),
                Output::Ptx => String::from_utf8(bytes).ok().map(Image::Ptx),
            }
        });
    drop(read_span);
    let image = match cached {
        Some(image) => {
            FROM_DISK.fetch_add(1, Ordering::Relaxed);
            Arc::new(image)
        }
        None => {
            let image = Arc::new(compile_image(build.src, &options, output)?);
            if let Some(path) = disk {
                write_cache(&path, &key, &image);
            }
            image
        }
    };
    memory_cache()
        .lock()
        .expect("cache lock")
        .insert(key, image.clone());
    Ok(image)
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

/// The cache is an optimisation: a failure to write it is not an error. Written then renamed, so
/// that a concurrent reader never sees half a file.
fn write_cache(path: &std::path::Path, key: &str, image: &Image) {
    let Some(dir) = path.parent() else { return };
    let _ = std::fs::create_dir_all(dir);
    let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
    let bytes = match image {
        Image::Cubin(b) => b.as_slice(),
        Image::Ptx(t) => t.as_bytes(),
    };
    if std::fs::write(&tmp, bytes).is_ok() {
        let _ = std::fs::rename(&tmp, path);
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
pub(crate) mod tests {
    use super::*;
    use crate::sample::SampleType;

    /// Whether NVRTC can be loaded. On CI (`CI` set) a missing NVRTC is a failure, since
    /// `.ci/run` installs the NVRTC wheels; elsewhere the check is skipped, saying why.
    pub(crate) fn toolchain() -> bool {
        if nvrtc_available() {
            return true;
        }
        let reason = "libnvrtc.so.13 cannot be loaded (set LD_LIBRARY_PATH)";
        if std::env::var_os("CI").is_some() {
            panic!("kernel compile check cannot run on CI: {reason}");
        }
        eprintln!("skipping the kernel compile check: {reason}");
        false
    }

    #[test]
    fn a_folder_holds_kernels_once_it_has_a_cubin() {
        let dir = std::env::temp_dir().join(format!("smemkit-holds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!holds_cubin(&dir));
        assert!(!holds_cubin(&dir.join("missing")));
        std::fs::write(dir.join("k.ptx"), "ptx").unwrap();
        std::fs::write(dir.join("k.cubin.123.tmp"), "half").unwrap();
        assert!(!holds_cubin(&dir), "PTX and a torn write are no CUBIN");
        std::fs::write(dir.join("k.cubin"), b"\x7fELF").unwrap();
        assert!(holds_cubin(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn generators_compile_for_hopper() {
        if !toolchain() {
            return;
        }
        let ptx = compile_uncached(&GENERATE, &options("compute_90a", &[])).unwrap();
        let lab = compile_uncached(&LAB, &options("compute_90a", &[])).unwrap();
        for k in ["bank_probe", "atomic_shared", "atomic_global"] {
            assert!(lab.contains(&format!(".entry {k}(")), "{k} missing");
        }
        for k in ["generate_i32", "generate_u8", "generate_f32"] {
            assert!(ptx.contains(&format!(".entry {k}(")), "{k} missing");
        }
    }

    #[test]
    fn array_operation_kernels_compile_for_hopper() {
        if !toolchain() {
            return;
        }
        let types = [
            "unsigned char",
            "unsigned short",
            "unsigned int",
            "unsigned long long",
            "float",
            "double",
        ];
        for t in types {
            let d = [("ELEM_T", t.to_string())];
            let ptx = compile_uncached(&TRANSPOSE, &options("compute_90a", &d))
                .unwrap_or_else(|e| panic!("{t}: {e}"));
            for k in [
                "transpose_padded",
                "transpose_unpadded",
                "transpose_naive",
                "transpose_l1",
            ] {
                assert!(ptx.contains(&format!(".entry {k}(")), "{t}: {k}");
            }
            let ptx = compile_uncached(&REVERSE, &options("compute_90a", &d))
                .unwrap_or_else(|e| panic!("{t}: {e}"));
            for k in ["reverse_static", "reverse_dynamic", "reverse_carved"] {
                assert!(ptx.contains(&format!(".entry {k}(")), "{t}: {k}");
            }
        }
        for (t, acc, weighted) in [
            ("float", "float", 1),
            ("double", "double", 1),
            ("int", "unsigned int", 0),
            ("long long", "unsigned long long", 0),
        ] {
            // Both layouts (two runs of one chunk up to radius 8, a sliding window of 16 outputs
            // per thread above) and the radii at their edges.
            for radius in [1, 8, 9, 16, 17, 64] {
                let d = [
                    ("ELEM_T", t.to_string()),
                    ("ACC_T", acc.to_string()),
                    ("WEIGHTED", weighted.to_string()),
                    ("RADIUS", radius.to_string()),
                ];
                let ptx = compile_uncached(&STENCIL, &options("compute_90a", &d))
                    .unwrap_or_else(|e| panic!("{t} radius {radius}: {e}"));
                assert!(ptx.contains(".entry stencil1d("), "{t}");
                assert!(ptx.contains(".entry stencil1d_l1("), "{t}");
            }
        }
        // The racecheck proof's build: the same kernel without its first barrier.
        let d = [
            ("ELEM_T", "float".to_string()),
            ("ACC_T", "float".to_string()),
            ("WEIGHTED", "1".to_string()),
        ];
        let with = compile_uncached(&STENCIL, &options("compute_90a", &d)).unwrap();
        let mut d = d.to_vec();
        d.push(("STENCIL_SKIP_BARRIER_FOR_RACECHECK", "1".to_string()));
        let without = compile_uncached(&STENCIL, &options("compute_90a", &d)).unwrap();
        let barriers = |ptx: &str| ptx.matches("bar.sync").count();
        assert_eq!(
            barriers(&without) + 1,
            barriers(&with),
            "exactly one barrier fewer"
        );
    }

    /// Every cp.async of the matmul kernels copies its whole size: none takes a src-size operand
    /// (a partial or zero-fill copy). memcheck failed the async kernel on an H200 where its one
    /// new access was such a copy (16 bytes, src-size 12, the 16 bytes ending past A's
    /// allocation); the kernels now copy only elements inside the operand and store zeros.
    fn assert_whole_copies(ptx: &str, what: &str) {
        let copies = ptx
            .lines()
            .filter(|l| l.contains("cp.async.") && !l.contains("_group"));
        for line in copies {
            let (_, operands) = line
                .split_once(".shared.global")
                .unwrap_or_else(|| panic!("{what}: unexpected cp.async form: {line}"));
            assert_eq!(
                operands.matches(',').count(),
                2,
                "{what}: a cp.async with a src-size operand: {line}"
            );
        }
    }

    #[test]
    fn matmul_kernels_compile_for_every_transpose_pair() {
        if !toolchain() {
            return;
        }
        // Hopper, and Ampere (the oldest with cp.async) so that the async kernel's PTX is checked
        // beyond the one architecture.
        for arch in ["compute_90a", "compute_80"] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let d = crate::matmul::cuda::defines(ta, tb);
                let ptx = compile_uncached(&MATMUL, &options(arch, &d))
                    .unwrap_or_else(|e| panic!("{arch} ta {ta} tb {tb}: {e}"));
                for k in [
                    crate::MatmulKernel::Tiled16,
                    crate::MatmulKernel::RegisterBlocked,
                    crate::MatmulKernel::Vectorized,
                    crate::MatmulKernel::AsyncCopy,
                ] {
                    let name = crate::matmul::cuda::kernel_name(k);
                    assert!(
                        ptx.contains(&format!(".entry {name}(")),
                        "{arch} ta {ta} tb {tb}: {name} missing"
                    );
                }
                // 4-byte copies always (a tile stored transposed); 16-byte ones where a layout
                // has rows contiguous in memory (A transposed or B not).
                assert!(
                    ptx.contains("cp.async.ca.shared.global"),
                    "{arch}: no cp.async"
                );
                if ta || !tb {
                    assert!(
                        ptx.contains("cp.async.cg.shared.global"),
                        "{arch}: no 16-byte cp.async"
                    );
                }
                assert_whole_copies(&ptx, &format!("matmul.cu {arch} ta {ta} tb {tb}"));
            }
        }
    }

    #[test]
    fn warp_tiled_matmul_compiles_for_every_configuration() {
        use crate::matmul::cuda::{warp_defines, WarpConfig};
        if !toolchain() {
            return;
        }
        let pairs = [(false, false), (true, false), (false, true), (true, true)];
        // Every layout with the default tiles (FP32 and TF32), on Hopper and Ampere.
        for arch in ["compute_90a", "compute_80"] {
            for (ta, tb) in pairs {
                for (tf32, entry) in [(false, "matmul_warp"), (true, "matmul_tf32")] {
                    let config = if tf32 {
                        WarpConfig::TF32
                    } else {
                        WarpConfig::DEFAULT
                    };
                    let d = warp_defines(&config, ta, tb, tf32);
                    let ptx = compile_uncached(&MATMUL_WARP, &options(arch, &d))
                        .unwrap_or_else(|e| panic!("{arch} ta {ta} tb {tb} tf32 {tf32}: {e}"));
                    assert!(ptx.contains(&format!(".entry {entry}(")), "{entry} missing");
                    assert!(
                        ptx.contains(".entry matmul_splitk_reduce("),
                        "no split-K reduction"
                    );
                    if tf32 {
                        assert!(ptx.contains("mma.sync.aligned.m16n8k8"), "no mma");
                    }
                    // A operand with M contiguous (transposed) or B with N contiguous: cp.async.
                    if ta || !tb {
                        assert!(ptx.contains("cp.async.cg.shared.global"), "no cp.async");
                    }
                    assert_whole_copies(&ptx, &format!("{entry} {arch} ta {ta} tb {tb}"));
                }
            }
        }
        // Every autotuner candidate, on the layout the benchmark uses.
        for c in WarpConfig::CANDIDATES {
            let d = warp_defines(&c, false, false, false);
            let ptx = compile_uncached(&MATMUL_WARP, &options("compute_90a", &d))
                .unwrap_or_else(|e| panic!("{}: {e}", c.name()));
            assert!(ptx.contains(".entry matmul_warp("), "{}", c.name());
            assert_whole_copies(&ptx, &c.name());
        }
    }

    type Defines = Vec<(&'static str, String)>;

    /// Every kernel source with every define set the library compiles it with on Hopper, named
    /// for the PTX dump below.
    fn define_sets() -> Vec<(KernelSource, String, Defines)> {
        use crate::matmul::cuda::{defines, warp_defines, WarpConfig};
        let mut sets = Vec::new();
        for t in SampleType::ALL {
            let d = crate::histogram::cuda::prepared::sample_defines(t);
            sets.push((HISTOGRAM, format!("histogram-{t}"), d));
        }
        let pairs = [(false, false), (true, false), (false, true), (true, true)];
        for (ta, tb) in pairs {
            let layout = format!("{}{}", ta as u8, tb as u8);
            sets.push((MATMUL, format!("matmul-{layout}"), defines(ta, tb)));
            let tf32 = warp_defines(&WarpConfig::TF32, ta, tb, true);
            sets.push((MATMUL_WARP, format!("matmul_warp-tf32-{layout}"), tf32));
            // The autotuner's candidates (FP32, the prefetching loop among them).
            for c in WarpConfig::CANDIDATES {
                let d = warp_defines(&c, ta, tb, false);
                sets.push((MATMUL_WARP, format!("matmul_warp-{}-{layout}", c.name()), d));
            }
        }
        sets.push((GENERATE, "generate".into(), vec![]));
        sets.push((LAB, "lab".into(), vec![]));
        sets
    }

    /// Writes the PTX of every define set to `$SMEMKIT_PTX_DUMP`, so that a change meant to move
    /// code only (splitting a kernel file) can be checked to give the same PTX (`diff -r` of two
    /// dumps). Options: `SMEMKIT_PTX_DUMP_SOURCES`, a folder to read the kernel files from instead
    /// of the embedded ones (an older version of the kernels: `git archive` of its commit);
    /// `SMEMKIT_PTX_DUMP_ONLY`, comma-separated substrings of the set names to dump;
    /// `SMEMKIT_PTX_DUMP_LINEINFO=1` keeps the library's `-lineinfo` (its `.loc` lines then name
    /// files and lines, which a split changes).
    #[test]
    #[ignore = "writes PTX to $SMEMKIT_PTX_DUMP for comparing two versions of the kernels"]
    fn dump_ptx() {
        if !toolchain() {
            return;
        }
        use crate::config::PTX_DUMP_SOURCES;
        use crate::config::{ptx_dump as var, PTX_DUMP, PTX_DUMP_LINEINFO, PTX_DUMP_ONLY};
        let dir = PathBuf::from(var(PTX_DUMP).expect("SMEMKIT_PTX_DUMP"));
        let only: Vec<String> = var(PTX_DUMP_ONLY)
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let lineinfo = var(PTX_DUMP_LINEINFO).as_deref() == Some("1");
        let from = var(PTX_DUMP_SOURCES).map(PathBuf::from);
        let leak = |path: PathBuf| -> &'static str {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            Box::leak(text.into_boxed_str())
        };
        std::fs::create_dir_all(&dir).unwrap();
        for (mut src, name, d) in define_sets() {
            if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
                continue;
            }
            if let Some(from) = &from {
                src.text = leak(from.join(src.name));
                let headers: Vec<Header> = src
                    .headers
                    .iter()
                    .map(|h| Header {
                        name: h.name,
                        text: leak(from.join(h.name)),
                    })
                    .collect();
                src.headers = Box::leak(headers.into_boxed_slice());
            }
            let mut opts = options("compute_90a", &d);
            opts.retain(|o| lineinfo || o != "-lineinfo");
            let ptx = match compile_uncached(&src, &opts) {
                Ok(ptx) => ptx,
                Err(e) => format!("compile error: {e}"),
            };
            std::fs::write(dir.join(format!("{name}.ptx")), ptx).unwrap();
        }
    }

    #[test]
    fn a_compile_error_carries_the_nvrtc_log() {
        if !toolchain() {
            return;
        }
        let bad = KernelSource {
            name: "bad.cu",
            text: "extern \"C\" __global__ void k() { undefined_thing(); }",
            headers: &[],
            one_kernel: false,
        };
        match compile_uncached(&bad, &options("compute_90a", &[])) {
            Err(Error::Compile { log, options, .. }) => {
                assert!(log.contains("undefined_thing"), "log: {log}");
                assert!(options.iter().any(|o| o.contains("compute_90a")));
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
}
