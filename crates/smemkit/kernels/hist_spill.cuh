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
// The counters are 8 or 4 bits wide in the same shared memory (232304 or 464608 bins on the H100):
// a forced width, or where the host leaves it to the kernel (p.spill_bits 0, `auto`), the one the
// probes favour: 4-bit counters where their twice wider window holds more of the probes and the
// busiest bins stay below a few counts a block (each 4-bit wrap costs global atomics), else 8-bit.
// The step is the sliced kernels' lean one (`lean_loop` with the whole range of bins as its
// slice), not `process`'s general step, which cost twice as many instructions per sample.
//
// The window is placed from SPILL_PROBES samples spread evenly over the input (as the skew probe
// reads them): their bins counted in SPILL_BUCKETS coarse buckets, the window at the first of the
// runs of whole buckets it holds with the most probes. Every block reads the same probes and
// places the same window, with no launch before it and nothing stored between them. Any placement
// is exact; only the share spilled to global memory depends on it.

// Not a power of two: evenly spaced probes of data with a period of a power of two (image rows,
// an input tiled from copies) would otherwise read the same few offsets of each period.
#define SPILL_PROBES 8191
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
// bound of its share; every thread writes it, to its own variable or one shared word). `scan` is SPILL_BUCKETS words and `warp_sums` 32 of shared memory, `best`
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
    if (held != nullptr) *held = key >> 11;  // the same value from every thread
    const unsigned start = (SPILL_BUCKETS * 2 - 1 - (key & 2047u)) * width;
    // The window may reach past the last whole bucket; it never passes the last bin.
    return min(start, nbins - len);
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

// Counts SPILL_PROBES samples spread evenly over the input into SPILL_BUCKETS coarse buckets of
// `cnt` (shared memory), as every block does identically; returns how many probes there were.
template <int MODE>
__device__ unsigned spill_count_probes(const sample_t* __restrict__ in, unsigned long long n, const BinParams& p,
                                       unsigned* cnt) {
    const unsigned width = spill_bucket_width((unsigned)p.nbins);
    for (unsigned b = threadIdx.x; b < SPILL_BUCKETS; b += blockDim.x) cnt[b] = 0;
    __syncthreads();
    const unsigned probes = n < SPILL_PROBES ? (unsigned)n : SPILL_PROBES;
    if (probes > 0) {
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
    return probes;
}

// The busiest sample count one bin of a block is expected to reach: the probes in the densest run
// of SPILL_PEAK_BUCKETS buckets, as a share of the input, spread over that run's bins and over the
// blocks (each reads about n / gridDim.x samples). The run must hold enough probes that its
// maximum over the centre's windows is not mostly noise (16 buckets of 2048 probes held about 100
// on normal data at 1M bins and overstated the peak past the limit below: bench/NOTES.md,
// session 24), and be narrow enough not to flatten the peaks that matter.
#define SPILL_PEAK_BUCKETS 32
// A 4-bit window pays for its wraps (each costs a few global atomics) where a bin takes more
// counts than this in a block; below it, its twice wider window spills fewer samples than the
// 8-bit one (bench/NOTES.md, session 23: normal data at 500000 bins, ~13 counts a centre bin,
// ran 1.26 against 0.84 ms in 4-bit counters; uniform data at ~4 ran 0.94 against 1.57).
#define SPILL4_MOST_PER_BIN 8.0

// The window's width and place: `*bits` 8 or 4 (p.spill_bits, or where that is 0 the width the
// probes favour) and its first bin, the same in every block. `h` is the counters' shared memory
// (at least SPILL_PLACEMENT_WORDS words), free until it returns; `len8` and `len4` the windows'
// bins in either width (the one of a forced width only).
template <int MODE>
__device__ unsigned spill_place(const sample_t* __restrict__ in, unsigned long long n, const BinParams& p,
                                unsigned len8, unsigned len4, unsigned* h, unsigned* bits) {
    unsigned* cnt = h;
    unsigned* scan = h + SPILL_BUCKETS;
    unsigned* warp_sums = h + 2 * SPILL_BUCKETS;
    unsigned* best = h + 2 * SPILL_BUCKETS + 32;
    const unsigned nbins = (unsigned)p.nbins;
    unsigned want = p.spill_bits;
    if (want == 8 && len8 >= nbins) return 0u;
    if (want == 4 && len4 >= nbins) return 0u;
    if (want == 0 && len8 >= nbins) {
        *bits = 8;
        return 0u;
    }
    const unsigned probes = spill_count_probes<MODE>(in, n, p, cnt);
    unsigned held8 = 0, held4 = 0, held_peak = 0;
    const unsigned lo8 = want != 4 ? spill_best_window(nbins, len8, cnt, scan, warp_sums, best, &held8) : 0u;
    __syncthreads();  // every thread has read *best before the next placement resets it
    unsigned lo4 = 0;
    if (want != 8) {
        if (len4 < nbins) {
            lo4 = spill_best_window(nbins, len4, cnt, scan, warp_sums, best, &held4);
            __syncthreads();
        } else {
            held4 = probes;  // every bin in the window: at least every probe in the bins
        }
    }
    if (want == 0) {
        // The run's whole buckets (the window is far wider than SPILL_PEAK_BUCKETS of them).
        const unsigned run_bins = SPILL_PEAK_BUCKETS * spill_bucket_width(nbins);
        spill_best_window(nbins, run_bins, cnt, scan, warp_sums, best, &held_peak);
        // The densest of about a thousand overlapping runs is biased up by its noise, about two
        // standard deviations of its count where the data are flat (uniform data at 262144 bins:
        // 6.9 counts a bin a block, read as more than 8 without this): taken off.
        const double per_block = (double)n / (double)gridDim.x;
        const double dense = fmax((double)held_peak - 2.0 * sqrt((double)held_peak), 0.0);
        const double peak = probes ? dense / probes * per_block / run_bins : 0.0;
        // Four-bit counters where they hold more and wrap little; ties go to 8 bits.
        want = peak <= SPILL4_MOST_PER_BIN && held4 > held8 + probes / 64 ? 4u : 8u;
    }
    *bits = want;
    return want == 4 ? lo4 : lo8;
}

// The window's counters (`BITS` wide, from bin `lo`, `len` bins) and global atomics for the other
// samples, over the whole input; then the flush.
template <int MODE, int BITS>
__device__ void spill_run(const sample_t* in, unsigned long long n, const BinParams& p, unsigned long long* out,
                          unsigned long long* tallies, unsigned* h, unsigned& hot_key, unsigned lo, unsigned len) {
    constexpr unsigned PER = 32 / BITS;
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

// p.bins_per_block is the window's length in the forced width, or where the kernels choose, in
// 8-bit counters (the bins one block's shared memory holds in them); a 4-bit window holds twice
// as many in the same words. Where they choose (p.spill_bits 0) the host launches the 8-bit
// kernel and then the 4-bit one over the same input: both place the windows from the same probes
// and reach the same choice, and the other returns before counting (one kernel holding both
// widths' loops would not fit 64 registers a thread).
template <int MODE, int BITS>
__device__ void spill_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned long long* out,
                             unsigned long long* tallies) {
    if (gated_off(p)) return;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    // Static shared memory beyond the host's reserve (STATIC_SHARED_RESERVE, 16 bytes) would push
    // the largest window past the opt-in limit: the placement borrows the counters' words instead
    // (the host plans at least SPILL_PLACEMENT_WORDS of them wherever the window is smaller than
    // the bins).
    __shared__ unsigned hot_key;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned window = (unsigned)min((unsigned long long)p.bins_per_block, p.nbins);
    const unsigned len8 = p.spill_bits == 4 ? 0u : window;
    const unsigned len4 = p.spill_bits == 4 ? window : (unsigned)min(2ull * window, p.nbins);
    unsigned bits = p.spill_bits;
    const unsigned lo = spill_place<MODE>(in, n, p, len8, len4, h, &bits);
    if (bits != BITS) return;  // the same in every block: the other kernel of the pair counts
    spill_run<MODE, BITS>(in, n, p, out, tallies, h, hot_key, lo, BITS == 4 ? len4 : len8);
}

// Counts only, one 1024-thread block per SM (the window fills its shared memory), prefetching.
#define SPILL_KERNEL(MODE, MNAME, BITS)                                                                        \
    SMEMKIT_ENTRY(hist_spill##BITS##_##MNAME##_none,                                                           \
        extern "C" __global__ void __launch_bounds__(1024) hist_spill##BITS##_##MNAME##_none(                  \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            spill_kernel<MODE, BITS>(in, n, p, out, t);                                                        \
        })
