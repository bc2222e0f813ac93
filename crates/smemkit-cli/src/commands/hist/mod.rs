//! `smemkit hist`: validate the flags, read (or generate) the samples, run the library's
//! histogram, then print and write the results. A raw or native-endian `.npy` file that streams
//! to one GPU is not read here: the library streams it from the file ([`stream_from_file`]).

mod bincount;
pub mod config;

use std::io::Write;
use std::time::Instant;

use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::internals::histogram::{histogram_file_with_progress, histogram_with_progress};
use smemkit::{
    bins::BinSpec,
    histogram::{FileInput, Histogram, HistogramOptions, RankSpec, StreamOptions},
    sample::SampleType,
};

use crate::cli::HistArgs;
use crate::input::generate::{generate, GenSpec};
use crate::input::weights::WeightData;
use crate::input::{direct_file, progress, read_file, SampleData, Shape};
use crate::output::{self, summary::InputFacts};
use config::{HistConfig, Source};
use smemkit::internals::histogram::cuda::bin_shards::{part_path, ShardBins};
use smemkit::internals::launch::gather::Gather;

pub fn run(args: &HistArgs, out: &mut dyn Write) -> Result<()> {
    let r = run_config(args, out);
    // Rank 0 after a gather (`--gather`): the other ranks wait to hear how the writing went.
    smemkit::internals::launch::gather::written(
        r.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")),
    );
    r
}

fn run_config(args: &HistArgs, out: &mut dyn Write) -> Result<()> {
    let config = HistConfig::from_args(args)?;
    protect_inputs(&config)?;
    check_sizes(&config)?;
    // Several processes: each histograms its slice of the same input; all get the sum; rank 0
    // writes the files.
    // With --devices, each rank drives those GPUs (every rank as many), one NCCL rank per GPU.
    // The ranks come from a launcher's environment (torchrun, srun, mpirun) or SMEMKIT_RANK.
    let (ranks, rank_note) = ranks(config.shard_bins, config.gather)?;
    let writer = !matches!(&ranks, Some(r) if r.rank != 0);
    let start = Instant::now();
    // GPU setup paid before the histogram call (the context opened to decide whether the input
    // streams from its file): the summary counts it into the call.
    let setup_at_start = smemkit::internals::gpu::setup_time();
    let read_span = smemkit::internals::gpu::trace::span("read the input (map or parse, weights)");
    let loaded = load(&config, &ranks)?;
    let (input, what) = (loaded.input, loaded.what);
    let mut notes = config.notes.clone();
    notes.extend(rank_note);
    notes.extend(loaded.note);
    let weights = match &config.weights {
        Some(p) => {
            let read = WeightData::read(p, config.weights_dtype)
                .with_context(|| format!("--weights {}", p.display()))?;
            notes.extend(read.note(p));
            let paired = read.values.pair(&read.shape, &loaded.shape);
            Some(paired.with_context(|| format!("--weights {}", p.display()))?)
        }
        None => None,
    };
    drop(read_span);
    let read_time = start.elapsed();
    let setup_before = smemkit::internals::gpu::setup_time().saturating_sub(setup_at_start);
    let ty = input.sample_type();
    let Some(spec) = config.bins.spec(ty)? else {
        // Integer bins sized by the data (numpy's bincount).
        let Input::Data(data) = &input else {
            unreachable!("stream_from_file leaves bincount's input in memory")
        };
        let h = bincount::run(&config, &ranks, data, &loaded.shape, weights.as_ref())?;
        let spec = BinSpec::Integer { nbins: h.nbins() };
        return present(
            out,
            &config,
            writer,
            &h,
            &spec,
            &input,
            About {
                what,
                notes: &notes,
                read_time,
                setup_before: std::time::Duration::ZERO,
            },
        );
    };
    let options = options(&config, spec.clone(), &ranks);
    // Shown (on a terminal, for large inputs) only once the input streams: the library reports
    // the bytes handed to the GPU, and the bar shows them with the rate in GB/s.
    let bar = std::sync::OnceLock::new();
    let total = input.byte_len() as u64;
    let report = |bytes: u64| bar.get_or_init(|| stream_bar(total)).set_position(bytes);
    let weights_view = weights.as_ref().map(WeightData::weights);
    let notice = crate::compile_notice::Watch::start();
    let call_span = smemkit::internals::gpu::trace::span("histogram call (library)");
    let h = match &input {
        Input::Data(data) => {
            histogram_with_progress(data.samples(), weights_view, &options, Some(&report))
        }
        Input::File(file) => {
            histogram_file_with_progress(file, weights_view, &options, Some(&report))
        }
    };
    drop(call_span);
    drop(notice);
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    let h = h.map_err(|e| collapsed_range_hint(e, &config))?;
    present(
        out,
        &config,
        writer,
        &h,
        &spec,
        &input,
        About {
            what,
            notes: &notes,
            read_time,
            setup_before,
        },
    )
}

/// Prints the summary, the notes and the chart and writes the files (rank 0 only).
/// What the summary says of a run besides the histogram: the input's description, the notes,
/// the time reading the input and the GPU setup spent before the histogram call.
struct About<'a> {
    what: String,
    notes: &'a [String],
    read_time: std::time::Duration,
    setup_before: std::time::Duration,
}

fn present(
    out: &mut dyn Write,
    config: &HistConfig,
    writer: bool,
    h: &Histogram,
    spec: &BinSpec,
    input: &Input,
    about: About<'_>,
) -> Result<()> {
    let About {
        what,
        notes,
        read_time,
        setup_before,
    } = about;
    let _span = smemkit::internals::gpu::trace::span("summary and output files");
    let ty = input.sample_type();
    let facts = InputFacts {
        what,
        dtype: ty.name(),
        bytes: input.byte_len(),
        read_time,
        setup_before,
        bins: describe_bins(spec, h),
    };
    output::summary::write(out, h, &facts)?;
    for note in notes {
        writeln!(out, "note        {note}")?;
    }
    // A module that went to the driver as PTX costs a JIT and fills the driver's cache: said,
    // since on the architectures NVRTC targets every module should be a CUBIN.
    let ptx = smemkit::internals::gpu::compile::ptx_load_reasons();
    if let Some(first) = ptx.first() {
        writeln!(
            out,
            "note        {} GPU module(s) loaded as PTX, which the driver compiles and caches (first: {first})",
            ptx.len()
        )?;
    }
    if config.chart && h.nbins() > 0 {
        writeln!(out)?;
        output::chart::write(out, h)?;
    }
    // Bins sharded over ranks: every rank writes its part of the bins to its own file, unless
    // rank 0 gathered them (`--gather`: its histogram is whole, and it writes it alone).
    let part = h.part.as_ref().filter(|_| !config.gather);
    if !writer && part.is_none() {
        if config.out.is_some() || config.plot.is_some() {
            writeln!(out, "rank 0 writes the files")?;
        }
        return Ok(());
    }
    let named = |path: &Path| match part {
        Some(p) => part_path(path, p.rank, p.world),
        None => path.to_path_buf(),
    };
    if let Some((path, format)) = &config.out {
        let path = named(path);
        let timing = output::summary::Timing::of(h, facts.bytes, setup_before);
        output::write_histogram(&path, *format, h, &timing)?;
        writeln!(out, "wrote       {}", path.display())?;
    }
    if let Some((path, format)) = &config.plot {
        let path = named(path);
        output::plot::draw(&path, *format, h, &title(&facts))?;
        writeln!(out, "plotted     {}", path.display())?;
    }
    Ok(())
}

/// This process's place among several, and the summary's note saying which launcher it came
/// from. A launcher's world of one rank runs alone (no NCCL, any backend); `SMEMKIT_WORLD_SIZE=1`
/// asked for a rank explicitly and keeps it.
fn ranks(shard_bins: ShardBins, gather: bool) -> Result<(Option<RankSpec>, Option<String>)> {
    let Some(mut spec) = RankSpec::from_env()? else {
        if shard_bins == ShardBins::Always {
            bail!(
                "--shard-bins always shards the bins over several processes, and this one runs \
                 alone (no launcher's variables, nor SMEMKIT_RANK)"
            );
        }
        return Ok((None, None));
    };
    spec.shard_bins = shard_bins;
    spec.gather = if gather {
        Gather::UntilWritten
    } else {
        Gather::Off
    };
    if spec.world == 1 && spec.launcher != smemkit::internals::launch::Launcher::Smemkit {
        let note = format!(
            "launched by {} as a single rank ({}): runs alone",
            spec.launcher.name(),
            spec.source
        );
        return Ok((None, Some(note)));
    }
    spec.check_gather()?;
    let note = format!("ranks: {}", spec.describe());
    Ok((Some(spec), Some(note)))
}

/// Registers the files this command reads, and refuses `--out` or `--plot` naming one of them
/// (by identity: any spelling, a symbolic or a hard link).
fn protect_inputs(config: &HistConfig) -> Result<()> {
    use crate::output::identity::{check_output, protect};
    if let Source::File { path, .. } = &config.source {
        protect("the input", path);
    }
    if let Some(w) = &config.weights {
        protect("the --weights file", w);
    }
    if let Some(e) = &config.edges_file {
        protect("the --edges file", e);
    }
    if let Some((path, _)) = &config.out {
        check_output("--out", path)?;
    }
    if let Some((path, _)) = &config.plot {
        check_output("--plot", path)?;
    }
    Ok(())
}

/// Refuses bins or generated samples that this process cannot hold, before anything is read or
/// allocated (see [`crate::limits`]).
fn check_sizes(config: &HistConfig) -> Result<()> {
    let nbins = match (&config.bins.edges, config.bins.nbins) {
        (Some(e), _) => e.len().saturating_sub(1),
        (None, Some(n)) => n,
        (None, None) => 0,
    };
    crate::limits::check(
        format_args!("--bins {nbins} (counters and edges, 24 bytes a bin)"),
        crate::limits::histogram_bytes(nbins as u128),
    )?;
    if let Source::Generate { count, dtype, .. } = &config.source {
        crate::limits::check(
            format_args!("--count {count} of {dtype}"),
            *count as u128 * dtype.size() as u128,
        )?;
    }
    Ok(())
}

/// Samples that are all one value and no `--range`: numpy widens the range by 0.5 on each side,
/// which at large magnitudes changes nothing, so the library refuses it. Names a range to pass
/// that these bins can cut.
fn collapsed_range_hint(e: smemkit::Error, config: &HistConfig) -> anyhow::Error {
    if let smemkit::Error::TooManyBins { nbins, lo, hi, .. } = e {
        if config.bins.range.is_none() && lo == hi {
            if let Some((a, b)) = config::widened_range(lo, hi, nbins) {
                return anyhow::anyhow!(
                    "{e}: every sample is {lo:?}, and numpy's widening by 0.5 on each side does not \
                     change that range at this magnitude; pass --range {a:?}:{b:?} (the narrowest \
                     symmetric widening that {nbins} bins can cut)"
                );
            }
        }
    }
    e.into()
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
        .density(config.density)
        .sums(config.sums)
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

/// The samples as loaded.
struct Loaded {
    input: Input,
    /// Where they came from and how they are held, for the summary.
    what: String,
    /// Their logical shape, which weights must have too.
    shape: Shape,
    /// How they were read, when the summary should say (a skipped header).
    note: Option<String>,
}

fn load(config: &HistConfig, ranks: &Option<RankSpec>) -> Result<Loaded> {
    match &config.source {
        Source::File {
            path,
            dtype,
            column,
        } => {
            if let Some((file, shape)) = stream_from_file(config, ranks, path, *dtype)? {
                return Ok(Loaded {
                    input: Input::File(file),
                    what: format!("{} (streamed from the file)", path.display()),
                    shape,
                    note: None,
                });
            }
            let read = read_file(path, *dtype, column.as_deref())?;
            let note = read.note(path);
            let how = read.values.how();
            Ok(Loaded {
                input: Input::Data(read.values),
                what: format!("{} ({how})", crate::input::stream::name(path)),
                shape: read.shape,
                note,
            })
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
            Ok(Loaded {
                input: Input::Data(data),
                what: format!("generated {} (seed {seed})", dist.name()),
                shape: Shape::flat(*count),
                note: None,
            })
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
) -> Result<Option<(FileInput, Shape)>> {
    let Some(direct) = direct_file(path, dtype) else {
        return Ok(None);
    };
    // Bins taken from the whole data (bincount's length, an estimator) need it in memory.
    if config.bins.sized_by_data(direct.ty) || config.bins.rule.is_some() {
        return Ok(None);
    }
    let bytes = usize::try_from(direct.bytes).unwrap_or(usize::MAX);
    // The bins do not change where the samples stream from; the real ones come once the type is
    // known. An error here (no GPU) is left to the mapped path, which reports it as before.
    // The bin count weighs in the automatic backend's estimate (`smemkit::backend::cost`).
    let nbins = config.bins.nbins.unwrap_or(1000);
    let probe = options(config, BinSpec::Integer { nbins }, ranks);
    if !smemkit::histogram::streams_to_one_gpu(bytes, &probe).unwrap_or(false) {
        return Ok(None);
    }
    let file = FileInput::open(path, direct.offset, direct.ty, direct.len)?;
    // No samples: the mapped path's zero counts (nothing to stream).
    Ok((!file.is_empty()).then_some((file, direct.shape)))
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
        }
        | BinSpec::UniformInSampleType { nbins, .. }
        | BinSpec::UniformInRangeType { nbins, .. }
        | BinSpec::UniformIntRange { nbins, .. } => {
            format!("{nbins} uniform bins over [{lo}, {hi}]")
        }
        BinSpec::Uniform { nbins, range: None } => {
            format!("{nbins} uniform bins over the data's [{lo}, {hi}]")
        }
        BinSpec::Edges(e) => format!(
            "{} bins between {} explicit edges [{lo}, {hi}]",
            e.len() - 1,
            e.len()
        ),
        BinSpec::Estimated { rule, range } => format!(
            "{} uniform bins over {}[{lo}, {hi}] (numpy's `{}` estimator)",
            h.nbins(),
            if range.is_some() { "" } else { "the data's " },
            rule.name()
        ),
        BinSpec::IntEdges(e) => format!(
            "{} bins between {} explicit integer edges [{lo}, {hi}]",
            e.len() - 1,
            e.len()
        ),
    }
}

fn title(facts: &InputFacts<'_>) -> String {
    format!("{}: {}", facts.what, facts.bins)
}
