// float16 / bfloat16 counts with the table of slots in shared memory: the generic MODE_LUT kernels
// read the host's table through L1, where one warp's 32 lookups touch as many cache lines as
// distinct codes; in shared memory they cost what their bank conflicts cost. The u16 table (128 KiB,
// `slot_table16` in histogram/cuda/half_table.rs) gives each code a counter index: its bin, or
// nbins, nbins + 1, nbins + 2 for below, above and NaN, so the loop has no branch; the three extra
// counters become the tallies (and, clamped, the first and last bins) when the block flushes.
// Counts only, one 1024-thread block per SM (the table leaves room for one), prefetching loads.
// Included by histogram.cu for SAMPLE_IS_HALF builds.
//
// Where a 16-bit code spans several bins (4096 bins over [-4, 4]: 4 in [1, 2), 8 in [2, 4) for
// bfloat16), the counters of neighbouring codes lie 4 or 8 words apart, on 8 or 4 of the 32 banks,
// and a warp's atomics queue on them. Each row of 32 counters is therefore rotated by its row
// number (`lut_counter`, a bijection once the counters fill whole rows: the host pads them), so
// that the neighbouring rows' counters take the other banks (timed by bench/lab/lut_lab.cu;
// bench/NOTES.md, session 30).

#define LUT_TABLE_CODES 65536u

// The shared counter of slot `s`.
__device__ __forceinline__ unsigned lut_counter(unsigned s) { return (s & ~31u) | ((s + (s >> 5)) & 31u); }

struct LutSink {
    unsigned* h;
    __device__ __forceinline__ void step() {}
};

#if SMEMKIT_WANTS(hist_lut_shared_none)
extern "C" __global__ void __launch_bounds__(1024) hist_lut_shared_none(const sample_t* in, unsigned long long n,
                                                                       const void* w, BinParams p,
                                                                       unsigned long long* out,
                                                                       unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned short* table = reinterpret_cast<unsigned short*>(smem_raw);
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw + LUT_TABLE_CODES * sizeof(unsigned short));
    const unsigned slots = ((unsigned)p.nbins + 3 + 31) & ~31u;  // whole rows (table16_counters)
    const uint4* src = reinterpret_cast<const uint4*>(p.lut);
    uint4* dst = reinterpret_cast<uint4*>(table);
    for (unsigned i = threadIdx.x; i < LUT_TABLE_CODES * sizeof(unsigned short) / 16; i += blockDim.x)
        dst[i] = __ldg(src + i);
    for (unsigned b = threadIdx.x; b < slots; b += blockDim.x) h[b] = 0;
    __syncthreads();
    LutSink sink{h};
    grid_walk<true>(in, n, sink, [&](sample_t v, unsigned long long) {
        atomicAdd(h + lut_counter(table[(unsigned short)v]), 1u);
    }, blockIdx.x, gridDim.x);
    __syncthreads();
    const unsigned nbins = (unsigned)p.nbins;
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x) {
        const unsigned v = h[lut_counter(b)];
        if (v != 0) atomicAdd(out + b, (unsigned long long)v);
    }
    if (threadIdx.x == 0) {
        const unsigned below = h[lut_counter(nbins)], above = h[lut_counter(nbins + 1)],
                       nan = h[lut_counter(nbins + 2)];
        if (below) atomicAdd(tallies + 0, (unsigned long long)below);
        if (above) atomicAdd(tallies + 1, (unsigned long long)above);
        if (nan) atomicAdd(tallies + 2, (unsigned long long)nan);
        if (p.clamp && below) atomicAdd(out, (unsigned long long)below);
        if (p.clamp && above) atomicAdd(out + nbins - 1, (unsigned long long)above);
    }
}
#endif
