//! int32 samples with integer bins from [`PARTITION_MIN_BINS`] bins: the partitioned count of the
//! parent module, specialised the way its int32 loop is.
//!
//! The generic partition computes each sample's code through the per-sample [`Codes`] path and
//! sends every sample, hot ones included, through the scalar staging loop: ~11 cycles per sample
//! at 16M bins (bench/numpy/RESULTS.md). Here the slots of 128 samples at a time come from the
//! vector code of the int32 loop, a batch's hot bin is taken out before the scatter (AVX-512
//! compress, or a branch-free keep/skip without it) and counted in a register, and the buckets
//! are 2^15 bins wide, so each is counted into 32 KiB of u8 counters that stay in L1 (with u32
//! carries, as in [`count_i32_narrow`]) instead of 256 KiB of u32 counters in L2.

use super::*;

/// Bins per bucket: u8 counters of one bucket fill 32 KiB (L1 is 48 KiB).
const SHIFT: u32 = 15;
const BUCKET: usize = 1 << SHIFT;
/// Samples per round: 2 bytes of staging each (256 MiB at most). Every round ends with a pass over
/// the whole result (each bucket's counters folded into it): with the parent's 2^25, the four
/// rounds of 2^27 samples at 16M bins spent ~60 ms of the ~140 ms of counting in those passes.
const ROUND: usize = 1 << 27;

/// The slots of `xs` (at most [`I32_SUB`]) less those equal to `hot`, packed at the start of
/// `out`: slot `x` inside `[0, n)`, `n` above the range, `n + 1` below it. Returns the number kept
/// and the number equal to `hot`.
#[inline(always)]
fn slots_without_hot<const COMPRESS: bool>(
    xs: &[i32],
    out: &mut [u32; I32_SUB],
    n: u32,
    hot: u32,
) -> (usize, u32) {
    #[cfg(target_arch = "x86_64")]
    if COMPRESS {
        // SAFETY: COMPRESS is true only in `scatter_avx512`, which runs on a CPU with AVX-512F.
        return unsafe { i32_slots_compress(xs, out, n, hot) };
    }
    let mut len = 0usize;
    for &x in xs {
        let u = x as u32;
        let v = u.min(n + (u >> 31));
        // written always, kept (len advanced) only when not hot: no branch
        out[len] = v;
        len += (v != hot) as usize;
    }
    (len, (xs.len() - len) as u32)
}

/// Scatters the slots of `chunk` into `part` (buckets of [`BUCKET`] bins; offsets inside the
/// bucket as u16), with the hot samples of each batch counted apart.
fn scatter(chunk: &[i32], n: u32, part: &mut Part) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has the feature this version is compiled for (checked just above).
        return unsafe { scatter_avx512(chunk, n, part) };
    }
    scatter_plain::<false>(chunk, n, part)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scatter_avx512(chunk: &[i32], n: u32, part: &mut Part) {
    scatter_plain::<true>(chunk, n, part)
}

#[inline(always)]
fn scatter_plain<const COMPRESS: bool>(chunk: &[i32], n: u32, part: &mut Part) {
    let nbuckets = part.filled.len();
    // rows: the buckets, then above (slot n) and below (slot n + 1), which are only counted
    let mut stage = vec![[0u16; STAGE]; nbuckets + 2];
    let mut fill = vec![0u8; nbuckets + 2];
    let mut outside = [0u64; 2];
    let mut buf = [0u32; I32_SUB];
    let slot = |x: i32| {
        let u = x as u32;
        u.min(n + (u >> 31))
    };
    for batch in chunk.chunks(I32_BATCH) {
        let hot = hot_code(batch, slot);
        let mut hits = 0u64;
        for xs in batch.chunks(I32_SUB) {
            prefetch_ahead(xs);
            let (len, h) = slots_without_hot::<COMPRESS>(xs, &mut buf, n, hot);
            hits += h as u64;
            for &v in &buf[..len] {
                let row = if v < n {
                    (v >> SHIFT) as usize
                } else {
                    nbuckets + (v - n) as usize
                };
                let f = fill[row] as usize;
                stage[row][f] = (v as usize & (BUCKET - 1)) as u16;
                if f + 1 < STAGE {
                    fill[row] = f as u8 + 1;
                    continue;
                }
                fill[row] = 0;
                if row >= nbuckets {
                    outside[row - nbuckets] += STAGE as u64;
                } else {
                    part.push_line(row, &stage[row]);
                }
            }
        }
        if hits > 0 {
            if hot < n {
                part.add_hot(hot, hits);
            } else {
                outside[(hot - n) as usize] += hits;
            }
        }
    }
    part.close(&stage, &fill);
    for (o, &f) in outside.iter_mut().zip(&fill[nbuckets..]) {
        *o += f as u64;
    }
    // the parent's extra slots: below, above, NaN
    part.extra[0] += outside[1];
    part.extra[1] += outside[0];
}

/// One worker's counters for a bucket: u8 counters and their u32 carries, all zero between
/// buckets.
struct Scratch {
    lo: Box<[u8; BUCKET]>,
    hi: Box<[u32; BUCKET]>,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            lo: vec![0u8; BUCKET].try_into().expect("one bucket"),
            hi: vec![0u32; BUCKET].try_into().expect("one bucket"),
        }
    }
}

/// Counts one bucket's offsets (from every part) into `s` and adds them into `out` (at most
/// [`BUCKET`] bins), leaving `s` zeroed.
fn count_bucket(lists: &[&[u16]], out: &mut [u64], s: &mut Scratch) {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    if total < BUCKET / 2 {
        // few entries (skewed data whose hot bins were taken out, or a short input): added
        // straight into the result, which costs less than folding all the bucket's counters
        for list in lists {
            for &o in *list {
                out[o as usize] += 1;
            }
        }
        return;
    }
    let (lo, hi) = (&mut *s.lo, &mut *s.hi);
    let mut wraps = 0usize;
    for list in lists {
        for &o in *list {
            // offsets are below BUCKET (masked when staged): no bounds check
            let i = o as usize & (BUCKET - 1);
            let c = lo[i].wrapping_add(1);
            lo[i] = c;
            if c == 0 {
                hi[i] += 1;
                wraps += 1;
            }
        }
    }
    for (o, l) in out.iter_mut().zip(lo.iter_mut()) {
        *o += *l as u64;
        *l = 0;
    }
    // carries are rare (a counter wraps after 256 increments): the u32 array is read only then
    if wraps > 0 {
        for (o, h) in out.iter_mut().zip(hi.iter_mut()) {
            *o += (*h as u64) << 8;
            *h = 0;
        }
    }
}

/// int32 samples, integer bins from [`PARTITION_MIN_BINS`]. Returns `nbins + 3` slots.
pub(super) fn run_partitioned_i32(samples: &[i32], nbins: usize) -> Vec<u64> {
    let n = u32::try_from(nbins).expect("integer bins fit u32 slots");
    partitioned_rounds(
        samples,
        nbins,
        BUCKET,
        ROUND,
        |chunk, part| scatter(chunk, n, part),
        Scratch::new,
        count_bucket,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain count in the engine's slot order: bins, below, above, NaN (always 0 here).
    fn plain(xs: &[i32], nbins: usize) -> Vec<u64> {
        let mut c = vec![0u64; nbins + 3];
        for &x in xs {
            if x < 0 {
                c[nbins] += 1;
            } else if x as usize >= nbins {
                c[nbins + 1] += 1;
            } else {
                c[x as usize] += 1;
            }
        }
        c
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn agrees_with_a_plain_count() {
        let mut seed = 7u64;
        // bin counts: a whole number of buckets, a partial last bucket, one bin past a bucket
        for nbins in [1 << 21, (1 << 21) + 12345, (1 << 21) + 1] {
            for case in 0..6 {
                // the longest fills every bucket past BUCKET / 2 entries (u8 counters, carries);
                // the shorter ones leave them below (entries added straight into the result)
                let len = [0, 1, 100, 4097, 300_000, 1 << 22][case];
                let xs: Vec<i32> = (0..len)
                    .map(|i| match (case + i) % 9 {
                        // a hot bin inside the range, and skew on the out-of-range slots
                        0..=3 if case % 2 == 0 => 777,
                        4 if case == 3 => -5,
                        5 if case == 5 => nbins as i32 + 3,
                        6 => i32::MIN + (lcg(&mut seed) % 3) as i32,
                        7 => i32::MAX - (lcg(&mut seed) % 3) as i32,
                        _ => (lcg(&mut seed) % (nbins as u64 + 64)) as i32 - 32,
                    })
                    .collect();
                let want = plain(&xs, nbins);
                assert_eq!(
                    run_partitioned_i32(&xs, nbins),
                    want,
                    "{nbins} bins, case {case}"
                );
                // the version without AVX-512 as well
                let mut part = Part {
                    lines: vec![0u16; (nbins.div_ceil(BUCKET) * 4 + 1) * STAGE],
                    base: 0,
                    filled: vec![0; nbins.div_ceil(BUCKET)],
                    cap: 4,
                    spill: vec![Vec::new(); nbins.div_ceil(BUCKET)],
                    extra: [0; 3],
                    hot: Vec::new(),
                };
                part.base = part.lines.as_ptr().align_offset(64);
                scatter_plain::<false>(&xs, nbins as u32, &mut part);
                let mut got = vec![0u64; nbins + 3];
                let mut scratch = Scratch::new();
                for (b, out) in got[..nbins].chunks_mut(BUCKET).enumerate() {
                    count_bucket(&part.lists(b), out, &mut scratch);
                }
                got[nbins] += part.extra[0];
                got[nbins + 1] += part.extra[1];
                for &(h, c) in &part.hot {
                    got[h as usize] += c;
                }
                assert_eq!(got, want, "plain scatter, {nbins} bins, case {case}");
            }
        }
    }

    #[test]
    fn a_counter_wraps_many_times() {
        // 2^16 + 3 samples in one bin of a bucket and a few around it: the u8 carries
        let nbins = 1 << 22;
        let mut xs = vec![(1 << 21) + 5; (1 << 16) + 3];
        xs.extend([0, 1, (1 << 22) - 1, 1 << 22, -1]);
        assert_eq!(run_partitioned_i32(&xs, nbins), plain(&xs, nbins));
    }
}
