//! Run-time compilation of the repository's CUDA C++ kernels with NVRTC. The kernels ship inside the
//! library (`include_str!`), so the binary needs no CUDA toolkit at build time; at run time NVRTC
//! compiles them for the device's architecture. Compiled PTX is cached in memory and on disk, keyed
//! by the source, the options, the architecture and the driver version, so a kernel is compiled once
//! per machine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// A CUDA source file embedded in the library, with the repository's headers it includes.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub name: &'static str,
    pub text: &'static str,
    /// `#include "name"`d files, handed to NVRTC by name.
    pub headers: &'static [Header],
}

/// A kernel header embedded in the library.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub name: &'static str,
    pub text: &'static str,
}

/// Embeds `kernels/<file>` as a [`Header`] of that name.
macro_rules! header {
    ($file:literal) => {
        Header {
            name: $file,
            text: include_str!(concat!("../../kernels/", $file)),
        }
    };
}

/// The histogram kernels: one header per strategy family, histogram.cu only instantiates.
pub const HISTOGRAM: KernelSource = KernelSource {
    name: "histogram.cu",
    text: include_str!("../../kernels/histogram.cu"),
    headers: &[
        header!("hist_bins.cuh"),
        header!("hist_walk.cuh"),
        header!("hist_shared.cuh"),
        header!("hist_packed.cuh"),
        header!("hist_cluster.cuh"),
        header!("hist_sliced.cuh"),
        header!("hist_exchange.cuh"),
        header!("hist_global.cuh"),
        header!("hist_partition.cuh"),
        header!("hist_probe.cuh"),
    ],
};
/// The 1D stencil with halo.
pub const STENCIL: KernelSource = KernelSource {
    name: "stencil.cu",
    text: include_str!("../../kernels/stencil.cu"),
    headers: &[],
};
/// Padded and unpadded tiled transposes.
pub const TRANSPOSE: KernelSource = KernelSource {
    name: "transpose.cu",
    text: include_str!("../../kernels/transpose.cu"),
    headers: &[],
};
/// Reversal with static, dynamic and carved shared memory.
pub const REVERSE: KernelSource = KernelSource {
    name: "reverse.cu",
    text: include_str!("../../kernels/reverse.cu"),
    headers: &[],
};
/// Matrix multiply: the guide's 16 x 16 tiles, register blocking, vectorised loads, cp.async.
pub const MATMUL: KernelSource = KernelSource {
    name: "matmul.cu",
    text: include_str!("../../kernels/matmul.cu"),
    headers: &[],
};
/// Matrix multiply with warp tiling and a multi-stage cp.async pipeline (FP32, and TF32 tensor
/// cores with `-DTF32=1`), one tile configuration per compilation.
pub const MATMUL_WARP: KernelSource = KernelSource {
    name: "matmul_warp.cu",
    text: include_str!("../../kernels/matmul_warp.cu"),
    headers: &[
        header!("matmul_warp_pipeline.cuh"),
        header!("matmul_warp_fp32.cuh"),
        header!("matmul_warp_prefetch.cuh"),
        header!("matmul_warp_tf32.cuh"),
    ],
};
/// The bank-conflict probe.
pub const LAB: KernelSource = KernelSource {
    name: "lab.cu",
    text: include_str!("../../kernels/lab.cu"),
    headers: &[],
};
/// Device-side generators of benchmark data.
pub const GENERATE: KernelSource = KernelSource {
    name: "generate.cu",
    text: include_str!("../../kernels/generate.cu"),
    headers: &[],
};

impl KernelSource {
    /// The file and its headers, as NVRTC takes them.
    fn header_pairs(&self) -> Vec<(&'static str, &'static str)> {
        self.headers.iter().map(|h| (h.name, h.text)).collect()
    }
}

/// Where the CUDA headers live: `CUDA_HOME`, then `CUDA_PATH`, then `/usr/local/cuda`.
pub fn cuda_root() -> Result<PathBuf> {
    let candidates: Vec<(String, PathBuf)> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(|p| (format!("${v}"), PathBuf::from(p))))
        .chain(std::iter::once((
            "the default".to_string(),
            PathBuf::from("/usr/local/cuda"),
        )))
        .collect();
    for (_, root) in &candidates {
        if root.join("include").join("cooperative_groups.h").exists() {
            return Ok(root.clone());
        }
    }
    let tried: Vec<String> = candidates
        .iter()
        .map(|(w, p)| format!("{} ({w})", p.display()))
        .collect();
    Err(Error::CudaUnavailable(format!(
        "CUDA headers not found (no include/cooperative_groups.h under {}); set CUDA_HOME to a CUDA 13 installation",
        tried.join(", ")
    )))
}

/// True when the NVRTC library can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened; no NVRTC function is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// NVRTC options for `arch` (e.g. `compute_90a`) with the CUDA include paths and `-D` defines.
pub fn options(root: &Path, arch: &str, defines: &[(&str, String)]) -> Vec<String> {
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "-lineinfo".to_string(),
        format!("--include-path={}", root.join("include").display()),
        format!(
            "--include-path={}",
            root.join("include").join("cccl").display()
        ),
    ];
    opts.extend(defines.iter().map(|(k, v)| format!("-D{k}={v}")));
    opts
}

fn memory_cache() -> &'static Mutex<HashMap<String, Arc<String>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<String>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The folder of the on-disk caches: `SMEMKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/smemkit/ptx` or
/// `~/.cache/smemkit/ptx`. The compiled PTX and the matmul autotuner's choices live there.
pub(crate) fn disk_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SMEMKIT_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("smemkit").join("ptx"))
}

/// Compiles `src` with `options` to PTX, through the memory and disk caches. `salt` joins the cache
/// key (the driver version: a newer driver may want the kernels compiled anew).
pub fn compile(src: &KernelSource, options: &[String], salt: &str) -> Result<Arc<String>> {
    let mut hasher = Sha256::new();
    let joined = options.join("\u{1f}");
    let headers = src.headers.iter().flat_map(|h| [h.name, h.text]);
    for part in [src.text, &joined, salt].into_iter().chain(headers) {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let key: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if let Some(ptx) = memory_cache().lock().expect("cache lock").get(&key) {
        return Ok(ptx.clone());
    }
    let disk = disk_cache_dir().map(|d| d.join(format!("{key}.ptx")));
    if let Some(ptx) = disk.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        let ptx = Arc::new(ptx);
        memory_cache()
            .lock()
            .expect("cache lock")
            .insert(key, ptx.clone());
        return Ok(ptx);
    }
    let ptx = Arc::new(compile_uncached(src, options)?);
    if let Some(path) = disk {
        // The cache is an optimisation: a failure to write it is not an error. Write then rename so a
        // concurrent reader never sees half a file.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
            let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
            if std::fs::write(&tmp, ptx.as_bytes()).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }
    memory_cache()
        .lock()
        .expect("cache lock")
        .insert(key, ptx.clone());
    Ok(ptx)
}

/// One NVRTC compilation, with the log in the error.
pub fn compile_uncached(src: &KernelSource, options: &[String]) -> Result<String> {
    if !nvrtc_available() {
        return Err(Error::CudaUnavailable(
            "the NVRTC library (libnvrtc.so.13) cannot be loaded; add its folder to LD_LIBRARY_PATH".into(),
        ));
    }
    let ptx = super::nvrtc::compile(
        src.name,
        src.text,
        &src.header_pairs(),
        options,
        super::nvrtc::Output::Ptx,
    )
    .map_err(|f| Error::Compile {
        kernel: src.name.into(),
        options: options.to_vec(),
        log: if f.log.is_empty() { f.status } else { f.log },
    })?;
    String::from_utf8(ptx).map_err(|_| Error::Compile {
        kernel: src.name.into(),
        options: options.to_vec(),
        log: "NVRTC returned PTX that is not UTF-8".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::SampleType;

    /// NVRTC and the headers, or the reason they are missing. On CI (`CI` set) a missing NVRTC is a
    /// failure, since `.ci/run` installs the NVRTC wheels; elsewhere the check is skipped, saying why.
    fn toolchain() -> Option<PathBuf> {
        let missing = if !nvrtc_available() {
            Some("libnvrtc.so.13 cannot be loaded (set LD_LIBRARY_PATH)".to_string())
        } else {
            match cuda_root() {
                Ok(root) => return Some(root),
                Err(e) => Some(e.to_string()),
            }
        };
        let reason = missing.unwrap_or_default();
        if std::env::var_os("CI").is_some() {
            panic!("kernel compile check cannot run on CI: {reason}");
        }
        eprintln!("skipping the kernel compile check: {reason}");
        None
    }

    #[test]
    fn every_histogram_kernel_compiles_for_hopper() {
        let Some(root) = toolchain() else { return };
        for t in SampleType::ALL {
            let opts = options(
                &root,
                "compute_90a",
                &crate::cuda::histogram::sample_defines(t),
            );
            let ptx = compile_uncached(&HISTOGRAM, &opts).unwrap_or_else(|e| panic!("{t}: {e}"));
            for strategy in ["shared", "cluster", "global"] {
                let mode = if t.is_float() {
                    if t == SampleType::F32 {
                        "uniform32"
                    } else {
                        "uniform64"
                    }
                } else {
                    "integer"
                };
                // Float32 bins from 0 of a power-of-two width have their own builds.
                let exact = (t == SampleType::F32).then_some("uniform32x");
                for w in ["none", "f32", "f64"] {
                    for m in [Some(mode), Some("edges"), exact].into_iter().flatten() {
                        let name = format!("hist_{strategy}_{m}_{w}");
                        assert!(
                            ptx.contains(&format!(".entry {name}(")),
                            "{t}: {name} missing from the PTX"
                        );
                    }
                }
                for m in [Some(mode), Some("edges"), exact].into_iter().flatten() {
                    let name = format!("hist_sharedp_{m}_none");
                    assert!(
                        ptx.contains(&format!(".entry {name}(")),
                        "{t}: {name} missing from the PTX"
                    );
                }
                // Packed narrow counters and the sliced kernels count samples only.
                for kernel in [
                    "shared16",
                    "shared16p",
                    "shared8",
                    "shared8p",
                    "shared4p",
                    "sliced8",
                    "sliced4",
                ] {
                    for m in [Some(mode), Some("edges"), exact].into_iter().flatten() {
                        let name = format!("hist_{kernel}_{m}_none");
                        assert!(
                            ptx.contains(&format!(".entry {name}(")),
                            "{t}: {name} missing from the PTX"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn generators_compile_for_hopper() {
        let Some(root) = toolchain() else { return };
        let ptx = compile_uncached(&GENERATE, &options(&root, "compute_90a", &[])).unwrap();
        let lab = compile_uncached(&LAB, &options(&root, "compute_90a", &[])).unwrap();
        for k in ["bank_probe", "atomic_shared", "atomic_global"] {
            assert!(lab.contains(&format!(".entry {k}(")), "{k} missing");
        }
        for k in ["generate_i32", "generate_u8", "generate_f32"] {
            assert!(ptx.contains(&format!(".entry {k}(")), "{k} missing");
        }
    }

    #[test]
    fn array_operation_kernels_compile_for_hopper() {
        let Some(root) = toolchain() else { return };
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
            let ptx = compile_uncached(&TRANSPOSE, &options(&root, "compute_90a", &d))
                .unwrap_or_else(|e| panic!("{t}: {e}"));
            for k in [
                "transpose_padded",
                "transpose_unpadded",
                "transpose_naive",
                "transpose_l1",
            ] {
                assert!(ptx.contains(&format!(".entry {k}(")), "{t}: {k}");
            }
            let ptx = compile_uncached(&REVERSE, &options(&root, "compute_90a", &d))
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
                let ptx = compile_uncached(&STENCIL, &options(&root, "compute_90a", &d))
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
        let with = compile_uncached(&STENCIL, &options(&root, "compute_90a", &d)).unwrap();
        let mut d = d.to_vec();
        d.push(("STENCIL_SKIP_BARRIER_FOR_RACECHECK", "1".to_string()));
        let without = compile_uncached(&STENCIL, &options(&root, "compute_90a", &d)).unwrap();
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
        let Some(root) = toolchain() else { return };
        // Hopper, and Ampere (the oldest with cp.async) so that the async kernel's PTX is checked
        // beyond the one architecture.
        for arch in ["compute_90a", "compute_80"] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let d = crate::cuda::matmul::defines(ta, tb);
                let ptx = compile_uncached(&MATMUL, &options(&root, arch, &d))
                    .unwrap_or_else(|e| panic!("{arch} ta {ta} tb {tb}: {e}"));
                for k in [
                    crate::MatmulKernel::Tiled16,
                    crate::MatmulKernel::RegisterBlocked,
                    crate::MatmulKernel::Vectorized,
                    crate::MatmulKernel::AsyncCopy,
                ] {
                    let name = crate::cuda::matmul::kernel_name(k);
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
        use crate::cuda::matmul::{warp_defines, WarpConfig};
        let Some(root) = toolchain() else { return };
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
                    let ptx = compile_uncached(&MATMUL_WARP, &options(&root, arch, &d))
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
            let ptx = compile_uncached(&MATMUL_WARP, &options(&root, "compute_90a", &d))
                .unwrap_or_else(|e| panic!("{}: {e}", c.name()));
            assert!(ptx.contains(".entry matmul_warp("), "{}", c.name());
            assert_whole_copies(&ptx, &c.name());
        }
    }

    type Defines = Vec<(&'static str, String)>;

    /// Every kernel source with every define set the library compiles it with on Hopper, named
    /// for the PTX dump below.
    fn define_sets() -> Vec<(KernelSource, String, Defines)> {
        use crate::cuda::matmul::{defines, warp_defines, WarpConfig};
        let mut sets = Vec::new();
        for t in SampleType::ALL {
            let d = crate::cuda::histogram::sample_defines(t);
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
        let Some(root) = toolchain() else { return };
        let var = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
        let dir = PathBuf::from(var("SMEMKIT_PTX_DUMP").expect("SMEMKIT_PTX_DUMP"));
        let only: Vec<String> = var("SMEMKIT_PTX_DUMP_ONLY")
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let lineinfo = var("SMEMKIT_PTX_DUMP_LINEINFO").as_deref() == Some("1");
        let from = var("SMEMKIT_PTX_DUMP_SOURCES").map(PathBuf::from);
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
            let mut opts = options(&root, "compute_90a", &d);
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
        let Some(root) = toolchain() else { return };
        let bad = KernelSource {
            name: "bad.cu",
            text: "extern \"C\" __global__ void k() { undefined_thing(); }",
            headers: &[],
        };
        match compile_uncached(&bad, &options(&root, "compute_90a", &[])) {
            Err(Error::Compile { log, options, .. }) => {
                assert!(log.contains("undefined_thing"), "log: {log}");
                assert!(options.iter().any(|o| o.contains("compute_90a")));
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
}
