//! The plot of `smemkit lab cache --plot FILE`: one panel per stencil radius and one for the
//! transpose (GB/s against the carveout, one line per kernel), and one panel for the atomics (GB/s
//! per counter count and distribution, shared against global).

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use smemkit::internals::lab::{CacheExperiment, CacheMeasurement};

use crate::commands::lab::carveout_label;
use crate::output::{write_atomic, write_atomic_at_path, PlotFormat};

/// One panel: categories along x, one line per series.
struct Panel {
    title: String,
    x_labels: Vec<String>,
    series: Vec<(String, Vec<(usize, f64)>)>,
}

fn add(series: &mut Vec<(String, Vec<(usize, f64)>)>, name: &str, point: (usize, f64)) {
    match series.iter_mut().find(|(n, _)| n == name) {
        Some((_, pts)) => pts.push(point),
        None => series.push((name.to_string(), vec![point])),
    }
}

fn panels(rows: &[CacheMeasurement]) -> Vec<Panel> {
    let mut out: Vec<Panel> = Vec::new();
    let mut experiments: Vec<CacheExperiment> = Vec::new();
    for r in rows {
        if !matches!(r.experiment, CacheExperiment::Atomics { .. })
            && !experiments.contains(&r.experiment)
        {
            experiments.push(r.experiment);
        }
    }
    for e in experiments {
        let mut p = Panel {
            title: format!("{}: GB/s (read + written)", e.describe()),
            x_labels: Vec::new(),
            series: Vec::new(),
        };
        for r in rows.iter().filter(|r| r.experiment == e) {
            let label = carveout_label(r.carveout);
            let x = match p.x_labels.iter().position(|l| *l == label) {
                Some(x) => x,
                None => {
                    p.x_labels.push(label);
                    p.x_labels.len() - 1
                }
            };
            add(&mut p.series, r.variant, (x, r.gbps));
        }
        out.push(p);
    }
    let mut atomics = Panel {
        title: "atomics: GB/s of values read".into(),
        x_labels: Vec::new(),
        series: Vec::new(),
    };
    for r in rows {
        if let CacheExperiment::Atomics { bins, hot } = r.experiment {
            let label = format!("{bins}{}", if hot { " hot" } else { "" });
            let x = match atomics.x_labels.iter().position(|l| *l == label) {
                Some(x) => x,
                None => {
                    atomics.x_labels.push(label);
                    atomics.x_labels.len() - 1
                }
            };
            add(&mut atomics.series, r.variant, (x, r.gbps));
        }
    }
    if !atomics.x_labels.is_empty() {
        out.push(atomics);
    }
    out
}

pub fn draw(path: &Path, rows: &[CacheMeasurement], gpu: &str) -> Result<()> {
    let format = PlotFormat::of(path)?;
    let panels = panels(rows);
    crate::output::plot::register_font();
    let cols = panels.len().div_ceil(2).max(1);
    let size = (520 * cols as u32, 900);
    match format {
        PlotFormat::Svg => {
            let svg = render_svg(&panels, gpu, size)?;
            write_atomic(path, |w: &mut dyn Write| Ok(w.write_all(svg.as_bytes())?))
        }
        PlotFormat::Png => write_atomic_at_path(path, ".png", |tmp: &Path| {
            let root = BitMapBackend::new(tmp, size).into_drawing_area();
            render(root, &panels, gpu)
        }),
    }
}

fn render_svg(panels: &[Panel], gpu: &str, size: (u32, u32)) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        render(root, panels, gpu)?;
    }
    Ok(svg)
}

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    panels: &[Panel],
    gpu: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("cannot draw the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(
            &format!("smemkit lab cache on {gpu}: shared memory against the L1 cache"),
            ("sans-serif", 22),
        )
        .map_err(err)?;
    let cols = panels.len().div_ceil(2).max(1);
    let areas = root.split_evenly((2, cols));
    for (area, panel) in areas.iter().zip(panels) {
        let max = panel
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|&(_, g)| g))
            .fold(1.0f64, f64::max);
        let labels = panel.x_labels.clone();
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(-0.5f64..labels.len() as f64 - 0.5, 0f64..max * 1.12)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(labels.len().max(1))
            .x_label_formatter(&|x: &f64| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("GB/s")
            .draw()
            .map_err(err)?;
        for (k, (name, pts)) in panel.series.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, g)| (x as f64, g)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_every_panel_and_variant() {
        let m = |experiment, variant, uses_shared, carveout, gbps| CacheMeasurement {
            experiment,
            variant,
            uses_shared,
            carveout,
            ms: 1.0,
            bytes: 1,
            gbps,
            ratio_to_shared: 1.0,
            correct: true,
        };
        let st = CacheExperiment::Stencil { radius: 64 };
        let rows = vec![
            m(st, "shared", true, None, 2000.0),
            m(st, "shared", true, Some(0), 900.0),
            m(st, "l1", false, None, 800.0),
            m(st, "l1", false, Some(0), 850.0),
            m(CacheExperiment::Transpose, "naive", false, None, 700.0),
            m(
                CacheExperiment::Atomics {
                    bins: 4096,
                    hot: false,
                },
                "global",
                false,
                None,
                300.0,
            ),
        ];
        let p = panels(&rows);
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].x_labels, ["default", "0%"]);
        assert_eq!(p[0].series.len(), 2);
        crate::output::plot::register_font();
        let svg = render_svg(&p, "test GPU", (1200, 900)).unwrap();
        assert!(svg.contains("stencil1d r=64") && svg.contains("l1") && svg.contains("4096"));
    }
}
