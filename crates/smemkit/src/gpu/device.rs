//! The devices: one context per GPU with one stream, its limits read from the driver, and the
//! compiled modules loaded into it. Each GPU is opened once per process on first use; [`gpu`] is
//! GPU 0, the one every single-device path uses, and [`gpu_at`] any other (several GPUs through
//! NCCL, `crate::histogram::cuda::multi`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};

use super::compile::{self, Build, Image, Keep, KernelSource, Output};
use super::limits::DeviceLimits;
use crate::error::{Error, Result};

/// An opened GPU.
pub struct Gpu {
    /// The device's ordinal, as the driver counts them.
    pub ordinal: usize,
    /// Its primary context.
    pub ctx: Arc<CudaContext>,
    /// The library's stream on it.
    pub stream: Arc<CudaStream>,
    /// What the planner needs to know of it (SMs, shared memory, clusters).
    pub limits: DeviceLimits,
    /// The device's name.
    pub name: String,
    /// The driver's version (`cuDriverGetVersion`).
    pub driver_version: i32,
    /// NVRTC target, e.g. `compute_90a`.
    pub arch: String,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    /// Scratch kept between calls ([`super::scratch`]).
    pub(crate) kept: super::scratch::Kept,
}

/// Maps a driver error to the library's error with what was being done.
pub(crate) fn cuda_err(context: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda {
        context: context.to_string(),
        message: format!("{e:?}"),
    }
}

/// Seconds this process spent on GPU setup: opening contexts, building (compiling or reading from
/// the cache) and loading kernels. Summed over threads and devices.
static SETUP_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// GPU setup time so far in this process (see `SETUP_NANOS`): what a caller subtracts from a
/// first call's time to tell setup from work.
pub fn setup_time() -> std::time::Duration {
    std::time::Duration::from_nanos(SETUP_NANOS.load(std::sync::atomic::Ordering::Relaxed))
}

/// Adds the time from its start to its drop to [`setup_time`]; nested timers count once.
struct SetupTimer {
    start: Option<std::time::Instant>,
}

thread_local! {
    static TIMING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl SetupTimer {
    fn start() -> SetupTimer {
        let outer = !TIMING.with(|t| t.replace(true));
        SetupTimer {
            start: outer.then(std::time::Instant::now),
        }
    }
}

impl Drop for SetupTimer {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            TIMING.with(|t| t.set(false));
            SETUP_NANOS.fetch_add(
                start.elapsed().as_nanos() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
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

/// The GPUs opened so far (or the reason each could not be).
static GPUS: [OnceLock<std::result::Result<Arc<Gpu>, String>>; MAX_DEVICES] =
    [const { OnceLock::new() }; MAX_DEVICES];

/// Whether GPU `ordinal` is open in this process already (its context paid for), without
/// opening it or starting the driver.
pub fn is_open(ordinal: usize) -> bool {
    GPUS.get(ordinal)
        .and_then(OnceLock::get)
        .is_some_and(|g| g.is_ok())
}

/// The number of CUDA devices the driver reports (an error without a driver).
pub fn device_count() -> Result<usize> {
    init_driver()?;
    let count = CudaContext::device_count().map_err(cuda_err("counting devices"))?;
    Ok(count.max(0) as usize)
}

fn init_driver() -> Result<()> {
    if !super::libs::driver() {
        return Err(Error::CudaUnavailable(
            "no CUDA driver (libcuda.so) on this machine".into(),
        ));
    }
    cudarc::driver::result::init().map_err(cuda_err("initialising the CUDA driver"))
}

fn open(ordinal: usize) -> Result<Gpu> {
    let _setup = SetupTimer::start();
    let count = {
        let _t = super::trace::span("driver start (cuInit, device count)");
        device_count()?
    };
    if count < 1 {
        return Err(Error::CudaUnavailable(
            "the CUDA driver reports no device".into(),
        ));
    }
    if ordinal >= count {
        return Err(Error::DeviceNotFound { ordinal, count });
    }
    let _context = super::trace::span("context (primary context, stream, attributes)");
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
        kept: Default::default(),
    })
}

impl Gpu {
    /// Loads `function` from `src` compiled with `defines` (for a one-kernel source, `function`
    /// alone), building it or taking it from the caches.
    pub fn function(
        &self,
        src: &KernelSource,
        defines: &[(&str, String)],
        function: &str,
    ) -> Result<CudaFunction> {
        self.function_kept(src, defines, function, Keep::Disk)
    }

    /// As [`Gpu::function`]; with [`Keep::Trial`] a new build stays out of the disk cache until
    /// [`Gpu::keep_on_disk`] (an autotuner's candidates, of which one is used again).
    pub fn function_kept(
        &self,
        src: &KernelSource,
        defines: &[(&str, String)],
        function: &str,
        keep: Keep,
    ) -> Result<CudaFunction> {
        let _setup = SetupTimer::start();
        let build = Build {
            src,
            defines,
            kernel: function,
        };
        let module = match self.cached_module(&build) {
            Some(m) => m,
            None => {
                let (image, why) = self.build(&build, keep)?;
                self.load(&build, image, why.as_deref(), keep)?
            }
        };
        module.load_function(function).map_err(|e| Error::Cuda {
            context: format!("finding kernel {function} in {}", src.name),
            message: format!("{e:?}"),
        })
    }

    /// Builds the modules of `functions` of `src` with `defines` that are not loaded yet, the
    /// compilations in parallel, and loads them; [`Gpu::function`] then finds them loaded. For
    /// a plan that launches several kernels.
    pub fn prepare(
        &self,
        src: &KernelSource,
        defines: &[(&str, String)],
        functions: &[&str],
    ) -> Result<()> {
        use rayon::prelude::*;
        let _setup = SetupTimer::start();
        let mut missing: Vec<Build<'_>> = Vec::new();
        for &kernel in functions {
            let build = Build {
                src,
                defines,
                kernel,
            };
            let key = build.module_key(&self.cubin_arch());
            if self.cached_module(&build).is_none()
                && !missing
                    .iter()
                    .any(|b| b.module_key(&self.cubin_arch()) == key)
            {
                missing.push(build);
            }
        }
        let images: Vec<Result<(Arc<Image>, Option<String>)>> = missing
            .par_iter()
            .map(|b| self.build(b, Keep::Disk))
            .collect();
        for (build, image) in missing.iter().zip(images) {
            let (image, why) = image?;
            self.load(build, image, why.as_deref(), Keep::Disk)?;
        }
        Ok(())
    }

    /// Writes the module of `function` of `src` with `defines`, built as a [`Keep::Trial`], to
    /// the disk cache (as whichever of CUBIN and PTX this process built); compiles nothing.
    pub fn keep_on_disk(&self, src: &KernelSource, defines: &[(&str, String)], function: &str) {
        let build = Build {
            src,
            defines,
            kernel: function,
        };
        compile::keep_on_disk(&build, &self.cubin_arch(), Output::Cubin, &self.salt());
        compile::keep_on_disk(&build, &self.arch, Output::Ptx, &self.salt());
    }

    /// The CUBIN target: `sm_90a` for the PTX target `compute_90a`.
    fn cubin_arch(&self) -> String {
        self.arch.replacen("compute_", "sm_", 1)
    }

    fn salt(&self) -> String {
        format!("driver {}", self.driver_version)
    }

    fn cached_module(&self, build: &Build<'_>) -> Option<Arc<CudaModule>> {
        let key = build.module_key(&self.cubin_arch());
        self.modules.lock().expect("module lock").get(&key).cloned()
    }

    /// A CUBIN for the device, or PTX where NVRTC cannot make one (with why it could not).
    fn build(&self, build: &Build<'_>, keep: Keep) -> Result<(Arc<Image>, Option<String>)> {
        match compile::build(build, &self.cubin_arch(), Output::Cubin, &self.salt(), keep) {
            Ok(image) => Ok((image, None)),
            Err(cubin) => {
                let why = format!("NVRTC made no CUBIN for {}: {cubin}", self.cubin_arch());
                compile::build(build, &self.arch, Output::Ptx, &self.salt(), keep)
                    .map(|ptx| (ptx, Some(why)))
                    .map_err(|_| cubin)
            }
        }
    }

    /// Loads `image` into the context (kept once if two threads load the same module). A CUBIN
    /// the driver refuses (a torn cache file, a driver that cannot run it) is forgotten and the
    /// build made again as PTX, which the driver compiles itself.
    fn load(
        &self,
        build: &Build<'_>,
        image: Arc<Image>,
        why_ptx: Option<&str>,
        keep: Keep,
    ) -> Result<Arc<CudaModule>> {
        let span = super::trace::span("module load");
        let loaded = self.ctx.load_module(image.to_loadable());
        drop(span);
        let module = match loaded {
            Ok(m) => {
                super::load_stats::count_load(&image, build.kernel, why_ptx);
                m
            }
            Err(e) if matches!(*image, Image::Cubin(_)) => {
                compile::evict(build, &self.cubin_arch(), Output::Cubin, &self.salt());
                let ptx = compile::build(build, &self.arch, Output::Ptx, &self.salt(), keep)?;
                let why = format!("the driver refused its CUBIN: {e:?}");
                super::load_stats::count_load(&ptx, build.kernel, Some(&why));
                self.ctx
                    .load_module(ptx.to_loadable())
                    .map_err(|p| Error::Cuda {
                        context: format!(
                            "loading {} for {} (the driver refused its CUBIN: {e:?}; then its PTX)",
                            build.kernel, self.arch
                        ),
                        message: format!("{p:?}"),
                    })?
            }
            Err(e) => {
                return Err(cuda_err(
                    "loading a compiled module (does the driver accept this PTX?)",
                )(e))
            }
        };
        let key = build.module_key(&self.cubin_arch());
        Ok(self
            .modules
            .lock()
            .expect("module lock")
            .entry(key)
            .or_insert(module)
            .clone())
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
