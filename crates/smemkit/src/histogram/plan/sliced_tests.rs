//! Tests of the sliced strategies' plans.

use super::*;

const H100: DeviceLimits = DeviceLimits::H100;

fn sliced(nbins: usize, bits: Option<u32>, slices: Option<u32>) -> Result<Plan, crate::Error> {
    plan(
        &Workload::new(nbins, SampleType::I32, false),
        &H100,
        StrategyChoice::Sliced { bits, slices },
    )
}

#[test]
fn sliced_names_parse_back() {
    for (text, bits, slices) in [
        ("sliced", None, None),
        ("sliced8", Some(8), None),
        ("sliced4x3", Some(4), Some(3)),
        ("slicedx5", None, Some(5)),
    ] {
        assert_eq!(
            text.parse::<StrategyChoice>().unwrap(),
            StrategyChoice::Sliced { bits, slices },
            "{text}"
        );
    }
    for bad in ["slicedy", "sliced16", "sliced8x", "sliced4x-1"] {
        assert!(bad.parse::<StrategyChoice>().is_err(), "{bad}");
    }
    assert!("sliced"
        .parse::<StrategyChoice>()
        .and_then(|s| s.with_cluster_size(Some(4)))
        .is_err());
    let s = Strategy::Sliced { slices: 5, bits: 8 };
    assert_eq!(s.name(), "sliced8x5");
    assert_eq!(
        s.name().parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Sliced {
            bits: Some(8),
            slices: Some(5)
        }
    );
    assert_eq!(
        "shared4".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Packed(4)
    );
}

#[test]
fn the_fewest_slices_hold_the_bins() {
    for bits in [8u32, 4] {
        let max = packed_max_bins_per_block(&H100, bits);
        assert!(packed_bytes(max, bits) <= counter_capacity(&H100));
        assert!(packed_bytes(max + (32 / bits) as usize, bits) > counter_capacity(&H100));
        for (nbins, slices8, slices4) in [
            (100, 1, 1),
            (232_304, 1, 1),
            (232_305, 2, 1),
            (464_608, 2, 1),
            (464_609, 3, 2),
            (1 << 20, 5, 3),
            (1 << 22, 19, 10),
        ] {
            let slices = if bits == 8 { slices8 } else { slices4 };
            let p = sliced(nbins, Some(bits), None).unwrap();
            assert_eq!(
                p.strategy,
                Strategy::Sliced { slices, bits },
                "{nbins} bins"
            );
            assert_eq!(p.bins_per_block, nbins.div_ceil(slices as usize));
            assert_eq!(
                packed_bytes(p.bins_per_block, bits),
                p.shared_bytes as usize
            );
            assert!(p.shared_bytes as usize <= counter_capacity(&H100));
            assert_eq!(
                p.grid % slices,
                0,
                "{nbins} bins: every slice as many blocks"
            );
            assert!(p.grid >= slices);
            assert_eq!(p.block, ONE_BLOCK_THREADS);
            assert!(prefetch_build(&p, &H100, false));
        }
    }
    // 1M bins in 8-bit counters: five slices of 209716 bins, 26 blocks each on 132 SMs.
    assert_eq!(sliced(1 << 20, None, None).unwrap().grid, 130);
}

#[test]
fn sliced_refuses_what_it_cannot_do() {
    assert!(
        sliced(1 << 20, None, Some(4)).is_err(),
        "too few slices for 1M bins"
    );
    assert!(sliced(1 << 20, Some(4), Some(3)).is_ok());
    assert!(sliced(1 << 20, Some(16), None).is_err(), "no 16-bit build");
    assert!(sliced(2, None, Some(3)).is_err(), "more slices than bins");
    assert!(
        sliced(1 << 20, None, Some(133)).is_err(),
        "more slices than SMs"
    );
    // Weighted sums are sliced as 64-bit sums, counts in narrow counters only.
    let forced = |weighted, bits| {
        plan(
            &Workload::new(100_000, SampleType::I32, weighted),
            &H100,
            StrategyChoice::Sliced { bits, slices: None },
        )
    };
    let p = forced(true, None).unwrap();
    assert_eq!(
        p.strategy,
        Strategy::Sliced {
            slices: 4,
            bits: 64
        }
    );
    assert_eq!(p.shared_bytes as usize, p.bins_per_block * 8);
    assert!(p.shared_bytes as usize <= counter_capacity(&H100));
    assert_eq!(p.block, BLOCK_THREADS);
    assert!(!prefetch_build(&p, &H100, true));
    assert!(forced(true, Some(8)).is_err());
    assert!(forced(false, Some(64)).is_err());
    // Forced extra slices are allowed where there are bins and SMs for them.
    let p = sliced(3000, None, Some(5)).unwrap();
    assert_eq!(p.bins_per_block, 600);
    assert_eq!(p.grid % 5, 0);
    // The slice count the kernel derives (bins over bins per slice) is the plan's.
    let p = sliced(10, None, Some(6)).unwrap();
    assert_eq!(
        (p.strategy, p.bins_per_block),
        (Strategy::Sliced { slices: 5, bits: 8 }, 2)
    );
    assert_eq!(p.grid % 5, 0);
}

#[test]
fn a_small_shard_keeps_whole_slices() {
    let choice = StrategyChoice::Sliced {
        bits: None,
        slices: None,
    };
    let w = Workload::new(1 << 20, SampleType::I32, false).with_samples(Some(10_000_000));
    assert_eq!(plan(&w, &H100, choice).unwrap().grid % 5, 0);
    let tiny = Workload::new(1 << 20, SampleType::I32, false).with_samples(Some(100));
    let p = plan(&tiny, &H100, choice).unwrap();
    assert_eq!(p.grid, 5, "at least one block per slice");
}

proptest::proptest! {
    /// Every bin count of the sliced range gets a sliced plan that holds its bins: the widths
    /// and slice counts `auto` allows, counters within one block's shared memory, a grid of
    /// whole slices, and the skew probe in front.
    #[test]
    fn auto_sliced_plans_hold_their_bins(nbins in 232_305usize..=4 * 464_608) {
        let w = Workload::new(nbins, SampleType::I32, false);
        let p = plan(&w, &H100, StrategyChoice::Auto).unwrap();
        let Strategy::Sliced { slices, bits } = p.strategy else {
            panic!("{nbins} bins: {}", p.strategy);
        };
        let most = if bits == 8 { AUTO_SLICED8_MAX_SLICES } else { AUTO_SLICED4_MAX_SLICES };
        proptest::prop_assert!(slices as usize <= most);
        proptest::prop_assert!(p.bins_per_block * slices as usize >= nbins);
        proptest::prop_assert!(p.bins_per_block * (slices as usize - 1) < nbins);
        proptest::prop_assert!(p.shared_bytes as usize <= counter_capacity(&H100));
        proptest::prop_assert_eq!(p.grid % slices, 0);
        proptest::prop_assert!(skew_probe_threshold(&p, &w, StrategyChoice::Auto).is_some());
    }
}

#[test]
fn four_bit_counters_hold_twice_the_bins_of_eight() {
    let w = Workload::new(400_000, SampleType::I32, false);
    let p = plan(&w, &H100, StrategyChoice::Packed(4)).unwrap();
    assert_eq!(p.strategy, Strategy::Packed { bits: 4 });
    assert_eq!(p.shared_bytes as usize, packed_bytes(400_000, 4));
    assert_eq!((p.grid, p.block), (132, ONE_BLOCK_THREADS));
    assert!(plan(&w, &H100, StrategyChoice::Packed(8)).is_err());
    assert!(plan(&w.with_samples(None), &H100, StrategyChoice::Packed(2)).is_err());
    let small = plan(
        &Workload::new(3000, SampleType::I32, false),
        &H100,
        StrategyChoice::Packed(4),
    )
    .unwrap();
    assert_eq!(
        small.block, ONE_BLOCK_THREADS,
        "4-bit counters have only the 1024-thread build"
    );
}

#[test]
fn a_uniform_probe_never_finds_a_crowded_slice() {
    // 2048 probes of uniform data put 1/slices in each slice with a standard deviation of
    // sqrt(p (1 - p) / 2048); the switch must sit well above three of them, and below everything.
    for slices in 2..=16u32 {
        let share = super::busiest_slice_share_for_global(slices);
        let p = 1.0 / slices as f64;
        let sd = (p * (1.0 - p) / super::SKEW_PROBE_SAMPLES as f64).sqrt();
        assert!(share > p + 5.0 * sd, "{slices} slices: {share}");
        assert!(share <= 1.0, "{slices} slices: {share}");
    }
}

#[test]
fn crowded_slices_of_four_bit_counters_give_way_to_eight_bit_ones() {
    let w = |nbins| Workload::new(nbins, SampleType::I32, false).with_samples(Some(1 << 28));
    // 1M bins: three slices of 4-bit counters, five of 8-bit ones where one slice is crowded.
    let p = plan(&w(1 << 20), &H100, StrategyChoice::Auto).unwrap();
    assert_eq!(p.strategy, Strategy::Sliced { slices: 3, bits: 4 });
    let alt = crowded_alternative(&p, &w(1 << 20), &H100).expect("an alternative");
    assert_eq!(alt.strategy, Strategy::Sliced { slices: 5, bits: 8 });
    assert_eq!(alt.grid % 5, 0);
    assert!(alt.reason.contains("crowded"), "{}", alt.reason);
    assert_eq!(crowded_slice_share(3, true), CROWDED_SLICE_SHARE);
    assert_eq!(
        crowded_slice_share(3, false),
        busiest_slice_share_for_global(3)
    );
    // 1.5M bins: four slices of 4-bit counters, seven of 8-bit ones: too many, global stays.
    let p = plan(&w(1_500_000), &H100, StrategyChoice::Auto).unwrap();
    assert_eq!(p.strategy, Strategy::Sliced { slices: 4, bits: 4 });
    assert!(crowded_alternative(&p, &w(1_500_000), &H100).is_none());
    // Slices of 8-bit counters, and every other plan, have none.
    let p = plan(&w(300_000), &H100, StrategyChoice::Auto).unwrap();
    assert_eq!(p.strategy, Strategy::Sliced { slices: 2, bits: 8 });
    assert!(crowded_alternative(&p, &w(300_000), &H100).is_none());
    let p = plan(&w(1 << 24), &H100, StrategyChoice::Auto).unwrap();
    assert!(crowded_alternative(&p, &w(1 << 24), &H100).is_none());
}
