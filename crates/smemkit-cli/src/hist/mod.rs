//! `smemkit hist`: validate the flags, read (or generate) the samples, run the library's
//! histogram, then print and write the results.

pub mod config;

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use smemkit::{
    histogram_with_progress, BinSpec, Histogram, HistogramOptions, RankSpec, StreamOptions,
};

use crate::cli::HistArgs;
use crate::input::generate::{generate, GenSpec};
use crate::input::weights::WeightData;
use crate::input::{progress, read_file, SampleData};
use crate::output::{self, summary::InputFacts};
use config::{HistConfig, Source};

pub fn run(args: &HistArgs, out: &mut dyn Write) -> Result<()> {
    let config = HistConfig::from_args(args)?;
    // Several processes: each histograms its slice of the same input; all get the sum; rank 0
    // writes the files.
    let ranks = RankSpec::from_env()?;
    if ranks.is_some() && config.devices != smemkit::DeviceSet::Default {
        anyhow::bail!(
            "--devices with SMEMKIT_RANK: several GPUs per rank are not implemented (start one rank per GPU)"
        );
    }
    let writer = !matches!(&ranks, Some(r) if r.rank != 0);
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
        .strategy(config.strategy)
        .stream(config.stream)
        .devices(config.devices.clone())
        .ranks(ranks.clone())
        .stream_options(StreamOptions {
            device_budget: config.device_budget,
            ..StreamOptions::default()
        });
    // Shown (on a terminal, for large inputs) only once the input streams: the library reports
    // the bytes handed to the GPU, and the bar shows them with the rate in GB/s.
    let bar = std::sync::OnceLock::new();
    let total = samples.byte_len() as u64;
    let report = |bytes: u64| bar.get_or_init(|| stream_bar(total)).set_position(bytes);
    let h = histogram_with_progress(
        samples,
        weights.as_ref().map(WeightData::weights),
        &options,
        Some(&report),
    );
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    let h = h?;
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
    if !writer {
        if config.out.is_some() || config.plot.is_some() {
            writeln!(out, "rank 0 writes the files")?;
        }
        return Ok(());
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

/// A bar over `total` bytes streamed to the GPU, in decimal units (GB/s, as the benchmarks count).
fn stream_bar(total: u64) -> indicatif::ProgressBar {
    let bar = progress::bar(total, "streaming to the GPU");
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:40}] {decimal_bytes}/{decimal_total_bytes} ({decimal_bytes_per_sec}, {eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
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
