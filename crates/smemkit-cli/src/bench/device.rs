//! `smemkit bench --backend cuda --op hist-device`: one call of the device-resident API
//! (`DeviceHistogram::run` on data already on the GPU, the caller's stream) timed with CUDA events
//! around the whole call, memsets included, as shared/BENCH.md's `hist_device` rows; the same call
//! replayed from a captured CUDA graph (`smemkit/auto+graph`, with the graph's node count: the
//! launches and memsets of one call); and, for int32 up to 2^26 samples, weighted sums with and
//! without the deterministic mode. Every row's result is checked against the CPU engine first.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use smemkit::cudarc::driver::{CudaStream, CudaView, DeviceRepr};
use smemkit::internals::histogram::cuda::bench::{self as dev, median};
use smemkit::internals::histogram::cuda::exact_sums;
use smemkit::{
    bins::{Binning, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec, DeviceOutput, DeviceWeights, WeightKind},
    histogram::Counts,
    sample::{Sample, SampleType, Samples, Weights},
};

use crate::bench::{rows, workload_spec, MIN_RUNS};
use crate::cli::BenchArgs;

/// The sizes of issue 21's table (log2 of the samples).
const LOG2_SIZES: [u32; 6] = [10, 14, 18, 22, 26, 28];
/// The bin counts of issue 21's table.
const BINS: [usize; 3] = [256, 4096, 1 << 20];
/// Warm-up calls before the timed ones.
const WARMUP: usize = 3;
/// Largest input of the weighted rows (their weights are drawn on the host and copied).
const WEIGHTED_MAX: usize = 1 << 26;

pub fn run(args: &BenchArgs, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    let gpu = smemkit::internals::gpu::gpu().context("the device benchmark needs a GPU")?;
    let stream = gpu.ctx.new_stream().context("creating a stream")?;
    let stamp = rows::Stamp::new(commit, &gpu.name);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for dtype in &args.dtype {
        let ty = dtype.parse::<SampleType>().context("--dtype")?;
        for log2 in LOG2_SIZES {
            let n = 1usize << log2;
            for nbins in BINS {
                for dist in &args.dist {
                    let hot = match dist.as_str() {
                        "uniform" => 0.0,
                        "hot" => dev::BENCH_HOT_SHARE,
                        d => bail!("--dist {d}: the device benchmark draws uniform or hot data"),
                    };
                    let w = Workload {
                        ty,
                        n,
                        nbins,
                        dist,
                        stamp: &stamp,
                    };
                    let data = dev::generate(&gpu, ty, n, nbins, hot, args.seed)?;
                    let measured = match ty {
                        SampleType::I32 => workload::<i32>(&w, &data, &stream, args.runs)?,
                        SampleType::F32 => workload::<f32>(&w, &data, &stream, args.runs)?,
                        t => bail!("--dtype {t}: the device benchmark draws i32 or f32"),
                    };
                    for row in measured {
                        rows::emit(&mut out, &row)?;
                    }
                }
            }
        }
    }
    Ok(())
}

struct Workload<'a> {
    ty: SampleType,
    n: usize,
    nbins: usize,
    dist: &'a str,
    stamp: &'a rows::Stamp,
}

impl Workload<'_> {
    fn row(&self, name: &str, ms: f64, correct: bool, extra: Value) -> Value {
        let row = self.stamp.row(json!({
            "op": "hist_device",
            "impl": name,
            "dtype": match self.ty { SampleType::I32 => "int32", _ => "float32" },
            "dist": self.dist,
            "nbins": self.nbins,
            "n": self.n,
            "ms": ms,
            "gbps": rows::gbps(self.n * self.ty.size(), ms),
            "correct": correct,
        }));
        rows::with(row, extra)
    }
}

/// Median milliseconds of `runs` calls of `call` (after the warm-up), CUDA events around each.
fn time(
    stream: &Arc<CudaStream>,
    runs: usize,
    mut call: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let ctx = stream.context();
    let flags = Some(smemkit::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    let mut times = Vec::with_capacity(runs);
    for i in 0..WARMUP + runs {
        start.record(stream)?;
        call()?;
        end.record(stream)?;
        end.synchronize()?;
        if i >= WARMUP {
            times.push(start.elapsed_ms(&end)?);
        }
    }
    Ok(median(&times) as f64)
}

fn workload<T: Sample + DeviceRepr>(
    w: &Workload<'_>,
    data: &dev::DeviceSamples,
    stream: &Arc<CudaStream>,
    runs: usize,
) -> Result<Vec<Value>> {
    let gpu = smemkit::internals::gpu::gpu()?;
    let bins = workload_spec(w.ty, w.nbins);
    let host = data.to_host(&gpu)?;
    let binning = Binning::resolve(&bins, host.as_samples())?;
    let reference = smemkit::sample::with_samples!(host.as_samples(), s =>
        smemkit::internals::histogram::cpu::histogram(s, None, &binning, OutOfRange::Ignore));
    let input: CudaView<'_, T> = data.view::<T>()?;
    let spec = DeviceHistogramSpec::new(w.ty, bins.clone()).max_samples(w.n);
    let h = DeviceHistogram::new(&gpu, &spec)?;
    let mut out = h.output()?;
    let mut rows = Vec::new();
    // Checked first, into a poisoned output.
    poison(&out, stream)?;
    h.run(&input, None, &mut out, stream)?;
    let (counts, tallies) = out.read(stream)?;
    let correct = tallies == reference.tallies && counts == reference.counts;
    let ms = time(stream, runs, || Ok(h.run(&input, None, &mut out, stream)?))?;
    let plan = h.detail();
    rows.push(w.row("smemkit/auto", ms, correct, json!({ "plan": plan })));
    // The same call captured once and replayed.
    stream.begin_capture(
        smemkit::cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    )?;
    let captured = h.run(&input, None, &mut out, stream);
    let graph = stream.end_capture(smemkit::cudarc::driver::sys::CUgraphInstantiate_flags(0))?;
    captured?;
    let graph = graph.context("capturing a run gave no graph")?;
    let mut nodes = 0usize;
    // SAFETY: counting the nodes of a live graph (a null node array asks for the count only).
    let counted = unsafe {
        smemkit::cudarc::driver::sys::cuGraphGetNodes(
            graph.cu_graph(),
            std::ptr::null_mut(),
            &mut nodes,
        )
    };
    poison(&out, stream)?;
    graph.launch()?;
    let (counts, tallies) = out.read(stream)?;
    let correct = tallies == reference.tallies && counts == reference.counts;
    let ms = time(stream, runs, || Ok(graph.launch()?))?;
    rows.push(w.row(
        "smemkit/auto+graph",
        ms,
        correct,
        json!({ "graph_nodes": (counted == smemkit::cudarc::driver::sys::CUresult::CUDA_SUCCESS).then_some(nodes) }),
    ));
    drop(graph);
    if w.ty == SampleType::I32 && w.n <= WEIGHTED_MAX {
        rows.extend(weighted::<T>(
            w,
            &host.as_samples(),
            &input,
            &bins,
            &binning,
            stream,
            runs,
        )?);
    }
    Ok(rows)
}

/// Weighted sums (f32 weights in [0, 1)) as planned and in the deterministic mode.
fn weighted<T: Sample + DeviceRepr>(
    w: &Workload<'_>,
    samples: &Samples<'_>,
    input: &CudaView<'_, T>,
    bins: &smemkit::bins::BinSpec,
    binning: &Binning,
    stream: &Arc<CudaStream>,
    runs: usize,
) -> Result<Vec<Value>> {
    let gpu = smemkit::internals::gpu::gpu()?;
    let weights: Vec<f32> = (0..w.n)
        .map(|i| ((i as u64).wrapping_mul(2654435761) % 1000) as f32 / 1000.0)
        .collect();
    let dw = stream.clone_htod(&weights)?;
    let dwv = dw.as_view();
    let plain = smemkit::sample::with_samples!(*samples, s =>
        smemkit::internals::histogram::cpu::histogram(s, Some(Weights::F32(&weights)), binning, OutOfRange::Ignore));
    let mut rows = Vec::new();
    for deterministic in [false, true] {
        let spec = DeviceHistogramSpec::new(w.ty, bins.clone())
            .max_samples(w.n)
            .weights(WeightKind::F32)
            .deterministic(deterministic);
        let h = DeviceHistogram::new(&gpu, &spec)?;
        let mut out = h.output()?;
        poison(&out, stream)?;
        h.run(input, Some(DeviceWeights::F32(&dwv)), &mut out, stream)?;
        let (sums, tallies) = out.read(stream)?;
        let close = match (&sums, &plain.counts) {
            (Counts::Weighted(a), Counts::Weighted(b)) => a
                .iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-9 * y.abs().max(1.0)),
            _ => false,
        };
        let exact = if deterministic {
            let (want, _) = smemkit::sample::with_samples!(*samples, s =>
                exact_sums::reference(s, Weights::F32(&weights), binning, OutOfRange::Ignore))?;
            matches!(&sums, Counts::Weighted(a) if a.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()))
        } else {
            true
        };
        let correct = close && exact && tallies == plain.tallies;
        let ms = time(stream, runs, || {
            Ok(h.run(input, Some(DeviceWeights::F32(&dwv)), &mut out, stream)?)
        })?;
        let name = if deterministic {
            "smemkit/auto-weighted-deterministic"
        } else {
            "smemkit/auto-weighted"
        };
        rows.push(w.row(
            name,
            ms,
            correct,
            json!({ "plan": h.detail(), "weights": "f32" }),
        ));
    }
    Ok(rows)
}

fn poison(out: &DeviceOutput, stream: &Arc<CudaStream>) -> Result<()> {
    use smemkit::cudarc::driver::DevicePtr;
    let ptr = out.words().device_ptr(stream).0;
    // SAFETY: the output's own allocation, its full length.
    unsafe {
        smemkit::cudarc::driver::result::memset_d8_async(
            ptr,
            0xA5,
            out.words().len() * 8,
            stream.cu_stream(),
        )
    }?;
    Ok(())
}
