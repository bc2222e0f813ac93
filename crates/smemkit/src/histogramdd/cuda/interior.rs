//! Where an axis's index estimate needs no check against the edges. The joint kernels estimate a
//! coordinate's bin as `(x - first) * scale` and then read one to three edges to confirm it; those
//! reads are scattered loads per axis per sample. When the estimate's fractional part is far from
//! both ends of its bin, it is the bin, and the reads can be skipped.
//!
//! Why. Let `p = (x - first) * scale` exactly, and `b` the bin with `edges[b] <= x < edges[b + 1]`.
//! Edge `i` lies at position `i + d_i` with `|d_i| <= dev` (measured over every edge below), so
//! `p` lies in `[b - dev, b + 1 + dev)`. The kernel's estimate `f` differs from `p` by at most
//! `E`: the difference `x - first` is computed with `first` rounded to the working type and one
//! rounding (at most one spacing `U` of that type at `2 max(|lo|, |hi|)`, times `scale` in bins),
//! and the factor's rounding and the product's add a relative error of two units of the type's
//! last place on a value below `n + 1`. So `f` lies in `(b - e, b + 1 + e)` with `e = dev + E`,
//! and a fractional part of `f` within `[e, 1 - e]` leaves `b = floor(f)`. The margin is twice `e`
//! (and the bounds above are rounded up generously); where it reaches a quarter of a bin (uneven
//! edges, a zero-width bin, bins near the type's spacing) the estimate is always checked.

use crate::histogram::bins::estimate::{ulp32, ulp64};

use super::super::axis::Axis;

/// `(lo, hi)` for float64 arithmetic (float64 and integer samples) and `(lo32, hi32)` for float32:
/// a fractional part strictly between them needs no check; `(0, 0)` turns the shortcut off.
pub(crate) fn interior_fractions(axis: &Axis) -> ((f64, f64), (f32, f32)) {
    const OFF: ((f64, f64), (f32, f32)) = ((0.0, 0.0), (0.0, 0.0));
    let Some((first, scale)) = axis.estimate() else {
        return OFF;
    };
    let e = &axis.edges;
    let n = e.len() - 1;
    let dev = e
        .iter()
        .enumerate()
        .map(|(i, &edge)| ((edge - first) * scale - i as f64).abs())
        .fold(0.0f64, f64::max);
    // The deviation itself is computed in float64: a few units of 2^-52 on values below n + 1.
    let dev = dev + (n as f64 + 2.0) * (-48f64).exp2();
    let m = 2.0 * first.abs().max(e[n].abs());
    let err64 = 1.5 * ulp64(m) * scale + (n as f64 + 2.0) * (-50f64).exp2();
    let err32 = 1.5 * ulp32(m as f32) * scale + (n as f64 + 2.0) * (-22f64).exp2();
    let fractions = |err: f64| {
        let margin = 2.0 * (dev + err);
        (margin.is_finite() && margin < 0.25).then_some((margin, 1.0 - margin))
    };
    let f64s = fractions(err64).unwrap_or((0.0, 0.0));
    // The float32 kernel compares in float32: round the bounds inward (both are positive, so the
    // neighbouring float32 is one step of the bit pattern).
    let f32s = fractions(err32)
        .map(|(lo, hi)| {
            let (lo32, hi32) = (lo as f32, hi as f32);
            let lo32 = if (lo32 as f64) < lo {
                f32::from_bits(lo32.to_bits() + 1)
            } else {
                lo32
            };
            let hi32 = if (hi32 as f64) > hi {
                f32::from_bits(hi32.to_bits() - 1)
            } else {
                hi32
            };
            (lo32, hi32)
        })
        .unwrap_or((0.0, 0.0));
    (f64s, f32s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::bins::{BinSpec, Slot};

    struct Rng(u64);
    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn axes() -> Vec<Axis> {
        let mut specs: Vec<BinSpec> = Vec::new();
        for (lo, hi) in [
            (-4.0, 4.0),
            (0.0, 1.0),
            (-1e6, 1e6 + 3.0),
            (1e30, 3e30),
            (0.1, 0.7),
        ] {
            for nbins in [1, 3, 64, 256, 1000, 4096, 65536] {
                specs.push(BinSpec::Uniform {
                    nbins,
                    range: Some((lo, hi)),
                });
            }
        }
        // Nearly even edges, uneven edges, a zero-width bin, log-spaced edges.
        specs.push(BinSpec::Edges((0..=100).map(|i| i as f64 * 0.1).collect()));
        specs.push(BinSpec::Edges(vec![0.0, 1.0, 3.0, 4.0]));
        specs.push(BinSpec::Edges(vec![0.0, 2.0, 2.0, 3.0]));
        specs.push(BinSpec::Edges(
            (0..=50).map(|i| 10f64.powf(i as f64 / 10.0)).collect(),
        ));
        specs
            .iter()
            .map(|s| Axis::resolve_without_data(s, 0).unwrap())
            .collect()
    }

    fn around(edges: &[f64], stride: usize) -> Vec<f64> {
        let mut xs = Vec::new();
        for &e in edges.iter().step_by(stride) {
            let mut up = e;
            let mut down = e;
            xs.push(e);
            for _ in 0..3 {
                up = up.next_up();
                down = down.next_down();
                xs.extend([up, down]);
            }
        }
        xs
    }

    /// The kernels' arithmetic (float64 and float32 estimates): wherever the fractional part is
    /// inside the fractions, the estimate is the bin `Axis::locate` gives.
    #[test]
    fn interior_estimates_are_the_bins() {
        let mut rng = Rng(0x5851f42d4c957f2d);
        let (mut taken64, mut taken32) = (0usize, 0usize);
        for axis in axes() {
            let Some((first, scale)) = axis.estimate() else {
                continue;
            };
            let ((lo, hi), (lo32, hi32)) = interior_fractions(&axis);
            let e = &axis.edges;
            let n = e.len() - 1;
            let mut xs = around(e, (n / 5000).max(1));
            xs.extend((0..5000).map(|_| e[0] + (e[n] - e[0]) * rng.unit()));
            for &x in &xs {
                if !(x >= e[0] && x <= e[n]) {
                    continue;
                }
                let f = (x - first) * scale;
                let i = f as usize;
                let frac = f - i as f64;
                if frac > lo && frac < hi && i < n {
                    taken64 += 1;
                    assert_eq!(axis.locate(x), Slot::Bin(i), "f64 x = {x}, {:?}", &e[..2]);
                }
                // float32 samples: the kernel's lo32 <= x <= hi32 test, then float32 arithmetic.
                let x32 = x as f32;
                let (l32, h32) = (
                    super::super::params::up32(e[0]),
                    super::super::params::down32(e[n]),
                );
                if !(x32 >= l32 && x32 <= h32) {
                    continue;
                }
                let f32v = (x32 - first as f32) * scale as f32;
                let i = f32v as usize;
                let frac = f32v - i as f32;
                if frac > lo32 && frac < hi32 && i < n {
                    taken32 += 1;
                    assert_eq!(
                        axis.locate(x32 as f64),
                        Slot::Bin(i),
                        "f32 x = {x32}, {:?}",
                        &e[..2]
                    );
                }
            }
        }
        assert!(taken64 > 50_000 && taken32 > 50_000, "{taken64} {taken32}");
    }

    #[test]
    fn uneven_edges_are_always_checked() {
        for edges in [vec![0.0, 1.0, 3.0, 4.0], vec![0.0, 2.0, 2.0, 3.0]] {
            let axis = Axis::resolve_without_data(&BinSpec::Edges(edges), 0).unwrap();
            assert_eq!(interior_fractions(&axis), ((0.0, 0.0), (0.0, 0.0)));
        }
        let axis = Axis::resolve_without_data(
            &BinSpec::Uniform {
                nbins: 256,
                range: Some((-4.0, 4.0)),
            },
            0,
        )
        .unwrap();
        let ((lo, hi), (lo32, hi32)) = interior_fractions(&axis);
        assert!(lo > 0.0 && lo < 1e-6 && hi < 1.0, "{lo} {hi}");
        assert!(lo32 > 0.0 && lo32 < 1e-3 && hi32 < 1.0, "{lo32} {hi32}");
    }
}
