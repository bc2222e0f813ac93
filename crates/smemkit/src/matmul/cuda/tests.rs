//! Unit tests of the CUDA matmul that need no GPU.

use super::*;

#[test]
fn warp_configurations_fit_their_kernel() {
    for c in WarpConfig::CANDIDATES
        .iter()
        .chain([&WarpConfig::DEFAULT, &WarpConfig::TF32])
    {
        assert_eq!(c.bm % c.wm, 0, "{}", c.name());
        assert_eq!(c.bn % c.wn, 0, "{}", c.name());
        // The lanes tile the warp tile with whole float4 fragments.
        let (tm, tn) = c.lane_tile();
        assert_eq!((c.wm / tm) * (c.wn / tn), 32, "{}", c.name());
        assert_eq!(c.wm % tm, 0, "{}", c.name());
        assert_eq!(tn % 4, 0, "{}", c.name());
        let t = c.threads();
        assert_eq!((c.bm * c.bk / 4) % t, 0, "{}", c.name());
        assert_eq!((c.bn * c.bk / 4) % t, 0, "{}", c.name());
        // Within the H100's opt-in limit (and Ampere's 163 KiB).
        assert!(c.smem_bytes(true) <= 160 * 1024, "{}", c.name());
        // 64 accumulators + staging: 2 blocks per SM must fit 64K registers at <= 128 each.
        assert!(t * c.min_blocks <= 2048, "{}", c.name());
    }
    assert_eq!(WarpConfig::DEFAULT.smem_bytes(false), 4 * 8 * 264 * 4);
    let split = WarpConfig {
        split: 4,
        ..WarpConfig::DEFAULT
    };
    assert_eq!(split.name(), "128x128x8-w64x32-s4-b2-k4");
    assert_eq!(split.blocks(1000, 1000), 8 * 8 * 4);
    assert_eq!(WarpConfig::DEFAULT.blocks(129, 128), 2);
    assert_eq!(
        Variant::Warp(WarpConfig::DEFAULT).name(),
        "warp:128x128x8-w64x32-s4-b2"
    );
    assert_eq!(
        WarpConfig {
            split: 4,
            ..WarpConfig::PREFETCH
        }
        .name(),
        "128x128x8-w64x32-s3-b2-p-k4"
    );
    assert_eq!(WarpConfig::PREFETCH.lane_tile(), (8, 8));
    let wide = WarpConfig {
        bn: 256,
        wn: 64,
        min_blocks: 1,
        ..WarpConfig::PREFETCH
    };
    assert_eq!(wide.lane_tile(), (8, 16));
    assert_eq!(wide.threads(), 256);
    // Every candidate has its own name (the tuner's file stores names).
    for (i, a) in WarpConfig::CANDIDATES.iter().enumerate() {
        for b in &WarpConfig::CANDIDATES[i + 1..] {
            assert_ne!(a.name(), b.name());
        }
    }
}

#[test]
fn device_problems_are_validated() {
    let p = DeviceGemm {
        m: 4,
        n: 8,
        k: 3,
        a: 0,
        lda: 3,
        trans_a: false,
        b: 0,
        ldb: 8,
        trans_b: false,
        c: 256,
        ldc: 8,
        alpha: 1.0,
        beta: 0.0,
    };
    assert!(p.validate().is_ok());
    assert_eq!(p.vec_flags(), (0, 1, 1));
    assert!(DeviceGemm { k: 0, ..p }.validate().is_err());
    assert!(DeviceGemm { ldb: 7, ..p }.validate().is_err());
    // A transposed: stored K x M, so lda must cover M = 4.
    assert!(DeviceGemm { trans_a: true, ..p }.validate().is_err());
    assert!(DeviceGemm {
        trans_a: true,
        lda: 4,
        ..p
    }
    .validate()
    .is_ok());
    // An address that is not 16-byte aligned turns the 16-byte path off.
    assert_eq!(DeviceGemm { c: 260, ..p }.vec_flags(), (0, 1, 0));
}
