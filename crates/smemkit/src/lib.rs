//! smemkit: GPU on-chip memory put to work. Histograms in per-block shared memory, in distributed
//! shared memory across a Hopper thread block cluster, or in global memory, chosen by a planner;
//! the shared-memory array operations, matrix multiply through shared-memory tiles and the
//! bank-conflict lab (`smemkit lab`); and a rayon CPU engine that runs everything on machines
//! without a GPU and serves as the reference for the GPU engine.
//!
//! The API, one module per operation:
//! - [`histogram`]: 1-D histograms of host samples or of a file ([`histogram::histogram`],
//!   [`histogram::run`]), `bincount`, strategies, streaming and several GPUs or processes;
//! - [`bins`]: the bins every operation shares, and numpy's bin-count estimators;
//! - [`device`]: histograms and estimators of data already in GPU memory;
//! - [`histogramdd`]: joint histograms of several coordinates;
//! - [`digitize`]: the bin index of each sample;
//! - [`ops`]: stencil, transpose and reverse; [`matmul`]: matrix multiply;
//! - [`sample`]: the sample and weight slices the operations take.
//!
//! Operations on host memory take a [`Backend`] (the CPU, CUDA, or a choice by size); every call
//! answers with this crate's [`Result`] and its typed [`Error`].
//!
//! ```
//! use smemkit::bins::BinSpec;
//! use smemkit::histogram::{histogram, Counts, HistogramOptions};
//! use smemkit::{sample::Samples, Backend};
//!
//! let data = [0i32, 1, 1, 3, 7];
//! let options = HistogramOptions::new(BinSpec::Integer { nbins: 4 }).backend(Backend::Cpu);
//! let h = histogram(Samples::I32(&data), None, &options).unwrap();
//! assert_eq!(h.counts, Counts::Unweighted(vec![1, 2, 0, 1]));
//! assert_eq!(h.tallies.above, 1);
//! ```

#![deny(missing_docs)]

mod array_ops;
mod backend;
#[doc(hidden)]
mod config;
pub mod digitize;
mod element;
mod error;
#[doc(hidden)]
mod gpu;
pub mod histogram;
pub mod histogramdd;
#[doc(hidden)]
mod huge_pages;
mod int_weights;
#[doc(hidden)]
mod lab;
#[doc(hidden)]
mod launch;
pub mod matmul;
pub mod sample;
mod search_table;

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

pub use backend::Backend;
/// The cudarc this library is built with: device buffers and streams passed to
/// [`device::DeviceHistogram`] come from it.
pub use cudarc;
pub use error::{Error, Result};
pub use gpu::{gpu, gpu_at, Gpu};

pub mod bins {
    //! Bins shared by every histogram and by `digitize`'s callers: the bin choice ([`BinSpec`]), the
    //! resolved bins with numpy's rule ([`Binning`]), what happens to samples outside them
    //! ([`OutOfRange`]), and numpy's bin-count estimators ([`BinRule`]).

    pub use crate::histogram::bins::estimators::{
        estimate_bin_count, histogram_bin_edges, BinRule,
    };
    pub use crate::histogram::bins::int_edges::IntEdges;
    pub use crate::histogram::bins::{BinSpec, Binning, OutOfRange, Slot};
}

pub mod device {
    //! Histograms of data already in GPU memory, on the caller's stream and without a host round trip:
    //! a [`DeviceHistogram`] built once and run many times (CUDA graphs included), and numpy's bin
    //! estimators computed on the device ([`estimate_bins`]).

    pub use crate::histogram::cuda::device_histogram::{
        DeviceHistogram, DeviceHistogramSpec, DeviceOutput, DeviceWeights, RawBuffers,
    };
    pub use crate::histogram::cuda::estimate::{estimate_bins, estimate_bins_raw, DeviceEstimate};
    pub use crate::histogram::cuda::prepared::WeightKind;
    pub use crate::histogram::sums::WeightSums;
}

pub mod ops {
    //! The shared-memory array operations: a 1-D stencil ([`stencil1d`]), a tiled transpose
    //! ([`transpose`]) and a reverse ([`reverse`]), each on the CPU or the GPU, over the element types
    //! of [`Element`].

    pub use crate::array_ops::reverse::{reverse, ReverseKernel};
    pub use crate::array_ops::stencil::{stencil1d, Boundary};
    pub use crate::array_ops::transpose::transpose;
    pub use crate::element::{Element, StencilElement};
}
