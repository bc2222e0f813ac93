// ---- spill: the busiest run of bins in shared memory, the other samples spilled to global -------
//
// Between one block's narrow counters (~232000 8-bit ones) and the bin counts where partition wins,
// samples whose bins cost numpy's correction (float bins off the grid) pay for every slice of the
// sliced strategy: each slice's pass locates every sample again, about 0.5 ms per 2^28 float32
// samples, and global atomics alone are capped by the L2 (~3.2 ms for 2^28 of them). Real data are
// rarely spread evenly over a range: normal samples over [-4, 4] put three quarters of their mass
// in the middle third. So every block keeps one window of `p.bins_per_block` bins, the run of bins
// that holds the most of the input, as packed narrow counters (PackedSink, wraps made good in the
// result), and sends each sample outside it to its u64 counter in global memory. Each sample is
// located once; the L2 sees only the samples outside the window, plus the blocks' flushes of it.
// The step is the sliced kernels' lean one (`lean_loop` with the whole range of bins as its
// slice), not `process`'s general step, which cost twice as many instructions per sample.
//
// The window is placed from SPILL_PROBES samples spread evenly over the input (as the skew probe
// reads them): their bins counted in SPILL_BUCKETS coarse buckets, the window at the first of the
// runs of whole buckets it holds with the most probes. Every block reads the same probes and
// places the same window, with no launch before it and nothing stored between them. Any placement
// is exact; only the share spilled to global memory depends on it.

#define SPILL_PROBES 2048
#define SPILL_BUCKETS 1024
// Words of shared memory the placement needs: buckets, their scan, warp sums, the best key.
#define SPILL_PLACEMENT_WORDS (2 * SPILL_BUCKETS + 33)

// Bins per coarse bucket of the window's placement.
__device__ __forceinline__ unsigned spill_bucket_width(unsigned nbins) {
    return (nbins + SPILL_BUCKETS - 1) / SPILL_BUCKETS;
}

// The first bin of the best window of `len` bins (`len` < nbins) over the probe counts `cnt`
// (SPILL_BUCKETS words, counted by bin / spill_bucket_width(nbins)), the same in every block that
// counted the same probes, and in `*held` the probes the window's whole buckets hold (a lower
// bound of its share). `scan` is SPILL_BUCKETS words and `warp_sums` 32 of shared memory, `best`
// one word, all free for the block's use until it returns. Every thread of the block calls it.
__device__ unsigned spill_best_window(unsigned nbins, unsigned len, const unsigned* cnt, unsigned* scan,
                                      unsigned* warp_sums, unsigned* best, unsigned* held) {
    // Bins per bucket, and the buckets in use; a window holds `whole` of them entirely.
    const unsigned width = spill_bucket_width(nbins);
    const unsigned buckets = (nbins + width - 1) / width;
    const unsigned whole = max(1u, min(len / width, buckets));
    if (threadIdx.x == 0) *best = 0;
    const unsigned total = block_exclusive_scan(cnt, scan, SPILL_BUCKETS, warp_sums);
    // Scores of the starts 0 ..= buckets - whole, the earliest of the best kept (ties go low), as
    // one key: probes in the window above, the start's distance from the end below.
    for (unsigned s = threadIdx.x; s + whole <= buckets; s += blockDim.x) {
        const unsigned end = s + whole;
        const unsigned in_window = (end < SPILL_BUCKETS ? scan[end] : total) - scan[s];
        atomicMax(best, (in_window << 11) | (SPILL_BUCKETS * 2 - 1 - s));
    }
    __syncthreads();
    const unsigned key = *best;
    if (held != nullptr && threadIdx.x == 0) *held = key >> 11;
    const unsigned start = (SPILL_BUCKETS * 2 - 1 - (key & 2047u)) * width;
    // The window may reach past the last whole bucket; it never passes the last bin.
    return min(start, nbins - len);
}

// The first bin of the window of `len` bins (`len` < p.nbins), placed from SPILL_PROBES samples
// spread evenly over the input. `cnt` and `scan` are SPILL_BUCKETS words of shared memory each,
// `warp_sums` 32, `best` one, all free for the block's use until it returns.
template <int MODE>
__device__ unsigned spill_window_start(const sample_t* __restrict__ in, unsigned long long n, const BinParams& p,
                                       unsigned len, unsigned* cnt, unsigned* scan, unsigned* warp_sums,
                                       unsigned* best) {
    const unsigned width = spill_bucket_width((unsigned)p.nbins);
    for (unsigned b = threadIdx.x; b < SPILL_BUCKETS; b += blockDim.x) cnt[b] = 0;
    __syncthreads();
    if (n > 0) {
        const unsigned probes = n < SPILL_PROBES ? (unsigned)n : SPILL_PROBES;
        // Sample floor(i * n / probes), written so that it cannot overflow (as skew_verdict).
        const unsigned long long q = n / probes, r = n % probes;
        for (unsigned i = threadIdx.x; i < probes; i += blockDim.x) {
            const unsigned long long j = i * q + (unsigned long long)i * r / probes;
            Tally unused = {0, 0, 0};
            const long long bin = resolve(locate<MODE>(in[j], p), p, unused);
            if (bin >= 0) atomicAdd(cnt + (unsigned)bin / width, 1u);
        }
    }
    __syncthreads();
    return spill_best_window((unsigned)p.nbins, len, cnt, scan, warp_sums, best, nullptr);
}

// Packed counters for the window's bins, a global u64 counter for every other bin.
template <int BITS>
struct SpillSink {
    PackedSink<BITS> window;
    unsigned long long* out;
    unsigned lo, len;
    __device__ __forceinline__ void step() { window.step(); }
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        // Below the window, bin - lo wraps past len: one compare for both ends.
        const unsigned local = (unsigned)bin - lo;
        if (local < len)
            window.add(local, amount);
        else
            atomicAdd(out + bin, (unsigned long long)amount);
    }
};

template <int MODE, int BITS>
__device__ void spill_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned long long* out,
                             unsigned long long* tallies) {
    if (gated_off(p)) return;
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    // Static shared memory beyond the host's reserve (STATIC_SHARED_RESERVE, 16 bytes) would push
    // the largest window past the opt-in limit: the placement borrows the counters' words instead.
    __shared__ unsigned hot_key;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned len = (unsigned)min((unsigned long long)p.bins_per_block, p.nbins);
    // The placement's buckets, scan, warp sums and best key take SPILL_PLACEMENT_WORDS of the
    // counters' words (the host plans at least that many wherever the window is smaller than the
    // bins), before the counters are cleared.
    const unsigned lo = len < p.nbins ? spill_window_start<MODE>(in, n, p, len, h, h + SPILL_BUCKETS,
                                                                 h + 2 * SPILL_BUCKETS, h + 2 * SPILL_BUCKETS + 32)
                                      : 0u;
    const unsigned words = (len + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    __syncthreads();
    for (unsigned b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    __syncthreads();
    SpillSink<BITS> sink{PackedSink<BITS>{h, out + lo, len, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY},
                         out, lo, len};
    Tally t{0, 0, 0};
    // The sliced kernels' lean step over one slice of all the bins: each sample's 32-bit bin is
    // handed to the sink (window or global), none skipped; the host keeps spill under 2^30 bins
    // as `slice_bin` needs. Every block tallies its own samples.
    lean_loop<MODE, true, true>(in, n, p, sink, t, 0u, (unsigned)p.nbins, blockIdx.x, gridDim.x);
    __syncthreads();
    if (p.lanes16)
        flush_packed_lanes16<BITS>(h, len, hot_counts, hot_key, lo, p.lanes16, out + lo);
    else
        flush_packed<BITS>(h, len, hot_counts, hot_key, out + lo);
    flush_tally(t, tallies);
}

// Counts only, one 1024-thread block per SM (the window fills its shared memory), prefetching.
#define SPILL_KERNEL(MODE, MNAME, BITS)                                                                        \
    SMEMKIT_ENTRY(hist_spill##BITS##_##MNAME##_none,                                                           \
        extern "C" __global__ void __launch_bounds__(1024) hist_spill##BITS##_##MNAME##_none(                  \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            spill_kernel<MODE, BITS>(in, n, p, out, t);                                                        \
        })
