//! What the GPU test files share: a fresh seeded generator, the comparison of a forced strategy
//! with the CPU engine, the strategies that hold a bin count, float32 neighbours of a value, and
//! poisoning a device output before a run.
#![allow(dead_code)]

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions, StrategyChoice},
    sample::{Samples, Weights},
    Backend,
};

pub fn rng() -> Xoshiro256PlusPlus {
    // Fresh data every run: a moving failure is a race, and the seed is printed to replay it.
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Runs the GPU with `choice` and the CPU engine and demands equal results.
pub fn check(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    bins: BinSpec,
    policy: OutOfRange,
    choice: StrategyChoice,
    what: &str,
) {
    let cpu = histogram(
        samples,
        weights,
        &HistogramOptions::new(bins.clone())
            .policy(policy)
            .backend(Backend::Cpu),
    )
    .unwrap_or_else(|e| panic!("{what}: cpu: {e}"));
    let gpu = histogram(
        samples,
        weights,
        &HistogramOptions::new(bins)
            .policy(policy)
            .backend(Backend::Cuda)
            .strategy(choice),
    )
    .unwrap_or_else(|e| panic!("{what}: gpu {choice:?}: {e}"));
    assert_eq!(
        gpu.tallies, cpu.tallies,
        "{what}: tallies, {}",
        gpu.engine.detail
    );
    assert_eq!(gpu.edges, cpu.edges, "{what}: edges");
    match (&gpu.counts, &cpu.counts) {
        (Counts::Unweighted(g), Counts::Unweighted(c)) => {
            if g != c {
                let first = g.iter().zip(c).position(|(a, b)| a != b).unwrap();
                panic!(
                    "{what}: {} bins differ, first at {first}: gpu {} cpu {} ({})",
                    g.iter().zip(c).filter(|(a, b)| a != b).count(),
                    g[first],
                    c[first],
                    gpu.engine.detail
                );
            }
        }
        (Counts::Weighted(g), Counts::Weighted(c)) => {
            for (i, (a, b)) in g.iter().zip(c).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{what}: bin {i}: gpu {a} cpu {b}"
                );
            }
        }
        _ => panic!("{what}: result kinds differ"),
    }
}

pub fn strategies_for(nbins: usize, weighted: bool) -> Vec<StrategyChoice> {
    let bytes = nbins * if weighted { 8 } else { 4 };
    let smem = 232_448 - smemkit::internals::histogram::plan::STATIC_SHARED_RESERVE;
    let mut v = vec![StrategyChoice::Auto, StrategyChoice::Global];
    if bytes <= smem {
        v.push(StrategyChoice::Shared);
    }
    for bits in [16u32, 8, 4] {
        if !weighted && smemkit::internals::histogram::plan::packed_bytes(nbins, bits) <= smem {
            v.push(StrategyChoice::Packed(bits));
        }
    }
    for k in [2u32, 4, 8, 16] {
        if bytes.div_ceil(k as usize) <= smem {
            v.push(StrategyChoice::Cluster(Some(k)));
        }
    }
    if !weighted
        && nbins
            <= smemkit::internals::histogram::plan::PARTITION_MAX_BUCKETS
                << smemkit::internals::histogram::plan::PARTITION_BITS
    {
        v.push(StrategyChoice::Partition);
    }
    // The smallest cluster that holds the bins (up to 2^21 bins as 8-bit counters over 16 blocks).
    if !weighted && nbins <= 1 << 21 {
        v.push(StrategyChoice::Exchange {
            bits: None,
            size: None,
        });
    }
    // Weighted sums in slices: the fewest that hold them, and three wherever there are bins for
    // them, so that slice edges fall inside small bin counts too.
    if weighted {
        v.push(StrategyChoice::Sliced {
            bits: Some(64),
            slices: None,
        });
        if nbins >= 3 && nbins <= 3 * (smem / 8) {
            v.push(StrategyChoice::Sliced {
                bits: Some(64),
                slices: Some(3),
            });
        }
    }
    // The busiest window of 8-bit counters, the rest in global memory (all the bins where they fit).
    if !weighted {
        v.push(StrategyChoice::Spill(Some(8)));
        v.push(StrategyChoice::Spill(Some(4)));
        v.push(StrategyChoice::Spill(None));
    }
    // The fewest slices that hold the bins in either width (8-bit: two beyond 232304 bins, 73 at
    // 2^24), and 4-bit counters in three slices wherever there are bins for them, so that slice
    // edges fall inside small bin counts too.
    if !weighted {
        for bits in [8, 4] {
            v.push(StrategyChoice::Sliced {
                bits: Some(bits),
                slices: None,
            });
        }
        let limits = smemkit::internals::histogram::plan::DeviceLimits::H100;
        if nbins >= 3
            && nbins
                <= 3 * smemkit::internals::histogram::plan::packed_max_bins_per_block(&limits, 4)
        {
            v.push(StrategyChoice::Sliced {
                bits: Some(4),
                slices: Some(3),
            });
        }
    }
    v
}

pub fn f64_neighbours(x: f64) -> [f64; 2] {
    if x == 0.0 {
        return [f64::from_bits(1), -f64::from_bits(1)];
    }
    [
        f64::from_bits(x.to_bits() + 1),
        f64::from_bits(x.to_bits() - 1),
    ]
}

pub fn f32_neighbours(x: f32) -> [f32; 2] {
    if x == 0.0 {
        return [f32::from_bits(1), -f32::from_bits(1)];
    }
    [
        f32::from_bits(x.to_bits() + 1),
        f32::from_bits(x.to_bits() - 1),
    ]
}

/// Fills a device histogram's output with 0xA5 bytes, a pattern no histogram of the tests holds,
/// so that a bin or tally a run forgot to write (or to clear) shows.
pub fn poison(
    out: &smemkit::device::DeviceOutput,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
) {
    use cudarc::driver::DevicePtr;
    let ptr = out.words().device_ptr(stream).0;
    // SAFETY: the output's own allocation, its full length.
    unsafe {
        cudarc::driver::result::memset_d8_async(
            ptr,
            0xA5,
            out.words().len() * 8,
            stream.cu_stream(),
        )
    }
    .expect("poisoning the output");
}
