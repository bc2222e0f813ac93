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
    // Sends one count of bin b (not NO_BIN) and returns the word before the add: to the hot lane
    // when b is this block's hot bin, else to the owner's word.
    __device__ __forceinline__ unsigned issue(unsigned b, unsigned a) {
        constexpr unsigned PER = 32 / BITS;
        const unsigned rank = owner_of(b, per_block, inv);
        const unsigned local = b - rank * per_block;
        const unsigned remote = cluster_address_of(words + (local / PER) * 4u, rank);
        const bool is_hot = b == hot;
        return atomic_add_cluster(is_hot ? hot_lane : remote, is_hot ? a : a << ((local % PER) * BITS));
    }
    // The wrap check of an `issue` (with the same `hot`): past a multiple of 256 counts, a wrap to
    // undo and a hot bin to claim. The bin's lane within its word is the same counted from its
    // owner's first bin or from bin 0 (per_block is a multiple of 32), so the correction works on
    // the whole result.
    __device__ __forceinline__ void settle(unsigned b, unsigned a, unsigned old) {
        constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1, CLAIM = MASK < 0xFFu ? MASK : 0xFFu;
        const unsigned shift = (b % PER) * BITS;
        if (b != hot && ((old >> shift) & CLAIM) + a > CLAIM) packed_crossed<BITS>(b, old, a, nbins, out, hot_key);
    }
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        const unsigned b = (unsigned)bin, a = (unsigned)amount;
        settle(b, a, issue(b, a));
    }
};

#ifndef CLUSTER_PACKED_BATCH
#define CLUSTER_PACKED_BATCH 4
#endif

// Counts the M samples of `s` in batches of N: the N bins first, then the N atomics, then the N
// wrap checks, so that a warp has N returning atomics in flight instead of waiting for each one's
// answer before it sends the next (each check branches on that answer).
template <int MODE, int BITS, int N, int M>
__device__ __forceinline__ void count_batches(const sample_t (&s)[M], const BinParams& p,
                                              ClusterPackedSink<BITS>& sink, Tally& t) {
    static_assert(M % N == 0, "whole batches");
#pragma unroll
    for (int c = 0; c < M; c += N) {
        unsigned b[N], old[N];
#pragma unroll
        for (int k = 0; k < N; k++) b[k] = bin32<MODE>(s[c + k], p, t);
#pragma unroll
        for (int k = 0; k < N; k++) old[k] = b[k] != NO_BIN ? sink.issue(b[k], 1u) : 0u;
#pragma unroll
        for (int k = 0; k < N; k++)
            if (b[k] != NO_BIN) sink.settle(b[k], 1u, old[k]);
    }
}

// `grid_walk`'s order of the samples (two 16-byte loads per lane, the next two in flight), counted
// by `count_batches` without warp aggregation: the unaggregated loop of the cluster_packed kernels.
template <int MODE, int BITS>
__device__ __forceinline__ void cluster_packed_walk(const sample_t* __restrict__ in, unsigned long long n,
                                                    const BinParams& p, ClusterPackedSink<BITS>& sink, Tally& t) {
    constexpr int VEC = 16 / sizeof(sample_t);
    constexpr int PAIR_N = 2 * VEC < CLUSTER_PACKED_BATCH ? 2 * VEC : CLUSTER_PACKED_BATCH;
    constexpr int ONE_N = VEC < CLUSTER_PACKED_BATCH ? VEC : CLUSTER_PACKED_BATCH;
    union Pair { uint4 raw[2]; sample_t s[2 * VEC]; };
    union One { uint4 raw; sample_t s[VEC]; };
    const unsigned long long nvec = n / VEC;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const uint4* in4 = reinterpret_cast<const uint4*>(in);
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i + stride < nvec) {
        Pair cur;
        cur.raw[0] = __ldg(in4 + i);
        cur.raw[1] = __ldg(in4 + i + stride);
        for (;;) {
            const unsigned long long next = i + 2 * stride;
            const bool more = next + stride < nvec;
            Pair nxt;
            if (more) {
                nxt.raw[0] = __ldg(in4 + next);
                nxt.raw[1] = __ldg(in4 + next + stride);
            }
            sink.step();
            count_batches<MODE, BITS, PAIR_N>(cur.s, p, sink, t);
            i = next;
            if (!more) break;
            cur = nxt;
        }
    }
    for (; i < nvec; i += stride) {
        One v;
        v.raw = __ldg(in4 + i);
        count_batches<MODE, BITS, ONE_N>(v.s, p, sink, t);
    }
    for (unsigned long long j = nvec * VEC + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += stride) {
        const sample_t one[1] = {in[j]};
        count_batches<MODE, BITS, 1>(one, p, sink, t);
    }
}

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
    // Aggregated counts (one update per bin and warp) take `process`, one returning atomic at a
    // time; the rest the batched loop. Both prefetch (one 1024-thread block per SM).
    if (p.aggregate)
        process<MODE, void, ClusterPackedSink<BITS>, true>(in, n, (const void*)0, p, sink, t, blockIdx.x,
                                                          gridDim.x);
    else
        cluster_packed_walk<MODE, BITS>(in, n, p, sink, t);
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
