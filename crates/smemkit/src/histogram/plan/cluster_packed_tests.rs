//! Tests of the cluster_packed strategy's plans (H100 limits: 232432 bytes of counters a block).

use super::*;

fn forced_as(
    nbins: usize,
    t: SampleType,
    weighted: bool,
    bits: Option<u32>,
    size: Option<u32>,
) -> Result<Plan, crate::Error> {
    plan(
        &Workload::new(nbins, t, weighted),
        &DeviceLimits::H100,
        StrategyChoice::ClusterPacked { bits, size },
    )
}

fn forced(nbins: usize, bits: Option<u32>, size: Option<u32>) -> Result<Plan, crate::Error> {
    forced_as(nbins, SampleType::F32, false, bits, size)
}

fn unsupported_reason(r: Result<Plan, crate::Error>) -> String {
    match r {
        Err(crate::Error::StrategyUnsupported { reason, .. }) => reason,
        other => panic!("expected StrategyUnsupported, got {other:?}"),
    }
}

#[test]
fn cluster_packed_names_parse_back() {
    for (text, k, bits, size) in [
        ("clusterpacked", None, None, None),
        ("cluster-packed", Some(16), None, Some(16)),
        ("clusterpacked8", None, Some(8), None),
        ("clusterpacked16", Some(4), Some(16), Some(4)),
        ("clusterpacked8x8", None, Some(8), Some(8)),
        ("cluster-packed16x16", None, Some(16), Some(16)),
    ] {
        assert_eq!(
            text.parse::<StrategyChoice>()
                .and_then(|s| s.with_cluster_size(k))
                .unwrap(),
            StrategyChoice::ClusterPacked { bits, size },
            "{text}"
        );
    }
    for bad in [
        "clusterpacked4",
        "clusterpacked8x",
        "clusterpacked8y8",
        "clusterpackedx",
        "clusterpacked32x8",
    ] {
        assert!(bad.parse::<StrategyChoice>().is_err(), "{bad}");
    }
    // A name that gives the size takes no --cluster-size besides.
    assert!("clusterpacked8x8"
        .parse::<StrategyChoice>()
        .and_then(|s| s.with_cluster_size(Some(8)))
        .is_err());
    // Plain `cluster` is still the u32 cluster strategy.
    assert_eq!(
        "cluster".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Cluster(None)
    );
    for (bits, size) in [(8, 8), (16, 16)] {
        let p = forced(1 << 20, Some(bits), Some(size)).unwrap();
        assert_eq!(p.strategy.name(), format!("clusterpacked{bits}x{size}"));
        assert_eq!(
            p.strategy.name().parse::<StrategyChoice>().unwrap(),
            StrategyChoice::ClusterPacked {
                bits: Some(bits),
                size: Some(size)
            }
        );
    }
}

#[test]
fn a_million_bins_take_eight_blocks_of_8_bit_or_sixteen_of_16_bit_counters() {
    // 1M bins as 8-bit counters over 8 blocks: 128 KiB of words and 128 bytes of hot lanes each; as
    // 16-bit counters 8 blocks would need 256 KiB each, so the smallest cluster is 16.
    let p = forced(1 << 20, None, None).unwrap();
    assert_eq!(p.strategy, Strategy::ClusterPacked { size: 8, bits: 8 });
    assert_eq!(p.strategy.cluster_size(), 8);
    assert_eq!(
        (p.block, p.bins_per_block, p.shared_bytes),
        (CLUSTER_PACKED_THREADS, 131_072, 131_200)
    );
    assert_eq!(p.grid % 8, 0);
    assert!(p.grid >= 8 && p.grid <= DeviceLimits::H100.sm_count);
    let p = forced(1 << 20, Some(16), None).unwrap();
    assert_eq!(p.strategy, Strategy::ClusterPacked { size: 16, bits: 16 });
    assert_eq!((p.bins_per_block, p.shared_bytes), (65_536, 131_200));
    assert_eq!(p.grid % 16, 0);
    let reason = unsupported_reason(forced(1 << 20, Some(16), Some(8)));
    assert!(
        reason.contains("262272 bytes of 16-bit counters"),
        "{reason}"
    );
}

#[test]
fn small_bin_counts_take_the_smallest_cluster_and_whole_words_per_block() {
    // 1000 bins fit a cluster of 2 as 16-bit counters; each block owns a multiple of 32 bins.
    let p = forced(1000, None, None).unwrap();
    assert_eq!(p.strategy, Strategy::ClusterPacked { size: 2, bits: 16 });
    assert_eq!(p.bins_per_block, 512);
    let p = forced(1000, Some(8), Some(8)).unwrap();
    assert_eq!(p.bins_per_block, 128);
    assert_eq!(p.shared_bytes as usize, packed_bytes(128, 8));
    // More blocks than needed: the last ones own no bins, which the kernel allows.
    let p = forced(33, Some(8), Some(16)).unwrap();
    assert_eq!(p.bins_per_block, 32);
    for nbins in [1usize, 31, 32, 33, 1000, 123_457, 1 << 20, 3_000_000] {
        for (bits, size) in [(8, 8), (8, 16), (16, 16), (16, 4)] {
            if let Ok(p) = forced(nbins, Some(bits), Some(size)) {
                assert_eq!(p.bins_per_block % 32, 0);
                assert!(p.bins_per_block * size as usize >= nbins);
                assert!(p.shared_bytes as usize <= counter_capacity(&DeviceLimits::H100));
            }
        }
    }
}

#[test]
fn the_largest_bin_counts_each_cluster_holds() {
    // A block holds 232304 8-bit or 116152 16-bit counters beside its hot lanes; a slice is a
    // multiple of 32 bins: 232288 and 116128.
    let fits = |nbins, bits, size| forced(nbins, Some(bits), Some(size)).is_ok();
    for (bits, size, most) in [
        (8, 16, 16 * 232_288),
        (8, 8, 8 * 232_288),
        (16, 16, 16 * 116_128),
        (16, 8, 8 * 116_128),
    ] {
        assert!(fits(most, bits, size), "{bits}x{size} {most}");
        assert!(!fits(most + 1, bits, size), "{bits}x{size} {}", most + 1);
        assert!(cluster_packed_fits(most, size, bits, &DeviceLimits::H100));
        assert!(!cluster_packed_fits(
            most + 1,
            size,
            bits,
            &DeviceLimits::H100
        ));
    }
    // Beyond the largest cluster of 8-bit counters, no size is found.
    let reason = unsupported_reason(forced(16 * 232_288 + 1, None, None));
    assert!(reason.contains("over 16 blocks"), "{reason}");
}

#[test]
fn what_cluster_packed_refuses() {
    let weighted = unsupported_reason(forced_as(1 << 20, SampleType::F32, true, None, None));
    assert!(weighted.contains("weighted"), "{weighted}");
    let width = unsupported_reason(forced(1 << 20, Some(4), Some(16)));
    assert!(width.contains("16 or 8 bits"), "{width}");
    for k in [0, 1, 17, 32] {
        let size = unsupported_reason(forced(1 << 20, Some(8), Some(k)));
        assert!(size.contains("outside 2..=16"), "{k}: {size}");
    }
    let many = unsupported_reason(forced(1 << 24, Some(8), Some(16)));
    assert!(many.contains("2^24"), "{many}");
    let old = DeviceLimits {
        compute_capability: (8, 0),
        max_cluster_portable: 0,
        max_cluster_nonportable: 0,
        ..DeviceLimits::H100
    };
    let r = plan(
        &Workload::new(1 << 20, SampleType::F32, false),
        &old,
        StrategyChoice::ClusterPacked {
            bits: None,
            size: None,
        },
    );
    assert!(unsupported_reason(r).contains("compute capability 9.0"));
}

#[test]
fn auto_never_picks_it_and_the_candidate_rule_covers_float_bins_beyond_one_block() {
    let h100 = DeviceLimits::H100;
    for nbins in [1000, 232_305, 1 << 20, 3_000_000] {
        for t in [SampleType::F32, SampleType::F64, SampleType::I32] {
            let p = plan(&Workload::new(nbins, t, false), &h100, StrategyChoice::Auto).unwrap();
            assert!(
                !matches!(p.strategy, Strategy::ClusterPacked { .. }),
                "{nbins} {t}: {p}"
            );
        }
    }
    let candidate = |nbins, t, weighted| {
        cluster_packed_candidate(&Workload::new(nbins, t, weighted), &h100).map(|p| p.strategy)
    };
    let one_block8 = packed_max_bins_per_block(&h100, 8);
    assert_eq!(one_block8, 232_304);
    assert_eq!(candidate(one_block8, SampleType::F32, false), None);
    assert_eq!(
        candidate(one_block8 + 1, SampleType::F32, false),
        Some(Strategy::ClusterPacked { size: 2, bits: 8 })
    );
    assert_eq!(
        candidate(1 << 20, SampleType::F32, false),
        Some(Strategy::ClusterPacked { size: 8, bits: 8 })
    );
    assert_eq!(
        candidate(3 << 20, SampleType::F64, false),
        Some(Strategy::ClusterPacked { size: 16, bits: 8 })
    );
    // Not for weights, cheap binnings (sliced and partition measured faster), beyond what the
    // largest cluster holds, or beyond the bins where partition takes over.
    assert_eq!(candidate(1 << 20, SampleType::F32, true), None);
    assert_eq!(candidate(1 << 20, SampleType::I32, false), None);
    let exact = Workload::new(1 << 20, SampleType::F32, false).with_exact_float_bins(true);
    assert_eq!(cluster_packed_candidate(&exact, &h100), None);
    assert_eq!(candidate(4 << 20, SampleType::F32, false), None);
    assert_eq!(candidate((4 << 20) + 1, SampleType::F32, false), None);
}
