//! `histdd --plot FILE.png|.svg` of a 3-D histogram: a grid of 2-D heat maps, one per slice along
//! the last axis (axis 0 across, axis 1 up, as the 2-D heat map), all on one colour scale shown
//! by one colour bar, written whole or not at all. More than [`MAX_PANELS`] slices are merged into
//! that many panels of consecutive bins (counts and sums added, densities averaged by width).

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use plotters::prelude::*;
use smemkit::histogramdd::JointHistogram;

use super::heatmap::{colour, colour_bar, coordinates, Scale};
use super::PlotFormat;

/// Panels drawn at most (an 8 x 8 grid).
pub const MAX_PANELS: usize = 64;
/// Rectangles drawn at most over every panel (an SVG of more is unwieldy).
pub const MAX_CELLS: usize = 1 << 20;
/// Pixels of one panel.
const PANEL: u32 = 240;
/// Pixels of the colour bar's column and of the title's row.
const BAR: u32 = 170;
const TITLE: u32 = 50;

/// Refuses what the grid cannot draw.
pub fn check(shape: &[usize]) -> Result<()> {
    let panels = shape[2].min(MAX_PANELS);
    let cells = shape[0].saturating_mul(shape[1]).saturating_mul(panels);
    if cells > MAX_CELLS {
        bail!(
            "--plot draws at most {MAX_CELLS} cells over its {panels} slices (this histogram has {} x {} bins a slice)",
            shape[0],
            shape[1]
        );
    }
    Ok(())
}

/// Panels of the grid: for each, the range of last-axis bins it merges.
fn panels(n: usize) -> Vec<std::ops::Range<usize>> {
    let k = n.min(MAX_PANELS);
    (0..k).map(|p| p * n / k..(p + 1) * n / k).collect()
}

/// Columns and rows of the grid for `k` panels (as square as it gets, wider than tall).
fn grid(k: usize) -> (usize, usize) {
    let cols = (k as f64).sqrt().ceil().max(1.0) as usize;
    (cols, k.div_ceil(cols))
}

/// The image size of a grid of `k` panels.
pub fn size(k: usize) -> (u32, u32) {
    let (c, r) = grid(k);
    (c as u32 * PANEL + BAR, r as u32 * PANEL + TITLE)
}

/// Each panel's values (axis 0 by axis 1, C order): the slices it merges added, or for densities
/// averaged weighted by their widths along the last axis.
fn merged(h: &JointHistogram, values: &[f64], range: &std::ops::Range<usize>) -> Vec<f64> {
    let (n0, n1, n2) = (h.shape[0], h.shape[1], h.shape[2]);
    let widths: Vec<f64> = h.edges[2].windows(2).map(|w| w[1] - w[0]).collect();
    let total: f64 = range.clone().map(|k| widths[k]).sum();
    let mut out = vec![0.0; n0 * n1];
    for (ij, o) in out.iter_mut().enumerate() {
        let base = ij * n2;
        *o = if h.density.is_some() && range.len() > 1 && total > 0.0 && total.is_finite() {
            range
                .clone()
                .map(|k| values[base + k] * widths[k])
                .sum::<f64>()
                / total
        } else {
            range.clone().map(|k| values[base + k]).sum()
        };
    }
    out
}

pub fn draw(
    path: &Path,
    format: PlotFormat,
    h: &JointHistogram,
    names: &[String],
    title: &str,
) -> Result<()> {
    if h.shape.len() != 3 {
        bail!("the grid of slices draws 3-D histograms");
    }
    check(&h.shape)?;
    super::plot::register_font();
    let k = panels(h.shape[2]).len();
    let dims = size(k);
    match format {
        PlotFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, dims).into_drawing_area();
                render(root, h, names, title)?;
            }
            super::write_atomic(path, |w| Ok(w.write_all(svg.as_bytes())?))
        }
        PlotFormat::Png => super::write_atomic_at_path(path, ".png", |tmp| {
            let root = BitMapBackend::new(tmp, dims).into_drawing_area();
            render(root, h, names, title)
        }),
    }
}

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    h: &JointHistogram,
    names: &[String],
    title: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("cannot draw the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let scale = Scale::of(h);
    let ranges = panels(h.shape[2]);
    let merged: Vec<Vec<f64>> = ranges.iter().map(|r| merged(h, &scale.values, r)).collect();
    // Merged panels add counts: the colour scale covers the panels as drawn.
    let finite = || merged.iter().flatten().copied().filter(|v| v.is_finite());
    let lo = finite().fold(0.0, f64::min);
    let hi = finite().fold(0.0, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let name = |j: usize| names.get(j).cloned().unwrap_or_else(|| format!("axis {j}"));
    let root = root
        .titled(
            &format!(
                "{title}: {} (across) by {} (up), one panel per {} slice",
                name(0),
                name(1),
                name(2)
            ),
            ("sans-serif", 20),
        )
        .map_err(err)?;
    let (width, _) = root.dim_in_pixel();
    let (main, bar) = root.split_horizontally(width - BAR);
    let (cols, rows) = grid(ranges.len());
    let cells = main.split_evenly((rows, cols));
    let (x, _) = coordinates(&h.edges[0]);
    let (y, _) = coordinates(&h.edges[1]);
    let z = &h.edges[2];
    let n1 = h.shape[1];
    for ((area, range), values) in cells.iter().zip(&ranges).zip(&merged) {
        let caption = format!(
            "{} in [{}, {}{}",
            name(2),
            short(z[range.start]),
            short(z[range.end]),
            if range.end == h.shape[2] { "]" } else { ")" }
        );
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(22)
            .y_label_area_size(40)
            .build_cartesian_2d(x[0]..x[x.len() - 1], y[0]..y[y.len() - 1])
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(3)
            .y_labels(3)
            .label_style(("sans-serif", 10))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(values.iter().enumerate().map(|(flat, &v)| {
                let (i, j) = (flat / n1, flat % n1);
                Rectangle::new(
                    [(x[i], y[j]), (x[i + 1], y[j + 1])],
                    colour((v - lo) / span).filled(),
                )
            }))
            .map_err(err)?;
    }
    colour_bar(&bar, lo, span, scale.what)?;
    root.present().map_err(err)?;
    Ok(())
}

/// An edge as a short label.
fn short(v: f64) -> String {
    if v.is_finite() && v == v.round() && v.abs() < 1e9 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_cover_every_slice_once() {
        for n in [1, 5, 64, 65, 200] {
            let p = panels(n);
            assert_eq!(p.len(), n.min(MAX_PANELS));
            assert_eq!(p[0].start, 0);
            assert_eq!(p.last().unwrap().end, n);
            assert!(p
                .windows(2)
                .all(|w| w[0].end == w[1].start && !w[1].is_empty()));
        }
        assert_eq!(grid(64), (8, 8));
        assert_eq!(grid(5), (3, 2));
        assert_eq!(grid(1), (1, 1));
        assert!(check(&[64, 64, 64]).is_ok());
        assert!(check(&[512, 512, 8])
            .unwrap_err()
            .to_string()
            .contains("cells"));
    }
}
