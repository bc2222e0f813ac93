//! Bins sharded over ranks, counted ([`super::bin_shards`] plans it): for each pass, this rank
//! counts its samples into the pass's window of the bins (the device engine's window mode,
//! [`DeviceEngine::window`], fed by [`super::window::count_host`]), the owners'
//! reductions (`crate::gpu::nccl::start_reduce_to_owners`) leave each owner its slice summed over
//! every rank, and an owner reads its slice back. The tallies are counted in the first pass and
//! all-reduced, so that every rank knows them (the out-of-range policy's check needs them). The
//! GPU holds one pass's counters at a time, never the whole histogram.

use std::ops::Range;
use std::time::Duration;

use cudarc::driver::DevicePtr;

use super::bin_shards::ReductionPlan;
use super::device_engine::DeviceEngine;
use super::prepared::Counting;
use super::window::{count_host, read_tallies, WindowCounts};
use crate::error::{Error, Result};
use crate::gpu::device::cuda_err;
use crate::gpu::nccl::{self, Communicator, Elem, OwnerBuffer, SumBuffer};
use crate::histogram::result::{Counts, Tallies};
use crate::sample::{Samples, Weights};

/// This rank's slice of the sharded histogram: its bins' counts (or sums) and every rank's
/// tallies.
pub struct ShardedOutput {
    pub bins: Range<usize>,
    pub counts: Counts,
    pub tallies: Tallies,
    pub passes: usize,
}

/// Counts `input` (this rank's share of the samples, with its weights) under the sharded `plan`
/// on the one communicator `comm`; every rank of the plan's world must call this with the same
/// plan and `agree` (the fingerprint of the bins, policy and input), or the ranks stop with an
/// error naming the disagreement.
pub fn run(
    comm: &mut Communicator,
    plan: &ReductionPlan,
    agree: u64,
    (samples, weights): (Samples<'_>, Option<Weights<'_>>),
    what: Counting<'_>,
    timeout: Duration,
    watchdog: Option<nccl::Watchdog<'_>>,
) -> Result<ShardedOutput> {
    let shards = plan.shards;
    if comm.world != shards.world {
        return Err(Error::InvalidArgument(format!(
            "a plan for {} ranks on a communicator of {}",
            shards.world, comm.world
        )));
    }
    let gpu = comm.gpu.clone();
    gpu.bind()?;
    check_agreement(comm, agree, timeout, watchdog)?;
    let engine = DeviceEngine::window(&gpu, what)?;
    let passes = plan.passes();
    let longest = passes.iter().map(|p| p.buffer).max().unwrap_or(1);
    let weighted = weights.is_some();
    let mut buffer = WindowCounts::zeroed(&gpu, longest, weighted)?;
    let tallies = gpu
        .stream
        .alloc_zeros::<u64>(3)
        .map_err(cuda_err("allocating tallies"))?;
    let rank = comm.rank;
    let mut mine = None;
    for (i, pass) in passes.iter().enumerate() {
        if i > 0 {
            buffer.clear(&gpu)?;
        }
        let first = i == 0;
        count_host(
            &engine,
            samples,
            weights,
            pass.bins.clone(),
            &buffer,
            first.then_some(&tallies),
        )?;
        if first {
            let t = vec![SumBuffer {
                ptr: tallies.device_ptr(&gpu.stream).0,
                len: 3,
                elem: Elem::U64,
            }];
            // SAFETY: three u64 on this communicator's GPU, alive until this returns.
            unsafe { nccl::all_reduce_sum(std::slice::from_mut(comm), &[t], timeout, watchdog)? };
        }
        let owners = OwnerBuffer {
            ptr: buffer.ptr(&gpu),
            slice: shards.slice,
            first_owner: pass.owners.start,
            owners: pass.owners.len(),
            elem: if weighted { Elem::F64 } else { Elem::U64 },
        };
        // SAFETY: `buffer` holds at least pass.buffer = owners * slice counters on this GPU and
        // is untouched until finish_all_reduce has returned (on its errors the communicator is
        // aborted).
        unsafe { nccl::start_reduce_to_owners(std::slice::from_mut(comm), &[owners])? };
        nccl::finish_all_reduce(std::slice::from_mut(comm), timeout, watchdog, || {})?;
        if let Some(seg) = pass.owned_segment(&shards, rank) {
            mine = Some(buffer.read(&gpu, seg)?);
        }
    }
    let counts = mine.unwrap_or(if weighted {
        Counts::Weighted(Vec::new())
    } else {
        Counts::Unweighted(Vec::new())
    });
    Ok(ShardedOutput {
        bins: shards.owned(rank),
        counts,
        tallies: read_tallies(&gpu, &tallies)?,
        passes: passes.len(),
    })
}

/// Every rank must count the same bins of the same input: the sum of every rank's `value` (and
/// of ones) over the ranks says whether they all gave the same.
fn check_agreement(
    comm: &mut Communicator,
    value: u64,
    timeout: Duration,
    watchdog: Option<nccl::Watchdog<'_>>,
) -> Result<()> {
    let gpu = comm.gpu.clone();
    let buf = gpu
        .stream
        .clone_htod(&[value, 1u64])
        .map_err(cuda_err("copying the agreement check"))?;
    let list = vec![SumBuffer {
        ptr: buf.device_ptr(&gpu.stream).0,
        len: 2,
        elem: Elem::U64,
    }];
    // SAFETY: two u64 on this communicator's GPU, alive until this returns.
    unsafe { nccl::all_reduce_sum(std::slice::from_mut(comm), &[list], timeout, watchdog)? };
    let got = gpu
        .stream
        .clone_dtoh(&buf)
        .map_err(cuda_err("reading the agreement check"))?;
    let world = comm.world as u64;
    if got[1] != world || got[0] != value.wrapping_mul(world) {
        return Err(Error::MultiGpu(format!(
            "the {world} ranks disagree on the bins, the policy or the input (each rank must be \
             given the same file and the same bin options)"
        )));
    }
    Ok(())
}
