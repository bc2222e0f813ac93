// ---- partition: bin ranges that fit shared memory, for bin counts beyond a cluster --------------
//
// Four kernels per batch: (1) count the samples of each bucket (a range of 2^bits bins) in shared
// memory, and tally what falls outside; (2) one block turns the bucket counts into segment offsets
// of an index array, on the device so that no host round trip separates the passes; (3) scatter
// each sample's bin, as a 16-bit offset within its bucket, into its bucket's segment: each block
// first sorts a tile of samples by bucket in shared memory, so that the writes to global memory are
// contiguous runs rather than one scattered 2-byte store per sample; (4) each block walks a
// contiguous run of the index array, one bucket segment at a time, counting in a shared-memory
// histogram of 2^bits bins and adding it to the result. Every sample costs shared atomics only;
// global memory sees the samples twice and 4 bytes of index per sample instead of one L2 atomic.

struct BucketSink {
    unsigned* cnt;
    unsigned bits;
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) { atomicAdd(cnt + (bin >> bits), (unsigned)amount); }
};

template <int MODE>
__device__ void part_count(const sample_t* in, unsigned long long n, BinParams p, unsigned bits, unsigned nbuckets,
                           unsigned long long* bucket_counts, unsigned long long* tallies) {
    if (gated_off(p)) return;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned* cnt = reinterpret_cast<unsigned*>(smem_raw);
    for (unsigned b = threadIdx.x; b < nbuckets; b += blockDim.x) cnt[b] = 0;
    __syncthreads();
    BucketSink sink{cnt, bits};
    Tally t{0, 0, 0};
    p.aggregate = 0;
    process<MODE, void>(in, n, (const void*)0, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_counters(cnt, nbuckets, bucket_counts);
    flush_tally(t, tallies);
}

// offsets[b] = sum of counts[0..b) for b in 0..=nbuckets, and the scatter's cursors start there.
// One block of 1024 threads; each thread sums a run of consecutive buckets.
#if SMEMKIT_WANTS(hist_part_scan)
extern "C" __global__ void __launch_bounds__(1024) hist_part_scan(const unsigned long long* __restrict__ counts,
                                                                  unsigned nbuckets, unsigned long long* offsets,
                                                                  unsigned long long* cursor) {
    __shared__ unsigned long long warp_total[32];
    const unsigned per = (nbuckets + blockDim.x - 1) / blockDim.x;
    const unsigned b0 = threadIdx.x * per;
    const unsigned b1 = b0 + per < nbuckets ? b0 + per : nbuckets;
    unsigned long long mine = 0;
    for (unsigned b = b0; b < b1; b++) mine += counts[b];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned long long incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned long long up = __shfl_up_sync(0xffffffffu, incl, d);
        if ((int)lane >= d) incl += up;
    }
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        unsigned long long w = lane < blockDim.x / 32 ? warp_total[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            unsigned long long up = __shfl_up_sync(0xffffffffu, w, d);
            if ((int)lane >= d) w += up;
        }
        warp_total[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    unsigned long long run = incl - mine + (warp ? warp_total[warp - 1] : 0);
    for (unsigned b = b0; b < b1; b++) {
        offsets[b] = run;
        cursor[b] = run;
        run += counts[b];
    }
    if (threadIdx.x == blockDim.x - 1) offsets[nbuckets] = warp_total[blockDim.x / 32 - 1];
}
#endif

// Exclusive prefix sum of n shared counters into out (n up to a few thousand), by the whole block;
// returns the total to every thread. `warp_sums` holds 32 entries.
__device__ unsigned block_exclusive_scan(const unsigned* in, unsigned* out, unsigned n, unsigned* warp_sums) {
    const unsigned per = (n + blockDim.x - 1) / blockDim.x;
    const unsigned b0 = threadIdx.x * per;
    const unsigned b1 = b0 + per < n ? b0 + per : n;
    unsigned mine = 0;
    for (unsigned b = b0; b < b1; b++) mine += in[b];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x / 32;
    unsigned incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned up = __shfl_up_sync(0xffffffffu, incl, d);
        if ((int)lane >= d) incl += up;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        unsigned w = lane < nwarps ? warp_sums[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            unsigned up = __shfl_up_sync(0xffffffffu, w, d);
            if ((int)lane >= d) w += up;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    unsigned run = incl - mine + (warp ? warp_sums[warp - 1] : 0);
    for (unsigned b = b0; b < b1; b++) {
        out[b] = run;
        run += in[b];
    }
    const unsigned total = warp_sums[nwarps - 1];
    __syncthreads();  // warp_sums may be reused by the caller
    return total;
}

#define PART_K 16

// A sample's rank among the tile's samples of its bucket. With split_bits > 0 (the bucket number has
// at most that many bits) the warp first finds the lanes that share its bucket from one ballot per
// bit, and only the lowest of them updates the shared counter, for all of them: few buckets (or one
// hot bucket) would otherwise serialise 32 returning atomics on a handful of addresses. Every lane
// of the warp must call this (it votes even for a sample that lands in no bin).
__device__ __forceinline__ unsigned bucket_rank(unsigned bin, unsigned bits, unsigned split_bits, unsigned* cnt) {
    const bool valid = bin != NO_BIN;
    const unsigned bucket = bin >> bits;
    if (split_bits == 0) return valid ? atomicAdd(cnt + bucket, 1u) : 0u;
    const unsigned peers = lanes_with_key(valid, bucket, split_bits);
    const unsigned lane = threadIdx.x & 31;
    const unsigned leader = __ffs(peers) - 1;
    unsigned first = 0;
    if (valid && lane == leader) first = atomicAdd(cnt + bucket, (unsigned)__popc(peers));
    first = __shfl_sync(0xffffffffu, first, leader);
    return first + (unsigned)__popc(peers & ((1u << lane) - 1u));
}

// Shared memory per bucket: the count, the local offset and the shift from a tile position to the
// index array position (u32: a batch holds at most 2^28 samples); then the tile's bins (u32).
template <int MODE>
__device__ void part_scatter(const sample_t* __restrict__ in, unsigned long long n, BinParams p, unsigned bits,
                             unsigned nbuckets, unsigned split_bits, unsigned long long* cursor,
                             unsigned short* __restrict__ idx) {
    if (gated_off(p)) return;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned warp_sums[32];
    unsigned* cnt = reinterpret_cast<unsigned*>(smem_raw);
    unsigned* local = cnt + nbuckets;
    unsigned* shift = local + nbuckets;
    unsigned* staged = shift + nbuckets;
    const unsigned mask = (1u << bits) - 1;
    const unsigned long long tile = (unsigned long long)blockDim.x * PART_K;
    const unsigned long long ntiles = (n + tile - 1) / tile;
    Tally ignored{0, 0, 0};
    for (unsigned long long t0 = blockIdx.x; t0 < ntiles; t0 += gridDim.x) {
        for (unsigned b = threadIdx.x; b < nbuckets; b += blockDim.x) cnt[b] = 0;
        __syncthreads();
        unsigned bin[PART_K];
        unsigned rank[PART_K];
        const sample_t* tin = in + t0 * tile + threadIdx.x;
        const long long left = (long long)(n - t0 * tile) - (long long)threadIdx.x;
#pragma unroll
        for (int k = 0; k < PART_K; k++) {
            long long b = (long long)k * blockDim.x < left ? resolve(locate<MODE>(tin[k * blockDim.x], p), p, ignored) : -1;
            bin[k] = b >= 0 ? (unsigned)b : NO_BIN;
        }
#pragma unroll
        for (int k = 0; k < PART_K; k++) rank[k] = bucket_rank(bin[k], bits, split_bits, cnt);
        __syncthreads();
        const unsigned valid = block_exclusive_scan(cnt, local, nbuckets, warp_sums);
        // Tile position j of bucket b goes to index position base_b + (j - local_b); the sum wraps
        // modulo 2^32 through the shift and comes out exact because positions stay below 2^28.
        for (unsigned b = threadIdx.x; b < nbuckets; b += blockDim.x)
            if (cnt[b]) shift[b] = (unsigned)atomicAdd(cursor + b, (unsigned long long)cnt[b]) - local[b];
#pragma unroll
        for (int k = 0; k < PART_K; k++)
            if (bin[k] != NO_BIN) staged[local[bin[k] >> bits] + rank[k]] = bin[k];
        __syncthreads();
        // Consecutive threads write consecutive entries of one bucket's run.
        for (unsigned j = threadIdx.x; j < valid; j += blockDim.x) {
            const unsigned v = staged[j];
            idx[shift[v >> bits] + j] = (unsigned short)(v & mask);
        }
        __syncthreads();
    }
}

// offsets: nbuckets + 1 segment boundaries of the index array (offsets[nbuckets] = total); each
// entry is a bin's offset within its bucket (bits <= 16).
#if SMEMKIT_WANTS(hist_part_bins)
extern "C" __global__ void __launch_bounds__(512) hist_part_bins(const unsigned short* __restrict__ idx,
                                                                const unsigned long long* __restrict__ offsets,
                                                                unsigned nbuckets, unsigned bits,
                                                                unsigned long long nbins, unsigned long long* out) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned long long total = offsets[nbuckets];
    // Chunks of whole 16-byte vectors, so that every block's vector loads are aligned.
    const unsigned long long chunk = ((total + gridDim.x - 1) / gridDim.x + 7) & ~7ull;
    const unsigned long long cs = (unsigned long long)blockIdx.x * chunk;
    const unsigned long long ce = cs + chunk < total ? cs + chunk : total;
    if (cs >= ce) return;
    // The first bucket whose segment ends after cs (every thread finds the same one).
    unsigned lo = 0, hi = nbuckets;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (offsets[mid + 1] <= cs) lo = mid + 1; else hi = mid;
    }
    const unsigned width = 1u << bits;
    const uint4* idx8 = reinterpret_cast<const uint4*>(idx);
    for (unsigned b = lo; b < nbuckets && offsets[b] < ce; b++) {
        const unsigned long long s0 = offsets[b] > cs ? offsets[b] : cs;
        const unsigned long long s1 = offsets[b + 1] < ce ? offsets[b + 1] : ce;
        if (s0 >= s1) continue;
        for (unsigned j = threadIdx.x; j < width; j += blockDim.x) h[j] = 0;
        __syncthreads();
        // Unaligned head and tail one entry at a time, the aligned middle 8 entries per load.
        unsigned long long v0 = (s0 + 7) / 8, v1 = s1 / 8;
        if (v1 < v0) v1 = v0;
        const unsigned long long head_end = v0 * 8 < s1 ? v0 * 8 : s1;
        for (unsigned long long i = s0 + threadIdx.x; i < head_end; i += blockDim.x) atomicAdd(h + __ldg(idx + i), 1u);
        for (unsigned long long i = (v1 * 8 > head_end ? v1 * 8 : head_end) + threadIdx.x; i < s1; i += blockDim.x)
            atomicAdd(h + __ldg(idx + i), 1u);
        for (unsigned long long v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
            union { uint4 raw; unsigned short e[8]; } q;
            q.raw = __ldg(idx8 + v);
#pragma unroll
            for (int k = 0; k < 8; k++) atomicAdd(h + q.e[k], 1u);
        }
        __syncthreads();
        const unsigned long long first = (unsigned long long)b << bits;
        const unsigned long long count = nbins - first < width ? nbins - first : width;
        flush_counters(h, count, out + first);
        __syncthreads();
    }
}
#endif
