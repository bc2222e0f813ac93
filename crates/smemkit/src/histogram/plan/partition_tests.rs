//! Tests of the partition strategy's plans.

use super::*;

#[test]
fn partition_counts_only_and_is_bounded() {
    let w = |nbins, weighted| Workload::new(nbins, SampleType::I32, weighted);
    let p = plan(
        &w(1 << 24, false),
        &DeviceLimits::H100,
        StrategyChoice::Partition,
    )
    .unwrap();
    assert_eq!(p.strategy, Strategy::Partition);
    assert_eq!(p.bins_per_block, 1 << PARTITION_BITS);
    assert!(plan(
        &w(1 << 20, true),
        &DeviceLimits::H100,
        StrategyChoice::Partition
    )
    .is_err());
    let too_many = (PARTITION_MAX_BUCKETS << PARTITION_BITS) + 1;
    assert!(plan(
        &w(too_many, false),
        &DeviceLimits::H100,
        StrategyChoice::Partition
    )
    .is_err());
    assert_eq!(
        "partition".parse::<StrategyChoice>().unwrap(),
        StrategyChoice::Partition
    );
}
