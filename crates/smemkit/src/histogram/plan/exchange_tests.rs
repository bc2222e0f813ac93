//! Tests of the exchange strategy's plans.

use super::*;

fn forced(nbins: usize, bits: Option<u32>, size: Option<u32>) -> Result<Plan, crate::Error> {
    plan(
        &Workload::new(nbins, SampleType::I32, false),
        &DeviceLimits::H100,
        StrategyChoice::Exchange { bits, size },
    )
}

#[test]
fn exchange_names_parse_back() {
    for (text, k, bits, size) in [
        ("exchange", None, None, None),
        ("exchange8", None, Some(8), None),
        ("exchange16", Some(4), Some(16), Some(4)),
        ("exchange8x16", None, Some(8), Some(16)),
    ] {
        assert_eq!(
            text.parse::<StrategyChoice>()
                .and_then(|s| s.with_cluster_size(k))
                .unwrap(),
            StrategyChoice::Exchange { bits, size },
            "{text}"
        );
    }
    for bad in ["exchange4", "exchange8x", "exchange8y8", "exchangex"] {
        assert!(bad.parse::<StrategyChoice>().is_err(), "{bad}");
    }
    assert!("exchange8x8"
        .parse::<StrategyChoice>()
        .and_then(|s| s.with_cluster_size(Some(8)))
        .is_err());
    let p = forced(1 << 20, Some(8), Some(8)).unwrap();
    assert_eq!(
        p.strategy.name().parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Exchange {
            bits: Some(8),
            size: Some(8)
        }
    );
}

#[test]
fn the_smallest_cluster_that_leaves_the_inboxes_room() {
    // 1M bins: 8-bit counters over 8 blocks (128 KiB each) leave 1578 entries per source and
    // phase, above the 1280 (5/4 of 8192 samples / 8) asked for; 16-bit would need 16 blocks.
    let p = forced(1 << 20, None, None).unwrap();
    assert_eq!(p.strategy, Strategy::Exchange { size: 8, bits: 8 });
    assert_eq!((p.block, p.bins_per_block), (EXCHANGE_THREADS, 131_072));
    assert_eq!(
        exchange_inbox(1 << 20, SampleType::I32, 8, 8, &DeviceLimits::H100),
        Some(1578)
    );
    assert_eq!(
        forced(1 << 20, Some(16), None).unwrap().strategy,
        Strategy::Exchange { size: 16, bits: 16 }
    );
    assert_eq!(
        forced(2_000_000, None, None).unwrap().strategy,
        Strategy::Exchange { size: 16, bits: 8 }
    );
    // The slices are multiples of 32 bins and cover every bin.
    let p = forced(1_000_003, None, Some(8)).unwrap();
    assert_eq!(p.bins_per_block % 32, 0);
    assert!(p.bins_per_block * 8 >= 1_000_003);
    // Counters plus inboxes never exceed the opt-in limit with the static part.
    assert!(p.shared_bytes as usize + EXCHANGE_STATIC_SHARED <= 232_448);
}

#[test]
fn exchange_refuses_what_it_cannot_hold() {
    for (nbins, bits, size) in [
        (4usize << 20, None, None),
        (1 << 20, Some(8), Some(4)),
        (1 << 20, Some(8), Some(32)),
        (1000, Some(8), Some(1)),
    ] {
        assert!(
            matches!(
                forced(nbins, bits, size),
                Err(crate::Error::StrategyUnsupported { .. })
            ),
            "{nbins} {bits:?} {size:?}"
        );
    }
    let weighted = plan(
        &Workload::new(1000, SampleType::I32, true),
        &DeviceLimits::H100,
        StrategyChoice::Exchange {
            bits: None,
            size: None,
        },
    );
    assert!(matches!(
        weighted,
        Err(crate::Error::StrategyUnsupported { .. })
    ));
    let no_clusters = DeviceLimits {
        compute_capability: (8, 0),
        ..DeviceLimits::H100
    };
    assert!(plan(
        &Workload::new(1000, SampleType::I32, false),
        &no_clusters,
        StrategyChoice::Exchange {
            bits: None,
            size: None
        },
    )
    .is_err());
}

#[test]
fn exchange_refuses_counter_widths_it_has_no_kernel_for() {
    for bits in [4, 32] {
        match forced(1 << 20, Some(bits), None) {
            Err(crate::Error::StrategyUnsupported { reason, .. }) => {
                assert!(reason.contains("16 or 8 bits"), "{bits}: {reason}")
            }
            other => panic!("{bits}-bit exchange: {other:?}"),
        }
    }
    assert!(forced(1 << 20, Some(16), None).is_ok());
}
