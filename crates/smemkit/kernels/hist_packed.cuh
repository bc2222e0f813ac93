// ---- packed: narrow shared counters, two (16-bit) or four (8-bit) to a word ---------------------
//
// Half or a quarter of the shared memory of u32 counters: three blocks per SM where u32 counters
// allow one (32768 bins), and one block holds up to ~116000 (16-bit) or ~232000 (8-bit) bins, or
// ~464000 as 4-bit counters (one 1024-thread build only: they wrap every 16 counts, so they serve
// spread data over many bins, where a block sees a few counts per bin).
// A narrow counter wraps, and its carry runs into the next counter of the word. Both are undone
// exactly, without any timing assumption: a shared atomicAdd returns the word before the add, so the
// one thread whose add made a counter wrap sees it, and it alone knows what every counter of the
// word lost or gained. It adds the difference between what it meant to add and what each counter
// of the word actually changed by (the wrapped one lost 2^BITS, the next gained a carry of 1, and so
// on up the word) to the u64 result in global memory. The narrow counters only ever change by
// atomics, so each counter's final value plus all the corrections made for it is its exact count.
// Wraps are rare (one per 2^BITS counts of a bin in one block), so global memory sees few of them.
//
// Skewed data needs more care. Returning atomics on one shared address serialise (each lane needs
// its own old value): with 7 of 8 samples in one bin, 16-bit counters ran at about half their
// uniform speed (figures in bench/NOTES.md). And 8-bit counters would send a stream
// of corrections to one global address (~900000 for 2^28 hot samples). So the first bin of a block
// that reaches 256 counts (the wrap itself for 8 bits) becomes the block's hot bin, and from then
// on each lane counts it in its own u32 counter (32 of them, one per bank, after the packed words):
// still one atomic instruction per sample, now without conflicts. Checking every sample against a
// hot bin in a separate branch instead split mixed warps into two atomic instructions, and was
// slower on hot data.

/// Per-lane counters of the hot bin, after the packed words.
#define PACKED_HOT_LANES 32

template <int BITS>
__device__ __noinline__ void packed_crossed(unsigned bin, unsigned old, unsigned amount, unsigned long long nbins,
                                            unsigned long long* out, unsigned* hot_key) {
    constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1;
    const unsigned lane = bin % PER, first = bin - lane;
    if (((old >> (lane * BITS)) & MASK) + amount > MASK) {
        const unsigned now = old + (amount << (lane * BITS));
        for (unsigned j = lane; j < PER && first + j < nbins; j++) {
            const int changed = (int)((now >> (j * BITS)) & MASK) - (int)((old >> (j * BITS)) & MASK);
            const int meant = j == lane ? (int)amount : 0;
            // A negative correction wraps the u64 counter modulo 2^64 and comes out exact in the sum.
            if (meant != changed) atomicAdd(out + first + j, (unsigned long long)(long long)(meant - changed));
        }
    }
    atomicCAS(hot_key, NO_HOT_KEY, bin);
}

template <int BITS>
struct PackedSink {
    unsigned* h;
    unsigned long long* out;
    unsigned long long nbins;
    unsigned* hot_key;
    unsigned* hot_lane;  // this lane's counter of the hot bin
    unsigned hot;        // this thread's copy of *hot_key, refreshed once per loop step (a stale copy
                         // is still exact: both routes count)
    __device__ __forceinline__ void step() { hot = *(volatile unsigned*)hot_key; }
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1, CLAIM = MASK < 0xFFu ? MASK : 0xFFu;
        const unsigned b = (unsigned)bin, a = (unsigned)amount;
        const bool is_hot = b == hot;
        const unsigned shift = (b % PER) * BITS;
        const unsigned old = atomicAdd(is_hot ? hot_lane : h + b / PER, is_hot ? a : a << shift);
        // Past a multiple of 256 counts (for 8 and 4 bits: a wrap): a wrap to undo, a hot bin to claim.
        if (!is_hot && ((old >> shift) & CLAIM) + a > CLAIM)
            packed_crossed<BITS>(b, old, a, nbins, out, hot_key);
    }
};

// Adds a block's packed counters of `nbins` bins and its hot bin's per-lane counters to `out` (the
// u64 result of those bins), after the block's last add.
template <int BITS>
__device__ __forceinline__ void flush_packed(const unsigned* h, unsigned long long nbins, const unsigned* hot_counts,
                                             unsigned hot_key, unsigned long long* out) {
    constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1;
    const unsigned long long words = (nbins + PER - 1) / PER;
    for (unsigned long long wd = threadIdx.x; wd < words; wd += blockDim.x) {
        const unsigned v = h[wd];
        if (v == 0) continue;
        for (unsigned j = 0; j < PER && wd * PER + j < nbins; j++) {
            const unsigned c = (v >> (j * BITS)) & MASK;
            if (c) atomicAdd(out + wd * PER + j, (unsigned long long)c);
        }
    }
    if (threadIdx.x < 32 && hot_key != NO_HOT_KEY) {
        unsigned long long c = hot_counts[threadIdx.x];
        for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
        if (threadIdx.x == 0 && c != 0) atomicAdd(out + hot_key, c);
    }
}

// `flush_packed` for the sliced kernels, into 16-bit lanes instead of the u64 result: the counts
// of bins 4w to 4w + 3 share word w of `lanes` (`lo` is the block's first bin), so that one 64-bit
// atomic carries up to four counters where `flush_packed` sends one each. Every block of a slice
// flushes all of the slice's bins, and on normal data most counters are not zero, so those atomics
// (about 27 million at 1M bins over 130 blocks) were most of the sliced passes' fixed cost. A lane
// sums one bin's leftovers over the blocks of its slice, at most 2^BITS - 1 from each, which the
// host keeps below 2^16 (`lanes16_fit`); `hist_fold_lanes16` then adds the lanes to the result and
// clears them. Adjacent slices may share a word at their boundary: the atomics keep both.
template <int BITS>
__device__ __forceinline__ void flush_packed_lanes16(const unsigned* h, unsigned long long nbins, const unsigned* hot_counts,
                                                     unsigned hot_key, unsigned long long lo,
                                                     unsigned long long* lanes, unsigned long long* out) {
    constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1;
    const unsigned long long words = (nbins + PER - 1) / PER;
    for (unsigned long long wd = threadIdx.x; wd < words; wd += blockDim.x) {
        const unsigned v = h[wd];
        if (v == 0) continue;
        unsigned long long acc = 0;
#pragma unroll
        for (unsigned j = 0; j < PER; j++) {
            const unsigned long long g = lo + wd * PER + j;
            // Past the block's bins a counter may hold carries out of the last one, which
            // `packed_crossed` already made good: they belong to no bin of this block.
            if (wd * PER + j < nbins) acc |= (unsigned long long)((v >> (j * BITS)) & MASK) << (16 * (g & 3));
            if ((g & 3) == 3 || j == PER - 1) {
                if (acc) atomicAdd(lanes + g / 4, acc);
                acc = 0;
            }
        }
    }
    if (threadIdx.x < 32 && hot_key != NO_HOT_KEY) {
        unsigned long long c = hot_counts[threadIdx.x];
        for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
        if (threadIdx.x == 0 && c != 0) atomicAdd(out + hot_key, c);
    }
}

template <int MODE, int BITS, bool PREFETCH>
__device__ void packed_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned long long* out,
                              unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned long long words = (p.nbins + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    for (unsigned long long b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    __syncthreads();
    PackedSink<BITS> sink{h, out, p.nbins, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    Tally t{0, 0, 0};
    // The prefetching builds of the cheap binning modes count unaggregated samples with the sliced
    // kernels' lean step (a whole slice: the bins from 0), as do float64 bins where its
    // branch-free step applies (`lean_uniform64`); the rest with `process`.
    constexpr bool LEAN = PREFETCH && CHEAP_MODE(MODE);
    constexpr bool LEAN64 = PREFETCH && MODE == MODE_UNIFORM64;
    if ((LEAN || (LEAN64 && lean_uniform64(p))) && !p.aggregate)
        lean_loop<MODE, true, true>(in, n, p, sink, t, 0u, (unsigned)p.nbins, blockIdx.x, gridDim.x);
    else
        process<MODE, void, PackedSink<BITS>, PREFETCH>(in, n, (const void*)0, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_packed<BITS>(h, p.nbins, hot_counts, hot_key, out);
    flush_tally(t, tallies);
}
