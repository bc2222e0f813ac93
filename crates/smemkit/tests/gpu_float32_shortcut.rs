//! The float32 kernels with the 32-bit shortcut (`uniform32i`) and with the float64 one on the
//! exact difference (`uniform32w`, where the float32 margin is wide: 10007 and more bins over
//! [-4, 4], a factor float32 cannot hold): the bin is taken from the estimate except near an edge,
//! where an out-of-line rule corrects against numpy's edges. These
//! tests put samples on every edge and up to 3 ulps either side (where the out-of-line rule runs),
//! plus normal samples, NaN, infinities and values outside the bins, through every strategy that
//! holds the bins and both policies, with a caller's range and with the range from the data, and
//! compare with the CPU engine.

use rand::Rng;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, HistogramOptions},
    sample::Samples,
    Backend,
};

mod gpu_common;
use gpu_common::{check, rng, strategies_for};

/// `x` and its float32 neighbours up to `k` ulps either side.
fn around(x: f32, k: i32) -> impl Iterator<Item = f32> {
    (-k..=k).map(move |d| {
        let mut v = x;
        for _ in 0..d.abs() {
            v = if d > 0 {
                v.next_up_compat()
            } else {
                v.next_down_compat()
            };
        }
        v
    })
}

trait Step {
    fn next_up_compat(self) -> Self;
    fn next_down_compat(self) -> Self;
}

impl Step for f32 {
    fn next_up_compat(self) -> f32 {
        if self == 0.0 {
            return f32::from_bits(1);
        }
        let b = self.to_bits();
        f32::from_bits(if self > 0.0 { b + 1 } else { b - 1 })
    }
    fn next_down_compat(self) -> f32 {
        -(-self).next_up_compat()
    }
}

/// Normal samples scaled to `sigma`, every edge of `edges` +-3 ulps, and the awkward values.
fn samples(edges: &[f64], sigma: f32, r: &mut impl Rng) -> Vec<f32> {
    let mut data: Vec<f32> = (0..300_007)
        .map(|_| {
            // Box-Muller: a standard normal from two uniforms.
            let (u, v): (f64, f64) = (r.gen_range(f64::EPSILON..1.0), r.gen());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32 * sigma
        })
        .collect();
    let stride = (edges.len() / 8192).max(1);
    for e in edges.iter().step_by(stride).chain(edges.last()) {
        data.extend(around(*e as f32, 3));
    }
    data.extend([
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -1e30,
    ]);
    data
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn edges_and_their_neighbours_with_a_callers_range() {
    let mut r = rng();
    for (nbins, lo, hi) in [
        (1000usize, -4.0f64, 4.0f64),
        (4096, -4.0, 4.0),
        (1000, 0.0, 1.0),
        (32768, -4.0, 4.0),
        (257, -3.0, 5.5),
        (10007, -4.0, 4.0),
        (100_000, -4.0, 4.0),
        (250_000, -4.0, 4.0),
        (1000, 0.1, 0.7),
    ] {
        let spec = BinSpec::Uniform {
            nbins,
            range: Some((lo, hi)),
        };
        let edges: Vec<f64> = (0..=nbins)
            .map(|i| lo + (hi - lo) * i as f64 / nbins as f64)
            .collect();
        let data = samples(&edges, ((hi - lo) / 4.0) as f32, &mut r);
        for policy in [OutOfRange::Ignore, OutOfRange::Clamp] {
            for choice in strategies_for(nbins, false) {
                check(
                    Samples::F32(&data),
                    None,
                    spec.clone(),
                    policy,
                    choice,
                    &format!("f32 {nbins} bins over [{lo}, {hi}] {policy:?} {choice:?}"),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn edges_and_their_neighbours_with_the_range_from_the_data() {
    let mut r = rng();
    for nbins in [1000usize, 4096, 16384, 100_000] {
        // The edges numpy would use for normal data: taken from the CPU engine on finite samples.
        let finite: Vec<f32> = samples(&[], 1.0, &mut r)
            .into_iter()
            .filter(|x| x.is_finite() && x.abs() < 10.0)
            .collect();
        let spec = BinSpec::Uniform { nbins, range: None };
        let cpu = histogram(
            Samples::F32(&finite),
            None,
            &HistogramOptions::new(spec.clone()).backend(Backend::Cpu),
        )
        .unwrap();
        let mut data = finite.clone();
        for e in &cpu.edges {
            // Neighbours inside the data's extremes keep the edges the same.
            let (min, max) = (cpu.edges[0] as f32, *cpu.edges.last().unwrap() as f32);
            data.extend(around(*e as f32, 3).filter(|v| *v >= min && *v <= max));
        }
        for choice in strategies_for(nbins, false) {
            check(
                Samples::F32(&data),
                None,
                spec.clone(),
                OutOfRange::Ignore,
                choice,
                &format!("f32 {nbins} bins over the data's range {choice:?}"),
            );
        }
    }
}
