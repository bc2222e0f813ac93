//! The engine choice shared by every operation: the CPU engine, the CUDA engine, or the GPU when
//! one can be used.

use crate::error::{Error, Result};

/// Which engine runs the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The GPU when a CUDA driver and device are present, the CPU otherwise.
    #[default]
    Auto,
    /// The rayon CPU engine.
    Cpu,
    /// The CUDA engine.
    Cuda,
}

impl std::str::FromStr for Backend {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda),
            _ => Err(Error::InvalidArgument(format!(
                "unknown backend `{text}` (expected auto, cpu or cuda)"
            ))),
        }
    }
}

/// `Auto` becomes `Cuda` when a GPU can be used and `Cpu` otherwise; explicit choices stay.
pub fn resolve_backend(backend: Backend) -> Backend {
    match backend {
        Backend::Auto if crate::gpu::is_available() => Backend::Cuda,
        Backend::Auto => Backend::Cpu,
        b => b,
    }
}

/// `backend` for a histogram of `bytes` of host samples into `nbins` bins. `Auto` takes the
/// engine [`cost::estimate`] says finishes first (`streamed`: the input would go through the
/// streaming pipeline), and returns the summary's line saying why; the GPU is opened only when
/// the model picks it (a small input never pays for a context). Explicit choices stay.
pub fn resolve_for_host(
    backend: Backend,
    bytes: u64,
    nbins: usize,
    streamed: bool,
) -> (Backend, Option<String>) {
    if backend != Backend::Auto {
        return (resolve_backend(backend), None);
    }
    let inputs = cost::Inputs {
        bytes,
        nbins,
        cpu_threads: rayon::current_num_threads(),
        context_open: crate::gpu::device::is_open(0),
        kernels_cached: crate::gpu::compile::cache_holds_kernels(),
        transfer: if streamed {
            cost::Transfer::Streamed
        } else {
            cost::Transfer::Pageable
        },
    };
    let estimate = cost::estimate(&inputs);
    if !estimate.gpu_first {
        return (Backend::Cpu, Some(estimate.reason()));
    }
    match crate::gpu::gpu() {
        Ok(_) => (Backend::Cuda, Some(estimate.reason())),
        Err(e) => (
            Backend::Cpu,
            Some(format!("auto picked the CPU: no usable GPU ({e})")),
        ),
    }
}

/// The automatic backend's cost model for histograms of host data: the engine that is estimated
/// to finish first, counting everything a call pays (the GPU's context, its kernels' build or
/// load, the copy to the device). The figures are measurements named in bench/NOTES.md ("The
/// automatic backend's cost model"); they live here only.
pub mod cost {
    /// Decimal GB/s of samples one CPU engine thread counts (2-core VM, 2^27 samples, 256-4096
    /// bins: int32 11.4-12.5 GB/s, float32 3.4-6.5 GB/s on both cores, bench/numpy/RESULTS.md;
    /// the float32 figure per thread).
    pub const CPU_GBPS_PER_THREAD: f64 = 2.5;
    /// The CPU engine's rate is not assumed to grow past the fastest it was measured at: the
    /// H100 host's 16 threads counted a 4 GiB int32 file (page cache, 1000 bins) in 142 ms of
    /// process wall time, about 30 GB/s; memory, not threads, bounds it beyond.
    pub const CPU_GBPS_MAX: f64 = 30.0;
    /// Beyond this many bins the counters leave the caches: both engines slow down (CPU: 5.8
    /// against 11.4 GB/s at 131072 bins, RESULTS.md; GPU: the 1M-bin rows of NOTES.md).
    pub const MANY_BINS: usize = 131_072;
    /// The CPU engine's rate beyond [`MANY_BINS`], as a share of its rate below.
    pub const CPU_MANY_BINS_SHARE: f64 = 0.5;
    /// Opening the GPU: driver start and context (H100 phase trace of warm CLI calls: cuInit
    /// 107-109 ms, primary context 125-132 ms).
    pub const GPU_CONTEXT_MS: f64 = 235.0;
    /// Loading a call's kernels from the kernel cache (H100 warm setup: 17-20 ms).
    pub const GPU_LOAD_MS: f64 = 20.0;
    /// Compiling a call's kernels with NVRTC (H100 cold setup: 300-1420 ms per sample type).
    pub const GPU_COMPILE_MS: f64 = 1000.0;
    /// Host to device, pageable memory through the plain copy (H100, 4 GiB: 7.5 GB/s).
    pub const PAGEABLE_GBPS: f64 = 7.5;
    /// Host to device, page-locked memory (H100, 4 GiB: 54.4 GB/s).
    pub const PINNED_GBPS: f64 = 54.4;
    /// Host to device through the streaming pipeline's staging buffers, copies and kernels
    /// overlapped (H100, a 4 GiB int32 file in the page cache: 551 ms, 7.8 GB/s; the host's copy
    /// from the page cache into the staging buffers bounds it).
    pub const STREAMED_GBPS: f64 = 7.8;
    /// The GPU's kernels on device-resident samples (H100 `auto`, 2^28 int32 / float32: 2850-2990
    /// GB/s up to 32768 bins, 1500-2800 at 131072; 600-1500 at 1M bins): the lower figures.
    pub const KERNEL_GBPS: f64 = 1500.0;
    /// The kernels above 131072 bins (the lower figure of the 1M-bin rows).
    pub const KERNEL_MANY_BINS_GBPS: f64 = 500.0;

    /// How the samples reach the GPU.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Transfer {
        /// One plain copy from pageable memory.
        Pageable,
        /// Page-locked memory.
        Pinned,
        /// Through the streaming pipeline (large inputs, files).
        Streamed,
    }

    /// What the estimate depends on.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Inputs {
        /// Bytes of samples (and weights).
        pub bytes: u64,
        /// The bins (many bins slow the kernels).
        pub nbins: usize,
        /// The CPU engine's threads (rayon's pool).
        pub cpu_threads: usize,
        /// The GPU is already open in this process (no context to pay).
        pub context_open: bool,
        /// The kernel cache holds built kernels (loaded, not compiled).
        pub kernels_cached: bool,
        /// How the samples would reach the GPU.
        pub transfer: Transfer,
    }

    /// Milliseconds each engine is estimated to take, and the one picked.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Estimate {
        /// The CPU engine.
        pub cpu_ms: f64,
        /// The GPU's total and its parts.
        pub gpu_ms: f64,
        /// Context and kernel load or build.
        pub setup_ms: f64,
        /// Copying the samples to the GPU.
        pub transfer_ms: f64,
        /// The kernels.
        pub kernel_ms: f64,
        /// The GPU is estimated to finish first.
        pub gpu_first: bool,
    }

    /// The estimate for `i` (a pure function of its inputs and the constants above).
    pub fn estimate(i: &Inputs) -> Estimate {
        let many = i.nbins > MANY_BINS;
        let gb = i.bytes as f64 / 1e9;
        let per_thread = CPU_GBPS_PER_THREAD * if many { CPU_MANY_BINS_SHARE } else { 1.0 };
        let cpu_cap = CPU_GBPS_MAX * if many { CPU_MANY_BINS_SHARE } else { 1.0 };
        let cpu_gbps = (per_thread * i.cpu_threads.max(1) as f64).min(cpu_cap);
        let cpu_ms = gb / cpu_gbps * 1e3;
        let context = if i.context_open { 0.0 } else { GPU_CONTEXT_MS };
        let kernels = if i.kernels_cached {
            GPU_LOAD_MS
        } else {
            GPU_COMPILE_MS
        };
        let link = match i.transfer {
            Transfer::Pageable => PAGEABLE_GBPS,
            Transfer::Pinned => PINNED_GBPS,
            Transfer::Streamed => STREAMED_GBPS,
        };
        let transfer_ms = gb / link * 1e3;
        let kernel_gbps = if many {
            KERNEL_MANY_BINS_GBPS
        } else {
            KERNEL_GBPS
        };
        let kernel_ms = gb / kernel_gbps * 1e3;
        // The streaming pipeline overlaps copies with kernels: the slower of the two counts.
        let work = match i.transfer {
            Transfer::Streamed => transfer_ms.max(kernel_ms),
            _ => transfer_ms + kernel_ms,
        };
        let gpu_ms = context + kernels + work;
        Estimate {
            cpu_ms,
            gpu_ms,
            setup_ms: context + kernels,
            transfer_ms,
            kernel_ms,
            gpu_first: gpu_ms < cpu_ms,
        }
    }

    impl Estimate {
        /// One line for the summary: the engine picked and the two estimates.
        pub fn reason(&self) -> String {
            let (picked, relation) = if self.gpu_first {
                ("GPU", ">")
            } else {
                ("CPU", "<=")
            };
            format!(
                "auto picked the {picked}: estimated CPU {:.1} ms {relation} GPU {:.1} ms (setup {:.1}, copy {:.1}, kernel {:.1})",
                self.cpu_ms, self.gpu_ms, self.setup_ms, self.transfer_ms, self.kernel_ms
            )
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn inputs(bytes: u64, threads: usize) -> Inputs {
            Inputs {
                bytes,
                nbins: 1000,
                cpu_threads: threads,
                context_open: false,
                kernels_cached: true,
                transfer: Transfer::Pageable,
            }
        }

        #[test]
        fn a_small_file_goes_to_the_cpu_and_a_large_one_where_it_finishes_first() {
            for threads in [1, 2, 16, 128] {
                let small = estimate(&inputs(4_000_000, threads));
                assert!(!small.gpu_first, "{threads} threads: {small:?}");
            }
            // The H100 host's measurement: a 4 GiB int32 file took the CPU engine 142 ms and the
            // GPU 780 ms (235 ms of setup, 551 ms streamed): the CPU, on 16 threads.
            let file = |threads, nbins| Inputs {
                transfer: Transfer::Streamed,
                nbins,
                ..inputs(4_294_967_296, threads)
            };
            assert!(!estimate(&file(16, 1000)).gpu_first);
            // Two threads and a million bins (the CPU at 2.5 GB/s): the GPU.
            let slow_cpu = estimate(&file(2, 1 << 20));
            assert!(slow_cpu.gpu_first, "{slow_cpu:?}");
            // Samples already in page-locked memory copy at 54 GB/s: the GPU from a few GB on a
            // two-core machine.
            let pinned = estimate(&Inputs {
                transfer: Transfer::Pinned,
                ..inputs(4_000_000_000, 2)
            });
            assert!(pinned.gpu_first, "{pinned:?}");
        }

        #[test]
        fn setup_counts_only_what_is_left_to_do() {
            let cold = estimate(&Inputs {
                kernels_cached: false,
                ..inputs(1 << 30, 2)
            });
            let warm = estimate(&inputs(1 << 30, 2));
            let open = estimate(&Inputs {
                context_open: true,
                ..inputs(1 << 30, 2)
            });
            assert_eq!(cold.setup_ms, GPU_CONTEXT_MS + GPU_COMPILE_MS);
            assert_eq!(warm.setup_ms, GPU_CONTEXT_MS + GPU_LOAD_MS);
            assert_eq!(open.setup_ms, GPU_LOAD_MS);
            assert!(cold.gpu_ms > warm.gpu_ms && warm.gpu_ms > open.gpu_ms);
            // 1 GiB on two threads: the CPU's 215 ms against a GPU with an open context (20 ms
            // of loads and 143 ms of pageable copy) but not against a cold one (1294 ms).
            assert!(open.gpu_first && !cold.gpu_first, "{open:?} {cold:?}");
        }

        #[test]
        fn the_cpu_rate_grows_with_threads_up_to_its_cap() {
            let one = estimate(&inputs(1_000_000_000, 1)).cpu_ms;
            let two = estimate(&inputs(1_000_000_000, 2)).cpu_ms;
            let many = estimate(&inputs(1_000_000_000, 64)).cpu_ms;
            assert!((one / two - 2.0).abs() < 1e-9);
            assert!((many - 1e3 / CPU_GBPS_MAX).abs() < 1e-9, "{many}");
        }

        #[test]
        fn pinned_memory_and_streaming_copy_faster_and_streams_overlap() {
            let pageable = estimate(&inputs(1 << 32, 2));
            let pinned = estimate(&Inputs {
                transfer: Transfer::Pinned,
                ..inputs(1 << 32, 2)
            });
            let streamed = estimate(&Inputs {
                transfer: Transfer::Streamed,
                ..inputs(1 << 32, 2)
            });
            assert!(pinned.transfer_ms < streamed.transfer_ms);
            assert!(streamed.transfer_ms < pageable.transfer_ms);
            // Overlapped: the copy alone, not the copy and the kernel.
            let s = streamed;
            assert!((s.gpu_ms - (s.setup_ms + s.transfer_ms.max(s.kernel_ms))).abs() < 1e-9);
        }

        #[test]
        fn the_reason_names_the_engine_and_both_estimates() {
            let e = estimate(&inputs(4_000_000, 2));
            let r = e.reason();
            assert!(
                r.starts_with("auto picked the CPU: estimated CPU 0.8 ms <= GPU"),
                "{r}"
            );
            assert!(r.contains("setup 255.0"), "{r}");
        }
    }
}
