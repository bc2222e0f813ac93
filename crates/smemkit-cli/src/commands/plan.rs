//! `smemkit plan`: prints the launch plan the planner chooses (or checks a forced strategy), with
//! the device limits it used, so the choice can be read without running anything.

use std::io::Write;

use anyhow::{bail, Context, Result};
use smemkit::internals::histogram::plan::{
    busiest_slice_share_for_global, plan, skew_probe_threshold, spill_share_for_sliced, Strategy,
    Workload, SKEW_PROBE_MIN_SAMPLES, SKEW_PROBE_SAMPLES,
};
use smemkit::{histogram::StrategyChoice, sample::SampleType};

use crate::cli::PlanArgs;
use crate::device::device_limits;

pub fn run(args: &PlanArgs, out: &mut dyn Write) -> Result<()> {
    if args.bins == 0 {
        bail!("--bins must be at least 1 (got 0)");
    }
    let sample_type = args.dtype.parse::<SampleType>().context("--dtype")?;
    let choice = args
        .strategy
        .parse::<StrategyChoice>()
        .and_then(|s| s.with_cluster_size(args.cluster_size))
        .context("--strategy")?;
    let (limits, source) = device_limits();
    let workload = Workload::new(args.bins, sample_type, args.weighted).with_samples(args.samples);
    let p = plan(&workload, &limits, choice)?;
    writeln!(out, "device        {source}")?;
    writeln!(
        out,
        "limits        {} SMs, {} B shared memory per block (opt-in), {} B per SM, clusters up to {} ({} portable), {} B L2, compute {}.{}",
        limits.sm_count,
        limits.smem_per_block_optin,
        limits.smem_per_sm,
        limits.max_cluster_nonportable,
        limits.max_cluster_portable,
        limits.l2_bytes,
        limits.compute_capability.0,
        limits.compute_capability.1
    )?;
    writeln!(
        out,
        "workload      {} bins of {}{}{}",
        args.bins,
        sample_type,
        if args.weighted { ", weighted" } else { "" },
        match args.samples {
            Some(n) => format!(", {n} samples (one GPU's shard)"),
            None => String::new(),
        }
    )?;
    writeln!(out, "{p}")?;
    // The CUDA engine's skew probe (cuda::histogram::Prepared), decided by the same function.
    if let Some(share) = skew_probe_threshold(&p, &workload, choice) {
        let crowded = match p.strategy {
            Strategy::Sliced { slices, .. } => format!(
                " or one slice >= {:.0}%",
                busiest_slice_share_for_global(slices) * 100.0
            ),
            _ => String::new(),
        };
        let spill = match spill_share_for_sliced(&p, &workload) {
            Some(share) => format!("; spill where its window holds >= {:.0}%", share * 100.0),
            None => String::new(),
        };
        writeln!(
            out,
            "skew probe    {SKEW_PROBE_SAMPLES} samples first; global instead where one bin holds >= {:.0}%{crowded}{spill} of them \
             (inputs of {SKEW_PROBE_MIN_SAMPLES} samples or more)",
            share * 100.0
        )?;
    }
    Ok(())
}
