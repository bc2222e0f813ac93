//! Compile checks of the float16 / bfloat16 kernels (`MODE_LUT`, `hist_lut.cuh`): every kernel a
//! plan names for them is in the PTX of their build, and the shared-memory table kernel and the
//! generic table kernels build alone as CUBINs for sm_90a.

use super::kernel_builds_tests::{check_one_kernel_cubin, choices, planned_kernels};
use super::prepared::sample_defines;
use crate::gpu::compile::tests::toolchain;
use crate::gpu::compile::{compile_uncached, options, HISTOGRAM};
use crate::sample::SampleType;

#[test]
fn half_builds_compile_every_planned_kernel_and_the_table_kernel() {
    if !toolchain() {
        return;
    }
    // Both types compile to the same kernels (their codes are looked up, never computed with).
    assert_eq!(
        sample_defines(SampleType::F16),
        sample_defines(SampleType::BF16)
    );
    let ptx = compile_uncached(
        &HISTOGRAM,
        &options("compute_90a", &sample_defines(SampleType::F16)),
    )
    .unwrap_or_else(|e| panic!("float16: {e}"));
    let mut names = planned_kernels(SampleType::F16, &choices());
    names.extend(planned_kernels(SampleType::BF16, &choices()));
    for n in &names {
        let shared = [
            "hist_fold_u32",
            "hist_fold_lanes16",
            "hist_part_bins",
            "hist_part_scan",
        ];
        assert!(n.contains("_lut") || shared.contains(&n.as_str()), "{n}");
    }
    for name in [
        "hist_lut_shared_none",
        "hist_exact_lut_f32",
        "hist_exact_lut_f64",
    ] {
        names.insert(name.to_string());
    }
    for name in &names {
        assert!(
            ptx.contains(&format!(".entry {name}(")),
            "{name} (named for 16-bit floats) missing from the PTX"
        );
    }
    // No arithmetic mode is built for them.
    for mode in ["_uniform32_", "_uniform64_", "_integer_", "_edges_"] {
        assert!(!ptx.contains(mode), "{mode} in the 16-bit float build");
    }
}

#[test]
fn half_table_kernels_compile_alone_as_cubin_for_sm_90a() {
    if !toolchain() {
        return;
    }
    for kernel in [
        "hist_lut_shared_none",
        "hist_shared_lut_none",
        "hist_shared16p_lut_none",
        "hist_global_lut_f32",
        "hist_part_count_lut",
        "hist_sliced4_lut_none",
    ] {
        check_one_kernel_cubin(SampleType::BF16, kernel);
    }
}
