//! Unit tests of the multi-GPU engine that need no GPU.

use super::*;

#[test]
fn shards_cover_the_input_in_order() {
    assert_eq!(shards(10, 3), vec![0..4, 4..7, 7..10]);
    assert_eq!(shards(2, 4), vec![0..1, 1..2, 2..2, 2..2]);
    assert_eq!(shards(0, 2), vec![0..0, 0..0]);
    assert_eq!(shards(5, 1), vec![0..5]);
    for n in [0, 1, 7, 1000, 1 << 20] {
        for k in 1..9 {
            let s = shards(n, k);
            assert_eq!(s.len(), k);
            assert_eq!(s.iter().map(|r| r.len()).sum::<usize>(), n);
            assert!(s.windows(2).all(|w| w[0].end == w[1].start));
            let (lo, hi) = (
                s.iter().map(|r| r.len()).min().unwrap(),
                s.iter().map(|r| r.len()).max().unwrap(),
            );
            assert!(hi - lo <= 1);
        }
    }
}

#[test]
fn device_sets_parse() {
    assert_eq!("all".parse::<DeviceSet>().unwrap(), DeviceSet::All);
    assert_eq!(
        "0, 2,1".parse::<DeviceSet>().unwrap(),
        DeviceSet::List(vec![0, 2, 1])
    );
    for bad in ["", "0,,1", "x", "-1", "0,0"] {
        assert!(bad.parse::<DeviceSet>().is_err(), "{bad}");
    }
    assert_eq!(DeviceSet::Default.resolve().unwrap(), vec![0]);
}
