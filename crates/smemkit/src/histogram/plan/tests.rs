//! Unit tests of the planner.

use super::*;

fn w(nbins: usize) -> Workload {
    Workload::new(nbins, SampleType::I32, false)
}

#[test]
fn bins_beyond_the_cuda_engine_are_refused_with_the_limit_for_every_strategy() {
    for nbins in [MAX_CUDA_BINS + 1, 1 << 40, 1 << 62, usize::MAX] {
        for weighted in [false, true] {
            let wl = Workload::new(nbins, SampleType::F64, weighted);
            for choice in [
                StrategyChoice::Auto,
                StrategyChoice::Global,
                StrategyChoice::Shared,
            ] {
                let e = plan(&wl, &DeviceLimits::H100, choice).unwrap_err();
                assert!(
                    matches!(
                        e,
                        crate::Error::BinsTooLarge {
                            limit: MAX_CUDA_BINS,
                            ..
                        }
                    ),
                    "{nbins} {choice:?}: {e}"
                );
            }
        }
    }
    for weighted in [false, true] {
        let wl = Workload::new(MAX_CUDA_BINS, SampleType::I32, weighted);
        let p = plan(&wl, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Global);
    }
}

#[test]
fn small_bins_go_to_shared_memory() {
    let p = plan(&w(256), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
    assert_eq!(p.strategy, Strategy::Shared);
    assert_eq!(p.shared_bytes, 1024);
    assert_eq!(p.grid % DeviceLimits::H100.sm_count, 0);
}

#[test]
fn largest_shared_histogram_fills_the_opt_in_limit() {
    let p = plan(&w(58_108), &DeviceLimits::H100, StrategyChoice::Shared).unwrap();
    assert_eq!(p.grid, 132, "one block per SM at the limit");
    assert_eq!(p.block, ONE_BLOCK_THREADS);
    let weighted = Workload::new(20_000, SampleType::F32, true);
    let p = plan(&weighted, &DeviceLimits::H100, StrategyChoice::Shared).unwrap();
    assert_eq!(
        (p.grid, p.block),
        (132, BLOCK_THREADS),
        "weighted sums keep 512"
    );
    assert!(plan(&w(58_109), &DeviceLimits::H100, StrategyChoice::Shared).is_err());
    // 8-bit counters: one bin per byte of the opt-in limit, less the hot bin's 128 bytes.
    let p = plan(&w(232_304), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
    assert_eq!((p.strategy, p.grid), (Strategy::Packed { bits: 8 }, 132));
    let p = plan(&w(232_305), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
    assert_eq!(p.strategy, Strategy::Sliced { slices: 2, bits: 8 });
    assert!(plan(&w(116_153), &DeviceLimits::H100, StrategyChoice::Packed(16)).is_err());
    assert!(plan(&w(116_152), &DeviceLimits::H100, StrategyChoice::Packed(16)).is_ok());
}

#[test]
fn the_widest_counters_that_fit_one_block() {
    let at = |nbins| {
        let p = plan(&w(nbins), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        (p.strategy, p.grid, p.block)
    };
    // u32 counters while they fit one block (58108 bins), then 16-bit counters (116152),
    // then 8-bit (232304); one block per SM takes 1024 threads.
    assert_eq!(at(16_384), (Strategy::Shared, 396, BLOCK_THREADS));
    assert_eq!(at(28_928), (Strategy::Shared, 264, BLOCK_THREADS));
    assert_eq!(at(28_929), (Strategy::Shared, 132, ONE_BLOCK_THREADS));
    assert_eq!(at(58_108), (Strategy::Shared, 132, ONE_BLOCK_THREADS));
    assert_eq!(
        at(58_109),
        (Strategy::Packed { bits: 16 }, 132, ONE_BLOCK_THREADS)
    );
    assert_eq!(
        at(116_152),
        (Strategy::Packed { bits: 16 }, 132, ONE_BLOCK_THREADS)
    );
    assert_eq!(
        at(116_153),
        (Strategy::Packed { bits: 8 }, 132, ONE_BLOCK_THREADS)
    );
    assert_eq!(
        at(232_304),
        (Strategy::Packed { bits: 8 }, 132, ONE_BLOCK_THREADS)
    );
    // The prefetching build where an SM holds at most 1024 threads: one block of 1024 or
    // two of 512, not three or four; never for weighted sums.
    let prefetch = |nbins| {
        let p = plan(&w(nbins), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
        prefetch_build(&p, &DeviceLimits::H100, false)
    };
    assert!(prefetch(131_072) && prefetch(98_304) && prefetch(32_768) && prefetch(28_928));
    assert!(!prefetch(16_384) && !prefetch(256));
    let forced = plan(&w(65_536), &DeviceLimits::H100, StrategyChoice::Packed(8)).unwrap();
    assert!(
        !prefetch_build(&forced, &DeviceLimits::H100, false),
        "three blocks of 512"
    );
    let weighted = Workload::new(20_000, SampleType::F32, true);
    let p = plan(&weighted, &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
    assert!(!prefetch_build(&p, &DeviceLimits::H100, true));
    // Weighted sums keep their f64 counters, and narrow counters refuse them.
    let ww = Workload::new(1000, SampleType::F32, true);
    assert_eq!(
        plan(&ww, &DeviceLimits::H100, StrategyChoice::Auto)
            .unwrap()
            .strategy,
        Strategy::Shared
    );
    assert!(plan(&ww, &DeviceLimits::H100, StrategyChoice::Packed(8)).is_err());
    assert!(plan(&w(10), &DeviceLimits::H100, StrategyChoice::Packed(2)).is_err());
    assert_eq!(
        "shared16".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Packed(16)
    );
    assert_eq!(Strategy::Packed { bits: 8 }.name(), "shared8");
}

#[test]
fn weighted_counters_take_twice_the_space() {
    let at = |nbins| {
        let ww = Workload::new(nbins, SampleType::F32, true);
        plan(&ww, &DeviceLimits::H100, StrategyChoice::Auto).unwrap()
    };
    // 8-byte sums: 16384 fit one block; 32768 take three slices, two blocks an SM; beyond what
    // AUTO_SLICED_SUMS_MAX_SLICES such slices hold, clusters.
    assert_eq!(at(16_384).strategy, Strategy::Shared);
    let p = at(32_768);
    assert_eq!(
        p.strategy,
        Strategy::Sliced {
            slices: 3,
            bits: 64
        }
    );
    assert!(blocks_per_sm(&DeviceLimits::H100, p.shared_bytes) >= 2);
    let probe = skew_probe_threshold(
        &p,
        &Workload::new(32_768, SampleType::F32, true),
        StrategyChoice::Auto,
    );
    assert_eq!(probe, None);
    assert_eq!(
        at(43_000).strategy,
        Strategy::Sliced {
            slices: 3,
            bits: 64
        }
    );
    assert_eq!(at(50_000).strategy, Strategy::Cluster { size: 2 });
}

#[test]
fn bins_beyond_a_block_follow_the_measured_crossovers() {
    let at = |nbins, t| {
        plan(
            &Workload::new(nbins, t, false),
            &DeviceLimits::H100,
            StrategyChoice::Auto,
        )
        .unwrap()
        .strategy
    };
    assert_eq!(at(131_072, SampleType::I32), Strategy::Packed { bits: 8 });
    assert_eq!(at(131_072, SampleType::F32), Strategy::Packed { bits: 8 });
    assert_eq!(
        at(262_144, SampleType::I32),
        Strategy::Sliced { slices: 2, bits: 8 }
    );
    assert_eq!(
        at(464_608, SampleType::I32),
        Strategy::Sliced { slices: 2, bits: 8 }
    );
    assert_eq!(
        at(464_609, SampleType::I32),
        Strategy::Sliced { slices: 2, bits: 4 }
    );
    assert_eq!(
        at(1 << 20, SampleType::I32),
        Strategy::Sliced { slices: 3, bits: 4 }
    );
    assert_eq!(
        at(4 * 464_608, SampleType::I32),
        Strategy::Sliced { slices: 4, bits: 4 }
    );
    assert_eq!(at(4 * 464_608 + 1, SampleType::I32), Strategy::Partition);
    // Float bins that need numpy's correction, beyond one block: spill (its kernel choosing the
    // counters' width), up to where the spilled counters would leave L2; partition beyond.
    let spill = Strategy::Spill {
        bits: SPILL_KERNEL_CHOOSES,
    };
    assert_eq!(at(1 << 20, SampleType::F32), spill);
    for t in [SampleType::F32, SampleType::F64] {
        assert_eq!(
            at(packed_max_bins_per_block(&DeviceLimits::H100, 8) + 1, t),
            spill
        );
        assert_eq!(at(500_000, t), spill);
        assert_eq!(at(1 << 20, t), spill);
        assert_eq!(at(AUTO_SPILL_MAX_BINS, t), spill);
        assert_eq!(at(AUTO_SPILL_MAX_BINS + 1, t), Strategy::Partition);
    }
    // Its window is the most 8-bit counters one block holds (whose words hold twice the bins in
    // 4-bit counters, the kernel's other choice).
    let p = plan(
        &Workload::new(700_000, SampleType::F32, false),
        &DeviceLimits::H100,
        StrategyChoice::Auto,
    )
    .unwrap();
    assert_eq!(
        p.bins_per_block,
        packed_max_bins_per_block(&DeviceLimits::H100, 8)
    );
    assert_eq!(p.block, ONE_BLOCK_THREADS);
    // Float bins that need no correction: spill up to 2^20 bins (measured ahead of the slices),
    // then planned as integers are.
    let chooses = Strategy::Spill {
        bits: SPILL_KERNEL_CHOOSES,
    };
    let exact = |nbins| {
        let w = Workload::new(nbins, SampleType::F32, false).with_exact_float_bins(true);
        plan(&w, &DeviceLimits::H100, StrategyChoice::Auto)
            .unwrap()
            .strategy
    };
    assert_eq!(exact(1 << 18), chooses);
    assert_eq!(exact(AUTO_SPILL_GRID_MAX_BINS), chooses);
    assert_eq!(
        exact(AUTO_SPILL_GRID_MAX_BINS + 1),
        Strategy::Sliced { slices: 3, bits: 4 }
    );
    assert_eq!(exact(1 << 21), Strategy::Partition);
    // Float64 samples on a grid: the same, but no partition passes before 2^22 bins.
    let exact64 = |nbins| {
        let w = Workload::new(nbins, SampleType::F64, false).with_exact_float_bins(true);
        plan(&w, &DeviceLimits::H100, StrategyChoice::Auto)
            .unwrap()
            .strategy
    };
    assert_eq!(exact64(1 << 20), chooses);
    assert_eq!(exact64(1 << 19), chooses);
    assert_eq!(
        exact64(AUTO_SPILL_GRID_MAX_BINS + 1),
        Strategy::Sliced { slices: 3, bits: 4 }
    );
    assert_eq!(exact64(1 << 21), Strategy::Global);
    assert_eq!(exact64(1 << 23), Strategy::Partition);
    // Integer samples in computed bins (a range, explicit edges) bin as floats do: spill locates
    // each once, where the sliced and partition passes would compute every bin once per pass.
    let computed = |nbins| {
        let w = Workload::new(nbins, SampleType::I32, false).with_computed_integer_bins(true);
        plan(&w, &DeviceLimits::H100, StrategyChoice::Auto)
            .unwrap()
            .strategy
    };
    assert_eq!(computed(262_144), spill);
    assert_eq!(computed(1 << 20), spill);
    assert_eq!(computed(1 << 21), spill);
    assert_eq!(computed(1 << 24), Strategy::Partition);
    assert_eq!(at(1 << 24, SampleType::F32), Strategy::Partition);
    assert_eq!(at(1 << 24, SampleType::I32), Strategy::Partition);
    let p = plan(&w(1 << 27), &DeviceLimits::H100, StrategyChoice::Auto).unwrap();
    assert_eq!(
        p.strategy,
        Strategy::Global,
        "beyond the partition's buckets"
    );
    assert_eq!(p.shared_bytes, 0);
}

#[test]
fn forced_strategies_are_checked() {
    assert!(plan(&w(100_000), &DeviceLimits::H100, StrategyChoice::Shared).is_err());
    assert!(plan(
        &w(1 << 20),
        &DeviceLimits::H100,
        StrategyChoice::Cluster(Some(2))
    )
    .is_err());
    let p = plan(
        &w(900_000),
        &DeviceLimits::H100,
        StrategyChoice::Cluster(None),
    )
    .unwrap();
    assert_eq!(p.strategy, Strategy::Cluster { size: 16 });
    assert_eq!(p.grid % 16, 0);
    assert!(plan(
        &w(1 << 20),
        &DeviceLimits::H100,
        StrategyChoice::Cluster(None)
    )
    .is_err());
    assert!(plan(
        &w(10),
        &DeviceLimits::H100,
        StrategyChoice::Cluster(Some(17))
    )
    .is_err());
    let old = DeviceLimits {
        compute_capability: (8, 0),
        max_cluster_portable: 0,
        max_cluster_nonportable: 0,
        ..DeviceLimits::H100
    };
    assert!(plan(&w(10), &old, StrategyChoice::Cluster(None)).is_err());
    assert_eq!(
        plan(&w(1 << 27), &old, StrategyChoice::Auto)
            .unwrap()
            .strategy,
        Strategy::Global
    );
}

#[test]
fn strategy_names_parse_back() {
    assert_eq!(
        "cluster"
            .parse::<StrategyChoice>()
            .and_then(|s| s.with_cluster_size(Some(4)))
            .unwrap(),
        StrategyChoice::Cluster(Some(4))
    );
    assert!("shared"
        .parse::<StrategyChoice>()
        .and_then(|s| s.with_cluster_size(Some(4)))
        .is_err());
    assert!("bogus".parse::<StrategyChoice>().is_err());
}

#[test]
fn spill_counts_only_and_holds_what_fits() {
    let l = DeviceLimits::H100;
    assert_eq!(
        "spill".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Spill(None)
    );
    assert_eq!(
        "spill8".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Spill(Some(8))
    );
    assert_eq!(
        "spill4".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Spill(Some(4))
    );
    assert!("spill16".parse::<StrategyChoice>().is_err());
    assert!(plan(&w(500_000), &l, StrategyChoice::Spill(Some(16))).is_err());
    // The kernels' 32-bit step stops at 2^30 bins.
    assert!(plan(&w((1 << 30) - 1), &l, StrategyChoice::Spill(Some(4))).is_ok());
    let e = plan(&w(1 << 30), &l, StrategyChoice::Spill(Some(4))).unwrap_err();
    assert!(e.to_string().contains("2^30"), "{e}");
    assert_eq!(Strategy::Spill { bits: 8 }.name(), "spill8");
    assert_eq!(
        Strategy::Spill {
            bits: SPILL_KERNEL_CHOOSES
        }
        .name(),
        "spill"
    );
    // Left to the kernel, the plan is the 8-bit window's.
    let chosen = plan(&w(700_000), &l, StrategyChoice::Spill(None)).unwrap();
    assert_eq!(chosen.bins_per_block, 232_304);
    assert_eq!(chosen.shared_bytes as usize, packed_bytes(232_304, 8));
    assert_eq!(
        plan(&w(400_000), &l, StrategyChoice::Spill(Some(4)))
            .unwrap()
            .bins_per_block,
        400_000
    );
    // Weighted sums are refused by name; auto never spills them.
    let weighted = Workload::new(500_000, SampleType::F32, true);
    let e = plan(&weighted, &l, StrategyChoice::Spill(None)).unwrap_err();
    assert!(e.to_string().contains("spill"), "{e}");
    assert!(!matches!(
        plan(&weighted, &l, StrategyChoice::Auto).unwrap().strategy,
        Strategy::Spill { .. }
    ));
    // Forced over bins that fit one block: the window is every bin.
    let small = plan(
        &Workload::new(1000, SampleType::I32, false),
        &l,
        StrategyChoice::Spill(None),
    )
    .unwrap();
    assert_eq!(small.bins_per_block, 1000);
    // Float bins on the grid spill too (up to AUTO_SPILL_GRID_MAX_BINS); integer samples in
    // their own bins keep their slices.
    let exact = Workload::new(700_000, SampleType::F32, false).with_exact_float_bins(true);
    assert!(matches!(
        plan(&exact, &l, StrategyChoice::Auto).unwrap().strategy,
        Strategy::Spill { .. }
    ));
    assert!(matches!(
        plan(
            &Workload::new(700_000, SampleType::I32, false),
            &l,
            StrategyChoice::Auto
        )
        .unwrap()
        .strategy,
        Strategy::Sliced { .. }
    ));
    // Integer samples in computed bins cost what float bins cost: spill.
    let computed = Workload::new(700_000, SampleType::I32, false).with_computed_integer_bins(true);
    assert_eq!(
        plan(&computed, &l, StrategyChoice::Auto).unwrap().strategy,
        Strategy::Spill {
            bits: SPILL_KERNEL_CHOOSES
        }
    );
}

#[test]
fn the_probe_weighs_spill_against_slices_of_cheap_bins() {
    let l = DeviceLimits::H100;
    let auto = |w: &Workload| plan(w, &l, StrategyChoice::Auto).unwrap();
    // Integer samples at 1M bins: three slices of 4-bit counters, a spill window of about a
    // fifth of the bins must hold about three quarters of the probes.
    let ints = Workload::new(1 << 20, SampleType::I32, false);
    let p = auto(&ints);
    let share = spill_share_for_sliced(&p, &ints).unwrap();
    assert!((0.7..0.8).contains(&share), "{share}");
    // Float64 on the grid pays more a slice: a lower share suffices.
    let f64s = Workload::new(1_500_000, SampleType::F64, false).with_exact_float_bins(true);
    let share64 = spill_share_for_sliced(&auto(&f64s), &f64s).unwrap();
    assert!(share64 < share, "{share64} against {share}");
    assert!(share64 >= SPILL_SHARE_LEAST);
    // Two slices rarely lose enough to a window: no spill probe; nor for costly bins (spilled
    // outright), weighted sums, or one block.
    let two = Workload::new(300_000, SampleType::I32, false);
    assert_eq!(spill_share_for_sliced(&auto(&two), &two), None);
    let costly = Workload::new(1 << 20, SampleType::F32, false);
    assert_eq!(spill_share_for_sliced(&auto(&costly), &costly), None);
    let weighted = Workload::new(1 << 20, SampleType::I32, true);
    assert_eq!(spill_share_for_sliced(&auto(&weighted), &weighted), None);
    let one = Workload::new(100_000, SampleType::I32, false);
    assert_eq!(spill_share_for_sliced(&auto(&one), &one), None);
}
