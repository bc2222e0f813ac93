// 1D stencil with a halo: out[i] = sum over j in [-r, r] of w[j + r] * in[i + j] (or the plain sum
// for integers). Each block loads its tile of blockDim.x outputs plus r halo elements on each side
// into dynamic shared memory, synchronises, and computes. Samples outside the array follow the
// boundary mode: zero, clamp (the nearest element) or wrap (periodic).
//
// The weighted sum is accumulated left to right with fused multiply-adds; the CPU engine does the
// same (`mul_add`), so both give the same bits.
//
// Compiled per element type: -DELEM_T=<C type> -DACC_T=<C type> -DWEIGHTED=0|1 (integer sums
// accumulate in the unsigned type of the same width, which wraps as the CPU's wrapping_add does).

#ifndef ELEM_T
#error "ELEM_T must be defined by the host"
#endif
typedef ELEM_T elem_t;

#ifndef STENCIL_SKIP_BARRIER_FOR_RACECHECK
#define STENCIL_SKIP_BARRIER_FOR_RACECHECK 0
#endif

#define BOUNDARY_ZERO 0
#define BOUNDARY_CLAMP 1
#define BOUNDARY_WRAP 2

__device__ __forceinline__ elem_t load(const elem_t* in, long long g, long long n, int boundary) {
    if (g >= 0 && g < n) return in[g];
    if (boundary == BOUNDARY_ZERO) return (elem_t)0;
    if (boundary == BOUNDARY_CLAMP) return in[g < 0 ? 0 : n - 1];
    long long m = g % n;
    return in[m < 0 ? m + n : m];
}

__device__ __forceinline__ float fma_step(float w, float x, float acc) { return __fmaf_rn(w, x, acc); }
__device__ __forceinline__ double fma_step(double w, double x, double acc) { return __fma_rn(w, x, acc); }

extern "C" __global__ void stencil1d(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                     const elem_t* __restrict__ w, unsigned long long n, int r, int boundary) {
    extern __shared__ __align__(16) unsigned char smem[];
    elem_t* s = reinterpret_cast<elem_t*>(smem);
    const long long nn = (long long)n;
    for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x; base < n;
         base += (unsigned long long)gridDim.x * blockDim.x) {
        for (unsigned k = threadIdx.x; k < blockDim.x + 2 * r; k += blockDim.x)
            s[k] = load(in, (long long)base + k - r, nn, boundary);
        // The halo loaded by the neighbours' threads must be in place before anyone computes.
        // (A build with -DSTENCIL_SKIP_BARRIER_FOR_RACECHECK=1 leaves it out, so that a test can
        // show compute-sanitizer's racecheck catching the missing barrier; nothing else uses it.)
#if !STENCIL_SKIP_BARRIER_FOR_RACECHECK
        __syncthreads();
#endif
        unsigned long long i = base + threadIdx.x;
        if (i < n) {
            ACC_T acc = (ACC_T)0;
            for (int j = 0; j <= 2 * r; j++) {
#if WEIGHTED
                acc = fma_step(__ldg(w + j), s[threadIdx.x + j], acc);
#else
                acc += (ACC_T)s[threadIdx.x + j];
#endif
            }
            out[i] = (elem_t)acc;
        }
        // The next tile overwrites `s`.
        __syncthreads();
    }
}

// The same stencil without shared memory, for the cache lab: each thread reads its 2r + 1
// neighbours straight from global memory through the read-only (L1) path, relying on the cache to
// serve the reuse between neighbouring threads. Same accumulation order, so the same bits.
extern "C" __global__ void stencil1d_l1(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                        const elem_t* __restrict__ w, unsigned long long n, int r, int boundary) {
    const long long nn = (long long)n;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nn;
         i += (long long)gridDim.x * blockDim.x) {
        ACC_T acc = (ACC_T)0;
        const bool inside = i >= r && i + r < nn;
#pragma unroll 4
        for (int j = 0; j <= 2 * r; j++) {
            const long long g = i + j - r;
            const elem_t x = inside ? __ldg(in + g) : load(in, g, nn, boundary);
#if WEIGHTED
            acc = fma_step(__ldg(w + j), x, acc);
#else
            acc += (ACC_T)x;
#endif
        }
        out[i] = (elem_t)acc;
    }
}
