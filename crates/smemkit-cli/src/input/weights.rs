//! `--weights FILE`: one weight per sample, from a `.npy` file (f32 and f64 are used as they are,
//! mapped in place; integer arrays are converted to f64) or a text file of one number per line.

use std::path::Path;

use anyhow::Result;
use smemkit::{Samples, Weights};

use super::data::{OwnedSamples, SampleData};
use super::{npy, text, FileKind};

/// Weights held for the duration of the histogram.
#[derive(Debug)]
pub struct WeightData(SampleData);

impl WeightData {
    pub fn read(path: &Path) -> Result<WeightData> {
        let data = match FileKind::of(path, None) {
            Ok(FileKind::Npy) => npy::read(path)?,
            _ => SampleData::Owned(OwnedSamples::F64(text::read_f64(path)?)),
        };
        let data = match data.samples() {
            Samples::F32(_) | Samples::F64(_) => data,
            other => SampleData::Owned(OwnedSamples::F64(super::to_f64(other))),
        };
        Ok(WeightData(data))
    }

    pub fn weights(&self) -> Weights<'_> {
        match self.0.samples() {
            Samples::F32(w) => Weights::F32(w),
            Samples::F64(w) => Weights::F64(w),
            // `read` converts every other type to f64.
            _ => Weights::F64(&[]),
        }
    }
}
