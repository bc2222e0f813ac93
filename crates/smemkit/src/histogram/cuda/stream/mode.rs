//! Whether an input streams, and how it is cut into chunks that fit the device budget.

use super::*;

/// Whether a histogram on the GPU streams its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamMode {
    /// Stream large inputs (see [`should_stream`]).
    #[default]
    Auto,
    /// Always stream.
    Always,
    /// Never stream: copy the whole input first.
    Never,
}

/// Whether an input of `bytes` streams: always or never when forced; on `Auto` when it is at least
/// [`AUTO_STREAM_BYTES`] or more than `device_room` (the budget, or the free device memory).
pub fn should_stream(mode: StreamMode, bytes: usize, device_room: usize) -> bool {
    match mode {
        StreamMode::Always => true,
        StreamMode::Never => false,
        StreamMode::Auto => bytes >= AUTO_STREAM_BYTES || bytes > device_room,
    }
}

/// How an input is cut: `chunks` chunks of `chunk_samples` samples (the last one shorter) through
/// `depth` slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Samples per chunk.
    pub chunk_samples: usize,
    /// Slots: chunks in flight at once.
    pub depth: usize,
    /// How many chunks the input is cut into.
    pub chunks: usize,
}

/// Fits the chunks of `n` samples (`item_bytes` per sample, weights included) into the options
/// and the device budget (`free_device` when the options give none: half of it is used).
pub fn chunk_plan(
    n: usize,
    sample_bytes: usize,
    item_bytes: usize,
    opts: &StreamOptions,
    free_device: usize,
) -> Result<ChunkPlan> {
    if opts.depth < 2 {
        return Err(Error::InvalidArgument(format!(
            "a streaming pipeline needs at least 2 slots (got depth {})",
            opts.depth
        )));
    }
    let budget = opts.device_budget.unwrap_or(free_device / 2);
    let by_budget = budget / (opts.depth * item_bytes.max(1));
    if by_budget == 0 {
        return Err(Error::InvalidArgument(format!(
            "a device budget of {budget} bytes cannot hold {} slots of even one sample ({item_bytes} bytes each)",
            opts.depth
        )));
    }
    let chunk_samples = (opts.chunk_bytes / sample_bytes.max(1))
        .max(1)
        .min(by_budget)
        .min(LAUNCH_BATCH)
        .min(n.max(1));
    Ok(ChunkPlan {
        chunk_samples,
        depth: opts.depth,
        chunks: n.div_ceil(chunk_samples),
    })
}
