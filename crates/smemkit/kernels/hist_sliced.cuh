// ---- sliced: the bins cut into slices of one block's narrow counters ---------------------------
//
// Beyond what one block's narrow counters hold, the bins are cut into slices of p.bins_per_block
// bins; each block counts one slice and reads the whole input, skipping the samples of other
// slices. Block b counts slice b % slices as member b / slices of that slice's blocks, and the
// members of every slice walk the input in the same order: the blocks reading a tile at about the
// same time are one per slice, so the tile comes from DRAM once and from L2 once per slice. What it
// costs: every sample is read and binned once per slice, whether counted or not (a warp's lanes
// rarely agree on skipping: with five slices some lane of 32 almost always counts), so the time
// grows with the slice count; `lean_loop` keeps that per-slice step short. Staging each warp's
// samples of the slice in a shared ring to count them 32 at a time cost more instructions than it
// saved for those short steps; the float64 shortcut of float32 bins off the grid (uniform32w),
// about 60 instructions, is the exception (`wide_ring_loop`). (Figures in bench/NOTES.md.) What it
// saves against partition or global: each count is a shared-memory atomic, with no round trip of
// the samples through DRAM and no global atomic per sample. The host launches a multiple of
// `slices` blocks so that every slice has as many members, which keeps them in step.
template <int MODE, int BITS>
__device__ void sliced_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned long long* out,
                              unsigned long long* tallies) {
    if (gated_off(p)) return;
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    const unsigned per = p.bins_per_block;
    const unsigned slices = (unsigned)((p.nbins + per - 1) / per);
    const unsigned slice = blockIdx.x % slices;
    const unsigned member = blockIdx.x / slices;
    const unsigned members = (gridDim.x - slice + slices - 1) / slices;
    const unsigned lo = slice * per;
    const unsigned len = (unsigned)min((unsigned long long)per, p.nbins - lo);
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned words = (len + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    for (unsigned b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    __syncthreads();
    PackedSink<BITS> sink{h, out + lo, len, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    Tally t{0, 0, 0};
    // A second copy of the loop without tallies where binning is cheap (the modes `auto` slices);
    // the others keep one copy, which fits their registers without spilling.
    constexpr bool LEAN = CHEAP_MODE(MODE);
    // The warps' staging rings after the hot lanes, where the host gave them room (p.stage_ring).
    float* ring = p.stage_ring ? reinterpret_cast<float*>(hot_counts + PACKED_HOT_LANES) + (threadIdx.x >> 5) * WIDE_RING_SLOTS
                               : nullptr;
    if (!LEAN || slice == 0)
        lean_loop<MODE, true, true>(in, n, p, sink, t, lo, len, member, members, ring);
    else
        lean_loop<MODE, !LEAN, true>(in, n, p, sink, t, lo, len, member, members);
    __syncthreads();
    if (p.lanes16)
        flush_packed_lanes16<BITS>(h, len, hot_counts, hot_key, lo, p.lanes16, out + lo);
    else
        flush_packed<BITS>(h, len, hot_counts, hot_key, out + lo);
    // Every slice sees every sample; the first slice's blocks report the ones outside the bins.
    if (slice == 0) flush_tally(t, tallies);
}

// ---- sliced sums: weighted sums (or 64-bit counts) of the bins cut into slices ------------------
//
// Weight sums are 8 bytes a bin, so one block's shared memory holds ~29000 of them; beyond that the
// cluster strategy sends half the samples or more through remote atomics and global memory sends
// every one to L2, both far slower than a shared atomic. Here, as for the narrow counters above,
// block b sums slice b % slices of the bins as member b / slices of that slice's blocks, all
// members of every slice walking the input in the same order (so that a tile comes from DRAM once
// and from L2 once per slice); each sample is binned once per slice and added by the block that
// owns its bin. The sums are flushed as the shared kernel flushes, into the slice's part of `out`.
template <class C>
struct SliceSink {
    C* h;
    unsigned long long lo, len;
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        // Below the slice, bin - lo wraps to at least 2^64 - lo >= len: one compare for both ends.
        const unsigned long long local = bin - lo;
        if (local < len) atomicAdd(h + local, (C)amount);
    }
};

template <int MODE, class W, class C, class Out>
__device__ void sliced_sums_kernel(const sample_t* in, unsigned long long n, const W* w, BinParams p, Out* out,
                                   unsigned long long* tallies) {
    if (gated_off(p)) return;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const unsigned long long per = p.bins_per_block;
    const unsigned slices = (unsigned)((p.nbins + per - 1) / per);
    const unsigned slice = blockIdx.x % slices;
    const unsigned member = blockIdx.x / slices;
    const unsigned members = (gridDim.x - slice + slices - 1) / slices;
    const unsigned long long lo = (unsigned long long)slice * per;
    const unsigned long long len = per < p.nbins - lo ? per : p.nbins - lo;
    C* h = reinterpret_cast<C*>(smem_raw);
    for (unsigned long long b = threadIdx.x; b < len; b += blockDim.x) h[b] = (C)0;
    __syncthreads();
    SliceSink<C> sink{h, lo, len};
    Tally t{0, 0, 0};
    process<MODE, W>(in, n, w, p, sink, t, member, members);
    __syncthreads();
    flush_counters(h, len, out + lo);
    // Every slice sees every sample; the first slice's blocks report the ones outside the bins.
    if (slice == 0) flush_tally(t, tallies);
}
