//! The GPU's array operations against the CPU engine on fresh random inputs: every stencil radius
//! class, boundary mode and element type; transposes of every element size and odd shapes;
//! reversals with each of the three shared-memory kernels; lengths 0 and 1; the cache lab's variants
//! without shared memory. Outputs are poisoned on the device before each kernel, so an unwritten
//! element fails the comparison. `small_ops_for_sanitizers` is sized for compute-sanitizer, and
//! `stencil_without_barrier_for_racecheck` runs a deliberately broken build for racecheck to catch.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::cuda::ops::{self, StencilKernel, TransposeKernel};
use smemkit::{reverse, stencil1d, transpose, Backend, Boundary, Element, ReverseKernel};

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

const BOUNDARIES: [Boundary; 3] = [Boundary::Zero, Boundary::Clamp, Boundary::Wrap];
const LENGTHS: [usize; 8] = [0, 1, 2, 255, 256, 257, 65_537, 1_000_003];

#[test]
#[ignore = "needs a CUDA GPU"]
fn stencil_every_radius_boundary_and_type() {
    let mut r = rng();
    for radius in [1usize, 3, 8, 17, 64] {
        for n in LENGTHS {
            let x32: Vec<f32> = (0..n).map(|_| r.gen_range(-1.0f32..1.0)).collect();
            let x64: Vec<f64> = (0..n).map(|_| r.gen_range(-1.0f64..1.0)).collect();
            let xi: Vec<i32> = (0..n).map(|_| r.gen()).collect();
            let xl: Vec<i64> = (0..n).map(|_| r.gen()).collect();
            let w32: Vec<f32> = (0..2 * radius + 1)
                .map(|_| r.gen_range(-1.0f32..1.0))
                .collect();
            let w64: Vec<f64> = w32.iter().map(|&w| w as f64).collect();
            for b in BOUNDARIES {
                let what = format!("radius {radius} n {n} {b:?}");
                assert_eq!(
                    stencil1d(&x32, radius, Some(&w32), b, Backend::Cuda).unwrap(),
                    stencil1d(&x32, radius, Some(&w32), b, Backend::Cpu).unwrap(),
                    "f32 {what}"
                );
                assert_eq!(
                    stencil1d(&x64, radius, Some(&w64), b, Backend::Cuda).unwrap(),
                    stencil1d(&x64, radius, Some(&w64), b, Backend::Cpu).unwrap(),
                    "f64 {what}"
                );
                assert_eq!(
                    stencil1d(&xi, radius, None, b, Backend::Cuda).unwrap(),
                    stencil1d(&xi, radius, None, b, Backend::Cpu).unwrap(),
                    "i32 {what}"
                );
                assert_eq!(
                    stencil1d(&xl, radius, None, b, Backend::Cuda).unwrap(),
                    stencil1d(&xl, radius, None, b, Backend::Cpu).unwrap(),
                    "i64 {what}"
                );
            }
        }
    }
}

fn transpose_case<T: Element>(rows: usize, cols: usize, make: impl Fn(usize) -> T) {
    let a: Vec<T> = (0..rows * cols).map(make).collect();
    let want = transpose(&a, rows, cols, Backend::Cpu).unwrap();
    for k in [
        TransposeKernel::Padded,
        TransposeKernel::Unpadded,
        TransposeKernel::Naive,
        TransposeKernel::L1,
    ] {
        assert_eq!(
            ops::transpose(&a, rows, cols, k).unwrap(),
            want,
            "{rows} x {cols} {k:?} {}",
            T::C_TYPE
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transpose_every_element_size_and_odd_shapes() {
    let mut r = rng();
    let salt: u64 = r.gen();
    for (rows, cols) in [
        (1, 1),
        (1, 1000),
        (1000, 1),
        (31, 33),
        (33, 65),
        (1025, 2049),
        (4096, 4096),
    ] {
        transpose_case(rows, cols, |i| (i as u64 ^ salt) as u8);
        transpose_case(rows, cols, |i| (i as u64 ^ salt) as u16);
        transpose_case(rows, cols, |i| (i as u64 ^ salt) as u32);
        transpose_case(rows, cols, |i| i as u64 ^ salt);
    }
}

fn reverse_case<T: Element>(n: usize, make: impl Fn(usize) -> T) {
    let a: Vec<T> = (0..n).map(make).collect();
    let want = reverse(&a, Backend::Cpu, ReverseKernel::Dynamic).unwrap();
    for k in [
        ReverseKernel::Static,
        ReverseKernel::Dynamic,
        ReverseKernel::Carved,
    ] {
        assert_eq!(
            reverse(&a, Backend::Cuda, k).unwrap(),
            want,
            "n {n} {k:?} {}",
            T::C_TYPE
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reverse_every_kernel_type_and_length() {
    let mut r = rng();
    let salt: u64 = r.gen();
    for n in [0usize, 1, 2, 2047, 2048, 2049, 1_000_003] {
        reverse_case(n, |i| (i as u64 ^ salt) as u8);
        reverse_case(n, |i| (i as u64 ^ salt) as u16);
        reverse_case(n, |i| (i as u64 ^ salt) as f32);
        reverse_case(n, |i| i as u64 ^ salt);
        reverse_case(n, |i| (i as u64 ^ salt) as f64);
    }
}

/// The stencil of `kernel` against the CPU engine for every type and boundary.
fn stencil_kernel_case(r: &mut Xoshiro256PlusPlus, kernel: StencilKernel, radius: usize, n: usize) {
    let x32: Vec<f32> = (0..n).map(|_| r.gen_range(-1.0f32..1.0)).collect();
    let x64: Vec<f64> = (0..n).map(|_| r.gen_range(-1.0f64..1.0)).collect();
    let xi: Vec<i32> = (0..n).map(|_| r.gen()).collect();
    let xl: Vec<i64> = (0..n).map(|_| r.gen()).collect();
    let w32: Vec<f32> = (0..2 * radius + 1)
        .map(|_| r.gen_range(-1.0f32..1.0))
        .collect();
    let w64: Vec<f64> = w32.iter().map(|&w| w as f64).collect();
    for b in BOUNDARIES {
        let what = format!("{kernel:?} radius {radius} n {n} {b:?}");
        assert_eq!(
            ops::stencil1d_with(&x32, radius, Some(&w32), b, kernel).unwrap(),
            stencil1d(&x32, radius, Some(&w32), b, Backend::Cpu).unwrap(),
            "f32 {what}"
        );
        assert_eq!(
            ops::stencil1d_with(&x64, radius, Some(&w64), b, kernel).unwrap(),
            stencil1d(&x64, radius, Some(&w64), b, Backend::Cpu).unwrap(),
            "f64 {what}"
        );
        assert_eq!(
            ops::stencil1d_with(&xi, radius, None, b, kernel).unwrap(),
            stencil1d(&xi, radius, None, b, Backend::Cpu).unwrap(),
            "i32 {what}"
        );
        assert_eq!(
            ops::stencil1d_with(&xl, radius, None, b, kernel).unwrap(),
            stencil1d(&xl, radius, None, b, Backend::Cpu).unwrap(),
            "i64 {what}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stencil_l1_variant_matches_the_cpu() {
    let mut r = rng();
    for radius in [1usize, 3, 8, 17, 64] {
        for n in LENGTHS {
            stencil_kernel_case(&mut r, StencilKernel::L1, radius, n);
        }
    }
}

/// Small enough for compute-sanitizer (racecheck, synccheck, memcheck) in well under a minute:
/// every stencil kernel, type and boundary at a few radii and lengths across tile edges, every
/// transpose kernel and element size on odd shapes, every reversal kernel.
#[test]
#[ignore = "needs a CUDA GPU"]
fn small_ops_for_sanitizers() {
    let mut r = rng();
    for kernel in [StencilKernel::Shared, StencilKernel::L1] {
        for (radius, n) in [(1usize, 1usize), (3, 700), (64, 1000)] {
            stencil_kernel_case(&mut r, kernel, radius, n);
        }
    }
    for (rows, cols) in [(1, 1), (31, 33), (33, 65)] {
        transpose_case(rows, cols, |i| i as u8);
        transpose_case(rows, cols, |i| i as u16);
        transpose_case(rows, cols, |i| i as u32);
        transpose_case(rows, cols, |i| i as u64);
    }
    for n in [1usize, 2049, 5000] {
        reverse_case(n, |i| i as u8);
        reverse_case(n, |i| i as f32);
        reverse_case(n, |i| i as u64);
    }
}

/// Runs the shared-memory stencil built WITHOUT its barrier between staging the tile and reading
/// it. The result is undefined and not checked: `scripts/gpu-check ops` runs this test under
/// compute-sanitizer's racecheck and expects hazards to be reported.
#[test]
#[ignore = "needs a CUDA GPU (run under compute-sanitizer --tool racecheck)"]
fn stencil_without_barrier_for_racecheck() {
    let x: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    let w = vec![1.0f32; 2 * 8 + 1];
    let out =
        ops::stencil1d_without_barrier_for_racecheck(&x, 8, Some(&w), Boundary::Zero).unwrap();
    assert_eq!(out.len(), x.len());
}
