//! Kernel launches through `cuLaunchKernelEx`, which cudarc does not wrap for clusters: the cluster
//! dimension is set per launch as a launch attribute (so one compiled kernel serves every cluster
//! size), the non-portable cluster size (above 8) and the dynamic shared memory limit are raised
//! as function attributes, and active-cluster occupancy is asked with the cluster attribute
//! (cudarc's own query passes none and answers 0).

use std::ffi::c_void;

use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaStream};

use crate::error::{Error, Result};

/// Shape of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: u32,
    pub block: u32,
    pub shared_bytes: u32,
    /// Blocks per cluster; 1 launches without a cluster.
    pub cluster: u32,
}

pub fn check(result: sys::CUresult, context: &str) -> Result<()> {
    if result == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            context: context.to_string(),
            message: format!("{result:?}"),
        })
    }
}

/// Raises the function's limits so that `shape` can launch: dynamic shared memory above the 48 KiB
/// default (to `max_shared`, the device's opt-in limit, whatever this shape needs: the attribute
/// belongs to the function, which threads share, so it must never shrink under another launch),
/// and cluster sizes above the portable 8.
pub fn prepare_function(func: &CudaFunction, shape: &LaunchShape, max_shared: u32) -> Result<()> {
    // The opt-in limit covers static and dynamic shared memory together.
    let static_bytes = func
        .shared_size_bytes()
        .map_err(|e| Error::Cuda {
            context: "reading a kernel's static shared memory".into(),
            message: format!("{e:?}"),
        })?
        .max(0) as u32;
    let dynamic_limit = max_shared
        .saturating_sub(static_bytes)
        .max(shape.shared_bytes);
    // SAFETY: valid function handle owned by `func`; the attributes take plain integers.
    unsafe {
        check(
            sys::cuFuncSetAttribute(
                func.cu_function(),
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic_limit as i32,
            ),
            "setting the dynamic shared memory limit",
        )?;
        if shape.cluster > 8 {
            check(
                sys::cuFuncSetAttribute(
                    func.cu_function(),
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                ),
                "allowing a non-portable cluster size",
            )?;
        }
    }
    Ok(())
}

fn cluster_attribute(cluster: u32) -> sys::CUlaunchAttribute {
    // SAFETY: the attribute is a C union of plain data; zeroed is a valid starting value.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
        x: cluster,
        y: 1,
        z: 1,
    };
    attr
}

fn config(
    shape: &LaunchShape,
    stream: &CudaStream,
    attr: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: shape.grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: shape.block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shape.shared_bytes,
        hStream: stream.cu_stream(),
        attrs: if shape.cluster > 1 {
            attr as *mut _
        } else {
            std::ptr::null_mut()
        },
        numAttrs: (shape.cluster > 1) as u32,
    }
}

/// How many clusters of `shape` can be resident at once (0: the shape cannot launch at all).
pub fn max_active_clusters(
    func: &CudaFunction,
    stream: &CudaStream,
    shape: &LaunchShape,
) -> Result<u32> {
    let mut attr = cluster_attribute(shape.cluster);
    let cfg = config(shape, stream, &mut attr);
    let mut clusters: i32 = 0;
    // SAFETY: `cfg` points at `attr`, which outlives the call; `clusters` is a valid out pointer.
    unsafe {
        check(
            sys::cuOccupancyMaxActiveClusters(&mut clusters, func.cu_function(), &cfg),
            "querying active clusters",
        )?;
    }
    Ok(clusters.max(0) as u32)
}

/// Launches `func` with `shape` on `stream`. `args` holds one pointer per kernel parameter, each
/// pointing at the parameter's value.
///
/// # Safety
/// `args` must match the kernel's parameter list in number, order and types, and every device
/// pointer passed must stay valid until the kernel has finished.
pub unsafe fn launch(
    func: &CudaFunction,
    stream: &CudaStream,
    shape: &LaunchShape,
    args: &mut [*mut c_void],
) -> Result<()> {
    let mut attr = cluster_attribute(shape.cluster);
    let cfg = config(shape, stream, &mut attr);
    // SAFETY: the caller guarantees the argument list; `cfg` and `attr` live across the call.
    unsafe {
        check(
            sys::cuLaunchKernelEx(
                &cfg,
                func.cu_function(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            ),
            "launching a kernel",
        )
    }
}
