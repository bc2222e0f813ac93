//! `smemkit hist`: validate the flags, read (or generate) the samples, run the library's
//! histogram, then print and write the results. A raw or native-endian `.npy` file that streams
//! to one GPU is not read here: the library streams it from the file ([`stream_from_file`]).

pub mod config;

use std::io::Write;
use std::time::Instant;

use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::{
    histogram_file_with_progress, histogram_with_progress, BinSpec, FileInput, Histogram,
    HistogramOptions, RankSpec, SampleType, StreamOptions,
};

use crate::cli::HistArgs;
use crate::input::generate::{generate, GenSpec};
use crate::input::weights::WeightData;
use crate::input::{direct_file, progress, read_file, SampleData};
use crate::output::{self, summary::InputFacts};
use config::{HistConfig, Source};

pub fn run(args: &HistArgs, out: &mut dyn Write) -> Result<()> {
    let config = HistConfig::from_args(args)?;
    // Several processes: each histograms its slice of the same input; all get the sum; rank 0
    // writes the files.
    // With --devices, each rank drives those GPUs (every rank as many), one NCCL rank per GPU.
    let ranks = RankSpec::from_env()?;
    let writer = !matches!(&ranks, Some(r) if r.rank != 0);
    let start = Instant::now();
    let (input, what) = load(&config, &ranks)?;
    let weights = config
        .weights
        .as_ref()
        .map(|p| WeightData::read(p).with_context(|| format!("--weights {}", p.display())))
        .transpose()?;
    let read_time = start.elapsed();
    let ty = input.sample_type();
    let spec = config.bins.spec(ty)?;
    let options = options(&config, spec.clone(), &ranks);
    // Shown (on a terminal, for large inputs) only once the input streams: the library reports
    // the bytes handed to the GPU, and the bar shows them with the rate in GB/s.
    let bar = std::sync::OnceLock::new();
    let total = input.byte_len() as u64;
    let report = |bytes: u64| bar.get_or_init(|| stream_bar(total)).set_position(bytes);
    let weights_view = weights.as_ref().map(WeightData::weights);
    // GPU setup (context, kernels built or loaded) apart from the work, for the summary.
    let setup_before = smemkit::cuda::device::setup_time();
    let notice = crate::compile_notice::Watch::start();
    let h = match &input {
        Input::Data(data) => {
            histogram_with_progress(data.samples(), weights_view, &options, Some(&report))
        }
        Input::File(file) => {
            histogram_file_with_progress(file, weights_view, &options, Some(&report))
        }
    };
    drop(notice);
    let setup = smemkit::cuda::device::setup_time().saturating_sub(setup_before);
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    let h = h?;
    let facts = InputFacts {
        what,
        dtype: ty.name(),
        bytes: input.byte_len(),
        read_time,
        setup,
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

/// The library's options for this command and these bins.
fn options(config: &HistConfig, spec: BinSpec, ranks: &Option<RankSpec>) -> HistogramOptions {
    HistogramOptions::new(spec)
        .policy(config.policy)
        .backend(config.backend)
        .strategy(config.strategy)
        .stream(config.stream)
        .devices(config.devices.clone())
        .ranks(ranks.clone())
        .stream_options(StreamOptions {
            device_budget: config.device_budget,
            ..StreamOptions::default()
        })
}

/// The samples, held (mapped, or in memory) or left in their file to stream from it.
enum Input {
    Data(SampleData),
    File(FileInput),
}

impl Input {
    fn sample_type(&self) -> SampleType {
        match self {
            Input::Data(d) => d.samples().sample_type(),
            Input::File(f) => f.sample_type(),
        }
    }
    fn byte_len(&self) -> usize {
        match self {
            Input::Data(d) => d.samples().byte_len(),
            Input::File(f) => f.byte_len(),
        }
    }
}

fn load(config: &HistConfig, ranks: &Option<RankSpec>) -> Result<(Input, String)> {
    match &config.source {
        Source::File {
            path,
            dtype,
            column,
        } => {
            if let Some(file) = stream_from_file(config, ranks, path, *dtype)? {
                return Ok((
                    Input::File(file),
                    format!("{} (streamed from the file)", path.display()),
                ));
            }
            let data = read_file(path, *dtype, column.as_deref())?;
            let how = data.how();
            Ok((Input::Data(data), format!("{} ({how})", path.display())))
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
            Ok((
                Input::Data(data),
                format!("generated {} (seed {seed})", dist.name()),
            ))
        }
    }
}

/// The file opened for streaming when the histogram streams to one GPU and the file's bytes are
/// the samples (raw, native-endian `.npy`): positioned reads then fill the staging buffers, so the
/// file is neither mapped nor paged in before the histogram, may be larger than host memory, and
/// a file that shrinks or fails while it is read is one clear error (through a map it is a SIGBUS).
///
/// Every other case keeps the memory map ([`read_file`]): the CPU engine and the GPU's plain copy
/// path take the samples as one slice in memory, as do several GPUs and ranks, which cut it into
/// shards; text and big-endian `.npy` files are parsed or byte-swapped into memory anyway. There
/// the CLI relies on the input not being truncated while it runs.
fn stream_from_file(
    config: &HistConfig,
    ranks: &Option<RankSpec>,
    path: &Path,
    dtype: Option<SampleType>,
) -> Result<Option<FileInput>> {
    let Some(direct) = direct_file(path, dtype) else {
        return Ok(None);
    };
    let bytes = usize::try_from(direct.bytes).unwrap_or(usize::MAX);
    // The bins do not change where the samples stream from; the real ones come once the type is
    // known. An error here (no GPU) is left to the mapped path, which reports it as before.
    let probe = options(config, BinSpec::Integer { nbins: 1 }, ranks);
    if !smemkit::streams_to_one_gpu(bytes, &probe).unwrap_or(false) {
        return Ok(None);
    }
    let file = FileInput::open(path, direct.offset, direct.ty, direct.len)?;
    if file.is_empty() {
        bail!("{} holds no samples (empty input)", path.display());
    }
    Ok(Some(file))
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
