//! The shared-memory labs. The bank-conflict lab: what the 32-bank rule predicts for strided
//! shared-memory reads, and (on a GPU) what the hardware does; the predictions need no GPU, so it is
//! useful on any machine. The cache lab: the stencil and the transpose through shared memory against
//! variants that read through the L1 cache only, under several shared-memory / L1 carveouts, and
//! shared-memory atomics against global ones, so that "the cache is easier and 90%+ as good; shared
//! memory is faster for atomics and more predictable" is measured rather than repeated. It needs a
//! GPU; its options and results are plain data here, the GPU side is in `cuda::cache_lab`.

pub mod cache;

use crate::error::Result;

/// Shared memory banks (4-byte words each) on every GPU since Kepler's 4-byte mode.
pub const BANKS: u32 = 32;

/// The conflict degree the bank rule predicts when the 32 lanes of a warp read 4-byte words
/// `stride` words apart: the number of lanes that share each bank, `gcd(stride, 32)`.
pub fn predicted_degree(stride: u32) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if stride == 0 {
        return BANKS; // every lane reads the same word: a broadcast, but one bank
    }
    gcd(stride, BANKS)
}

/// One measured stride.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BankMeasurement {
    pub stride: u32,
    pub predicted: u32,
    /// Milliseconds for the probe kernel.
    pub ms: f32,
    /// Shared-memory read bandwidth in GB/s (4 bytes per lane per read).
    pub gbps: f64,
    /// Time relative to stride 1.
    pub slowdown: f64,
}

/// Strides the lab walks through: 1, 2, 4, ..., 32, and 33 (odd: conflict-free again).
pub const STRIDES: [u32; 7] = [1, 2, 4, 8, 16, 32, 33];

/// Runs the probe on the GPU for every stride of [`STRIDES`].
pub fn measure_banks() -> Result<Vec<BankMeasurement>> {
    crate::array_ops::cuda::bank_probe(&STRIDES)
}

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
            .find(|r| !(1..=crate::array_ops::stencil::MAX_RADIUS).contains(r))
        {
            return bad(format!(
                "stencil radius {r} is outside 1..={}",
                crate::array_ops::stencil::MAX_RADIUS
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

/// Runs the cache lab on the GPU (an error saying so when there is none).
pub fn measure_cache(options: &CacheOptions) -> Result<Vec<CacheMeasurement>> {
    options.check()?;
    crate::lab::cache::measure(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bank_rule() {
        let d: Vec<u32> = STRIDES.iter().map(|&s| predicted_degree(s)).collect();
        assert_eq!(d, vec![1, 2, 4, 8, 16, 32, 1]);
        assert_eq!(predicted_degree(6), 2);
        assert_eq!(predicted_degree(0), 32);
    }

    #[test]
    fn cache_options_are_checked() {
        assert!(CacheOptions::default().check().is_ok());
        let with = |f: fn(&mut CacheOptions)| {
            let mut o = CacheOptions::default();
            f(&mut o);
            o.check().unwrap_err().to_string()
        };
        assert!(with(|o| o.radii = vec![0]).contains("radius 0"));
        assert!(with(|o| o.radii = vec![65]).contains("radius 65"));
        assert!(with(|o| o.carveouts = vec![101]).contains("carveout 101"));
        assert!(with(|o| o.atomic_bins = vec![16385]).contains("16385"));
        assert!(with(|o| o.log2_n = 31).contains("log2 n 31"));
        assert!(with(|o| o.runs = 0).contains("runs"));
    }
}
