//! `--plot FILE.png|.svg`: the histogram drawn with plotters. Text uses DejaVu Sans embedded in
//! the binary (through ab_glyph), so drawing needs no fontconfig and no system fonts.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use smemkit::histogram::Histogram;

use super::PlotFormat;

/// Bars drawn at most: more bins than pixels would only be drawn over each other.
const MAX_BARS: usize = 1000;
const SIZE: (u32, u32) = (1200, 700);

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A font shipped in the dejavu crate always parses; if not, plots lose their labels only.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

/// Draws `h` to `path` (written whole or not at all, like every output file).
pub fn draw(path: &Path, format: PlotFormat, h: &Histogram, title: &str) -> Result<()> {
    register_font();
    match format {
        PlotFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
                render(root, h, title)?;
            }
            super::write_atomic(path, |w| Ok(w.write_all(svg.as_bytes())?))
        }
        PlotFormat::Png => super::write_atomic_at_path(path, ".png", |tmp| {
            // plotters encodes the PNG itself when the area is presented, by the path's extension.
            let root = BitMapBackend::new(tmp, SIZE).into_drawing_area();
            render(root, h, title)
        }),
    }
}

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    h: &Histogram,
    title: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("cannot draw the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let rows = super::chart::rows(h, MAX_BARS);
    let (lo, hi) = (h.edges[0], h.edges[h.nbins()]);
    let max = rows
        .iter()
        .map(|r| r.mean())
        .fold(0.0, f64::max)
        .max(1e-300);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(lo..hi, 0.0..max * 1.05)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("value")
        .y_desc(
            match (
                !matches!(h.counts, smemkit::histogram::Counts::Unweighted(_)),
                rows.len() < h.nbins(),
            ) {
                (false, false) => "count",
                (true, false) => "sum of weights",
                (false, true) => "count per bin (mean over merged bins)",
                (true, true) => "sum of weights per bin (mean over merged bins)",
            },
        )
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .y_label_formatter(&|v| {
            if v.abs() >= 1e6 {
                format!("{v:.3e}")
            } else {
                format!("{v:.0}")
            }
        })
        .draw()
        .map_err(err)?;
    chart
        .draw_series(rows.iter().map(|r| {
            Rectangle::new(
                [(r.left, 0.0), (r.right, r.mean())],
                RGBColor(52, 101, 164).filled(),
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
