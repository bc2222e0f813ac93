//! smemkit: GPU on-chip memory put to work. Histograms in per-block shared memory, in distributed
//! shared memory across a Hopper thread block cluster, or in global memory, chosen by a planner;
//! the shared-memory array operations ([`stencil1d()`], [`transpose()`], [`reverse()`]), matrix
//! multiply through shared-memory tiles ([`matmul()`]) and the bank-conflict lab (`smemkit lab`); and a
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

#![deny(missing_docs)]

mod array_ops;
mod backend;
#[doc(hidden)]
mod config;
mod digitize;
mod element;
mod error;
#[doc(hidden)]
mod gpu;
mod histogram;
mod histogramdd;
#[doc(hidden)]
mod huge_pages;
mod int_weights;
#[doc(hidden)]
mod lab;
#[doc(hidden)]
mod launch;
mod matmul;
mod sample;

/// Not API: the parts the `smemkit` binary's benchmarks, tools and tests reach into (prepared
/// kernels, streaming, host memory, the compiler, NCCL, the planner, the labs, the launchers).
/// Everything here may change or go without notice; it is public only because the binary is
/// another crate.
#[doc(hidden)]
pub mod internals {
    /// The shared-memory array operations' engines.
    pub mod array_ops {
        pub use crate::array_ops::*;
    }
    /// Backend resolution.
    pub mod backend {
        pub use crate::backend::*;
    }
    /// Every `SMEMKIT_*` environment variable.
    pub mod config {
        pub use crate::config::*;
    }
    /// The CUDA runtime every operation shares.
    pub mod gpu {
        pub use crate::gpu::*;
    }
    /// numpy.digitize's engines (the CPU one and the GPU kernel).
    pub mod digitize {
        pub use crate::digitize::*;
    }
    /// The histogram's bins, planner and engines.
    pub mod histogram {
        pub use crate::histogram::*;
    }
    /// The joint histogram's engines.
    pub mod histogramdd {
        pub use crate::histogramdd::*;
    }
    /// The bank-conflict and cache labs.
    pub mod lab {
        pub use crate::lab::*;
    }
    /// Launchers' environments and the rendezvous of several processes.
    pub mod launch {
        pub use crate::launch::*;
    }
    /// The matrix multiply's engines.
    pub mod matmul {
        pub use crate::matmul::*;
    }
}

pub use array_ops::reverse::{reverse, ReverseKernel};
pub use array_ops::stencil::{stencil1d, Boundary};
pub use array_ops::transpose::transpose;
pub use backend::Backend;
/// The cudarc this library is built with: device buffers and streams passed to
/// [`DeviceHistogram`] come from it.
pub use cudarc;
pub use digitize::{digitize, digitize_on};
pub use element::{Element, StencilElement};
pub use error::{Error, Result};
pub use gpu::{gpu, gpu_at, Gpu};
pub use histogram::bincount::bincount;
pub use histogram::bins::estimators::{estimate_bin_count, histogram_bin_edges, BinRule};
pub use histogram::bins::int_edges::IntEdges;
pub use histogram::bins::{BinSpec, Binning, OutOfRange, Slot};
pub use histogram::cuda::device_histogram::{
    DeviceHistogram, DeviceHistogramSpec, DeviceOutput, DeviceWeights, RawBuffers,
};
pub use histogram::cuda::estimate::{estimate_bins, estimate_bins_raw, DeviceEstimate};
pub use histogram::cuda::multi::DeviceSet;
pub use histogram::cuda::prepared::WeightKind;
pub use histogram::cuda::ranks::RankSpec;
pub use histogram::cuda::stream::{FileInput, StreamMode, StreamOptions};
pub use histogram::plan::{Strategy, StrategyChoice};
pub use histogram::request::{run, Input, Request};
pub use histogram::{
    histogram, streams_to_one_gpu, BinPart, Counts, EngineReport, Histogram, HistogramOptions,
    Tallies,
};
pub use histogramdd::{
    histogram2d, histogramdd, JointHistogram, JointOptions, JointSamples, JointTallies,
};
pub use int_weights::{IntType, IntWeights};
pub use matmul::{matmul, MatmulKernel, MatrixMut, MatrixRef};
pub use sample::{Sample, SampleType, Samples, Weights};
