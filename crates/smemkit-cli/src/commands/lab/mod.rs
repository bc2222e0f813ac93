//! `smemkit lab banks`: shared-memory reads at strides 1, 2, 4, ... 32 words, timed on the GPU beside
//! the conflict degree the 32-bank rule predicts. Without a GPU it prints the predictions alone and
//! says so.
//!
//! `smemkit lab cache`: the stencil and the transpose through shared memory against variants that
//! read through the L1 cache only, under several preferred shared-memory carveouts, and
//! shared-memory against global atomics: a table (GB/s, ratio to the shared-memory kernel), a summary
//! per experiment, `--json FILE` (shared/BENCH.md lines) and `--plot FILE`. It needs a GPU.

pub mod plot;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use smemkit::internals::lab::{
    measure_banks, measure_cache, predicted_degree, CacheExperiment, CacheMeasurement,
    CacheOptions, STRIDES,
};

#[derive(Debug, Args)]
pub struct LabArgs {
    /// The experiment: banks or cache.
    pub experiment: String,
    /// cache: log2 of the array length (f32 elements; u32 values for the atomics).
    #[arg(long, default_value_t = 28)]
    pub log2_n: u32,
    /// cache: stencil radii, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [3usize, 64])]
    pub radii: Vec<usize>,
    /// cache: preferred carveouts (percent of L1 / shared memory as shared memory) tried besides
    /// the driver's default, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = smemkit::internals::lab::CARVEOUTS)]
    pub carveouts: Vec<u32>,
    /// cache: counters of the atomics comparison, comma-separated (each up to 16384).
    #[arg(long, value_delimiter = ',', default_values_t = [256u32, 4096])]
    pub atomic_bins: Vec<u32>,
    /// cache: timed runs per measurement (the median is reported).
    #[arg(long, default_value_t = 9)]
    pub runs: usize,
    /// cache: also write the measurements as JSON lines (shared/BENCH.md schema) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// cache: also draw GB/s per variant and carveout to FILE (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

pub fn run(a: &LabArgs, out: &mut dyn Write) -> Result<()> {
    match a.experiment.as_str() {
        "banks" => banks(out),
        "cache" => cache(a, out),
        other => bail!("unknown lab experiment `{other}` (expected banks or cache)"),
    }
}

fn banks(out: &mut dyn Write) -> Result<()> {
    match measure_banks() {
        Ok(rows) => {
            writeln!(
                out,
                "{:>6} {:>9} {:>10} {:>12} {:>9}",
                "stride", "predicted", "ms", "GB/s", "slowdown"
            )?;
            for r in rows {
                writeln!(
                    out,
                    "{:>6} {:>8}x {:>10.3} {:>12.1} {:>8.2}x",
                    r.stride, r.predicted, r.ms, r.gbps, r.slowdown
                )?;
            }
        }
        Err(e) => {
            writeln!(
                out,
                "no GPU measurement ({e}): the 32-bank rule's predictions only"
            )?;
            writeln!(out, "{:>6} {:>9}", "stride", "predicted")?;
            for s in STRIDES {
                writeln!(out, "{:>6} {:>8}x", s, predicted_degree(s))?;
            }
        }
    }
    Ok(())
}

pub(crate) fn carveout_label(c: Option<u32>) -> String {
    c.map_or("default".into(), |c| format!("{c}%"))
}

fn cache(a: &LabArgs, out: &mut dyn Write) -> Result<()> {
    let options = CacheOptions {
        log2_n: a.log2_n,
        radii: a.radii.clone(),
        carveouts: a.carveouts.clone(),
        atomic_bins: a.atomic_bins.clone(),
        runs: a.runs,
    };
    options.check()?;
    if let Some(p) = &a.plot {
        crate::output::PlotFormat::of(p)?;
    }
    let gpu = smemkit::internals::gpu::gpu().map_err(|e| {
        anyhow::anyhow!(
            "lab cache measures kernels and needs a CUDA GPU, and none can be used: {e}"
        )
    })?;
    let rows = measure_cache(&options)?;
    table(&rows, out)?;
    if let Some(path) = &a.json {
        let commit = crate::commit::describe();
        crate::output::write_atomic(path, |w: &mut dyn Write| {
            for r in &rows {
                writeln!(w, "{}", json_row(r, &options, &commit, &gpu.name))?;
            }
            Ok(())
        })
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        crate::commands::lab::plot::draw(path, &rows, &gpu.name)?;
    }
    Ok(())
}

fn table(rows: &[CacheMeasurement], out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{:<24} {:<7} {:>6} {:>8} {:>9} {:>9} {:>9} {:>7}",
        "experiment", "variant", "smem", "carveout", "ms", "GB/s", "vs smem", "correct"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<24} {:<7} {:>6} {:>8} {:>9.3} {:>9.1} {:>8.1}% {:>7}",
            r.experiment.describe(),
            r.variant,
            if r.uses_shared { "yes" } else { "no" },
            carveout_label(r.carveout),
            r.ms,
            r.gbps,
            100.0 * r.ratio_to_shared,
            r.correct
        )?;
    }
    writeln!(out)?;
    let mut experiments: Vec<CacheExperiment> = Vec::new();
    for r in rows {
        if !experiments.contains(&r.experiment) {
            experiments.push(r.experiment);
        }
    }
    for e in experiments {
        let of: Vec<&CacheMeasurement> = rows.iter().filter(|r| r.experiment == e).collect();
        let best = |shared: bool| {
            of.iter()
                .filter(|r| r.uses_shared == shared)
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
                .copied()
        };
        let spread = |shared: bool| {
            let g: Vec<f64> = of
                .iter()
                .filter(|r| r.uses_shared == shared)
                .map(|r| r.gbps)
                .collect();
            let (lo, hi) = g
                .iter()
                .fold((f64::MAX, 0f64), |(l, h), &v| (l.min(v), h.max(v)));
            (lo, hi)
        };
        let (Some(s), Some(c)) = (best(true), best(false)) else {
            continue;
        };
        let (slo, shi) = spread(true);
        let (clo, chi) = spread(false);
        writeln!(
            out,
            "{}: without shared memory at best {:.0} GB/s ({}, carveout {}) = {:.1}% of shared memory at best ({:.0} GB/s, carveout {}); over the carveouts shared memory spans {:.0}-{:.0} GB/s, without {:.0}-{:.0}",
            e.describe(),
            c.gbps,
            c.variant,
            carveout_label(c.carveout),
            100.0 * c.gbps / s.gbps,
            s.gbps,
            carveout_label(s.carveout),
            slo,
            shi,
            clo,
            chi
        )?;
    }
    Ok(())
}

fn json_row(r: &CacheMeasurement, o: &CacheOptions, commit: &str, gpu: &str) -> serde_json::Value {
    let n = 1u64 << o.log2_n;
    let mut row = json!({
        "impl": format!("smemkit/{}-{}", r.experiment.op(), r.variant),
        "op": r.experiment.op(),
        "lab": "cache",
        "variant": r.variant,
        "shared_memory": r.uses_shared,
        "carveout": r.carveout,
        "ms": r.ms,
        "gbps": r.gbps,
        "bytes": r.bytes,
        "ratio_to_shared": r.ratio_to_shared,
        "correct": r.correct,
        "n": n,
        "commit": commit,
        "gpu": gpu,
    });
    let extra = match r.experiment {
        CacheExperiment::Stencil { radius } => {
            json!({"dtype": "f32", "radius": radius, "boundary": "zero"})
        }
        CacheExperiment::Transpose => {
            let rows = 1u64 << (o.log2_n / 2);
            json!({"dtype": "f32", "rows": rows, "cols": n / rows})
        }
        CacheExperiment::Atomics { bins, hot } => json!({
            "dtype": "u32",
            "nbins": bins,
            "dist": if hot { "hot" } else { "uniform" },
        }),
    };
    if let (Some(row), Some(extra)) = (row.as_object_mut(), extra.as_object()) {
        row.extend(extra.clone());
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<CacheMeasurement> {
        let m = |experiment, variant, uses_shared, carveout, gbps: f64| CacheMeasurement {
            experiment,
            variant,
            uses_shared,
            carveout,
            ms: 1.0,
            bytes: 1 << 31,
            gbps,
            ratio_to_shared: gbps / 3000.0,
            correct: true,
        };
        let st = CacheExperiment::Stencil { radius: 3 };
        let at = CacheExperiment::Atomics {
            bins: 256,
            hot: true,
        };
        vec![
            m(st, "shared", true, None, 3000.0),
            m(st, "shared", true, Some(0), 1500.0),
            m(st, "l1", false, None, 2850.0),
            m(st, "l1", false, Some(100), 2000.0),
            m(at, "shared", true, None, 2000.0),
            m(at, "global", false, None, 20.0),
        ]
    }

    #[test]
    fn the_table_summarises_each_experiment() {
        let mut out = Vec::new();
        table(&sample(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("stencil1d r=3: without shared memory at best 2850 GB/s (l1, carveout default) = 95.0% of shared memory at best (3000 GB/s, carveout default)"), "{text}");
        assert!(
            text.contains("spans 1500-3000 GB/s, without 2000-2850"),
            "{text}"
        );
        assert!(text.contains("atomics 256 bins hot"), "{text}");
    }

    #[test]
    fn json_rows_follow_the_bench_schema() {
        let o = CacheOptions::default();
        let rows = sample();
        let r = json_row(&rows[1], &o, "abc", "H100");
        for key in ["impl", "op", "ms", "gbps", "correct", "commit", "gpu"] {
            assert!(r.get(key).is_some(), "{key} missing: {r}");
        }
        assert_eq!(r["impl"], "smemkit/stencil1d-shared");
        assert_eq!(r["carveout"], 0);
        assert_eq!(r["radius"], 3);
        let a = json_row(&rows[5], &o, "abc", "H100");
        assert_eq!(a["op"], "atomic_count");
        assert_eq!(a["dist"], "hot");
        assert!(json_row(&rows[0], &o, "abc", "H100")["carveout"].is_null());
    }
}
