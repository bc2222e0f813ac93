//! `smemkit bench --backend cuda --op digitize`: `numpy.digitize` on the GPU (`DeviceDigitize` on
//! data already there, CUDA events around each call) of float32 samples drawn on the device,
//! uniform over [0, 1000), against sorted random bins over [-10, 1010) (`--bins` gives their
//! numbers; issue 23's row is 1000 bins on 2^28 samples, whose peer is cupy.digitize), with a
//! device copy of the bytes one call moves (4 read and 8 written per sample) as the reference.
//! Every row's indices are checked against the CPU engine first.

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use serde_json::json;
use smemkit::internals::digitize::cuda::DeviceDigitize;
use smemkit::internals::histogram::cuda::bench::{self as dev, median};
use smemkit::sample::SampleType;

use crate::bench::{rows, MIN_RUNS};
use crate::cli::BenchArgs;

/// Warm-up calls before the timed ones.
const WARMUP: usize = 3;
/// The samples' range: [0, SPAN).
const SPAN: usize = 1000;

pub fn run(args: &BenchArgs, commit: &str) -> Result<()> {
    if args.runs < MIN_RUNS {
        bail!(
            "--runs {} is too few: the schema asks for the median of at least {MIN_RUNS}",
            args.runs
        );
    }
    if args.log2_n > 30 {
        bail!(
            "--log2-n {}: the digitize benchmark takes at most 2^30 samples",
            args.log2_n
        );
    }
    let gpu = smemkit::internals::gpu::gpu().context("the digitize benchmark needs a GPU")?;
    let stream = gpu.stream.clone();
    let n = 1usize << args.log2_n;
    let data = dev::generate(&gpu, SampleType::F32, n, SPAN, 0.0, args.seed)?;
    let host = data.to_host(&gpu)?;
    let x = host.as_samples();
    let input = data.view::<f32>()?;
    let mut out = stream
        .alloc_zeros::<i64>(n)
        .context("allocating the indices")?;
    let copy_ms = median(&dev::time_device_copy(&gpu, n * 12, WARMUP, args.runs)?) as f64;
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    let stamp = rows::Stamp::new(commit, &gpu.name);
    let row = stamp.row(json!({
        "impl": "device-copy",
        "op": "digitize",
        "n": n,
        "bytes": n * 12,
        "ms": copy_ms,
        "gbps": rows::gbps(n * 12, copy_ms),
        "correct": true,
    }));
    rows::emit(&mut w, &row)?;
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(args.seed);
    for &nbins in &args.bins {
        let mut bins: Vec<f64> = (0..nbins)
            .map(|_| r.gen_range(-10.0..(SPAN + 10) as f64))
            .collect();
        bins.sort_by(f64::total_cmp);
        for right in [false, true] {
            let d = DeviceDigitize::new(&gpu, SampleType::F32, &bins, right)?;
            let want = smemkit::digitize::digitize(x, &bins, right)?;
            d.run(&input, &mut out.as_view_mut(), &stream)?;
            let correct = stream.clone_dtoh(&out).context("reading the indices")? == want;
            drop(want);
            let flags = Some(smemkit::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            let (start, end) = (gpu.ctx.new_event(flags)?, gpu.ctx.new_event(flags)?);
            let mut times = Vec::with_capacity(args.runs);
            for i in 0..WARMUP + args.runs {
                start.record(&stream)?;
                d.run(&input, &mut out.as_view_mut(), &stream)?;
                end.record(&stream)?;
                end.synchronize()?;
                if i >= WARMUP {
                    times.push(start.elapsed_ms(&end)?);
                }
            }
            let ms = median(&times) as f64;
            let row = stamp.row(json!({
                "impl": "smemkit/digitize",
                "op": "digitize",
                "dtype": "float32",
                "nbins": nbins,
                "right": right,
                "n": n,
                "ms": ms,
                "gsamples": n as f64 / (ms / 1e3) / 1e9,
                "gbps": rows::gbps(n * 12, ms),
                "of_copy": copy_ms / ms,
                "correct": correct,
                "bins_in_shared": d.bins_in_shared_memory(),
            }));
            rows::emit(&mut w, &row)?;
        }
    }
    Ok(())
}
