//! GPU tests of the kernel benchmark's path (`smemkit bench --backend cuda --op hist`): its runs
//! go through the device engine, the launch path every entry point shares. For every strategy
//! the benchmark times, one run on device-drawn data (uniform and hot) into a poisoned output
//! must equal the CPU engine on a copy of the same data, with warp aggregation as planned and
//! flipped, and the timed runs must each leave the same histogram behind.

use smemkit::internals::histogram::cuda::bench as dev;
use smemkit::internals::histogram::cuda::device_engine::DeviceEngine;
use smemkit::internals::histogram::cuda::prepared::{Counting, WeightKind};
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange},
    histogram::StrategyChoice,
    sample::SampleType,
    Error,
};

const N: usize = 1 << 22;

fn engine(
    gpu: &std::sync::Arc<smemkit::internals::gpu::Gpu>,
    binning: &Binning,
    choice: StrategyChoice,
) -> Option<DeviceEngine> {
    let what = Counting {
        sample_type: SampleType::I32,
        weights: WeightKind::None,
        binning,
        policy: OutOfRange::Ignore,
    };
    match DeviceEngine::new(gpu, what, choice, false, N, None) {
        Ok(e) => Some(e),
        Err(Error::StrategyUnsupported { .. }) => None,
        Err(e) => panic!("{choice:?}: {e}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn benchmark_runs_match_the_cpu_engine_for_every_strategy() {
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let choices = [
        StrategyChoice::Auto,
        StrategyChoice::Shared,
        StrategyChoice::Packed(8),
        StrategyChoice::Cluster(Some(2)),
        StrategyChoice::Global,
        StrategyChoice::Partition,
    ];
    for nbins in [256usize, 100_000] {
        for hot in [0.0, dev::BENCH_HOT_SHARE] {
            let data = dev::generate(&gpu, SampleType::I32, N, nbins, hot, 7).unwrap();
            let host = data.to_host(&gpu).unwrap();
            let binning = Binning::resolve(&BinSpec::Integer { nbins }, host.as_samples()).unwrap();
            let want = smemkit::sample::with_samples!(host.as_samples(), s =>
                smemkit::internals::histogram::cpu::histogram(s, None, &binning, OutOfRange::Ignore));
            let mut ran = 0;
            for choice in choices {
                let Some(mut e) = engine(&gpu, &binning, choice) else {
                    continue;
                };
                for flipped in [false, true] {
                    if flipped {
                        e.flip_aggregation().unwrap();
                    }
                    let label = format!("{nbins} bins, hot {hot}, {choice:?}, flipped {flipped}");
                    let got = dev::run_once(&e, &data).expect(&label);
                    assert_eq!(got.counts, want.counts, "{label}");
                    assert_eq!(got.tallies, want.tallies, "{label}");
                    let times = dev::time(&e, &data, 1, 3).expect(&label);
                    assert_eq!(times.len(), 3, "{label}");
                    assert!(times.iter().all(|&t| t > 0.0), "{label}: {times:?}");
                    // One more run after the timed ones: they must leave the engine's scratch
                    // (the fold's counters, the skew verdict) as a fresh run needs it.
                    let again = dev::run_once(&e, &data).expect(&label);
                    assert_eq!(again.counts, want.counts, "{label}: after the timed runs");
                    assert_eq!(again.tallies, want.tallies, "{label}: after the timed runs");
                }
                ran += 1;
            }
            assert!(ran >= 4, "{nbins} bins: only {ran} strategies could run");
        }
    }
}
