//! The devices: one context per GPU with one stream, its limits read from the driver, and the
//! compiled modules loaded into it. Each GPU is opened once per process on first use; [`gpu`] is
//! GPU 0, the one every single-device path uses, and [`gpu_at`] any other (several GPUs through
//! NCCL, `crate::histogram::cuda::multi`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use super::compile::{self, KernelSource};
use crate::error::{Error, Result};
use crate::histogram::plan::DeviceLimits;

/// An opened GPU.
pub struct Gpu {
    /// The device's ordinal, as the driver counts them.
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub limits: DeviceLimits,
    pub name: String,
    pub driver_version: i32,
    /// NVRTC target, e.g. `compute_90a`.
    pub arch: String,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
}

/// Maps a driver error to the library's error with what was being done.
pub(crate) fn cuda_err(context: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda {
        context: context.to_string(),
        message: format!("{e:?}"),
    }
}

/// Devices a process can open (ordinals 0 to this, exclusive).
pub const MAX_DEVICES: usize = 64;

/// The process's GPU (device 0), opened on first call; the error says why there is none.
pub fn gpu() -> Result<Arc<Gpu>> {
    gpu_at(0)
}

/// GPU `ordinal`, opened on its first call (each GPU once per process); the error says why it
/// cannot be used.
pub fn gpu_at(ordinal: usize) -> Result<Arc<Gpu>> {
    static GPUS: [OnceLock<std::result::Result<Arc<Gpu>, String>>; MAX_DEVICES] =
        [const { OnceLock::new() }; MAX_DEVICES];
    let count = if ordinal == 0 { 1 } else { device_count()? };
    if ordinal >= count || ordinal >= MAX_DEVICES {
        return Err(Error::DeviceNotFound { ordinal, count });
    }
    GPUS[ordinal]
        .get_or_init(|| {
            open(ordinal).map(Arc::new).map_err(|e| match e {
                // Keep the reason alone: it is wrapped in CudaUnavailable again below.
                Error::CudaUnavailable(reason) => reason,
                other => other.to_string(),
            })
        })
        .clone()
        .map_err(Error::CudaUnavailable)
}

/// The number of CUDA devices the driver reports (an error without a driver).
pub fn device_count() -> Result<usize> {
    init_driver()?;
    let count = CudaContext::device_count().map_err(cuda_err("counting devices"))?;
    Ok(count.max(0) as usize)
}

fn init_driver() -> Result<()> {
    // SAFETY: only probes whether libcuda can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::CudaUnavailable(
            "no CUDA driver (libcuda.so) on this machine".into(),
        ));
    }
    cudarc::driver::result::init().map_err(cuda_err("initialising the CUDA driver"))
}

fn open(ordinal: usize) -> Result<Gpu> {
    let count = device_count()?;
    if count < 1 {
        return Err(Error::CudaUnavailable(
            "the CUDA driver reports no device".into(),
        ));
    }
    if ordinal >= count {
        return Err(Error::DeviceNotFound { ordinal, count });
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| Error::Cuda {
        context: format!("opening device {ordinal}"),
        message: format!("{e:?}"),
    })?;
    // Kernels of one histogram share buffers only on this one stream: cudarc's per-buffer event
    // tracking would add nothing but overhead.
    // SAFETY: every buffer of the engine is used on `stream` only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.default_stream();
    let attr = |a: Attr| {
        ctx.attribute(a)
            .map_err(cuda_err("reading a device attribute"))
    };
    let cc = (
        attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
        attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
    );
    let clusters = cc.0 >= 9 && attr(Attr::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)? != 0;
    let limits = DeviceLimits {
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        smem_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as u32,
        smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as u32,
        // 8 is the portable maximum; Hopper allows 16 with the non-portable attribute (the launch
        // checks it through the occupancy query before use).
        max_cluster_portable: if clusters { 8 } else { 0 },
        max_cluster_nonportable: if clusters { 16 } else { 0 },
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u32,
        compute_capability: cc,
    };
    let mut driver_version = 0;
    // SAFETY: valid out pointer.
    unsafe {
        super::launch::check(
            cudarc::driver::sys::cuDriverGetVersion(&mut driver_version),
            "reading the driver version",
        )?;
    }
    // Architecture-specific features (the `a` targets) exist from 9.0 on.
    let arch = if cc.0 >= 9 {
        format!("compute_{}{}a", cc.0, cc.1)
    } else {
        format!("compute_{}{}", cc.0, cc.1)
    };
    let name = ctx.name().map_err(cuda_err("reading the device name"))?;
    Ok(Gpu {
        ordinal,
        ctx,
        stream,
        limits,
        name,
        driver_version,
        arch,
        modules: Mutex::new(HashMap::new()),
    })
}

impl Gpu {
    /// Loads `function` from `src` compiled with `defines`, compiling (or taking from the caches).
    pub fn function(
        &self,
        src: &KernelSource,
        defines: &[(&str, String)],
        function: &str,
    ) -> Result<CudaFunction> {
        let root = compile::cuda_root()?;
        let options = compile::options(&root, &self.arch, defines);
        let key = format!("{}|{}", src.name, options.join(" "));
        // Compiled and loaded outside the lock, so that threads needing different modules (the
        // matmul tests and tuner want dozens) compile in parallel; a module two threads both
        // compiled is kept once.
        let cached = self.modules.lock().expect("module lock").get(&key).cloned();
        let module = match cached {
            Some(m) => m,
            None => {
                let ptx =
                    compile::compile(src, &options, &format!("driver {}", self.driver_version))?;
                let m = self
                    .ctx
                    .load_module(Ptx::from_src(ptx.as_str()))
                    .map_err(cuda_err(
                        "loading a compiled module (does the driver accept this PTX?)",
                    ))?;
                self.modules
                    .lock()
                    .expect("module lock")
                    .entry(key)
                    .or_insert(m)
                    .clone()
            }
        };
        module.load_function(function).map_err(|e| Error::Cuda {
            context: format!("finding kernel {function} in {}", src.name),
            message: format!("{e:?}"),
        })
    }

    /// Makes the context current on the calling thread: raw driver calls (launches, attributes,
    /// occupancy) act on the current context, and each thread starts with none.
    pub fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("binding the CUDA context to this thread"))
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.ctx
            .mem_get_info()
            .map_err(cuda_err("reading free memory"))
    }
}
