//! Float32 axes whose edges the kernels may compute instead of load (`EDGES_*` in
//! `kernels/histdd.cu`). A joint bin checks its estimate against two to four edges per axis; read
//! from the edge table, those are scattered loads that compete with the shared-memory counters for
//! the same load/store path. Where the host proves that every interior float32 edge the kernels
//! compare with (the float64 edge rounded up) equals a float32 formula, the kernels evaluate the
//! formula in registers and get the same edges, so the same answers, bit for bit.

/// How a float32 axis checks its estimate (the values of `edge_mode` in the kernels).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EdgeMode {
    /// Against the edge table (any edges).
    Table,
    /// Against `start + i * step` in float32 (rounded after each operation), which the host
    /// checked equal to every interior table edge.
    Linear { start: f32, step: f32 },
    /// Moreover `step` is a power of two and `start + i * step` exact for every interior `i`: the
    /// estimate from `start` and `1 / step` is the bin or the one above it (one comparison).
    Pow2 { start: f32, step: f32 },
}

impl EdgeMode {
    /// The kernels' code for the mode.
    pub fn code(self) -> i32 {
        match self {
            EdgeMode::Table => 0,
            EdgeMode::Linear { .. } => 1,
            EdgeMode::Pow2 { .. } => 2,
        }
    }

    /// `(start, step)` of the computed modes, zeros for the table.
    pub fn formula(self) -> (f32, f32) {
        match self {
            EdgeMode::Table => (0.0, 0.0),
            EdgeMode::Linear { start, step } | EdgeMode::Pow2 { start, step } => (start, step),
        }
    }
}

/// The kernels' computed edge `i`: `__fadd_rn(__fmul_rn((float)i, step), start)`.
pub fn computed_edge(i: usize, start: f32, step: f32) -> f32 {
    // Rust rounds each float32 operation and never fuses them, as the _rn intrinsics do.
    (i as f32) * step + start
}

/// Whether `a + b` in float64 is exact (Knuth's two-sum error is zero).
fn exact_sum(a: f64, b: f64) -> Option<f64> {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    (err == 0.0 && s.is_finite()).then_some(s)
}

/// The mode of an axis from its float64 edges `e` (n + 1 of them, increasing) and the float32
/// table `e32` the kernels compare with (`e32[i]` = `e[i]` rounded up). A formula only where
/// `e32`'s interior edges all equal it; Pow2 where, in addition, the step is a power of two and
/// every interior `start + i * step` is exact, and `start` is at or below the axis's lowest float32
/// sample (`e32[0]`).
pub fn edge_mode(e: &[f64], e32: &[f32]) -> EdgeMode {
    let n = e.len().saturating_sub(1);
    if n == 0 || e32.len() != e.len() || n >= 1 << 24 {
        return EdgeMode::Table;
    }
    let start = e[0] as f32;
    let step = ((e[n] - e[0]) / n as f64) as f32;
    if !start.is_finite() || !step.is_finite() || step <= 0.0 {
        return EdgeMode::Table;
    }
    if !(1..n).all(|i| computed_edge(i, start, step) == e32[i]) {
        return EdgeMode::Table;
    }
    let pow2 = step.is_normal()
        && step.to_bits() & 0x007f_ffff == 0
        && (1.0 / step).is_finite()
        && start <= e32[0]
        && (1..n).all(|i| {
            exact_sum(start as f64, i as f64 * step as f64)
                .is_some_and(|v| v as f32 as f64 == v && v as f32 == e32[i])
        });
    if pow2 {
        EdgeMode::Pow2 { start, step }
    } else {
        EdgeMode::Linear { start, step }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogramdd::cuda::params::{down32, up32};

    fn table(e: &[f64]) -> Vec<f32> {
        e.iter().map(|&x| up32(x)).collect()
    }

    fn linspace(lo: f64, hi: f64, n: usize) -> Vec<f64> {
        // numpy.linspace's formula: lo + i * step, the last edge exactly hi.
        let step = (hi - lo) / n as f64;
        (0..=n)
            .map(|i| if i == n { hi } else { lo + i as f64 * step })
            .collect()
    }

    #[test]
    fn power_of_two_widths_compute_their_edges_exactly() {
        for (lo, hi, n) in [
            (-4.0, 4.0, 256),
            (-4.0, 4.0, 64),
            (0.0, 256.0, 32),
            (0.0, 1.0, 1),
        ] {
            let e = linspace(lo, hi, n);
            let m = edge_mode(&e, &table(&e));
            assert!(matches!(m, EdgeMode::Pow2 { .. }), "{lo} {hi} {n}: {m:?}");
        }
    }

    #[test]
    fn other_widths_are_linear_or_tabled_and_the_formula_is_the_table() {
        let mut linear = 0;
        for (lo, hi, n) in [
            (-4.0, 4.0, 100),
            (0.1, 0.7, 37),
            (-1e30, 1e30, 1000),
            (0.0, 3000.0, 1000),
            (-4.5, 4.5, 6),
        ] {
            let e = linspace(lo, hi, n);
            let t = table(&e);
            match edge_mode(&e, &t) {
                EdgeMode::Table => {}
                EdgeMode::Pow2 { .. } => panic!("{lo} {hi} {n}: not a power of two"),
                EdgeMode::Linear { start, step } => {
                    linear += 1;
                    for (i, &want) in t.iter().enumerate().take(n).skip(1) {
                        assert_eq!(computed_edge(i, start, step), want);
                    }
                }
            }
        }
        assert!(linear > 0, "no linear axis among the examples");
        // Explicit uneven edges stay with the table.
        let e = [0.0, 1.0, 3.0, 4.0];
        assert_eq!(edge_mode(&e, &table(&e)), EdgeMode::Table);
        let _ = down32(1.0);
    }

    /// The one-comparison rule of Pow2 axes (`axis_bin` in the kernels), replayed in float32 on
    /// the host over every float32 near each edge and a spread of others, gives the table's bin.
    #[test]
    fn the_pow2_rule_finds_the_tables_bin() {
        for (lo, hi, n) in [(-4.0, 4.0, 256), (-4.0, 4.0, 64), (-0.5, 0.5, 8)] {
            let e = linspace(lo, hi, n);
            let t = table(&e);
            let EdgeMode::Pow2 { start, step } = edge_mode(&e, &t) else {
                panic!("not pow2")
            };
            let scale = 1.0 / step;
            let want = |x: f32| (1..n).filter(|&i| t[i] <= x).count();
            let got = |x: f32| {
                let f = (x - start) * scale;
                let i = if f < (n - 1) as f32 {
                    f.max(0.0) as usize
                } else {
                    n - 1
                };
                if i > 0 && x < computed_edge(i, start, step) {
                    i - 1
                } else {
                    i
                }
            };
            let mut xs = Vec::new();
            for &edge in &t {
                let mut x = edge;
                for _ in 0..4 {
                    x = x.next_down();
                }
                for _ in 0..9 {
                    xs.push(x);
                    x = x.next_up();
                }
            }
            xs.extend((0..10_000).map(|k| lo as f32 + (hi - lo) as f32 * k as f32 / 10_000.0));
            xs.extend([1e-30f32, -1e-30, 0.0, -0.0, 1e-8, -1e-8]);
            for x in xs {
                if x >= t[0] && x <= down32(hi) {
                    assert_eq!(got(x), want(x), "{lo} {hi} {n}: x = {x:e}");
                }
            }
        }
    }
}
