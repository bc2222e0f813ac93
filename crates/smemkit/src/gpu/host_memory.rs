//! Page-locked host memory, the CUDA programming guide's three kinds, behind safe types:
//!
//! - [`PinnedBuffer`]: memory from `cuMemHostAlloc`, which the copy engines read by DMA at the
//!   speed of the bus (copies from pageable memory go through a driver bounce buffer at a fraction
//!   of it). Never write-combined: the CPU reads these buffers back (cudarc's `alloc_pinned` is
//!   write-combined, slow to read).
//! - [`Registered`]: an existing Rust slice page-locked with `cuMemHostRegister` for the duration
//!   of a borrow, unregistered on drop.
//! - [`MappedBuffer`]: pinned memory mapped into the device's address space, which kernels read
//!   directly over the bus (zero-copy), with its device pointer from `cuMemHostGetDevicePointer`.
//!
//! Page-locking is limited (by `ulimit -l` in containers, by physical memory everywhere): a refusal
//! is the typed [`Error::HostMemory`] naming the size asked for, never a panic.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, ValidAsZeroBits};

use super::device::Gpu;
use crate::error::{Error, Result};
use crate::sample::{SampleType, Samples};

/// Plain numeric data that may live in page-locked memory: every bit pattern of zeros is a valid
/// value and it holds no pointers (what `cuMemHostAlloc`'s zeroed bytes and DMA need).
pub trait HostPod: Copy + Send + Sync + ValidAsZeroBits + 'static {}
impl<T: Copy + Send + Sync + ValidAsZeroBits + 'static> HostPod for T {}

fn host_error(what: &str, bytes: usize, result: sys::CUresult) -> Error {
    Error::HostMemory {
        what: what.to_string(),
        bytes,
        message: format!("{result:?}"),
    }
}

/// The driver's answer as a `Result`.
fn check(result: sys::CUresult, what: &str, bytes: usize) -> Result<()> {
    if result == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(host_error(what, bytes, result))
    }
}

/// Page-locked host memory owned by this value, freed with `cuMemFreeHost` on drop.
struct HostAlloc {
    ptr: *mut c_void,
    ctx: Arc<CudaContext>,
}

// SAFETY: the allocation is plain memory owned by this value alone (like a `Vec`'s); the context
// handle is thread-safe.
unsafe impl Send for HostAlloc {}
// SAFETY: shared access only reads through `&self` methods of the typed wrappers.
unsafe impl Sync for HostAlloc {}

impl HostAlloc {
    fn new(gpu: &Gpu, bytes: usize, flags: u32, what: &str) -> Result<HostAlloc> {
        gpu.bind()?;
        if bytes == 0 {
            return Ok(HostAlloc {
                ptr: std::ptr::null_mut(),
                ctx: gpu.ctx.clone(),
            });
        }
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ptr` is a valid out pointer; the flags are the driver's documented bits.
        check(
            unsafe { sys::cuMemHostAlloc(&mut ptr, bytes, flags) },
            what,
            bytes,
        )?;
        // SAFETY: `bytes` bytes were just allocated at `ptr`; zeros are valid for every `HostPod`.
        unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
        Ok(HostAlloc {
            ptr,
            ctx: gpu.ctx.clone(),
        })
    }
}

impl Drop for HostAlloc {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        // A failure here cannot be reported from drop; the memory is then leaked, not reused.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `ptr` came from cuMemHostAlloc and is freed once; users of the memory (copies
        // in flight) hold borrows of the owning buffer, which the pipeline synchronises before
        // releasing.
        let _ = unsafe { sys::cuMemFreeHost(self.ptr) };
    }
}

/// A page-locked host buffer of `len` values of `T` (zeroed at allocation), readable and writable
/// from the CPU as a slice and copied to the device by DMA.
pub struct PinnedBuffer<T: HostPod> {
    alloc: HostAlloc,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: HostPod> PinnedBuffer<T> {
    /// Allocates `len` zeroed values (portable: usable from every context of the process).
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        Ok(PinnedBuffer {
            alloc: HostAlloc::new(
                gpu,
                bytes,
                sys::CU_MEMHOSTALLOC_PORTABLE,
                "allocating pinned host memory",
            )?,
            len,
            _t: PhantomData,
        })
    }

    /// A pinned copy of `data`.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        let mut b = Self::new(gpu, data.len())?;
        b.as_mut_slice().copy_from_slice(data);
        Ok(b)
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len` initialised (zeroed or written) values live at `ptr` while `self` does;
        // a null pointer only occurs with len 0, for which a dangling pointer is used.
        unsafe { std::slice::from_raw_parts(data_ptr::<T>(self.alloc.ptr), self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(data_ptr::<T>(self.alloc.ptr) as *mut T, self.len) }
    }
}

impl<T: HostPod> PinnedBuffer<T>
where
    for<'b> &'b [T]: Into<Samples<'b>>,
{
    /// The buffer as page-locked samples, which the streaming pipeline copies straight to the device.
    pub fn locked(&self) -> LockedSamples<'_> {
        LockedSamples::new(self.as_slice())
    }
}

/// Pinned host memory mapped into the device's address space: kernels read it where it lies, over
/// the bus, with no copy. Pays off when the data is read once, in order, by a kernel that can hide
/// the bus latency; every repeated read crosses the bus again.
pub struct MappedBuffer<T: HostPod> {
    alloc: HostAlloc,
    len: usize,
    device_ptr: u64,
    _t: PhantomData<T>,
}

impl<T: HostPod> MappedBuffer<T> {
    /// Allocates `len` zeroed values, mapped for the device.
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let alloc = HostAlloc::new(
            gpu,
            bytes,
            sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP,
            "allocating mapped (zero-copy) host memory",
        )?;
        let device_ptr = if bytes == 0 {
            0
        } else {
            device_pointer(alloc.ptr, bytes)?
        };
        Ok(MappedBuffer {
            alloc,
            len,
            device_ptr,
            _t: PhantomData,
        })
    }

    /// A mapped copy of `data`.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        let mut b = Self::new(gpu, data.len())?;
        b.as_mut_slice().copy_from_slice(data);
        Ok(b)
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Where kernels find the buffer (0 for an empty one). Kernels may read it while `self` lives
    /// and is not written through [`MappedBuffer::as_mut_slice`].
    pub fn device_ptr(&self) -> u64 {
        self.device_ptr
    }
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: as for `PinnedBuffer::as_slice`.
        unsafe { std::slice::from_raw_parts(data_ptr::<T>(self.alloc.ptr), self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as for `PinnedBuffer::as_mut_slice`.
        unsafe { std::slice::from_raw_parts_mut(data_ptr::<T>(self.alloc.ptr) as *mut T, self.len) }
    }
}

impl<T: HostPod> MappedBuffer<T>
where
    for<'b> &'b [T]: Into<Samples<'b>>,
{
    /// The buffer as page-locked samples (it can also be streamed like any pinned buffer).
    pub fn locked(&self) -> LockedSamples<'_> {
        LockedSamples::new(self.as_slice())
    }
    /// The buffer as samples kernels read in place.
    pub fn zero_copy(&self) -> ZeroCopySamples<'_> {
        ZeroCopySamples {
            locked: self.locked(),
            device_ptr: self.device_ptr,
        }
    }
}

/// A borrowed slice page-locked with `cuMemHostRegister` (and mapped for the device) until this
/// value drops. Registration costs about as much as a copy of the pages (the driver locks and maps
/// each one), so it pays off for data copied more than once, or too large to copy into a pinned
/// buffer first.
pub struct Registered<'a, T: HostPod> {
    data: &'a [T],
    ctx: Arc<CudaContext>,
    device_ptr: u64,
}

impl<'a, T: HostPod> Registered<'a, T> {
    /// Page-locks `data`. Fails with [`Error::HostMemory`] when the driver refuses (locked-memory
    /// limits, or pages already registered, for instance by an overlapping slice).
    pub fn new(gpu: &Gpu, data: &'a [T]) -> Result<Self> {
        gpu.bind()?;
        let bytes = std::mem::size_of_val(data);
        if bytes == 0 {
            return Ok(Registered {
                data,
                ctx: gpu.ctx.clone(),
                device_ptr: 0,
            });
        }
        let p = data.as_ptr() as *mut c_void;
        // SAFETY: `data` is valid for `bytes` bytes for 'a, and stays registered no longer than
        // this value, which borrows it; the driver only reads it (we never copy device to host
        // into a registered slice).
        check(
            unsafe {
                sys::cuMemHostRegister_v2(
                    p,
                    bytes,
                    sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP,
                )
            },
            "registering (page-locking) a host slice",
            bytes,
        )?;
        let device_ptr = match device_pointer(p, bytes) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: registered just above and not yet handed out.
                let _ = unsafe { sys::cuMemHostUnregister(p) };
                return Err(e);
            }
        };
        Ok(Registered {
            data,
            ctx: gpu.ctx.clone(),
            device_ptr,
        })
    }

    pub fn as_slice(&self) -> &'a [T] {
        self.data
    }
    /// The slice's address for kernels (0 for an empty slice).
    pub fn device_ptr(&self) -> u64 {
        self.device_ptr
    }
}

impl<T: HostPod> Registered<'_, T>
where
    for<'b> &'b [T]: Into<Samples<'b>>,
{
    /// The slice as page-locked samples, which the streaming pipeline copies straight to the device.
    pub fn locked(&self) -> LockedSamples<'_> {
        LockedSamples::new(self.data)
    }
    /// The slice as samples kernels read in place (over the bus).
    pub fn zero_copy(&self) -> ZeroCopySamples<'_> {
        ZeroCopySamples {
            locked: self.locked(),
            device_ptr: self.device_ptr,
        }
    }
}

impl<T: HostPod> Drop for Registered<'_, T> {
    fn drop(&mut self) {
        if self.data.is_empty() {
            return;
        }
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered in `new`; copies reading it borrowed `self` and were synchronised
        // by the pipeline before it returned.
        let _ = unsafe { sys::cuMemHostUnregister(self.data.as_ptr() as *mut c_void) };
    }
}

/// Samples known to lie in page-locked memory (only [`PinnedBuffer`], [`MappedBuffer`] and
/// [`Registered`] make them), so that a copy from them is a true asynchronous DMA.
#[derive(Clone, Copy)]
pub struct LockedSamples<'a> {
    samples: Samples<'a>,
}

impl<'a> LockedSamples<'a> {
    fn new<T>(data: &'a [T]) -> Self
    where
        &'a [T]: Into<Samples<'a>>,
    {
        LockedSamples {
            samples: data.into(),
        }
    }
    pub fn samples(&self) -> Samples<'a> {
        self.samples
    }
    pub fn sample_type(&self) -> SampleType {
        self.samples.sample_type()
    }
    pub fn len(&self) -> usize {
        self.samples.len()
    }
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// Page-locked samples mapped into the device's address space, with their device address.
#[derive(Clone, Copy)]
pub struct ZeroCopySamples<'a> {
    locked: LockedSamples<'a>,
    device_ptr: u64,
}

impl<'a> ZeroCopySamples<'a> {
    pub fn samples(&self) -> Samples<'a> {
        self.locked.samples()
    }
    pub fn device_ptr(&self) -> u64 {
        self.device_ptr
    }
}

/// The bytes of a sample slice (every sample type is plain data without padding).
pub fn sample_bytes(samples: Samples<'_>) -> &[u8] {
    crate::sample::with_samples!(samples, s => {
        // SAFETY: numeric slices are valid to read as bytes, over exactly their own extent.
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
    })
}

fn byte_len<T>(len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::InvalidArgument(format!("{len} elements overflow the address space")))
}

/// A typed pointer for a slice: the allocation, or a dangling aligned pointer when empty.
fn data_ptr<T>(ptr: *mut c_void) -> *const T {
    if ptr.is_null() {
        std::ptr::NonNull::<T>::dangling().as_ptr()
    } else {
        ptr as *const T
    }
}

/// The device address of page-locked, device-mapped host memory.
fn device_pointer(p: *mut c_void, bytes: usize) -> Result<u64> {
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: `p` is page-locked and mapped (DEVICEMAP); `d` is a valid out pointer; flags must be 0.
    check(
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, p, 0) },
        "finding the device address of mapped host memory",
        bytes,
    )?;
    Ok(d)
}

/// Enqueues a copy of `bytes` bytes from host `src` to device `dst` on `stream`.
///
/// # Safety
/// `dst` must be a device allocation of the current context with room for `bytes` bytes, `src`
/// must stay valid and unchanged until the copy has finished on `stream`. From page-locked memory
/// the copy is asynchronous; from pageable memory the driver stages it and returns once `src` may
/// be reused.
pub unsafe fn copy_htod_async(
    dst: u64,
    src: *const u8,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: forwarded from the caller.
    let r = unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream) };
    super::launch::check(r, "copying host memory to the device")
}

/// Where a timed host-to-device copy reads from (`smemkit bench --op h2d`).
pub enum CopySource<'a> {
    /// Pageable memory: the driver stages the copy through bounce buffers of its own.
    Pageable(&'a [u8]),
    Pinned(&'a PinnedBuffer<u8>),
    Registered(&'a Registered<'a, u8>),
    /// Read by the device through the mapped address (a device-to-device copy whose source lies
    /// across the bus).
    Mapped(&'a MappedBuffer<u8>),
}

impl CopySource<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            CopySource::Pageable(b) => b,
            CopySource::Pinned(b) => b.as_slice(),
            CopySource::Registered(r) => r.as_slice(),
            CopySource::Mapped(m) => m.as_slice(),
        }
    }
}

/// Times `runs` copies of all of `src` into a device buffer (after `warmup` untimed ones) with
/// CUDA events around each; milliseconds per copy, and whether the device then held exactly the
/// source's bytes.
pub fn time_copy(
    gpu: &Gpu,
    src: &CopySource<'_>,
    warmup: usize,
    runs: usize,
) -> Result<(Vec<f32>, bool)> {
    use super::device::cuda_err;
    use cudarc::driver::DevicePtr;
    gpu.bind()?;
    let host = src.bytes();
    let bytes = host.len();
    let stream = &gpu.stream;
    let dev = stream
        .alloc_zeros::<u8>(bytes.max(1))
        .map_err(cuda_err("allocating the copy's device buffer"))?;
    let dst = dev.device_ptr(stream).0;
    let event = || {
        gpu.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("creating an event"))
    };
    let (start, end) = (event()?, event()?);
    let mut times = Vec::with_capacity(runs);
    for i in 0..warmup + runs {
        start
            .record(stream)
            .map_err(cuda_err("recording an event"))?;
        match src {
            CopySource::Mapped(m) if bytes > 0 => {
                // SAFETY: `m.device_ptr()` addresses `bytes` mapped bytes and `dst` a device
                // buffer of at least `bytes`; both outlive the synchronisation below.
                let r = unsafe {
                    sys::cuMemcpyDtoDAsync_v2(dst, m.device_ptr(), bytes, stream.cu_stream())
                };
                super::launch::check(r, "copying from mapped host memory")?;
            }
            // SAFETY: `dst` holds `bytes`; `host` outlives the synchronisation below.
            _ => unsafe { copy_htod_async(dst, host.as_ptr(), bytes, stream.cu_stream())? },
        }
        end.record(stream).map_err(cuda_err("recording an event"))?;
        end.synchronize()
            .map_err(cuda_err("waiting for a timed copy"))?;
        if i >= warmup {
            times.push(
                start
                    .elapsed_ms(&end)
                    .map_err(cuda_err("reading an event"))?,
            );
        }
    }
    let back = stream.clone_dtoh(&dev).map_err(cuda_err("copying back"))?;
    Ok((times, back[..bytes] == *host))
}
