//! Integer and bool weights, whose histogram keeps the weights' type as `numpy.histogram`'s does.
//!
//! numpy sums integer weights into a result of the weights' dtype: with uniform bins it adds each
//! 65536-sample block's `bincount` (float64) cast to that dtype, with explicit edges it takes
//! cumulative sums in integers; either way the sums wrap around in the dtype (`int8` weights
//! `100 + 100 + 3` give `-53`).
//!
//! The CPU engine and one GPU fed from host memory (or device memory, through the device API)
//! sum them as exact 64-bit integers: every weight read as int64 (uint64 as its two's-complement
//! bits), the sums modulo 2^64 (wrapping on overflow, in any order of the additions: the GPU's
//! integer atomics give the same bits on every run and strategy), then wrapped into the dtype.
//! Modular arithmetic makes that numpy's wrapped sum for every dtype, at any magnitude. The one
//! difference: beyond 2^53, numpy's uniform-bins path rounds each block's float64 `bincount` (and
//! its cast to int64 may overflow), so its result is not the exact sum there; smemkit's is, and
//! equals what numpy's explicit-edges path gives for the same bins.
//!
//! Several GPUs, ranks and streamed inputs still sum the weights widened to float64 on the host
//! ([`exact_f64`]): exact as long as the absolute values add up to at most 2^53 (checked first),
//! refused beyond.
//!
//! Where numpy's own result is not a wrapped sum it is refused on every path: bool weights with
//! explicit edges (numpy raises a type error), and uniform bins with `uint16` or `int32` weights
//! where one block's bin sum could leave the int32 range (numpy's float-to-integer cast then
//! overflows and gives `INT_MIN`-derived values with "invalid value encountered in cast"). int8,
//! uint8, int16, uint32 and 64-bit block sums stay where numpy's cast wraps (x86-64 numpy, the
//! platform checked).
//!
//! numpy's `bincount` and `histogramdd` return float64 sums for integer weights: those take
//! [`IntWeights::to_f64`] and keep their float results.

use crate::error::{Error, Result};
use crate::histogram::bins::BinSpec;
use crate::histogram::result::Counts;
#[cfg(test)]
use crate::int_weights::NUMPY_BLOCK;
pub use crate::int_weights::{IntType, IntWeights, EXACT_SUM_LIMIT};

/// Checks that integer weights of this type histogram under `bins` as numpy does, as wrapped
/// sums (see the module documentation).
pub fn check_numpy(weights: &IntWeights<'_>, bins: &BinSpec) -> Result<()> {
    let ty = weights.int_type();
    // numpy's cumulative-sum path: explicit edges (a number of bins, or an estimator's, takes the
    // uniform path).
    let edges = matches!(bins, BinSpec::Edges(_) | BinSpec::IntEdges(_));
    if ty == IntType::Bool && edges {
        return Err(Error::InvalidArgument(
            "bool weights with explicit bin edges: numpy's histogram refuses them (\"Cannot cast \
             ufunc 'add' output from dtype('int64') to dtype('bool')\"); pass the weights as \
             integers, or give a number of bins"
                .into(),
        ));
    }
    if !edges && matches!(ty, IntType::U16 | IntType::I32) && weights.magnitude() > i32::MAX as u128
    {
        let block = weights.block_magnitude();
        if block > i32::MAX as u128 {
            return Err(Error::NotImplemented(format!(
                "{ty} weights with uniform bins where 65536 of them add up to {block} in absolute \
                 value, beyond the int32 range: numpy casts each 65536-sample block's sums from \
                 float64 to {ty} there, and that cast overflows (\"invalid value encountered in \
                 cast\"), so its result is not a wrapped sum; pass int64 weights (the same sums, \
                 kept exact) or explicit edges"
            )));
        }
    }
    Ok(())
}

/// [`check_numpy`], then the weights widened to f64 for the engines that sum them so (several
/// GPUs, ranks, streamed inputs): refused where their absolute values add up to more than 2^53.
pub fn exact_f64(weights: &IntWeights<'_>, bins: &BinSpec) -> Result<Vec<f64>> {
    check_numpy(weights, bins)?;
    let ty = weights.int_type();
    let total = weights.magnitude();
    if total > EXACT_SUM_LIMIT {
        return Err(Error::NotImplemented(format!(
            "{ty} weights whose absolute values add up to {total}, more than 2^53, on several \
             GPUs, ranks or a streamed input, which sum integer weights in float64: their sums \
             cannot be promised exact there; run on the CPU or one GPU without streaming (exact \
             64-bit sums), scale them down, or pass float64 weights"
        )));
    }
    Ok(weights.to_f64())
}

/// The engines' float64 sums (exact integers, [`exact_f64`]'s guarantee) as sums wrapped into
/// `ty`. A sum that is not an exact integer within 2^53 is an internal error, never a wrong value.
pub fn wrap_sums(sums: &[f64], ty: IntType) -> Result<Vec<i64>> {
    sums.iter()
        .map(|&s| {
            if s.fract() != 0.0 || s.abs() > EXACT_SUM_LIMIT as f64 {
                return Err(Error::InvalidArgument(format!(
                    "internal: a sum of integer weights came back as {s}, not an exact integer"
                )));
            }
            Ok(ty.wrap(s as i64))
        })
        .collect()
}

/// numpy's density of integer sums: `n / width / n.sum()` in float64, `n.sum()` of the wrapped
/// values in 64-bit integers (bool: the number of true bins).
pub fn density(sums: &[i64], widths: &[f64]) -> Vec<f64> {
    let total = sums.iter().map(|&s| s as i128).sum::<i128>() as f64;
    sums.iter()
        .zip(widths)
        .map(|(&n, &w)| n as f64 / w / total)
        .collect()
}

/// The error of an engine that sums in float64 handed integer weights that the API did not widen
/// first (a bug).
pub(crate) fn unwidened() -> Error {
    Error::InvalidArgument(
        "internal: integer weights reached a GPU engine that sums float64 without being widened \
         (histogram, histogram_file_with_progress, bincount and histogramdd widen them for it)"
            .into(),
    )
}

/// What the weights of a call were, for its result: float32 weights (numpy's density sums them in
/// float32), integer weights of a type (the sums keep it), or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WeightClass {
    Float32,
    Int(IntType),
    Other,
}

impl WeightClass {
    pub(crate) fn of(weights: &Option<crate::sample::Weights<'_>>) -> WeightClass {
        match weights {
            Some(crate::sample::Weights::F32(_)) => WeightClass::Float32,
            Some(crate::sample::Weights::Int(w)) => WeightClass::Int(w.int_type()),
            _ => WeightClass::Other,
        }
    }

    /// The engine's counts as the call returns them: integer weights' sums (exact int64 modulo
    /// 2^64, or float64 sums of widened weights) wrapped into their type.
    pub(crate) fn counts(self, counts: Counts) -> Result<Counts> {
        match (self, counts) {
            (WeightClass::Int(dtype), Counts::Weighted(s)) => Ok(Counts::Integer {
                sums: wrap_sums(&s, dtype)?,
                dtype,
            }),
            (WeightClass::Int(dtype), Counts::Integer { sums, .. }) => Ok(Counts::Integer {
                sums: sums.into_iter().map(|s| dtype.wrap(s)).collect(),
                dtype,
            }),
            (WeightClass::Int(_), other) => Err(Error::InvalidArgument(format!(
                "internal: integer weights gave {} bins of another kind than weighted sums",
                other.len()
            ))),
            (_, counts) => Ok(counts),
        }
    }
}

/// Integer weights checked against numpy's semantics ([`check_numpy`]) and, where the engine that
/// runs the call sums them in float64 (`exact` false), widened (`wide`, which must outlive the
/// returned view); other weights as they are.
pub(crate) fn prepare<'a>(
    weights: Option<crate::sample::Weights<'a>>,
    bins: &BinSpec,
    exact: bool,
    wide: &'a mut Vec<f64>,
) -> Result<Option<crate::sample::Weights<'a>>> {
    match weights {
        Some(crate::sample::Weights::Int(w)) if exact => {
            check_numpy(&w, bins)?;
            Ok(Some(crate::sample::Weights::Int(w)))
        }
        Some(crate::sample::Weights::Int(w)) => {
            *wide = exact_f64(&w, bins)?;
            Ok(Some(crate::sample::Weights::F64(wide)))
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_magnitude_is_the_largest_blocks_sum() {
        let w: Vec<i32> = (0..700_000i64)
            .map(|i| ((i * 7919 + 13) % 200_003 - 100_000) as i32)
            .collect();
        let mut m: Vec<u64> = w.iter().map(|&x| x.unsigned_abs() as u64).collect();
        m.sort_unstable_by(|a, b| b.cmp(a));
        let want: u128 = m[..NUMPY_BLOCK].iter().map(|&v| v as u128).sum();
        assert_eq!(IntWeights::I32(&w).block_magnitude(), want);
        let small = [3i32, -4, 5];
        assert_eq!(IntWeights::I32(&small).block_magnitude(), 12);
    }

    #[test]
    fn only_the_float64_paths_refuse_sums_beyond_2_53() {
        let big = [1i64 << 52, 1 << 52, 7];
        let w = IntWeights::I64(&big);
        let bins = BinSpec::Uniform {
            nbins: 4,
            range: Some((0.0, 1.0)),
        };
        let e = exact_f64(&w, &bins).unwrap_err();
        assert!(e.to_string().contains("2^53"), "{e}");
        let mut wide = Vec::new();
        let weights = Some(crate::sample::Weights::Int(w));
        let exact = prepare(weights, &bins, true, &mut wide).unwrap();
        assert!(matches!(exact, Some(crate::sample::Weights::Int(_))));
        assert!(prepare(weights, &bins, false, &mut wide).is_err());
        let small = [3i64, -4];
        let widened = prepare(
            Some(crate::sample::Weights::Int(IntWeights::I64(&small))),
            &bins,
            false,
            &mut wide,
        )
        .unwrap();
        assert!(matches!(widened, Some(crate::sample::Weights::F64(v)) if v == [3.0, -4.0]));
        // numpy's refusals hold on every path.
        let flags = [true, false];
        let edges = BinSpec::Edges(vec![0.0, 1.0]);
        let b = Some(crate::sample::Weights::Int(IntWeights::Bool(&flags)));
        assert!(prepare(b, &edges, true, &mut wide).is_err());
    }

    #[test]
    fn engine_sums_wrap_into_the_weights_type() {
        let c = WeightClass::Int(IntType::I8)
            .counts(Counts::Integer {
                sums: vec![203, -129, 1 << 40],
                dtype: IntType::I64,
            })
            .unwrap();
        assert_eq!(
            c,
            Counts::Integer {
                sums: vec![-53, 127, 0],
                dtype: IntType::I8
            }
        );
    }

    #[test]
    fn wrapping_follows_each_type() {
        assert_eq!(IntType::I8.wrap(203), -53);
        assert_eq!(IntType::U8.wrap(-1), 255);
        assert_eq!(IntType::I32.wrap(1 << 33), 0);
        assert_eq!(IntType::U16.wrap(65536 + 7), 7);
        assert_eq!(IntType::Bool.wrap(5), 1);
        assert_eq!(IntType::Bool.wrap(0), 0);
        assert!(wrap_sums(&[0.5], IntType::I64).is_err());
    }
}
