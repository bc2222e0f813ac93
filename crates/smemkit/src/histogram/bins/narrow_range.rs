//! Uniform bins over a range held in a narrower float type than the one numpy bins the samples
//! in: `range=(np.float32(a), np.float32(b))` for float64 or int64 samples. numpy's `linspace`
//! and the range's width `last - first` then run in the range's type (float32 or float16), while
//! each sample's estimate `(x - first) / width * n` and its corrections against the edges run in
//! float64. Those bins are float64 bins ([`UniformF64`]) with narrow edges and width, which are
//! what numpy's data-range arithmetic in the range's type gives ([`extremes`]).

use super::{extremes, BinSpec, Binning, UniformF64};
use crate::error::{Error, Result};
use crate::sample::{SampleType, Samples};

/// [`BinSpec::UniformInRangeType`] resolved for `samples`.
pub(super) fn resolve(
    nbins: usize,
    (lo, hi): (f64, f64),
    range_type: SampleType,
    samples: Samples<'_>,
) -> Result<Binning> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(Error::NonFiniteRange { lo, hi });
    }
    if lo > hi {
        return Err(Error::InvertedRange { lo, hi });
    }
    if nbins == 0 {
        return Err(Error::ZeroBins);
    }
    let ty = samples.sample_type();
    if ty == range_type {
        let range = (lo, hi);
        return Binning::resolve(&BinSpec::UniformInSampleType { nbins, range }, samples);
    }
    if !matches!(range_type, SampleType::F32 | SampleType::F16) {
        return Err(Error::InvalidArgument(format!(
            "a typed range is float32 or float16, not {range_type}"
        )));
    }
    if !in_float64(ty) {
        return Err(Error::NotImplemented(format!(
            "a range of {range_type} values for {ty} samples: numpy bins those in a type narrower than float64; convert the samples to it first (exact)"
        )));
    }
    // The range's type over its two values: numpy's edges and width over a data range there.
    let over_data = BinSpec::Uniform { nbins, range: None };
    let narrow =
        extremes::resolve_from_extremes(&over_data, range_type, Some((lo, hi))).map_err(|_| {
            Error::InvalidArgument(format!(
                "the range ({lo}, {hi}) is not two values of {range_type}"
            ))
        })?;
    let (first, last, width, edges): (f64, f64, f64, Vec<f64>) = match narrow {
        Binning::UniformF32(u) => (
            u.first as f64,
            u.last as f64,
            u.denom,
            u.edges.iter().map(|&e| e as f64).collect(),
        ),
        Binning::UniformHalf(u) => match u.arith {
            super::half::HalfArith::Data { denom, .. } => (
                u.first as f64,
                u.last as f64,
                denom as f64,
                u.edges.iter().map(|&e| e as f64).collect(),
            ),
            super::half::HalfArith::Range { .. } => unreachable!("bins over data"),
        },
        other => unreachable!("{range_type} bins over data resolve as {other:?}"),
    };
    let mut bins = UniformF64::new(nbins, first, last, width, edges);
    bins.narrow_type = Some(range_type);
    Ok(Binning::UniformF64(bins))
}

/// Whether numpy bins samples of `ty` in float64 beside a float32 or float16 range: float64
/// samples and integers of 32 bits or more (narrower ones promote to the range's type, or to
/// float32 beside float16).
fn in_float64(ty: SampleType) -> bool {
    use SampleType::*;
    matches!(ty, F64 | I32 | U32 | I64 | U64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// float64 samples over a float32 range: float32 edges and width (not float64's linspace of
    /// the same two values), float64 comparisons; integers of 16 bits are refused (numpy bins
    /// them in float32), and the GPU is told apart.
    #[test]
    fn float32_range_for_float64_samples() {
        let (lo, hi) = (-3.3f32, 4.1f32);
        let spec = BinSpec::UniformInRangeType {
            nbins: 7,
            range: (lo as f64, hi as f64),
            range_type: SampleType::F32,
        };
        let data = [0.5f64, -3.3, 4.1];
        let Binning::UniformF64(u) = Binning::resolve(&spec, Samples::F64(&data)).unwrap() else {
            panic!("float64 bins");
        };
        assert_eq!(u.narrow_type(), Some(SampleType::F32));
        assert_eq!(u.denom, (hi - lo) as f64);
        let step = (hi - lo) / 7.0;
        assert_eq!(u.edges[1], (step + lo) as f64);
        assert_eq!(u.edges[7], hi as f64);
        let wide = BinSpec::Uniform {
            nbins: 7,
            range: Some((lo as f64, hi as f64)),
        };
        assert_ne!(
            Binning::resolve(&wide, Samples::F64(&data))
                .unwrap()
                .edges(),
            u.edges
        );
        let err = Binning::resolve(&spec, Samples::I16(&[1])).unwrap_err();
        assert!(err.to_string().contains("narrower"), "{err}");
        let not_f32 = BinSpec::UniformInRangeType {
            nbins: 7,
            range: (0.1, 1.0),
            range_type: SampleType::F32,
        };
        assert!(Binning::resolve(&not_f32, Samples::F64(&data)).is_err());
    }
}
