//! Property tests of the CPU engine: random data of several types, random bins, ranges, edges and
//! policies. The parallel engine must equal a one-line sequential reference (`Binning::locate` in a
//! plain loop); `clamp` counts every sample that is not NaN; under `ignore` the counts and tallies
//! add up to the sample count; `error` fails exactly when something falls outside; weighted sums are
//! the sums of the counted weights and the same on every run. Large cases force the multi-chunk and
//! the partitioned (`PARTITION_MIN_BINS` and more) paths.

use proptest::prelude::*;
use smemkit::internals::histogram::cpu::PARTITION_MIN_BINS;
use smemkit::{
    bins::{BinSpec, Binning, OutOfRange, Slot},
    histogram::{histogram, Counts, HistogramOptions, Tallies},
    sample::{Sample, Samples, Weights},
    Backend, Error,
};

fn policy() -> impl Strategy<Value = OutOfRange> {
    prop_oneof![
        Just(OutOfRange::Ignore),
        Just(OutOfRange::Clamp),
        Just(OutOfRange::Error)
    ]
}

/// The reference: `Binning::locate` in a plain loop.
fn reference<T: Sample>(
    data: &[T],
    weights: Option<&[f64]>,
    binning: &Binning,
    policy: OutOfRange,
) -> (Vec<f64>, Tallies) {
    let n = binning.nbins();
    let mut counts = vec![0.0; n];
    let mut t = Tallies::default();
    for (k, &x) in data.iter().enumerate() {
        let w = weights.map_or(1.0, |w| w[k]);
        let slot = binning.locate(x);
        let bin = match slot {
            Slot::Bin(i) => Some(i),
            Slot::Below => {
                t.below += 1;
                (policy == OutOfRange::Clamp).then_some(0)
            }
            Slot::Above => {
                t.above += 1;
                (policy == OutOfRange::Clamp).then_some(n - 1)
            }
            Slot::Nan => {
                t.nan += 1;
                None
            }
        };
        if let Some(i) = bin {
            counts[i] += w;
        }
    }
    (counts, t)
}

fn as_f64(c: &Counts) -> Vec<f64> {
    (0..c.len()).map(|i| c.get_f64(i)).collect()
}

/// Runs the engine and checks it against the reference and the policy laws.
fn check<'a, T: Sample>(
    data: &'a [T],
    weights: Option<&[f64]>,
    spec: BinSpec,
    policy: OutOfRange,
) -> Result<(), TestCaseError>
where
    Samples<'a>: From<&'a [T]>,
{
    let samples: Samples<'a> = data.into();
    let options = HistogramOptions::new(spec.clone())
        .backend(Backend::Cpu)
        .policy(policy);
    let binning = match Binning::resolve(&spec, samples) {
        Ok(b) => b,
        Err(e) => {
            // resolution errors are the engine's too
            let r = histogram(samples, weights.map(Weights::F64), &options);
            prop_assert!(r.is_err(), "resolve failed ({e}) but histogram succeeded");
            return Ok(());
        }
    };
    let (expected, tallies) = reference(data, weights, &binning, policy);
    let outside = tallies.below + tallies.above + tallies.nan;
    let result = histogram(samples, weights.map(Weights::F64), &options);
    if policy == OutOfRange::Error && outside > 0 {
        match result {
            Err(Error::OutOfRange { below, above, nan }) => {
                prop_assert_eq!(
                    (below, above, nan),
                    (tallies.below, tallies.above, tallies.nan)
                );
            }
            other => prop_assert!(false, "policy error with {outside} outside: got {other:?}"),
        }
        return Ok(());
    }
    let h = result.map_err(|e| TestCaseError::fail(format!("unexpected error {e}")))?;
    prop_assert_eq!(h.tallies, tallies);
    prop_assert_eq!(h.edges, binning.edges());
    let got = as_f64(&h.counts);
    match weights {
        None => {
            prop_assert_eq!(&got, &expected);
            let total: f64 = got.iter().sum();
            match policy {
                OutOfRange::Clamp => prop_assert_eq!(total as u64, data.len() as u64 - tallies.nan),
                _ => prop_assert_eq!(total as u64 + outside, data.len() as u64),
            }
        }
        Some(_) => {
            for (g, e) in got.iter().zip(&expected) {
                prop_assert!(
                    (g - e).abs() <= 1e-9 * (1.0 + e.abs()),
                    "weighted sum {g} vs {e}"
                );
            }
            // deterministic: the same bits on a second run
            let again = histogram(samples, weights.map(Weights::F64), &options).unwrap();
            prop_assert!(
                as_f64(&again.counts)
                    .iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "weighted sums changed between runs"
            );
        }
    }
    Ok(())
}

fn float_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -100.0..100.0f64,
        1 => prop::num::f64::ANY,
        1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(0.0), Just(-0.0), Just(1.0)],
    ]
}

fn uniform_spec() -> impl Strategy<Value = BinSpec> {
    (
        1usize..300,
        prop::option::of((-120.0..120.0f64, 0.0..150.0f64)),
    )
        .prop_map(|(nbins, r)| BinSpec::Uniform {
            nbins,
            range: r.map(|(lo, w)| (lo, lo + w)),
        })
}

fn edges_spec() -> impl Strategy<Value = BinSpec> {
    prop::collection::vec(-150.0..150.0f64, 2..40).prop_map(|mut e| {
        e.sort_by(f64::total_cmp);
        e.dedup();
        if e.len() < 2 {
            e.push(e[0] + 1.0);
        }
        BinSpec::Edges(e)
    })
}

fn float_spec() -> impl Strategy<Value = BinSpec> {
    prop_oneof![3 => uniform_spec(), 1 => edges_spec()]
}

fn int_spec() -> impl Strategy<Value = BinSpec> {
    prop_oneof![2 => (1usize..400).prop_map(|nbins| BinSpec::Integer { nbins }), 2 => uniform_spec(), 1 => edges_spec()]
}

fn weights_for(len: usize) -> impl Strategy<Value = Option<Vec<f64>>> {
    prop::option::weighted(0.3, prop::collection::vec(-10.0..10.0f64, len))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn f32_matches_reference(data in prop::collection::vec(float_value(), 0..600), spec in float_spec(), p in policy(), seed in any::<u64>()) {
        let data: Vec<f32> = data.into_iter().map(|x| x as f32).collect();
        let w = (seed % 3 == 0).then(|| (0..data.len()).map(|i| ((i as u64 ^ seed) % 17) as f64 - 8.0).collect::<Vec<_>>());
        check(&data, w.as_deref(), spec, p)?;
    }

    #[test]
    fn f64_matches_reference((data, w) in prop::collection::vec(float_value(), 0..600).prop_flat_map(|d| { let n = d.len(); (Just(d), weights_for(n)) }), spec in float_spec(), p in policy()) {
        check(&data, w.as_deref(), spec, p)?;
    }

    #[test]
    fn i32_matches_reference((data, w) in prop::collection::vec(prop_oneof![4 => -50i32..450, 1 => any::<i32>()], 0..600).prop_flat_map(|d| { let n = d.len(); (Just(d), weights_for(n)) }), spec in int_spec(), p in policy()) {
        check(&data, w.as_deref(), spec, p)?;
    }

    #[test]
    fn u8_matches_reference(data in prop::collection::vec(any::<u8>(), 0..600), spec in int_spec(), p in policy()) {
        check(&data, None, spec, p)?;
    }

    #[test]
    fn i16_matches_reference(data in prop::collection::vec(any::<i16>(), 0..600), spec in int_spec(), p in policy()) {
        check(&data, None, spec, p)?;
    }

    #[test]
    fn u64_i64_match_reference(data in prop::collection::vec(prop_oneof![3 => 0u64..500, 1 => any::<u64>()], 0..400), spec in int_spec(), p in policy()) {
        check(&data, None, spec.clone(), p)?;
        let signed: Vec<i64> = data.iter().map(|&x| x as i64).collect();
        check(&signed, None, spec, p)?;
    }
}

/// xorshift data without proptest's shrinking (large inputs).
fn noise(n: usize, seed: u64) -> impl Iterator<Item = u64> {
    let mut s = seed | 1;
    (0..n).map(move |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Several chunks per worker, every policy, integer and uniform bins, hot and uniform data.
    #[test]
    fn large_inputs_many_chunks(seed in any::<u64>(), p in policy(), nbins in prop_oneof![Just(1usize), Just(255), Just(4096), Just(40_000)], hot in any::<bool>()) {
        let n = 600_000 + (seed % 1000) as usize;
        let data: Vec<i32> = noise(n, seed)
            .map(|r| if hot && r % 8 != 0 { 7 } else { (r >> 16) as i32 % (nbins as i32 + 20) - 10 })
            .collect();
        check(&data, None, BinSpec::Integer { nbins }, p)?;
        let floats: Vec<f32> = data.iter().map(|&x| x as f32 * 0.75).collect();
        check(&floats, None, BinSpec::Uniform { nbins, range: Some((0.0, nbins as f64)) }, p)?;
        let w: Vec<f64> = noise(n, seed ^ 5).map(|r| (r % 1000) as f64 / 7.0).collect();
        check(&data, Some(&w), BinSpec::Integer { nbins }, p)?;
    }

    /// Bin counts from `PARTITION_MIN_BINS` on take the partitioned path.
    #[test]
    fn partitioned_path(seed in any::<u64>(), p in policy(), nbins in prop_oneof![Just(PARTITION_MIN_BINS), Just(PARTITION_MIN_BINS + 12_345), Just(PARTITION_MIN_BINS * 3 / 2 + 7)]) {
        let n = 400_000;
        let data: Vec<u32> = noise(n, seed).map(|r| (r >> 8) as u32 % (nbins as u32 + 1000)).collect();
        check(&data, None, BinSpec::Integer { nbins }, p)?;
        let floats: Vec<f64> = data.iter().map(|&x| x as f64 - 0.5).collect();
        check(&floats, None, BinSpec::Uniform { nbins, range: Some((0.0, nbins as f64)) }, p)?;
    }
}

/// Skewed data on the partitioned paths: one bucket holds most samples and is split among
/// workers. One hot value (which the int32 path takes out before its scatter), and five values
/// of one bucket in turn (no hot value: the bucket itself is split), as int32 and as int64 (the
/// generic path).
#[test]
fn partitioned_path_hot_bucket() {
    let nbins = PARTITION_MIN_BINS + 5;
    // 7/8 of the samples in one bucket: above SPLIT_BUCKET (2^22 entries)
    let n = 6_000_000;
    for spread in [1, 5] {
        let data: Vec<i32> = noise(n, 3)
            .map(|r| {
                if r % 8 != 0 {
                    7 + 1000 * (r % spread) as i32
                } else {
                    (r >> 20) as i32 % (nbins as i32 + 50) - 20
                }
            })
            .collect();
        let wide: Vec<i64> = data.iter().map(|&x| x as i64).collect();
        for p in [OutOfRange::Ignore, OutOfRange::Clamp] {
            check(&data, None, BinSpec::Integer { nbins }, p).unwrap();
            check(&wide, None, BinSpec::Integer { nbins }, p).unwrap();
        }
    }
}

#[test]
fn weighted_sums_are_deterministic_across_thread_counts() {
    let n = 1_000_003;
    let data: Vec<f32> = noise(n, 42).map(|r| (r % 10_000) as f32 / 100.0).collect();
    let w: Vec<f64> = noise(n, 7)
        .map(|r| (r % 1_000_003) as f64 * 1e-3 + 1e-7)
        .collect();
    let options = HistogramOptions::new(BinSpec::Uniform {
        nbins: 37,
        range: Some((0.0, 100.0)),
    })
    .backend(Backend::Cpu);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            histogram(Samples::F32(&data), Some(Weights::F64(&w)), &options)
                .unwrap()
                .counts
        })
    };
    let one = run(1);
    let bits = |c: &Counts| as_f64(c).iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for threads in [1, 2, 3, 4, 7] {
        for _ in 0..3 {
            assert_eq!(
                bits(&run(threads)),
                bits(&one),
                "weighted sums with {threads} threads differ"
            );
        }
    }
}

/// More bins than the CPU engine's u32 slots hold: a clear error, not a panic or a huge allocation.
#[test]
fn too_many_bins_for_the_cpu_engine_is_an_error() {
    let nbins = u32::MAX as usize;
    let options = HistogramOptions::new(BinSpec::Integer { nbins }).backend(Backend::Cpu);
    match histogram(Samples::I32(&[1, 2, 3]), None, &options) {
        Err(Error::BinsTooLarge {
            nbins: n, limit, ..
        }) => {
            assert_eq!(n, nbins);
            assert!(limit < nbins);
        }
        other => panic!("expected BinsTooLarge, got {other:?}"),
    }
}
