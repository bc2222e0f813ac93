//! Tests of plans sized for a shard of the input.

use super::*;

fn at(nbins: usize, t: SampleType, weighted: bool, n: Option<usize>) -> Plan {
    plan(
        &Workload::new(nbins, t, weighted).with_samples(n),
        &DeviceLimits::H100,
        StrategyChoice::Auto,
    )
    .unwrap()
}

#[test]
fn full_size_workloads_plan_as_before() {
    for (nbins, t, weighted) in [
        (256, SampleType::I32, false),
        (58_108, SampleType::I32, false),
        (131_072, SampleType::I32, false),
        (131_072, SampleType::F32, false),
        (1 << 20, SampleType::F32, false),
        (1 << 24, SampleType::F32, false),
        (1 << 27, SampleType::I32, false),
        (32_768, SampleType::F32, true),
        (4096, SampleType::U8, false),
    ] {
        assert_eq!(
            at(nbins, t, weighted, Some(1 << 28)),
            at(nbins, t, weighted, None),
            "{nbins} bins of {t}"
        );
    }
}

#[test]
fn grids_are_cut_to_the_shard() {
    assert_eq!(block_tile(SampleType::I32), 2048);
    assert_eq!(block_tile(SampleType::F64), 1024);
    assert_eq!(block_tile(SampleType::U8), 8192);
    let p = at(256, SampleType::I32, false, Some(5000));
    assert_eq!((p.strategy, p.grid), (Strategy::Shared, 3));
    let p = at(256, SampleType::I32, false, Some(0));
    assert_eq!(p.grid, 1, "at least one block");
    // Large enough to fill the persistent grid: unchanged.
    let p = at(256, SampleType::I32, false, Some(1 << 22));
    assert_eq!(p.grid, 132 * 4);
    assert_eq!(grid_for_samples(396, 4, Some(5000), SampleType::F32), 4);
    assert_eq!(grid_for_samples(396, 4, Some(0), SampleType::F32), 4);
    assert_eq!(grid_for_samples(396, 4, None, SampleType::F32), 396);
    assert_eq!(
        grid_for_samples(396, 4, Some(1 << 30), SampleType::F32),
        396
    );
    // Forced strategies are cut too.
    let p = plan(
        &Workload::new(100, SampleType::I32, false).with_samples(Some(10)),
        &DeviceLimits::H100,
        StrategyChoice::Global,
    )
    .unwrap();
    assert_eq!(p.grid, 1);
}

#[test]
fn tiny_shards_count_in_global_memory() {
    // 58108 bins of u32 counters: 132 blocks, so 132 x 58108 = 7.7M samples is the
    // threshold of one sample per counter.
    let p = at(58_108, SampleType::I32, false, Some(4096));
    assert_eq!((p.strategy, p.grid), (Strategy::Global, 2));
    assert!(p.reason.contains("4096 samples"), "{}", p.reason);
    assert_eq!(
        at(58_108, SampleType::I32, false, Some(1 << 20)).strategy,
        Strategy::Global
    );
    assert_eq!(
        at(58_108, SampleType::I32, false, Some(132 * 58_108)).strategy,
        Strategy::Shared
    );
    assert_eq!(
        at(58_108, SampleType::I32, false, Some(132 * 58_108 - 1)).strategy,
        Strategy::Global
    );
    // Few bins: even a shard of one tile keeps shared memory.
    assert_eq!(
        at(256, SampleType::I32, false, Some(2048)).strategy,
        Strategy::Shared
    );
    assert_eq!(
        at(256, SampleType::I32, false, Some(100)).strategy,
        Strategy::Global
    );
    // Partition: fewer samples than bins.
    assert_eq!(
        at(1 << 21, SampleType::I32, false, Some(2_000_000)).strategy,
        Strategy::Global
    );
    assert_eq!(
        at(1 << 21, SampleType::I32, false, Some(1 << 21)).strategy,
        Strategy::Partition
    );
    // The sliced plans: fewer samples per block than bins in its slice.
    assert_eq!(
        at(262_144, SampleType::I32, false, Some(132 * 131_071)).strategy,
        Strategy::Global
    );
    assert_eq!(
        at(262_144, SampleType::I32, false, Some(132 * 131_072)).strategy,
        Strategy::Sliced { slices: 2, bits: 8 }
    );
    assert_eq!(
        at(1 << 20, SampleType::I32, false, Some(1 << 20)).strategy,
        Strategy::Global
    );
    assert_eq!(
        at(1 << 20, SampleType::I32, false, Some(1 << 28)).strategy,
        Strategy::Sliced { slices: 3, bits: 4 }
    );
    // Weighted sums in three slices: 264 blocks own 10923 sums each.
    assert_eq!(
        at(32_768, SampleType::F32, true, Some(1 << 20)).strategy,
        Strategy::Global
    );
    assert_eq!(
        at(32_768, SampleType::F32, true, Some(264 * 10_923)).strategy,
        Strategy::Sliced {
            slices: 3,
            bits: 64
        }
    );
}

#[test]
fn the_skew_threshold_follows_the_measured_crossovers() {
    // Crossovers measured at 0.30 (131072 bins), 0.26 (1M) and 0.78 (16M): the standard hot
    // workload (7/8 of the samples in one bin) goes to global everywhere, uniform data never.
    for nbins in [131_072, 1 << 20, 1 << 24] {
        let t = hot_share_for_global(nbins);
        assert!(t < 7.0 / 8.0 && t > 0.25, "{nbins}: {t}");
    }
    assert!(hot_share_for_global(1 << 20) < 0.4);
    assert!(hot_share_for_global(1 << 24) > 0.78);
}

#[test]
fn skew_probes_guard_the_plans_that_hot_data_slows() {
    let at = |nbins| {
        let w = Workload::new(nbins, SampleType::I32, false);
        let p = plan(&w, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        skew_probe_threshold(&p, &w, StrategyChoice::Auto)
    };
    assert_eq!(at(32_768), None);
    assert_eq!(at(98_304), None, "two blocks of 8-bit counters per SM");
    assert_eq!(at(131_072), None, "one block of 8-bit counters per SM");
    assert_eq!(at(232_304), None);
    assert_eq!(at(262_144), Some(hot_share_for_global_sliced(2)));
    assert_eq!(at(1 << 20), Some(hot_share_for_global_sliced(3)));
    // The standard hot workload goes to global from every sliced plan, uniform data never.
    for slices in 1..=4 {
        let t = hot_share_for_global_sliced(slices);
        assert!(t > 0.5 && t < 7.0 / 8.0, "{slices}: {t}");
    }
    assert_eq!(at(1 << 21), Some(hot_share_for_global(1 << 21)));
    // Only `auto` probes, and only inputs long enough to pay for it.
    let w = Workload::new(131_072, SampleType::I32, false);
    let p = plan(&w, &DeviceLimits::H100, StrategyChoice::Packed(8)).unwrap();
    assert_eq!(
        skew_probe_threshold(&p, &w, StrategyChoice::Packed(8)),
        None
    );
    let short = Workload::new(1 << 21, SampleType::I32, false)
        .with_samples(Some(SKEW_PROBE_MIN_SAMPLES - 1));
    let p = plan(&short, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
    assert_eq!(p.strategy, Strategy::Partition);
    assert_eq!(skew_probe_threshold(&p, &short, StrategyChoice::Auto), None);
}

#[test]
fn the_commonest_share_is_exact_above_a_third() {
    assert_eq!(commonest_share(&[]), 0.0);
    assert_eq!(commonest_share(&[5, 1, 5, 2]), 0.5);
    // Samples in no bin are not a hot bin, however many.
    assert_eq!(commonest_share(&[u32::MAX, u32::MAX, u32::MAX, 7]), 0.25);
    let hot: Vec<u32> = (0..4096).map(|i| if i % 8 == 0 { i } else { 7 }).collect();
    assert_eq!(commonest_share(&hot), 3584.0 / 4096.0);
    // A hot bin placed last, after many distinct ones, is still found.
    let late: Vec<u32> = (0..600).chain(std::iter::repeat(9999).take(400)).collect();
    assert_eq!(commonest_share(&late), 0.4);
    // Below a third the share may be under-reported, never over.
    let spread: Vec<u32> = (0..900).map(|i| i % 3).collect();
    assert!(commonest_share(&spread) <= 1.0 / 3.0 + 1e-12);
}

proptest::proptest! {
    #[test]
    fn the_commonest_share_matches_counting_above_a_third(
        bins in proptest::collection::vec(
            proptest::prop_oneof![0u32..4, proptest::strategy::Just(u32::MAX)],
            0..300,
        )
    ) {
        let mut counts = std::collections::HashMap::new();
        for &b in bins.iter().filter(|&&b| b != u32::MAX) {
            *counts.entry(b).or_insert(0usize) += 1;
        }
        let max = counts.values().copied().max().unwrap_or(0) as f64 / bins.len().max(1) as f64;
        let got = commonest_share(&bins);
        proptest::prop_assert!(got <= max + 1e-12);
        if max > 1.0 / 3.0 {
            proptest::prop_assert_eq!(got, max);
        }
    }
}
