//! The shared-memory labs. The bank-conflict lab: what the 32-bank rule predicts for strided
//! shared-memory reads, and (on a GPU) what the hardware does; the predictions need no GPU, so it is
//! useful on any machine. The cache lab: the stencil and the transpose through shared memory against
//! variants that read through the L1 cache only, under several shared-memory / L1 carveouts, and
//! shared-memory atomics against global ones, so that "the cache is easier and 90%+ as good; shared
//! memory is faster for atomics and more predictable" is measured rather than repeated. It needs a
//! GPU; its options and results are plain data here, the GPU side is in [`cache`].

pub mod bank;
pub mod cache;
pub mod cache_options;

use crate::error::Result;

pub use bank::{measure_banks, predicted_degree, BankMeasurement, BANKS, STRIDES};
pub use cache_options::{CacheExperiment, CacheMeasurement, CacheOptions, CARVEOUTS};

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
