// The grid-stride walk of the estimators' one-pass kernels (est_extremes, est_window), included by
// estimate.cu after AHEAD. These passes do a few dozen instructions per sample; a loop that loads a
// trip and then looks at it leaves the memory idle while it looks, and measured about half of DRAM
// speed. Here each thread issues the loads of its next trip before it looks at the current one, so
// loads stay in flight throughout. Samples of 2 to 8 bytes starting 16-byte aligned come in
// 16-byte loads: a thread takes AHEAD / VEC whole vectors of its block's trip instead of AHEAD
// strided samples (which samples a thread looks at does not matter to these order-free passes).

// The AHEAD samples of this thread in the block's whole trip starting at i0.
__device__ __forceinline__ void load_trip(const sample_t* __restrict__ in, u64 i0, bool vectors,
                                          sample_t (&x)[AHEAD]) {
    constexpr int VEC = 16 / (int)sizeof(sample_t);
    if (VEC >= 2 && VEC <= AHEAD && vectors) {
        union Vec {
            uint4 raw;
            sample_t s[VEC >= 2 && VEC <= AHEAD ? VEC : 1];
        };
        const uint4* trip = reinterpret_cast<const uint4*>(in + i0);
#pragma unroll
        for (int v = 0; v < AHEAD / VEC; ++v) {
            Vec a;
            a.raw = __ldg(trip + v * blockDim.x + threadIdx.x);
#pragma unroll
            for (int e = 0; e < VEC; ++e) x[v * VEC + e] = a.s[e];
        }
    } else {
        const sample_t* at = in + i0 + threadIdx.x;
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) x[u] = __ldg(at + u * blockDim.x);
    }
}

// Calls look(v, inside) for every sample of the block's trips over in[0..n) (`inside` false for
// the padding of the block's last, partial trip, whose v is 0), the next whole trip's loads issued
// before the current trip is looked at. Every thread of a block makes the same calls in the same
// order, so look may vote across the warp.
template <class Look>
__device__ __forceinline__ void each_trip(const sample_t* __restrict__ in, u64 n, Look& look) {
    const u64 trip = (u64)AHEAD * blockDim.x;
    const u64 stride = (u64)gridDim.x * trip;
    const bool vectors = ((u64)in & 15) == 0;
    u64 i0 = (u64)blockIdx.x * trip;
    bool whole = i0 + trip <= n;
    sample_t x[AHEAD];
    if (whole) load_trip(in, i0, vectors, x);
    while (whole) {
        const u64 i1 = i0 + stride;
        const bool next_whole = i1 + trip <= n;
        sample_t y[AHEAD];
        if (next_whole) load_trip(in, i1, vectors, y);
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) look(x[u], true);
        if (next_whole) {
#pragma unroll
            for (int u = 0; u < AHEAD; ++u) x[u] = y[u];
        }
        i0 = i1;
        whole = next_whole;
    }
    // At most one partial trip per block, its last (a stride is at least a trip): one sample at
    // a time, not unrolled (it runs once).
    if (i0 < n) {
        const sample_t* at = in + i0 + threadIdx.x;
#pragma unroll 1
        for (int u = 0; u < AHEAD; ++u) {
            const bool inside = i0 + (u64)u * blockDim.x + threadIdx.x < n;
            look(inside ? at[u * blockDim.x] : (sample_t)0, inside);
        }
    }
}
