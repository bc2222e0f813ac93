//! `numpy.bincount`: integer bins whose number comes from the data. [`crate::histogram`] with
//! [`BinSpec::Integer`] needs the number of bins up front and tallies values outside them; numpy's
//! bincount instead sizes its result to the largest value plus one (`minlength` a floor), refuses
//! negative values, and gives `[]` for empty input without `minlength`.
//!
//! Unweighted counts go through the histogram engines (exact u64 on either). Weighted sums are
//! added per bin in sample order in f64, as numpy's single pass does, so they carry numpy's bits;
//! that loop runs on the CPU under the automatic and CPU backends. Under the CUDA backend the
//! weighted sums come from the GPU's histogram (the same sums, rounded in another order).

use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::histogram::bins::BinSpec;
use crate::histogram::{histogram, Backend, Counts, EngineReport, Histogram, HistogramOptions};
use crate::sample::{Sample, Samples, Weights};

/// The length numpy's bincount gives `samples`: `max + 1`, at least `minlength` (`minlength` for
/// empty input). Float samples and negative values are errors, as in numpy.
pub fn bincount_length(samples: Samples<'_>, minlength: usize) -> Result<usize> {
    if samples.sample_type().is_float() {
        return Err(Error::IntegerBinsNeedIntegers(samples.sample_type().name()));
    }
    let extremes = crate::sample::with_samples!(samples, s => int_extremes(s));
    let Some((lo, hi)) = extremes else {
        return Ok(minlength);
    };
    if lo < 0 {
        return Err(Error::InvalidArgument(format!(
            "bincount: the samples must have no negative elements (the smallest is {lo})"
        )));
    }
    let len = usize::try_from(hi + 1).map_err(|_| Error::BinsTooLarge {
        what: "bincount",
        nbins: usize::MAX,
        limit: usize::MAX,
    })?;
    Ok(len.max(minlength))
}

/// numpy's `bincount(samples, weights, minlength)` on `backend`, as a [`Histogram`] over the
/// integer bins `0, 1, ..., len` (no sample is ever outside them).
pub fn bincount(
    samples: Samples<'_>,
    weights: Option<Weights<'_>>,
    minlength: usize,
    backend: Backend,
) -> Result<Histogram> {
    if let Some(w) = &weights {
        if w.len() != samples.len() {
            return Err(Error::WeightsLength {
                samples: samples.len(),
                weights: w.len(),
            });
        }
    }
    let len = bincount_length(samples, minlength)?;
    // numpy's bincount casts integer and bool weights to float64 and returns float64 sums.
    let wide;
    let weights = match weights {
        Some(Weights::Int(w)) => {
            wide = w.to_f64();
            Some(Weights::F64(&wide))
        }
        other => other,
    };
    let sequential_weights = weights.is_some() && backend != Backend::Cuda;
    if len == 0 || sequential_weights {
        let start = Instant::now();
        let counts = match weights {
            Some(w) => Counts::Weighted(
                crate::sample::with_samples!(samples, s => weighted_in_order(s, w, len)),
            ),
            None => Counts::Unweighted(Vec::new()),
        };
        return Ok(Histogram {
            counts,
            edges: (0..=len).map(|i| i as f64).collect(),
            tallies: Default::default(),
            samples: samples.len() as u64,
            policy: Default::default(),
            engine: EngineReport {
                backend: Backend::Cpu,
                detail: "bincount: weights summed per bin in sample order (numpy's order)".into(),
            },
            elapsed: start.elapsed(),
            density: None,
            phases: Default::default(),
            auto_choice: None,
            part: None,
        });
    }
    let options = HistogramOptions::new(BinSpec::Integer { nbins: len }).backend(backend);
    histogram(samples, weights, &options)
}

/// Smallest and largest value as i128 (`None` for empty input), in one parallel pass.
fn int_extremes<T: Sample>(s: &[T]) -> Option<(i128, i128)> {
    s.par_chunks(1 << 16)
        .map(|c| {
            c.iter().fold(None, |acc: Option<(i128, i128)>, &x| {
                let v = x.to_i128();
                Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
            })
        })
        .reduce(
            || None,
            |a, b| match (a, b) {
                (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                (a, None) => a,
                (None, b) => b,
            },
        )
}

/// Weighted bins summed in sample order (every value is in `[0, len)`: checked by the caller).
fn weighted_in_order<T: Sample>(s: &[T], w: Weights<'_>, len: usize) -> Vec<f64> {
    let mut sums = vec![0.0f64; len];
    for (i, &x) in s.iter().enumerate() {
        sums[x.to_i128() as usize] += w.get(i);
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_from_the_data_with_minlength_a_floor() {
        assert_eq!(bincount_length(Samples::U8(&[3, 0, 1]), 0).unwrap(), 4);
        assert_eq!(bincount_length(Samples::U8(&[3, 0, 1]), 9).unwrap(), 9);
        assert_eq!(bincount_length(Samples::I32(&[]), 0).unwrap(), 0);
        assert_eq!(bincount_length(Samples::I32(&[]), 5).unwrap(), 5);
        assert!(bincount_length(Samples::I64(&[2, -1]), 0).is_err());
        assert!(bincount_length(Samples::F32(&[1.0]), 0).is_err());
    }

    #[test]
    fn empty_is_an_empty_result_and_counts_match_the_engine() {
        let h = bincount(Samples::I32(&[]), None, 0, Backend::Cpu).unwrap();
        assert_eq!(h.counts, Counts::Unweighted(vec![]));
        assert_eq!(h.edges, vec![0.0]);
        let h = bincount(Samples::I16(&[4, 1, 1]), None, 2, Backend::Cpu).unwrap();
        assert_eq!(h.counts, Counts::Unweighted(vec![0, 2, 0, 0, 1]));
        let w = [0.5f64, 0.25, 1.0];
        let h = bincount(
            Samples::U8(&[2, 0, 2]),
            Some(Weights::F64(&w)),
            0,
            Backend::Cpu,
        )
        .unwrap();
        assert_eq!(h.counts, Counts::Weighted(vec![0.25, 0.0, 1.5]));
    }
}
