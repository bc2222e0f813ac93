//! Explicit edges and digitize's bins searched through their table (`search_table.rs`): each
//! sample's cell gives a first candidate and the search takes only the steps the fullest cell
//! needs. These tests put samples on every edge and one ulp either side, plus spread samples,
//! NaN and infinities, for linear, log-spaced (key cells), signed log-spaced, tied and infinite
//! edges, through every strategy that holds the bins, and compare with the CPU engine.

use rand::Rng;
use smemkit::internals::digitize::cuda as gpu_digitize;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    sample::Samples,
};

mod gpu_common;
use gpu_common::{check, f32_neighbours, rng, strategies_for};

/// The next float64 above `x` (`f64::next_up`, newer than the crate's minimum Rust).
fn up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next float64 below `x`.
fn down(x: f64) -> f64 {
    -up(-x)
}

/// Edge sets of `n` edges that get a table (the lengths are past its minimum).
fn edge_sets(n: usize, r: &mut impl Rng) -> Vec<(&'static str, Vec<f64>)> {
    let linear: Vec<f64> = (0..n)
        .map(|i| -4.0 + 8.0 * i as f64 / (n - 1) as f64)
        .collect();
    let logs: Vec<f64> = (0..n)
        .map(|i| 10f64.powf(-3.0 + 9.0 * i as f64 / (n - 1) as f64))
        .collect();
    let mut signed: Vec<f64> = logs.iter().step_by(2).map(|&v| -v).collect();
    signed.extend(logs.iter().step_by(2));
    signed.sort_by(f64::total_cmp);
    let mut ties: Vec<f64> = (0..n)
        .map(|_| r.gen_range(-50i32..50) as f64 / 4.0)
        .collect();
    ties.sort_by(f64::total_cmp);
    let mut infinite = linear.clone();
    infinite[0] = f64::NEG_INFINITY;
    infinite[n - 1] = f64::INFINITY;
    vec![
        ("linear", linear),
        ("log-spaced", logs),
        ("signed log-spaced", signed),
        ("ties", ties),
        ("infinite ends", infinite),
    ]
}

/// Every edge and its neighbours, spread samples over the edges' span and beyond, NaN, infinities.
fn samples(edges: &[f64], r: &mut impl Rng) -> Vec<f64> {
    let mut xs: Vec<f64> = Vec::new();
    for &e in edges.iter().filter(|e| e.is_finite()) {
        xs.extend([e, up(e), down(e)]);
        let f = e as f32;
        let [a, b] = f32_neighbours(f);
        xs.extend([f as f64, a as f64, b as f64]);
    }
    let finite: Vec<f64> = edges.iter().copied().filter(|e| e.is_finite()).collect();
    let (lo, hi) = (finite[0], finite[finite.len() - 1]);
    xs.extend((0..20_000).map(|_| lo - 0.1 * (hi - lo) + 1.2 * (hi - lo) * r.gen::<f64>()));
    xs.extend(
        (0..5_000).map(|_| r.gen_range(-12.0..8.0f64).exp2() * if r.gen() { 1.0 } else { -1.0 }),
    );
    xs.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0]);
    xs
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn histograms_over_searched_edges_match_the_cpu_engine() {
    let mut r = rng();
    for n in [33usize, 1001, 5000] {
        for (name, edges) in edge_sets(n, &mut r) {
            let xs = samples(&edges, &mut r);
            let f32s: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let i32s: Vec<i32> = xs
                .iter()
                .map(|&v| {
                    if v.is_finite() {
                        v.round().clamp(-1e9, 1e9) as i32
                    } else {
                        3
                    }
                })
                .collect();
            let spec = BinSpec::Edges(edges.clone());
            for choice in strategies_for(n - 1, false) {
                for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
                    let what = format!("{n} {name} edges {policy:?} {choice:?}");
                    check(
                        Samples::F64(&xs),
                        None,
                        spec.clone(),
                        policy,
                        choice,
                        &format!("f64 {what}"),
                    );
                    check(
                        Samples::F32(&f32s),
                        None,
                        spec.clone(),
                        policy,
                        choice,
                        &format!("f32 {what}"),
                    );
                    check(
                        Samples::I32(&i32s),
                        None,
                        spec.clone(),
                        policy,
                        choice,
                        &format!("i32 {what}"),
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn digitize_over_searched_bins_matches_the_cpu_engine() {
    let mut r = rng();
    for n in [33usize, 1001, 5000] {
        for (name, bins) in edge_sets(n, &mut r) {
            let xs = samples(&bins, &mut r);
            let f32s: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            for decreasing in [false, true] {
                let mut b = bins.clone();
                if decreasing {
                    b.reverse();
                }
                for right in [false, true] {
                    let what = format!("{n} {name} bins, decreasing {decreasing}, right {right}");
                    for x in [Samples::F64(&xs), Samples::F32(&f32s)] {
                        let want = smemkit::digitize::digitize(x, &b, right).unwrap();
                        let got = gpu_digitize::digitize(x, &b, right)
                            .unwrap_or_else(|e| panic!("{what}: gpu: {e}"));
                        if got != want {
                            let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
                            panic!(
                                "{what}: {} indices differ, first at {i}: gpu {} cpu {}",
                                got.iter().zip(&want).filter(|(a, b)| a != b).count(),
                                got[i],
                                want[i]
                            );
                        }
                    }
                }
            }
        }
    }
}
