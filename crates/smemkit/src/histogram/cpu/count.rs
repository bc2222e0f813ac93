//! Direct counting: chunks of samples coded and counted into per-thread counters, then summed.

use super::*;

/// Counts the codes of `chunk` into `ways` interleaved u32 copies of `stride` counters.
#[inline(always)]
pub(super) fn count_chunk<T: Sample, C: Codes<T>>(
    chunk: &[T],
    codes: &C,
    scratch: &mut [u32],
    stride: usize,
    ways: usize,
) {
    if let Some(n) = codes.integer_bins() {
        if let Some(xs) = same_type::<T, i32>(chunk) {
            count_i32(xs, n as u32, scratch, stride, ways);
            return;
        }
        // integer bins: codes computed and counted in one loop, four samples per round
        let ic = IntegerCodes { n };
        let code = |x: T| Codes::<T>::code(&ic, x) as usize;
        let scratch = &mut scratch[..stride * ways];
        let mut quads = chunk.chunks_exact(4);
        // SAFETY (all increments below): an integer code is at most n + 1 < stride, and
        // `w * stride + code` with w < ways stays inside `scratch` (length stride * ways).
        let w = [
            0,
            stride % (stride * ways),
            (2 % ways) * stride,
            (3 % ways) * stride,
        ];
        for q in &mut quads {
            let (a, b, c, d) = (code(q[0]), code(q[1]), code(q[2]), code(q[3]));
            debug_assert!(a.max(b).max(c).max(d) < stride);
            unsafe {
                *scratch.get_unchecked_mut(w[0] + a) += 1;
                *scratch.get_unchecked_mut(w[1] + b) += 1;
                *scratch.get_unchecked_mut(w[2] + c) += 1;
                *scratch.get_unchecked_mut(w[3] + d) += 1;
            }
        }
        for &x in quads.remainder() {
            scratch[code(x)] += 1;
        }
        return;
    }
    let mut buf = [0u32; BATCH];
    for xs in chunk.chunks(BATCH) {
        prefetch_ahead(xs);
        let buf = &mut buf[..xs.len()];
        codes.codes(xs, buf);
        count_codes!(buf.iter().copied(), scratch, stride, ways);
    }
}

/// How far ahead of the samples being counted the input is prefetched, in bytes (the hardware
/// prefetcher alone leaves a scalar counting loop waiting on memory: measured 2x slower).
pub(super) const PREFETCH_AHEAD: usize = 4096;

/// Prefetches the cache lines `PREFETCH_AHEAD` bytes after those of `xs` into L1.
#[inline(always)]
pub(super) fn prefetch_ahead<T>(xs: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = xs.as_ptr().cast::<i8>().wrapping_add(PREFETCH_AHEAD);
        let bytes = std::mem::size_of_val(xs);
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch never faults, whatever the address; `wrapping_add` computes the
            // address without creating an out-of-bounds reference.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(off),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = xs;
}

/// Bins below [`PARTITION_MIN_BINS`]: private interleaved counters per worker, merged at the end.
/// Returns `nbins + 3` slots.
pub(super) fn run_counts<T: Sample, C: Codes<T>>(
    samples: &[T],
    nbins: usize,
    codes: &C,
) -> Vec<u64> {
    let stride = nbins + 3 + SPARE;
    let int32 = codes.integer_bins().is_some() && same_type::<T, i32>(samples).is_some();
    if int32 && nbins >= I32_NARROW_MIN_BINS {
        let xs = same_type::<T, i32>(samples).expect("int32 samples");
        return run_counts_i32_narrow(xs, nbins);
    }
    let ways = ways_for(
        stride,
        if int32 {
            I32_COUNTER_BYTES
        } else {
            COUNTER_BYTES
        },
    );
    let empty = || (Vec::<u64>::new(), Vec::<u32>::new());
    let (counts, _) = samples
        .par_chunks(chunk_len(samples.len()))
        .fold(empty, |(mut counts, mut scratch), chunk| {
            if counts.is_empty() {
                counts = vec![0; stride];
                scratch = vec![0; stride * ways];
            }
            count_chunk(chunk, codes, &mut scratch, stride, ways);
            // Fold the u32 copies into u64 (a chunk holds fewer than 2^32 samples).
            for sub in scratch.chunks_mut(stride) {
                for (c, s) in counts.iter_mut().zip(sub.iter_mut()) {
                    *c += *s as u64;
                    *s = 0;
                }
            }
            (counts, scratch)
        })
        .map(|(counts, _)| (counts, Vec::new()))
        .reduce(empty, |(mut a, _), (b, _)| {
            if a.is_empty() {
                return (b, Vec::new());
            }
            if !b.is_empty() {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            }
            (a, Vec::new())
        });
    if counts.is_empty() {
        vec![0; stride]
    } else {
        counts
    }
}
