//! `smemkit hist`: validate the flags, read (or generate) the samples, run the library's
//! histogram, then print and write the results.

pub mod config;

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use smemkit::{histogram, BinSpec, Histogram, HistogramOptions};

use crate::cli::HistArgs;
use crate::input::generate::{generate, GenSpec};
use crate::input::weights::WeightData;
use crate::input::{read_file, SampleData};
use crate::output::{self, summary::InputFacts};
use config::{HistConfig, Source};

pub fn run(args: &HistArgs, out: &mut dyn Write) -> Result<()> {
    let config = HistConfig::from_args(args)?;
    let start = Instant::now();
    let (data, what) = load(&config)?;
    let weights = config
        .weights
        .as_ref()
        .map(|p| WeightData::read(p).with_context(|| format!("--weights {}", p.display())))
        .transpose()?;
    let read_time = start.elapsed();
    let samples = data.samples();
    let spec = config.bins.spec(samples.sample_type())?;
    let options = HistogramOptions::new(spec.clone())
        .policy(config.policy)
        .backend(config.backend)
        .strategy(config.strategy);
    let h = histogram(samples, weights.as_ref().map(WeightData::weights), &options)?;
    let facts = InputFacts {
        what,
        dtype: samples.sample_type().name(),
        bytes: samples.byte_len(),
        read_time,
        bins: describe_bins(&spec, &h),
    };
    output::summary::write(out, &h, &facts)?;
    if config.chart {
        writeln!(out)?;
        output::chart::write(out, &h)?;
    }
    if let Some((path, format)) = &config.out {
        output::write_histogram(path, *format, &h)?;
        writeln!(out, "wrote       {}", path.display())?;
    }
    if let Some((path, format)) = &config.plot {
        output::plot::draw(path, *format, &h, &title(&facts))?;
        writeln!(out, "plotted     {}", path.display())?;
    }
    Ok(())
}

fn load(config: &HistConfig) -> Result<(SampleData, String)> {
    match &config.source {
        Source::File {
            path,
            dtype,
            column,
        } => {
            let data = read_file(path, *dtype, column.as_deref())?;
            let how = data.how();
            Ok((data, format!("{} ({how})", path.display())))
        }
        Source::Generate {
            dist,
            count,
            seed,
            dtype,
        } => {
            let (nbins, lo, hi) = config.bins.span()?;
            let spec = GenSpec {
                dist: *dist,
                count: *count,
                seed: *seed,
                ty: *dtype,
                nbins,
                lo,
                hi,
            };
            let data = SampleData::Owned(generate(&spec)?);
            Ok((data, format!("generated {} (seed {seed})", dist.name())))
        }
    }
}

fn describe_bins(spec: &BinSpec, h: &Histogram) -> String {
    let (lo, hi) = (h.edges[0], h.edges[h.nbins()]);
    match spec {
        BinSpec::Integer { nbins } => format!("{nbins} integer bins [0, {nbins})"),
        BinSpec::Uniform {
            nbins,
            range: Some(_),
        } => format!("{nbins} uniform bins over [{lo}, {hi}]"),
        BinSpec::Uniform { nbins, range: None } => {
            format!("{nbins} uniform bins over the data's [{lo}, {hi}]")
        }
        BinSpec::Edges(e) => format!(
            "{} bins between {} explicit edges [{lo}, {hi}]",
            e.len() - 1,
            e.len()
        ),
    }
}

fn title(facts: &InputFacts<'_>) -> String {
    format!("{}: {}", facts.what, facts.bins)
}
