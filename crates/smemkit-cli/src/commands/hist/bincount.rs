//! `smemkit hist` on integer samples without `--bins`: numpy's bincount, whose length comes from
//! the data (max + 1, at least `--minlength`). numpy refuses arrays that are not one-dimensional
//! here (its histogram flattens them), and so does this command for `.npy` input.

use anyhow::{bail, Result};
use smemkit::histogram::{Histogram, RankSpec};

use super::config::{HistConfig, Source};
use crate::input::weights::WeightData;
use crate::input::{SampleData, Shape};

pub fn run(
    config: &HistConfig,
    ranks: &Option<RankSpec>,
    data: &SampleData,
    shape: &Shape,
    weights: Option<&WeightData>,
) -> Result<Histogram> {
    if ranks.is_some() {
        bail!("integer bins sized by the data need all of it in one process: give --bins N with several ranks");
    }
    if shape.dims.len() != 1 {
        let what = match &config.source {
            Source::File { path, .. } => crate::input::stream::name(path),
            Source::Generate { .. } => "the samples".to_string(),
        };
        bail!(
            "{what}: bincount (integer bins sized by the data) needs a one-dimensional array, this one has shape {} (numpy refuses it too); give --bins N to histogram it flat",
            shape.describe()
        );
    }
    if config.density {
        bail!("--density needs --bins, --range or --edges (numpy's bincount has no density)");
    }
    Ok(smemkit::histogram::bincount(
        data.samples(),
        weights.map(WeightData::weights),
        config.bins.minlength,
        config.backend,
    )?)
}
