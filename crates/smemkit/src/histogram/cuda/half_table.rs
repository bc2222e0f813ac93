//! float16 and bfloat16 samples on the GPU. A 16-bit float has only 65536 codes, so the host
//! resolves the slot of every code once per histogram with the CPU engine's own rule
//! ([`Binning::locate`]) and the kernels look each sample's code up (`MODE_LUT` in
//! `kernels/hist_bins.cuh`, `kernels/hist_lut.cuh`): the GPU gives the CPU engine's bits for any
//! binning (numpy's half-precision arithmetic of uniform bins, explicit and infinite edges) by
//! construction, without repeating that arithmetic on the device.

use crate::gpu::limits::DeviceLimits;
use crate::histogram::bins::{Binning, Slot};
use crate::sample::SampleType;

/// Codes of a 16-bit float.
pub const CODES: usize = 1 << 16;

/// The u32 table's values for the slots outside the bins: as `int` in the kernels they are
/// `SLOT_BELOW`, `SLOT_ABOVE` and `SLOT_NAN` (-1, -2, -3).
pub const LUT_BELOW: u32 = u32::MAX;
/// The table's value for a code above the last bin.
pub const LUT_ABOVE: u32 = u32::MAX - 1;
/// The table's value for a NaN code.
pub const LUT_NAN: u32 = u32::MAX - 2;

/// Bytes of the u16 table the shared-memory kernel keeps beside its counters.
pub const TABLE16_BYTES: usize = CODES * 2;
/// Threads of the shared-memory table kernel's blocks (one block per SM).
pub const TABLE16_BLOCK: u32 = 1024;

/// Whether `t` is counted through a table of its codes.
pub fn is_half(t: SampleType) -> bool {
    matches!(t, SampleType::F16 | SampleType::BF16)
}

/// The slot of each code of `t` under `binning`, as the CPU engine places that value.
fn slots(binning: &Binning, t: SampleType) -> impl Iterator<Item = Slot> + '_ {
    (0..CODES).map(move |code| {
        let bits = code as u16;
        match t {
            SampleType::F16 => binning.locate(half::f16::from_bits(bits)),
            SampleType::BF16 => binning.locate(half::bf16::from_bits(bits)),
            _ => unreachable!("{t} is not a 16-bit float"),
        }
    })
}

/// The table of the generic `MODE_LUT` kernels: each code's bin, or [`LUT_BELOW`], [`LUT_ABOVE`],
/// [`LUT_NAN`]. The CUDA engine counts fewer than `u32::MAX - 3` bins, so no bin meets them.
pub fn slot_table32(binning: &Binning, t: SampleType) -> Vec<u32> {
    slots(binning, t)
        .map(|s| match s {
            Slot::Bin(b) => b as u32,
            Slot::Below => LUT_BELOW,
            Slot::Above => LUT_ABOVE,
            Slot::Nan => LUT_NAN,
        })
        .collect()
}

/// The table of `hist_lut_shared_none`: each code's counter, its bin or `nbins`, `nbins + 1`,
/// `nbins + 2` for below, above and NaN; `None` where `nbins + 3` counters do not fit a u16.
pub fn slot_table16(binning: &Binning, t: SampleType) -> Option<Vec<u16>> {
    let n = binning.nbins();
    if n + 3 > CODES {
        return None;
    }
    Some(
        slots(binning, t)
            .map(|s| match s {
                Slot::Bin(b) => b as u16,
                Slot::Below => n as u16,
                Slot::Above => (n + 1) as u16,
                Slot::Nan => (n + 2) as u16,
            })
            .collect(),
    )
}

/// u32 counters of `hist_lut_shared_none` for `nbins` bins: the bins and the three tallies, padded
/// to whole rows of 32 (the kernel rotates each row's counters across the banks, `lut_counter`).
pub fn table16_counters(nbins: usize) -> usize {
    (nbins + 3).div_ceil(32) * 32
}

/// Dynamic shared memory of `hist_lut_shared_none` for `nbins` bins (the table, then its
/// [`table16_counters`]), or `None` where that does not fit one block or the u16 table cannot name
/// the counters.
pub fn table16_shared_bytes(nbins: usize, limits: &DeviceLimits) -> Option<u32> {
    if nbins == 0 || nbins + 3 > CODES {
        return None;
    }
    let bytes = TABLE16_BYTES + table16_counters(nbins) * 4;
    (bytes <= limits.smem_per_block_optin as usize).then_some(bytes as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::bins::BinSpec;
    use crate::sample::Samples;

    #[test]
    fn tables_hold_the_cpu_engines_slot_of_every_code() {
        let data: Vec<half::bf16> = [-3.0f32, -0.5, 0.0, 0.25, 1.0, 2.5, 7.0]
            .iter()
            .map(|&x| half::bf16::from_f32(x))
            .collect();
        for spec in [
            BinSpec::Uniform {
                nbins: 7,
                range: None,
            },
            BinSpec::Uniform {
                nbins: 1000,
                range: Some((-4.0, 4.0)),
            },
            BinSpec::Edges(vec![f64::NEG_INFINITY, -1.0, 0.0, 0.0, 2.0, f64::INFINITY]),
        ] {
            let binning = Binning::resolve(&spec, Samples::BF16(&data)).unwrap();
            let n = binning.nbins();
            let t32 = slot_table32(&binning, SampleType::BF16);
            let t16 = slot_table16(&binning, SampleType::BF16).unwrap();
            assert_eq!((t32.len(), t16.len()), (CODES, CODES));
            for code in 0..CODES {
                let x = half::bf16::from_bits(code as u16);
                let (want32, want16) = match binning.locate(x) {
                    Slot::Bin(b) => (b as u32, b as u16),
                    Slot::Below => (LUT_BELOW, n as u16),
                    Slot::Above => (LUT_ABOVE, n as u16 + 1),
                    Slot::Nan => (LUT_NAN, n as u16 + 2),
                };
                assert_eq!((t32[code], t16[code]), (want32, want16), "{spec:?} {x}");
            }
            // NaN codes, both infinities and both zeros are where numpy puts them.
            assert_eq!(t32[0x7fc0], LUT_NAN);
            assert_eq!(t32[0x0000], t32[0x8000]);
        }
    }

    #[test]
    fn the_shared_table_fits_up_to_the_limit_of_one_block() {
        let h100 = DeviceLimits::H100;
        // 4099 counters padded to 4128, whole rows of 32.
        assert_eq!(
            table16_shared_bytes(4096, &h100),
            Some((TABLE16_BYTES + 4128 * 4) as u32)
        );
        assert_eq!(table16_counters(29), 32);
        assert_eq!(table16_counters(30), 64);
        let rows = (h100.smem_per_block_optin as usize - TABLE16_BYTES) / 4 / 32;
        let most = rows * 32 - 3;
        assert!(table16_shared_bytes(most, &h100).is_some());
        assert!(table16_shared_bytes(most + 1, &h100).is_none());
        assert!(table16_shared_bytes(0, &h100).is_none());
        let f16 = Binning::Integer { nbins: CODES };
        assert!(slot_table16(&f16, SampleType::F16).is_none());
    }
}
