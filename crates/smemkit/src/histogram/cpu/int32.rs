//! The int32 fast paths: integer samples counted through slot arrays and narrow 8-bit counters.

use super::*;

/// Samples per batch of the int32 loop.
pub(super) const I32_BATCH: usize = 4096;
/// Samples whose slots are computed before they are counted.
pub(super) const I32_SUB: usize = 128;
/// Spare slots after the `nbins + 3` counters: samples of a block's hot bin are counted in a register
/// and their increments sent to these slots in rotation (no load-add-store chain on one counter).
pub(super) const SPARE: usize = 8;
/// A bin holding at least this many of [`HOT_PROBES`] evenly spaced samples of a batch is its hot bin.
pub(super) const HOT_MIN: usize = 8;
pub(super) const HOT_PROBES: usize = 32;

/// The hot bin of a batch of codes, by a majority vote over a few evenly spaced samples, or
/// `u32::MAX` (no code) when no code holds a large share of them.
#[inline(always)]
pub(super) fn hot_code(xs: &[i32], code: impl Fn(i32) -> u32) -> u32 {
    let step = (xs.len() / HOT_PROBES).max(1);
    let (mut cand, mut votes) = (u32::MAX, 0usize);
    for &x in xs.iter().step_by(step) {
        let c = code(x);
        if votes == 0 {
            cand = c;
            votes = 1;
        } else if c == cand {
            votes += 1;
        } else {
            votes -= 1;
        }
    }
    let hits = xs
        .iter()
        .step_by(step)
        .filter(|&&x| code(x) == cand)
        .count();
    if hits >= HOT_MIN {
        cand
    } else {
        u32::MAX
    }
}

/// One batch of int32 samples to slot indices (vectorisable): the sample itself inside `[0, n)`,
/// `n` above the range and `n + 1` below it (`min(u, n + (u >> 31))` with `u = x as u32`: negative
/// samples are huge as u32 and have their top bit set), then the hot code sent to the spare slots
/// in rotation, plus the offset of the sample's interleaved copy. Returns the hot samples.
#[inline(always)]
pub(super) fn i32_slots<const GAP: u32>(
    xs: &[i32],
    out: &mut [u32],
    n: u32,
    hot: u32,
    offs: &[u32; 16],
) -> u32 {
    // per-lane tallies (vector registers), summed at the end
    let mut hitss = [0u32; 16];
    let mut xq = xs.chunks_exact(16);
    let mut oq = out.chunks_exact_mut(16);
    for (x16, o16) in (&mut xq).zip(&mut oq) {
        for k in 0..16 {
            let u = x16[k] as u32;
            let v = u.min(n + (u >> 31));
            let h = v == hot;
            hitss[k] += h as u32;
            o16[k] = if h { n + 3 + (k as u32 & 7) * GAP } else { v } + offs[k];
        }
    }
    let mut hits = hitss.iter().sum::<u32>();
    for (k, (o, &x)) in oq
        .into_remainder()
        .iter_mut()
        .zip(xq.remainder())
        .enumerate()
    {
        let u = x as u32;
        let v = u.min(n + (u >> 31));
        let h = v == hot;
        hits += h as u32;
        *o = if h { n + 3 + (k as u32 & 7) * GAP } else { v } + offs[k];
    }
    hits
}

/// Counters larger than this are prefetched a sub-batch ahead in the int32 loop.
pub(super) const I32_PIPELINE_BYTES: usize = 1 << 20;

/// Prefetches the counters of `slots` (for writing).
#[inline(never)]
pub(super) fn prefetch_slots(slots: &[u32], scratch: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    for &i in slots {
        // SAFETY: a prefetch never faults; `wrapping_add` computes the address without creating
        // a reference.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                scratch.as_ptr().wrapping_add(i as usize).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slots, scratch);
}

/// One increment per slot index.
#[inline(never)]
pub(super) fn add_slots(slots: &[u32], scratch: &mut [u32]) {
    for &i in slots {
        debug_assert!((i as usize) < scratch.len());
        // SAFETY: the caller passes slot indices below scratch.len() (see count_i32_plain).
        unsafe { *scratch.get_unchecked_mut(i as usize) += 1 };
    }
}

/// int32 samples, integer bins `[0, n)`: slot indices computed a few at a time with vector
/// instructions, then one increment per sample. The below/above split of slot `n` is restored from
/// the count of negative samples; the hot bin's register count is added back.
pub(super) fn count_i32(chunk: &[i32], n: u32, scratch: &mut [u32], stride: usize, ways: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU has the features this version is compiled for (checked just above).
            return unsafe { count_i32_avx512(chunk, n, scratch, stride, ways) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { count_i32_avx2(chunk, n, scratch, stride, ways) };
        }
    }
    count_i32_plain(chunk, n, scratch, stride, ways)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512bw")]
pub(super) unsafe fn count_i32_avx512(
    chunk: &[i32],
    n: u32,
    scratch: &mut [u32],
    stride: usize,
    ways: usize,
) {
    count_i32_plain(chunk, n, scratch, stride, ways)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn count_i32_avx2(
    chunk: &[i32],
    n: u32,
    scratch: &mut [u32],
    stride: usize,
    ways: usize,
) {
    count_i32_plain(chunk, n, scratch, stride, ways)
}

#[inline(always)]
pub(super) fn count_i32_plain(
    chunk: &[i32],
    n: u32,
    scratch: &mut [u32],
    stride: usize,
    ways: usize,
) {
    debug_assert!(n as usize + 3 + SPARE <= stride && scratch.len() >= stride * ways);
    let mut offs = [0u32; 16];
    for (k, o) in offs.iter_mut().enumerate() {
        *o = ((k % ways) * stride) as u32;
    }
    let scratch = &mut scratch[..stride * ways];
    // Counters beyond L2 and a batch with a hot bin (few misses in the out-of-order window): the
    // slots of one sub-batch are computed (and their counters prefetched) while those of the
    // previous one are counted, so the cache misses overlap. It paid on hot data and slowed uniform
    // data, so it is off there (figures in bench/NOTES.md).
    let pipelined = stride * ways * 4 > I32_PIPELINE_BYTES;
    let mut bufs = [[0u32; I32_SUB]; 2];
    let mut pending = 0usize;
    let mut cur = 0usize;
    for batch in chunk.chunks(I32_BATCH) {
        let hot = hot_code(batch, |x| {
            let u = x as u32;
            u.min(n + (u >> 31))
        });
        for xs in batch.chunks(I32_SUB) {
            prefetch_ahead(xs);
            let (a, b) = bufs.split_at_mut(1);
            let (buf, prev) = if cur == 0 {
                (&mut a[0], &b[0])
            } else {
                (&mut b[0], &a[0])
            };
            let buf = &mut buf[..xs.len()];
            let hits = i32_slots::<1>(xs, buf, n, hot, &offs);
            if hits > 0 {
                scratch[hot as usize] += hits;
            }
            // a slot index is at most n + 3 + 7 < stride, plus a copy's offset
            // (k % ways) * stride: below stride * ways == scratch.len()
            let pipe = pipelined && hot != u32::MAX;
            if pipe {
                prefetch_slots(buf, scratch);
            }
            add_slots(&prev[..pending], scratch);
            if pipe {
                pending = xs.len();
                cur ^= 1;
            } else {
                add_slots(buf, scratch);
                pending = 0;
            }
        }
    }
    add_slots(&bufs[cur ^ 1][..pending], scratch);
    // the loop counts samples above the range in slot n and below it in slot n + 1
    let n = n as usize;
    scratch.swap(n, n + 1);
    for w in 1..ways {
        let (above, below) = (scratch[w * stride + n], scratch[w * stride + n + 1]);
        scratch[w * stride + n] = below;
        scratch[w * stride + n + 1] = above;
    }
}

/// From this many bins (and below [`PARTITION_MIN_BINS`]), int32 samples with integer bins are
/// counted in u8 counters with u32 carries ([`count_i32_narrow`]): a quarter of the u32 counters'
/// footprint, so 32768 bins fit L1 and 1M bins fit L2.
pub(super) const I32_NARROW_MIN_BINS: usize = 1 << 14;
/// The narrow loop's spare slots (see [`SPARE`]) are this many bytes apart (one per cache line).
pub(super) const NARROW_GAP: u32 = 64;
pub(super) const NARROW_SPARE: usize = SPARE * NARROW_GAP as usize;

/// One increment per slot index into u8 counters; a counter that wraps to zero carries into `hi`
/// (once per 256 increments of one counter: a rarely taken branch, and `hi` stays out of the cache
/// otherwise).
#[inline(never)]
pub(super) fn add_slots_narrow(slots: &[u32], lo: &mut [u8], hi: &mut [u32]) {
    for &i in slots {
        debug_assert!((i as usize) < lo.len() && lo.len() == hi.len());
        // SAFETY: the caller passes slot indices below lo.len() == hi.len() (see
        // count_i32_narrow_plain).
        unsafe {
            let c = lo.get_unchecked_mut(i as usize);
            *c = c.wrapping_add(1);
            if *c == 0 {
                *hi.get_unchecked_mut(i as usize) += 1;
            }
        }
    }
}

/// Prefetches the u8 counters of `slots` (for writing).
#[inline(never)]
pub(super) fn prefetch_slots_narrow(slots: &[u32], lo: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for &i in slots {
        // SAFETY: a prefetch never faults; `wrapping_add` computes the address without creating
        // a reference.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                lo.as_ptr().wrapping_add(i as usize).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slots, lo);
}

/// The slots of up to [`I32_SUB`] int32 samples as [`i32_slots`] computes them, less those of the
/// hot code, packed at the start of `out` (AVX-512 compress): the hot samples cost no increment.
/// Returns the number of slots written and of hot samples.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn i32_slots_compress(
    xs: &[i32],
    out: &mut [u32; I32_SUB],
    n: u32,
    hot: u32,
) -> (usize, u32) {
    assert!(xs.len() <= I32_SUB);
    let (mut len, mut kept) = (0usize, 0usize);
    let mut q = xs.chunks_exact(16);
    for x16 in &mut q {
        let mask: u32;
        // (inline assembly: the AVX-512 intrinsics are newer than this crate's minimum Rust)
        // slot v = min(u, n + (u >> 31)) of 16 samples, the lanes with v != hot compressed to
        // the front and stored at out[len..len + 16], their mask returned.
        // SAFETY: the caller runs this on a CPU with AVX-512F (the function's feature); x16 holds
        // 16 i32 (unaligned load); `len + 16 <= xs.len() <= I32_SUB` before this store, since every
        // earlier group of 16 added at most 16 to `len`, so the 64-byte store stays inside `out`.
        unsafe {
            std::arch::asm!(
                "vpbroadcastd {nv}, {n:e}",
                "vpbroadcastd {hv}, {hot:e}",
                "vmovdqu32 {x}, [{src}]",
                "vpsrld {t}, {x}, 31",
                "vpaddd {t}, {t}, {nv}",
                "vpminud {x}, {x}, {t}",
                "vpcmpd {k}, {x}, {hv}, 4",
                "vpcompressd {x} {{{k}}} {{z}}, {x}",
                "vmovdqu32 [{dst}], {x}",
                "kmovw {m:e}, {k}",
                src = in(reg) x16.as_ptr(),
                dst = in(reg) out.as_mut_ptr().add(len),
                n = in(reg) n,
                hot = in(reg) hot,
                nv = out(zmm_reg) _,
                hv = out(zmm_reg) _,
                x = out(zmm_reg) _,
                t = out(zmm_reg) _,
                k = out(kreg) _,
                m = lateout(reg) mask,
                options(nostack),
            );
        }
        let keep = mask.count_ones() as usize;
        len += keep;
        kept += keep;
    }
    let mut hits = (xs.len() - q.remainder().len() - kept) as u32;
    for &x in q.remainder() {
        let u = x as u32;
        let v = u.min(n + (u >> 31));
        if v == hot {
            hits += 1;
        } else {
            out[len] = v;
            len += 1;
        }
    }
    (len, hits)
}

/// [`count_i32`] into u8 counters `lo` with carries in `hi` (slot `k` counts `256 * hi[k] + lo[k]`;
/// both `n + 3 + NARROW_SPARE` long, one copy).
pub(super) fn count_i32_narrow(chunk: &[i32], n: u32, lo: &mut [u8], hi: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU has the features this version is compiled for (checked just above).
            return unsafe { count_i32_narrow_avx512(chunk, n, lo, hi) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { count_i32_narrow_avx2(chunk, n, lo, hi) };
        }
    }
    count_i32_narrow_plain::<false>(chunk, n, lo, hi)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512bw")]
pub(super) unsafe fn count_i32_narrow_avx512(chunk: &[i32], n: u32, lo: &mut [u8], hi: &mut [u32]) {
    count_i32_narrow_plain::<true>(chunk, n, lo, hi)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn count_i32_narrow_avx2(chunk: &[i32], n: u32, lo: &mut [u8], hi: &mut [u32]) {
    count_i32_narrow_plain::<false>(chunk, n, lo, hi)
}

#[inline(always)]
pub(super) fn count_i32_narrow_plain<const COMPRESS: bool>(
    chunk: &[i32],
    n: u32,
    lo: &mut [u8],
    hi: &mut [u32],
) {
    let stride = n as usize + 3 + NARROW_SPARE;
    assert!(lo.len() == stride && hi.len() == stride);
    let offs = [0u32; 16];
    // as in count_i32_plain: counters beyond this and a hot bin, the slots of one sub-batch are
    // prefetched while the previous one is counted
    let pipelined = stride > I32_PIPELINE_BYTES;
    let mut bufs = [[0u32; I32_SUB]; 2];
    let mut pending = 0usize;
    let mut cur = 0usize;
    for batch in chunk.chunks(I32_BATCH) {
        let hot = hot_code(batch, |x| {
            let u = x as u32;
            u.min(n + (u >> 31))
        });
        for xs in batch.chunks(I32_SUB) {
            prefetch_ahead(xs);
            let (a, b) = bufs.split_at_mut(1);
            let (buf, prev) = if cur == 0 {
                (&mut a[0], &b[0])
            } else {
                (&mut b[0], &a[0])
            };
            // a slot index is at most n + 3 + 7 * NARROW_GAP < stride
            #[cfg(target_arch = "x86_64")]
            let (len, hits) = if COMPRESS && hot != u32::MAX {
                // SAFETY: COMPRESS is true only in count_i32_narrow_avx512, which runs on a CPU
                // with AVX-512F.
                unsafe { i32_slots_compress(xs, buf, n, hot) }
            } else {
                let hits = i32_slots::<NARROW_GAP>(xs, &mut buf[..xs.len()], n, hot, &offs);
                (xs.len(), hits)
            };
            #[cfg(not(target_arch = "x86_64"))]
            let (len, hits) = (
                xs.len(),
                i32_slots::<NARROW_GAP>(xs, &mut buf[..xs.len()], n, hot, &offs),
            );
            let buf = &buf[..len];
            if hits > 0 {
                let h = hot as usize;
                let t = lo[h] as u32 + hits;
                lo[h] = t as u8;
                hi[h] += t >> 8;
            }
            let pipe = pipelined && hot != u32::MAX;
            if pipe {
                prefetch_slots_narrow(buf, lo);
            }
            add_slots_narrow(&prev[..pending], lo, hi);
            if pipe {
                pending = len;
                cur ^= 1;
            } else {
                add_slots_narrow(buf, lo, hi);
                pending = 0;
            }
        }
    }
    add_slots_narrow(&bufs[cur ^ 1][..pending], lo, hi);
    // the loop counts samples above the range in slot n and below it in slot n + 1
    let n = n as usize;
    lo.swap(n, n + 1);
    hi.swap(n, n + 1);
}

/// int32 samples, integer bins from [`I32_NARROW_MIN_BINS`]: per-worker u8 counters with u32
/// carries, folded into u64 after every chunk. Returns `nbins + 3` slots.
pub(super) fn run_counts_i32_narrow(samples: &[i32], nbins: usize) -> Vec<u64> {
    let stride = nbins + 3 + NARROW_SPARE;
    let empty = || (Vec::<u64>::new(), Vec::<u8>::new(), Vec::<u32>::new());
    let (counts, _, _) = samples
        .par_chunks(chunk_len(samples.len()))
        .fold(empty, |(mut counts, mut lo, mut hi), chunk| {
            if counts.is_empty() {
                counts = vec![0; stride];
                lo = vec![0; stride];
                hi = vec![0; stride];
            }
            count_i32_narrow(chunk, nbins as u32, &mut lo, &mut hi);
            // a chunk holds fewer than 2^32 samples: the carries fit u32
            for ((c, l), h) in counts.iter_mut().zip(lo.iter_mut()).zip(hi.iter_mut()) {
                *c += ((*h as u64) << 8) | *l as u64;
                *l = 0;
                *h = 0;
            }
            (counts, lo, hi)
        })
        .map(|(counts, _, _)| (counts, Vec::new(), Vec::new()))
        .reduce(empty, |(mut a, _, _), (b, _, _)| {
            if a.is_empty() {
                return (b, Vec::new(), Vec::new());
            }
            if !b.is_empty() {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            }
            (a, Vec::new(), Vec::new())
        });
    let mut counts = if counts.is_empty() {
        vec![0; stride]
    } else {
        counts
    };
    counts.truncate(nbins + 3);
    counts
}
