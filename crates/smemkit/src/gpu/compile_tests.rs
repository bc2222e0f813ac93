//! The compile checks: every kernel source builds with NVRTC for Hopper (no GPU needed), and the
//! compile cache's rules.

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
    let holds_cubin = |d: &std::path::Path| holds_file_ending(d, ".cubin");
    assert!(!holds_cubin(&dir));
    assert!(!holds_cubin(&dir.join("missing")));
    std::fs::write(dir.join("k.ptx"), "ptx").unwrap();
    std::fs::write(dir.join("k.cubin.123.tmp"), "half").unwrap();
    assert!(!holds_cubin(&dir), "PTX and a torn write are no CUBIN");
    std::fs::write(dir.join("k.cubin"), b"\x7fELF").unwrap();
    assert!(holds_cubin(&dir));
    assert!(holds_file_ending(&dir, ".ptx"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_trial_build_reaches_the_disk_cache_only_when_kept() {
    if !toolchain() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("smemkit-trial-{}", std::process::id()));
    let src = KernelSource {
        name: "trial.cu",
        text: "extern \"C\" __global__ void trial_only(int *x) { x[0] = 7; }",
        headers: &[],
        one_kernel: false,
    };
    let b = Build {
        src: &src,
        defines: &[],
        kernel: "trial_only",
    };
    let (arch, salt) = ("compute_90a", "trial test");
    let files = || std::fs::read_dir(&dir).map_or(0, |d| d.count());
    keep_on_disk_in(Some(dir.clone()), &b, arch, Output::Ptx, salt);
    assert_eq!(files(), 0, "nothing built yet: nothing to keep");
    let first = build_in(Some(dir.clone()), &b, arch, Output::Ptx, salt, Keep::Trial).unwrap();
    assert_eq!(files(), 0, "a trial stays in memory");
    keep_on_disk_in(Some(dir.clone()), &b, arch, Output::Ptx, salt);
    assert_eq!(files(), 1, "kept: written once");
    let again = build_in(Some(dir.clone()), &b, arch, Output::Ptx, salt, Keep::Disk).unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "from memory, not compiled again"
    );
    assert_eq!(files(), 1);
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
fn int_weights_kernel_compiles_for_hopper() {
    if !toolchain() {
        return;
    }
    let ptx = compile_uncached(&INT_WEIGHTS, &options("compute_90a", &[])).unwrap();
    assert!(
        ptx.contains(".entry widen_weights_i64("),
        "widen_weights_i64 missing"
    );
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
                crate::matmul::MatmulKernel::Tiled16,
                crate::matmul::MatmulKernel::RegisterBlocked,
                crate::matmul::MatmulKernel::Vectorized,
                crate::matmul::MatmulKernel::AsyncCopy,
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
    sets.push((INT_WEIGHTS, "int_weights".into(), vec![]));
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
