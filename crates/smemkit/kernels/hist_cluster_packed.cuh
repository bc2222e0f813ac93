// ---- cluster_packed: packed narrow counters split across a cluster ------------------------------
//
// For bin counts that no block holds even as 8-bit counters, and no cluster holds as u32 counters
// (1M bins: 4 MiB as u32, 1 MiB as 8-bit). Each block of a cluster owns a slice of the bins as
// packed narrow counters (see `packed`), and every sample is added straight to its owner's counter
// with one returning atomic through distributed shared memory (the owner's own block included):
// no second pass and no inbox, unlike `exchange`. 1M bins take 8 blocks of 128 KiB of 8-bit
// counters (a portable cluster) or 16 of 128 KiB of 16-bit ones (a non-portable one).
//
// The wraps of a narrow counter are undone exactly as in `packed` (packed_crossed): the atomic
// returns the word before the add, so the one thread whose add wrapped a counter sees it and adds
// the difference for every counter of the word to the u64 result in global memory. That holds for
// a remote word as for a local one, since the counters only ever change by atomics.
//
// Skewed data: returning atomics on one remote address serialise, so the first bin whose counter
// crosses a multiple of 256 (cluster-wide, on its owner) becomes the hot bin of the block that saw
// the crossing, which from then on counts it in per-lane u32 counters of its own shared memory.
// Each block claims its own hot bin; the others keep sending that bin to its owner until they see a
// crossing themselves. Both routes count, so the result is exact whatever the timing.
//
// Addresses are 32-bit shared::cluster ones (mapa), as in `exchange`, this block's hot lanes
// included, so that the hot lane and a remote word take the same atomic instruction.

// A shared::cta address of this block, as the same variable in block `rank`'s shared memory.
__device__ __forceinline__ unsigned cluster_address_of(unsigned cta_address, unsigned rank) {
    unsigned r;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(cta_address), "r"(rank));
    return r;
}

// The returning add on a 32-bit shared::cluster address.
__device__ __forceinline__ unsigned atomic_add_cluster(unsigned address, unsigned v) {
    unsigned old;
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(address), "r"(v) : "memory");
    return old;
}

template <int BITS>
struct ClusterPackedSink {
    unsigned words;              // this block's packed words, as a shared::cta address (every block's
                                 // words sit at the same offset)
    unsigned per_block;          // bins each block owns: a multiple of 32, so no word spans two owners
    float inv;                   // 1 / per_block, for owner_of
    unsigned long long nbins;
    unsigned long long* out;     // the u64 result of every bin
    unsigned* hot_key;           // this block's hot bin (an index into all the bins)
    unsigned hot_lane;           // this lane's counter of the hot bin (this block's), as a shared::cluster address
    unsigned hot;                // this thread's copy of *hot_key, refreshed once per loop step
    __device__ __forceinline__ void step() { hot = *(volatile unsigned*)hot_key; }
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1, CLAIM = MASK < 0xFFu ? MASK : 0xFFu;
        const unsigned b = (unsigned)bin, a = (unsigned)amount;
        const bool is_hot = b == hot;
        const unsigned rank = owner_of(b, per_block, inv);
        const unsigned local = b - rank * per_block;
        const unsigned shift = (local % PER) * BITS;
        const unsigned remote = cluster_address_of(words + (local / PER) * 4u, rank);
        const unsigned old = atomic_add_cluster(is_hot ? hot_lane : remote, is_hot ? a : a << shift);
        // The bin's lane within its word is the same counted from the owner's first bin or from
        // bin 0 (per_block is a multiple of 32), so the correction works on the whole result.
        if (!is_hot && ((old >> shift) & CLAIM) + a > CLAIM)
            packed_crossed<BITS>(b, old, a, nbins, out, hot_key);
    }
};

template <int MODE, int BITS>
__device__ void cluster_packed_kernel(const sample_t* __restrict__ in, unsigned long long n, BinParams p,
                                      unsigned long long* out, unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    Cluster cluster;
    const unsigned per_block = p.bins_per_block;
    const unsigned words = per_block / PER;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    unsigned* hot_counts = h + words;
    for (unsigned b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    // No block may add to another's counters before their owner has zeroed them.
    cluster.sync();
    ClusterPackedSink<BITS> sink{(unsigned)__cvta_generic_to_shared(h),
                                 per_block,
                                 1.0f / (float)per_block,
                                 p.nbins,
                                 out,
                                 &hot_key,
                                 cluster_address_of((unsigned)__cvta_generic_to_shared(hot_counts + (threadIdx.x & 31)),
                                                    cluster.block_rank()),
                                 NO_HOT_KEY};
    Tally t{0, 0, 0};
    // Unaggregated counts of the cheap binning modes take the sliced kernels' lean step (one slice:
    // all the bins); the rest `process`. Both prefetch (one 1024-thread block per SM).
    if (CHEAP_MODE(MODE) && !p.aggregate)
        lean_loop<MODE, true, true>(in, n, p, sink, t, 0u, (unsigned)p.nbins, blockIdx.x, gridDim.x);
    else
        process<MODE, void, ClusterPackedSink<BITS>, true>(in, n, (const void*)0, p, sink, t, blockIdx.x,
                                                          gridDim.x);
    // Every remote add must land before the owners read their slices (and before any block exits,
    // which would take its shared memory away from the others).
    cluster.sync();
    const unsigned long long first = (unsigned long long)cluster.block_rank() * per_block;
    const unsigned long long mine =
        first >= p.nbins ? 0 : (p.nbins - first < per_block ? p.nbins - first : per_block);
    // The hot bin is any bin of the cluster, not one of this block's: added on its own below.
    flush_packed<BITS>(h, mine, hot_counts, NO_HOT_KEY, out + first);
    if (threadIdx.x < 32 && hot_key != NO_HOT_KEY) {
        unsigned long long c = hot_counts[threadIdx.x];
        for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
        if (threadIdx.x == 0 && c != 0) atomicAdd(out + hot_key, c);
    }
    flush_tally(t, tallies);
}
