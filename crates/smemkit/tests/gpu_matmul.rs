//! The GPU matrix multiply against an f64 reference on fresh random inputs: every kernel, every
//! pair of transpose flags, alpha/beta, padded leading dimensions, and shapes that are multiples of
//! no tile (1x1x1, 17x33x65, 1000^3, 4097x4095x4099) beside squares from 1024 to 2048. When beta is
//! 0 the device's C is NaN-poisoned scratch (and the host's C is NaN too), so an output no thread
//! wrote, or a read of C the kernel must not make, fails the comparison. Padding between C's rows
//! must come back untouched.
//!
//! Beyond the public kernel choices, every variant the library can launch (each warp-tiled
//! configuration the autotuner may pick) runs with its operands aligned and misaligned on the
//! device (the 16-byte paths must switch off), cuBLAS is checked through the same harness (its
//! operand swap), and the TF32 mode against a TF32-sized bound.
//!
//! The error is componentwise: |C - ref| / (|alpha||A||B| + |beta||C|) < 1e-5 per entry (2e-3 for
//! TF32), so an entry whose dot product cancels is judged against its terms, not its value.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::matmul::cuda::autotune;
use smemkit::internals::matmul::cuda::cublas::CublasMath;
use smemkit::internals::matmul::cuda::{compile_variant, matmul_with, Engine, Variant, WarpConfig};
use smemkit::{
    matmul::{matmul, MatmulKernel, MatrixMut, MatrixRef},
    Backend,
};

/// How one case multiplies: through the public API with a kernel choice, or with an explicit
/// engine, the operands aligned on the device or placed 4 bytes off (`true`).
#[derive(Debug, Clone, Copy)]
enum Run {
    Kernel(MatmulKernel),
    With(Engine, bool),
}

/// Every FP32 kernel choice of the public API.
fn kernels() -> Vec<Run> {
    MatmulKernel::ALL.into_iter().map(Run::Kernel).collect()
}

/// Every FP32 variant the library can launch, aligned and misaligned: the four kernels of
/// matmul.cu and every warp-tiled configuration (the autotuner may pick any of them).
fn every_variant() -> Vec<Run> {
    let mut v: Vec<Variant> = [
        MatmulKernel::Tiled16,
        MatmulKernel::RegisterBlocked,
        MatmulKernel::Vectorized,
        MatmulKernel::AsyncCopy,
    ]
    .into_iter()
    .map(Variant::Classic)
    .collect();
    v.extend(WarpConfig::CANDIDATES.iter().map(|c| Variant::Warp(*c)));
    v.iter()
        .flat_map(|&x| {
            [
                Run::With(Engine::Variant(x), false),
                Run::With(Engine::Variant(x), true),
            ]
        })
        .collect()
}

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Elements a `rows x cols` view with leading dimension `ld` spans.
fn span(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

fn random(r: &mut Xoshiro256PlusPlus, len: usize) -> Vec<f32> {
    (0..len).map(|_| r.gen_range(-1.0f32..1.0)).collect()
}

fn strides(x: &MatrixRef<f32>) -> (isize, isize) {
    if x.transposed {
        (1, x.ld as isize)
    } else {
        (x.ld as isize, 1)
    }
}

/// alpha * op(A) * op(B) + beta * C in f64 (dense m x n), by matrixmultiply's dgemm over row
/// bands on every core. With `magnitude`, every operand is replaced by its absolute value: that
/// gives |alpha| |op(A)| |op(B)| + |beta| |C|, the scale of the rounding error of each entry (a
/// float32 dot product of length k errs by up to about k * 2^-24 of it, whatever the cancellation).
fn reference(
    a: &MatrixRef<f32>,
    b: &MatrixRef<f32>,
    c: &[f32],
    ldc: usize,
    alpha: f32,
    beta: f32,
    magnitude: bool,
) -> Vec<f64> {
    let f = |v: f32| {
        if magnitude {
            (v as f64).abs()
        } else {
            v as f64
        }
    };
    let (alpha, beta) = (f(alpha), f(beta));
    let (m, k) = a.op_shape();
    let n = b.op_shape().1;
    let af: Vec<f64> = a.data.iter().map(|&v| f(v)).collect();
    let bf: Vec<f64> = b.data.iter().map(|&v| f(v)).collect();
    let mut out = vec![0.0f64; m * n];
    if beta != 0.0 {
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = beta * f(c[i * ldc + j]);
            }
        }
    }
    let (rsa, csa) = strides(a);
    let (rsb, csb) = strides(b);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let band = m.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (i, chunk) in out.chunks_mut(band * n).enumerate() {
            let (af, bf) = (&af, &bf);
            s.spawn(move || {
                let r0 = i * band;
                let rows = chunk.len() / n;
                // SAFETY: op(A)'s rows r0..r0+rows lie in `af` (the same layout as A's checked
                // view), op(B) in `bf`, and the band's rows x n outputs in `chunk`.
                unsafe {
                    matrixmultiply::dgemm(
                        rows,
                        k,
                        n,
                        alpha,
                        af.as_ptr().offset(r0 as isize * rsa),
                        rsa,
                        csa,
                        bf.as_ptr(),
                        rsb,
                        csb,
                        1.0,
                        chunk.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            });
        }
    });
    out
}

/// One problem: random op(A) (m x k) and op(B) (k x n) stored with the given transposes and row
/// padding, C with its own padding; every run in `kernels` against one reference, within 1e-5.
fn case(
    r: &mut Xoshiro256PlusPlus,
    shape: (usize, usize, usize),
    pair: (bool, bool),
    pads: (usize, usize, usize),
    alpha: f32,
    beta: f32,
    kernels: &[Run],
) {
    case_within(r, shape, pair, pads, (alpha, beta), kernels, 1e-5);
}

/// As [`case`] with a componentwise tolerance `tol`.
fn case_within(
    r: &mut Xoshiro256PlusPlus,
    (m, n, k): (usize, usize, usize),
    (ta, tb): (bool, bool),
    (pad_a, pad_b, pad_c): (usize, usize, usize),
    (alpha, beta): (f32, f32),
    kernels: &[Run],
    tol: f64,
) {
    let (ar, ac) = if ta { (k, m) } else { (m, k) };
    let (br, bc) = if tb { (n, k) } else { (k, n) };
    let (lda, ldb, ldc) = (ac + pad_a, bc + pad_b, n + pad_c);
    let av = random(r, span(ar, ac, lda));
    let bv = random(r, span(br, bc, ldb));
    let mut c0 = random(r, span(m, n, ldc));
    if beta == 0.0 {
        c0.iter_mut().for_each(|v| *v = f32::NAN);
    }
    let a = MatrixRef::new(&av, ar, ac).with_ld(lda);
    let a = if ta { a.transposed() } else { a };
    let b = MatrixRef::new(&bv, br, bc).with_ld(ldb);
    let b = if tb { b.transposed() } else { b };
    let want = reference(&a, &b, &c0, ldc, alpha, beta, false);
    let scale = reference(&a, &b, &c0, ldc, alpha, beta, true);
    for &kernel in kernels {
        let what = format!(
            "{kernel:?} {m}x{n}x{k} ta {ta} tb {tb} pads {pad_a},{pad_b},{pad_c} alpha {alpha} beta {beta}"
        );
        let mut c = c0.clone();
        let out = MatrixMut::new(&mut c, m, n).with_ld(ldc);
        match kernel {
            Run::Kernel(kernel) => matmul(a, b, out, alpha, beta, Backend::Cuda, kernel),
            Run::With(engine, misalign) => {
                let mut out = out;
                matmul_with(&a, &b, &mut out, alpha, beta, engine, misalign)
            }
        }
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut worst = 0.0f64;
        for i in 0..m {
            for j in 0..n {
                let got = c[i * ldc + j] as f64;
                assert!(got.is_finite(), "{what}: C[{i}][{j}] = {got}");
                let bound = scale[i * n + j].max(f64::MIN_POSITIVE);
                worst = worst.max((got - want[i * n + j]).abs() / bound);
            }
            for j in n..ldc {
                if let Some(&v) = c.get(i * ldc + j) {
                    assert_eq!(
                        v.to_bits(),
                        c0[i * ldc + j].to_bits(),
                        "{what}: padding C[{i}][{j}] changed"
                    );
                }
            }
        }
        // Componentwise: each entry's error against its own |alpha||A||B| + |beta||C|, so that one
        // entry whose terms cancel (a 1x1 result of a long dot product) is judged fairly.
        let rel = worst;
        eprintln!("{what}: relative error {rel:.2e}");
        assert!(
            rel < tol,
            "{what}: relative error {rel:.2e} (tolerance {tol:.0e})"
        );
    }
}

const PAIRS: [(bool, bool); 4] = [(false, false), (true, false), (false, true), (true, true)];

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_kernel_on_small_and_odd_shapes_with_every_layout() {
    let mut r = rng();
    let shapes = [
        (1, 1, 1),
        (1, 1, 300),
        (17, 33, 65),
        (1, 257, 129),
        (129, 1, 17),
        (127, 129, 131),
        (128, 128, 16),
        (255, 257, 33),
        (300, 200, 1),
    ];
    for shape in shapes {
        for pair in PAIRS {
            // Dense (16-byte paths where ld allows), odd padding (scalar paths), padding by 4.
            for pads in [(0, 0, 0), (1, 3, 5), (4, 8, 4)] {
                for (alpha, beta) in [(1.0f32, 0.0f32), (-0.75, 1.5), (2.0, -1.0)] {
                    case(&mut r, shape, pair, pads, alpha, beta, &kernels());
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_kernel_on_the_issue_shapes() {
    let mut r = rng();
    for shape in [
        (1000, 1000, 1000),
        (1024, 1024, 1024),
        (1536, 1536, 1536),
        (2048, 2048, 2048),
        (4097, 4095, 4099),
    ] {
        case(
            &mut r,
            shape,
            (false, false),
            (0, 0, 0),
            1.0,
            0.0,
            &kernels(),
        );
    }
    // Transposes, alpha/beta and padding at a size no tile divides.
    for pair in PAIRS {
        case(
            &mut r,
            (1000, 1000, 1000),
            pair,
            (3, 4, 1),
            0.5,
            -2.0,
            &kernels(),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn column_major_inputs_and_the_auto_backend() {
    // A column-major 3 x 2 [[1, 2], [3, 4], [5, 6]] (ld 4: one unused element per column) times the
    // row-major 2 x 1 [1, 1].
    let a = [1.0f32, 3.0, 5.0, -9.0, 2.0, 4.0, 6.0];
    let b = [1.0f32, 1.0];
    for kernel in MatmulKernel::ALL {
        for backend in [Backend::Cuda, Backend::Auto] {
            let mut c = [f32::NAN; 3];
            matmul(
                MatrixRef::col_major(&a, 3, 2, 4),
                MatrixRef::new(&b, 2, 1),
                MatrixMut::new(&mut c, 3, 1),
                1.0,
                0.0,
                backend,
                kernel,
            )
            .unwrap();
            assert_eq!(c, [3.0, 7.0, 11.0], "{kernel:?} {backend:?}");
        }
    }
}

/// Compiles every variant of `runs` for every transpose pair on all cores (NVRTC is
/// single-threaded; one by one, the dozens of modules would take most of a minute).
fn precompile(runs: &[Run]) {
    let g = smemkit::internals::gpu::gpu().unwrap();
    let mut jobs: Vec<(Variant, (bool, bool))> = Vec::new();
    for run in runs {
        if let Run::With(Engine::Variant(v), _) = run {
            for pair in PAIRS {
                if !jobs.contains(&(*v, pair)) {
                    jobs.push((*v, pair));
                }
            }
        }
    }
    std::thread::scope(|s| {
        for (v, (ta, tb)) in jobs {
            let g = &g;
            s.spawn(move || {
                g.bind().unwrap();
                compile_variant(g, v, ta, tb).unwrap_or_else(|e| panic!("{}: {e}", v.name()))
            });
        }
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_variant_aligned_and_misaligned_on_odd_shapes() {
    precompile(&every_variant());
    let mut r = rng();
    for shape in [
        (1, 1, 1),
        (17, 33, 65),
        (127, 129, 131),
        (255, 257, 33),
        (130, 66, 300),
        // M and N multiples of 4 but not of the tiles: the prefetching kernel shifts its edge
        // tiles back inside A and B in both directions (and stores only what they own)
        (260, 388, 72),
    ] {
        for pair in PAIRS {
            for pads in [(0, 0, 0), (1, 3, 5), (4, 8, 4)] {
                for (alpha, beta) in [(1.0f32, 0.0f32), (-0.75, 1.5)] {
                    case(&mut r, shape, pair, pads, alpha, beta, &every_variant());
                }
            }
        }
    }
    // A product with several block rows and columns of every tile size, and a long K.
    case(
        &mut r,
        (513, 385, 1031),
        (false, false),
        (0, 0, 0),
        1.0,
        0.0,
        &every_variant(),
    );
}

/// The prefetching loop's configurations (`-p`), aligned and misaligned.
fn prefetching_variants() -> Vec<Run> {
    WarpConfig::CANDIDATES
        .iter()
        .filter(|c| c.prefetch)
        .flat_map(|&c| {
            [
                Run::With(Engine::Variant(Variant::Warp(c)), false),
                Run::With(Engine::Variant(Variant::Warp(c)), true),
            ]
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn prefetching_loop_on_every_count_of_k_tiles() {
    // The prefetching loop reads the next tile's first fragments across the barrier and rotates
    // its stages by hand: K from under one tile to several turns of the stage ring (BK 8 and 16,
    // 2 and 3 stages), with a partial last tile or not, and split K leaving parts with no tile.
    let runs = prefetching_variants();
    precompile(&runs);
    let mut r = rng();
    for k in [1, 7, 8, 9, 16, 17, 24, 31, 40, 48, 49, 100] {
        for pair in PAIRS {
            for pads in [(0, 0, 0), (1, 3, 5)] {
                case(&mut r, (131, 259, k), pair, pads, -0.75, 1.5, &runs);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_peer_agrees_with_the_reference_for_every_layout() {
    // Checks the operand swap that turns the row-major product into cuBLAS's column-major one.
    let mut r = rng();
    let fp32 = [Run::With(Engine::Cublas(CublasMath::Fp32), false)];
    for pair in PAIRS {
        for pads in [(0, 0, 0), (1, 3, 5)] {
            case(&mut r, (67, 45, 33), pair, pads, 0.5, -2.0, &fp32);
            case(&mut r, (1000, 1000, 1000), pair, pads, 1.0, 0.0, &fp32);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tf32_kernel_and_cublas_tf32_stay_within_tf32_rounding() {
    // TF32 keeps 10 of FP32's 23 mantissa bits: each product errs by up to about 2^-10 of its
    // magnitude, so the componentwise bound is 2e-3 (and an FP32-accurate result would pass too:
    // the test shows the mode works, not that it is less accurate).
    let mut r = rng();
    let tf32 = [
        Run::Kernel(MatmulKernel::Tf32),
        Run::With(Engine::Variant(Variant::Tf32(WarpConfig::TF32)), true),
        Run::With(Engine::Cublas(CublasMath::Tf32), false),
    ];
    for pair in PAIRS {
        for pads in [(0, 0, 0), (1, 3, 5)] {
            for shape in [(1, 1, 1), (17, 33, 65), (255, 257, 33), (1000, 1000, 1000)] {
                case_within(&mut r, shape, pair, pads, (0.5, -2.0), &tf32, 2e-3);
                case_within(&mut r, shape, pair, pads, (1.0, 0.0), &tf32, 2e-3);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuner_times_every_candidate_and_remembers_its_choice() {
    use smemkit::internals::matmul::cuda::DenseProduct;
    let g = smemkit::internals::gpu::gpu().unwrap();
    g.bind().unwrap();
    let (m, n, k) = (1000, 1000, 1000);
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * n];
    let d = DenseProduct::upload(&g, &a, &b, (m, n, k)).unwrap();
    let (best, times) = autotune::measure(&g, &d.problem).unwrap();
    for (v, t) in &times {
        eprintln!("{:40} {:?} ms", v.name(), t);
        assert!(t.is_some(), "{} could not run", v.name());
    }
    assert_eq!(times.len(), autotune::candidates().len());
    eprintln!("fastest: {}", best.name());
    let chosen = autotune::choose(&g, &d.problem).unwrap();
    assert_eq!(autotune::cached(&g, &d.problem), Some(chosen));
    // The tuner wrote to scratch: C is still the NaN it was created with.
    assert!(d.read_c(&g).unwrap().iter().all(|v| v.is_nan()));
}

/// Small enough for compute-sanitizer (memcheck, racecheck, synccheck): every variant, TF32
/// included, once per layout on shapes that are multiples of no tile, aligned and misaligned.
/// The first shape's odd padding leaves most 16-byte paths off; the other two have every leading
/// dimension a multiple of 4, so that the 16-byte paths run on every operand with groups that
/// cross the edge of the matrix in its last row, at the very end of the device allocation (where
/// memcheck caught a partial 16-byte cp.async), down to 1 x 1 x 1 (4-byte allocations).
#[test]
#[ignore = "needs a CUDA GPU"]
fn small_run_for_sanitizers() {
    precompile(&every_variant());
    let mut r = rng();
    let tf32 = [
        Run::With(Engine::Variant(Variant::Tf32(WarpConfig::TF32)), false),
        Run::With(Engine::Variant(Variant::Tf32(WarpConfig::TF32)), true),
    ];
    for (shape, pads) in [
        ((67, 45, 33), (1, 0, 3)),
        ((65, 45, 33), (3, 3, 3)),
        ((1, 1, 1), (3, 3, 3)),
    ] {
        for pair in PAIRS {
            case(&mut r, shape, pair, pads, 1.0, 0.5, &every_variant());
            case_within(&mut r, shape, pair, pads, (1.0, 0.5), &tf32, 2e-3);
        }
    }
}
