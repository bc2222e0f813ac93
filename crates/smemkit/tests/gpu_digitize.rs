//! GPU tests of `numpy.digitize` (`digitize::cuda`): the host entry point and the device-resident
//! `DeviceDigitize` (a cudarc view, raw pointers on another stream) against the CPU engine's
//! digitize on fresh random data holding NaN, infinities and values equal to bins, for increasing
//! and decreasing bins with equal neighbours, `right` both ways, bins in shared memory and too
//! many for it, and inputs shorter than one 16-byte load. They need a CUDA GPU.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::internals::digitize::cuda::{self as gpu_digitize, DeviceDigitize};
use smemkit::sample::{SampleType, Samples};

fn rng() -> Xoshiro256PlusPlus {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// `n` sorted bins over about [-100, 100] with some equal neighbours (integers, so that integer
/// samples meet them too), reversed when `decreasing`.
fn bins(n: usize, decreasing: bool, r: &mut impl Rng) -> Vec<f64> {
    let mut b: Vec<f64> = (0..n)
        .map(|_| {
            if r.gen::<f64>() < 0.5 {
                r.gen_range(-100i32..=100) as f64
            } else {
                r.gen_range(-100.0..100.0)
            }
        })
        .collect();
    b.sort_by(|a, c| a.partial_cmp(c).unwrap());
    if decreasing {
        b.reverse();
    }
    b
}

/// Samples over about [-120, 120]: a quarter exactly on a bin, a few NaN and infinite.
fn floats(n: usize, bins: &[f64], r: &mut impl Rng) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u: f64 = r.gen();
            if u < 0.01 {
                f64::NAN
            } else if u < 0.02 {
                if r.gen() {
                    f64::INFINITY
                } else {
                    f64::NEG_INFINITY
                }
            } else if u < 0.27 && !bins.is_empty() {
                bins[r.gen_range(0..bins.len())]
            } else {
                r.gen_range(-120.0..120.0)
            }
        })
        .collect()
}

fn check(x: Samples<'_>, bins: &[f64], right: bool, what: &str) {
    let want = smemkit::digitize::digitize(x, bins, right).unwrap();
    let got = gpu_digitize::digitize(x, bins, right).unwrap_or_else(|e| panic!("{what}: gpu: {e}"));
    if got != want {
        let first = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
        panic!(
            "{what}: {} indices differ, first at {first}: gpu {} cpu {}",
            got.iter().zip(&want).filter(|(a, b)| a != b).count(),
            got[first],
            want[first]
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn digitize_matches_the_cpu_engine() {
    let mut r = rng();
    // 40000 bins (320 KB) do not fit shared memory: the search reads them through L1.
    for nbins in [0usize, 1, 2, 7, 1000, 40_000] {
        for decreasing in [false, true] {
            let b = bins(nbins, decreasing, &mut r);
            let x = floats(100_003, &b, &mut r);
            let f32s: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            // Finite values for the integer types (NaN and infinities have no integer).
            let i32s: Vec<i32> = x
                .iter()
                .map(|&v| if v.is_finite() { v.round() as i32 } else { 7 })
                .collect();
            let i64s: Vec<i64> = i32s.iter().map(|&v| v as i64 * 3).collect();
            let u8s: Vec<u8> = i32s.iter().map(|&v| v.unsigned_abs() as u8).collect();
            for right in [false, true] {
                let what = format!("{nbins} bins, decreasing {decreasing}, right {right}");
                check(Samples::F64(&x), &b, right, &format!("f64 {what}"));
                check(Samples::F32(&f32s), &b, right, &format!("f32 {what}"));
                check(Samples::I32(&i32s), &b, right, &format!("i32 {what}"));
                check(Samples::I64(&i64s), &b, right, &format!("i64 {what}"));
                check(Samples::U8(&u8s), &b, right, &format!("u8 {what}"));
                // Shorter than one 16-byte load, and a tail after whole loads.
                for n in [1, 3, 5, 17] {
                    check(
                        Samples::F32(&f32s[..n]),
                        &b,
                        right,
                        &format!("{n} f32 {what}"),
                    );
                }
            }
        }
    }
    // Empty input, and non-monotonic bins refused as the CPU refuses them.
    assert!(
        gpu_digitize::digitize(Samples::F32(&[]), &[1.0, 2.0], false)
            .unwrap()
            .is_empty()
    );
    assert!(gpu_digitize::digitize(Samples::F32(&[1.0]), &[0.0, 2.0, 1.0], false).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_digitize_on_views_and_raw_pointers() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    let gpu = smemkit::internals::gpu::gpu().expect("a CUDA GPU");
    let stream = gpu.ctx.new_stream().unwrap();
    let mut r = rng();
    let b = bins(1000, false, &mut r);
    let x: Vec<f32> = floats(1 << 20, &b, &mut r)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let want = smemkit::digitize::digitize(Samples::F32(&x), &b, true).unwrap();
    let d = DeviceDigitize::new(&gpu, SampleType::F32, &b, true).unwrap();
    assert!(d.bins_in_shared_memory());
    let dev = stream.clone_htod(&x).unwrap();
    // Poisoned output: every index must be written.
    let mut out = stream.clone_htod(&vec![-77i64; x.len()]).unwrap();
    d.run(&dev.as_view(), &mut out.as_view_mut(), &stream)
        .unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), want, "view");
    let mut out2 = stream.clone_htod(&vec![-77i64; x.len()]).unwrap();
    let (in_ptr, out_ptr) = (dev.device_ptr(&stream).0, out2.device_ptr_mut(&stream).0);
    // SAFETY: live allocations of this context with the lengths given, on a stream of it.
    unsafe {
        d.run_raw(
            in_ptr,
            x.len(),
            SampleType::F32,
            out_ptr,
            stream.cu_stream(),
        )
    }
    .unwrap();
    assert_eq!(stream.clone_dtoh(&out2).unwrap(), want, "raw");
    // Bad calls fail before anything is enqueued.
    let mut short = stream.alloc_zeros::<i64>(3).unwrap();
    assert!(d
        .run(&dev.as_view(), &mut short.as_view_mut(), &stream)
        .is_err());
    // SAFETY: nothing is launched: the type check fails first.
    let wrong = unsafe {
        d.run_raw(
            in_ptr,
            x.len(),
            SampleType::I32,
            out_ptr,
            stream.cu_stream(),
        )
    };
    assert!(wrong.is_err());
    // SAFETY: nothing is launched: the alignment check fails first.
    let misaligned =
        unsafe { d.run_raw(in_ptr + 4, 8, SampleType::F32, out_ptr, stream.cu_stream()) };
    assert!(misaligned.is_err());
}
