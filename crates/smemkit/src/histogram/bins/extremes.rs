//! Bins from the data's range when only its two extremes are at hand: numpy's uniform bins
//! without a range depend on the samples through their minimum and maximum alone (and whether
//! there are any), so [`Binning::resolve`] of the two values gives the bins of the whole data.
//! A caller holding the samples on a GPU reads the extremes there (a reduction, then two values
//! back) and resolves the bins here, never copying the samples to the host.

use super::{BinSpec, Binning};
use crate::error::{Error, Result};
use crate::sample::{SampleType, Samples};

/// [`Binning::resolve`] of `spec` for samples of type `ty` whose minimum and maximum are
/// `extremes` (`None`: no samples). The extremes must be values of `ty` (they are the data's);
/// NaN or infinity is numpy's error, as for the whole data.
pub fn resolve_from_extremes(
    spec: &BinSpec,
    ty: SampleType,
    extremes: Option<(f64, f64)>,
) -> Result<Binning> {
    let Some((lo, hi)) = extremes else {
        return Binning::resolve(spec, empty(ty));
    };
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(Error::NonFiniteData { lo, hi });
    }
    if lo > hi {
        return Err(Error::InvalidArgument(format!(
            "the data's extremes {lo} and {hi}: the minimum is above the maximum"
        )));
    }
    macro_rules! exact {
        ($t:ty, $to:expr, $back:expr, $tag:ident) => {{
            let to = $to;
            let back = $back;
            let pair: [$t; 2] = [to(lo), to(hi)];
            if back(pair[0]) != lo || back(pair[1]) != hi {
                return Err(Error::InvalidArgument(format!(
                    "the data's extremes {lo} and {hi} are not both values of {ty}"
                )));
            }
            Binning::resolve(spec, Samples::$tag(&pair))
        }};
    }
    match ty {
        SampleType::U8 => exact!(u8, |v: f64| v as u8, |v: u8| v as f64, U8),
        SampleType::U16 => exact!(u16, |v: f64| v as u16, |v: u16| v as f64, U16),
        SampleType::U32 => exact!(u32, |v: f64| v as u32, |v: u32| v as f64, U32),
        SampleType::U64 => exact!(u64, |v: f64| v as u64, |v: u64| v as f64, U64),
        SampleType::I8 => exact!(i8, |v: f64| v as i8, |v: i8| v as f64, I8),
        SampleType::I16 => exact!(i16, |v: f64| v as i16, |v: i16| v as f64, I16),
        SampleType::I32 => exact!(i32, |v: f64| v as i32, |v: i32| v as f64, I32),
        SampleType::I64 => exact!(i64, |v: f64| v as i64, |v: i64| v as f64, I64),
        SampleType::F32 => exact!(f32, |v: f64| v as f32, |v: f32| v as f64, F32),
        SampleType::F64 => exact!(f64, |v: f64| v, |v: f64| v, F64),
        SampleType::F16 => exact!(
            half::f16,
            half::f16::from_f64,
            |v: half::f16| v.to_f64(),
            F16
        ),
        SampleType::BF16 => exact!(
            half::bf16,
            half::bf16::from_f64,
            |v: half::bf16| v.to_f64(),
            BF16
        ),
    }
}

fn empty(ty: SampleType) -> Samples<'static> {
    match ty {
        SampleType::U8 => Samples::U8(&[]),
        SampleType::U16 => Samples::U16(&[]),
        SampleType::U32 => Samples::U32(&[]),
        SampleType::U64 => Samples::U64(&[]),
        SampleType::I8 => Samples::I8(&[]),
        SampleType::I16 => Samples::I16(&[]),
        SampleType::I32 => Samples::I32(&[]),
        SampleType::I64 => Samples::I64(&[]),
        SampleType::F32 => Samples::F32(&[]),
        SampleType::F64 => Samples::F64(&[]),
        SampleType::F16 => Samples::F16(&[]),
        SampleType::BF16 => Samples::BF16(&[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// A range in the samples' own type is numpy's binning over the data's extremes of those two
    /// values (float32 arithmetic for float32 samples, not float64's of a Python-float range);
    /// values the type cannot hold, integer samples and numpy's range errors are refused.
    #[test]
    fn a_range_in_the_samples_type_bins_as_over_the_data() {
        let (lo, hi) = (-3.3f32 as f64, 4.1f32 as f64);
        let typed = BinSpec::UniformInSampleType {
            nbins: 33,
            range: (lo, hi),
        };
        let data = [-3.3f32, 4.1, 0.25];
        let over_data = BinSpec::Uniform {
            nbins: 33,
            range: None,
        };
        let got = Binning::resolve(&typed, Samples::F32(&data[2..])).unwrap();
        assert_eq!(
            got,
            Binning::resolve(&over_data, Samples::F32(&data)).unwrap()
        );
        let wide = BinSpec::Uniform {
            nbins: 33,
            range: Some((lo, hi)),
        };
        assert_ne!(
            got.edges(),
            Binning::resolve(&wide, Samples::F32(&data))
                .unwrap()
                .edges()
        );
        let refused = |range, samples| {
            Binning::resolve(&BinSpec::UniformInSampleType { nbins: 3, range }, samples)
                .unwrap_err()
                .to_string()
        };
        assert!(refused((0.1, 1.0), Samples::F32(&data)).contains("not two values"));
        assert!(refused((0.0, 1.0), Samples::I32(&[1])).contains("float samples"));
        assert!(refused((1.0, 0.0), Samples::F32(&data)).contains("1"));
        assert!(refused((0.0, f64::INFINITY), Samples::F32(&data)).contains("inf"));
    }

    /// The bins from the extremes are the bins from the whole data, for the 16-bit floats (whose
    /// data-range bins are numpy's float16 arithmetic) and the others.
    #[test]
    fn extremes_resolve_as_the_whole_data() {
        let spec = BinSpec::Uniform {
            nbins: 1000,
            range: None,
        };
        let h: Vec<f16> = (0..5000)
            .map(|i| f16::from_f32(((i * 7919) % 4001) as f32 * 0.013 - 17.0))
            .collect();
        let (lo, hi) = h
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x.to_f64()), b.max(x.to_f64()))
            });
        assert_eq!(
            resolve_from_extremes(&spec, SampleType::F16, Some((lo, hi))).unwrap(),
            Binning::resolve(&spec, Samples::F16(&h)).unwrap()
        );
        // bfloat16 holds fewer distinct edges: fewer bins.
        let spec = BinSpec::Uniform {
            nbins: 40,
            range: None,
        };
        let b: Vec<bf16> = h.iter().map(|x| bf16::from_f32(x.to_f32())).collect();
        let (lo, hi) = b
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, c), x| {
                (a.min(x.to_f64()), c.max(x.to_f64()))
            });
        assert_eq!(
            resolve_from_extremes(&spec, SampleType::BF16, Some((lo, hi))).unwrap(),
            Binning::resolve(&spec, Samples::BF16(&b)).unwrap()
        );
        // One value (numpy widens the range by 0.5) and no samples.
        let one = [f16::from_f32(3.0); 4];
        assert_eq!(
            resolve_from_extremes(&spec, SampleType::F16, Some((3.0, 3.0))).unwrap(),
            Binning::resolve(&spec, Samples::F16(&one)).unwrap()
        );
        let one = [bf16::from_f32(3.0); 4];
        assert_eq!(
            resolve_from_extremes(&spec, SampleType::BF16, Some((3.0, 3.0))).unwrap(),
            Binning::resolve(&spec, Samples::BF16(&one)).unwrap()
        );
        assert_eq!(
            resolve_from_extremes(&spec, SampleType::F16, None).unwrap(),
            Binning::resolve(&spec, Samples::F16(&[])).unwrap()
        );
        let f = [0.1f32, 7.25, -3.5];
        assert_eq!(
            resolve_from_extremes(&spec, SampleType::F32, Some((-3.5, 7.25))).unwrap(),
            Binning::resolve(&spec, Samples::F32(&f)).unwrap()
        );
    }

    #[test]
    fn bad_extremes_are_errors() {
        let spec = BinSpec::Uniform {
            nbins: 10,
            range: None,
        };
        let e = resolve_from_extremes(&spec, SampleType::F16, Some((f64::NAN, f64::NAN)));
        assert!(matches!(e, Err(Error::NonFiniteData { .. })), "{e:?}");
        let e = resolve_from_extremes(&spec, SampleType::F16, Some((0.1, 1.0))).unwrap_err();
        assert!(e.to_string().contains("not both values of float16"), "{e}");
        assert!(resolve_from_extremes(&spec, SampleType::F32, Some((2.0, 1.0))).is_err());
    }
}
