// 1D stencil with a halo: out[i] = sum over j in [-r, r] of w[j + r] * in[i + j] (or the plain sum
// for integers). Each block loads its tile of outputs plus a halo of at least r elements on each
// side into shared memory, synchronises, and computes. Samples outside the array follow the
// boundary mode: zero, clamp (the nearest element) or wrap (periodic).
//
// The weighted sum is accumulated left to right with fused multiply-adds; the CPU engine does the
// same (`mul_add`), so both give the same bits.
//
// Compiled per element type and radius: -DELEM_T=<C type> -DACC_T=<C type> -DWEIGHTED=0|1
// -DRADIUS=r (integer sums accumulate in the unsigned type of the same width, which wraps as the
// CPU's wrapping_add does).

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

// ---- The shared-memory kernel -------------------------------------------------------------------
// Compiled per radius (-DRADIUS=r, 1 to 64), so that every loop below unrolls completely: the
// weights arrive by value as a kernel parameter (they live in the constant bank, and each FMA reads
// its weight from there as an operand: no load instruction per tap), and the window a thread walks
// is loaded from shared memory one 16-byte chunk at a time, each chunk feeding every output of the
// thread that needs it.
//
// A block of STENCIL_THREADS threads computes a tile of TILE = STENCIL_THREADS * OUTS outputs. Each
// thread computes GROUPS runs of K consecutive outputs (K * GROUPS = OUTS = 2 chunks). Small radii
// (memory-bound) take two runs of one chunk each, laid out so that a warp's chunk loads and output
// stores are contiguous 512-byte spans; large radii (compute-bound) take one run of two chunks, which
// halves the shared-memory reads per FMA, with the chunks swizzled so that lanes 32 bytes apart
// still hit distinct banks.
//
// The tile stages in[tile_base - HALO, tile_base + TILE + HALO) (HALO = RADIUS rounded up to whole
// chunks, so the staging is aligned): with 16-byte loads when the whole window lies inside the array,
// element by element through the boundary mode otherwise (the first and last tiles).

#ifndef RADIUS
#define RADIUS 1
#endif
#define TAPS (2 * RADIUS + 1)
#define STENCIL_THREADS 256
#define VEC (16 / (int)sizeof(elem_t))                  // elements per 16-byte chunk
#define HALO ((RADIUS + VEC - 1) / VEC * VEC)
#define SHIFT (HALO - RADIUS)                          // first window element within the first chunk
#define K (RADIUS <= 16 ? VEC : 2 * VEC)               // consecutive outputs per run
#define GROUPS (2 * VEC / K)                           // runs per thread
#define TILE (STENCIL_THREADS * K * GROUPS)
#define STAGED (TILE + 2 * HALO)
#define PAD (K > VEC)
// Where staged element i lives: with PAD, chunk c is stored at chunk c ^ bit 3 of c, so that the
// 8 lanes of one phase of a 16-byte load, 2 chunks apart, land in 8 distinct bank groups.
#define SWIZZLE(c) ((c) ^ (((c) >> 3) & 1))
#define PHYS(i) (PAD ? SWIZZLE((i) / VEC) * VEC + (i) % VEC : (i))
#define CHUNKS ((SHIFT + K + 2 * RADIUS - 1 + VEC) / VEC) // chunks a run's window spans

struct __align__(16) chunk_t { elem_t v[16 / sizeof(elem_t)]; };
struct stencil_weights { elem_t w[TAPS]; };

extern "C" __global__ void __launch_bounds__(STENCIL_THREADS)
    stencil1d(const elem_t* __restrict__ in, elem_t* __restrict__ out, const stencil_weights wt,
              unsigned long long n, int boundary) {
    __shared__ __align__(16) elem_t s[STAGED + 2 * VEC];
    const long long nn = (long long)n;
    const unsigned long long ntiles = (n + TILE - 1) / TILE;
    const bool aligned = (((unsigned long long)in | (unsigned long long)out) & 15) == 0;
    const int t = threadIdx.x;
    for (unsigned long long tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const long long base = (long long)(tile * TILE);
        const bool inside = aligned && base >= HALO && base + TILE + HALO <= nn;
        if (inside) {
            const chunk_t* src = reinterpret_cast<const chunk_t*>(in + base - HALO);
#pragma unroll
            for (int q = t; q < STAGED / VEC; q += STENCIL_THREADS)
                *reinterpret_cast<chunk_t*>(s + PHYS(q * VEC)) = src[q];
        } else {
            for (int i = t; i < STAGED; i += STENCIL_THREADS)
                s[PHYS(i)] = load(in, base - HALO + i, nn, boundary);
        }
        // The halo and the chunks loaded by other threads must be in place before anyone computes.
        // (A build with -DSTENCIL_SKIP_BARRIER_FOR_RACECHECK=1 leaves it out, so that a test can
        // show compute-sanitizer's racecheck catching the missing barrier; nothing else uses it.)
#if !STENCIL_SKIP_BARRIER_FOR_RACECHECK
        __syncthreads();
#endif
#pragma unroll
        for (int g = 0; g < GROUPS; g++) {
            const int first = (g * STENCIL_THREADS + t) * K;  // the run's first output in the tile
            ACC_T acc[K];
#pragma unroll
            for (int k = 0; k < K; k++) acc[k] = (ACC_T)0;
            // Output first + k takes staged elements first + SHIFT + k + j, j = 0 .. 2r, in order.
#pragma unroll
            for (int q = 0; q < CHUNKS; q++) {
                const chunk_t c = *reinterpret_cast<const chunk_t*>(s + PHYS(first + q * VEC));
#pragma unroll
                for (int v = 0; v < VEC; v++) {
#pragma unroll
                    for (int k = 0; k < K; k++) {
                        const int j = q * VEC + v - SHIFT - k;
                        if (j >= 0 && j < TAPS) {
#if WEIGHTED
                            acc[k] = fma_step(wt.w[j], c.v[v], acc[k]);
#else
                            acc[k] += (ACC_T)c.v[v];
#endif
                        }
                    }
                }
            }
            const long long o = base + first;
            if (inside) {
#pragma unroll
                for (int k = 0; k < K; k += VEC) {
                    chunk_t c;
#pragma unroll
                    for (int v = 0; v < VEC; v++) c.v[v] = (elem_t)acc[k + v];
                    *reinterpret_cast<chunk_t*>(out + o + k) = c;
                }
            } else {
#pragma unroll
                for (int k = 0; k < K; k++)
                    if (o + k < nn) out[o + k] = (elem_t)acc[k];
            }
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
