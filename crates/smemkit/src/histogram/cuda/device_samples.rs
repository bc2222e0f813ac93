//! Samples that already live in device memory (drawn there by the benchmarks' generator), and their
//! host copy for the CPU reference: the device-side input of the multi-GPU engine.

use cudarc::driver::{CudaSlice, DevicePtr};

use crate::error::Result;
use crate::gpu::device::{cuda_err, Gpu};
use crate::sample::SampleType;

/// Samples living on the device, drawn by `kernels/generate.cu`.
pub struct DeviceSamples {
    pub sample_type: SampleType,
    pub n: usize,
    pub(crate) buf: CudaSlice<u8>,
}

/// Host copy of device samples, for the CPU reference.
pub enum HostSamples {
    I32(Vec<i32>),
    U8(Vec<u8>),
    F32(Vec<f32>),
}

impl HostSamples {
    pub fn as_samples(&self) -> crate::sample::Samples<'_> {
        match self {
            HostSamples::I32(v) => crate::sample::Samples::I32(v),
            HostSamples::U8(v) => crate::sample::Samples::U8(v),
            HostSamples::F32(v) => crate::sample::Samples::F32(v),
        }
    }
}

impl DeviceSamples {
    /// Copies host samples to the device (for workloads the device generator does not draw:
    /// float16 / bfloat16 activations).
    pub fn upload(gpu: &Gpu, samples: crate::sample::Samples<'_>) -> Result<DeviceSamples> {
        let bytes = crate::gpu::host_memory::sample_bytes(samples);
        let buf = gpu
            .stream
            .clone_htod(bytes)
            .map_err(cuda_err("copying benchmark samples to the device"))?;
        Ok(DeviceSamples {
            sample_type: samples.sample_type(),
            n: samples.len(),
            buf,
        })
    }

    pub fn ptr(&self, gpu: &Gpu) -> u64 {
        self.buf.device_ptr(&gpu.stream).0
    }

    /// The samples as a typed view (for the device-resident API); `T` must be their type.
    pub fn view<T: crate::sample::Sample + cudarc::driver::DeviceRepr>(
        &self,
    ) -> Result<cudarc::driver::CudaView<'_, T>> {
        if T::TYPE != self.sample_type {
            return Err(crate::error::Error::InvalidArgument(format!(
                "device samples of {} viewed as {}",
                self.sample_type,
                T::TYPE
            )));
        }
        // SAFETY: the buffer holds n samples of T (checked above), drawn by the generator.
        unsafe { self.buf.transmute::<T>(self.n) }.ok_or_else(|| {
            crate::error::Error::InvalidArgument("device samples shorter than n".into())
        })
    }

    /// Copies the samples to the host.
    pub fn to_host(&self, gpu: &Gpu) -> Result<HostSamples> {
        let bytes = gpu
            .stream
            .clone_dtoh(&self.buf)
            .map_err(cuda_err("copying samples back"))?;
        let cast = |size: usize| bytes.chunks_exact(size);
        Ok(match self.sample_type {
            SampleType::I32 => HostSamples::I32(
                cast(4)
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            SampleType::F32 => HostSamples::F32(
                cast(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            _ => HostSamples::U8(bytes),
        })
    }
}
