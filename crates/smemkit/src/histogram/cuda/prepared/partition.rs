//! The partition strategy's passes: samples scattered into buckets of bins in global memory,
//! then each bucket counted in shared memory.

use super::*;

/// Samples per batch of the partition passes (the index array holds one u16 per sample).
pub const PARTITION_BATCH: usize = 1 << 28;

/// Samples each thread of the scatter pass sorts per tile (`PART_K` in `histogram.cu`).
pub(super) const PARTITION_TILE_PER_THREAD: usize = 16;

/// Kernel tuning only: SMEMKIT_PACKED_BLOCK_THREADS=512 (or 256) launches the narrow-counter
/// kernels of one-block-per-SM plans with blocks of that many threads instead of 1024, so that one
/// device call can time both block sizes (bench/NOTES.md, run 9). Other values are ignored.
pub(super) fn packed_block_override() -> Option<u32> {
    crate::config::packed_block_threads()
}

/// Bucket counts up to which the scatter ranks samples by warp votes (see `Partition::split_bits`).
/// Off: the votes cost more than the contended atomics they save on uniform data and gain little on
/// hot data (bench/NOTES.md, "Measured thresholds"); SMEMKIT_PARTITION_SPLIT_MAX_BUCKETS=256 brings them back for experiments.
pub(super) const PARTITION_SPLIT_MAX_BUCKETS: usize = 0;

// The index array holds each bin's offset within its bucket in 16 bits.
const _: () = assert!(plan::PARTITION_BITS <= 16);

/// The partition strategy's later passes, launch sizes and buffers (see `histogram.cu`).
pub(super) struct Partition {
    pub(super) scan: cudarc::driver::CudaFunction,
    pub(super) scatter: cudarc::driver::CudaFunction,
    pub(super) bins: cudarc::driver::CudaFunction,
    pub(super) nbuckets: usize,
    /// Decided once per plan (see `Partition::split_bits`), not per launch.
    pub(super) split_bits: u32,
    pub(super) count_grid: u32,
    pub(super) scatter_grid: u32,
    pub(super) bins_grid: u32,
    pub(super) buffers: std::sync::Mutex<PartitionBuffers>,
}

pub(super) struct PartitionBuffers {
    pub(super) bucket_counts: CudaSlice<u64>,
    pub(super) cursor: CudaSlice<u64>,
    pub(super) offsets: CudaSlice<u64>,
    pub(super) idx: Option<CudaSlice<u16>>,
}

impl Partition {
    pub(super) fn new(
        gpu: &Arc<Gpu>,
        sample_type: SampleType,
        binning: &Binning,
        count: &cudarc::driver::CudaFunction,
    ) -> Result<Partition> {
        let defines = sample_defines(sample_type);
        let scatter = gpu.function(
            &HISTOGRAM,
            &defines,
            &format!("hist_part_scatter_{}", mode_name(binning, sample_type)),
        )?;
        let bins = gpu.function(&HISTOGRAM, &defines, "hist_part_bins")?;
        let scan = gpu.function(&HISTOGRAM, &defines, "hist_part_scan")?;
        let nbuckets = binning.nbins().div_ceil(1 << plan::PARTITION_BITS);
        let optin = gpu.limits.smem_per_block_optin;
        let grid = |f: &cudarc::driver::CudaFunction, shared: u32| -> Result<u32> {
            launch::prepare_function(
                f,
                &LaunchShape {
                    grid: 1,
                    block: plan::BLOCK_THREADS,
                    shared_bytes: shared,
                    cluster: 1,
                },
                optin,
            )?;
            let per_sm = f
                .occupancy_max_active_blocks_per_multiprocessor(
                    plan::BLOCK_THREADS,
                    shared as usize,
                    None,
                )
                .map_err(cuda_err("querying occupancy"))?;
            Ok(per_sm.max(1) * gpu.limits.sm_count)
        };
        let count_grid = grid(count, Self::count_shared(nbuckets))?;
        let scatter_grid = grid(&scatter, Self::scatter_shared(nbuckets))?;
        let bins_grid = grid(&bins, 4 << plan::PARTITION_BITS)?;
        let s = &gpu.stream;
        let buffers = PartitionBuffers {
            bucket_counts: s
                .alloc_zeros::<u64>(nbuckets)
                .map_err(cuda_err("allocating bucket counts"))?,
            cursor: s
                .alloc_zeros::<u64>(nbuckets)
                .map_err(cuda_err("allocating bucket cursors"))?,
            offsets: s
                .alloc_zeros::<u64>(nbuckets + 1)
                .map_err(cuda_err("allocating bucket offsets"))?,
            idx: None,
        };
        Ok(Partition {
            split_bits: Self::split_bits(nbuckets),
            scan,
            scatter,
            bins,
            nbuckets,
            count_grid,
            scatter_grid,
            bins_grid,
            buffers: std::sync::Mutex::new(buffers),
        })
    }

    fn count_shared(nbuckets: usize) -> u32 {
        (nbuckets * 4) as u32
    }

    /// Per bucket three u32 (count, local offset, shift), then the tile's bins (see `part_scatter`).
    fn scatter_shared(nbuckets: usize) -> u32 {
        (nbuckets * 12 + plan::BLOCK_THREADS as usize * PARTITION_TILE_PER_THREAD * 4) as u32
    }

    /// Bits of the bucket number that the scatter's warps vote on to rank samples with one shared
    /// atomic per group of lanes (0: one atomic per sample). The votes pay where a warp's lanes share
    /// few buckets; SMEMKIT_PARTITION_SPLIT_MAX_BUCKETS overrides the bucket count up to which they
    /// are used (kernel tuning only).
    fn split_bits(nbuckets: usize) -> u32 {
        let max =
            crate::config::partition_split_max_buckets().unwrap_or(PARTITION_SPLIT_MAX_BUCKETS);
        if nbuckets > max || nbuckets < 2 {
            0
        } else {
            usize::BITS - (nbuckets - 1).leading_zeros()
        }
    }

    /// Makes the index array hold a batch of up to `n` samples (allocated on `stream`).
    pub(super) fn reserve(&self, stream: &Arc<CudaStream>, n: usize) -> Result<()> {
        let mut guard = self.buffers.lock().expect("partition buffers");
        let batch = n.min(PARTITION_BATCH);
        if !guard.idx.as_ref().is_some_and(|b| b.len() >= batch) {
            // SAFETY: every index the third pass reads was written by the second.
            guard.idx = Some(
                unsafe { stream.alloc::<u16>(batch.max(1)) }
                    .map_err(cuda_err("allocating the partition index array"))?,
            );
        }
        Ok(())
    }

    /// # Safety
    /// As [`Prepared::enqueue`]; `params` are the prepared ones, gated or not.
    pub(super) unsafe fn launch(
        &self,
        p: &Prepared,
        run: &Run<'_>,
        params: KernelBinParams,
    ) -> Result<()> {
        let Run {
            stream,
            input,
            n,
            out,
            tallies,
            ..
        } = *run;
        self.reserve(stream, n)?;
        let mut guard = self.buffers.lock().expect("partition buffers");
        let bufs = &mut *guard;
        let (bits, nb) = (plan::PARTITION_BITS, self.nbuckets as u32);
        let split_bits = self.split_bits;
        let elem = p.sample_type.size() as u64;
        let cfg = |grid: u32, shared: u32| LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (plan::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: shared,
        };
        // Diagnostic for kernel work: SMEMKIT_PROFILE_PARTITION=1 prints each pass's time.
        let profile = PassProfile::from_env(&p.gpu)?;
        let mark = |i: usize| -> Result<()> {
            match &profile {
                Some(prof) => prof.record(i, stream),
                None => Ok(()),
            }
        };
        let mut start = 0usize;
        while start < n {
            let len = (n - start).min(PARTITION_BATCH);
            mark(0)?;
            let (in_ptr, len64) = (input + start as u64 * elem, len as u64);
            stream
                .memset_zeros(&mut bufs.bucket_counts)
                .map_err(cuda_err("zeroing bucket counts"))?;
            let counts_ptr = bufs.bucket_counts.device_ptr(stream).0;
            let mut b = stream.launch_builder(&p.func);
            b.arg(&in_ptr)
                .arg(&len64)
                .arg(&params)
                .arg(&bits)
                .arg(&nb)
                .arg(&counts_ptr)
                .arg(&tallies);
            // SAFETY: hist_part_count_*(in, n, BinParams, bits, nbuckets, bucket_counts, tallies).
            unsafe { b.launch(cfg(self.count_grid, Self::count_shared(self.nbuckets))) }
                .map_err(cuda_err("launching the bucket count"))?;
            mark(1)?;
            let cursor_ptr = bufs.cursor.device_ptr(stream).0;
            let offsets_ptr = bufs.offsets.device_ptr(stream).0;
            let mut b = stream.launch_builder(&self.scan);
            b.arg(&counts_ptr)
                .arg(&nb)
                .arg(&offsets_ptr)
                .arg(&cursor_ptr);
            // SAFETY: hist_part_scan(counts, nbuckets, offsets, cursor): nbuckets counts in,
            // nbuckets + 1 offsets and nbuckets cursors out; one block of 1024 threads.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1024, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(cuda_err("launching the bucket offsets scan"))?;
            mark(2)?;
            let idx_ptr = bufs
                .idx
                .as_ref()
                .expect("allocated above")
                .device_ptr(stream)
                .0;
            let mut b = stream.launch_builder(&self.scatter);
            b.arg(&in_ptr)
                .arg(&len64)
                .arg(&params)
                .arg(&bits)
                .arg(&nb)
                .arg(&split_bits)
                .arg(&cursor_ptr)
                .arg(&idx_ptr);
            // SAFETY: hist_part_scatter_*(in, n, BinParams, bits, nbuckets, split_bits, cursor, idx); idx holds
            // at least `len` entries and the cursors start at the offsets of the counted samples.
            unsafe { b.launch(cfg(self.scatter_grid, Self::scatter_shared(self.nbuckets))) }
                .map_err(cuda_err("launching the scatter"))?;
            mark(3)?;
            let nbins = p.nbins as u64;
            let mut b = stream.launch_builder(&self.bins);
            b.arg(&idx_ptr)
                .arg(&offsets_ptr)
                .arg(&nb)
                .arg(&bits)
                .arg(&nbins)
                .arg(&out);
            // SAFETY: hist_part_bins(idx, offsets, nbuckets, bits, nbins, out); out holds nbins u64.
            unsafe { b.launch(cfg(self.bins_grid, 4 << bits)) }
                .map_err(cuda_err("launching the bucket histograms"))?;
            mark(4)?;
            if let Some(prof) = &profile {
                prof.report(len)?;
            }
            start += len;
        }
        Ok(())
    }
}
