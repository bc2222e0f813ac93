//! Bin edges from a file, read as numpy reads `bins=`: a `.npy` array must be one-dimensional
//! (numpy refuses other shapes rather than flattening them), and int64 / uint64 edges keep their
//! integer values exactly (beyond 2^53 they would merge in float64) so that the library can compare
//! integer samples with them in the samples' own type, as numpy's `searchsorted` does.

use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::{BinSpec, IntEdges, Samples};

use super::FileKind;

/// Edges as read: float edges, or integer edges held exactly.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgeValues {
    Float(Vec<f64>),
    Int(IntEdges),
}

impl EdgeValues {
    /// The edges as f64 (rounded beyond 2^53 for integer edges: for checks and descriptions only).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            EdgeValues::Float(e) => e.clone(),
            EdgeValues::Int(e) => e.to_f64(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            EdgeValues::Float(e) => e.len(),
            EdgeValues::Int(e) => e.len(),
        }
    }
    /// The library's bin specification.
    pub fn spec(&self) -> BinSpec {
        match self {
            EdgeValues::Float(e) => BinSpec::Edges(e.clone()),
            EdgeValues::Int(e) => BinSpec::IntEdges(e.clone()),
        }
    }
}

/// Reads edges from `.npy` (any numeric dtype, one-dimensional) or text (one number per line).
pub fn read(path: &Path) -> Result<EdgeValues> {
    if !matches!(FileKind::of(path, None), Ok(FileKind::Npy)) {
        return Ok(EdgeValues::Float(super::text::read_f64(path)?));
    }
    let ndim = npy_header_ndim(path)?;
    if ndim != 1 {
        bail!("bins must be a one-dimensional array (numpy refuses other shapes), this one has {ndim} dimensions");
    }
    let data = super::npy::read(path)?;
    Ok(match data.samples() {
        Samples::I64(e) => EdgeValues::Int(IntEdges::I64(e.to_vec())),
        Samples::U64(e) => EdgeValues::Int(IntEdges::U64(e.to_vec())),
        other => EdgeValues::Float(super::to_f64(other)),
    })
}

/// The number of dimensions of a `.npy` file (`None` for other files, which are one column).
pub fn npy_ndim(path: &Path) -> Result<Option<usize>> {
    if !matches!(FileKind::of(path, None), Ok(FileKind::Npy)) {
        return Ok(None);
    }
    npy_header_ndim(path).map(Some)
}

/// The number of dimensions the `.npy` header at `path` declares.
fn npy_header_ndim(path: &Path) -> Result<usize> {
    // The layout reader refuses forged shapes before npyz multiplies them out.
    super::npy::read_layout(path)?;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let header = npyz::NpyHeader::from_reader(&mut reader)
        .map_err(|e| anyhow::anyhow!("{} is not a valid .npy file: {e}", path.display()))?;
    Ok(header.shape().len())
}
