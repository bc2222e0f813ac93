//! The spill strategy on the GPU (the busiest window of bins in shared memory, the other samples
//! in global counters) against the CPU engine, wherever its probe places the window: in the
//! middle, against either end, between two piles of samples, over input shorter than the probe,
//! and under `auto`, which plans it for float bins that need numpy's correction.

mod gpu_common;

use gpu_common::{check, rng};
use rand::Rng;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, HistogramOptions, StrategyChoice},
    sample::Samples,
    Backend,
};

/// A standard normal draw (Box-Muller), scaled.
fn normal(r: &mut impl Rng, sigma: f64) -> f64 {
    let (u, v): (f64, f64) = (r.gen_range(f64::MIN_POSITIVE..1.0), r.gen());
    sigma * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Samples over [-4, 4] (and a few beyond, NaN among them) in shapes that move the window.
fn shapes(r: &mut impl Rng, n: usize) -> Vec<(&'static str, Vec<f64>)> {
    let mut out = Vec::new();
    out.push(("normal", (0..n).map(|_| normal(r, 1.0)).collect()));
    out.push(("uniform", (0..n).map(|_| r.gen_range(-4.5..4.5)).collect()));
    // Piled against the top: the window must stop at the last bin.
    out.push(("top", (0..n).map(|_| 4.0 - normal(r, 0.3).abs()).collect()));
    out.push((
        "bottom",
        (0..n).map(|_| -4.0 + normal(r, 0.3).abs()).collect(),
    ));
    // Two piles far apart, and one bin outside the window holding a tenth of the samples.
    out.push((
        "two piles",
        (0..n)
            .map(|i| normal(r, 0.2) + if i % 2 == 0 { -3.0 } else { 3.0 })
            .collect(),
    ));
    out.push((
        "hot bin outside",
        (0..n)
            .map(|i| if i % 10 == 0 { 3.9 } else { normal(r, 0.5) })
            .collect(),
    ));
    let mut odd: Vec<f64> = (0..n).map(|_| normal(r, 2.0)).collect();
    for (i, x) in [f64::NAN, f64::INFINITY, -f64::INFINITY, 4.0, -4.0]
        .into_iter()
        .enumerate()
    {
        odd[i * 7919 % n] = x;
    }
    out.push(("wide with NaN and infinities", odd));
    out
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn spill_matches_the_cpu_engine_wherever_the_window_lands() {
    let mut r = rng();
    for nbins in [500_000usize, 1_000_003] {
        let bins = BinSpec::Uniform {
            nbins,
            range: Some((-4.0, 4.0)),
        };
        for (what, data) in shapes(&mut r, 3_000_017) {
            let f32s: Vec<f32> = data.iter().map(|&x| x as f32).collect();
            // Forced widths, and the width the kernel chooses (8-bit for the concentrated shapes at
            // 500000 bins, 4-bit for most at 1000003: both paths run).
            for (policy, bits) in [
                (OutOfRange::Ignore, Some(8)),
                (OutOfRange::Clamp, Some(8)),
                (OutOfRange::Ignore, Some(4)),
                (OutOfRange::Ignore, None),
                (OutOfRange::Clamp, None),
            ] {
                let what = format!("{what}, {nbins} bins, {policy:?}, {bits:?}-bit");
                let choice = StrategyChoice::Spill(bits);
                check(
                    Samples::F32(&f32s),
                    None,
                    bins.clone(),
                    policy,
                    choice,
                    &format!("float32 {what}"),
                );
                check(
                    Samples::F64(&data),
                    None,
                    bins.clone(),
                    policy,
                    choice,
                    &format!("float64 {what}"),
                );
            }
            // Integer samples in computed bins.
            let ints: Vec<i32> = data
                .iter()
                .map(|&x| if x.is_finite() { (x * 1e5) as i32 } else { 0 })
                .collect();
            check(
                Samples::I32(&ints),
                None,
                BinSpec::Uniform {
                    nbins,
                    range: Some((-4e5, 4e5)),
                },
                OutOfRange::Ignore,
                StrategyChoice::Spill(None),
                &format!("int32 {what}, {nbins} bins"),
            );
        }
    }
}

/// Inputs shorter than the probe (every sample probed, some twice), a single sample, and none.
#[test]
#[ignore = "needs a CUDA GPU"]
fn spill_takes_short_and_empty_input() {
    let mut r = rng();
    for n in [0usize, 1, 2, 1000, 2047, 2048, 2049, 5000] {
        let data: Vec<f32> = (0..n).map(|_| normal(&mut r, 1.5) as f32).collect();
        for bits in [Some(8), Some(4), None] {
            check(
                Samples::F32(&data),
                None,
                BinSpec::Uniform {
                    nbins: 700_000,
                    range: Some((-4.0, 4.0)),
                },
                OutOfRange::Ignore,
                StrategyChoice::Spill(bits),
                &format!("{n} samples, {bits:?}-bit"),
            );
        }
    }
}

/// `auto` plans spill for float32 bins off the grid beyond one block (the kernel choosing 8- or
/// 4-bit counters: 8 at 300000 and 700000 bins of these samples, 4 at 1M), and the answer is
/// numpy's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_spills_float_bins_that_need_numpys_correction() {
    let mut r = rng();
    let data: Vec<f32> = (0..(1 << 22) + 3)
        .map(|_| normal(&mut r, 1.0) as f32)
        .collect();
    for (nbins, want) in [
        (300_000usize, "spill"),
        (700_000, "spill"),
        (1_000_000, "spill"),
    ] {
        let bins = BinSpec::Uniform {
            nbins,
            range: Some((-4.0, 4.0)),
        };
        let gpu = histogram(
            Samples::F32(&data),
            None,
            &HistogramOptions::new(bins.clone()).backend(Backend::Cuda),
        )
        .unwrap();
        assert!(
            gpu.engine.detail.contains(want),
            "{nbins} bins: {}",
            gpu.engine.detail
        );
        check(
            Samples::F32(&data),
            None,
            bins,
            OutOfRange::Ignore,
            StrategyChoice::Auto,
            &format!("auto, {nbins} bins"),
        );
    }
}

/// Cheap bins keep `auto`'s slices unless the skew probe finds the spill window holding most of
/// the input: integer samples over 1M integer bins, piled near the middle (spill) or spread
/// evenly (slices), both exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_probe_spills_cheap_bins_only_where_the_window_holds_most() {
    let mut r = rng();
    let nbins = 1usize << 20;
    let n = (1 << 22) + 11;
    let piled: Vec<i32> = (0..n)
        .map(|_| (nbins as f64 / 2.0 + normal(&mut r, nbins as f64 / 16.0)) as i32)
        .collect();
    let spread: Vec<i32> = (0..n).map(|_| r.gen_range(0..nbins as i32)).collect();
    for (what, data, want) in [("piled", &piled, "spill"), ("spread", &spread, "sliced")] {
        let bins = BinSpec::Integer { nbins };
        let gpu = histogram(
            Samples::I32(data),
            None,
            &HistogramOptions::new(bins.clone()).backend(Backend::Cuda),
        )
        .unwrap();
        let detail = &gpu.engine.detail;
        let chosen = detail
            .split("last probe:")
            .nth(1)
            .unwrap_or_else(|| panic!("{what}: no probe in {detail}"));
        assert!(chosen.contains(want), "{what}: {detail}");
        check(
            Samples::I32(data),
            None,
            bins,
            OutOfRange::Ignore,
            StrategyChoice::Auto,
            &format!("auto, {what}"),
        );
    }
}
