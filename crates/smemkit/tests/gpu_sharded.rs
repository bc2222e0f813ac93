//! GPU tests of bins sharded over ranks on one GPU: a world of one rank (`SMEMKIT_RANK=0`,
//! `SMEMKIT_WORLD_SIZE=1` as a [`RankSpec`]) asked to shard (`--shard-bins always`) runs the whole
//! sharded path (the window kernel over the rank's samples, the tallies' all-reduce, the
//! reduce-scatter over its one rank, the read-back of its slice), which must give the CPU engine's
//! histogram at 2^24 bins. They need a build with `--features nccl` and say so and pass without
//! it. Several ranks need several GPUs: the two-process tests are in
//! crates/smemkit-cli/tests/gpu_ranks.rs.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::histogram::cuda::bin_shards::ShardBins;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, BinPart, HistogramOptions, RankSpec},
    sample::{Samples, Weights},
    Backend,
};

/// One rank, one NCCL communicator: tests of this file run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ready() -> Option<std::sync::MutexGuard<'static, ()>> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !cfg!(feature = "nccl") {
        eprintln!("SKIPPED: built without the nccl feature (cargo test --features nccl)");
        return None;
    }
    Some(guard)
}

fn rng() -> Xoshiro256PlusPlus {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Rank 0 of a world of one, asked to shard, meeting through a file in `dir`.
fn one_rank(dir: &std::path::Path) -> RankSpec {
    let mut spec = RankSpec::new(0, 1, dir.join("nccl.id"), None).unwrap();
    spec.shard_bins = ShardBins::Always;
    spec
}

/// The sharded run of one rank and the CPU engine's histogram agree: counts, edges, tallies,
/// and the part says it holds every bin.
fn check(samples: Samples<'_>, weights: Option<Weights<'_>>, bins: BinSpec, policy: OutOfRange) {
    let dir = tempfile::tempdir().unwrap();
    let mut options = HistogramOptions::new(bins.clone());
    options.policy = policy;
    options.backend = Backend::Cpu;
    let want = histogram(samples, weights, &options).unwrap();
    options.backend = Backend::Cuda;
    options.ranks = Some(one_rank(dir.path()));
    let got = histogram(samples, weights, &options).unwrap();
    let label = format!("{} {policy:?}", samples.sample_type());
    assert!(
        got.engine.detail.contains("bins sharded") && got.engine.detail.contains("1 pass"),
        "{label}: {}",
        got.engine.detail
    );
    let nbins = want.counts.len();
    assert_eq!(
        got.part,
        Some(BinPart {
            bins: 0..nbins,
            nbins,
            rank: 0,
            world: 1
        }),
        "{label}"
    );
    assert_eq!(got.tallies, want.tallies, "{label}");
    assert_eq!(got.edges, want.edges, "{label}");
    assert!(got.counts == want.counts, "{label}: the counts differ");
    assert!(
        want.tallies.below + want.tallies.above > 0,
        "{label}: data outside the bins too"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_sharded_at_2_to_the_24_bins_matches_the_cpu_engine() {
    let Some(_guard) = ready() else { return };
    let mut r = rng();
    let nbins = 1usize << 24;
    // More samples than the window counter copies at a time (2^24): several batches.
    let n = (1 << 25) + 12_345;
    let x: Vec<i32> = (0..n)
        .map(|_| r.gen_range(-1000..nbins as i32 + 1000))
        .collect();
    for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
        check(Samples::I32(&x), None, BinSpec::Integer { nbins }, policy);
    }
    // Weighted sums: multiples of 1/4, exact in any order.
    let w: Vec<f64> = (0..n).map(|_| r.gen_range(0..40) as f64 * 0.25).collect();
    check(
        Samples::I32(&x),
        Some(Weights::F64(&w)),
        BinSpec::Integer { nbins },
        OutOfRange::Ignore,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_sharded_float_bins_match_the_cpu_engine() {
    let Some(_guard) = ready() else { return };
    let mut r = rng();
    let n = 3_000_017;
    let f64s: Vec<f64> = (0..n)
        .map(|i| {
            if i % 101 == 0 {
                f64::NAN
            } else {
                r.gen_range(-0.5..10.5)
            }
        })
        .collect();
    let f32s: Vec<f32> = f64s.iter().map(|&v| v as f32).collect();
    let uniform = BinSpec::Uniform {
        nbins: 1 << 22,
        range: Some((0.0, 10.0)),
    };
    let edges = BinSpec::Edges((0..=100_000).map(|i| i as f64 * 1e-4).collect());
    for bins in [uniform, edges] {
        check(Samples::F32(&f32s), None, bins.clone(), OutOfRange::Ignore);
        check(Samples::F64(&f64s), None, bins, OutOfRange::Ignore);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn density_with_sharded_bins_is_refused_by_name() {
    let Some(_guard) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut options = HistogramOptions::new(BinSpec::Integer { nbins: 100 }).density(true);
    options.backend = Backend::Cuda;
    options.ranks = Some(one_rank(dir.path()));
    let e = histogram(Samples::I32(&[1, 2, 3]), None, &options)
        .unwrap_err()
        .to_string();
    assert!(e.contains("density") && e.contains("sharded"), "{e}");
}
