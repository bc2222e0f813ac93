//! The bank-conflict lab: what the 32-bank rule predicts for strided shared-memory reads, and (on a
//! GPU) what the hardware does. The predictions need no GPU, so the lab is useful on any machine.

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
    crate::cuda::ops::bank_probe(&STRIDES)
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
}
