//! The reductions of bins sharded over ranks (`crate::histogram::cuda::bin_shards`): each pass
//! buffer holds `slice` counters per owner, and each owner's segment is summed over every rank
//! onto that owner alone. A pass over every owner is one in-place `ncclReduceScatter`; a pass
//! over some owners is one `ncclReduce` per owner (in place on the root), all in one group.
//! A child of `nccl` for its communicators' internals; waiting is `finish_all_reduce`'s.

use super::{check, sys, Communicator, Elem};
use crate::error::{Error, Result};

/// One communicator's pass buffer: `owners` segments of `slice` elements at `ptr`, segment `i`
/// owned by NCCL rank `first_owner + i`.
#[derive(Debug, Clone, Copy)]
pub struct OwnerBuffer {
    pub ptr: u64,
    pub slice: usize,
    pub first_owner: usize,
    pub owners: usize,
    pub elem: Elem,
}

fn dtype(e: Elem) -> (sys::ncclDataType_t, u64) {
    match e {
        Elem::U64 => (sys::ncclDataType_t::ncclUint64, 8),
        Elem::F64 => (sys::ncclDataType_t::ncclFloat64, 8),
    }
}

/// Enqueues the sums of every segment onto its owner (one buffer per communicator, the same
/// layout on every rank), without waiting: `finish_all_reduce` waits, against the deadline and
/// the watchdog. On an error every communicator is aborted.
///
/// # Safety
/// Each buffer must be a live device allocation on its communicator's GPU of `owners * slice`
/// elements, untouched until the wait has returned.
pub unsafe fn start_reduce_to_owners(
    comms: &mut [Communicator],
    buffers: &[OwnerBuffer],
) -> Result<()> {
    if comms.len() != buffers.len() {
        return Err(Error::InvalidArgument(
            "one pass buffer per communicator".into(),
        ));
    }
    if let Some(b) = buffers
        .iter()
        .zip(comms.iter())
        .find(|(b, c)| b.owners == 0 || b.first_owner + b.owners > c.world)
    {
        return Err(Error::InvalidArgument(format!(
            "owners {}..{} of a world of {}",
            b.0.first_owner,
            b.0.first_owner + b.0.owners,
            b.1.world
        )));
    }
    // SAFETY: group calls are plain calls.
    check(unsafe { sys::ncclGroupStart() }, "starting a group")?;
    let mut failed = None;
    'comms: for (c, b) in comms.iter().zip(buffers) {
        if let Err(e) = c.gpu.bind() {
            failed = Some(e);
            break;
        }
        let (ty, size) = dtype(b.elem);
        let stream = c.gpu.stream.cu_stream() as sys::cudaStream_t;
        if b.first_owner == 0 && b.owners == c.world {
            let mine = b.ptr + (c.rank * b.slice) as u64 * size;
            // SAFETY: the caller guarantees the buffer; in place (the receive buffer is this
            // rank's segment of the send buffer) is allowed by NCCL.
            let r = unsafe {
                sys::ncclReduceScatter(
                    b.ptr as *const std::ffi::c_void,
                    mine as *mut std::ffi::c_void,
                    b.slice,
                    ty,
                    sys::ncclRedOp_t::ncclSum,
                    c.comm,
                    stream,
                )
            };
            if let Err(e) = check(r, "enqueuing a reduce-scatter") {
                failed = Some(e);
                break;
            }
            continue;
        }
        for i in 0..b.owners {
            let seg = b.ptr + (i * b.slice) as u64 * size;
            // SAFETY: the caller guarantees the buffer; in place on the root is allowed, and
            // the receive buffer is ignored on the other ranks.
            let r = unsafe {
                sys::ncclReduce(
                    seg as *const std::ffi::c_void,
                    seg as *mut std::ffi::c_void,
                    b.slice,
                    ty,
                    sys::ncclRedOp_t::ncclSum,
                    (b.first_owner + i) as i32,
                    c.comm,
                    stream,
                )
            };
            if let Err(e) = check(r, "enqueuing a reduction to an owner") {
                failed = Some(e);
                break 'comms;
            }
        }
    }
    // SAFETY: closes the group opened above.
    let end = check(unsafe { sys::ncclGroupEnd() }, "launching the reductions");
    if let Some(e) = failed.or(end.err()) {
        comms.iter_mut().for_each(Communicator::abort);
        return Err(e);
    }
    Ok(())
}
