//! The flags of `hist2d` and `histdd`, checked against each other before anything is read: bins,
//! ranges and edge files per axis (one for every axis, or one each), outputs and their folders.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use smemkit::{bins::BinSpec, sample::SampleType, Backend};

use super::JointArgs;
use crate::commands::hist::config::{check_folder, parse_range};
use crate::output::{OutFormat, PlotFormat};

/// Bins as asked for, before the number of axes is known.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisBins {
    /// `--bins` (one or one per axis) and `--range` (likewise; `auto` for the data's own).
    Uniform {
        nbins: Vec<usize>,
        ranges: Vec<Option<(f64, f64)>>,
    },
    /// `--edges` files, read: one for every axis or one per axis.
    Edges(Vec<Vec<f64>>),
}

impl AxisBins {
    /// One [`BinSpec`] per axis for `dims` axes, or an error naming the flag with the wrong count.
    pub fn specs(&self, dims: usize) -> Result<Vec<BinSpec>> {
        fn per_axis<T: Clone>(v: &[T], dims: usize, flag: &str) -> Result<Vec<T>> {
            match v.len() {
                1 => Ok(vec![v[0].clone(); dims]),
                n if n == dims => Ok(v.to_vec()),
                n => bail!(
                    "{flag} gives {n} values for {dims} axes: give one for all, or one per axis"
                ),
            }
        }
        Ok(match self {
            AxisBins::Uniform { nbins, ranges } => {
                let nbins = per_axis(nbins, dims, "--bins")?;
                let ranges = per_axis(ranges, dims, "--range")?;
                nbins
                    .into_iter()
                    .zip(ranges)
                    .map(|(nbins, range)| BinSpec::Uniform { nbins, range })
                    .collect()
            }
            AxisBins::Edges(e) => per_axis(e, dims, "--edges")?
                .into_iter()
                .map(BinSpec::Edges)
                .collect(),
        })
    }
}

pub struct JointConfig {
    pub inputs: Vec<PathBuf>,
    pub columns: Option<Vec<String>>,
    pub dtype: Option<SampleType>,
    pub bins: AxisBins,
    pub edge_files: Vec<PathBuf>,
    pub weights: Option<PathBuf>,
    pub weights_dtype: Option<SampleType>,
    pub density: bool,
    pub backend: Backend,
    pub out: Option<(PathBuf, OutFormat)>,
    pub plot: Option<(PathBuf, PlotFormat)>,
    pub notes: Vec<String>,
}

fn list(text: &str) -> Vec<&str> {
    text.split(',').map(str::trim).collect()
}

impl JointConfig {
    pub fn from_args(a: &JointArgs) -> Result<JointConfig> {
        let dtype = a
            .dtype
            .as_deref()
            .map(|t| t.parse::<SampleType>().context("--dtype"))
            .transpose()?;
        let weights_dtype = a
            .weights_dtype
            .as_deref()
            .map(|t| t.parse::<SampleType>().context("--weights-dtype"))
            .transpose()?;
        let columns = a
            .columns
            .as_deref()
            .map(|c| list(c).into_iter().map(String::from).collect());
        let mut notes = Vec::new();
        let bins = match &a.edges {
            Some(files) => {
                if a.bins.is_some() || a.range.is_some() {
                    bail!("--edges gives the bins of every axis: leave out --bins and --range");
                }
                let mut edges = Vec::new();
                for f in list(files) {
                    let path = PathBuf::from(f);
                    let read = crate::input::edges::read(&path)
                        .with_context(|| format!("cannot use --edges {f}"))?;
                    notes.extend(read.note(&path));
                    edges.push(match read.values {
                        crate::input::edges::EdgeValues::Float(e) => e,
                        crate::input::edges::EdgeValues::Int(e) => {
                            let as_f64 = e.to_f64();
                            if as_f64.iter().any(|x| x.abs() > 9007199254740992.0) {
                                bail!(
                                    "--edges {f}: integer edges beyond 2^53 are held exactly by \
                                     1-D histograms only (smemkit hist); give float edges"
                                );
                            }
                            as_f64
                        }
                    });
                }
                AxisBins::Edges(edges)
            }
            None => {
                let nbins = list(a.bins.as_deref().unwrap_or("10"))
                    .into_iter()
                    .map(|b| match b.parse::<usize>() {
                        Ok(0) => bail!("--bins must be at least 1 (got 0)"),
                        Ok(n) => Ok(n),
                        Err(_) => bail!("--bins `{b}` is not a number of bins"),
                    })
                    .collect::<Result<Vec<usize>>>()?;
                let ranges = match &a.range {
                    None => vec![None],
                    Some(r) => list(r)
                        .into_iter()
                        .enumerate()
                        .map(|(j, r)| match r {
                            "auto" => Ok(None),
                            r => parse_range(r, nbins[j.min(nbins.len() - 1)]).map(Some),
                        })
                        .collect::<Result<Vec<_>>>()?,
                };
                AxisBins::Uniform { nbins, ranges }
            }
        };
        let backend: Backend = a.backend.parse().context("--backend")?;
        let out = a
            .out
            .as_ref()
            .map(|p| Ok::<_, anyhow::Error>((p.clone(), OutFormat::of(p)?)))
            .transpose()?;
        let plot = a
            .plot
            .as_ref()
            .map(|p| Ok::<_, anyhow::Error>((p.clone(), PlotFormat::of(p)?)))
            .transpose()?;
        for (path, what) in out
            .iter()
            .map(|o| (&o.0, "--out"))
            .chain(plot.iter().map(|p| (&p.0, "--plot")))
        {
            check_folder(path).with_context(|| what.to_string())?;
        }
        if let Some(w) = &a.weights {
            if !crate::input::stream::is_stream(w) && !w.is_file() {
                bail!("--weights: cannot read {}: no such file", w.display());
            }
        }
        let edge_files = a
            .edges
            .as_deref()
            .map(|e| list(e).into_iter().map(PathBuf::from).collect())
            .unwrap_or_default();
        Ok(JointConfig {
            inputs: a.inputs.clone(),
            columns,
            dtype,
            bins,
            edge_files,
            weights: a.weights.clone(),
            weights_dtype,
            density: a.density,
            backend,
            out,
            plot,
            notes,
        })
    }
}
