//! GPU tests of what one device histogram's successive runs leave behind: a run that overwrites
//! its output (the global strategy's fold then writes every bin and tally itself, with no memset
//! first) after runs that accumulated, chunks accumulated into one output against the CPU engine
//! on the whole input, for every strategy the planner may pick at these sizes, and the
//! device-resident benchmark's float32 row (2^22 uniform samples, 1M bins) run twice into a
//! poisoned output. Host slices go through the same engine: `gpu_histogram.rs` tests them.

mod gpu_common;

use gpu_common::{poison, rng};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use rand::Rng;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    device::{DeviceHistogram, DeviceHistogramSpec},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice, Tallies},
    sample::{SampleType, Samples},
    Backend,
};

fn gpu() -> Arc<smemkit::internals::gpu::Gpu> {
    smemkit::internals::gpu::gpu().expect("a CUDA GPU")
}

fn cpu(samples: Samples<'_>, bins: &BinSpec) -> (Counts, Tallies) {
    let h = histogram(
        samples,
        None,
        &HistogramOptions::new(bins.clone())
            .policy(OutOfRange::Ignore)
            .backend(Backend::Cpu),
    )
    .expect("cpu histogram");
    (h.counts, h.tallies)
}

fn assert_same(got: &(Counts, Tallies), want: &(Counts, Tallies), what: &str) {
    assert_eq!(got.1, want.1, "{what}: tallies");
    match (&got.0, &want.0) {
        (Counts::Unweighted(g), Counts::Unweighted(c)) => {
            if let Some(first) = g.iter().zip(c).position(|(a, b)| a != b) {
                panic!(
                    "{what}: {} bins differ, first at {first}: gpu {} cpu {}",
                    g.iter().zip(c).filter(|(a, b)| a != b).count(),
                    g[first],
                    c[first]
                );
            }
        }
        _ => panic!("{what}: expected counts from both engines"),
    }
}

fn upload<T: cudarc::driver::DeviceRepr>(stream: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    stream.clone_htod(v).expect("copying to the device")
}

/// Integers over a little more than the bins (a tenth out of range), a fifth in one hot bin.
fn ints(n: usize, nbins: usize, r: &mut impl Rng) -> Vec<i32> {
    (0..n)
        .map(|_| {
            if r.gen::<f64>() < 0.2 {
                3 % nbins as i32
            } else {
                r.gen_range(-(nbins as i32) / 20..nbins as i32 + nbins as i32 / 20)
            }
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn chunks_accumulate_and_a_later_run_overwrites() {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    // Three chunks, the middle one past the skew probe's 2^22 samples; each starts 16-byte
    // aligned, as the kernels' loads need.
    let lens = [100_004usize, (1 << 22) + 8, 77];
    let n: usize = lens.iter().sum();
    for nbins in [4096usize, 1 << 20] {
        let bins = BinSpec::Integer { nbins };
        let data = ints(n, nbins, &mut r);
        let whole = cpu(Samples::I32(&data), &bins);
        let first = cpu(Samples::I32(&data[..lens[0]]), &bins);
        let dev = upload(&stream, &data);
        let mut choices = vec![
            StrategyChoice::Auto,
            StrategyChoice::Global,
            StrategyChoice::Partition,
        ];
        if nbins <= 4096 {
            choices.push(StrategyChoice::Shared);
        }
        for choice in choices {
            let spec = DeviceHistogramSpec::new(SampleType::I32, bins.clone())
                .strategy(choice)
                .max_samples(lens[1]);
            let h = DeviceHistogram::new(&gpu, &spec).unwrap_or_else(|e| panic!("{choice:?}: {e}"));
            let what = format!("{nbins} bins, {choice:?} ({})", h.detail());
            let mut out = h.output().unwrap();
            poison(&out, &stream);
            let mut start = 0;
            for (i, &len) in lens.iter().enumerate() {
                let chunk = dev.slice(start..start + len);
                if i == 0 {
                    h.run(&chunk, None, &mut out, &stream).unwrap();
                } else {
                    h.run_accumulate(&chunk, None, &mut out, &stream).unwrap();
                }
                start += len;
            }
            assert_same(
                &out.read(&stream).unwrap(),
                &whole,
                &format!("{what}: chunks"),
            );
            // A run after runs that added: it overwrites, and the scratch the earlier runs used
            // (the global strategy's u32 counters) holds nothing of theirs.
            poison(&out, &stream);
            h.run(&dev.slice(0..lens[0]), None, &mut out, &stream)
                .unwrap();
            assert_same(
                &out.read(&stream).unwrap(),
                &first,
                &format!("{what}: rerun"),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float32_uniform_million_bins_twice_into_poison() {
    let gpu = gpu();
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let n = 1 << 22;
    let nbins = 1 << 20;
    // A few outside the range at each end, so the tallies count too.
    let data: Vec<f32> = (0..n).map(|_| r.gen_range(-0.01f32..1.01)).collect();
    let bins = BinSpec::Uniform {
        nbins,
        range: Some((0.0, 1.0)),
    };
    let want = cpu(Samples::F32(&data), &bins);
    let dev = upload(&stream, &data);
    let spec = DeviceHistogramSpec::new(SampleType::F32, bins).max_samples(n);
    let h = DeviceHistogram::new(&gpu, &spec).unwrap();
    let mut out = h.output().unwrap();
    for run in 0..2 {
        poison(&out, &stream);
        h.run(&dev.as_view(), None, &mut out, &stream).unwrap();
        let what = format!("run {run} ({})", h.detail());
        assert_same(&out.read(&stream).unwrap(), &want, &what);
    }
}
