//! A histogram request as one value: where the samples are ([`Input`]), their weights, every choice
//! ([`HistogramOptions`]: bins, policy, backend, strategy, streaming, devices, ranks) and the
//! progress callback. [`run`] is the one dispatch; the older entry points are thin forms of it.

use crate::error::Result;
use crate::histogram::cuda::stream::FileInput;
use crate::histogram::{Histogram, HistogramOptions};
use crate::sample::{Samples, Weights};

/// Where the samples of a histogram are. More kinds will come (device memory), so matches need a
/// wildcard arm.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Input<'a> {
    /// Samples in host memory.
    Host(Samples<'a>),
    /// Samples in a file, streamed from it to one GPU by positioned reads (never mapped nor loaded).
    File(&'a FileInput),
}

impl Input<'_> {
    /// Number of samples.
    pub fn len(&self) -> usize {
        match self {
            Input::Host(s) => s.len(),
            Input::File(f) => f.len(),
        }
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One histogram request.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// The samples.
    pub input: Input<'a>,
    /// One weight per sample, or none for counts.
    pub weights: Option<Weights<'a>>,
    /// Bins, out-of-range policy, backend, strategy, streaming, devices and ranks.
    pub options: &'a HistogramOptions,
    /// Told the bytes of samples handed to the GPU so far while an input streams.
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
}

impl<'a> Request<'a> {
    /// A request for the samples of `input` with `options`, unweighted, without progress.
    pub fn new(input: Input<'a>, options: &'a HistogramOptions) -> Self {
        Request {
            input,
            weights: None,
            options,
            progress: None,
        }
    }

    /// The same request with weights.
    pub fn weights(mut self, weights: Option<Weights<'a>>) -> Self {
        self.weights = weights;
        self
    }

    /// The same request with a progress callback.
    pub fn progress(mut self, progress: Option<&'a (dyn Fn(u64) + Sync)>) -> Self {
        self.progress = progress;
        self
    }
}

/// Runs a histogram request on the engine its options choose.
pub fn run(request: &Request<'_>) -> Result<Histogram> {
    match request.input {
        Input::Host(samples) => super::histogram_with_progress(
            samples,
            request.weights,
            request.options,
            request.progress,
        ),
        Input::File(file) => super::histogram_file_with_progress(
            file,
            request.weights,
            request.options,
            request.progress,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bins::BinSpec, histogram::Counts, Backend};

    #[test]
    fn a_request_runs_like_the_direct_call() {
        let data = [0i32, 1, 1, 3, 7];
        let weights = [1.0f64, 2.0, 3.0, 4.0, 5.0];
        let options = HistogramOptions::new(BinSpec::Integer { nbins: 4 }).backend(Backend::Cpu);
        let request = Request::new(Input::Host(Samples::I32(&data)), &options)
            .weights(Some(Weights::F64(&weights)));
        assert_eq!(request.input.len(), 5);
        let h = run(&request).unwrap();
        assert_eq!(h.counts, Counts::Weighted(vec![1.0, 5.0, 0.0, 4.0]));
        assert_eq!(h.tallies.above, 1);
        let direct =
            super::super::histogram(Samples::I32(&data), Some(Weights::F64(&weights)), &options)
                .unwrap();
        assert_eq!(h.counts, direct.counts);
    }
}
