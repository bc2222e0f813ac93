//! Deterministic weighted sums: f64 atomics add weights in whatever order blocks and threads reach
//! them, so two runs (or two strategies) can differ in the last bits of a sum. This mode scales
//! every finite weight to an integer on a fixed-point grid chosen from the largest weight, adds the
//! integers exactly (two's complement 128-bit sums, order-independent) and rounds each bin's sum
//! to f64 once, so the bits depend on the data alone. `kernels/hist_exact.cuh` runs it on the GPU;
//! [`reference`] repeats the same arithmetic on the CPU, which the GPU tests compare bit for bit.
//!
//! The grid: with E = floor(log2 max |w|) over the finite non-zero weights, weight w counts as
//! `round_ties_even(w * 2^(61 - E))` units of `2^(E - 61)`: every weight is kept to within
//! 2^-63 of the largest one (a finer grid than an f64 sum's rounding of about n * 2^-53 of it), and
//! weights smaller than that count as zero. Infinite and NaN weights make their bin's sum NaN or
//! infinite, as any IEEE sum would.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use super::params::{mode_name, KernelBinParams};
use super::prepared::{sample_defines, Run, WeightKind};
use crate::error::{Error, Result};
use crate::gpu::compile::HISTOGRAM;
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::{Binning, OutOfRange, Slot};
use crate::histogram::plan::StrategyChoice;
use crate::histogram::result::Tallies;
use crate::sample::{Sample, SampleType, Weights};

/// Threads per block of the accumulating kernel (its `__launch_bounds__`).
const BLOCK: u32 = 512;

/// The deterministic mode's kernels and scratch for one histogram.
pub(crate) struct ExactSums {
    scale: CudaFunction,
    accumulate: CudaFunction,
    finish: CudaFunction,
    /// The scale word, 2 * nbins accumulator words, then nbins u32 flags (see kernels/hist_exact.cuh).
    scratch: CudaSlice<u64>,
    in_shared: bool,
    grid: u32,
    shared_bytes: u32,
    nbins: usize,
    sm_count: u32,
}

impl ExactSums {
    /// Compiles the mode for `sample_type` samples and `weights`, summing per block in shared
    /// memory (`StrategyChoice::Shared`, or `Auto` where 16 bytes a bin fit a block) or straight
    /// into global memory (`StrategyChoice::Global`); both give the same bits.
    pub(crate) fn new(
        gpu: &Arc<Gpu>,
        sample_type: SampleType,
        weights: WeightKind,
        binning: &Binning,
        choice: StrategyChoice,
    ) -> Result<ExactSums> {
        let wname = match weights {
            WeightKind::F32 => "f32",
            WeightKind::F64 => "f64",
            WeightKind::None | WeightKind::I64 => {
                return Err(Error::InvalidArgument(
                    "deterministic sums need float weights: counts and integer sums are exact                      already"
                        .into(),
                ))
            }
        };
        let nbins = binning.nbins();
        let optin = gpu.limits.smem_per_block_optin as usize;
        let fits = nbins.checked_mul(16).is_some_and(|b| b <= optin);
        let in_shared = match choice {
            StrategyChoice::Auto => fits,
            StrategyChoice::Global => false,
            StrategyChoice::Shared if fits => true,
            StrategyChoice::Shared => {
                return Err(Error::StrategyUnsupported {
                    strategy: "shared".into(),
                    reason: format!(
                        "deterministic sums need 16 bytes a bin in shared memory: {nbins} bins take {} bytes, a block has {optin}",
                        nbins.saturating_mul(16)
                    ),
                })
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "deterministic sums run in shared or global memory (strategy auto, shared or global), not {other:?}"
                )))
            }
        };
        let defines = sample_defines(sample_type);
        let names = [
            format!("hist_exact_{}_{wname}", mode_name(binning, sample_type)),
            format!("hist_exact_scale_{wname}"),
            "hist_exact_finish".to_string(),
        ];
        // The three are built in parallel where not cached.
        gpu.prepare(&HISTOGRAM, &defines, &names.each_ref().map(String::as_str))?;
        let [accumulate, scale, finish] = names
            .each_ref()
            .map(|name| gpu.function(&HISTOGRAM, &defines, name));
        let (accumulate, scale, finish) = (accumulate?, scale?, finish?);
        let shared_bytes = if in_shared { (nbins * 16) as u32 } else { 0 };
        let shape = LaunchShape {
            grid: 1,
            block: BLOCK,
            shared_bytes,
            cluster: 1,
        };
        launch::prepare_function(&accumulate, &shape, gpu.limits.smem_per_block_optin)?;
        let per_sm = accumulate
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, shared_bytes as usize, None)
            .map_err(cuda_err("querying occupancy"))?;
        if per_sm == 0 {
            return Err(Error::StrategyUnsupported {
                strategy: "deterministic".into(),
                reason: format!("a block of {BLOCK} threads with {shared_bytes} bytes of shared memory does not fit an SM"),
            });
        }
        let scratch = gpu
            .stream
            .alloc_zeros::<u64>(scratch_words(nbins))
            .map_err(cuda_err("allocating the deterministic sums' accumulators"))?;
        Ok(ExactSums {
            scale,
            accumulate,
            finish,
            scratch,
            in_shared,
            grid: per_sm * gpu.limits.sm_count,
            shared_bytes,
            nbins,
            sm_count: gpu.limits.sm_count,
        })
    }

    /// Whether the bins are summed per block in shared memory (for reports).
    pub(crate) fn in_shared(&self) -> bool {
        self.in_shared
    }

    /// Enqueues `run` on its stream: clears the scratch, finds the scale, sums, and writes (or,
    /// with `accumulate`, adds) the rounded sums to `out` (nbins f64) and the tallies to
    /// `tallies` (3 u64, which the caller zeroed or wants added to).
    ///
    /// # Safety
    /// `input` holds `n` samples of the compiled type and `weights` `n` weights of the compiled
    /// kind, `out` and `tallies` as above, all device memory of this context valid until
    /// `stream` has finished the run; runs sharing this scratch must not overlap.
    pub(crate) unsafe fn enqueue(
        &self,
        run: &Run<'_>,
        params: &KernelBinParams,
        accumulate: bool,
    ) -> Result<()> {
        let Run {
            stream,
            input,
            n,
            weights,
            out,
            tallies,
        } = *run;
        let scratch = self.scratch.device_ptr(stream).0;
        // SAFETY: the scratch holds scratch_words(nbins) words.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                scratch,
                0,
                scratch_words(self.nbins) * 8,
                stream.cu_stream(),
            )
        }
        .map_err(cuda_err("clearing the deterministic sums' accumulators"))?;
        let n64 = n as u64;
        let grid = |threads: u64| -> u32 {
            (threads.div_ceil(BLOCK as u64) as u32).clamp(1, self.sm_count * 8)
        };
        let cfg = |blocks: u32| LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        if n > 0 {
            let mut b = stream.launch_builder(&self.scale);
            b.arg(&weights).arg(&n64).arg(&scratch);
            // SAFETY: hist_exact_scale_*(w, n, scale_word): `weights` holds n weights (the
            // caller's guarantee), the scale word is the scratch's first.
            unsafe { b.launch(cfg(grid(n64))) }.map_err(cuda_err("launching the weight scale"))?;
            let (mut in_ptr, mut len, mut w_ptr, mut p) = (input, n64, weights, *params);
            let (mut s_ptr, mut t_ptr, mut shared) = (scratch, tallies, self.in_shared as i32);
            let mut args: [*mut c_void; 7] = [
                &mut in_ptr as *mut u64 as *mut c_void,
                &mut len as *mut u64 as *mut c_void,
                &mut w_ptr as *mut u64 as *mut c_void,
                &mut p as *mut KernelBinParams as *mut c_void,
                &mut s_ptr as *mut u64 as *mut c_void,
                &mut t_ptr as *mut u64 as *mut c_void,
                &mut shared as *mut i32 as *mut c_void,
            ];
            let shape = LaunchShape {
                grid: self.grid,
                block: BLOCK,
                shared_bytes: self.shared_bytes,
                cluster: 1,
            };
            // SAFETY: hist_exact_*(in, n, w, BinParams, scratch, tallies, in_shared) with the
            // pointers the caller guarantees.
            unsafe { launch::launch(&self.accumulate, stream, &shape, &mut args)? };
        }
        let (nbins, acc) = (self.nbins as u64, accumulate as i32);
        let mut b = stream.launch_builder(&self.finish);
        b.arg(&scratch).arg(&nbins).arg(&out).arg(&acc);
        // SAFETY: hist_exact_finish(scratch, nbins, out, accumulate): `out` holds nbins f64.
        unsafe { b.launch(cfg(grid(nbins))) }.map_err(cuda_err("launching the sums' rounding"))?;
        Ok(())
    }
}

/// Words of scratch for `nbins` bins: the scale word, two per bin, and the flags (u32 per bin).
fn scratch_words(nbins: usize) -> usize {
    1 + 2 * nbins + nbins.div_ceil(2)
}

/// 2^e for -1022 <= e <= 1023, exactly (`exact_pow2` of the kernels).
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// floor(log2 |x|) of a finite non-zero x, subnormals included.
fn floor_log2(x: f64) -> i32 {
    let bits = x.to_bits() & 0x7fff_ffff_ffff_ffff;
    let e = (bits >> 52) as i32;
    if e != 0 {
        e - 1023
    } else {
        63 - bits.leading_zeros() as i32 - 1074
    }
}

/// The weights' shift k (weights count as `w * 2^k` units), 0 without finite non-zero weights.
fn shift(weights: impl Iterator<Item = f64>) -> i32 {
    weights
        .filter(|w| w.is_finite() && *w != 0.0)
        .map(floor_log2)
        .max()
        .map_or(0, |e| 61 - e)
}

/// One weight on the grid of shift `k`.
fn units(w: f64, k: i32) -> i64 {
    (w * pow2(k / 2) * pow2(k - k / 2)).round_ties_even() as i64
}

/// A bin's exact sum (in units of 2^-k) and its flags, rounded once to f64.
fn finish(sum: i128, flags: u32, k: i32) -> f64 {
    if flags & 4 != 0 || flags & 3 == 3 {
        f64::NAN
    } else if flags & 1 != 0 {
        f64::INFINITY
    } else if flags & 2 != 0 {
        f64::NEG_INFINITY
    } else {
        let e = -k;
        // `as` rounds to nearest, ties to even, as the kernel's conversion does.
        sum as f64 * pow2(e / 2) * pow2(e - e / 2)
    }
}

/// The deterministic mode's sums and tallies on the CPU, bit for bit what the GPU returns (the
/// scale is taken over every weight, as on the GPU, including those of samples in no bin).
pub fn reference<T: Sample>(
    samples: &[T],
    weights: Weights<'_>,
    binning: &Binning,
    policy: OutOfRange,
) -> Result<(Vec<f64>, Tallies)> {
    if weights.len() != samples.len() {
        return Err(Error::WeightsLength {
            samples: samples.len(),
            weights: weights.len(),
        });
    }
    let nbins = binning.nbins();
    let k = shift((0..weights.len()).map(|i| weights.get(i)));
    let mut sums = vec![0i128; nbins];
    let mut flags = vec![0u32; nbins];
    let mut tallies = Tallies::default();
    let clamp = policy == OutOfRange::Clamp;
    for (i, &x) in samples.iter().enumerate() {
        let bin = match binning.locate(x) {
            Slot::Bin(b) => Some(b),
            Slot::Nan => {
                tallies.nan += 1;
                None
            }
            Slot::Below => {
                tallies.below += 1;
                clamp.then_some(0)
            }
            Slot::Above => {
                tallies.above += 1;
                clamp.then_some(nbins - 1)
            }
        };
        let Some(b) = bin else { continue };
        let w = weights.get(i);
        if w.is_nan() {
            flags[b] |= 4;
        } else if w.is_infinite() {
            flags[b] |= if w > 0.0 { 1 } else { 2 };
        } else {
            sums[b] = sums[b].wrapping_add(units(w, k) as i128);
        }
    }
    let out = sums
        .iter()
        .zip(&flags)
        .map(|(&s, &f)| finish(s, f, k))
        .collect();
    Ok((out, tallies))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::bins::BinSpec;

    #[test]
    fn floor_log2_matches_the_exponent() {
        for x in [
            1.0f64,
            1.5,
            2.0,
            0.75,
            1e300,
            -3.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e-310,
        ] {
            let e = floor_log2(x);
            let lower = (e as f64).exp2();
            assert!(x.abs() >= lower && x.abs() < lower * 2.0, "{x}: {e}");
        }
    }

    #[test]
    fn units_sit_within_2_62() {
        let w = [1.0f64, -0.999, 3.5e10, 1e-300];
        let k = shift(w.iter().copied());
        for x in w {
            assert!(units(x, k).unsigned_abs() <= 1 << 62);
        }
        assert_eq!(units(3.5e10, k).unsigned_abs() >> 61, 1);
    }

    #[test]
    fn sums_agree_with_f64_sums_and_ignore_order() {
        let samples: Vec<i32> = (0..10_000).map(|i| (i * 7919 % 13) - 1).collect();
        let weights: Vec<f64> = (0..10_000)
            .map(|i| ((i * 104729 % 1000) as f64 - 500.0) * 1e-3)
            .collect();
        let binning = Binning::resolve(
            &BinSpec::Integer { nbins: 10 },
            crate::sample::Samples::I32(&samples),
        )
        .unwrap();
        let (sums, tallies) = reference(
            &samples,
            Weights::F64(&weights),
            &binning,
            OutOfRange::Ignore,
        )
        .unwrap();
        let mut plain = [0.0f64; 10];
        for (&s, &w) in samples.iter().zip(&weights) {
            if (0..10).contains(&s) {
                plain[s as usize] += w;
            }
        }
        for (a, b) in sums.iter().zip(plain) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} against {b}");
        }
        assert_eq!(
            tallies.below + tallies.above,
            samples.iter().filter(|&&s| !(0..10).contains(&s)).count() as u64
        );
        // Reversed order: the same bits.
        let rs: Vec<i32> = samples.iter().rev().copied().collect();
        let rw: Vec<f64> = weights.iter().rev().copied().collect();
        let (again, _) = reference(&rs, Weights::F64(&rw), &binning, OutOfRange::Ignore).unwrap();
        assert_eq!(
            sums.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            again.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn non_finite_weights_resolve_like_ieee_sums() {
        let samples = [0i32, 0, 1, 1, 2, 3];
        let weights = [
            f64::INFINITY,
            1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -2.5,
        ];
        let binning = Binning::resolve(
            &BinSpec::Integer { nbins: 4 },
            crate::sample::Samples::I32(&samples),
        )
        .unwrap();
        let (sums, _) = reference(
            &samples,
            Weights::F64(&weights),
            &binning,
            OutOfRange::Ignore,
        )
        .unwrap();
        assert_eq!(sums[0], f64::INFINITY);
        assert!(sums[1].is_nan() && sums[2].is_nan());
        assert_eq!(sums[3], -2.5);
    }

    #[test]
    fn i128_rounding_is_to_nearest_even() {
        // 2^64 + 2^11 + 1 rounds up (past the halfway point of the 53-bit grid at 2^64).
        let v: i128 = (1i128 << 64) + (1 << 11) + 1;
        assert_eq!(finish(v, 0, 0), (1u128 << 64) as f64 + 4096.0);
        assert_eq!(finish(-v, 0, 0), -((1u128 << 64) as f64 + 4096.0));
    }
}
