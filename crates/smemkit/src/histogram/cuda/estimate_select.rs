//! The radix select of numpy's percentiles on the device (`est_digits`, `est_select` and
//! `est_gather` of `kernels/estimate.cu`), for the `fd` and `auto` estimators: the quartiles'
//! neighbours are selected exactly, 11 bits of their order-preserving keys at a time, the first
//! pass also finding the samples' extremes, and the later passes reading only a copy of the
//! samples that can still be selected when few can. The same passes select in the copy of
//! [`super::estimate_window`] (on its mapped keys), and over all samples when its windows miss.

use cudarc::driver::{CudaSlice, DevicePtr};

use super::estimate_passes::{
    arg, Passes, AHEAD, DIGITS, DIGITS_BLOCKS_PER_SM, DIGIT_BITS, GATHER_BLOCKS_PER_SM, RANKS,
};
use super::estimate_window::KeyMap;
use crate::error::Result;
use crate::gpu::device::cuda_err;
use crate::gpu::scratch::Scratch;

/// How the first radix-select pass counts its digits (`est_digits`'s `first`): 1, a warp match
/// per sample (robust to any ties, but a slow instruction); 2, lane 0's digit together and the
/// others one by one (cheap for spread samples and for samples all tied).
pub(crate) const FIRST_DIGITS: i32 = 1;

/// How the first pass over a window's copy counts its digits: its mapped keys spread over the
/// digits, or are all tied, both cheap for lane 0's digit together.
const FIRST_MAPPED_DIGITS: i32 = 2;

/// Threads of `est_select`'s one block (`SELECT_THREADS`): two digits each.
const SELECT_THREADS: u32 = (DIGITS / 2) as u32;

impl Passes {
    /// The first pass of a radix select (see [`Passes::select`]) over the `n` samples at `input`
    /// (those inside `range` when given): the histogram of their top digit, kept on the device,
    /// and from the same pass their [`Passes::extremes`] (read back: the ranks wanted depend on
    /// the count).
    ///
    /// # Safety
    /// As [`Passes::extremes`]; the samples must stay valid until [`Passes::select`] returns.
    pub unsafe fn extremes_and_digits(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
    ) -> Result<([u64; 4], Selection)> {
        // SAFETY: forwarded.
        unsafe { self.extremes_and_digits_by(input, n, range, FIRST_DIGITS) }
    }

    /// [`Passes::extremes_and_digits`] with the first pass's way of counting (`est_digits`'s
    /// `first`: 1 warp match, 2 lane 0's digit together).
    ///
    /// # Safety
    /// As [`Passes::extremes_and_digits`].
    pub(crate) unsafe fn extremes_and_digits_by(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
        first: i32,
    ) -> Result<([u64; 4], Selection)> {
        let width = 8 * self.size;
        let passes = width.div_ceil(DIGIT_BITS);
        let sel = Selection {
            input,
            n,
            range,
            width,
            map: None,
            hist: self.alloc(passes * RANKS * DIGITS * 8)?,
            prefix: self.alloc(2 * RANKS * 8)?,
            _copy: None,
        };
        let out = self.extremes_out()?;
        if n > 0 {
            let (shift, bits) = digit_of(width, 0);
            // SAFETY: forwarded; `out` holds four words, `sel` the first pass's histogram.
            unsafe { self.digits(&sel, 0, shift, bits, first, self.ptr(&out))? };
        }
        let w = self.read_u64(&out, 4)?;
        Ok(([w[0], w[1], w[2], w[3]], sel))
    }

    /// The first pass of a radix select (see [`Passes::select`]) over the `n` samples of a
    /// window's `copy` (est_window), on their keys mapped by `map`.
    ///
    /// # Safety
    /// `copy` must hold `n` samples whose keys `map` maps.
    pub(crate) unsafe fn mapped_selection(
        &self,
        copy: Scratch,
        n: usize,
        map: KeyMap,
    ) -> Result<Selection> {
        let passes = map.width.div_ceil(DIGIT_BITS);
        let sel = Selection {
            input: self.ptr(copy.slice()),
            n,
            range: None,
            width: map.width,
            map: Some(map),
            hist: self.alloc(passes * RANKS * DIGITS * 8)?,
            prefix: self.alloc(2 * RANKS * 8)?,
            _copy: Some(copy),
        };
        if n > 0 {
            let (shift, bits) = digit_of(map.width, 0);
            // SAFETY: forwarded; the first pass's histogram is in `sel`.
            unsafe { self.digits(&sel, 0, shift, bits, FIRST_MAPPED_DIGITS, 0)? };
        }
        Ok(sel)
    }

    /// Enqueues radix-select pass `pass` (est_digits) of `sel`: `first` 0 for a later pass, else
    /// the first pass's way of counting ([`FIRST_DIGITS`]).
    ///
    /// # Safety
    /// As [`Passes::extremes_and_digits`]; `ext` zero or four words.
    unsafe fn digits(
        &self,
        sel: &Selection,
        pass: usize,
        shift: usize,
        bits: usize,
        first: i32,
        ext: u64,
    ) -> Result<()> {
        let (mut input, mut n64) = (sel.input, sel.n as u64);
        let mut has_range = sel.range.is_some() as i32;
        let (mut lo, mut hi) = sel.range.unwrap_or((0.0, 0.0));
        let (mut shift_arg, mut bits_arg) = (shift as i32, bits as i32);
        let mut first = first;
        let mut prefix_ptr = self.ptr(&sel.prefix);
        let mut hist_ptr = self.ptr(&sel.hist) + (pass * RANKS * DIGITS * 8) as u64;
        let mut ext = ext;
        let grid = self.wave_for(sel.n.div_ceil(AHEAD), 256, DIGITS_BLOCKS_PER_SM);
        if let Some(map) = sel.map {
            let (mut lo0, mut hi0, mut lo1, mut off1) = (map.lo0, map.hi0, map.lo1, map.off1);
            // SAFETY: est_digits_mapped(in, n, shift, bits, first, prefix, hist, lo0, hi0, lo1,
            // off1); the copy held by `sel`, `sel`'s buffers.
            return unsafe {
                self.launch(
                    "est_digits_mapped",
                    grid,
                    256,
                    &mut [
                        arg(&mut input),
                        arg(&mut n64),
                        arg(&mut shift_arg),
                        arg(&mut bits_arg),
                        arg(&mut first),
                        arg(&mut prefix_ptr),
                        arg(&mut hist_ptr),
                        arg(&mut lo0),
                        arg(&mut hi0),
                        arg(&mut lo1),
                        arg(&mut off1),
                    ],
                )
            };
        }
        // SAFETY: est_digits(in, n, has_range, lo, hi, shift, bits, first, prefix, hist, ext);
        // the caller's samples, `sel`'s buffers.
        unsafe {
            self.launch(
                "est_digits",
                grid,
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut n64),
                    arg(&mut has_range),
                    arg(&mut lo),
                    arg(&mut hi),
                    arg(&mut shift_arg),
                    arg(&mut bits_arg),
                    arg(&mut first),
                    arg(&mut prefix_ptr),
                    arg(&mut hist_ptr),
                    arg(&mut ext),
                ],
            )
        }
    }

    /// The keys of the samples of the given 0-based ranks in sorted order, among those of `sel`
    /// (its first pass done), by radix select: each later pass counts the digits of the samples
    /// that agree with a rank's digits so far. After the first pass, when the samples agreeing
    /// with the ranks' first digits are few enough ([`gather_pays`]), they are copied out in one
    /// pass and the later passes read only the copy (not for a window's copy, already small).
    ///
    /// # Safety
    /// As [`Passes::extremes_and_digits`].
    pub unsafe fn select(&self, mut sel: Selection, ranks: [u64; RANKS]) -> Result<[u64; RANKS]> {
        let width = sel.width;
        let passes = width.div_ceil(DIGIT_BITS);
        let rank_bytes: Vec<u8> = ranks.iter().flat_map(|r| r.to_ne_bytes()).collect();
        let rank = self
            .stream
            .clone_htod(&rank_bytes)
            .map_err(cuda_err("allocating the estimator's scratch"))?;
        let (mut prefix_ptr, mut rank_ptr) =
            (self.ptr(&sel.prefix), rank.device_ptr(&self.stream).0);
        let mut sizes_ptr = prefix_ptr + (RANKS * 8) as u64;
        for pass in 0..passes {
            let (shift, bits) = digit_of(width, pass);
            if pass > 0 {
                // SAFETY: forwarded (a copy, when gathered, lives in `sel`).
                unsafe { self.digits(&sel, pass, shift, bits, 0, 0)? };
            }
            let (mut shift_arg, mut bits_arg) = (shift as i32, bits as i32);
            let mut hist_ptr = self.ptr(&sel.hist) + (pass * RANKS * DIGITS * 8) as u64;
            // SAFETY: est_select(shift, bits, prefix, rank, hist, sizes).
            unsafe {
                self.launch(
                    "est_select",
                    1,
                    SELECT_THREADS,
                    &mut [
                        arg(&mut shift_arg),
                        arg(&mut bits_arg),
                        arg(&mut prefix_ptr),
                        arg(&mut rank_ptr),
                        arg(&mut hist_ptr),
                        arg(&mut sizes_ptr),
                    ],
                )?
            };
            if pass == 0 && passes > 1 && sel.map.is_none() {
                let words = self.read_u64(&sel.prefix, 2 * RANKS)?;
                let agreeing = agreeing(&words[..RANKS], &words[RANKS..]);
                if gather_pays(agreeing, sel.n, passes - 1) {
                    // SAFETY: forwarded.
                    sel = unsafe { self.gather(sel, shift, agreeing)? };
                }
            }
        }
        let keys = self.read_u64(&sel.prefix, RANKS)?;
        let key = |k: u64| sel.map.map_or(k, |m| m.unmap(k));
        Ok([key(keys[0]), key(keys[1]), key(keys[2]), key(keys[3])])
    }

    /// `sel` over a copy of its `count` samples that agree with the ranks' digits from bit
    /// `shift` up (est_gather).
    ///
    /// # Safety
    /// As [`Passes::select`].
    unsafe fn gather(&self, sel: Selection, shift: usize, count: usize) -> Result<Selection> {
        let copy = self.alloc(count * self.size)?;
        let counter = self.alloc(8)?;
        let (mut input, mut n64) = (sel.input, sel.n as u64);
        let mut has_range = sel.range.is_some() as i32;
        let (mut lo, mut hi) = sel.range.unwrap_or((0.0, 0.0));
        let mut shift_arg = shift as i32;
        let mut prefix_ptr = self.ptr(&sel.prefix);
        let (mut out, mut cap, mut counter_ptr) =
            (self.ptr(&copy), count as u64, self.ptr(&counter));
        // SAFETY: est_gather(in, n, has_range, lo, hi, shift, prefix, out, cap, counter): `copy`
        // holds `cap` samples (the kernel writes no more), `counter` one word.
        unsafe {
            self.launch(
                "est_gather",
                self.wave_for(sel.n.div_ceil(AHEAD), 256, GATHER_BLOCKS_PER_SM),
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut n64),
                    arg(&mut has_range),
                    arg(&mut lo),
                    arg(&mut hi),
                    arg(&mut shift_arg),
                    arg(&mut prefix_ptr),
                    arg(&mut out),
                    arg(&mut cap),
                    arg(&mut counter_ptr),
                ],
            )?
        };
        Ok(Selection {
            input: out,
            n: count,
            range: None,
            _copy: Some(Scratch::plain(copy)),
            ..sel
        })
    }
}

/// How many samples agree with the ranks' digits: the sizes of the distinct prefixes (ranks that
/// share a prefix share its samples).
pub(crate) fn agreeing(prefixes: &[u64], sizes: &[u64]) -> usize {
    (0..prefixes.len())
        .filter(|&t| !prefixes[..t].contains(&prefixes[t]))
        .map(|t| sizes[t] as usize)
        .sum()
}

/// Whether copying out the `count` of `n` samples that agree with the ranks' first digits (a
/// pass over the `n`, writing the `count`) and reading only the copy in the `rest` later passes
/// moves fewer bytes than those passes over the `n`.
pub(crate) fn gather_pays(count: usize, n: usize, rest: usize) -> bool {
    let (count, n, rest) = (count as u128, n as u128, rest as u128);
    n + count * (rest + 1) < n * rest
}

/// A radix select under way: the samples it selects among and its device buffers (a digit
/// histogram per pass and rank; the ranks' digits found so far, then the number of samples that
/// agree with each).
pub(crate) struct Selection {
    input: u64,
    n: usize,
    range: Option<(f64, f64)>,
    /// Bits of the keys selected among (the samples' or, for a window's copy, the mapped keys').
    width: usize,
    /// The map of a window's copy's keys.
    map: Option<KeyMap>,
    hist: CudaSlice<u8>,
    prefix: CudaSlice<u8>,
    /// The gathered samples `input` points into, once gathered (held for as long as `input`).
    _copy: Option<Scratch>,
}

/// The bits (shift, width) of radix-select pass `pass` over keys of `width` bits: 11 bits at a
/// time from the top, the last pass taking what is left.
pub(crate) fn digit_of(width: usize, pass: usize) -> (usize, usize) {
    let top = width - (pass * DIGIT_BITS).min(width);
    let bits = top.min(DIGIT_BITS);
    (top - bits, bits)
}
