//! Checks of the one-kernel builds that the GPU engine loads: every kernel a plan can name (the
//! planner swept over sample types, bin counts, binnings, weights and strategy choices on the
//! H100's limits) is an entry point that its one-kernel build of histogram.cu defines alone, and
//! NVRTC turns that build into a CUBIN for sm_90a.

use std::collections::BTreeSet;

use super::prepared::{companions, kernel_name, sample_defines, Counting, WeightKind};
use crate::gpu::compile::tests::toolchain;
use crate::gpu::compile::{
    compile_image, compile_uncached, options, Build, Image, Output, HISTOGRAM,
};
use crate::histogram::bins::{BinSpec, Binning, OutOfRange};
use crate::histogram::plan::{self, DeviceLimits, StrategyChoice, Workload};
use crate::sample::{SampleType, Samples};

/// Bin counts from one bin to 16M: the planner's thresholds lie between them.
const BIN_COUNTS: [usize; 12] = [
    1,
    100,
    256,
    1000,
    4096,
    20000,
    32768,
    65536,
    131072,
    500_000,
    1 << 20,
    1 << 24,
];

/// One sample of type `t` (the binnings below fix their ranges, so its value does not matter).
fn one_sample(t: SampleType) -> Samples<'static> {
    match t {
        SampleType::U8 => Samples::U8(&[0]),
        SampleType::U16 => Samples::U16(&[0]),
        SampleType::U32 => Samples::U32(&[0]),
        SampleType::U64 => Samples::U64(&[0]),
        SampleType::I8 => Samples::I8(&[0]),
        SampleType::I16 => Samples::I16(&[0]),
        SampleType::I32 => Samples::I32(&[0]),
        SampleType::I64 => Samples::I64(&[0]),
        SampleType::F32 => Samples::F32(&[0.0]),
        SampleType::F64 => Samples::F64(&[0.0]),
        SampleType::F16 => Samples::F16(&[half::f16::ZERO]),
        SampleType::BF16 => Samples::BF16(&[half::bf16::ZERO]),
    }
}

/// Every binning kind of `t` with `nbins` bins: integer bins (integer samples), uniform bins over
/// a fixed range and over [0, nbins) (float32's exact kind), explicit edges (up to 2^20 bins).
fn binnings(t: SampleType, nbins: usize) -> Vec<Binning> {
    let mut specs = vec![
        BinSpec::Integer { nbins },
        BinSpec::Uniform {
            nbins,
            range: Some((-1.5, 7.25)),
        },
        BinSpec::Uniform {
            nbins,
            range: Some((0.0, nbins as f64)),
        },
    ];
    if nbins <= 1 << 20 {
        specs.push(BinSpec::Edges((0..=nbins).map(|i| i as f64).collect()));
    }
    specs
        .iter()
        .filter_map(|s| Binning::resolve(s, one_sample(t)).ok())
        .collect()
}

/// The strategy choices a caller can force, and `auto`.
pub(crate) fn choices() -> Vec<StrategyChoice> {
    let mut c = vec![
        StrategyChoice::Auto,
        StrategyChoice::Shared,
        StrategyChoice::Global,
        StrategyChoice::Partition,
        StrategyChoice::Cluster(None),
        StrategyChoice::Cluster(Some(2)),
        StrategyChoice::Cluster(Some(16)),
    ];
    for bits in [16, 8, 4] {
        c.push(StrategyChoice::Packed(bits));
        c.push(StrategyChoice::Sliced {
            bits: Some(bits),
            slices: None,
        });
        c.push(StrategyChoice::Exchange {
            bits: Some(bits),
            size: None,
        });
    }
    c.push(StrategyChoice::Sliced {
        bits: None,
        slices: None,
    });
    c.push(StrategyChoice::Exchange {
        bits: None,
        size: None,
    });
    for bits in [Some(16), Some(8), None] {
        c.push(StrategyChoice::ClusterPacked { bits, size: None });
    }
    c.push(StrategyChoice::Spill(None));
    c.push(StrategyChoice::Spill(Some(4)));
    c
}

/// The kernels the planner names for `t` under `choices` (with their companions: fold, partition
/// passes, skew probe), for small and large inputs.
pub(crate) fn planned_kernels(t: SampleType, choices: &[StrategyChoice]) -> BTreeSet<String> {
    let limits = DeviceLimits::H100;
    let mut names = BTreeSet::new();
    for nbins in BIN_COUNTS {
        for binning in binnings(t, nbins) {
            // As Prepared::sized plans them: 16-bit floats' table lookups are cheap binning.
            let exact = super::half_table::is_half(t) || super::prepared::on_grid(&binning, t);
            for weights in [
                WeightKind::None,
                WeightKind::F32,
                WeightKind::F64,
                WeightKind::I64,
            ] {
                for samples in [Some(1000), None] {
                    let w = Workload::new(nbins, t, weights != WeightKind::None)
                        .with_samples(samples)
                        .with_exact_float_bins(exact);
                    for &choice in choices {
                        let Ok(p) = plan::plan(&w, &limits, choice) else {
                            continue;
                        };
                        let probed = plan::skew_probe_threshold(&p, &w, choice).is_some();
                        let what = Counting {
                            sample_type: t,
                            weights,
                            binning: &binning,
                            policy: OutOfRange::Ignore,
                        };
                        names.insert(kernel_name(&p, &limits, &what));
                        names.extend(companions(&p, &what, probed));
                    }
                }
            }
        }
    }
    names
}

/// The `.text.<kernel>` sections of a CUBIN: its kernels.
fn cubin_kernels(cubin: &[u8]) -> BTreeSet<String> {
    let text = String::from_utf8_lossy(cubin);
    text.split('\0')
        .filter_map(|s| s.strip_prefix(".text."))
        .map(str::to_string)
        .collect()
}

/// Builds `kernel` alone as a CUBIN for sm_90a and checks that it holds that kernel only.
pub(crate) fn check_one_kernel_cubin(t: SampleType, kernel: &str) -> usize {
    let defines = sample_defines(t);
    let build = Build {
        src: &HISTOGRAM,
        defines: &defines,
        kernel,
    };
    let image = compile_image(&HISTOGRAM, &build.options("sm_90a"), Output::Cubin)
        .unwrap_or_else(|e| panic!("{t} {kernel}: {e}"));
    let Image::Cubin(cubin) = image else {
        panic!("{t} {kernel}: asked for a CUBIN")
    };
    assert!(cubin.starts_with(b"\x7fELF"), "{t} {kernel}: not an ELF");
    let kernels = cubin_kernels(&cubin);
    assert_eq!(
        kernels,
        BTreeSet::from([kernel.to_string()]),
        "{t}: the one-kernel build of {kernel} holds {kernels:?}"
    );
    cubin.len()
}

#[test]
fn every_histogram_kernel_compiles_for_hopper() {
    if !toolchain() {
        return;
    }
    for t in SampleType::ALL {
        let opts = options("compute_90a", &sample_defines(t));
        let ptx = compile_uncached(&HISTOGRAM, &opts).unwrap_or_else(|e| panic!("{t}: {e}"));
        // Every kernel a plan can name, as the engine names it.
        let choices = choices();
        for name in planned_kernels(t, &choices) {
            assert!(
                ptx.contains(&format!(".entry {name}(")),
                "{t}: {name} (named by a plan) missing from the PTX"
            );
        }
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
            // Float bins on a power-of-two grid, and float32 bins with a shortcut, have their own
            // builds.
            let own: &[&str] = match t {
                SampleType::F32 => &["uniform32x", "uniform32i", "uniform32w"],
                SampleType::F64 => &["uniform64x"],
                _ => &[],
            };
            let modes: Vec<&str> = [mode, "edges"].iter().chain(own).copied().collect();
            for w in ["none", "f32", "f64", "i64"] {
                for &m in &modes {
                    let name = format!("hist_{strategy}_{m}_{w}");
                    assert!(
                        ptx.contains(&format!(".entry {name}(")),
                        "{t}: {name} missing from the PTX"
                    );
                }
            }
            for &m in &modes {
                for name in [
                    format!("hist_verdict_{m}"),
                    format!("hist_exact_{m}_f32"),
                    format!("hist_exact_{m}_f64"),
                ] {
                    assert!(
                        ptx.contains(&format!(".entry {name}(")),
                        "{t}: {name} missing from the PTX"
                    );
                }
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
                "spill8",
                "spill4",
                "clusterpacked16",
                "clusterpacked8",
            ] {
                for &m in &modes {
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
fn the_planner_names_kernels_of_every_family() {
    let names = planned_kernels(SampleType::I32, &choices());
    for family in [
        "hist_shared_",
        "hist_sharedp_",
        "hist_shared16_",
        "hist_shared8p_",
        "hist_shared4p_",
        "hist_cluster_",
        "hist_exchange16_",
        "hist_exchange8_",
        "hist_clusterpacked16_",
        "hist_clusterpacked8_",
        "hist_sliced8_",
        "hist_sliced4_",
        "hist_slicedsums_",
        "hist_spill8_",
        "hist_spill4_",
        "hist_global_",
        "hist_fold_u32",
        "hist_fold_lanes16",
        "hist_part_count_",
        "hist_part_scatter_",
        "hist_part_bins",
        "hist_part_scan",
        "hist_verdict_",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(family)),
            "no {family} kernel among {names:?}"
        );
    }
}

/// What `auto` picks at the standard bin counts for the common sample types, each kernel built
/// alone as a CUBIN for sm_90a.
#[test]
fn auto_kernels_build_alone_as_cubin_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for t in [SampleType::I32, SampleType::F32] {
        let auto = planned_kernels(t, &[StrategyChoice::Auto]);
        for kernel in &auto {
            if kernel.contains("_f32") || kernel.contains("_f64") || kernel.contains("_i64") {
                continue; // weighted: the exhaustive check below
            }
            check_one_kernel_cubin(t, kernel);
        }
    }
}

/// The deterministic sums' kernels (`exact_sums.rs`), each built alone as a CUBIN for sm_90a.
#[test]
fn exact_sum_kernels_build_alone_as_cubin_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for (t, mode) in [(SampleType::I32, "integer"), (SampleType::F32, "uniform32")] {
        for kernel in [
            format!("hist_exact_{mode}_f32"),
            "hist_exact_edges_f64".to_string(),
            "hist_exact_scale_f32".to_string(),
            "hist_exact_scale_f64".to_string(),
            "hist_exact_finish".to_string(),
        ] {
            check_one_kernel_cubin(t, &kernel);
        }
    }
}

/// The kernels of the sums in numpy's order (`numpy_sums.rs`), each built alone as a CUBIN for
/// sm_90a, for each kind of sample that has uniform bins.
#[test]
fn numpy_sum_kernels_build_alone_as_cubin_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for (t, mode) in [
        (SampleType::F32, "uniform32"),
        (SampleType::F32, "uniform32w"),
        (SampleType::F64, "uniform64"),
        (SampleType::I32, "uniform64"),
        (SampleType::BF16, "lut"),
    ] {
        for kernel in [
            format!("hist_np_sums_{mode}_f32"),
            format!("hist_np_sums_{mode}_f64"),
            "hist_np_chain_f32".to_string(),
            "hist_np_chain_f64".to_string(),
        ] {
            check_one_kernel_cubin(t, &kernel);
        }
    }
}

/// Every kernel any plan names, for every sample type, built alone as a CUBIN (hundreds of
/// compilations: minutes on many cores). Prints the summed CUBIN size per type.
#[test]
#[ignore = "builds every kernel of every sample type alone: minutes"]
fn every_planned_kernel_builds_alone_as_cubin_for_sm_90a() {
    use rayon::prelude::*;
    if !toolchain() {
        return;
    }
    for t in SampleType::ALL {
        let names: Vec<String> = planned_kernels(t, &choices()).into_iter().collect();
        let bytes: usize = names.par_iter().map(|k| check_one_kernel_cubin(t, k)).sum();
        eprintln!("{t}: {} kernels, {} KB of CUBIN", names.len(), bytes / 1024);
    }
}

/// The int64 weight kind's kernels (exact integer sums: u64 counters in shared memory, in a
/// cluster's shared memories and in global memory), each built alone as a CUBIN for sm_90a.
#[test]
fn int64_weight_kernels_build_alone_as_cubin_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for (t, kernel) in [
        (SampleType::F32, "hist_shared_uniform32_i64"),
        (SampleType::F32, "hist_cluster_edges_i64"),
        (SampleType::I32, "hist_global_integer_i64"),
        (SampleType::F64, "hist_shared_uniform64_i64"),
    ] {
        check_one_kernel_cubin(t, kernel);
    }
}

/// Explicit edges search through their table (`crate::search_table`): the shared, global and
/// small kernels of that mode, each built alone as a CUBIN for sm_90a.
#[test]
fn edges_kernels_with_their_search_table_build_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for t in [SampleType::F32, SampleType::F64, SampleType::I32] {
        for kernel in [
            "hist_shared_edges_none",
            "hist_global_edges_none",
            "hist_small_edges_none",
        ] {
            check_one_kernel_cubin(t, kernel);
        }
    }
}
