//! smemkit: GPU on-chip memory put to work. Histograms in per-block shared memory, in distributed
//! shared memory across a Hopper thread block cluster, or in global memory, chosen by a planner;
//! the shared-memory array operations ([`stencil1d()`], [`transpose()`], [`reverse()`]), matrix
//! multiply through shared-memory tiles ([`matmul()`]) and the bank-conflict lab ([`lab`]); and a
//! rayon CPU engine that runs everything on machines without a GPU and serves as the reference for
//! the GPU engine.
//!
//! ```
//! use smemkit::{histogram, BinSpec, HistogramOptions, Backend, Samples};
//! let data = [0i32, 1, 1, 3, 7];
//! let h = histogram(Samples::I32(&data), None, &HistogramOptions::new(BinSpec::Integer { nbins: 4 }).backend(Backend::Cpu)).unwrap();
//! assert_eq!(h.counts, smemkit::Counts::Unweighted(vec![1, 2, 0, 1]));
//! assert_eq!(h.tallies.above, 1);
//! ```

pub mod array_ops;
pub mod backend;
pub mod config;
pub mod digitize;
pub mod element;
pub mod error;
pub mod gpu;
pub mod histogram;
pub mod histogramdd;
pub(crate) mod huge_pages;
pub mod lab;
pub mod launch;
pub mod matmul;
pub mod sample;

/// Old paths of the operation modules, kept while callers move to the operation-first layout.
#[doc(hidden)]
pub mod cuda {
    pub use crate::array_ops::cuda as ops;
    pub use crate::backend::resolve_backend;
    pub use crate::gpu::*;
    pub use crate::histogram::cuda::{
        bench, bin_shards, multi, params, prepared as histogram, ranks, stream,
    };
    pub use crate::lab::cache as cache_lab;
    pub use crate::matmul::cuda as matmul;
    pub use crate::matmul::cuda::autotune;
    pub use crate::matmul::cuda::cublas;
}
#[doc(hidden)]
pub mod cpu {
    pub use crate::array_ops::cpu::{reverse, stencil, transpose};
    pub use crate::histogram::cpu as histogram;
    pub use crate::matmul::cpu as matmul;
}
#[doc(hidden)]
pub use array_ops::{reverse, stencil, transpose};
#[doc(hidden)]
pub use histogram::{bins, plan};

pub use array_ops::reverse::{reverse, ReverseKernel};
pub use array_ops::stencil::{stencil1d, Boundary};
pub use array_ops::transpose::transpose;
pub use backend::Backend;
/// The cudarc this library is built with: device buffers and streams passed to
/// [`DeviceHistogram`] come from it.
pub use cudarc;
pub use digitize::digitize;
pub use element::{Element, StencilElement};
pub use error::{Error, Result};
pub use histogram::bincount::{bincount, bincount_length};
pub use histogram::bins::estimators::{estimate_bin_count, histogram_bin_edges, BinRule};
pub use histogram::bins::int_edges::IntEdges;
pub use histogram::bins::{BinSpec, Binning, OutOfRange, Slot};
pub use histogram::cuda::device_histogram::{
    DeviceHistogram, DeviceHistogramSpec, DeviceOutput, DeviceWeights, RawBuffers,
};
pub use histogram::cuda::multi::DeviceSet;
pub use histogram::cuda::prepared::WeightKind;
pub use histogram::cuda::ranks::RankSpec;
pub use histogram::cuda::stream::{FileInput, StreamMode, StreamOptions};
pub use histogram::plan::{Strategy, StrategyChoice};
pub use histogram::request::{run, Input, Request};
pub use histogram::{
    histogram, histogram_file_with_progress, histogram_with_progress, streams_to_one_gpu, Counts,
    EngineReport, Histogram, HistogramOptions, Tallies,
};
pub use histogramdd::{
    histogram2d, histogramdd, JointHistogram, JointOptions, JointSamples, JointTallies,
};
pub use matmul::{matmul, MatmulKernel, MatrixMut, MatrixRef};
pub use sample::{Sample, SampleType, Samples, Weights};
