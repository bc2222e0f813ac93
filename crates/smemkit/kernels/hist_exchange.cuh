// ---- exchange: the bins split across a cluster, samples sent to their owner in batches -----------
//
// For bin counts beyond one block (1M bins: 1 MiB even as 8-bit counters). Each block of a cluster
// owns a slice of the bins as packed narrow counters (see `packed`), and the cluster reads the input
// in phases. In a phase every block bins one tile of samples and writes each sample's offset within
// its owner's slice into the owner's inbox (its own included) through distributed shared memory:
// 4 bytes, no atomic, since each source block has its own region of every inbox and the positions
// come from shared-memory cursors in the source. A cluster barrier ends the phase, and each block
// then counts what it received with shared atomics. Cluster-wide atomics on remote counters
// are no faster than global ones (figures in bench/NOTES.md); here global memory sees the samples
// once (the partition passes: 12 bytes per sample).
//
// Inboxes are double-buffered: the blocks write phase p + 1's entries while their owners may still
// be counting phase p's, and an owner finishes counting phase p before it arrives at the barrier
// that ends phase p + 1, after which phase p + 2 reuses phase p's buffer. A region that fills up (at
// most `cap` entries per source, owner and phase: skewed data) sends the rest as remote atomics on
// the owner's packed counters, which correct their own wraps like local ones.
//
// Instructions are the cost (the ncu profile is in bench/NOTES.md), so the sample loop keeps to 32-bit arithmetic, writes through 32-bit shared::cluster addresses and has
// one path for every sample.

#define EXCHANGE_MAX_CLUSTER 16

/// Samples each thread bins per phase: 8, or 16 for 1-byte samples (one 16-byte load).
#define EXCHANGE_SAMPLES (16 / sizeof(sample_t) > 8 ? 16 / sizeof(sample_t) : 8)

// The owner of bin b among slices of `per_block` bins: a float estimate, corrected (b < 2^24 is
// exact in float; the estimate is off by at most one). Garbage for NO_BIN, which callers discard.
__device__ __forceinline__ unsigned owner_of(unsigned b, unsigned per_block, float inv) {
    unsigned q = (unsigned)((float)b * inv);
    q -= q * per_block > b ? 1u : 0u;
    q += (q + 1) * per_block <= b ? 1u : 0u;
    return q;
}

// The address of `local` (this block's shared memory) in block `rank`'s window of the cluster.
__device__ __forceinline__ unsigned cluster_address(const void* local, unsigned rank) {
    unsigned r;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"((unsigned)__cvta_generic_to_shared(local)), "r"(rank));
    return r;
}

__device__ __forceinline__ void store_cluster(unsigned address, unsigned v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(address), "r"(v) : "memory");
}

// A full inbox region: one remote atomic on the owner's packed counters (rare, out of line).
template <int BITS>
__device__ __noinline__ void exchange_overflow(unsigned* h, unsigned* hot_key, unsigned dest, unsigned local,
                                               unsigned long long* out, unsigned per_block, unsigned long long nbins) {
    Cluster cluster;
    const unsigned long long first = (unsigned long long)dest * per_block;
    PackedSink<BITS> owner{cluster.map_shared_rank(h, dest), out + first,
                           nbins - first < per_block ? nbins - first : per_block,
                           cluster.map_shared_rank(hot_key, dest), nullptr, NO_HOT_KEY};
    owner.add(local, 1u);
}

template <int MODE, int BITS>
__device__ void exchange_kernel(const sample_t* __restrict__ in, unsigned long long n, BinParams p,
                                unsigned long long* out, unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    constexpr unsigned S = EXCHANGE_SAMPLES;
    constexpr unsigned VEC = 16 / sizeof(sample_t);            // samples per 16-byte load
    constexpr unsigned LOADS = (S + VEC - 1) / VEC;            // 16-byte loads per thread per phase
    union Vec { uint4 raw; sample_t s[VEC]; };
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    __shared__ unsigned cursor[EXCHANGE_MAX_CLUSTER];
    __shared__ unsigned received[2][EXCHANGE_MAX_CLUSTER];
    Cluster cluster;
    const unsigned K = cluster.num_blocks();
    const unsigned me = cluster.block_rank();
    const unsigned per_block = p.bins_per_block;  // a multiple of 32: no packed word spans two owners
    const unsigned words = per_block / PER;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    unsigned* hot_counts = h + words;
    unsigned* inbox = hot_counts + PACKED_HOT_LANES;  // [2][K][cap]: phase parity, source, entry
    unsigned dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    const unsigned cap = (dynamic_bytes / 4 - words - PACKED_HOT_LANES) / (2 * K);
    const unsigned long long first = (unsigned long long)me * per_block;
    const unsigned long long mine = first >= p.nbins ? 0 : (p.nbins - first < per_block ? p.nbins - first : per_block);
    for (unsigned b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    if (threadIdx.x < EXCHANGE_MAX_CLUSTER) cursor[threadIdx.x] = 0;
    // No block may write to another's counters or inbox before its owner has zeroed them.
    cluster.sync();

    PackedSink<BITS> sink{h, out + first, mine, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    Tally t{0, 0, 0};
    const float inv = 1.0f / (float)per_block;
    const unsigned lane = threadIdx.x & 31;
    const unsigned below_lane = (1u << lane) - 1u;
    const unsigned dest_bits = 32 - __clz(K - 1);  // bits of a block rank
    const unsigned inbox_address = (unsigned)__cvta_generic_to_shared(inbox);
    const unsigned long long tile = (unsigned long long)blockDim.x * LOADS * VEC;
    const unsigned long long ntiles = (n + tile - 1) / tile;
    // Every block of a cluster runs the same number of phases (the barriers need all of them).
    const unsigned long long phases = (ntiles + gridDim.x - 1) / gridDim.x;
    const uint4* in4 = reinterpret_cast<const uint4*>(in);

    // Thread x's samples in tile `tl`: vectors x, x + blockDim.x, ... of the tile. A partial tile
    // (the input's end) is read one sample at a time, out-of-range positions marked invalid.
    auto load = [&](unsigned long long tl, Vec (&v)[LOADS], unsigned& valid) {
        const unsigned long long base = tl * tile;
        if (tl < ntiles && base + tile <= n) {
#pragma unroll
            for (unsigned j = 0; j < LOADS; j++) v[j].raw = __ldg(in4 + base / VEC + j * blockDim.x + threadIdx.x);
            valid = 0xffffffffu;
        } else {
            valid = 0;
#pragma unroll
            for (unsigned j = 0; j < LOADS; j++)
#pragma unroll
                for (unsigned k = 0; k < VEC; k++) {
                    const unsigned long long at = base + ((unsigned long long)j * blockDim.x + threadIdx.x) * VEC + k;
                    v[j].s[k] = (sample_t)0;
                    if (tl < ntiles && at < n) {
                        v[j].s[k] = in[at];
                        valid |= 1u << (j * VEC + k);
                    }
                }
        }
    };

    Vec cur[LOADS], nxt[LOADS];
    unsigned cur_valid, nxt_valid = 0;
    load(blockIdx.x, cur, cur_valid);
    for (unsigned long long ph = 0; ph < phases; ph++) {
        const unsigned buf = (unsigned)(ph & 1);
        const unsigned region = (buf * K + me) * cap;  // this block's region of every inbox
        // The next tile's loads go out before this one is binned.
        if (ph + 1 < phases) load(blockIdx.x + (ph + 1) * gridDim.x, nxt, nxt_valid);
#pragma unroll
        for (unsigned k = 0; k < LOADS * VEC; k++) {
            const unsigned b = (cur_valid >> k) & 1u ? bin32<MODE>(cur[k / VEC].s[k % VEC], p, t) : NO_BIN;
            const bool sends = b != NO_BIN;
            const unsigned dest = sends ? owner_of(b, per_block, inv) : 0u;
            // Lanes sending to the same block share one cursor update.
            const unsigned peers = lanes_with_key(sends, dest, dest_bits);
            const unsigned leader = __ffs(peers) - 1;
            unsigned pos = 0;
            if (sends && lane == leader) pos = atomicAdd(cursor + dest, (unsigned)__popc(peers));
            pos = __shfl_sync(0xffffffffu, pos, leader) + (unsigned)__popc(peers & below_lane);
            if (sends) {
                const unsigned local = b - dest * per_block;
                if (pos < cap)
                    store_cluster(cluster_address(inbox, dest) + (region + pos) * 4u, local);
                else
                    exchange_overflow<BITS>(h, &hot_key, dest, local, out, per_block, p.nbins);
            }
        }
        __syncthreads();  // every cursor of the phase is final
        if (threadIdx.x < K) {
            const unsigned sent = cursor[threadIdx.x] < cap ? cursor[threadIdx.x] : cap;
            store_cluster(cluster_address(&received[buf][me], threadIdx.x), sent);
            cursor[threadIdx.x] = 0;
        }
        // Releases this phase's inbox entries and counts to their owners, and acquires theirs.
        cluster.sync();
        sink.step();
        for (unsigned src = 0; src < K; src++) {
            const unsigned got = received[buf][src];
            const unsigned* entries = inbox + (buf * K + src) * cap;
            for (unsigned i = threadIdx.x; i < got; i += blockDim.x) sink.add(entries[i], 1u);
        }
#pragma unroll
        for (unsigned j = 0; j < LOADS; j++) cur[j] = nxt[j];
        cur_valid = nxt_valid;
    }
    // The last barrier came after every remote write to this block; the counting since was local.
    __syncthreads();
    flush_packed<BITS>(h, mine, hot_counts, hot_key, out + first);
    flush_tally(t, tallies);
}
