//! Raw `hist` flags to a validated configuration. Everything that can be checked before reading
//! data is checked here (ranges, dtypes, policies, output paths), so a mistake costs no reading
//! or computing and is reported as one line.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use smemkit::{
    Backend, BinRule, BinSpec, DeviceSet, OutOfRange, SampleType, StrategyChoice, StreamMode,
};

use crate::cli::HistArgs;
use crate::input::generate::Dist;
use crate::output::{OutFormat, PlotFormat};

/// Where the samples come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    File {
        path: PathBuf,
        dtype: Option<SampleType>,
        column: Option<String>,
    },
    Generate {
        dist: Dist,
        count: usize,
        seed: u64,
        dtype: SampleType,
    },
}

/// The bins as asked for; the final [`BinSpec`] depends on the sample type (see [`BinsRequest::spec`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BinsRequest {
    pub nbins: Option<usize>,
    /// `--bins RULE`: numpy's estimator.
    pub rule: Option<BinRule>,
    /// `--minlength`: the floor of the bincount length taken from the data.
    pub minlength: usize,
    pub range: Option<(f64, f64)>,
    pub edges: Option<crate::input::edges::EdgeValues>,
    pub integer: bool,
}

impl BinsRequest {
    /// The rule documented in `--help`: edges if given; an estimator; a range gives uniform bins;
    /// integer samples without a range take integer bins; float samples take uniform bins over
    /// their min and max. `None`: integer bins whose number comes from the data (bincount).
    pub fn spec(&self, ty: SampleType) -> Result<Option<BinSpec>> {
        if let Some(edges) = &self.edges {
            return Ok(Some(edges.spec()));
        }
        if let Some(rule) = self.rule {
            return Ok(Some(BinSpec::Estimated {
                rule,
                range: self.range,
            }));
        }
        if self.sized_by_data(ty) {
            return Ok(None);
        }
        let nbins = self
            .nbins
            .context("give the number of bins with --bins N (or an estimator: --bins auto), or edges with --edges FILE")?;
        Ok(Some(match self.range {
            Some(range) => BinSpec::Uniform {
                nbins,
                range: Some(range),
            },
            None if self.integer || !ty.is_float() => BinSpec::Integer { nbins },
            None => BinSpec::Uniform { nbins, range: None },
        }))
    }

    /// Whether the bins of samples of type `ty` are bincount's, sized by the data: integer samples
    /// with no --bins, --range or --edges.
    pub fn sized_by_data(&self, ty: SampleType) -> bool {
        self.edges.is_none()
            && self.rule.is_none()
            && self.nbins.is_none()
            && self.range.is_none()
            && !ty.is_float()
    }

    /// The span that synthetic data covers: the range, the edges, or `[0, nbins)`.
    pub fn span(&self) -> Result<(usize, f64, f64)> {
        if let Some(e) = &self.edges {
            let e = e.to_f64();
            if !(e[0].is_finite() && e[e.len() - 1].is_finite()) {
                bail!("--generate needs finite outer edges to know what span to cover");
            }
            return Ok((e.len().saturating_sub(1).max(1), e[0], e[e.len() - 1]));
        }
        let nbins = self
            .nbins
            .context("--generate needs --bins N (or --edges FILE) to know what span to cover")?;
        Ok(match self.range {
            Some((lo, hi)) => (nbins, lo, hi),
            None => (nbins, 0.0, nbins as f64),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct HistConfig {
    pub source: Source,
    pub bins: BinsRequest,
    pub weights: Option<PathBuf>,
    pub policy: OutOfRange,
    pub backend: Backend,
    pub strategy: StrategyChoice,
    pub out: Option<(PathBuf, OutFormat)>,
    pub plot: Option<(PathBuf, PlotFormat)>,
    pub chart: bool,
    /// GPU: stream the input (`--stream`, `--no-stream`, or by size).
    pub stream: StreamMode,
    /// GPU: device memory the streaming buffers may use, in bytes.
    pub device_budget: Option<usize>,
    /// GPU: the GPUs of this process (`--devices`).
    pub devices: DeviceSet,
    /// numpy's density=True.
    pub density: bool,
}

/// Parses `LO:HI`. `LO == HI` is kept (the library widens it to `[LO - 0.5, HI + 0.5]` as numpy
/// does); `LO > HI` is refused, as numpy refuses it.
pub fn parse_range(text: &str) -> Result<(f64, f64)> {
    let (lo, hi) = text
        .split_once(':')
        .with_context(|| format!("--range `{text}` is not of the form LO:HI"))?;
    let num = |s: &str| -> Result<f64> {
        let v: f64 = s
            .trim()
            .parse()
            .with_context(|| format!("--range `{text}`: `{s}` is not a number"))?;
        if !v.is_finite() {
            bail!("--range `{text}`: bounds must be finite");
        }
        Ok(v)
    };
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo > hi {
        bail!("--range {lo}:{hi} is inverted: LO must not exceed HI (numpy: max must be larger than min)");
    }
    Ok((lo, hi))
}

/// `--bins N` or `--bins RULE` (numpy's estimator names).
fn parse_bins(text: Option<&str>) -> Result<(Option<usize>, Option<BinRule>)> {
    let Some(text) = text else {
        return Ok((None, None));
    };
    if let Ok(n) = text.trim().parse::<usize>() {
        if n == 0 {
            bail!("--bins must be at least 1 (got 0)");
        }
        return Ok((Some(n), None));
    }
    let rule = BinRule::parse(text.trim())
        .with_context(|| format!("--bins `{text}` is neither a number of bins nor an estimator"))?;
    Ok((None, Some(rule)))
}

fn dtype(text: Option<&str>) -> Result<Option<SampleType>> {
    text.map(|t| SampleType::parse(t).with_context(|| "--dtype"))
        .transpose()
}

impl HistConfig {
    pub fn from_args(a: &HistArgs) -> Result<HistConfig> {
        let dtype = dtype(a.dtype.as_deref())?;
        let source = match (&a.input, &a.generate) {
            (Some(path), None) => Source::File {
                path: path.clone(),
                dtype,
                column: a.column.clone(),
            },
            (None, Some(dist)) => {
                let dist = Dist::parse(dist)?;
                let count = a.count.context("--generate needs --count N")?;
                let count = usize::try_from(count)
                    .context("--count is larger than this machine can address")?;
                let default = if dist == Dist::Normal {
                    SampleType::F64
                } else {
                    SampleType::I32
                };
                Source::Generate {
                    dist,
                    count,
                    seed: a.seed,
                    dtype: dtype.unwrap_or(default),
                }
            }
            (None, None) => bail!("give an input file or --generate DIST --count N"),
            (Some(_), Some(_)) => bail!("give either an input file or --generate, not both"),
        };
        let (nbins, rule) = parse_bins(a.bins.as_deref())?;
        let range = a.range.as_deref().map(parse_range).transpose()?;
        let edges = match &a.edges {
            Some(path) => {
                let e = crate::input::edges::read(path)
                    .with_context(|| format!("cannot use --edges {}", path.display()))?;
                check_edges(&e.to_f64()).with_context(|| format!("--edges {}", path.display()))?;
                Some(e)
            }
            None => None,
        };
        if edges.is_some() && nbins.is_some_and(|b| b + 1 != edges.as_ref().map_or(0, |e| e.len()))
        {
            bail!(
                "--bins {} disagrees with the {} edges of --edges (which make {} bins)",
                nbins.unwrap_or(0),
                edges.as_ref().map_or(0, |e| e.len()),
                edges.as_ref().map_or(0, |e| e.len().saturating_sub(1))
            );
        }
        if rule.is_some() && (edges.is_some() || a.integer) {
            bail!("--bins RULE picks equal bins: it does not go with --edges or --integer");
        }
        if rule.is_some() && a.weights.is_some() {
            bail!("--bins {}: automated estimation of the number of bins is not supported for weighted data (numpy refuses it too)", rule.map_or("", BinRule::name));
        }
        let bins = BinsRequest {
            nbins,
            rule,
            minlength: a.minlength.unwrap_or(0),
            range,
            edges,
            integer: a.integer,
        };
        let policy = OutOfRange::parse(&a.out_of_range).context("--out-of-range")?;
        let backend = Backend::parse(&a.backend).context("--backend")?;
        let strategy = StrategyChoice::parse(&a.strategy, a.cluster_size).context("--strategy")?;
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
            if !w.is_file() {
                bail!("--weights: cannot read {}: no such file", w.display());
            }
        }
        let stream = match (a.stream, a.no_stream) {
            (true, _) => StreamMode::Always,
            (_, true) => StreamMode::Never,
            _ => StreamMode::Auto,
        };
        if (a.stream || a.device_budget.is_some()) && backend == Backend::Cpu {
            bail!("--stream and --device-budget apply to the GPU engine, not --backend cpu");
        }
        let device_budget = match a.device_budget {
            Some(0) => bail!("--device-budget must be at least 1 MiB"),
            Some(mib) => Some(
                mib.checked_mul(1 << 20)
                    .context("--device-budget is larger than this machine can address")?,
            ),
            None => None,
        };
        let devices = match &a.devices {
            None => DeviceSet::Default,
            Some(d) => DeviceSet::parse(d).context("--devices")?,
        };
        if a.devices.is_some() && backend == Backend::Cpu {
            bail!("--devices applies to the GPU engine, not --backend cpu");
        }
        Ok(HistConfig {
            density: a.density,
            stream,
            device_budget,
            devices,
            source,
            bins,
            weights: a.weights.clone(),
            policy,
            backend,
            strategy,
            out,
            plot,
            chart: !a.no_chart,
        })
    }
}

/// numpy's rule for edges: at least two, none NaN, never decreasing (infinite edges and equal
/// neighbours are allowed). The library checks again; this names the file.
fn check_edges(e: &[f64]) -> Result<()> {
    if e.len() < 2 {
        bail!("at least two edges are needed (got {})", e.len());
    }
    if let Some(i) = e.iter().position(|x| x.is_nan()) {
        bail!("edges must not be NaN (edge {i} is NaN)");
    }
    if let Some(i) = e.windows(2).position(|w| w[1] < w[0]) {
        bail!(
            "bins must increase monotonically: edge {} ({}) is below edge {} ({})",
            i + 1,
            e[i + 1],
            i,
            e[i]
        );
    }
    Ok(())
}

/// The folder an output goes to must exist before any work is done.
pub fn check_folder(path: &Path) -> Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        bail!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            folder.display()
        );
    }
    if path.is_dir() {
        bail!("cannot write {}: it is a directory", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_equal_ends_kept_inverted_refused() {
        assert_eq!(parse_range("-1.5:2").unwrap(), (-1.5, 2.0));
        assert_eq!(parse_range("3:3").unwrap(), (3.0, 3.0));
        let e = format!("{:#}", parse_range("5:1").unwrap_err());
        assert!(e.contains("inverted"), "{e}");
        assert!(parse_range("1-2").is_err());
        assert!(parse_range("a:2").is_err());
    }

    #[test]
    fn the_bin_rule() {
        let r = BinsRequest {
            nbins: Some(4),
            rule: None,
            minlength: 0,
            range: None,
            edges: None,
            integer: false,
        };
        assert_eq!(
            r.spec(SampleType::I32).unwrap(),
            Some(BinSpec::Integer { nbins: 4 })
        );
        assert_eq!(
            r.spec(SampleType::F32).unwrap(),
            Some(BinSpec::Uniform {
                nbins: 4,
                range: None
            })
        );
        let r = BinsRequest {
            range: Some((0.0, 1.0)),
            ..r
        };
        assert_eq!(
            r.spec(SampleType::U8).unwrap(),
            Some(BinSpec::Uniform {
                nbins: 4,
                range: Some((0.0, 1.0))
            })
        );
        let data = BinsRequest {
            nbins: None,
            range: None,
            ..r
        };
        assert_eq!(data.spec(SampleType::U16).unwrap(), None);
        assert!(data.spec(SampleType::F64).is_err());
        assert_eq!(parse_bins(Some("fd")).unwrap(), (None, Some(BinRule::Fd)));
        assert!(parse_bins(Some("0")).is_err());
        assert!(parse_bins(Some("fdx")).is_err());
    }
}
