//! The sizes of the streaming pipeline ([`super::cuda::stream`]): plain data that the request carries
//! to the engines.

/// Bytes of samples per chunk unless told otherwise: pinned inputs stream at the pinned copy's rate
/// at any size, but pageable memory and cached files, which CPU threads copy into the staging
/// buffers, need large chunks (bench/NOTES.md, "Measured thresholds"). Three slots of 128 MiB take 384 MiB of page-locked and of device memory; the device
/// budget shrinks the chunks where that does not fit.
pub const DEFAULT_CHUNK_BYTES: usize = 128 << 20;
/// Slots in flight unless told otherwise: one being filled, one being copied, one being counted
/// (2 and 4 measured the same within noise at 128 MiB).
pub const DEFAULT_DEPTH: usize = 3;
/// Sizes of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes of samples per chunk (rounded down to whole samples; at least one sample).
    pub chunk_bytes: usize,
    /// Chunk slots in flight, at least 2.
    pub depth: usize,
    /// Device memory the slots may take, in bytes; `None`: half the device's free memory.
    pub device_budget: Option<usize>,
    /// CPU threads that fill staging buffers; 0: rayon's global pool.
    pub fill_threads: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            depth: DEFAULT_DEPTH,
            device_budget: None,
            fill_threads: 0,
        }
    }
}
