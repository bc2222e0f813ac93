//! The histogram on the GPU: prepared kernels and their launch ([`prepared`]), the per-kernel bin
//! parameters ([`params`]), streaming from host memory ([`stream`]), several GPUs ([`multi`]) and
//! several processes ([`ranks`]) with bins sharded over them ([`bin_shards`], counted one window of
//! the bins at a time by [`window`]), and the device-side
//! inputs of the benchmarks ([`bench`]); histograms of data already on the GPU, on the caller's
//! stream ([`device_histogram`]), with deterministic weighted sums ([`exact_sums`]) and small inputs
//! in one launch ([`small`]); the launch path the device-resident, host-slice, streamed and
//! multi-GPU entry points share (`device_engine`); numpy's bin estimators on device samples
//! ([`estimate`]).

#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod bin_shards;
#[cfg(test)]
mod cluster_packed_kernel_tests;
#[doc(hidden)]
pub mod device_engine;
pub mod device_histogram;
#[doc(hidden)]
pub mod device_samples;
pub mod estimate;
pub(crate) mod estimate_passes;
pub(crate) mod estimate_select;
pub(crate) mod estimate_window;
#[doc(hidden)]
pub mod exact_sums;
#[cfg(test)]
mod half_kernel_tests;
pub mod half_table;
pub(crate) mod host_stage;
pub(crate) mod int_weights;
#[cfg(test)]
mod kernel_builds_tests;
pub mod multi;
pub mod numpy_sums;
#[doc(hidden)]
pub mod params;
#[doc(hidden)]
pub mod prepared;
pub mod ranks;
#[cfg(test)]
mod register_tests;
#[cfg(feature = "nccl")]
#[doc(hidden)]
pub mod sharded;
pub mod small;
pub mod stream;
#[doc(hidden)]
pub mod window;
