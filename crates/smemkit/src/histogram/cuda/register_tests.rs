//! The register budget of the shared-memory kernels of computed bins: their launch bounds ask for
//! two 512-thread blocks per SM (64 registers a thread), and NVRTC must meet that without local
//! memory (spills would cost more than the occupancy gains). Read from the CUBIN's `.nv.info`
//! attributes: EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE (0x12), both per function.

use super::prepared::{kernel_name, sample_defines, Counting, WeightKind};
use crate::gpu::compile::{compile_image, Build, Image, Output, HISTOGRAM};
use crate::histogram::bins::{BinSpec, Binning, OutOfRange};
use crate::histogram::plan::{self, DeviceLimits, StrategyChoice, Workload};
use crate::sample::{SampleType, Samples};

/// `(attribute, value)` of every EIATTR in the CUBIN's global `.nv.info` section whose payload
/// is a (function, value) pair.
pub(super) fn function_attributes(cubin: &[u8]) -> Vec<(u8, u32)> {
    let u16_at = |o: usize| u16::from_le_bytes([cubin[o], cubin[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(cubin[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(cubin[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let names = u64_at(shoff + shstrndx * shentsize + 0x18);
    let mut out = Vec::new();
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let name = &cubin[names + u32_at(h) as usize..];
        if !name.starts_with(b".nv.info\0") {
            continue;
        }
        let (start, size) = (u64_at(h + 0x18), u64_at(h + 0x20));
        let mut o = start;
        while o + 4 <= start + size {
            let (format, attribute) = (cubin[o], cubin[o + 1]);
            if format == 4 {
                let len = u16_at(o + 2);
                if len == 8 {
                    out.push((attribute, u32_at(o + 8)));
                }
                o += 4 + len;
            } else {
                o += 4;
            }
        }
    }
    out
}

#[test]
fn computed_bins_fit_two_blocks_per_sm_without_spilling() {
    if !crate::gpu::compile::tests::toolchain() {
        return;
    }
    let limits = DeviceLimits::H100;
    for (t, sample) in [
        (SampleType::F32, Samples::F32(&[0.0])),
        (SampleType::F64, Samples::F64(&[0.0])),
    ] {
        for nbins in [1000usize, 4096] {
            let spec = BinSpec::Uniform {
                nbins,
                range: Some((-4.0, 4.0)),
            };
            let binning = Binning::resolve(&spec, sample).unwrap();
            let w = Workload::new(nbins, t, false).with_samples(Some(1 << 28));
            let p = plan::plan(&w, &limits, StrategyChoice::Shared).unwrap();
            let what = Counting {
                sample_type: t,
                weights: WeightKind::None,
                binning: &binning,
                policy: OutOfRange::Ignore,
            };
            let kernel = kernel_name(&p, &limits, &what);
            let defines = sample_defines(t);
            let build = Build {
                src: &HISTOGRAM,
                defines: &defines,
                kernel: &kernel,
            };
            let image = compile_image(&HISTOGRAM, &build.options("sm_90a"), Output::Cubin);
            let Ok(Image::Cubin(cubin)) = image else {
                panic!("{kernel}: no CUBIN")
            };
            let attrs = function_attributes(&cubin);
            let get = |a: u8| attrs.iter().find(|(k, _)| *k == a).map(|(_, v)| *v);
            let regs = get(0x2f).unwrap_or_else(|| panic!("{kernel}: no register count"));
            assert!(regs <= 64, "{t} {kernel}: {regs} registers");
            assert_eq!(get(0x12), Some(0), "{t} {kernel}: a stack frame (spills)");
        }
    }
}

/// The spill kernels run 1024-thread blocks (64 registers a thread) with the prefetching loop, the
/// packed counters' wrap path and a global atomic beside it: NVRTC must fit that without local
/// memory, for every mode `auto` spills (float bins off the grid, integer samples over a range,
/// edges).
#[test]
fn spill_kernels_fit_1024_threads_without_spilling() {
    if !crate::gpu::compile::tests::toolchain() {
        return;
    }
    for (t, kernel) in [
        (SampleType::F32, "hist_spill8_uniform32w_none"),
        (SampleType::F32, "hist_spill8_uniform32_none"),
        (SampleType::F64, "hist_spill8_uniform64_none"),
        (SampleType::I32, "hist_spill8_uniform64_none"),
        (SampleType::F32, "hist_spill8_edges_none"),
        (SampleType::F32, "hist_spill4_uniform32w_none"),
        (SampleType::F64, "hist_spill4_uniform64x_none"),
        (SampleType::I32, "hist_spill4_integer_none"),
    ] {
        let defines = sample_defines(t);
        let build = Build {
            src: &HISTOGRAM,
            defines: &defines,
            kernel,
        };
        let image = compile_image(&HISTOGRAM, &build.options("sm_90a"), Output::Cubin);
        let Ok(Image::Cubin(cubin)) = image else {
            panic!("{t} {kernel}: no CUBIN")
        };
        let attrs = function_attributes(&cubin);
        let get = |a: u8| attrs.iter().find(|(k, _)| *k == a).map(|(_, v)| *v);
        let regs = get(0x2f).unwrap_or_else(|| panic!("{kernel}: no register count"));
        eprintln!("{t} {kernel}: {regs} registers");
        assert!(regs <= 64, "{t} {kernel}: {regs} registers");
        assert_eq!(get(0x12), Some(0), "{t} {kernel}: a stack frame (spills)");
    }
}

/// Bytes of shared memory the CUBIN gives every block for the system (sm_80 and later).
const SYSTEM_RESERVED_SHARED: usize = 1024;

/// Bytes of a kernel's static shared memory: the size of its `.nv.shared.<kernel>` section (none:
/// zero).
fn static_shared_bytes(cubin: &[u8], kernel: &str) -> usize {
    let u16_at = |o: usize| u16::from_le_bytes([cubin[o], cubin[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(cubin[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(cubin[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let names = u64_at(shoff + shstrndx * shentsize + 0x18);
    let want = format!(".nv.shared.{kernel}\0");
    (0..shnum)
        .map(|i| shoff + i * shentsize)
        .find(|&h| cubin[names + u32_at(h) as usize..].starts_with(want.as_bytes()))
        .map_or(0, |h| u64_at(h + 0x20))
}

/// The kernels whose dynamic counters may fill the opt-in limit (one block of packed counters, a
/// slice, a spill window) keep at most the planner's reserve of static shared memory beside them:
/// a byte more and the largest plans fail to launch.
#[test]
fn full_block_kernels_keep_static_shared_memory_within_the_reserve() {
    if !crate::gpu::compile::tests::toolchain() {
        return;
    }
    for (t, kernel) in [
        (SampleType::I32, "hist_shared8p_integer_none"),
        (SampleType::F32, "hist_spill8_uniform32w_none"),
        (SampleType::F64, "hist_spill8_uniform64_none"),
        (SampleType::I32, "hist_spill8_integer_none"),
        (SampleType::F64, "hist_spill4_uniform64_none"),
        (SampleType::F32, "hist_sliced8_uniform32w_none"),
        (SampleType::I32, "hist_sliced4_integer_none"),
    ] {
        let defines = sample_defines(t);
        let build = Build {
            src: &HISTOGRAM,
            defines: &defines,
            kernel,
        };
        let image = compile_image(&HISTOGRAM, &build.options("sm_90a"), Output::Cubin);
        let Ok(Image::Cubin(cubin)) = image else {
            panic!("{t} {kernel}: no CUBIN")
        };
        // The section holds the 1 KiB every block reserves for the system on sm_80 and later,
        // which the opt-in limit already leaves out.
        let bytes = static_shared_bytes(&cubin, kernel).saturating_sub(SYSTEM_RESERVED_SHARED);
        assert!(
            bytes <= plan::STATIC_SHARED_RESERVE,
            "{t} {kernel}: {bytes} bytes of static shared memory, the planner reserves {}",
            plan::STATIC_SHARED_RESERVE
        );
    }
}
