//! The tier of a joint histogram: the 1-D planner's choice for the joint bin count, among the
//! strategies the joint kernels have (per-block shared memory, u32 or packed narrow counters; a
//! cluster's distributed shared memory; global memory). The 1-D planner's other families (sliced,
//! partition, exchange) re-read or re-bin samples, which the one-pass joint kernels do not do; where
//! `auto` picks one of them, a cluster of at most [`AUTO_CLUSTER_MAX`] blocks that holds the
//! counters takes its place, else global memory.

use crate::error::{Error, Result};
use crate::histogram::plan::{
    self, counter_capacity, packed_bytes, DeviceLimits, Plan, Strategy, StrategyChoice, Workload,
    AUTO_CLUSTER_MAX,
};
use crate::sample::SampleType;

/// The plan of a joint histogram of `nbins` joint bins over `samples` samples.
pub fn joint_plan(
    nbins: usize,
    sample_type: SampleType,
    weighted: bool,
    samples: usize,
    limits: &DeviceLimits,
    choice: StrategyChoice,
) -> Result<Plan> {
    let w = Workload::new(nbins, sample_type, weighted).with_samples(Some(samples));
    let forced = choice != StrategyChoice::Auto;
    let p = plan::plan(&w, limits, choice)?;
    match p.strategy {
        Strategy::Shared | Strategy::Global => Ok(p),
        Strategy::Packed { bits: 16 | 8 | 4 } => Ok(p),
        Strategy::Cluster { .. } => Ok(p),
        s if forced => Err(Error::StrategyUnsupported {
            strategy: s.name(),
            reason: "joint histograms count in one pass with shared, shared16, shared8, shared4, \
                     cluster or global counters"
                .into(),
        }),
        s => {
            let cluster = plan::plan(&w, limits, StrategyChoice::Cluster(None))
                .ok()
                .filter(|c| c.strategy.cluster_size() <= AUTO_CLUSTER_MAX);
            let fallback = match cluster {
                Some(c) => c,
                None => plan::plan(&w, limits, StrategyChoice::Global)?,
            };
            Ok(Plan {
                reason: format!(
                    "{} (1-D would take {s}, which joint histograms do not have): {}",
                    fallback.strategy, p.reason
                ),
                ..fallback
            })
        }
    }
}

/// The window of a window plan: packed counters of `bits` bits for the joint bins `lo .. lo + len`
/// in shared memory, u64 atomics in global memory for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JointWindow {
    pub bits: u32,
    pub lo: usize,
    pub len: usize,
}

/// The window of `bits`-bit counters one block holds over joint bins of `shape` (C order): as many
/// whole planes of the first axis as fit, centred on its middle, or where not even one plane fits,
/// the middle run of joint bins. `None` where every bin fits (a packed plan needs no window).
pub fn window_of(shape: &[usize], limits: &DeviceLimits, bits: u32) -> Option<JointWindow> {
    let nbins = shape.iter().product::<usize>();
    let per_word = (32 / bits) as usize;
    let most = (counter_capacity(limits).saturating_sub(packed_bytes(0, bits)) / 4) * per_word;
    if nbins <= most || most == 0 {
        return None;
    }
    let plane = shape[1..].iter().product::<usize>();
    let (lo, len) = if plane <= most {
        let planes = most / plane;
        ((shape[0] - planes) / 2 * plane, planes * plane)
    } else {
        ((nbins - most) / 2, most)
    };
    Some(JointWindow { bits, lo, len })
}

/// The kernel entry point of a plan: `histdd_<strategy>_<layout>_<weights>`.
pub fn kernel_name(strategy: Strategy, layout: &str, weights: &str) -> String {
    let s = match strategy {
        Strategy::Cluster { .. } => "cluster".to_string(),
        s => s.name(),
    };
    format!("histdd_{s}_{layout}_{weights}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceLimits {
        DeviceLimits::H100
    }

    #[test]
    fn the_joint_bin_count_chooses_the_tier() {
        let l = h100();
        let n = 1 << 27;
        // 32^3 RGB bins: u32 counters in one block.
        let p = joint_plan(32768, SampleType::U8, false, n, &l, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Shared);
        // 256 x 256: beyond u32 counters in one block, 16-bit counters hold them.
        let p = joint_plan(65536, SampleType::F32, false, n, &l, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Packed { bits: 16 });
        // Weighted 256 x 256 (f64 sums, 512 KiB): a cluster.
        let p = joint_plan(65536, SampleType::F32, true, n, &l, StrategyChoice::Auto).unwrap();
        assert!(matches!(p.strategy, Strategy::Cluster { .. }), "{p}");
        // 64^3 float: global, as in 1-D.
        let p = joint_plan(262144, SampleType::F32, false, n, &l, StrategyChoice::Auto).unwrap();
        assert_eq!(p.strategy, Strategy::Global, "{p}");
        // Integer samples over 262144 bins: 1-D would slice; joint takes global (a cluster of 4
        // blocks does not hold 1 MiB of counters).
        let p = joint_plan(262144, SampleType::I32, false, n, &l, StrategyChoice::Auto).unwrap();
        assert!(
            !matches!(p.strategy, Strategy::Sliced { .. } | Strategy::Partition),
            "{p}"
        );
        // Forced strategies the joint kernels lack are refused by name.
        let e = joint_plan(
            262144,
            SampleType::I32,
            false,
            n,
            &l,
            StrategyChoice::Partition,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("one pass"), "{e}");
        // A forced cluster of 8 over 64^3 bins.
        let p = joint_plan(
            262144,
            SampleType::F32,
            false,
            n,
            &l,
            StrategyChoice::Cluster(Some(8)),
        )
        .unwrap();
        assert_eq!(p.strategy, Strategy::Cluster { size: 8 });
        assert_eq!(p.bins_per_block, 32768);
    }

    #[test]
    fn windows_hold_the_middle_planes() {
        let l = h100();
        let w = window_of(&[64, 64, 64], &l, 8).unwrap();
        assert_eq!(w.len % 4096, 0);
        let planes = w.len / 4096;
        assert!((50..64).contains(&planes), "{w:?}");
        assert_eq!(w.lo / 4096, (64 - planes) / 2);
        assert!(packed_bytes(w.len, 8) <= counter_capacity(&l));
        let w16 = window_of(&[64, 64, 64], &l, 16).unwrap();
        assert_eq!(w16.len / 4096, planes / 2);
        assert!(packed_bytes(w16.len, 16) <= counter_capacity(&l));
        // Everything fits: no window. One plane too large: the middle run of bins.
        assert_eq!(window_of(&[256, 256], &l, 8), None);
        let w = window_of(&[2, 1 << 20], &l, 8).unwrap();
        assert_eq!(w.lo + w.len / 2, 1 << 20);
        assert!(packed_bytes(w.len, 8) <= counter_capacity(&l));
    }

    #[test]
    fn kernel_names() {
        assert_eq!(
            kernel_name(Strategy::Cluster { size: 4 }, "rows2", "none"),
            "histdd_cluster_rows2_none"
        );
        assert_eq!(
            kernel_name(Strategy::Packed { bits: 16 }, "strided", "none"),
            "histdd_shared16_strided_none"
        );
    }
}
