//! `hist2d --plot FILE.png|.svg`: a 2-D histogram drawn as a heat map (axis 0 across, axis 1 up,
//! each bin a rectangle between its edges) with a colour bar, written whole or not at all.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use plotters::prelude::*;
use smemkit::histogramdd::JointHistogram;

use super::PlotFormat;

const SIZE: (u32, u32) = (1100, 900);
/// Bins per axis drawn at most: more would be narrower than a pixel (and an SVG of millions of
/// rectangles).
const MAX_BINS_PER_AXIS: usize = 1024;

/// Colour stops of a perceptually ordered map (dark blue, teal, green, yellow) for 0..=1.
const STOPS: [(f64, (u8, u8, u8)); 5] = [
    (0.0, (68, 1, 84)),
    (0.25, (59, 82, 139)),
    (0.5, (33, 145, 140)),
    (0.75, (94, 201, 98)),
    (1.0, (253, 231, 37)),
];

pub(super) fn colour(t: f64) -> RGBColor {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let k = STOPS.iter().position(|s| s.0 >= t).unwrap_or(4).max(1);
    let ((t0, a), (t1, b)) = (STOPS[k - 1], STOPS[k]);
    let f = (t - t0) / (t1 - t0);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Refuses a histogram `--plot` cannot draw (before any output is written): 2-D histograms of at
/// most [`MAX_BINS_PER_AXIS`] bins per axis, 3-D ones within [`super::slices`]' limits.
pub fn check(shape: &[usize]) -> Result<()> {
    match shape.len() {
        2 => {
            if shape.iter().any(|&n| n > MAX_BINS_PER_AXIS) {
                bail!(
                    "--plot draws at most {MAX_BINS_PER_AXIS} bins per axis (this histogram has {} x {})",
                    shape[0],
                    shape[1]
                );
            }
            Ok(())
        }
        3 => super::slices::check(shape),
        d => bail!(
            "--plot draws 2-D histograms as a heat map and 3-D ones as a grid of slices (this one has {d} axes)"
        ),
    }
}

/// Draws `h` to `path`: two axes as a heat map, three as a grid of slices.
pub fn draw(
    path: &Path,
    format: PlotFormat,
    h: &JointHistogram,
    names: &[String],
    title: &str,
) -> Result<()> {
    check(&h.shape)?;
    if h.shape.len() == 3 {
        return super::slices::draw(path, format, h, names, title);
    }
    super::plot::register_font();
    match format {
        PlotFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
                render(root, h, names, title)?;
            }
            super::write_atomic(path, |w| Ok(w.write_all(svg.as_bytes())?))
        }
        PlotFormat::Png => super::write_atomic_at_path(path, ".png", |tmp| {
            let root = BitMapBackend::new(tmp, SIZE).into_drawing_area();
            render(root, h, names, title)
        }),
    }
}

/// The values a plot colours (the density, the sums or the counts), what they are, and the
/// range of the colour scale (from 0 or the lowest value to the highest).
pub(super) struct Scale {
    pub values: Vec<f64>,
    pub what: &'static str,
    pub lo: f64,
    pub span: f64,
}

impl Scale {
    pub fn of(h: &JointHistogram) -> Scale {
        let values: Vec<f64> = match &h.density {
            Some(d) => d.clone(),
            None => (0..h.counts.len()).map(|i| h.counts.get_f64(i)).collect(),
        };
        let what = match (&h.density, &h.counts) {
            (Some(_), _) => "density",
            (None, smemkit::histogram::Counts::Unweighted(_)) => "count",
            (None, _) => "sum of weights",
        };
        let finite = || values.iter().copied().filter(|v| v.is_finite());
        let lo = finite().fold(0.0, f64::min);
        let hi = finite().fold(0.0, f64::max);
        let span = if hi > lo { hi - lo } else { 1.0 };
        Scale {
            values,
            what,
            lo,
            span,
        }
    }
}

/// The colour bar: the map from `lo` to `lo + span`, labelled `what`.
pub(super) fn colour_bar<DB: DrawingBackend>(
    bar: &DrawingArea<DB, plotters::coord::Shift>,
    lo: f64,
    span: f64,
    what: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("cannot draw the colour bar: {e}");
    let steps = 256;
    let mut scale = ChartBuilder::on(bar)
        .margin_top(20)
        .margin_bottom(70)
        .margin_right(20)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..1.0, lo..lo + span)
        .map_err(err)?;
    scale
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(what)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    scale
        .draw_series((0..steps).map(|k| {
            let (a, b) = (k as f64 / steps as f64, (k + 1) as f64 / steps as f64);
            Rectangle::new(
                [(0.0, lo + a * span), (1.0, lo + b * span)],
                colour((a + b) / 2.0).filled(),
            )
        }))
        .map_err(err)?;
    Ok(())
}

/// Where each bin boundary is drawn: the edges, or the bin indices when an edge is infinite.
pub(super) fn coordinates(edges: &[f64]) -> (Vec<f64>, bool) {
    if edges.iter().all(|e| e.is_finite()) {
        (edges.to_vec(), false)
    } else {
        ((0..edges.len()).map(|i| i as f64).collect(), true)
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
    let Scale {
        values,
        what,
        lo,
        span,
    } = Scale::of(h);
    let (x, x_index) = coordinates(&h.edges[0]);
    let (y, y_index) = coordinates(&h.edges[1]);
    let root = root.titled(title, ("sans-serif", 22)).map_err(err)?;
    let (main, bar) = root.split_horizontally(SIZE.0 - 170);
    let axis_name = |j: usize, index: bool| {
        let name = names.get(j).cloned().unwrap_or_else(|| format!("axis {j}"));
        if index {
            format!("{name} (bin index: infinite edges)")
        } else {
            name
        }
    };
    let mut chart = ChartBuilder::on(&main)
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x[0]..x[x.len() - 1], y[0]..y[y.len() - 1])
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(axis_name(0, x_index))
        .y_desc(axis_name(1, y_index))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(err)?;
    let ny = h.shape[1];
    chart
        .draw_series(values.iter().enumerate().map(|(flat, &v)| {
            let (i, j) = (flat / ny, flat % ny);
            Rectangle::new(
                [(x[i], y[j]), (x[i + 1], y[j + 1])],
                colour((v - lo) / span).filled(),
            )
        }))
        .map_err(err)?;
    colour_bar(&bar, lo, span, what)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn the_colour_map_runs_from_its_first_stop_to_its_last() {
        assert_eq!(colour(0.0), plotters::style::RGBColor(68, 1, 84));
        assert_eq!(colour(1.0), plotters::style::RGBColor(253, 231, 37));
        assert_eq!(colour(f64::NAN), colour(0.0));
        assert_eq!(colour(0.5), plotters::style::RGBColor(33, 145, 140));
    }
}
