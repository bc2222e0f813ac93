//! The CUDA C++ kernels of the repository, embedded in the library (`include_str!`) so that the
//! binary needs no CUDA toolkit: each `.cu` file with the headers it includes.

/// A CUDA source file embedded in the library, with the repository's headers it includes.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub name: &'static str,
    pub text: &'static str,
    /// `#include "name"`d files, handed to NVRTC by name.
    pub headers: &'static [Header],
    /// Built one entry point at a time (`kernels/one_kernel.cuh`): each compilation names the
    /// kernel it wants, so that a plan pays for the kernels it launches only.
    pub one_kernel: bool,
}

/// A kernel header embedded in the library.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub name: &'static str,
    pub text: &'static str,
}

/// Embeds `kernels/<file>` as a [`Header`] of that name.
macro_rules! header {
    ($file:literal) => {
        Header {
            name: $file,
            text: include_str!(concat!("../../kernels/", $file)),
        }
    };
}

/// The histogram kernels: one header per strategy family, histogram.cu only instantiates; the
/// skew verdict and the deterministic weighted sums built on their binning.
pub const HISTOGRAM: KernelSource = KernelSource {
    name: "histogram.cu",
    text: include_str!("../../kernels/histogram.cu"),
    headers: &[
        header!("one_kernel.cuh"),
        header!("search_table.cuh"),
        header!("hist_bins.cuh"),
        header!("hist_walk.cuh"),
        header!("hist_shared.cuh"),
        header!("hist_packed.cuh"),
        header!("hist_cluster.cuh"),
        header!("hist_sliced.cuh"),
        header!("hist_small.cuh"),
        header!("hist_exchange.cuh"),
        header!("hist_cluster_packed.cuh"),
        header!("hist_global.cuh"),
        header!("hist_partition.cuh"),
        header!("hist_spill.cuh"),
        header!("hist_probe.cuh"),
        header!("hist_window.cuh"),
        header!("hist_exact.cuh"),
        header!("hist_numpy_sums.cuh"),
        header!("hist_lut.cuh"),
    ],
    one_kernel: true,
};
/// numpy.digitize: a branch-free binary search over bins in shared memory.
pub const DIGITIZE: KernelSource = KernelSource {
    name: "digitize.cu",
    text: include_str!("../../kernels/digitize.cu"),
    headers: &[header!("search_table.cuh")],
    one_kernel: false,
};
/// numpy's bin estimators: extremes, pairwise sums in numpy's tree, packing, radix select, the
/// quartiles' sampled windows, ml_dtypes' bfloat16 sums.
pub const ESTIMATE: KernelSource = KernelSource {
    name: "estimate.cu",
    text: include_str!("../../kernels/estimate.cu"),
    headers: &[
        header!("est_chain.cuh"),
        header!("est_sums.cuh"),
        header!("est_trips.cuh"),
        header!("est_window.cuh"),
    ],
    one_kernel: false,
};
/// Integer and bool weights widened to int64 on the device (the histogram's integer weight kind).
pub const INT_WEIGHTS: KernelSource = KernelSource {
    name: "int_weights.cu",
    text: include_str!("../../kernels/int_weights.cu"),
    headers: &[],
    one_kernel: false,
};
/// The 1D stencil with halo.
pub const STENCIL: KernelSource = KernelSource {
    name: "stencil.cu",
    text: include_str!("../../kernels/stencil.cu"),
    headers: &[],
    one_kernel: false,
};
/// Padded and unpadded tiled transposes.
pub const TRANSPOSE: KernelSource = KernelSource {
    name: "transpose.cu",
    text: include_str!("../../kernels/transpose.cu"),
    headers: &[],
    one_kernel: false,
};
/// Reversal with static, dynamic and carved shared memory.
pub const REVERSE: KernelSource = KernelSource {
    name: "reverse.cu",
    text: include_str!("../../kernels/reverse.cu"),
    headers: &[],
    one_kernel: false,
};
/// Matrix multiply: the guide's 16 x 16 tiles, register blocking, vectorised loads, cp.async.
pub const MATMUL: KernelSource = KernelSource {
    name: "matmul.cu",
    text: include_str!("../../kernels/matmul.cu"),
    headers: &[],
    one_kernel: false,
};
/// Matrix multiply with warp tiling and a multi-stage cp.async pipeline (FP32, and TF32 tensor
/// cores with `-DTF32=1`), one tile configuration per compilation.
pub const MATMUL_WARP: KernelSource = KernelSource {
    name: "matmul_warp.cu",
    text: include_str!("../../kernels/matmul_warp.cu"),
    headers: &[
        header!("matmul_warp_pipeline.cuh"),
        header!("matmul_warp_fp32.cuh"),
        header!("matmul_warp_prefetch.cuh"),
        header!("matmul_warp_tf32.cuh"),
    ],
    one_kernel: false,
};
/// The bank-conflict probe.
pub const LAB: KernelSource = KernelSource {
    name: "lab.cu",
    text: include_str!("../../kernels/lab.cu"),
    headers: &[],
    one_kernel: false,
};
/// Device-side generators of benchmark data.
pub const GENERATE: KernelSource = KernelSource {
    name: "generate.cu",
    text: include_str!("../../kernels/generate.cu"),
    headers: &[],
    one_kernel: false,
};

impl KernelSource {
    /// The headers, as NVRTC takes them.
    pub(crate) fn header_pairs(&self) -> Vec<(&'static str, &'static str)> {
        self.headers.iter().map(|h| (h.name, h.text)).collect()
    }
}
