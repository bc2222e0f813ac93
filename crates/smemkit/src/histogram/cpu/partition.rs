//! The partitioned path for millions of bins: samples scattered into buckets of bins that fit in
//! the cache, then each bucket counted.

use super::*;

/// One worker's share of a partition round: 16-bit offsets per bucket (full 64-byte lines in a
/// region of `cap` lines per bucket, then a spill vector for what does not fit and the last partial
/// line), the extra slots, and the (code, count) pairs of the batches' hot bins.
pub(super) struct Part {
    /// `nbuckets * cap` lines of STAGE offsets from `base` (the first 64-byte aligned element).
    pub(super) lines: Vec<u16>,
    pub(super) base: usize,
    pub(super) filled: Vec<usize>,
    pub(super) cap: usize,
    pub(super) spill: Vec<Vec<u16>>,
    pub(super) extra: [u64; 3],
    pub(super) hot: Vec<(u32, u64)>,
}

impl Part {
    /// Appends a full staging line of bucket `b`: to its region while there is room (non-temporal
    /// stores), else to its spill vector.
    #[inline(always)]
    pub(super) fn push_line(&mut self, b: usize, line: &[u16; STAGE]) {
        let k = self.filled[b];
        if k < self.cap {
            let at = self.base + (b * self.cap + k) * STAGE;
            store_line(&mut self.lines[at..at + STAGE], line);
            self.filled[b] = k + 1;
        } else {
            self.spill[b].extend_from_slice(line);
        }
    }

    /// Counts `hits` samples of `code` apart (runs of one code share an entry).
    pub(super) fn add_hot(&mut self, code: u32, hits: u64) {
        match self.hot.last_mut() {
            Some((h, n)) if *h == code => *n += hits,
            _ => self.hot.push((code, hits)),
        }
    }

    /// Ends a scatter: orders its non-temporal stores before the buckets are read by other
    /// threads, and appends the buckets' partial staging lines (the first rows of `stage`, `fill`
    /// entries each) to their spill vectors.
    pub(super) fn close(&mut self, stage: &[[u16; STAGE]], fill: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a store fence has no preconditions.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
        for (b, (line, &f)) in stage.iter().zip(fill).take(self.filled.len()).enumerate() {
            self.spill[b].extend_from_slice(&line[..f as usize]);
        }
    }

    /// The offsets of bucket `b`, as two slices.
    pub(super) fn lists(&self, b: usize) -> [&[u16]; 2] {
        let start = self.base + b * self.cap * STAGE;
        [
            &self.lines[start..start + self.filled[b] * STAGE],
            &self.spill[b],
        ]
    }
}

/// Entries of one bucket's staging line (64 bytes of u16 offsets).
pub(super) const STAGE: usize = 32;

/// Writes a full staging line to `dst` with non-temporal stores (no read of the line from memory
/// before it is overwritten, no eviction of the cache-resident staging and counters).
#[inline(always)]
pub(super) fn store_line(dst: &mut [u16], src: &[u16; STAGE]) {
    let dst: &mut [u16; STAGE] = dst.try_into().expect("one line");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let d = dst.as_mut_ptr().cast::<__m128i>();
        let s = src.as_ptr().cast::<__m128i>();
        assert_eq!(d as usize % 64, 0);
        for k in 0..4 {
            // SAFETY: `dst` is 64 bytes long and 64-byte aligned (asserted; a line from
            // `Part::base` on), so each of the four 16-byte stores is aligned and in bounds; `src`
            // is 64 bytes long (unaligned loads).
            unsafe { _mm_stream_si128(d.add(k), _mm_loadu_si128(s.add(k))) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *dst = *src;
    }
}

/// Scatters the codes of `chunk` into `part`: each code is first written to a 64-byte staging line of
/// its bucket (software write combining; the lines of all buckets stay in L1) and a full line is
/// written to the bucket's region at once. Codes outside the bins and a batch's hot code go to
/// staging rows after the buckets that are only counted.
pub(super) fn scatter<T: Sample, C: Codes<T>>(
    chunk: &[T],
    codes: &C,
    nbins: usize,
    part: &mut Part,
) {
    let nbuckets = part.filled.len();
    // rows: buckets, then below / above / NaN, then eight rows that the hot code's samples go to
    // in rotation (their entries are dropped: the hot samples are counted separately)
    let hot_row = nbuckets + 3;
    let mut stage = vec![[0u16; STAGE]; nbuckets + 3 + 8];
    let mut fill = vec![0u8; nbuckets + 3 + 8];
    let mut counted = [0u64; 3];
    let mut buf = [0u32; BATCH];
    for xs in chunk.chunks(BATCH) {
        prefetch_ahead(xs);
        let buf = &mut buf[..xs.len()];
        codes.codes(xs, buf);
        let hot = hot_code_of(buf);
        let hits = buf.iter().filter(|&&c| c == hot).count() as u64;
        for (i, &c) in buf.iter().enumerate() {
            let c = c as usize;
            let row = if c < nbins {
                c >> BUCKET_BINS_LOG2
            } else {
                nbuckets + (c - nbins)
            };
            let row = if c as u32 == hot {
                hot_row + (i & 7)
            } else {
                row
            };
            let f = fill[row] as usize;
            stage[row][f] = c as u16;
            if f + 1 == STAGE {
                if row < nbuckets {
                    part.push_line(row, &stage[row]);
                } else if row < hot_row {
                    counted[row - nbuckets] += STAGE as u64;
                }
                fill[row] = 0;
            } else {
                fill[row] = f as u8 + 1;
            }
        }
        if hits > 0 {
            part.add_hot(hot, hits);
        }
    }
    part.close(&stage, &fill);
    for (c, &f) in counted.iter_mut().zip(&fill[nbuckets..nbuckets + 3]) {
        *c += f as u64;
    }
    for (e, c) in part.extra.iter_mut().zip(counted) {
        *e += c;
    }
}

/// The hot code of a batch of codes (see [`hot_code`]).
#[inline(always)]
pub(super) fn hot_code_of(codes: &[u32]) -> u32 {
    let step = (codes.len() / HOT_PROBES).max(1);
    let (mut cand, mut votes) = (u32::MAX, 0usize);
    for &c in codes.iter().step_by(step) {
        if votes == 0 {
            cand = c;
            votes = 1;
        } else if c == cand {
            votes += 1;
        } else {
            votes -= 1;
        }
    }
    let hits = codes.iter().step_by(step).filter(|&&c| c == cand).count();
    if hits >= HOT_MIN {
        cand
    } else {
        u32::MAX
    }
}

/// Bins from [`PARTITION_MIN_BINS`] on: scatter into buckets of 2^16 bins, then count each bucket in
/// a cache-resident scratch and add it into its own slice of the result. Returns `nbins + 3` slots.
pub(super) fn run_partitioned<T: Sample, C: Codes<T>>(
    samples: &[T],
    nbins: usize,
    codes: &C,
) -> Vec<u64> {
    partitioned_rounds(
        samples,
        nbins,
        BUCKET_BINS,
        PARTITION_ROUND,
        |chunk, part| scatter(chunk, codes, nbins, part),
        || vec![0u32; 4 * BUCKET_BINS],
        |lists, out, scratch| count_bucket(lists, scratch, out),
    )
}

/// The rounds of a partitioned count, shared by [`run_partitioned`] and the int32 path: `round`
/// samples at a time, the workers' chunks are scattered into [`Part`]s of `nbins / bucket_bins`
/// buckets by `scatter`, then each bucket is counted by `count` (with a worker's scratch from
/// `scratch`) into its slice of the result, and the parts' extra slots and hot counts are added.
/// Returns `nbins + 3` slots.
pub(super) fn partitioned_rounds<T: Sync, S: Send>(
    samples: &[T],
    nbins: usize,
    bucket_bins: usize,
    round: usize,
    scatter: impl Fn(&[T], &mut Part) + Sync,
    scratch: impl Fn() -> S + Sync + Send,
    count: impl Fn(&[&[u16]], &mut [u64], &mut S) + Sync,
) -> Vec<u64> {
    let nbuckets = nbins.div_ceil(bucket_bins);
    let mut counts = crate::huge_pages::zeroed::<u64>(nbins + 3);
    let workers = rayon::current_num_threads().max(1);
    let mut parts: Vec<Part> = Vec::new();
    for round in samples.chunks(round) {
        let part_len = round.len().div_ceil(workers * 2).max(MIN_CHUNK);
        let nparts = round.len().div_ceil(part_len);
        let part_len_max = part_len.min(round.len());
        // a region holds its bucket's expected share plus 1/8 and two lines
        let cap = (part_len_max / nbuckets + part_len_max / (8 * nbuckets)).div_ceil(STAGE) + 2;
        parts.resize_with(nparts, || Part {
            lines: Vec::new(),
            base: 0,
            filled: vec![0; nbuckets],
            cap,
            spill: vec![Vec::new(); nbuckets],
            extra: [0; 3],
            hot: Vec::new(),
        });
        parts
            .par_iter_mut()
            .zip(round.par_chunks(part_len))
            .for_each(|(part, chunk)| {
                if part.lines.is_empty() || part.cap != cap {
                    // zeroed by the allocator (pages mapped on first touch, no writing pass)
                    part.lines = crate::huge_pages::zeroed((nbuckets * cap + 1) * STAGE);
                    part.base = part.lines.as_ptr().align_offset(64);
                    part.cap = cap;
                }
                part.filled.fill(0);
                part.spill.iter_mut().for_each(Vec::clear);
                scatter(chunk, part);
            });
        let active = &parts[..nparts];
        counts[..nbins]
            .par_chunks_mut(bucket_bins)
            .enumerate()
            .for_each_init(&scratch, |s, (b, out)| {
                let lists: Vec<&[u16]> = active.iter().flat_map(|p| p.lists(b)).collect();
                count_split(&lists, out, s, &scratch, &count)
            });
        for p in parts[..nparts].iter_mut() {
            for (k, e) in p.extra.iter().enumerate() {
                counts[nbins + k] += e;
            }
            p.extra = [0; 3];
            for &(h, n) in &p.hot {
                counts[h as usize] += n;
            }
            p.hot.clear();
        }
    }
    counts
}

/// `count` on one bucket's lists, except that a bucket holding a large share of the samples
/// (skewed data), which would leave the other workers idle, has its lists halved and the halves
/// counted in parallel (the second with a new scratch).
pub(super) fn count_split<S: Send>(
    lists: &[&[u16]],
    out: &mut [u64],
    s: &mut S,
    scratch: &(impl Fn() -> S + Sync),
    count: &(impl Fn(&[&[u16]], &mut [u64], &mut S) + Sync),
) {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    if total <= SPLIT_BUCKET {
        return count(lists, out, s);
    }
    let (left, right): (Vec<&[u16]>, Vec<&[u16]>) =
        lists.iter().map(|l| l.split_at(l.len() / 2)).unzip();
    let mut right_out = vec![0u64; out.len()];
    rayon::join(
        || count_split(&left, out, s, scratch, count),
        || count_split(&right, &mut right_out, &mut scratch(), scratch, count),
    );
    out.iter_mut().zip(&right_out).for_each(|(o, r)| *o += r);
}

/// Counts one bucket's offsets (from every part) into `scratch` and adds them into `out`.
pub(super) fn count_bucket(lists: &[&[u16]], scratch: &mut [u32], out: &mut [u64]) {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    // Many entries for one bucket means skewed data: interleave four copies.
    let ways = if total > 4 * BUCKET_BINS { 4 } else { 1 };
    let (s0, rest) = scratch.split_at_mut(BUCKET_BINS);
    let (s1, rest) = rest.split_at_mut(BUCKET_BINS);
    let (s2, s3) = rest.split_at_mut(BUCKET_BINS);
    for &list in lists {
        if ways == 4 {
            let mut quads = list.chunks_exact(4);
            for q in &mut quads {
                s0[q[0] as usize] += 1;
                s1[q[1] as usize] += 1;
                s2[q[2] as usize] += 1;
                s3[q[3] as usize] += 1;
            }
            for &c in quads.remainder() {
                s0[c as usize] += 1;
            }
        } else {
            for &c in list {
                s0[c as usize] += 1;
            }
        }
    }
    let len = out.len();
    if ways == 4 {
        for (k, o) in out.iter_mut().enumerate() {
            *o += (s0[k] as u64 + s1[k] as u64) + (s2[k] as u64 + s3[k] as u64);
        }
        s1[..len].fill(0);
        s2[..len].fill(0);
        s3[..len].fill(0);
    } else {
        for (o, s) in out.iter_mut().zip(s0.iter()) {
            *o += *s as u64;
        }
    }
    s0[..len].fill(0);
}
