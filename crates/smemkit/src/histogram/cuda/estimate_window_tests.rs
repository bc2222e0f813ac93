//! The quartiles by a sampled window: the windows, the rank mapping and the decision to fall back
//! replayed on the host (no GPU needed), then the device's selection against sorted samples and
//! `fd`/`auto` against the CPU engine (ignored without a GPU).

use std::sync::Arc;

use cudarc::driver::{DevicePtr, DeviceRepr};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::*;
use crate::error::Error;
use crate::gpu::device::Gpu;
use crate::histogram::bins::estimators::{estimate_bin_count, histogram_bin_edges, BinRule};
use crate::histogram::bins::stats;
use crate::histogram::bins::BinSpec;
use crate::histogram::cuda::estimate::{estimate_bins, value_of};
use crate::sample::{Sample, SampleType, Samples};

#[test]
fn order_statistics_are_the_sorted_keys_at_the_indices() {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(1);
    for k in [1usize, 2, 7, 1000, 40_000] {
        let keys: Vec<u64> = (0..k).map(|_| r.gen_range(0..1000u64)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let mut at: Vec<usize> = (0..5).map(|_| r.gen_range(0..k)).collect();
        at.push(at[0]);
        at.sort_unstable();
        let mut work = keys.clone();
        let got = order_statistics(&mut work, &at);
        let want: Vec<u64> = at.iter().map(|&i| sorted[i]).collect();
        assert_eq!(got, want, "k {k} at {at:?}");
    }
}

#[test]
fn windows_hold_the_samples_quartiles_and_merge_when_they_overlap() {
    let max = key_max(4);
    assert_eq!(max, u32::MAX as u64);
    assert_eq!(key_max(8), u64::MAX);
    assert_eq!(key_max(1), 255);
    // No sample: the whole range, one window.
    let full = Windows::of_sample(&mut [], max);
    assert_eq!(
        full,
        Windows {
            lo: [0, 0],
            hi: [max, max],
            merged: true
        }
    );
    // A few samples: the margins run past them, the whole range again.
    let mut few: Vec<u64> = (0..10).map(|i| 1000 + i).collect();
    assert_eq!(Windows::of_sample(&mut few, max), full);
    // All tied: one window of that key.
    let mut tied = vec![77u64; 5000];
    let w = Windows::of_sample(&mut tied, max);
    assert_eq!((w.lo, w.hi, w.merged), ([77, 77], [77, 77], true));
    // Many spread samples: two windows, each around its quartile, holding a few percent.
    let mut r = Xoshiro256PlusPlus::seed_from_u64(2);
    let keys: Vec<u64> = (0..DRAWS).map(|_| r.gen_range(0..=max)).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let w = Windows::of_sample(&mut keys.clone(), max);
    assert!(!w.merged, "{w:?}");
    let q25 = sorted[DRAWS / 4];
    let q75 = sorted[3 * DRAWS / 4];
    assert!(w.lo[0] < q25 && q25 < w.hi[0], "{w:?} {q25}");
    assert!(w.hi[0] < w.lo[1], "{w:?}");
    assert!(w.lo[1] < q75 && q75 < w.hi[1], "{w:?} {q75}");
    let inside = keys.iter().filter(|&&k| w.contains(k)).count();
    // 2 * (2 * 6 sigma + 2 * 8 slack) of the sample ranks: about 6 %.
    let share = inside as f64 / DRAWS as f64;
    assert!((0.05..0.07).contains(&share), "{share}");
    // Both ends of each window are sample keys, the windows' ranks symmetric about the quartile.
    let below = sorted.partition_point(|&k| k < w.lo[0]);
    let upto = sorted.partition_point(|&k| k <= w.hi[0]);
    assert!(
        (DRAWS / 4 - below).abs_diff(upto - DRAWS / 4) <= 2,
        "{below} {upto}"
    );
    // Ties across the middle: the first window's top is the second's bottom, one window. (200
    // samples: the windows span sample ranks 5..=95 and 104..=194.)
    let mut close: Vec<u64> = (0..200)
        .map(|i| 5000 + (i >= 20) as u64 + (i >= 180) as u64)
        .collect();
    let w = Windows::of_sample(&mut close, max);
    assert_eq!((w.lo, w.hi, w.merged), ([5000, 5000], [5002, 5002], true));
}

#[test]
fn copy_ranks_map_the_ranks_inside_the_windows_and_refuse_the_rest() {
    let w = Windows {
        lo: [10, 50],
        hi: [20, 60],
        merged: false,
    };
    // 100 kept samples below the first window, 50 in it; 700 below the second, 60 in it.
    let c = WindowCounts {
        below: [100, 700],
        upto: [150, 760],
        taken: 110,
    };
    assert_eq!(
        copy_ranks([720, 721, 120, 121], &w, &c, 200),
        Some([70, 71, 20, 21])
    );
    assert_eq!(
        copy_ranks([759, 759, 100, 149], &w, &c, 110),
        Some([109, 109, 0, 49])
    );
    for miss in [99, 150, 699, 760] {
        assert_eq!(
            copy_ranks([720, 721, miss, 121], &w, &c, 200),
            None,
            "{miss}"
        );
    }
    // The copy overflowed its room, or holds other than the windows' samples.
    assert_eq!(copy_ranks([720, 721, 120, 121], &w, &c, 109), None);
    let odd = WindowCounts { taken: 111, ..c };
    assert_eq!(copy_ranks([720, 721, 120, 121], &w, &odd, 200), None);
    // One window: a rank in the second's counts is not trusted.
    let m = Windows {
        lo: [10, 10],
        hi: [60, 60],
        merged: true,
    };
    let c = WindowCounts {
        below: [100, 100],
        upto: [800, 800],
        taken: 700,
    };
    assert_eq!(
        copy_ranks([600, 601, 100, 799], &m, &c, 700),
        Some([500, 501, 0, 699])
    );
    assert_eq!(copy_ranks([800, 601, 100, 799], &m, &c, 700), None);
}

#[test]
fn the_key_map_keeps_the_windows_order_in_few_bits_and_gives_the_keys_back() {
    let w = Windows {
        lo: [1000, 1 << 40],
        hi: [1999, (1 << 40) + 2999],
        merged: false,
    };
    let m = KeyMap::of(&w);
    // 1000 + 3000 keys: 12 bits.
    assert_eq!((m.off1, m.width), (1000, 12));
    let keys = [
        1000u64,
        1001,
        1999,
        1 << 40,
        (1 << 40) + 1,
        (1 << 40) + 2999,
    ];
    let mapped: Vec<u64> = keys.iter().map(|&k| m.map(k)).collect();
    assert_eq!(mapped, [0, 1, 999, 1000, 1001, 3999]);
    for (&k, &g) in keys.iter().zip(&mapped) {
        assert_eq!(m.unmap(g), k);
    }
    // One window; a single key; the widest disjoint windows of 64-bit keys.
    let one = KeyMap::of(&Windows {
        lo: [5, 5],
        hi: [5 + 2047, 5 + 2047],
        merged: true,
    });
    assert_eq!((one.width, one.map(5 + 2047), one.unmap(0)), (11, 2047, 5));
    let tied = KeyMap::of(&Windows {
        lo: [9, 9],
        hi: [9, 9],
        merged: true,
    });
    assert_eq!((tied.width, tied.map(9), tied.unmap(0)), (1, 0, 9));
    let wide = KeyMap::of(&Windows {
        lo: [0, (1 << 63) + 1],
        hi: [1 << 63, u64::MAX],
        merged: false,
    });
    assert_eq!(wide.width, 64);
    assert_eq!(wide.map(u64::MAX), u64::MAX);
    assert_eq!(wide.unmap(u64::MAX), u64::MAX);
    assert_eq!(wide.unmap(wide.map(1 << 63)), 1 << 63);
    assert_eq!(wide.unmap(wide.map((1 << 63) + 1)), (1 << 63) + 1);
}

#[test]
fn the_copys_room_covers_what_the_draws_saw_and_no_more_than_all() {
    let n = 1 << 28;
    let cap = copy_cap(n, DRAWS, 1900);
    assert!(cap > n / DRAWS * 1900 && cap < n / DRAWS * 2400, "{cap}");
    assert_eq!(copy_cap(1000, DRAWS, DRAWS), 1000);
    assert_eq!(copy_cap(0, DRAWS, 0), 0);
    assert!(copy_cap(1 << 20, DRAWS, 0) >= 32);
}

#[test]
fn draws_grow_with_the_samples_up_to_their_most() {
    assert_eq!(draws_for(WINDOW_MIN), 8192);
    assert_eq!(draws_for(1 << 22), 16_384);
    assert_eq!(draws_for(1 << 26), 1 << 18);
    assert_eq!(draws_for(1 << 28), MOST_DRAWS);
    assert_eq!(draws_for(1 << 34), MOST_DRAWS);
}

#[test]
fn draws_are_evenly_spaced_and_inside_the_samples() {
    for (n, m) in [
        (10usize, 3usize),
        (3, 10),
        (1 << 30, DRAWS),
        (DRAWS * 64, DRAWS),
    ] {
        let idx: Vec<usize> = (0..m).map(|i| draw_index(i, n, m)).collect();
        assert_eq!(idx[0], 0);
        assert!(
            idx.windows(2).all(|p| p[0] <= p[1]) && idx[m - 1] < n,
            "{n} {m}"
        );
        for (i, &x) in idx.iter().enumerate() {
            assert_eq!(x as u128, i as u128 * n as u128 / m as u128, "{n} {m} {i}");
        }
    }
}

/// The window path replayed on the host over `keys` (all kept): the keys of the quartiles'
/// neighbours, or `None` where the device would fall back.
fn replay(keys: &[u64], max: u64) -> Option<[u64; RANKS]> {
    let n = keys.len();
    let mut drawn: Vec<u64> = (0..DRAWS).map(|i| keys[draw_index(i, n, DRAWS)]).collect();
    let w = Windows::of_sample(&mut drawn, max);
    let inside = drawn.iter().filter(|&&k| w.contains(k)).count();
    let cap = copy_cap(n, DRAWS, inside);
    let count = |f: &dyn Fn(u64) -> bool| keys.iter().filter(|&&k| f(k)).count() as u64;
    let c = WindowCounts {
        below: [count(&|k| k < w.lo[0]), count(&|k| k < w.lo[1])],
        upto: [count(&|k| k <= w.hi[0]), count(&|k| k <= w.hi[1])],
        taken: count(&|k| w.contains(k)),
    };
    let (a75, b75) = stats::percentile_ranks(n, 0.75);
    let (a25, b25) = stats::percentile_ranks(n, 0.25);
    let ranks = [a75, b75, a25, b25].map(|r| r as u64);
    let inner = copy_ranks(ranks, &w, &c, cap)?;
    let map = KeyMap::of(&w);
    let mut copy: Vec<u64> = keys
        .iter()
        .filter(|&&k| w.contains(k))
        .map(|&k| map.map(k))
        .collect();
    copy.sort_unstable();
    // The mapped keys fit the map's width, which the device's digit passes cover.
    assert!(copy
        .last()
        .is_none_or(|&k| map.width == 64 || k >> map.width == 0));
    Some(inner.map(|r| map.unmap(copy[r as usize])))
}

#[test]
fn the_windows_replayed_on_the_host_select_the_quartiles_or_refuse() {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(3);
    let max = key_max(8);
    let n = 300_007;
    let quartile_keys = |keys: &[u64]| {
        let mut s = keys.to_vec();
        s.sort_unstable();
        let (a75, b75) = stats::percentile_ranks(n, 0.75);
        let (a25, b25) = stats::percentile_ranks(n, 0.25);
        [a75, b75, a25, b25].map(|i| s[i])
    };
    let spread: Vec<u64> = (0..n).map(|_| r.gen_range(0..1u64 << 50)).collect();
    let mut sorted = spread.clone();
    sorted.sort_unstable();
    let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
    let ties: Vec<u64> = (0..n)
        .map(|_| [3u64, 9, 9, 9, 20][r.gen_range(0..5)])
        .collect();
    for (what, keys) in [
        ("spread", &spread),
        ("sorted", &sorted),
        ("reversed", &reversed),
        ("ties", &ties),
    ] {
        assert_eq!(replay(keys, max), Some(quartile_keys(keys)), "{what}");
    }
    // Periodic with the draws' stride: every draw sees the same key, the windows miss.
    let stride = 16;
    let m = DRAWS * stride;
    let periodic: Vec<u64> = (0..m as u64).map(|j| j % stride as u64).collect();
    assert_eq!(replay(&periodic, max), None);
    // The draws see a spread phase the rest does not share.
    let phase: Vec<u64> = (0..m as u64)
        .map(|j| {
            if j % stride as u64 == 0 {
                j
            } else {
                10 * m as u64 + j
            }
        })
        .collect();
    assert_eq!(replay(&phase, max), None);
}

/// `(function, attribute, value)` of the per-function EIATTRs of a CUBIN's global `.nv.info`
/// section (their payload: the function's symbol index, then the value), named by `.symtab`.
fn named_attributes(cubin: &[u8]) -> Vec<(String, u8, u32)> {
    let u16_at = |o: usize| u16::from_le_bytes([cubin[o], cubin[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(cubin[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(cubin[o..o + 8].try_into().unwrap()) as usize;
    let cstr = |o: usize| {
        let end = cubin[o..].iter().position(|&c| c == 0).unwrap();
        String::from_utf8_lossy(&cubin[o..o + end]).into_owned()
    };
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 0x18);
    let section = |want: &str| {
        (0..shnum)
            .map(header)
            .find(|&h| cstr(names + u32_at(h)) == want)
            .unwrap_or_else(|| panic!("no {want} section"))
    };
    // .symtab: 24-byte entries whose first word is the name's offset in the linked strings.
    let symtab = section(".symtab");
    let strings = u64_at(header(u32_at(symtab + 0x28)) + 0x18);
    let (sym_at, sym_size) = (u64_at(symtab + 0x18), u64_at(symtab + 0x20));
    let symbol = |i: usize| {
        assert!(i * 24 < sym_size, "symbol {i}");
        cstr(strings + u32_at(sym_at + i * 24))
    };
    let info = section(".nv.info");
    let (start, size) = (u64_at(info + 0x18), u64_at(info + 0x20));
    let mut out = Vec::new();
    let mut o = start;
    while o + 4 <= start + size {
        let (format, attribute) = (cubin[o], cubin[o + 1]);
        if format == 4 {
            let len = u16_at(o + 2);
            if len == 8 {
                out.push((symbol(u32_at(o + 4)), attribute, u32_at(o + 8) as u32));
            }
            o += 4 + len;
        } else {
            o += 4;
        }
    }
    out
}

#[test]
fn window_kernels_fit_their_blocks_without_spilling() {
    // est_window's launch bounds ask for four 256-thread blocks an SM (64 registers) and
    // est_digits_mapped runs at est_digits' five (51 registers), both without local memory
    // (EIATTR_REGCOUNT 0x2f, EIATTR_FRAME_SIZE 0x12).
    use crate::gpu::compile::{compile_image, options, Image, Output, ESTIMATE};
    use crate::histogram::cuda::estimate_passes::defines;
    if !crate::gpu::compile::tests::toolchain() {
        return;
    }
    for t in [
        SampleType::U8,
        SampleType::I16,
        SampleType::I32,
        SampleType::F32,
        SampleType::U64,
        SampleType::F64,
    ] {
        let (d, _) = defines(t).unwrap();
        let image = compile_image(&ESTIMATE, &options("sm_90a", &d), Output::Cubin);
        let Ok(Image::Cubin(cubin)) = image else {
            panic!("{t}: no CUBIN")
        };
        let attrs = named_attributes(&cubin);
        let get = |kernel: &str, a: u8| {
            attrs
                .iter()
                .find(|(k, x, _)| k == kernel && *x == a)
                .map(|x| x.2)
                .unwrap_or_else(|| panic!("{t} {kernel}: no attribute {a:#x}"))
        };
        for (kernel, most) in [
            ("est_window", 64),
            ("est_digits_mapped", 51),
            ("est_sample", 64),
        ] {
            let regs = get(kernel, 0x2f);
            assert!(regs <= most, "{t} {kernel}: {regs} registers");
            assert_eq!(get(kernel, 0x12), 0, "{t} {kernel}: a stack frame (spills)");
        }
    }
}

// ---- On the GPU ----

/// A sample type the GPU tests draw.
trait Gen: Sample + DeviceRepr + std::fmt::Debug {
    fn of(x: f64) -> Self;
    /// The values the tests span.
    const SPAN: (f64, f64);
}

macro_rules! gen {
    ($t:ty, $lo:expr, $hi:expr) => {
        impl Gen for $t {
            fn of(x: f64) -> Self {
                x as $t
            }
            const SPAN: (f64, f64) = ($lo, $hi);
        }
    };
}
gen!(f32, -3.0, 5.0);
gen!(f64, -3.0, 5.0);
gen!(i32, -2e9, 2e9);
gen!(u8, 0.0, 255.0);

const DISTS: [&str; 7] = [
    "normal", "uniform", "sorted", "reversed", "ties", "tied", "periodic",
];

/// `n` samples of a distribution: normal or uniform over the type's span, sorted or reversed
/// uniform, a few values, one value, or a ramp of period 64 (the draws' stride, a multiple of 64
/// for the sizes the tests use, sees one phase).
fn samples<T: Gen>(dist: &str, n: usize, r: &mut Xoshiro256PlusPlus) -> Vec<T> {
    let (lo, hi) = T::SPAN;
    let mid = (lo + hi) / 2.0;
    let mut v: Vec<T> = (0..n)
        .map(|j| {
            T::of(match dist {
                "normal" => {
                    let (u, w): (f64, f64) = (r.gen_range(1e-12..1.0), r.gen());
                    let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * w).cos();
                    (mid + z * (hi - lo) / 16.0).clamp(lo, hi)
                }
                "ties" => [lo, mid, mid, hi, lo + (hi - lo) / 3.0][r.gen_range(0..5)],
                "tied" => mid,
                "periodic" => lo + (hi - lo) * (j % 64) as f64 / 64.0,
                _ => r.gen_range(lo..hi),
            })
        })
        .collect();
    let order = |a: &T, b: &T| a.to_f64().total_cmp(&b.to_f64());
    match dist {
        "sorted" => v.sort_by(order),
        "reversed" => v.sort_by(|a, b| order(b, a)),
        _ => {}
    }
    v
}

/// Whether numpy keeps `x` for `range` (float32 against the range rounded to float32).
fn kept<T: Gen>(x: T, range: Option<(f64, f64)>) -> bool {
    !x.is_nan()
        && range.is_none_or(|(lo, hi)| match T::TYPE {
            SampleType::F32 => x.to_f32() >= lo as f32 && x.to_f32() <= hi as f32,
            _ => x.to_f64() >= lo && x.to_f64() <= hi,
        })
}

/// The device's quartiles' neighbours by windows of `draws` draws against the sorted kept
/// samples, its extremes against theirs; returns the way it selected.
fn window_agrees<T: Gen>(
    gpu: &Arc<Gpu>,
    host: &[T],
    range: Option<(f64, f64)>,
    draws: usize,
    what: &str,
) -> Option<Path> {
    let stream = &gpu.stream;
    let dev = stream.clone_htod(host).unwrap();
    let passes = Passes::new(gpu, stream.clone(), T::TYPE).unwrap();
    let (ptr, _guard) = dev.device_ptr(stream);
    let kind = passes.kind;
    let mut want: Vec<f64> = host
        .iter()
        .filter(|&&x| kept(x, range))
        .map(|x| x.to_f64())
        .collect();
    want.sort_by(f64::total_cmp);
    let nans = host.iter().filter(|x| x.is_nan()).count() as u64;
    let n = want.len();
    // SAFETY: `dev` holds the samples until the end of this function, after every read back.
    let (ext, q) = unsafe {
        passes
            .extremes_and_window(ptr, host.len(), range, draws)
            .unwrap()
    };
    assert_eq!((ext[0] as usize, ext[3]), (n, nans), "{what}: count, NaN");
    if n == 0 {
        return None;
    }
    let value = |k: u64| value_of::<T>(kind, k).to_f64();
    assert_eq!(value(ext[1]), want[0], "{what}: smallest");
    assert_eq!(value(ext[2]), want[n - 1], "{what}: largest");
    let (a75, b75) = stats::percentile_ranks(n, 0.75);
    let (a25, b25) = stats::percentile_ranks(n, 0.25);
    let ranks = [a75, b75, a25, b25];
    // SAFETY: as above.
    let (keys, path) = unsafe { passes.select_quartiles(q, ranks.map(|r| r as u64)).unwrap() };
    assert_eq!(keys.map(value), ranks.map(|r| want[r]), "{what}: {path:?}");
    Some(path)
}

fn windows_of_type<T: Gen>(gpu: &Arc<Gpu>, sizes: &[usize], seed: u64) {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (lo, hi) = T::SPAN;
    let inner = (lo + (hi - lo) * 0.2, lo + (hi - lo) * 0.7);
    for &n in sizes {
        for dist in DISTS {
            let host = samples::<T>(dist, n, &mut r);
            for range in [None, Some(inner)] {
                let what = format!("{} {dist} n {n} range {range:?}", T::TYPE);
                let path = window_agrees(gpu, &host, range, DRAWS, &what);
                // Periodic samples whose period divides the stride fall back (from some size on
                // the stride is a multiple of 64); the rest select in the copy once the samples
                // outnumber the draws many times over. With fewer samples than draws each sample
                // is drawn many times, the draws' ranks no longer model the samples' and a window
                // may miss (a GPU run: 3 normal samples fell back); either path is exact.
                if dist != "periodic" && n >= 64 * DRAWS {
                    assert!(path.is_none_or(|p| p == Path::Window), "{what}: {path:?}");
                } else if n >= 64 * DRAWS && n % (64 * DRAWS) == 0 {
                    assert_eq!(path, Some(Path::Fallback), "{what}");
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_window_quartiles_are_the_sorted_samples() {
    let gpu = crate::gpu::gpu().unwrap();
    let sizes = [0, 1, 2, 3, 1000, 100_003, 64 * DRAWS, 3_000_001];
    windows_of_type::<f32>(&gpu, &sizes, 31);
    windows_of_type::<f64>(&gpu, &sizes, 32);
    windows_of_type::<i32>(&gpu, &sizes, 33);
    windows_of_type::<u8>(&gpu, &sizes, 34);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_window_falls_back_exactly_when_the_draws_misrepresent_the_samples() {
    let gpu = crate::gpu::gpu().unwrap();
    let n = 64 * DRAWS;
    // The draws see one phase of a spread ramp, the others lie far above: the windows miss.
    let phase: Vec<f64> = (0..n)
        .map(|j| {
            if j % 64 == 0 {
                j as f64
            } else {
                1e9 + j as f64
            }
        })
        .collect();
    let path = window_agrees(&gpu, &phase, None, DRAWS, "f64 phase");
    assert_eq!(path, Some(Path::Fallback));
    let phase32: Vec<i32> = phase.iter().map(|&x| x as i32).collect();
    let path = window_agrees(&gpu, &phase32, None, DRAWS, "i32 phase");
    assert_eq!(path, Some(Path::Fallback));
    // The draws see a spread phase, the rest is one value inside the first window: the rank is
    // in it but the copy overflows its room.
    let quarter = (n / 4) as f32;
    let flood: Vec<f32> = (0..n)
        .map(|j| if j % 64 == 0 { j as f32 } else { quarter })
        .collect();
    let path = window_agrees(&gpu, &flood, None, DRAWS, "f32 flood");
    assert_eq!(path, Some(Path::Fallback));
    // Drawn at another stride, the draws see the flood: one window around its value, the copy
    // nearly all samples, in its room.
    let path = window_agrees(&gpu, &flood, None, DRAWS - 1, "f32 flood, other stride");
    assert_eq!(path, Some(Path::Window));
}

/// numpy's `fd` and `auto` bins of `host` on the GPU against the CPU engine's.
fn estimates_agree<T: Gen>(gpu: &Arc<Gpu>, host: &[T], range: Option<(f64, f64)>, what: &str)
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let dev = gpu.stream.clone_htod(host).unwrap();
    for rule in [BinRule::Fd, BinRule::Auto] {
        let cpu = estimate_bin_count(host.into(), rule, range).and_then(|nbins| {
            let spec = BinSpec::Uniform { nbins, range };
            histogram_bin_edges(host.into(), &spec).map(|edges| (nbins, edges))
        });
        let got = estimate_bins(gpu, &dev.as_view(), rule, range, &gpu.stream);
        match (cpu, got) {
            (Ok((nbins, want)), Ok(est)) => {
                assert_eq!(est.nbins, nbins, "{what} {rule:?}");
                let same = want.len() == est.edges.len()
                    && want
                        .iter()
                        .zip(&est.edges)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{what} {rule:?}: edges");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what} {rule:?}"),
            (a, b) => panic!("{what} {rule:?}: CPU {a:?}, GPU {b:?}"),
        }
    }
}

fn estimates_of_type<T: Gen>(gpu: &Arc<Gpu>, n: usize, seed: u64)
where
    for<'a> &'a [T]: Into<Samples<'a>>,
{
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (lo, hi) = T::SPAN;
    let inner = (lo + (hi - lo) * 0.2, lo + (hi - lo) * 0.7);
    for dist in DISTS {
        let host = samples::<T>(dist, n, &mut r);
        for range in [None, Some(inner), Some((lo, lo))] {
            estimates_agree(
                gpu,
                &host,
                range,
                &format!("{} {dist} n {n} {range:?}", T::TYPE),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fd_and_auto_by_windows_are_the_cpu_engines() {
    let gpu = crate::gpu::gpu().unwrap();
    // From WINDOW_MIN samples on, the estimators select in the windows' copy.
    let mut r = Xoshiro256PlusPlus::seed_from_u64(40);
    let host = samples::<f32>("normal", WINDOW_MIN + 1, &mut r);
    let dev = gpu.stream.clone_htod(&host).unwrap();
    let passes = Passes::new(&gpu, gpu.stream.clone(), SampleType::F32).unwrap();
    let (ptr, _guard) = dev.device_ptr(&gpu.stream);
    let n = host.len();
    // SAFETY: `dev` holds the samples until the end of this block, after every read back.
    let path = unsafe {
        let (ext, q) = passes.extremes_for_quartiles(ptr, n, None).unwrap();
        assert_eq!(ext[0] as usize, n);
        let (a, b) = stats::percentile_ranks(n, 0.75);
        let (c, d) = stats::percentile_ranks(n, 0.25);
        passes
            .select_quartiles(q, [a, b, c, d].map(|x| x as u64))
            .unwrap()
            .1
    };
    assert_eq!(path, Path::Window);
    estimates_of_type::<f32>(&gpu, WINDOW_MIN + 1, 41);
    estimates_of_type::<f64>(&gpu, WINDOW_MIN + 1, 42);
    estimates_of_type::<i32>(&gpu, WINDOW_MIN + 1, 43);
    estimates_of_type::<u8>(&gpu, WINDOW_MIN + 1, 44);
    // NaN: an error without a range, trimmed with one.
    let mut v = samples::<f32>("normal", WINDOW_MIN + 1, &mut r);
    v[12345] = f32::NAN;
    estimates_agree(&gpu, &v, Some((-1.0, 2.0)), "f32 NaN range");
    let dev = gpu.stream.clone_htod(&v).unwrap();
    let e = estimate_bins(&gpu, &dev.as_view(), BinRule::Fd, None, &gpu.stream).unwrap_err();
    assert!(matches!(e, Error::NonFiniteData { .. }), "{e}");
}

/// The fastest of three runs of `f`, in milliseconds (each ends with a read back).
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
fn gpu_window_quartiles_timing() {
    // The quartiles of 2^21 to 2^28 float32 normal samples (a block of 2^20 read in a scrambled
    // order, so that the draws see no period) by windows and by the radix select alone, printed
    // (run with --release --nocapture) for bench/NOTES.md and WINDOW_MIN; both must select the
    // same samples.
    let gpu = crate::gpu::gpu().unwrap();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(45);
    let block = samples::<f32>("normal", 1 << 20, &mut r);
    for log in [21, 23, 26, 28] {
        let n = 1usize << log;
        let host: Vec<f32> = (0..n as u64)
            .map(|i| {
                let h = (i ^ (i >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                block[(h >> 44) as usize]
            })
            .collect();
        let dev = gpu.stream.clone_htod(&host).unwrap();
        drop(host);
        let passes = Passes::new(&gpu, gpu.stream.clone(), SampleType::F32).unwrap();
        let (ptr, _guard) = dev.device_ptr(&gpu.stream);
        let (a, b) = stats::percentile_ranks(n, 0.75);
        let (c, d) = stats::percentile_ranks(n, 0.25);
        let ranks = [a, b, c, d].map(|x| x as u64);
        let mut picked = Vec::new();
        // SAFETY: `dev` holds the samples until the end of this loop's body.
        unsafe {
            let ms = best_ms(|| {
                passes.extremes(ptr, n, None).unwrap();
            });
            println!("2^{log}: extremes {ms:.3} ms");
            let draws = draws_for(n);
            let ms = best_ms(|| {
                passes.draw_windows(ptr, n, None, draws).unwrap();
            });
            println!("2^{log}: {draws} draws and their windows, selected on the device {ms:.3} ms");
            let ms = best_ms(|| {
                drop(passes.draw(ptr, n, draws).unwrap());
                passes.stream.synchronize().unwrap();
            });
            println!("2^{log}: {draws} draws copied on the device {ms:.3} ms");
            let ms = best_ms(|| {
                // Never read; freed on the stream before the synchronisation.
                drop(passes.stream.alloc::<u8>(n / 16 * 4).unwrap());
                passes.stream.synchronize().unwrap();
            });
            println!("2^{log}: room for a copy of n / 16 samples, allocated and freed {ms:.3} ms");
            let ms = best_ms(|| drop(passes.extremes_for_quartiles(ptr, n, None).unwrap()));
            println!("2^{log}: draws and window pass {ms:.3} ms");
            let ms = best_ms(|| {
                let (_, q) = passes.extremes_for_quartiles(ptr, n, None).unwrap();
                let (keys, path) = passes.select_quartiles(q, ranks).unwrap();
                assert_eq!(path, Path::Window);
                picked.push(keys);
            });
            println!("2^{log}: quartiles by windows {ms:.3} ms");
            let ms = best_ms(|| {
                let (_, sel) = passes.extremes_and_digits(ptr, n, None).unwrap();
                picked.push(passes.select(sel, ranks).unwrap());
            });
            println!("2^{log}: quartiles by the radix select {ms:.3} ms");
        }
        assert!(picked.windows(2).all(|w| w[0] == w[1]), "{picked:?}");
    }
}
