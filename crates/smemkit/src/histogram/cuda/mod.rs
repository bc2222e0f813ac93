//! The histogram on the GPU: prepared kernels and their launch ([`prepared`]), the per-kernel bin
//! parameters ([`params`]), streaming from host memory ([`stream`]), several GPUs ([`multi`]) and
//! several processes ([`ranks`]), and the device-side inputs of the benchmarks ([`bench`]).

pub mod bench;
pub mod device_samples;
#[cfg(test)]
mod kernel_builds_tests;
pub mod multi;
pub mod params;
pub mod prepared;
pub mod ranks;
pub mod stream;
pub mod stream_options;
