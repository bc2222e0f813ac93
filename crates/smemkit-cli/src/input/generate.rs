//! Synthetic samples for `--generate`. The data is drawn in parallel in fixed chunks, each with its
//! own generator seeded from (seed, chunk index), so one seed gives the same samples whatever the
//! number of threads. The distributions are those of shared/BENCH.md (`uniform`, `hot`) plus
//! `normal` and `zipf` for shapes a user may want to look at.

use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use smemkit::sample::SampleType;

use super::data::OwnedSamples;

/// Samples per generator chunk; fixed, because it is part of what a seed means.
const CHUNK: usize = 1 << 16;

/// Exponent of the `zipf` distribution.
pub const ZIPF_EXPONENT: f64 = 1.1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Uniform,
    Hot,
    Normal,
    Zipf,
}

impl Dist {
    pub fn parse(text: &str) -> Result<Dist> {
        Ok(match text {
            "uniform" => Dist::Uniform,
            "hot" => Dist::Hot,
            "normal" => Dist::Normal,
            "zipf" => Dist::Zipf,
            _ => bail!("unknown distribution `{text}` (expected uniform, hot, normal or zipf)"),
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Dist::Uniform => "uniform",
            Dist::Hot => "hot",
            Dist::Normal => "normal",
            Dist::Zipf => "zipf",
        }
    }
}

/// What to draw: `count` samples of `ty` over `nbins` bins spanning `[lo, hi)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenSpec {
    pub dist: Dist,
    pub count: usize,
    pub seed: u64,
    pub ty: SampleType,
    pub nbins: usize,
    pub lo: f64,
    pub hi: f64,
}

/// A generated value before conversion to the sample type.
trait FromDraw: Copy + Send + Sync + Default {
    /// Float types keep the value; integer types take its floor (saturating at the type's bounds).
    fn from_draw(x: f64) -> Self;
}

macro_rules! from_draw {
    ($($t:ty),*) => {$(
        impl FromDraw for $t {
            #[inline(always)]
            fn from_draw(x: f64) -> Self {
                x.floor() as $t
            }
        }
    )*};
}
from_draw!(u8, u16, u32, u64, i8, i16, i32, i64);
impl FromDraw for f32 {
    #[inline(always)]
    fn from_draw(x: f64) -> Self {
        x as f32
    }
}
impl FromDraw for f64 {
    #[inline(always)]
    fn from_draw(x: f64) -> Self {
        x
    }
}

fn chunk_rng(seed: u64, chunk: usize) -> Xoshiro256PlusPlus {
    // splitmix64 of (seed, chunk): neighbouring chunks get unrelated streams.
    let mut z = seed ^ (chunk as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31))
}

fn fill<T: FromDraw>(spec: &GenSpec) -> Result<Vec<T>> {
    let GenSpec {
        dist,
        count,
        seed,
        nbins,
        lo,
        hi,
        ty,
    } = *spec;
    let width = hi - lo;
    let bin_width = width / nbins as f64;
    let float = ty.is_float();
    // The hot value: the left edge of bin `7 % nbins` (exactly `7 % nbins` for bins [0, nbins)).
    let hot = lo + (7 % nbins) as f64 * bin_width;
    let normal = Normal::new(lo + width / 2.0, width / 6.0)
        .map_err(|e| anyhow::anyhow!("normal distribution: {e}"))?;
    let zipf = Zipf::new(nbins as u64, ZIPF_EXPONENT)
        .map_err(|e| anyhow::anyhow!("zipf distribution: {e}"))?;
    let mut out = crate::oom::try_vec(&format!("--count {count} of {ty}"), count, T::default())?;
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = chunk_rng(seed, c);
            // Integer samples are drawn from whole numbers, so every integer bin is equally likely.
            let uniform = |rng: &mut Xoshiro256PlusPlus| {
                if float {
                    rng.gen_range(lo..hi)
                } else {
                    lo.ceil() + rng.gen_range(0.0..(hi.ceil() - lo.ceil()).max(1.0)).floor()
                }
            };
            for x in chunk.iter_mut() {
                let v = match dist {
                    Dist::Uniform => uniform(&mut rng),
                    Dist::Hot => {
                        if rng.gen_range(0..8u32) != 0 {
                            hot
                        } else {
                            uniform(&mut rng)
                        }
                    }
                    Dist::Normal => normal.sample(&mut rng),
                    Dist::Zipf => lo + (zipf.sample(&mut rng) - 1.0) * bin_width,
                };
                *x = T::from_draw(v);
            }
        });
    Ok(out)
}

/// Draws the samples `spec` describes.
pub fn generate(spec: &GenSpec) -> Result<OwnedSamples> {
    if spec.count == 0 {
        bail!("--count must be at least 1 (an empty input has no histogram)");
    }
    if spec.lo.partial_cmp(&spec.hi) != Some(std::cmp::Ordering::Less) || spec.nbins == 0 {
        bail!(
            "cannot generate over an empty range [{}, {})",
            spec.lo,
            spec.hi
        );
    }
    Ok(match spec.ty {
        SampleType::U8 => OwnedSamples::U8(fill(spec)?),
        SampleType::U16 => OwnedSamples::U16(fill(spec)?),
        SampleType::U32 => OwnedSamples::U32(fill(spec)?),
        SampleType::U64 => OwnedSamples::U64(fill(spec)?),
        SampleType::I8 => OwnedSamples::I8(fill(spec)?),
        SampleType::I16 => OwnedSamples::I16(fill(spec)?),
        SampleType::I32 => OwnedSamples::I32(fill(spec)?),
        SampleType::I64 => OwnedSamples::I64(fill(spec)?),
        SampleType::F32 => OwnedSamples::F32(fill(spec)?),
        SampleType::F64 => OwnedSamples::F64(fill(spec)?),
        SampleType::F16 | SampleType::BF16 => bail!(
            "--generate does not make {} samples yet: give --dtype f32 or f64, or a file",
            spec.ty
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dist: Dist, ty: SampleType) -> GenSpec {
        GenSpec {
            dist,
            count: 200_000,
            seed: 7,
            ty,
            nbins: 16,
            lo: 0.0,
            hi: 16.0,
        }
    }

    #[test]
    fn same_seed_same_samples_on_any_thread_count() {
        let s = spec(Dist::Uniform, SampleType::I32);
        let a = generate(&s).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let b = pool.install(|| generate(&s).unwrap());
        assert_eq!(a, b);
    }

    #[test]
    fn hot_puts_seven_eighths_on_one_value() {
        let OwnedSamples::I32(v) = generate(&spec(Dist::Hot, SampleType::I32)).unwrap() else {
            panic!()
        };
        let hot = v.iter().filter(|&&x| x == 7).count() as f64 / v.len() as f64;
        assert!((hot - (7.0 / 8.0 + 1.0 / 128.0)).abs() < 0.01, "{hot}");
        assert!(v.iter().all(|&x| (0..16).contains(&x)));
    }

    #[test]
    fn uniform_ints_cover_every_bin() {
        let OwnedSamples::U8(v) = generate(&spec(Dist::Uniform, SampleType::U8)).unwrap() else {
            panic!()
        };
        let mut seen = [0usize; 16];
        v.iter().for_each(|&x| seen[x as usize] += 1);
        assert!(seen.iter().all(|&c| c > 10_000));
    }

    #[test]
    fn zipf_stays_in_range() {
        let OwnedSamples::F64(v) = generate(&spec(Dist::Zipf, SampleType::F64)).unwrap() else {
            panic!()
        };
        assert!(v.iter().all(|&x| (0.0..16.0).contains(&x)));
    }
}
