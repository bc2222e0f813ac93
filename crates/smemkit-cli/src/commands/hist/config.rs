//! Raw `hist` flags to a validated configuration. Everything that can be checked before reading
//! data is checked here (ranges, dtypes, policies, output paths), so a mistake costs no reading
//! or computing and is reported as one line.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use smemkit::{
    bins::{BinRule, BinSpec, OutOfRange},
    histogram::{DeviceSet, StrategyChoice, StreamMode, WeightSums},
    sample::SampleType,
    Backend,
};

use crate::cli::HistArgs;
use crate::input::generate::Dist;
use crate::input::{stream, weights, FileKind};
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
    /// The file the edges came from (`--edges`), kept so no output replaces it.
    pub edges_file: Option<PathBuf>,
    /// The type of raw weights (`--weights-dtype`).
    pub weights_dtype: Option<SampleType>,
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
    /// Several processes: whether the bins are sharded over the ranks (`--shard-bins`).
    pub shard_bins: smemkit::internals::histogram::cuda::bin_shards::ShardBins,
    /// Several processes, bins sharded: rank 0 gathers the parts and writes the whole
    /// (`--gather`).
    pub gather: bool,
    /// Lines for the summary about how the inputs read so far were read (a skipped header).
    pub notes: Vec<String>,
    /// numpy's density=True.
    pub density: bool,
    /// How float weights are added (`--sums`).
    pub sums: WeightSums,
}

/// Parses `LO:HI`. `LO == HI` is kept when the library's widening by 0.5 on each side (numpy's)
/// gives bins that `nbins` bins can cut; at magnitudes where it does not, the error names the
/// narrowest symmetric widening that does. `LO > HI` is refused, as numpy refuses it.
pub fn parse_range(text: &str, nbins: usize) -> Result<(f64, f64)> {
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
        bail!("--range {text} is inverted: LO must not exceed HI (numpy: max must be larger than min)");
    }
    if lo == hi {
        match widened_range(lo, hi, nbins) {
            Some((a, b)) if a == lo - 0.5 && b == hi + 0.5 => {}
            Some((a, b)) => bail!(
                "--range {text} is empty, and numpy's widening by 0.5 on each side does not change \
                 it at this magnitude: pass --range {a:?}:{b:?}, the narrowest symmetric widening \
                 that {nbins} bins can cut"
            ),
            None => {
                bail!("--range {text} is empty and cannot be widened into bins at this magnitude")
            }
        }
    }
    Ok((lo, hi))
}

fn parse_dtype(text: Option<&str>, flag: &'static str) -> Result<Option<SampleType>> {
    text.map(|t| t.parse::<SampleType>().context(flag))
        .transpose()
}

/// Refuses, before anything is read, flags that mean nothing for the inputs as their names (or,
/// without a known extension, their first bytes) say they are, and standard input named twice.
/// Streams are checked when they are opened, since their first bytes can be read only once.
fn check_input_flags(
    a: &HistArgs,
    source: &Source,
    weights_dtype: Option<SampleType>,
) -> Result<()> {
    if let Source::File {
        path,
        dtype,
        column,
    } = source
    {
        if !stream::is_stream(path) {
            FileKind::of(path, *dtype, "--dtype")?.check_flags(
                path,
                *dtype,
                "--dtype",
                column.as_deref(),
            )?;
        }
    } else if let Some(c) = &a.column {
        bail!("--column {c} does not apply to --generate (it chooses a column of a text file)");
    }
    if let Some(w) = &a.weights {
        if !stream::is_stream(w) {
            if !w.is_file() {
                bail!("--weights: cannot read {}: no such file", w.display());
            }
            FileKind::of(w, weights_dtype, weights::DTYPE_FLAG)
                .and_then(|kind| weights::check_flags(kind, w, weights_dtype))
                .context("--weights")?;
        }
    }
    let stdin = [a.input.as_ref(), a.weights.as_ref(), a.edges.as_ref()]
        .into_iter()
        .flatten()
        .filter(|p| stream::is_stdin(p))
        .count();
    if stdin > 1 {
        bail!(
            "standard input (`-`, /dev/stdin) can be read once: give it to only one of the input, --weights and --edges"
        );
    }
    Ok(())
}

/// The narrowest range `[lo - w, hi + w]`, w = 0.5 (numpy's widening of an empty range) or a
/// doubling of it, that `nbins` uniform bins can cut into increasing edges, in float64 and, where
/// the values fit float32, in float32 too (so float32 samples accept it as well). `None` when no
/// finite one exists.
pub fn widened_range(lo: f64, hi: f64, nbins: usize) -> Option<(f64, f64)> {
    let mut w = 0.5f64;
    while w.is_finite() {
        let (a, b) = (lo - w, hi + w);
        if !(a.is_finite() && b.is_finite()) {
            return None;
        }
        let fits_f32 = a.abs().max(b.abs()) < f32::MAX as f64 / 2.0;
        if cuttable(a, b, nbins, false) && (!fits_f32 || cuttable(a, b, nbins, true)) {
            return Some((a, b));
        }
        w *= 2.0;
    }
    None
}

/// Whether the edges of `nbins` uniform bins over `[a, b]` strictly increase, computed as the
/// library computes them (numpy's linspace in float64, cast to float32 for float32 samples).
/// Large bin counts use a sufficient condition instead of building every edge: bins at least
/// four units in the last place of the larger bound wide.
fn cuttable(a: f64, b: f64, nbins: usize, f32_edges: bool) -> bool {
    let nbins = nbins.max(1);
    if nbins <= 1 << 16 {
        let edges = smemkit::internals::histogram::bins::linspace_f64(a, b, nbins + 1);
        return if f32_edges {
            edges.windows(2).all(|w| (w[0] as f32) < (w[1] as f32))
        } else {
            edges.windows(2).all(|w| w[0] < w[1])
        };
    }
    let m = a.abs().max(b.abs());
    let ulp = if f32_edges {
        let m = m as f32;
        (f32::from_bits(m.to_bits() + 1) - m) as f64
    } else {
        f64::from_bits(m.to_bits() + 1) - m
    };
    (b - a) / nbins as f64 >= 4.0 * ulp
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
    let rule = text
        .trim()
        .parse::<BinRule>()
        .with_context(|| format!("--bins `{text}` is neither a number of bins nor an estimator"))?;
    Ok((None, Some(rule)))
}

impl HistConfig {
    pub fn from_args(a: &HistArgs) -> Result<HistConfig> {
        let dtype = parse_dtype(a.dtype.as_deref(), "--dtype")?;
        let weights_dtype = parse_dtype(a.weights_dtype.as_deref(), weights::DTYPE_FLAG)?;
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
        check_input_flags(a, &source, weights_dtype)?;
        let (nbins, rule) = parse_bins(a.bins.as_deref())?;
        let range = a
            .range
            .as_deref()
            .map(|r| parse_range(r, nbins.unwrap_or(10)))
            .transpose()?;
        let mut notes = Vec::new();
        let edges = match &a.edges {
            Some(path) => {
                let read = crate::input::edges::read(path)
                    .with_context(|| format!("cannot use --edges {}", path.display()))?;
                notes.extend(read.note(path));
                let e = read.values;
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
        let policy = a
            .out_of_range
            .parse::<OutOfRange>()
            .context("--out-of-range")?;
        let backend = a.backend.parse::<Backend>().context("--backend")?;
        let strategy = a
            .strategy
            .parse::<StrategyChoice>()
            .and_then(|s| s.with_cluster_size(a.cluster_size))
            .context("--strategy")?;
        let sums = a.sums.parse::<WeightSums>().context("--sums")?;
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
            Some(d) => d.parse::<DeviceSet>().context("--devices")?,
        };
        if a.devices.is_some() && backend == Backend::Cpu {
            bail!("--devices applies to the GPU engine, not --backend cpu");
        }
        let shard_bins = a.shard_bins.parse()?;
        Ok(HistConfig {
            density: a.density,
            sums,
            stream,
            device_budget,
            devices,
            shard_bins,
            gather: a.gather,
            source,
            bins,
            weights: a.weights.clone(),
            edges_file: a.edges.clone(),
            weights_dtype,
            policy,
            backend,
            strategy,
            out,
            plot,
            chart: !a.no_chart,
            notes,
        })
    }
}

/// numpy's rule for edges: at least two, none NaN, never decreasing (infinite edges and equal
/// neighbours are allowed). The library checks again; this names the file.
pub(crate) fn check_edges(e: &[f64]) -> Result<()> {
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
        assert_eq!(parse_range("-1.5:2", 4).unwrap(), (-1.5, 2.0));
        // numpy widens an empty range by 0.5 on each side; the library does that.
        assert_eq!(parse_range("3:3", 4).unwrap(), (3.0, 3.0));
        let e = format!("{:#}", parse_range("5:1", 4).unwrap_err());
        assert!(e.contains("inverted") && !e.contains("widen"), "{e}");
        assert!(parse_range("1-2", 4).is_err());
        assert!(parse_range("a:2", 4).is_err());
    }

    /// An empty range is accepted where numpy's widening by 0.5 gives bins the library can cut
    /// (and the library then widens it so); elsewhere the error names the narrowest widening that
    /// does, which the parser and the library's binning accept for float64, float32 and integer
    /// samples.
    #[test]
    fn empty_ranges_widen_as_numpy_or_name_a_range_that_works() {
        use smemkit::{bins::Binning, sample::Samples};
        let mut refused = 0;
        for v in [
            0.0,
            3.0,
            -7.25,
            1e15,
            1e20,
            18446744073709551615.0,
            -9.2e18,
            1e300,
        ] {
            for nbins in [1usize, 3, 10, 1000, 100_000] {
                let (a, b) = widened_range(v, v, nbins).unwrap_or_else(|| panic!("{v} {nbins}"));
                assert!(a < v && v < b);
                let text = format!("{a:?}:{b:?}");
                assert_eq!(parse_range(&text, nbins).unwrap(), (a, b), "{text}");
                let resolve_all = |range| {
                    let spec = BinSpec::Uniform {
                        nbins,
                        range: Some(range),
                    };
                    let f64s = [v];
                    let u64s = [v as u64];
                    let f64_edges = Binning::resolve(&spec, Samples::F64(&f64s))
                        .unwrap()
                        .edges();
                    Binning::resolve(&spec, Samples::U64(&u64s)).unwrap();
                    if v.abs() < 1e30 {
                        let f32s = [v as f32];
                        Binning::resolve(&spec, Samples::F32(&f32s)).unwrap();
                    }
                    f64_edges
                };
                let widened = resolve_all((a, b));
                match parse_range(&format!("{v:?}:{v:?}"), nbins) {
                    Ok(range) => {
                        assert_eq!((a, b), (v - 0.5, v + 0.5), "{v} {nbins}");
                        assert_eq!(resolve_all(range), widened, "{v} {nbins}");
                    }
                    Err(e) => {
                        refused += 1;
                        let e = format!("{e:#}");
                        assert!(e.contains(&text), "{e}");
                    }
                }
            }
        }
        assert!(
            refused > 0,
            "large magnitudes need more than numpy's widening"
        );
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
