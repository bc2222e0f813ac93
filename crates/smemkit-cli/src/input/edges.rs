//! Bin edges from a file, read as numpy reads `bins=`: a `.npy` array must be one-dimensional
//! (numpy refuses other shapes rather than flattening them), and int64 / uint64 edges keep their
//! integer values exactly (beyond 2^53 they would merge in float64) so that the library can compare
//! integer samples with them in the samples' own type, as numpy's `searchsorted` does. Text edges
//! are float64.

use std::path::Path;

use anyhow::{bail, Result};
use smemkit::{
    bins::{BinSpec, IntEdges},
    sample::Samples,
};

use super::{stream, FileKind, Parsed};

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

/// Reads edges from a `.npy` array (any numeric dtype, one-dimensional) or text (one number per
/// line), from a file or a stream (a `.npy` when it starts with the magic).
pub fn read(path: &Path) -> Result<Parsed<EdgeValues>> {
    let (npy, read) = if stream::is_stream(path) {
        let (kind, reader) = stream::open(path, None, false, "--dtype")?;
        (
            kind == FileKind::Npy,
            stream::read_samples(kind, reader, path, None, None)?,
        )
    } else if matches!(FileKind::of(path, None, "--dtype"), Ok(FileKind::Npy)) {
        (true, super::npy::read(path)?)
    } else {
        let t = super::text::read_f64(path)?;
        return Ok(Parsed {
            values: EdgeValues::Float(t.values),
            shape: t.shape,
            header: t.header,
        });
    };
    if npy && read.shape.dims.len() != 1 {
        bail!(
            "bins must be a one-dimensional array (numpy refuses other shapes), this one has shape {}",
            read.shape.describe()
        );
    }
    let values = match read.values.samples() {
        Samples::I64(e) if npy => EdgeValues::Int(IntEdges::I64(e.to_vec())),
        Samples::U64(e) if npy => EdgeValues::Int(IntEdges::U64(e.to_vec())),
        other => EdgeValues::Float(super::to_f64(other)),
    };
    Ok(Parsed {
        values,
        shape: read.shape,
        header: read.header,
    })
}
