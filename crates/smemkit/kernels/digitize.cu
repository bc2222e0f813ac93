// numpy.digitize on the GPU: each sample's index among monotonic bins (crates/smemkit/src/digitize
// is the reference). Samples are compared as float64 with float64 bins, as the CPU engine does; a
// NaN sample goes after every bin (len(bins) for increasing bins, 0 for decreasing ones).
//
// The index is a partition point: the number of bins for which a predicate holds, the predicate
// true on a prefix of the bins (increasing: b <= x, or b < x with right; decreasing: b > x, or
// b >= x with right). The search is branch-free: `steps` halving steps from the largest power of
// two not above len(bins), each adding the step where the predicate holds at pos + step - 1, the
// same number of steps for every sample, so a warp never diverges.
//
// The bins go to shared memory when they fit (in_shared = 1, dynamic shared memory of
// 8 * len(bins) bytes), otherwise the search reads them through L1. With a search table
// (search_table.cuh) the search starts at the sample's cell's first candidate and takes only the
// steps the fullest cell needs. Each thread reads 16 bytes of samples at a time and writes their
// int64 indices with streaming 16-byte stores; the tail goes one by one.
//
// Compiled by NVRTC once per sample type: the host passes -DSAMPLE_T=<C type> and
// -DSAMPLE_IS_FLOAT=0|1.

#ifndef SAMPLE_T
#error "SAMPLE_T must be defined by the host"
#endif
typedef SAMPLE_T sample_t;

#include "search_table.cuh"

#define DIGITIZE_INC_LEFT 0   // increasing bins, right=False: bins[i-1] <= x < bins[i]
#define DIGITIZE_INC_RIGHT 1  // increasing bins, right=True:  bins[i-1] < x <= bins[i]
#define DIGITIZE_DEC_LEFT 2   // decreasing bins, right=False
#define DIGITIZE_DEC_RIGHT 3  // decreasing bins, right=True

template <int MODE>
__device__ __forceinline__ bool holds(double b, double x) {
    if (MODE == DIGITIZE_INC_LEFT) return b <= x;
    if (MODE == DIGITIZE_INC_RIGHT) return b < x;
    if (MODE == DIGITIZE_DEC_LEFT) return b > x;
    return b >= x;
}

template <int MODE>
__device__ __forceinline__ long long digitize_one(sample_t v, const double* __restrict__ bins, unsigned nbins,
                                                  unsigned top, const SearchTable& table) {
    const double x = (double)v;
#if SAMPLE_IS_FLOAT
    if (x != x) return (MODE == DIGITIZE_INC_LEFT || MODE == DIGITIZE_INC_RIGHT) ? (long long)nbins : 0;
#endif
    unsigned pos = 0;
    if (table.starts) {
        pos = search_start(table, x);
        top = table.top;
    }
    for (unsigned step = top; step > 0; step >>= 1) {
        const unsigned next = pos + step;
        // The bins hold the predicate on a prefix, so pos never passes its end.
        const bool take = next <= nbins && holds<MODE>(bins[next - 1], x);
        pos = take ? next : pos;
    }
    return (long long)pos;
}

template <int MODE>
__device__ __forceinline__ void digitize_walk(const sample_t* __restrict__ in, unsigned long long n,
                                              const double* __restrict__ bins, unsigned nbins, unsigned top,
                                              long long* __restrict__ out, const SearchTable& table) {
    constexpr int VEC = 16 / sizeof(sample_t) > 0 ? 16 / sizeof(sample_t) : 1;
    union Vec { uint4 raw; sample_t s[VEC]; };
    const unsigned long long nvec = n / VEC;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const uint4* in4 = reinterpret_cast<const uint4*>(in);
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += stride) {
        Vec a;
        a.raw = __ldg(in4 + i);
        long long r[VEC];
#pragma unroll
        for (int k = 0; k < VEC; k++) r[k] = digitize_one<MODE>(a.s[k], bins, nbins, top, table);
        // VEC int64 indices: 16-byte stores of two (one index for 16-byte samples), streamed
        // (st.global.cs): the indices are twice the samples' bytes and this kernel never reads
        // them again, so they should not evict what L2 holds for it (bench/NOTES.md, session 31).
        if (VEC >= 2) {
            longlong2* o2 = reinterpret_cast<longlong2*>(out + i * VEC);
#pragma unroll
            for (int k = 0; k + 1 < VEC; k += 2) __stcs(o2 + k / 2, make_longlong2(r[k], r[k + 1]));
        } else {
            out[i] = r[0];
        }
    }
    for (unsigned long long j = nvec * VEC + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += stride)
        out[j] = digitize_one<MODE>(in[j], bins, nbins, top, table);
}

// in: n samples (16-byte aligned); bins: nbins float64 bins (fewer than 2^31); top: the largest
// power of two not above nbins (0 without bins); out: n int64 indices (16-byte aligned); table:
// the search table of these bins and mode, or one with null starts.
extern "C" __global__ void __launch_bounds__(512) digitize(const sample_t* in, unsigned long long n,
                                                          const double* bins, unsigned nbins, unsigned top,
                                                          int mode, int in_shared, long long* out,
                                                          SearchTable table) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const double* b = bins;
    if (in_shared) {
        double* s = reinterpret_cast<double*>(smem_raw);
        for (unsigned i = threadIdx.x; i < nbins; i += blockDim.x) s[i] = __ldg(bins + i);
        __syncthreads();
        b = s;
    }
    switch (mode) {
        case DIGITIZE_INC_LEFT: digitize_walk<DIGITIZE_INC_LEFT>(in, n, b, nbins, top, out, table); break;
        case DIGITIZE_INC_RIGHT: digitize_walk<DIGITIZE_INC_RIGHT>(in, n, b, nbins, top, out, table); break;
        case DIGITIZE_DEC_LEFT: digitize_walk<DIGITIZE_DEC_LEFT>(in, n, b, nbins, top, out, table); break;
        default: digitize_walk<DIGITIZE_DEC_RIGHT>(in, n, b, nbins, top, out, table); break;
    }
}
