//! The device estimators against the CPU engine's: the kernels' summation tree and keys replayed
//! on the host (no GPU needed), the kernels' compilation, and the GPU's bins on fresh random
//! samples of every type (ignored without a GPU).

use super::*;
use crate::histogram::bins::estimators::{estimate_bin_count, histogram_bin_edges};
use crate::histogram::bins::stats::{pairwise_f32, pairwise_f64};
use crate::histogram::cuda::estimate_passes::{
    defines, entries, node_depth, warp_levels, CHAIN_ENTRIES,
};
use crate::histogram::cuda::estimate_select::{agreeing, digit_of, gather_pays};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The host's replay of `node_at` in estimate.cu.
fn node_at(m: usize, depth: u32, t: usize) -> (usize, usize) {
    let (mut s, mut z) = (0, m);
    for d in (0..depth).rev() {
        let n2 = z / 2 - (z / 2) % 8;
        if (t >> d) & 1 == 1 {
            s += n2;
            z -= n2;
        } else {
            z = n2;
        }
    }
    (s, z)
}

/// Splits numpy's tree makes below a node of `m` values.
fn levels(m: usize) -> u32 {
    if m <= 128 {
        0
    } else {
        let n2 = m / 2 - (m / 2) % 8;
        1 + levels(n2).max(levels(m - n2))
    }
}

/// The sizes of the nodes of numpy's tree over `m` values at `depth`, left to right, each with
/// the smallest node on its way down from the root (the root excluded; `usize::MAX` at depth 0).
fn nodes_at(m: usize, depth: u32, above: usize, out: &mut Vec<(usize, usize)>) {
    if depth == 0 {
        out.push((m, above));
        return;
    }
    let n2 = m / 2 - (m / 2) % 8;
    let above = above.min(m);
    nodes_at(n2, depth - 1, above, out);
    nodes_at(m - n2, depth - 1, above, out);
}

#[test]
fn the_sums_depth_holds_nodes_of_one_or_two_leaves_below_split_nodes() {
    // What `sum_nodes` in estimate.cu assumes of node_depth: every node at the depth holds at
    // most 240 values (NODE_ROWS rows and a tail) and is one leaf or splits once into two, and
    // every node above it is split (more than 128 values), so the tree above is perfect.
    let mut r = Xoshiro256PlusPlus::seed_from_u64(230);
    let mut sizes: Vec<usize> = (0..=20_000).collect();
    sizes.extend([
        (1 << 20) + 7,
        1 << 20,
        (1 << 28) - 1,
        1 << 28,
        (1 << 28) + 5,
    ]);
    sizes.extend((0..40).map(|_| r.gen_range(20_000..50_000_000)));
    for m in sizes {
        let depth = node_depth(m);
        let mut nodes = Vec::new();
        nodes_at(m, depth, usize::MAX, &mut nodes);
        assert_eq!(nodes.len(), 1 << depth, "m {m}");
        assert_eq!(nodes.iter().map(|n| n.0).sum::<usize>(), m, "m {m}");
        let mut start = 0;
        for (t, &(z, above)) in nodes.iter().enumerate() {
            assert!(z <= 240 && levels(z) <= 1, "m {m}: node {t} of {z} values");
            assert!(
                depth == 0 || above > 128,
                "m {m}: node {t} below a node of {above}"
            );
            if t < 64 || t + 64 > nodes.len() || t % 997 == 0 {
                assert_eq!(node_at(m, depth, t), (start, z), "m {m}: node {t}");
            }
            start += z;
        }
    }
}

/// A float type for the replays of the kernels' additions.
trait Acc: Copy + std::ops::Add<Output = Self> + From<f32> {
    fn bits(self) -> u64;
}
impl Acc for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Acc for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The host's replay of `group_node` in estimate.cu: what each lane j of a group loads and adds,
/// in the kernel's order; every lane's result.
fn group_node<F: Acc>(a: &[F]) -> [F; 8] {
    let size = a.len();
    let rows = size >> 3;
    let split = size > 128;
    let left_rows = if split { (size / 2) >> 3 } else { rows };
    // Lane j's chains over its column (value j of each row), each from -0.0.
    let mut left: [F; 8] = [F::from(-0.0); 8];
    let mut right: [F; 8] = [F::from(-0.0); 8];
    for j in 0..8 {
        for k in 0..rows {
            let t = a[8 * k + j];
            if k < left_rows {
                left[j] = left[j] + t;
            } else {
                right[j] = right[j] + t;
            }
        }
    }
    // The butterfly: lane j adds its value and lane j ^ o's, in that order.
    for o in [1, 2, 4] {
        let (l, r) = (left, right);
        for j in 0..8 {
            left[j] = l[j] + l[j ^ o];
            right[j] = r[j] + r[j ^ o];
        }
    }
    std::array::from_fn(|j| {
        if rows == 0 {
            let mut s = F::from(-0.0);
            for &x in a {
                s = s + x;
            }
            F::from(0.0) + s
        } else if split {
            let mut r = right[j];
            for &x in &a[8 * rows..] {
                r = r + x;
            }
            left[j] + r
        } else {
            let mut l = left[j];
            for &x in &a[8 * rows..] {
                l = l + x;
            }
            l
        }
    })
}

/// The host's replay of `sum_into` on one problem of `v.len()` values: the nodes at the depth by
/// groups of eight lanes, the warp's xor-shuffle additions of four nodes (each group's own first),
/// then est_combine's perfect tree over what the warps wrote.
fn device_sum<F: Acc>(v: &[F]) -> F {
    let m = v.len();
    let depth = node_depth(m);
    let g = warp_levels(depth);
    let mut sums: Vec<F> = (0..1usize << depth)
        .map(|t| {
            let (s, z) = node_at(m, depth, t);
            let lanes = group_node(&v[s..s + z]);
            assert!(lanes.iter().all(|x| x.bits() == lanes[0].bits()), "m {m}");
            lanes[0]
        })
        .collect();
    for level in 0..g {
        let o = 1usize << level;
        let before = sums.clone();
        for (t, x) in sums.iter_mut().enumerate() {
            *x = before[t] + before[t ^ o];
            assert_eq!(x.bits(), (before[t ^ o] + before[t]).bits(), "m {m}");
        }
    }
    let mut level: Vec<F> = sums.into_iter().step_by(1 << g).collect();
    assert_eq!(level.len(), 1 << (depth - g), "m {m}");
    while level.len() > 1 {
        level = level.chunks(2).map(|p| p[0] + p[1]).collect();
    }
    level[0]
}

#[test]
fn the_device_sum_is_numpys_pairwise_sum() {
    // Every size up to 600 (leaves with every tail, nodes of one and two leaves, depths 0 to 2),
    // the thresholds, numpy's cast block, large odd sizes; values over many magnitudes and signs
    // (any other order of the additions rounds differently) and -0.0 alone (numpy's `-0.0 + ...`
    // start below 8 values, r[j] = a[j] above).
    let mut r = Xoshiro256PlusPlus::seed_from_u64(23);
    let mut sizes: Vec<usize> = (0..600).collect();
    sizes.extend([1000, 4095, 4096, 8191, 8192, 8193, 65_537, (1 << 20) + 7]);
    sizes.extend((0..12).map(|_| r.gen_range(600..3_000_000)));
    for m in sizes {
        let v: Vec<f64> = (0..m)
            .map(|_| r.gen_range(-1.0..1.0) * 10f64.powi(r.gen_range(-12..12)))
            .collect();
        assert_eq!(
            device_sum(&v).to_bits(),
            pairwise_f64(&v).to_bits(),
            "f64 m {m}"
        );
        let w: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        assert_eq!(
            device_sum(&w).to_bits(),
            pairwise_f32(&w).to_bits(),
            "f32 m {m}"
        );
        if m < 300 {
            let zeros = vec![-0.0f32; m];
            assert_eq!(
                device_sum(&zeros).to_bits(),
                pairwise_f32(&zeros).to_bits(),
                "-0 m {m}"
            );
        }
    }
}

#[test]
fn radix_select_passes_cover_the_keys_from_the_top() {
    for width in [8usize, 16, 32, 64] {
        let passes = width.div_ceil(11);
        let mut covered = 0u128;
        let mut top = width;
        for pass in 0..passes {
            let (shift, bits) = digit_of(width, pass);
            assert!(bits > 0 && bits <= 11, "width {width} pass {pass}");
            assert_eq!(
                shift + bits,
                top,
                "width {width} pass {pass}: from the top down"
            );
            covered |= ((1u128 << bits) - 1) << shift;
            top = shift;
        }
        assert_eq!(top, 0, "width {width}");
        assert_eq!(covered, (1u128 << width) - 1, "width {width}");
    }
}

#[test]
fn gathering_pays_only_when_the_agreeing_samples_are_few() {
    // Ranks sharing a prefix share its samples: counted once.
    assert_eq!(agreeing(&[7, 7, 3, 3], &[10, 10, 4, 4]), 14);
    assert_eq!(agreeing(&[1, 2, 3, 4], &[1, 2, 3, 4]), 10);
    // float32: two passes left, worth it below a third of the samples; one pass left: never.
    let n = 3_000_000;
    assert!(gather_pays(n / 3 - 1, n, 2));
    assert!(!gather_pays(n / 3, n, 2));
    assert!(!gather_pays(0, n, 1));
    // float64: five passes left, worth it below two thirds.
    assert!(gather_pays(2 * n / 3 - 1, n, 5));
    assert!(!gather_pays(2 * n / 3 + 1, n, 5));
    assert!(!gather_pays(n, n, 5));
}

#[test]
fn only_estimators_that_sum_the_whole_array_fuse_the_sum_into_the_first_pass() {
    // numpy sums the trimmed array when a range is given: its tree is not the whole array's, so
    // the sum waits for the packed samples (the first pass counts the tiles to pack instead); the
    // quartiles' first digits fuse either way. bfloat16 sums are chains, which no first pass
    // starts.
    for rule in GPU_RULES {
        let (free, trimmed) = (
            first_pass(rule, false, Kind::F32),
            first_pass(rule, true, Kind::F32),
        );
        let (free16, trimmed16) = (
            first_pass(rule, false, Kind::BF16),
            first_pass(rule, true, Kind::BF16),
        );
        match rule {
            BinRule::Scott | BinRule::Doane => {
                assert_eq!((free, trimmed), (First::Sum, First::Tiles), "{rule:?}");
                assert_eq!(
                    (free16, trimmed16),
                    (First::Extremes, First::Tiles),
                    "{rule:?}"
                );
            }
            BinRule::Fd | BinRule::Auto => {
                assert_eq!((free, trimmed), (First::Digits, First::Digits), "{rule:?}")
            }
            _ => assert_eq!(
                (free, trimmed),
                (First::Extremes, First::Extremes),
                "{rule:?}"
            ),
        }
    }
}

/// The host's replay of `key_of` in estimate.cu.
fn key_of<T: Sample>(kind: Kind, x: T) -> u64 {
    let size = std::mem::size_of::<T>();
    let mut bytes = [0u8; 8];
    // SAFETY: T is a plain number of `size` <= 8 bytes.
    unsafe { std::ptr::copy_nonoverlapping(&x as *const T as *const u8, bytes.as_mut_ptr(), size) };
    let bits = u64::from_le_bytes(bytes);
    match kind {
        Kind::F32 => {
            let u = bits as u32;
            (if u & 0x8000_0000 != 0 {
                !u
            } else {
                u | 0x8000_0000
            }) as u64
        }
        Kind::F64 => {
            if bits & (1 << 63) != 0 {
                !bits
            } else {
                bits | (1 << 63)
            }
        }
        Kind::F16 | Kind::BF16 => {
            let u = bits as u16;
            (if u & 0x8000 != 0 { !u } else { u | 0x8000 }) as u64
        }
        Kind::Signed => bits ^ (1u64 << (8 * size - 1)),
        Kind::Unsigned => bits,
    }
}

#[test]
fn keys_keep_the_samples_order_and_give_them_back() {
    fn check<T: Sample + std::fmt::Debug>(kind: Kind, mut v: Vec<T>) {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let keys: Vec<u64> = v.iter().map(|&x| key_of(kind, x)).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{v:?}");
        for (&x, &k) in v.iter().zip(&keys) {
            assert_eq!(
                value_of::<T>(kind, k).to_f64().to_bits(),
                x.to_f64().to_bits()
            );
        }
    }
    check(
        Kind::F32,
        vec![
            -f32::INFINITY,
            -3.5,
            -0.0,
            1e-45,
            2.0,
            f32::MAX,
            f32::INFINITY,
        ],
    );
    check(Kind::F64, vec![f64::MIN, -1e-300, 0.0, 7.25, f64::INFINITY]);
    check(
        Kind::F16,
        [-65504.0, -2.5, -0.0, 6e-8, 1.0, 65504.0, f32::INFINITY]
            .map(half::f16::from_f32)
            .to_vec(),
    );
    check(
        Kind::BF16,
        [-3e38, -2.5, -0.0, 1e-40, 1.0, 3e38, f32::INFINITY]
            .map(half::bf16::from_f32)
            .to_vec(),
    );
    check(Kind::Signed, vec![i8::MIN, -1, 0, 1, i8::MAX]);
    check(Kind::Signed, vec![i64::MIN, -5, 0, i64::MAX]);
    check(Kind::Unsigned, vec![0u16, 1, 300, u16::MAX]);
    check(Kind::Unsigned, vec![0u64, 1 << 60, u64::MAX]);
}

#[test]
fn estimate_kernels_compile_for_hopper_for_every_sample_type() {
    if !crate::gpu::compile::tests::toolchain() {
        return;
    }
    for t in SampleType::ALL {
        let (d, kind) = defines(t).unwrap();
        let opts = crate::gpu::compile::options("compute_90a", &d);
        let ptx = crate::gpu::compile::compile_uncached(&crate::gpu::compile::ESTIMATE, &opts)
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        for e in entries(kind) {
            assert!(ptx.contains(&format!(".entry {e}(")), "{t}: {e}");
        }
        // The chain's kernels are bfloat16's alone.
        assert_eq!(
            CHAIN_ENTRIES
                .iter()
                .all(|e| ptx.contains(&format!(".entry {e}("))),
            t == SampleType::BF16,
            "{t}"
        );
    }
}

/// A sample drawn as f64, in the type.
trait Draw: Sample + std::fmt::Debug {
    fn from_f64(x: f64) -> Self;
    /// The values the type spans in the tests.
    const SPAN: (f64, f64);
}

macro_rules! draw {
    ($t:ty, $lo:expr, $hi:expr) => {
        impl Draw for $t {
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            const SPAN: (f64, f64) = ($lo, $hi);
        }
    };
}
draw!(u8, 0.0, 255.0);
draw!(u16, 0.0, 60_000.0);
draw!(u32, 0.0, 4e9);
draw!(u64, 0.0, 1e18);
draw!(i8, -128.0, 127.0);
draw!(i16, -30_000.0, 30_000.0);
draw!(i32, -2e9, 2e9);
draw!(i64, -1e18, 1e18);
draw!(f32, -3.0, 5.0);
draw!(f64, -3.0, 5.0);

// float16 over a narrow span: numpy's float16 variance of a million samples overflows past 65504
// over (-3, 5), and then both engines fail alike; here the sums stay finite.
impl Draw for half::f16 {
    fn from_f64(x: f64) -> Self {
        half::f16::from_f64(x)
    }
    const SPAN: (f64, f64) = (-0.03, 0.05);
}

// bfloat16 has float32's range: its sums stall (a total large beside the values stops moving)
// rather than overflow, which is what the chain's skips rely on.
impl Draw for half::bf16 {
    fn from_f64(x: f64) -> Self {
        half::bf16::from_f64(x)
    }
    const SPAN: (f64, f64) = (-3.0, 5.0);
}

const GPU_RULES: [BinRule; 7] = [
    BinRule::Sqrt,
    BinRule::Sturges,
    BinRule::Rice,
    BinRule::Scott,
    BinRule::Doane,
    BinRule::Fd,
    BinRule::Auto,
];

/// `n` samples: uniform over the type's test span, normal around its middle, or heavy ties.
fn samples<T: Draw>(dist: &str, n: usize, r: &mut Xoshiro256PlusPlus) -> Vec<T>
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let (lo, hi) = T::SPAN;
    let mid = (lo + hi) / 2.0;
    (0..n)
        .map(|_| {
            let x = match dist {
                "uniform" => r.gen_range(lo..hi),
                "normal" => {
                    // Box-Muller.
                    let (u, v): (f64, f64) = (r.gen_range(1e-12..1.0), r.gen());
                    let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                    (mid + z * (hi - lo) / 16.0).clamp(lo, hi)
                }
                _ => [lo, mid, mid, mid, hi, lo + (hi - lo) / 3.0][r.gen_range(0..6)],
            };
            T::from_f64(x)
        })
        .collect()
}

/// The GPU's estimate of `host` (copied to the device) against the CPU engine's.
fn compare<T: Draw>(
    gpu: &Arc<Gpu>,
    host: &[T],
    rule: BinRule,
    range: Option<(f64, f64)>,
    what: &str,
    unaligned: bool,
) where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    // The CPU engine's count, then its edges for that count: both can fail (a degenerate range
    // of huge integers estimates one bin whose edges float64 cannot separate).
    let cpu = estimate_bin_count(host.into(), rule, range).and_then(|nbins| {
        let spec = BinSpec::Uniform { nbins, range };
        histogram_bin_edges(host.into(), &spec).map(|edges| (nbins, edges))
    });
    let stream = &gpu.stream;
    // One sample of padding in front: the samples start 4 bytes past an allocation's alignment
    // when `unaligned` (the float32 sums' per-value path; aligned starts take 16-byte loads).
    let lead = usize::from(unaligned);
    let padded: Vec<T> = host[..lead.min(host.len())]
        .iter()
        .chain(host)
        .copied()
        .collect();
    // Uploaded as bytes (cudarc has no float16 type here) and read by the raw entry point.
    let size = std::mem::size_of::<T>();
    // SAFETY: `padded` holds plain numbers; its bytes are read once, while it lives.
    let bytes =
        unsafe { std::slice::from_raw_parts(padded.as_ptr() as *const u8, padded.len() * size) };
    let dev = stream.clone_htod(bytes).unwrap();
    let at = dev.device_ptr(stream).0 + ((padded.len() - host.len()) * size) as u64;
    // SAFETY: `dev` holds the padded samples until this call returns (it synchronises `stream`),
    // a stream of the GPU's context.
    let got = unsafe {
        estimate_bins_raw(
            gpu,
            at,
            host.len(),
            T::TYPE,
            rule,
            range,
            stream.cu_stream(),
        )
    };
    match (cpu, got) {
        (Ok((nbins, want)), Ok(est)) => {
            assert_eq!(est.nbins, nbins, "{what}");
            let same = want
                .iter()
                .zip(&est.edges)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same && want.len() == est.edges.len(), "{what}: edges");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
        (a, b) => panic!("{what}: CPU {a:?}, GPU {b:?}"),
    }
}

fn compare_type<T: Draw>(gpu: &Arc<Gpu>, sizes: &[usize], seed: u64)
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (lo, hi) = T::SPAN;
    let inner = (lo + (hi - lo) * 0.2, lo + (hi - lo) * 0.7);
    for &n in sizes {
        for dist in ["uniform", "normal", "ties"] {
            let host = samples::<T>(dist, n, &mut r);
            // A range around every sample too: nothing to pack, the input is summed.
            for range in [
                None,
                Some(inner),
                Some((lo, lo)),
                Some((lo - 1.0, hi + 1.0)),
            ] {
                for rule in GPU_RULES {
                    let what = format!("{} {dist} n {n} range {range:?} {}", T::TYPE, rule.name());
                    compare(gpu, &host, rule, range, &what, false);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_float32_estimates_from_an_unaligned_start_are_the_cpu_engines() {
    // Float32 samples starting 4 bytes past 16-byte alignment: the sums' per-value path, and
    // past the window quartiles' threshold the window pass's strided loads.
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(31);
    for n in [8usize, 129, 257, 1793, 65_537, 1_000_003, 2_100_001] {
        for dist in ["uniform", "normal", "ties"] {
            let host = samples::<f32>(dist, n, &mut r);
            for rule in GPU_RULES {
                let what = format!("unaligned f32 {dist} n {n} {}", rule.name());
                compare(&gpu, &host, rule, None, &what, true);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_estimates_are_the_cpu_engines_for_every_sample_type() {
    let gpu = crate::gpu::gpu().unwrap();
    let small = [0, 1, 2, 3, 9, 1000, 100_003];
    compare_type::<u8>(&gpu, &small, 1);
    compare_type::<u16>(&gpu, &small, 2);
    compare_type::<u32>(&gpu, &small, 3);
    compare_type::<u64>(&gpu, &small, 4);
    compare_type::<i8>(&gpu, &small, 5);
    compare_type::<i16>(&gpu, &small, 6);
    compare_type::<i32>(&gpu, &small, 7);
    compare_type::<i64>(&gpu, &small, 8);
    compare_type::<f32>(&gpu, &small, 9);
    compare_type::<f64>(&gpu, &small, 10);
    compare_type::<half::f16>(&gpu, &small, 16);
    compare_type::<half::bf16>(&gpu, &small, 26);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_estimates_of_millions_of_samples_are_the_cpu_engines() {
    // Deep trees (node depth > 0), several cast blocks for integers, several tiles to pack.
    let gpu = crate::gpu::gpu().unwrap();
    let large = [2_500_001];
    compare_type::<f32>(&gpu, &large, 11);
    compare_type::<f64>(&gpu, &large, 12);
    compare_type::<i64>(&gpu, &large, 13);
    compare_type::<u16>(&gpu, &large, 14);
    compare_type::<half::f16>(&gpu, &large, 17);
    compare_type::<half::bf16>(&gpu, &large, 27);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_estimates_treat_nan_as_the_cpu_engine() {
    // numpy: NaN makes the data's range NaN (an error); with a range, NaN is trimmed away.
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(15);
    let mut v = samples::<f32>("normal", 10_000, &mut r);
    v[1234] = f32::NAN;
    let mut w = samples::<f64>("uniform", 10_000, &mut r);
    w[9999] = f64::NAN;
    for rule in GPU_RULES {
        for range in [None, Some((-1.0, 2.0))] {
            compare(
                &gpu,
                &v,
                rule,
                range,
                &format!("f32 NaN {range:?} {}", rule.name()),
                false,
            );
            compare(
                &gpu,
                &w,
                rule,
                range,
                &format!("f64 NaN {range:?} {}", rule.name()),
                false,
            );
        }
    }
    let dev = gpu.stream.clone_htod(&v).unwrap();
    let e = estimate_bins(&gpu, &dev.as_view(), BinRule::Auto, None, &gpu.stream).unwrap_err();
    assert!(matches!(e, Error::NonFiniteData { .. }), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_refuses_bad_ranges_clearly() {
    let gpu = crate::gpu::gpu().unwrap();
    let dev = gpu.stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    for rule in [BinRule::Fd, BinRule::Stone] {
        let e =
            estimate_bins(&gpu, &dev.as_view(), rule, Some((2.0, 1.0)), &gpu.stream).unwrap_err();
        assert!(matches!(e, Error::InvertedRange { .. }), "{e}");
    }
}

/// Stone's rule counts every candidate on the device: the CPU engine's choice, for float and
/// integer samples, with and without a range (a one-value range widened by numpy's 0.5).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_stone_is_the_cpu_engines() {
    fn each<T: Draw>(gpu: &Arc<Gpu>, seed: u64)
    where
        for<'a> &'a [T]: Into<Samples<'a>>,
    {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (lo, hi) = T::SPAN;
        let inner = (lo + (hi - lo) * 0.2, lo + (hi - lo) * 0.7);
        for n in [0usize, 1, 2, 9, 1000, 20_000] {
            for dist in ["uniform", "normal", "ties"] {
                let host = samples::<T>(dist, n, &mut r);
                // A range around every sample too: nothing to pack, the input is summed.
                for range in [
                    None,
                    Some(inner),
                    Some((lo, lo)),
                    Some((lo - 1.0, hi + 1.0)),
                ] {
                    let what = format!("{} {dist} n {n} range {range:?} stone", T::TYPE);
                    compare(gpu, &host, BinRule::Stone, range, &what, false);
                }
            }
        }
    }
    let gpu = crate::gpu::gpu().unwrap();
    each::<f32>(&gpu, 41);
    each::<f64>(&gpu, 42);
    each::<i32>(&gpu, 43);
    each::<u8>(&gpu, 44);
    each::<i64>(&gpu, 45);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_estimates_at_the_summation_trees_thresholds_are_the_cpu_engines() {
    // Leaves of every shape (tails of 1 to 7 values, fewer than 8 values), the first splits,
    // nodes at depths 0 to 3 (the first sizes at each: the warps add one, then two levels, then
    // est_combine the rest), integer cast blocks of 8192 with and without a rest.
    let gpu = crate::gpu::gpu().unwrap();
    let sizes = [
        7, 8, 15, 127, 128, 129, 136, 224, 225, 255, 256, 257, 273, 448, 449, 896, 897, 1793, 8191,
        8192, 8193, 16_391, 65_537,
    ];
    compare_type::<f32>(&gpu, &sizes, 16);
    compare_type::<f64>(&gpu, &sizes, 17);
    compare_type::<i32>(&gpu, &sizes, 18);
    compare_type::<u8>(&gpu, &sizes, 19);
    compare_type::<half::f16>(&gpu, &sizes, 20);
    compare_type::<half::bf16>(&gpu, &sizes, 28);
    // float16 from a start 2 bytes past alignment: the sums' group path (8 lanes a node).
    let mut r = Xoshiro256PlusPlus::seed_from_u64(21);
    for n in [8usize, 129, 257, 8193, 65_537] {
        let host = samples::<half::f16>("normal", n, &mut r);
        for rule in [BinRule::Scott, BinRule::Doane] {
            let what = format!("unaligned f16 n {n} {}", rule.name());
            compare(&gpu, &host, rule, None, &what, true);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_float16_sums_are_numpys_bit_for_bit() {
    // The float32 sums themselves (before the float16 rounding the estimators apply), against
    // the CPU engine's numpy order: the samples, their squared deviations and cubed standardised
    // deviations (each step rounded to float16), pairwise over the whole array and in np.mean's
    // blocks of 8192, aligned (a lane a node) and 2 bytes past alignment (8 lanes a node).
    use crate::histogram::bins::stats::{r16, CAST_BUFFER};
    let gpu = crate::gpu::gpu().unwrap();
    let stream = &gpu.stream;
    let passes = Passes::new(&gpu, stream.clone(), SampleType::F16).unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(22);
    let (mean, sigma) = (0.0017f32, 0.0103f32);
    let term = |t: i32, x: f32| match t {
        0 => x,
        1 => {
            let d = r16(x - mean);
            r16(d * d)
        }
        _ => r16(r16(r16(x - mean) / sigma).powf(3.0)),
    };
    for n in [
        1usize,
        7,
        8,
        9,
        127,
        128,
        129,
        240,
        241,
        1000,
        8191,
        8192,
        8193,
        100_003,
        1 << 20,
    ] {
        let host: Vec<half::f16> = (0..n)
            .map(|_| half::f16::from_f64(r.gen_range(-0.03..0.05)))
            .collect();
        let values: Vec<f32> = host.iter().map(|x| x.to_f32()).collect();
        for lead in [0usize, 1] {
            let bits: Vec<u16> = std::iter::repeat_n(0u16, lead)
                .chain(host.iter().map(|x| x.to_bits()))
                .collect();
            let dev = stream.clone_htod(&bits).unwrap();
            let at = dev.device_ptr(stream).0 + 2 * lead as u64;
            for t in 0..3 {
                let terms: Vec<f32> = values.iter().map(|&x| term(t, x)).collect();
                let p = (t, mean as f64, sigma as f64);
                // SAFETY: `dev` holds the `n` samples after `lead` until the end of the loop.
                let (whole, blocks) = unsafe {
                    (
                        passes.pairwise(at, n, p).unwrap(),
                        passes.buffered(at, n, p).unwrap(),
                    )
                };
                let want_whole = pairwise_f32(&terms);
                let want_blocks = terms
                    .chunks(CAST_BUFFER)
                    .fold(0.0f32, |acc, c| acc + pairwise_f32(c));
                let what = format!("n {n} lead {lead} term {t}");
                assert_eq!(
                    (whole as f32).to_bits(),
                    want_whole.to_bits(),
                    "{what}: whole"
                );
                assert_eq!(
                    (blocks as f32).to_bits(),
                    want_blocks.to_bits(),
                    "{what}: blocks"
                );
            }
        }
    }
}

/// ml_dtypes' sum of `terms`: the first, then each next added with the total rounded to
/// bfloat16 (stats.rs's order, as the estimators sum).
fn chained(terms: &[f32]) -> f32 {
    crate::histogram::bins::stats::sequential_sum_bf16(terms)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_bfloat16_chains_are_ml_dtypes_bit_for_bit() {
    // The chain's total against the host's one value after another, for the samples, their
    // squared deviations and cubed standardised deviations, on data whose totals stall early
    // (positive values, squares), wander (mean zero), shrink back after growing (the skipped
    // values must be looked at again), stay as small as the values (every step moves: no skip),
    // hold NaN or infinities, or start 2 bytes past alignment.
    use crate::histogram::bins::stats::rbf;
    let gpu = crate::gpu::gpu().unwrap();
    let stream = &gpu.stream;
    let passes = Passes::new(&gpu, stream.clone(), SampleType::BF16).unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(29);
    let (mean, sigma) = (rbf(0.0625), rbf(1.125));
    let term = |t: i32, x: f32| match t {
        0 => x,
        1 => {
            let d = rbf(x - mean);
            rbf(d * d)
        }
        _ => rbf(rbf(rbf(x - mean) / sigma).powf(3.0)),
    };
    let normal = |r: &mut Xoshiro256PlusPlus, scale: f64| {
        let (u, v): (f64, f64) = (r.gen_range(1e-12..1.0), r.gen());
        scale * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let mut cases: Vec<(String, Vec<f32>)> = Vec::new();
    for n in [
        1usize, 2, 8, 9, 255, 256, 257, 8191, 8193, 262_145, 3_000_001,
    ] {
        cases.push((
            format!("normal n {n}"),
            (0..n).map(|_| normal(&mut r, 1.0) as f32).collect(),
        ));
        cases.push((
            format!("positive n {n}"),
            (0..n).map(|_| r.gen_range(0.0f32..2.0)).collect(),
        ));
    }
    // Up to a total of ~4000, then down past zero to ~-4000: values below the large total's
    // slack move the small one.
    let up: Vec<f32> = (0..400_000).map(|_| r.gen_range(0.0f32..0.5)).collect();
    let down: Vec<f32> = (0..800_000).map(|_| -r.gen_range(0.0f32..0.5)).collect();
    cases.push(("up then down".into(), [up, down].concat()));
    // Alternating +-1 around a small total: every value moves it.
    cases.push((
        "alternating".into(),
        (0..300_000)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect(),
    ));
    // At a power of two the gap below is half the gap above: 256 - 0.6 rounds to 255 (half the
    // gap below is 0.5), 256 + 0.6 back to 256; a value past 300 000 stalled zeros.
    let mut pow2 = vec![256.0f32];
    pow2.extend(std::iter::repeat_n(0.0, 300_000));
    pow2.extend([0.6015625, -0.6015625, -0.6015625, 1.0, -0.25]);
    cases.push(("power of two".into(), pow2));
    // A total stalled at a power of two: values of its sign below half the wider gap leave it
    // (16 + 0.04 rounds to 16), of the other sign they move it (16 - 0.04 rounds to 15.9375);
    // the same below zero.
    for sign in [1.0f32, -1.0] {
        let mut stalled = vec![16.0 * sign];
        stalled.extend(std::iter::repeat_n(0.040039062 * sign, 100_000));
        stalled.push(-0.040039062 * sign);
        stalled.extend(std::iter::repeat_n(0.040039062 * sign, 1_000));
        stalled.push(-0.03 * sign);
        cases.push((format!("stalled at {}", 16.0 * sign), stalled));
    }
    let mut nan: Vec<f32> = (0..100_000).map(|_| normal(&mut r, 3.0) as f32).collect();
    nan[77_777] = f32::NAN;
    cases.push(("NaN".into(), nan));
    let mut inf: Vec<f32> = (0..100_000).map(|_| normal(&mut r, 3.0) as f32).collect();
    inf[5_000] = f32::INFINITY;
    inf[60_000] = f32::NEG_INFINITY;
    cases.push(("infinities".into(), inf.clone()));
    inf[60_000] = 1.0;
    cases.push(("infinity".into(), inf));
    // The binade runs (the scan within a chunk): mean-zero totals that wander across binades,
    // values exactly halfway between two totals (ties to even, at every scale), heavy tails
    // (values that leave the binade at once), a drifting mean (totals crossing zero), and a total
    // held at a power of two by values of half its gaps.
    cases.push((
        "mean zero, small".into(),
        (0..1_500_000)
            .map(|_| normal(&mut r, 0.01) as f32)
            .collect(),
    ));
    cases.push((
        "halfway values".into(),
        (0..1_000_000)
            .map(|_| {
                let k = r.gen_range(-255i32..=255) as f32;
                k * (2.0f32).powi(-r.gen_range(0..20))
            })
            .collect(),
    ));
    cases.push((
        "mixed scales".into(),
        (0..1_000_000)
            .map(|_| normal(&mut r, 0.01) as f32 * (2.0f32).powi(r.gen_range(0..12)))
            .collect(),
    ));
    cases.push((
        "drifting mean".into(),
        (0..1_000_000)
            .map(|i| {
                normal(&mut r, 0.01) as f32 + if i % 100_000 < 50_000 { 0.003 } else { -0.003 }
            })
            .collect(),
    ));
    let mut edge = vec![2.0f32];
    edge.extend(
        (0..300_000)
            .map(|_| [0.0078125f32, -0.0078125, 0.00390625, -0.00390625][r.gen_range(0..4)]),
    );
    cases.push(("at a power of two".into(), edge));
    for (name, values) in &cases {
        let host: Vec<half::bf16> = values.iter().map(|&x| half::bf16::from_f32(x)).collect();
        let values: Vec<f32> = host.iter().map(|x| x.to_f32()).collect();
        let full = host.len();
        // Every case whole, the long ones cut short too (a wrong step can be absorbed later).
        let cuts: Vec<usize> = if full > 100_000 {
            vec![full / 7 + 3, full / 2 + 129, full]
        } else {
            vec![full]
        };
        for n in cuts {
            let host = &host[..n];
            let values = &values[..n];
            for lead in [0usize, 1] {
                let bits: Vec<u16> = std::iter::repeat_n(0u16, lead)
                    .chain(host.iter().map(|x| x.to_bits()))
                    .collect();
                let dev = stream.clone_htod(&bits).unwrap();
                let at = dev.device_ptr(stream).0 + 2 * lead as u64;
                for t in 0..3 {
                    let terms: Vec<f32> = values.iter().map(|&x| term(t, x)).collect();
                    // SAFETY: `dev` holds the `n` samples after `lead` until the end of the loop.
                    let got =
                        unsafe { passes.chain(at, n, (t, mean as f64, sigma as f64)).unwrap() };
                    let want = chained(&terms);
                    // NaN as NaN (the device's NaN is canonical, the host's keeps a payload).
                    let same = if want.is_nan() {
                        got.is_nan()
                    } else {
                        (got as f32).to_bits() == want.to_bits()
                    };
                    assert!(
                        same,
                        "{name} n {n} lead {lead} term {t}: {got} against {want}"
                    );
                }
            }
        }
    }
}

/// The fused first passes against the plain extremes pass and the unfused sums, on `host`.
fn first_passes_agree<T: Draw + DeviceRepr>(gpu: &Arc<Gpu>, host: &[T], what: &str)
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let stream = &gpu.stream;
    let dev = stream.clone_htod(host).unwrap();
    let passes = Passes::new(gpu, stream.clone(), T::TYPE).unwrap();
    let (ptr, _guard) = dev.device_ptr(stream);
    let n = host.len();
    let (lo, hi) = T::SPAN;
    let band = (lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.6);
    let inner = Some(band);
    // The host's count, extremes and NaN count, as keys.
    let kind = passes.kind;
    let finite: Vec<u64> = host
        .iter()
        .filter(|x| !x.is_nan())
        .map(|&x| key_of(kind, x))
        .collect();
    let want = [
        finite.len() as u64,
        finite.iter().copied().min().unwrap_or(u64::MAX),
        finite.iter().copied().max().unwrap_or(0),
        (n - finite.len()) as u64,
    ];
    // SAFETY: `dev` holds the `n` samples until the end of this function, after every read back.
    unsafe {
        let plain = passes.extremes(ptr, n, None).unwrap();
        assert_eq!(plain, want, "{what}: extremes");
        let (summed, sum) = passes.extremes_and_sum(ptr, n).unwrap();
        assert_eq!(summed, want, "{what}: extremes with the sum");
        let (digits, _) = passes.extremes_and_digits(ptr, n, None).unwrap();
        assert_eq!(digits, want, "{what}: extremes with the digits");
        let trimmed = passes.extremes(ptr, n, inner).unwrap();
        let (trimmed_digits, _) = passes.extremes_and_digits(ptr, n, inner).unwrap();
        assert_eq!(
            trimmed_digits, trimmed,
            "{what}: trimmed extremes with the digits"
        );
        let (tiled, _) = passes.extremes_and_tiles(ptr, n, band).unwrap();
        assert_eq!(
            tiled, trimmed,
            "{what}: trimmed extremes with the tile counts"
        );
        let alone = match kind {
            Kind::Signed | Kind::Unsigned => passes.buffered(ptr, n, (0, 0.0, 0.0)).unwrap(),
            _ => passes.pairwise(ptr, n, (0, 0.0, 0.0)).unwrap(),
        };
        assert_eq!(sum.to_bits(), alone.to_bits(), "{what}: the fused sum");
    }
    if finite.len() == n {
        let host_sum = match T::TYPE {
            SampleType::F32 => {
                let v: Vec<f32> = host.iter().map(|x| x.to_f32()).collect();
                Some(pairwise_f32(&v) as f64)
            }
            SampleType::F64 => Some(pairwise_f64(
                &host.iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
            )),
            _ => None,
        };
        if let Some(h) = host_sum {
            // SAFETY: as above.
            let (_, sum) = unsafe { passes.extremes_and_sum(ptr, n).unwrap() };
            assert_eq!(sum.to_bits(), h.to_bits(), "{what}: numpy's sum");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_first_passes_find_the_extremes_the_plain_pass_finds() {
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(20);
    for n in [1, 7, 129, 8193, 1_000_003] {
        let mut v = samples::<f32>("normal", n, &mut r);
        first_passes_agree(&gpu, &v, &format!("f32 n {n}"));
        v[n / 2] = f32::NAN;
        first_passes_agree(&gpu, &v, &format!("f32 NaN n {n}"));
        let w = samples::<f64>("uniform", n, &mut r);
        first_passes_agree(&gpu, &w, &format!("f64 n {n}"));
        let i = samples::<i16>("normal", n, &mut r);
        first_passes_agree(&gpu, &i, &format!("i16 n {n}"));
        let u = samples::<u64>("ties", n, &mut r);
        first_passes_agree(&gpu, &u, &format!("u64 n {n}"));
    }
}

/// The device's radix select of the quartiles' neighbours against the host's sorted keys.
fn select_agrees<T: Draw + DeviceRepr>(
    gpu: &Arc<Gpu>,
    host: &[T],
    range: Option<(f64, f64)>,
    what: &str,
) where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let stream = &gpu.stream;
    let dev = stream.clone_htod(host).unwrap();
    let passes = Passes::new(gpu, stream.clone(), T::TYPE).unwrap();
    let (ptr, _guard) = dev.device_ptr(stream);
    let kind = passes.kind;
    let mut keys: Vec<u64> = host
        .iter()
        .filter(|x| {
            !x.is_nan()
                && range.is_none_or(|(lo, hi)| match T::TYPE {
                    SampleType::F32 => x.to_f32() >= lo as f32 && x.to_f32() <= hi as f32,
                    _ => x.to_f64() >= lo && x.to_f64() <= hi,
                })
        })
        .map(|&x| key_of(kind, x))
        .collect();
    keys.sort_unstable();
    let n = keys.len();
    let (a75, b75) = stats::percentile_ranks(n, 0.75);
    let (a25, b25) = stats::percentile_ranks(n, 0.25);
    let ranks = [a75, b75, a25, b25].map(|r| r as u64);
    for first in [1, 2] {
        // SAFETY: `dev` holds the samples until the end of this function, after every read back.
        let got = unsafe {
            let (ext, sel) = passes
                .extremes_and_digits_by(ptr, host.len(), range, first)
                .unwrap();
            assert_eq!(ext[0] as usize, n, "{what}: count");
            passes.select(sel, ranks).unwrap()
        };
        assert_eq!(got, ranks.map(|r| keys[r as usize]), "{what} first {first}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_radix_select_with_and_without_gathering_finds_the_quartiles() {
    // Normal samples: few agree with the quartiles' first digits (gathered); samples within one
    // first digit (all agree: not gathered); heavy ties; a range.
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(21);
    for n in [1000, 1_000_003] {
        let v = samples::<f32>("normal", n, &mut r);
        select_agrees(&gpu, &v, None, &format!("f32 normal n {n}"));
        select_agrees(
            &gpu,
            &v,
            Some((-1.0, 2.5)),
            &format!("f32 normal range n {n}"),
        );
        let narrow: Vec<f32> = (0..n).map(|_| r.gen_range(1.0f32..1.1)).collect();
        select_agrees(&gpu, &narrow, None, &format!("f32 narrow n {n}"));
        let ties = samples::<f32>("ties", n, &mut r);
        select_agrees(&gpu, &ties, None, &format!("f32 ties n {n}"));
        let w = samples::<f64>("normal", n, &mut r);
        select_agrees(&gpu, &w, None, &format!("f64 normal n {n}"));
        let i = samples::<i32>("normal", n, &mut r);
        select_agrees(&gpu, &i, None, &format!("i32 normal n {n}"));
        let u = samples::<u64>("uniform", n, &mut r);
        select_agrees(&gpu, &u, None, &format!("u64 uniform n {n}"));
    }
}

/// The fastest of three runs of `f`, in milliseconds (each run ends with a read back).
fn best_ms(mut f: impl FnMut()) -> f64 {
    (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_estimator_passes_timing() {
    // Each pass of the estimators on 2^26 float32 normal samples (a block of 2^20 repeated),
    // printed (run with --nocapture) for bench/NOTES.md; the two ways of counting the first
    // digits must select the same samples.
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(22);
    let block = samples::<f32>("normal", 1 << 20, &mut r);
    let host: Vec<f32> = block.iter().copied().cycle().take(1 << 26).collect();
    let n = host.len();
    let stream = &gpu.stream;
    let dev = stream.clone_htod(&host).unwrap();
    let passes = Passes::new(&gpu, stream.clone(), SampleType::F32).unwrap();
    let (ptr, _guard) = dev.device_ptr(stream);
    let (a75, b75) = stats::percentile_ranks(n, 0.75);
    let (a25, b25) = stats::percentile_ranks(n, 0.25);
    let ranks = [a75, b75, a25, b25].map(|r| r as u64);
    let mut picked = Vec::new();
    // SAFETY: `dev` holds the samples until the end of this function, after every read back.
    unsafe {
        let ms = best_ms(|| {
            passes.extremes(ptr, n, None).unwrap();
        });
        println!("extremes: {ms:.3} ms");
        let ms = best_ms(|| {
            passes.extremes_and_sum(ptr, n).unwrap();
        });
        println!("extremes and sum: {ms:.3} ms");
        let ms = best_ms(|| {
            passes.pairwise(ptr, n, (1, 0.5, 0.0)).unwrap();
        });
        println!("squared deviations: {ms:.3} ms");
        let ms = best_ms(|| {
            passes.pairwise(ptr, n, (2, 0.5, 1.5)).unwrap();
        });
        println!("cubes: {ms:.3} ms");
        for first in [1, 2] {
            let ms = best_ms(|| drop(passes.extremes_and_digits_by(ptr, n, None, first).unwrap()));
            println!("extremes and first digits (first {first}): {ms:.3} ms");
            let ms = best_ms(|| {
                let (_, sel) = passes.extremes_and_digits_by(ptr, n, None, first).unwrap();
                picked.push(passes.select(sel, ranks).unwrap());
            });
            println!("whole select (first {first}): {ms:.3} ms");
        }
    }
    assert!(picked.windows(2).all(|w| w[0] == w[1]), "{picked:?}");
}
