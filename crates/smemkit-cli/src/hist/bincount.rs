//! `smemkit hist` on integer samples without `--bins`: numpy's bincount, whose length comes from
//! the data (max + 1, at least `--minlength`). numpy refuses arrays that are not one-dimensional
//! here (its histogram flattens them), and so does this command for `.npy` input.

use anyhow::{bail, Result};
use smemkit::{Histogram, RankSpec};

use super::config::{HistConfig, Source};
use crate::input::weights::WeightData;
use crate::input::SampleData;

pub fn run(
    config: &HistConfig,
    ranks: &Option<RankSpec>,
    data: &SampleData,
    weights: Option<&WeightData>,
) -> Result<Histogram> {
    if ranks.is_some() {
        bail!("integer bins sized by the data need all of it in one process: give --bins N with several ranks");
    }
    if let Source::File { path, .. } = &config.source {
        if let Some(ndim) = crate::input::edges::npy_ndim(path)? {
            if ndim != 1 {
                bail!(
                    "{}: bincount (integer bins sized by the data) needs a one-dimensional array, this one has {ndim} dimensions (numpy refuses it too); give --bins N to histogram it flat",
                    path.display()
                );
            }
        }
    }
    if config.density {
        bail!("--density needs --bins, --range or --edges (numpy's bincount has no density)");
    }
    Ok(smemkit::bincount(
        data.samples(),
        weights.map(WeightData::weights),
        config.bins.minlength,
        config.backend,
    )?)
}
