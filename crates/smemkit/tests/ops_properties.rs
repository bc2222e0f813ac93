//! The CPU engine's array operations against one-line references: stencils of every radius class
//! and boundary mode, transposes of odd shapes, reversals. The GPU is compared with these in
//! `gpu_ops.rs`.

use proptest::prelude::*;
use smemkit::{
    ops::{reverse, stencil1d, transpose, Boundary, ReverseKernel},
    Backend,
};

fn boundary() -> impl Strategy<Value = Boundary> {
    prop_oneof![
        Just(Boundary::Zero),
        Just(Boundary::Clamp),
        Just(Boundary::Wrap)
    ]
}

/// out[i] = sum_j w[j] x[i + j - r], written the obvious way.
fn reference(x: &[f64], w: &[f64], r: usize, b: Boundary) -> Vec<f64> {
    let n = x.len() as i64;
    (0..n)
        .map(|i| {
            w.iter().enumerate().fold(0.0, |acc, (j, &wj)| {
                let g = i + j as i64 - r as i64;
                let v = if (0..n).contains(&g) {
                    x[g as usize]
                } else {
                    match b {
                        Boundary::Zero => 0.0,
                        Boundary::Clamp => x[g.clamp(0, n - 1) as usize],
                        Boundary::Wrap => x[g.rem_euclid(n) as usize],
                    }
                };
                wj.mul_add(v, acc)
            })
        })
        .collect()
}

proptest! {
    #[test]
    fn weighted_stencil_matches_the_reference(x in prop::collection::vec(-100.0f64..100.0, 1..600), r in 1usize..=64, b in boundary(), seed in any::<u64>()) {
        let w: Vec<f64> = (0..2 * r + 1).map(|j| ((seed.wrapping_mul(j as u64 + 1) >> 40) as f64) / 1e6 - 3.0).collect();
        let got = stencil1d(&x, r, Some(&w), b, Backend::Cpu).unwrap();
        prop_assert_eq!(got, reference(&x, &w, r, b));
    }

    #[test]
    fn integer_stencil_is_the_plain_sum(x in prop::collection::vec(any::<i32>(), 1..400), r in 1usize..=8, b in boundary()) {
        let got = stencil1d(&x, r, None, b, Backend::Cpu).unwrap();
        let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let ones = vec![1.0; 2 * r + 1];
        let exact = reference(&xf, &ones, r, b);
        for (g, e) in got.iter().zip(&exact) {
            // Wrapping i32 arithmetic equals the exact sum modulo 2^32.
            prop_assert_eq!(*g, (*e as i64) as i32);
        }
    }

    #[test]
    fn transpose_moves_every_element(rows in 1usize..70, cols in 1usize..70) {
        let a: Vec<u16> = (0..rows * cols).map(|i| i as u16).collect();
        let t = transpose(&a, rows, cols, Backend::Cpu).unwrap();
        for r in 0..rows {
            for c in 0..cols {
                prop_assert_eq!(t[c * rows + r], a[r * cols + c]);
            }
        }
    }

    #[test]
    fn reverse_mirrors(x in prop::collection::vec(any::<u64>(), 0..5000)) {
        let got = reverse(&x, Backend::Cpu, ReverseKernel::Dynamic).unwrap();
        let mut want = x.clone();
        want.reverse();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn bad_requests_are_errors() {
    let x = [1.0f32, 2.0, 3.0];
    assert!(stencil1d(&x, 0, Some(&[1.0]), Boundary::Zero, Backend::Cpu).is_err());
    assert!(stencil1d(&x, 65, Some(&[1.0; 131]), Boundary::Zero, Backend::Cpu).is_err());
    assert!(
        stencil1d(&x, 1, Some(&[1.0, 2.0]), Boundary::Zero, Backend::Cpu).is_err(),
        "wrong weight count"
    );
    assert!(
        stencil1d(&x, 1, None, Boundary::Zero, Backend::Cpu).is_err(),
        "floats need weights"
    );
    assert!(
        stencil1d(
            &[1i32, 2],
            1,
            Some(&[1, 1, 1]),
            Boundary::Zero,
            Backend::Cpu
        )
        .is_err(),
        "integers take no weights"
    );
    assert!(
        transpose(&[1u8, 2, 3], 2, 2, Backend::Cpu).is_err(),
        "shape and length disagree"
    );
    assert!("mirror".parse::<Boundary>().is_err());
    assert!("shuffle".parse::<ReverseKernel>().is_err());
}

#[test]
fn length_zero_and_one() {
    assert!(
        stencil1d::<f32>(&[], 3, Some(&[1.0; 7]), Boundary::Wrap, Backend::Cpu)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        stencil1d(
            &[2.0f32],
            1,
            Some(&[1.0, 10.0, 100.0]),
            Boundary::Wrap,
            Backend::Cpu
        )
        .unwrap(),
        vec![222.0]
    );
    assert_eq!(
        transpose::<u8>(&[], 0, 5, Backend::Cpu).unwrap(),
        Vec::<u8>::new()
    );
    assert_eq!(
        reverse(&[7u8], Backend::Cpu, ReverseKernel::Static).unwrap(),
        vec![7]
    );
}
