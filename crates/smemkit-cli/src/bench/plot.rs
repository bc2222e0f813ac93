//! `smemkit plot-bench`: GB/s against the number of bins, one line per implementation (every
//! smemkit strategy and every peer), one panel per distribution, from benchmark JSON lines
//! (shared/BENCH.md schema). It draws the H100 sweep of shared, distributed shared and global memory
//! histograms from the files under bench/results/.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use plotters::prelude::*;

use crate::output::{write_atomic, write_atomic_at_path, PlotFormat};

#[derive(Debug, Args)]
pub struct PlotBenchArgs {
    /// JSON lines files (ours and the peers'); lines that are not JSON objects are skipped.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The plot: .png or .svg.
    #[arg(long)]
    pub out: PathBuf,
    /// Sample type of our rows to draw (the peers' rows are int32).
    #[arg(long, default_value = "i32")]
    pub dtype: String,
    /// Leave out our rows whose aggregation was flipped (`-agg` / `-noagg`).
    #[arg(long, default_value_t = true)]
    pub planned_only: bool,
}

/// (distribution, implementation) -> points (nbins, GB/s), best per bin count.
type Series = BTreeMap<(String, String), BTreeMap<u64, f64>>;

fn load(a: &PlotBenchArgs) -> Result<Series> {
    let mut series = Series::new();
    for path in &a.files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if !line.starts_with('{') {
                continue;
            }
            let row: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("{} line {}: not JSON", path.display(), i + 1))?;
            if row["op"] != "hist" || row["correct"] == false {
                continue;
            }
            let imp = row["impl"].as_str().unwrap_or("?").to_string();
            let ours = imp.starts_with("smemkit");
            if ours && row["dtype"].as_str() != Some(a.dtype.as_str()) {
                continue;
            }
            if ours && a.planned_only && (imp.ends_with("-agg") || imp.ends_with("-noagg")) {
                continue;
            }
            let (Some(dist), Some(nbins), Some(gbps)) = (
                row["dist"].as_str(),
                row["nbins"].as_u64(),
                row["gbps"].as_f64(),
            ) else {
                continue;
            };
            let best = series
                .entry((dist.to_string(), imp))
                .or_default()
                .entry(nbins)
                .or_insert(0.0);
            *best = best.max(gbps);
        }
    }
    if series.is_empty() {
        bail!("no correct histogram rows in the given files");
    }
    Ok(series)
}

pub fn run(a: &PlotBenchArgs) -> Result<()> {
    for f in &a.files {
        crate::output::identity::protect("an input", f);
    }
    crate::output::identity::check_output("--out", &a.out)?;
    let format = PlotFormat::of(&a.out)?;
    let series = load(a)?;
    crate::output::plot::register_font();
    let size = (1600, 700);
    match format {
        PlotFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                render(root, &series)?;
            }
            write_atomic(&a.out, |w: &mut dyn Write| Ok(w.write_all(svg.as_bytes())?))
        }
        PlotFormat::Png => write_atomic_at_path(&a.out, ".png", |tmp: &Path| {
            let root = BitMapBackend::new(tmp, size).into_drawing_area();
            render(root, &series)
        }),
    }
}

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    series: &Series,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("cannot draw the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let dists: Vec<String> = {
        let mut d: Vec<String> = series.keys().map(|(d, _)| d.clone()).collect();
        d.dedup();
        d
    };
    let panels = root.split_evenly((1, dists.len()));
    let (max_bins, max_gbps) = series
        .values()
        .flat_map(|pts| pts.iter())
        .fold((2u64, 1.0f64), |(b, g), (&n, &v)| (b.max(n), g.max(v)));
    let imps: Vec<String> = {
        let mut v: Vec<String> = series.keys().map(|(_, i)| i.clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    for (panel, dist) in panels.iter().zip(&dists) {
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{dist} data: GB/s of samples read"),
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..(max_bins as f64).log2() + 0.5, 0f64..max_gbps * 1.08)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("log2(bins)")
            .y_desc("GB/s")
            .draw()
            .map_err(err)?;
        for (k, imp) in imps.iter().enumerate() {
            let Some(points) = series.get(&(dist.clone(), imp.clone())) else {
                continue;
            };
            let color = Palette99::pick(k).to_rgba();
            let style = if imp.starts_with("smemkit") {
                color.stroke_width(3)
            } else {
                color.stroke_width(1)
            };
            let pts: Vec<(f64, f64)> = points
                .iter()
                .map(|(&n, &g)| ((n as f64).log2(), g))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), style))
                .map_err(err)?
                .label(imp.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
