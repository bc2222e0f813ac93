//! A table that cuts the GPU's binary search of a sample among monotonic bins (a histogram's
//! explicit edges, `digitize`'s bins) to a few steps. A search over 1000 bins takes ten dependent
//! reads per sample, which bound those kernels; with the table a sample reads its cell's first
//! candidate and searches only the few bins its cell can hold.
//!
//! The sample line is split into cells in one of two ways, whichever leaves fewer bins in the
//! fullest cell: equal widths over the bins' span (linear bins), or the top bits of the samples'
//! order-preserving float64 keys (log-spaced bins, bins spanning many magnitudes). Each cell holds
//! the lowest partition point of any sample that lands in it (the number of bins for which the
//! search's predicate holds, true on a prefix of the bins); `top`, the largest power of two not
//! above the most bins any cell spans, is where every sample's search starts, so that a warp never
//! diverges. The answer does not depend on the table: it only narrows where the exact search runs.
//!
//! The device mapping (`search_cell` in `kernels/search_table.cuh`) is mirrored by
//! [`SearchTable::cell`] for the tests.

/// Cells of a table: 16 KiB of starts, which stay in L1.
const CELLS: u32 = 4096;

/// Bins below which the plain search (at most five steps) needs no table.
const MIN_BINS: usize = 32;

/// Field for field `struct SearchTable` of `kernels/search_table.cuh`; `starts` 0: no table.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KernelSearchTable {
    /// Device address of the cells' first candidates (`u32` each).
    pub starts: u64,
    /// Linear cells: `cell = floor((x - first) * scale)`, clamped.
    pub first: f64,
    pub scale: f64,
    /// Key cells: `cell = (key(x) - key_lo) >> shift`, clamped.
    pub key_lo: u64,
    pub shift: u32,
    pub cells: u32,
    /// The search's first step (0: every cell holds its answer).
    pub top: u32,
    /// 1 linear cells, 2 key cells.
    pub kind: i32,
}

/// How samples map to cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cells {
    Linear { first: f64, scale: f64 },
    Key { key_lo: u64, shift: u32 },
}

/// The table of one set of bins and one predicate (see the module's comment).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SearchTable {
    pub cells: Cells,
    /// The lowest partition point of each cell's samples.
    pub starts: Vec<u32>,
    /// The search's first step.
    pub top: u32,
}

/// The order-preserving key of a float64 (NaN aside): negative values reversed below the
/// positive ones, -0.0 just below +0.0.
pub(crate) fn order_key(x: f64) -> u64 {
    let u = x.to_bits();
    if u >> 63 == 1 {
        !u
    } else {
        u | (1 << 63)
    }
}

/// The float64 of a key (the inverse of [`order_key`]).
fn from_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// The largest power of two not above `n` (0 for 0).
pub(crate) fn top_step(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        1 << (31 - n.leading_zeros())
    }
}

impl SearchTable {
    /// The table for `bins` (monotonic, none NaN, fewer than 2^31) and `holds(bin, x)`, true on a
    /// prefix of the bins for any sample `x` that is not NaN, the prefix's length monotonic in
    /// `x`. `None` where the plain search is as short.
    pub(crate) fn build(bins: &[f64], holds: impl Fn(f64, f64) -> bool) -> Option<SearchTable> {
        let n = bins.len();
        if !(MIN_BINS..1 << 31).contains(&n) {
            return None;
        }
        let point = |x: f64| bins.partition_point(|&b| holds(b, x)) as u32;
        let (lo, hi) = (bins[0].min(bins[n - 1]), bins[0].max(bins[n - 1]));
        let mut best: Option<(u32, SearchTable)> = None;
        for cells in [linear_cells(lo, hi), Some(key_cells(lo, hi))]
            .into_iter()
            .flatten()
        {
            let (starts, widest) = starts_of(cells, &point);
            if best.as_ref().map_or(true, |(w, _)| widest < *w) {
                best = Some((
                    widest,
                    SearchTable {
                        cells,
                        starts,
                        top: top_step(widest),
                    },
                ));
            }
        }
        // Worth it only where it saves at least two of the plain search's steps.
        let (widest, table) = best?;
        (top_step(widest) * 4 <= top_step(n as u32)).then_some(table)
    }

    /// The cell of a sample that is not NaN, as the kernels compute it.
    #[cfg(test)]
    pub(crate) fn cell(&self, x: f64) -> usize {
        cell_of(self.cells, x)
    }

    /// The kernels' view, with `starts` at device address `starts`.
    pub(crate) fn kernel(&self, starts: u64) -> KernelSearchTable {
        let mut k = KernelSearchTable {
            starts,
            cells: CELLS,
            top: self.top,
            ..Default::default()
        };
        match self.cells {
            Cells::Linear { first, scale } => {
                (k.first, k.scale, k.kind) = (first, scale, 1);
            }
            Cells::Key { key_lo, shift } => {
                (k.key_lo, k.shift, k.kind) = (key_lo, shift, 2);
            }
        }
        k
    }

    /// The kernels' search, step for step: the partition point of `x` (not NaN) among `bins`.
    #[cfg(test)]
    pub(crate) fn search(&self, bins: &[f64], x: f64, holds: impl Fn(f64, f64) -> bool) -> u32 {
        let n = bins.len() as u64;
        let mut pos = self.starts[self.cell(x)] as u64;
        let mut step = self.top as u64;
        while step > 0 {
            let next = pos + step;
            if next <= n && holds(bins[next as usize - 1], x) {
                pos = next;
            }
            step >>= 1;
        }
        pos as u32
    }
}

#[cfg(test)]
fn cell_of(cells: Cells, x: f64) -> usize {
    let last = (CELLS - 1) as usize;
    match cells {
        Cells::Linear { first, scale } => {
            let c = (x - first) * scale;
            if c.is_nan() || c <= 0.0 {
                0
            } else if c >= last as f64 {
                last
            } else {
                c as usize
            }
        }
        Cells::Key { key_lo, shift } => {
            let k = order_key(x);
            if k <= key_lo {
                0
            } else {
                (((k - key_lo) >> shift) as usize).min(last)
            }
        }
    }
}

/// Equal cells over `[lo, hi]`, where their width is far above the samples' spacing there (so
/// that the kernel's rounded cell is within half a cell of the exact one).
fn linear_cells(lo: f64, hi: f64) -> Option<Cells> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return None;
    }
    let width = (hi - lo) / CELLS as f64;
    let spacing = f64::EPSILON * lo.abs().max(hi.abs());
    let scale = CELLS as f64 / (hi - lo);
    (width > spacing * (1u64 << 20) as f64 && scale.is_finite())
        .then_some(Cells::Linear { first: lo, scale })
}

/// Cells of equal key ranges from `lo`'s key up, as few bits each as cover `[lo, hi]`.
fn key_cells(lo: f64, hi: f64) -> Cells {
    let key_lo = order_key(lo);
    let span = order_key(hi) - key_lo;
    let mut shift = 0;
    while shift < 64 && (span >> shift) >= CELLS as u64 {
        shift += 1;
    }
    Cells::Key { key_lo, shift }
}

/// Every sample's partition point lies in `[starts[c], starts[c] + widest]` for its cell `c`:
/// the points at the ends of the samples each cell can hold (points are monotonic in `x`).
fn starts_of(cells: Cells, point: &impl Fn(f64) -> u32) -> (Vec<u32>, u32) {
    let last = CELLS - 1;
    let mut starts = Vec::with_capacity(CELLS as usize);
    let mut widest = 0;
    for c in 0..CELLS {
        let (a, b) = match cells {
            Cells::Linear { first, scale } => {
                // The kernel's rounded cell is within a hair of the exact one; half a cell on
                // each side covers it.
                let width = 1.0 / scale;
                let a = if c == 0 {
                    f64::NEG_INFINITY
                } else {
                    first + (c as f64 - 0.5) * width
                };
                let b = if c == last {
                    f64::INFINITY
                } else {
                    first + (c as f64 + 1.5) * width
                };
                (a, b)
            }
            Cells::Key { key_lo, shift } => {
                let (min_key, max_key) = (order_key(f64::NEG_INFINITY), order_key(f64::INFINITY));
                let a = if c == 0 {
                    min_key
                } else {
                    key_lo.saturating_add((c as u64) << shift)
                };
                let b = if c == last {
                    max_key
                } else {
                    key_lo
                        .saturating_add(((c as u64 + 1) << shift) - 1)
                        .min(max_key)
                };
                (from_key(a.clamp(min_key, max_key)), from_key(b))
            }
        };
        let (pa, pb) = (point(a), point(b));
        starts.push(pa.min(pb));
        widest = widest.max(pa.abs_diff(pb));
    }
    (starts, widest)
}

#[cfg(test)]
#[path = "search_table_tests.rs"]
mod tests;
