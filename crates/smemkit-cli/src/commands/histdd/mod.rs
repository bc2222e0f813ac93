//! `smemkit hist2d` and `smemkit histdd`: joint histograms of several columns (numpy.histogram2d
//! and numpy.histogramdd), from the columns of a `.npy` array or a text file, or one file per
//! axis. The same checks as `hist` run before anything is read: flags that mean nothing for an
//! input, outputs that would replace an input, output folders that do not exist.

mod config;
mod load;

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use smemkit::histogramdd::{histogramdd, JointOptions};

use crate::input::weights::WeightData;
use crate::output;
use config::JointConfig;

const AFTER_HELP: &str = "\
Inputs:
  One .npy array of shape (N, D), or deeper with D its last dimension (an (H, W, 3) RGB image
  is H*W samples of 3 axes), in C or Fortran order; --columns picks some of its D columns.
  One text file (.csv, .tsv, .txt) with --columns (indices from 0 or header names; hist2d
  reads columns 0 and 1 without it). Or one file per axis (.npy, text, raw with --dtype).
Bins (numpy.histogramdd's rule on every axis: linspace edges, the last bin closed, samples
outside any axis or NaN on any axis not counted):
  --bins N or N0,N1,... (default 10), --range LO:HI or one per axis (`auto`: the data's own),
  or --edges FILE or FILE0,FILE1,... (increasing edges; equal neighbours and infinite ends allowed).
Outputs: --out FILE.npy (the D-dimensional counts; sums of weights or densities as f64),
  FILE.csv (one row per non-zero bin: bin, left and right edge of each axis, count),
  FILE.json (counts flat in C order, edges, tallies).";

/// The flags of `hist2d` and `histdd`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct JointArgs {
    /// Input files: one (N, D) .npy, one text file with --columns, or one file per axis.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Columns of the one input file, comma-separated: indices from 0 (or header names in text).
    #[arg(long, value_name = "A,B,...")]
    pub columns: Option<String>,
    /// Sample type of text and raw inputs: u8 u16 u32 u64 i8 i16 i32 i64 f32 f64.
    #[arg(long, value_name = "T")]
    pub dtype: Option<String>,
    /// Bins per axis: one number for every axis, or one per axis (comma-separated). Default 10.
    #[arg(long, value_name = "N|N0,N1,...")]
    pub bins: Option<String>,
    /// Range of the uniform bins: LO:HI for every axis, or one per axis (comma-separated; `auto`
    /// for the data's minimum and maximum).
    #[arg(long, value_name = "LO:HI,...", allow_hyphen_values = true)]
    pub range: Option<String>,
    /// Files of bin edges (.npy or one number per line): one for every axis, or one per axis.
    #[arg(long, value_name = "FILE,...")]
    pub edges: Option<String>,
    /// Weights, one per sample (.npy, text, or raw with --weights-dtype).
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// Type of raw binary weights.
    #[arg(long, value_name = "T", requires = "weights")]
    pub weights_dtype: Option<String>,
    /// numpy's density=True: each bin divided by its volume and by the total.
    #[arg(long)]
    pub density: bool,
    /// Engine: auto, cpu or cuda (auto picks the CPU engine; the GPU engine's weight sums add in
    /// any order, so their last bits can differ from numpy's).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Write the histogram to FILE: .npy, .csv or .json.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Draw a 2-D histogram as a heat map with a colour bar, a 3-D one as a grid of 2-D slices
    /// along its last axis on one colour bar: FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// `hist2d`: exactly two axes.
pub fn run_2d(args: &JointArgs, out: &mut dyn Write) -> Result<()> {
    run(args, Some(2), out)
}

/// `histdd`: any number of axes.
pub fn run_dd(args: &JointArgs, out: &mut dyn Write) -> Result<()> {
    run(args, None, out)
}

fn run(args: &JointArgs, dims: Option<usize>, out: &mut dyn Write) -> Result<()> {
    let config = JointConfig::from_args(args)?;
    protect_inputs(&config)?;
    let start = Instant::now();
    let loaded = load::load(
        &config.inputs,
        config.columns.as_deref(),
        config.dtype,
        dims,
    )?;
    let samples = loaded.samples()?;
    let d = samples.dims();
    if config.plot.is_some() && !(d == 2 || d == 3) {
        bail!("--plot draws 2-D histograms as a heat map and 3-D ones as a grid of slices (this one has {d} axes)");
    }
    let weights = match &config.weights {
        Some(p) => {
            let read = WeightData::read(p, config.weights_dtype)
                .with_context(|| format!("--weights {}", p.display()))?;
            let paired = read.values.pair(&read.shape, &loaded.shape);
            Some(paired.with_context(|| format!("--weights {}", p.display()))?)
        }
        None => None,
    };
    let read_time = start.elapsed();
    let specs = config.bins.specs(d)?;
    let joint_bins = specs.iter().try_fold(1u128, |p, s| {
        let n = match s {
            smemkit::bins::BinSpec::Uniform { nbins, .. } => *nbins,
            smemkit::bins::BinSpec::Edges(e) => e.len().saturating_sub(1),
            smemkit::bins::BinSpec::Integer { nbins } => *nbins,
            smemkit::bins::BinSpec::IntEdges(e) => e.len().saturating_sub(1),
            // Joint histograms take counts or edges per axis (the library refuses the rest).
            _ => 1,
        };
        Some(p.saturating_mul(n as u128))
    });
    crate::limits::check(
        format_args!(
            "{} joint bins (counters, 24 bytes a bin)",
            joint_bins.unwrap_or(0)
        ),
        crate::limits::histogram_bytes(joint_bins.unwrap_or(0)),
    )?;
    let options = JointOptions::new(specs)
        .density(config.density)
        .backend(config.backend);
    let h = histogramdd(
        &samples,
        weights.as_ref().map(WeightData::weights),
        &options,
    )
    .map_err(|e| name_edge_files(e, &config))?;
    let ty = loaded.sample_type();
    let facts = output::joint::Facts {
        what: &loaded.what,
        dtype: ty.name(),
        bytes: samples.byte_len(),
        read_time,
        names: &loaded.names,
    };
    output::joint::summary(out, &h, &facts)?;
    for note in config.notes.iter().chain(&loaded.notes) {
        writeln!(out, "note        {note}")?;
    }
    if config.plot.is_some() {
        // Refused before anything is written.
        output::heatmap::check(&h.shape)?;
    }
    if let Some((path, format)) = &config.out {
        output::joint::write(path, *format, &h, &loaded.names)?;
        writeln!(out, "wrote       {}", path.display())?;
    }
    if let Some((path, format)) = &config.plot {
        output::heatmap::draw(path, *format, &h, &loaded.names, &loaded.what)?;
        writeln!(out, "plotted     {}", path.display())?;
    }
    Ok(())
}

/// An error about an axis's edges, with the `--edges` files named.
fn name_edge_files(e: smemkit::Error, config: &JointConfig) -> anyhow::Error {
    if config.edge_files.is_empty() {
        return e.into();
    }
    let files: Vec<String> = config
        .edge_files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    anyhow::Error::from(e).context(format!("--edges {}", files.join(",")))
}

/// Registers the files this command reads and refuses `--out` or `--plot` naming one of them.
fn protect_inputs(config: &JointConfig) -> Result<()> {
    use crate::output::identity::{check_output, protect};
    for p in &config.inputs {
        protect("an input", p);
    }
    if let Some(w) = &config.weights {
        protect("the --weights file", w);
    }
    for e in &config.edge_files {
        protect("an --edges file", e);
    }
    if let Some((path, _)) = &config.out {
        check_output("--out", path)?;
    }
    if let Some((path, _)) = &config.plot {
        check_output("--plot", path)?;
    }
    let stdin = config
        .inputs
        .iter()
        .chain(&config.weights)
        .chain(&config.edge_files)
        .filter(|p| crate::input::stream::is_stdin(p))
        .count();
    if stdin > 1 {
        anyhow::bail!(
            "standard input (`-`, /dev/stdin) can be read once: give it to only one of the inputs, --weights and --edges"
        );
    }
    Ok(())
}
