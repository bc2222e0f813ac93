//! The terminal bar chart: one row per bin, or per group of neighbouring bins when there are more
//! than [`MAX_ROWS`], so that any histogram fits a screen.

use std::io::Write;

use anyhow::Result;
use smemkit::histogram::Histogram;

pub const MAX_ROWS: usize = 40;
const BAR_WIDTH: usize = 50;

/// A row of the chart: `bins` neighbouring bins merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub left: f64,
    pub right: f64,
    pub bins: usize,
    /// The sum over the row's bins.
    pub value: f64,
}

impl Row {
    /// Rows may hold one bin more than others; bars compare means so a flat histogram looks flat.
    pub fn mean(&self) -> f64 {
        self.value / self.bins as f64
    }
}

/// Merges the bins into at most `max_rows` rows whose sizes differ by at most one bin.
pub fn rows(h: &Histogram, max_rows: usize) -> Vec<Row> {
    let n = h.nbins();
    let count = n.min(max_rows.max(1));
    (0..count)
        .map(|r| {
            let (first, last) = (r * n / count, (r + 1) * n / count);
            Row {
                left: h.edges[first],
                right: h.edges[last],
                bins: last - first,
                value: (first..last).map(|i| h.counts.get_f64(i)).sum(),
            }
        })
        .collect()
}

fn bar(value: f64, max: f64) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    if max.is_nan() || value.is_nan() || max <= 0.0 || value <= 0.0 {
        return String::new();
    }
    let eighths = (value / max * (BAR_WIDTH * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        s.push(PARTS[eighths % 8]);
    }
    if s.is_empty() {
        // A non-empty bin never looks empty.
        s.push('▏');
    }
    s
}

fn label(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.4}")
    }
}

/// Counts print as integers; sums of weights with four decimals.
fn value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}

pub fn write(w: &mut dyn Write, h: &Histogram) -> Result<()> {
    let rows = rows(h, MAX_ROWS);
    let max = rows.iter().map(Row::mean).fold(0.0, f64::max);
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("[{}, {})", label(r.left), label(r.right)))
        .collect();
    let width = labels.iter().map(String::len).max().unwrap_or(0);
    if rows.len() < h.nbins() {
        let (small, large) = (h.nbins() / rows.len(), h.nbins().div_ceil(rows.len()));
        let size = if small == large {
            small.to_string()
        } else {
            format!("{small} or {large}")
        };
        writeln!(
            w,
            "{} bins shown as {} rows of {size} bins (row sums; bars compare the mean per bin)",
            h.nbins(),
            rows.len()
        )?;
    }
    for (r, l) in rows.iter().zip(&labels) {
        writeln!(
            w,
            "{l:>width$} {:<BAR_WIDTH$} {}",
            bar(r.mean(), max),
            value(r.value)
        )?;
    }
    Ok(())
}
