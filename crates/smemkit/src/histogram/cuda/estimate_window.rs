//! The quartiles of `fd` and `auto` on the device in about one pass over the samples. The radix
//! select over all samples ([`super::estimate_select`]) reads them at least twice and its first
//! pass is bound by its counting, not by memory; here instead up to a million evenly spaced
//! samples (`est_sample`, copied on the device) tell where the quartiles' neighbours should lie:
//! the radix select over the draws finds the order statistics that end two key windows around
//! those places, one pass (`est_window`) counts the samples below the windows, copies the samples
//! inside them and finds the extremes that the estimators need anyway, and the ranks are then
//! selected in the small copy, on keys mapped into the windows so that their top digits spread
//! (`est_digits_mapped`). Only a few words cross to the host on the way.
//!
//! Exact by construction: the counts tell whether every rank wanted is inside a window (and the
//! copy whole). When one is not (a sample that misrepresents the data, such as periodic data
//! aligned with the stride), the radix select over all samples runs instead.

use crate::gpu::scratch::Scratch;

use super::estimate_passes::{arg, Passes, AHEAD, RANKS};
use super::estimate_select::Selection;
use crate::error::Result;
use crate::gpu::device::cuda_err;

/// The draws the tests take (a shape they were written for: the copy's share is about 6 % of the
/// samples at 32768 draws).
#[cfg(test)]
pub(crate) const DRAWS: usize = 32_768;
/// The most samples drawn to place the windows. The windows hold a share of the samples
/// shrinking as the square root of the draws (about 0.5 % of them at 2^20, 6 % at 32768), and
/// the draws are selected on the device in a few short passes over them, so more draws cost
/// little: a scattered read each and their share of passes over a few MB.
pub(crate) const MOST_DRAWS: usize = 1 << 20;
/// The fewest samples for which the windows are tried: below, the radix select's few short passes
/// cost no more than the draws' round trips.
pub(crate) const WINDOW_MIN: usize = 1 << 21;

/// Draws for `n` samples: one per 256 samples, from 8192 (up to 2^21 samples) to
/// [`MOST_DRAWS`] (from 2^28 on). The draws' scattered reads touch a 32-byte sector of every
/// 256 samples (a thirty-second of a pass over float32 samples at most), while the copy, which
/// the window pass writes and the selection reads again, shrinks as the square root of the draws.
pub(crate) fn draws_for(n: usize) -> usize {
    (n / 256).clamp(8192, MOST_DRAWS)
}

/// The windows' half-width, in standard deviations of a sample quantile's rank, and in ranks
/// added to that.
const SIGMAS: f64 = 6.0;
const SLACK: f64 = 8.0;
/// Blocks of `est_window` resident on an SM (its `__launch_bounds__`).
const WINDOW_BLOCKS_PER_SM: u32 = 4;
/// Most draws `est_sample` takes (its index arithmetic needs draws^2 < 2^64).
const MAX_DRAWS: usize = 1 << 24;
/// The words `est_window` counts into: the extremes' four, then below and up to each window's
/// ends, then the samples taken.
const WINDOW_WORDS: usize = 9;

/// One or two key windows, each `[lo, hi]` inclusive, the first below the second; `merged`: one
/// window, given twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Windows {
    pub lo: [u64; 2],
    pub hi: [u64; 2],
    pub merged: bool,
}

impl Windows {
    /// Windows around the 25th and 75th percentiles of the sample `keys` (reordered), wide
    /// enough that the quartiles of the whole lie inside them unless the sample misrepresents it:
    /// from the sample's order statistics [`SIGMAS`] standard deviations of the sample quantile's
    /// rank (and [`SLACK`]) each side, the keys' whole range where that runs past the sample.
    /// `key_max` is the largest key of the sample type. (The device selects the same order
    /// statistics of its draws: [`Windows::end_ranks`], [`Windows::of_ends`].)
    #[cfg(test)]
    pub(crate) fn of_sample(keys: &mut [u64], key_max: u64) -> Windows {
        let wanted = Windows::end_ranks(keys.len());
        let at: Vec<usize> = wanted.iter().map(|w| w.0).collect();
        let mut ends = Windows::open_ends(key_max);
        for (key, &(_, slot)) in order_statistics(keys, &at).into_iter().zip(&wanted) {
            ends[slot] = key;
        }
        Windows::of_ends(ends)
    }

    /// The ranks among `k` drawn keys whose keys end the windows, ascending, each with its slot
    /// in [`Windows::of_ends`]'s `ends` (0 and 1 the first window's low and high end, 2 and 3 the
    /// second's); an end whose rank would fall outside the draws has none (it stays open).
    pub(crate) fn end_ranks(k: usize) -> Vec<(usize, usize)> {
        let mut wanted: Vec<(usize, usize)> = Vec::with_capacity(4);
        if k > 0 {
            for (j, p) in [0.25f64, 0.75].into_iter().enumerate() {
                let centre = p * (k - 1) as f64;
                let half = SIGMAS * (k as f64 * p * (1.0 - p)).sqrt() + SLACK;
                let (lo, hi) = ((centre - half).floor(), (centre + half).ceil());
                if lo >= 0.0 {
                    wanted.push((lo as usize, 2 * j));
                }
                if hi < k as f64 {
                    wanted.push((hi as usize, 2 * j + 1));
                }
            }
        }
        wanted.sort_unstable();
        wanted
    }

    /// The windows' ends before any is set: each window the keys' whole range.
    pub(crate) fn open_ends(key_max: u64) -> [u64; 4] {
        [0, key_max, 0, key_max]
    }

    /// The windows of the keys `ends` (low and high end of the first, then of the second, the
    /// order statistics make them ascending but for overlap), merged when they overlap.
    pub(crate) fn of_ends(ends: [u64; 4]) -> Windows {
        let [lo0, hi0, lo1, hi1] = ends;
        if lo1 <= hi0 {
            // Overlapping (the order statistics make lo0 <= lo1 and hi0 <= hi1).
            Windows {
                lo: [lo0, lo0],
                hi: [hi1, hi1],
                merged: true,
            }
        } else {
            Windows {
                lo: [lo0, lo1],
                hi: [hi0, hi1],
                merged: false,
            }
        }
    }

    /// Whether `key` is inside a window.
    #[cfg(test)]
    pub(crate) fn contains(&self, key: u64) -> bool {
        (self.lo[0]..=self.hi[0]).contains(&key) || (self.lo[1]..=self.hi[1]).contains(&key)
    }
}

/// The index of draw `i` of `m` among `n` samples (`est_sample`'s): `i * n / m` rounded down,
/// without overflow for `m` up to [`MAX_DRAWS`] (the tests replay the draws with it).
#[cfg(test)]
pub(crate) fn draw_index(i: usize, n: usize, m: usize) -> usize {
    i * (n / m) + i * (n % m) / m
}

/// The values of sorted order at the ascending indices `at` (repeats allowed) among `keys`,
/// which are reordered: one `select_nth_unstable` per index, each on what lies above the last
/// (the host's replay of the device's selection of the draws).
#[cfg(test)]
pub(crate) fn order_statistics(keys: &mut [u64], at: &[usize]) -> Vec<u64> {
    let mut out = Vec::with_capacity(at.len());
    let (mut rest, mut base) = (keys, 0usize);
    for &i in at {
        if i < base {
            let last = *out.last().expect("a repeat follows a first");
            out.push(last);
            continue;
        }
        let (_, nth, above) = std::mem::take(&mut rest).select_nth_unstable(i - base);
        out.push(*nth);
        rest = above;
        base = i + 1;
    }
    out
}

/// Room for the samples of the windows among `n`, of which `inside` of `draws` evenly spaced
/// draws fell in them: the share the draws saw and a margin of eight of its standard deviations.
pub(crate) fn copy_cap(n: usize, draws: usize, inside: usize) -> usize {
    let inside = inside as f64;
    let expected = inside + 8.0 * inside.sqrt() + 32.0;
    ((n as f64 * expected / draws.max(1) as f64).ceil() as usize).min(n)
}

/// What `est_window` counted: the kept samples below each window's low end and up to its high
/// end, and the samples it took (copied up to the cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowCounts {
    pub below: [u64; 2],
    pub upto: [u64; 2],
    pub taken: u64,
}

impl WindowCounts {
    /// The kept samples inside the windows.
    pub(crate) fn inside(&self, w: &Windows) -> u64 {
        let first = self.upto[0].saturating_sub(self.below[0]);
        if w.merged {
            first
        } else {
            first + self.upto[1].saturating_sub(self.below[1])
        }
    }
}

/// What one est_window pass read back: the extremes' words (as [`Passes::extremes`]) and the
/// window counts.
struct WindowSeen {
    extremes: [u64; 4],
    counts: WindowCounts,
}

/// The ranks among the copy of the samples of the given ranks among all kept samples, or `None`
/// when a rank is in no window or the copy is not whole (the radix select over all samples must
/// run). The copy holds the first window's samples, then (disjoint windows) the second's, in key
/// order once mapped ([`KeyMap`]).
pub(crate) fn copy_ranks(
    ranks: [u64; RANKS],
    w: &Windows,
    c: &WindowCounts,
    cap: usize,
) -> Option<[u64; RANKS]> {
    let inside0 = c.upto[0].checked_sub(c.below[0])?;
    let inside1 = if w.merged {
        0
    } else {
        c.upto[1].checked_sub(c.below[1])?
    };
    if c.taken > cap as u64 || c.taken != inside0 + inside1 {
        return None;
    }
    let mut out = [0; RANKS];
    for (o, &r) in out.iter_mut().zip(&ranks) {
        *o = if (c.below[0]..c.upto[0]).contains(&r) {
            r - c.below[0]
        } else if !w.merged && (c.below[1]..c.upto[1]).contains(&r) {
            r - c.below[1] + inside0
        } else {
            return None;
        };
    }
    Some(out)
}

/// The order-preserving map of the windows' keys onto `0..2^width` (`map_key` in estimate.cu):
/// the first window's keys from 0, the second's right after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyMap {
    pub lo0: u64,
    pub hi0: u64,
    pub lo1: u64,
    pub off1: u64,
    /// Bits of the largest mapped key (at least one).
    pub width: usize,
}

impl KeyMap {
    pub(crate) fn of(w: &Windows) -> KeyMap {
        let span0 = w.hi[0] - w.lo[0];
        let (top, off1) = if w.merged {
            (span0, 0)
        } else {
            // Disjoint windows inside the keys' range: span0 + 1 + span1 <= hi1 - lo0.
            (span0 + 1 + (w.hi[1] - w.lo[1]), span0 + 1)
        };
        KeyMap {
            lo0: w.lo[0],
            hi0: w.hi[0],
            lo1: w.lo[1],
            off1,
            width: (64 - top.leading_zeros() as usize).max(1),
        }
    }

    /// A window's key, mapped (as the kernel maps it; the tests replay it).
    #[cfg(test)]
    pub(crate) fn map(&self, key: u64) -> u64 {
        if key <= self.hi0 {
            key - self.lo0
        } else {
            key - self.lo1 + self.off1
        }
    }

    /// The key a mapped key came from.
    pub(crate) fn unmap(&self, mapped: u64) -> u64 {
        if mapped <= self.hi0 - self.lo0 {
            mapped + self.lo0
        } else {
            mapped - self.off1 + self.lo1
        }
    }
}

/// The largest key of samples of `size` bytes.
pub(crate) fn key_max(size: usize) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * size)) - 1
    }
}

/// Which way the quartiles were selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// The radix select over all samples, chosen from the start.
    Radix,
    /// In the windows' copy.
    Window,
    /// The windows missed a rank (or the copy overflowed): the radix select over all samples.
    Fallback,
}

/// The quartiles' selection after its first pass over the samples (which found their extremes).
pub(crate) struct Quartiles {
    input: u64,
    n: usize,
    range: Option<(f64, f64)>,
    state: State,
}

enum State {
    Radix(Selection),
    Window {
        copy: Scratch,
        windows: Windows,
        counts: WindowCounts,
        cap: usize,
    },
}

/// The windows drawn from the samples and the room their copy gets.
struct Plan {
    windows: Windows,
    cap: usize,
}

impl Passes {
    /// The first pass of the quartiles' selection over the `n` samples at `input` (those inside
    /// `range` when given), with the samples' [`Passes::extremes`]: by windows when there are
    /// enough samples and the draws promise a small copy, else the radix select's first pass.
    ///
    /// # Safety
    /// As [`Passes::extremes`]; the samples must stay valid until
    /// [`Passes::select_quartiles`] returns.
    pub unsafe fn extremes_for_quartiles(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
    ) -> Result<([u64; 4], Quartiles)> {
        if n >= WINDOW_MIN {
            // SAFETY: forwarded.
            let plan = unsafe { self.draw_windows(input, n, range, draws_for(n))? };
            if plan.cap <= n / 2 {
                // SAFETY: forwarded.
                return unsafe { self.window_pass(input, n, range, plan) };
            }
        }
        // SAFETY: forwarded.
        let (ext, sel) = unsafe { self.extremes_and_digits(input, n, range)? };
        Ok((
            ext,
            Quartiles {
                input,
                n,
                range,
                state: State::Radix(sel),
            },
        ))
    }

    /// [`Passes::extremes_for_quartiles`] by windows placed by `draws` draws, whatever `n` and
    /// the copy's room (for the tests, which take the windows' path at any size).
    ///
    /// # Safety
    /// As [`Passes::extremes_for_quartiles`].
    #[cfg(test)]
    pub(crate) unsafe fn extremes_and_window(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
        draws: usize,
    ) -> Result<([u64; 4], Quartiles)> {
        // SAFETY: forwarded.
        unsafe {
            let plan = self.draw_windows(input, n, range, draws)?;
            self.window_pass(input, n, range, plan)
        }
    }

    /// The keys of the samples of the given 0-based ranks among the kept samples (their count
    /// from the first pass), and the way they were selected.
    ///
    /// # Safety
    /// As [`Passes::extremes_for_quartiles`].
    pub unsafe fn select_quartiles(
        &self,
        q: Quartiles,
        ranks: [u64; RANKS],
    ) -> Result<([u64; RANKS], Path)> {
        match q.state {
            // SAFETY: forwarded.
            State::Radix(sel) => Ok((unsafe { self.select(sel, ranks)? }, Path::Radix)),
            State::Window {
                copy,
                windows,
                counts,
                cap,
            } => match copy_ranks(ranks, &windows, &counts, cap) {
                Some(inner) => {
                    // SAFETY: `copy` holds the `taken` samples of the windows (whole: checked).
                    let keys = unsafe {
                        let sel = self.mapped_selection(
                            copy,
                            counts.taken as usize,
                            KeyMap::of(&windows),
                        )?;
                        self.select(sel, inner)?
                    };
                    Ok((keys, Path::Window))
                }
                None => {
                    drop(copy);
                    // SAFETY: forwarded.
                    let keys = unsafe {
                        let (_, sel) = self.extremes_and_digits(q.input, q.n, q.range)?;
                        self.select(sel, ranks)?
                    };
                    Ok((keys, Path::Fallback))
                }
            },
        }
    }

    /// The windows placed by `draws` evenly spaced samples, and their copy's room. The draws
    /// (est_sample) stay on the device and are treated as samples: the radix select's first pass
    /// counts those kept (the range, NaN), the select finds the order statistics that end the
    /// windows ([`Windows::end_ranks`]), and a window pass over the draws counts those inside
    /// the windows, which sizes the copy. Three round trips of a few words each.
    ///
    /// # Safety
    /// As [`Passes::extremes`].
    unsafe fn draw_windows(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
        draws: usize,
    ) -> Result<Plan> {
        let m = draws.clamp(1, MAX_DRAWS);
        let mut ends = Windows::open_ends(key_max(self.size));
        if n == 0 {
            return Ok(Plan {
                windows: Windows::of_ends(ends),
                cap: 0,
            });
        }
        // SAFETY: forwarded.
        let drawn = unsafe { self.draw(input, n, m)? };
        let at = self.ptr(drawn.slice());
        // SAFETY: `drawn` holds m samples and lives to the end of this function, after the last
        // read back.
        let (ext, sel) = unsafe { self.extremes_and_digits(at, m, range)? };
        let wanted = Windows::end_ranks(ext[0] as usize);
        if let Some(&(first, _)) = wanted.first() {
            let mut ranks = [first as u64; RANKS];
            for (r, &(rank, _)) in ranks.iter_mut().zip(&wanted) {
                *r = rank as u64;
            }
            // SAFETY: as above.
            let keys = unsafe { self.select(sel, ranks)? };
            for (key, &(_, slot)) in keys.iter().zip(&wanted) {
                ends[slot] = *key;
            }
        }
        let windows = Windows::of_ends(ends);
        // SAFETY: as above; with no room the pass copies nothing.
        let seen = unsafe { self.window_counts(at, m, range, &windows, 0, 0)? };
        Ok(Plan {
            windows,
            cap: copy_cap(n, m, seen.counts.inside(&windows) as usize),
        })
    }

    /// The samples at `draw_index(i, n, m)`, i < m, of the `n` at `input`, copied on the
    /// device (est_sample).
    ///
    /// # Safety
    /// As [`Passes::extremes`]; `n` > 0.
    pub(crate) unsafe fn draw(&self, input: u64, n: usize, m: usize) -> Result<Scratch> {
        let out = Scratch::take(&self.gpu, &self.stream, m * self.size)?;
        let (mut input, mut n64, mut m64) = (input, n as u64, m as u64);
        let mut out_ptr = self.ptr(out.slice());
        // SAFETY: est_sample(in, n, m, out): `out` holds m samples, the indices it reads are
        // below n.
        unsafe {
            self.launch(
                "est_sample",
                m.div_ceil(256) as u32,
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut n64),
                    arg(&mut m64),
                    arg(&mut out_ptr),
                ],
            )?
        };
        Ok(out)
    }

    /// One est_window pass over the `n` samples at `input` for `windows`, copying those inside
    /// to `out` (room for `cap`), read back.
    ///
    /// # Safety
    /// As [`Passes::extremes`]; `out` must hold `cap` samples.
    unsafe fn window_counts(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
        windows: &Windows,
        out: u64,
        cap: usize,
    ) -> Result<WindowSeen> {
        let mut init = [0u64; WINDOW_WORDS];
        init[1] = u64::MAX;
        let init: Vec<u8> = init.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let counts = self
            .stream
            .clone_htod(&init)
            .map_err(cuda_err("allocating the estimator's scratch"))?;
        if n > 0 {
            let (mut input, mut n64) = (input, n as u64);
            let mut has_range = range.is_some() as i32;
            let (mut lo, mut hi) = range.unwrap_or((0.0, 0.0));
            let w = windows;
            let (mut lo0, mut hi0, mut lo1, mut hi1) = (w.lo[0], w.hi[0], w.lo[1], w.hi[1]);
            let (mut out, mut cap) = (out, cap as u64);
            let mut counts_ptr = self.ptr(&counts);
            // SAFETY: est_window(in, n, has_range, lo, hi, lo0, hi0, lo1, hi1, out, cap, counts):
            // `out` holds `cap` samples (the kernel writes no more), `counts` WINDOW_WORDS words.
            unsafe {
                self.launch(
                    "est_window",
                    self.wave_for(n.div_ceil(AHEAD), 256, WINDOW_BLOCKS_PER_SM),
                    256,
                    &mut [
                        arg(&mut input),
                        arg(&mut n64),
                        arg(&mut has_range),
                        arg(&mut lo),
                        arg(&mut hi),
                        arg(&mut lo0),
                        arg(&mut hi0),
                        arg(&mut lo1),
                        arg(&mut hi1),
                        arg(&mut out),
                        arg(&mut cap),
                        arg(&mut counts_ptr),
                    ],
                )?
            };
        }
        let w = self.read_u64(&counts, WINDOW_WORDS)?;
        Ok(WindowSeen {
            extremes: [w[0], w[1], w[2], w[3]],
            counts: WindowCounts {
                below: [w[4], w[6]],
                upto: [w[5], w[7]],
                taken: w[8],
            },
        })
    }

    /// The pass over all samples for `plan`'s windows (est_window).
    ///
    /// # Safety
    /// As [`Passes::extremes_for_quartiles`].
    unsafe fn window_pass(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
        plan: Plan,
    ) -> Result<([u64; 4], Quartiles)> {
        // The copy is left unset: est_window writes its first `taken` samples (at most `cap`, as
        // copy_ranks checks before anything reads them) and nothing reads the rest.
        let copy = Scratch::take(&self.gpu, &self.stream, plan.cap * self.size)?;
        // SAFETY: forwarded; `copy` holds `cap` samples.
        let seen = unsafe {
            self.window_counts(
                input,
                n,
                range,
                &plan.windows,
                self.ptr(copy.slice()),
                plan.cap,
            )?
        };
        Ok((
            seen.extremes,
            Quartiles {
                input,
                n,
                range,
                state: State::Window {
                    copy,
                    windows: plan.windows,
                    counts: seen.counts,
                    cap: plan.cap,
                },
            },
        ))
    }
}

#[cfg(test)]
#[path = "estimate_window_tests.rs"]
mod tests;
