//! The cache lab's options and results: plain data, checked before any GPU work.

use crate::error::Result;

/// Carveouts the cache lab tries besides the driver's default (percent of the SM's L1 / shared
/// memory preferred as shared memory).
pub const CARVEOUTS: [u32; 4] = [0, 25, 50, 100];

/// What the cache lab measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// log2 of the elements (f32) of the stencil and transpose arrays and of the atomics' values.
    pub log2_n: u32,
    /// Stencil radii (1 to 64).
    pub radii: Vec<usize>,
    /// Carveouts (0 to 100 percent) tried besides the driver's default.
    pub carveouts: Vec<u32>,
    /// Counter counts of the atomics comparison (each 1 to 16384, to fit shared memory).
    pub atomic_bins: Vec<u32>,
    /// Timed runs per measurement (median), after one untimed run.
    pub runs: usize,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            log2_n: 28,
            radii: vec![3, 64],
            carveouts: CARVEOUTS.to_vec(),
            atomic_bins: vec![256, 4096],
            runs: 9,
        }
    }
}

impl CacheOptions {
    /// Checks the ranges; the error says which value is wrong.
    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(crate::Error::InvalidArgument(m));
        if !(12..=30).contains(&self.log2_n) {
            return bad(format!("log2 n {} is outside 12..=30", self.log2_n));
        }
        if let Some(r) = self
            .radii
            .iter()
            .find(|r| !(1..=crate::array_ops::kinds::MAX_RADIUS).contains(r))
        {
            return bad(format!(
                "stencil radius {r} is outside 1..={}",
                crate::array_ops::kinds::MAX_RADIUS
            ));
        }
        if let Some(c) = self.carveouts.iter().find(|&&c| c > 100) {
            return bad(format!("carveout {c} is not a percentage (0..=100)"));
        }
        if let Some(b) = self.atomic_bins.iter().find(|b| !(1..=16384).contains(*b)) {
            return bad(format!("atomic bins {b} is outside 1..=16384"));
        }
        if self.runs == 0 {
            return bad("runs must be at least 1".into());
        }
        Ok(())
    }
}

/// One experiment of the cache lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheExperiment {
    /// f32 stencil, zero boundary, this radius.
    Stencil { radius: usize },
    /// f32 transpose of a `2^(log2_n / 2)`-row matrix.
    Transpose,
    /// Counting u32 values into `bins` counters; `hot`: 7 of every 8 values are the same.
    Atomics { bins: u32, hot: bool },
}

impl CacheExperiment {
    /// The `op` of its benchmark rows.
    pub fn op(&self) -> &'static str {
        match self {
            CacheExperiment::Stencil { .. } => "stencil1d",
            CacheExperiment::Transpose => "transpose",
            CacheExperiment::Atomics { .. } => "atomic_count",
        }
    }

    /// A short name for tables.
    pub fn describe(&self) -> String {
        match self {
            CacheExperiment::Stencil { radius } => format!("stencil1d r={radius}"),
            CacheExperiment::Transpose => "transpose f32".into(),
            CacheExperiment::Atomics { bins, hot } => {
                format!(
                    "atomics {bins} bins {}",
                    if *hot { "hot" } else { "uniform" }
                )
            }
        }
    }
}

/// One measurement of the cache lab.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheMeasurement {
    pub experiment: CacheExperiment,
    /// `shared` (the shared-memory kernel), or the variant without shared memory (`l1`, `naive`
    /// for the transpose, `global` for the atomics).
    pub variant: &'static str,
    /// Whether the kernel stages through shared memory.
    pub uses_shared: bool,
    /// The preferred carveout set for the launch (`None`: the driver's default).
    pub carveout: Option<u32>,
    /// Median milliseconds.
    pub ms: f32,
    /// Bytes counted per run (read + written for stencil and transpose, read for the atomics).
    pub bytes: u64,
    pub gbps: f64,
    /// GB/s over the shared-memory kernel's at the driver's default carveout.
    pub ratio_to_shared: f64,
    /// The output was checked in this run: the shared kernel's against the CPU definition (at
    /// random positions for the stencil and the transpose, every counter for the atomics), every
    /// other kernel's against the shared kernel's, element for element.
    pub correct: bool,
}
