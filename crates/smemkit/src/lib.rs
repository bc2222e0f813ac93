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

pub mod bincount;
pub mod bins;
pub mod cpu;
pub mod cuda;
pub mod density;
pub mod digitize;
pub mod element;
mod engine_support;
pub mod error;
pub mod estimators;
pub mod histogram;
pub mod int_edges;
pub mod lab;
pub mod matmul;
pub mod plan;
pub mod reverse;
pub mod sample;
mod stats;
pub mod stencil;
pub mod transpose;

pub use bincount::{bincount, bincount_length};
pub use bins::{BinSpec, Binning, OutOfRange, Slot};
pub use cuda::multi::DeviceSet;
pub use cuda::ranks::RankSpec;
pub use cuda::stream::{FileInput, StreamMode, StreamOptions};
pub use digitize::digitize;
pub use element::{Element, StencilElement};
pub use error::{Error, Result};
pub use estimators::{estimate_bin_count, histogram_bin_edges, BinRule};
pub use histogram::{
    histogram, histogram_file_with_progress, histogram_with_progress, streams_to_one_gpu, Backend,
    Counts, EngineReport, Histogram, HistogramOptions, Tallies,
};
pub use int_edges::IntEdges;
pub use matmul::{matmul, MatmulKernel, MatrixMut, MatrixRef};
pub use plan::{Strategy, StrategyChoice};
pub use reverse::{reverse, ReverseKernel};
pub use sample::{Sample, SampleType, Samples, Weights};
pub use stencil::{stencil1d, Boundary};
pub use transpose::transpose;
