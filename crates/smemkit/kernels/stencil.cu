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
// weights arrive by value as a kernel parameter (they live in the constant bank; the compiler
// loads each into a uniform register once per tile and every FMA takes it from there: no load per
// tap), and the window a thread walks is loaded from shared memory one 16-byte chunk at a time, each
// value feeding every output of the thread that needs it (register blocking: one shared read per
// VEC inputs per thread, whatever the radius).
//
// A block of STENCIL_THREADS threads computes a tile of TILE = STENCIL_THREADS * K * GROUPS outputs:
// each thread computes GROUPS runs of K consecutive outputs. Two layouts, by radius:
//  - small radii (memory-bound, RADIUS <= STENCIL_SMALL_RADIUS): runs of one chunk (K = VEC), two
//    per thread, laid out so that a warp's chunk reads and output stores are contiguous 512-byte
//    spans;
//  - larger radii (FMA-bound as the radius grows): one run of K = 16 outputs per thread (8 for
//    8-byte elements), so that each input read from shared memory feeds up to K FMAs (at radius 64:
//    2,064 FMAs, 36 shared reads). Thread t's window starts S = K / VEC chunks after thread
//    t - 1's, so the staged chunks are padded (one unused chunk after every S): the 8 lanes of one
//    phase of a 16-byte read, S + 1 (odd) chunks apart, hit 8 distinct bank groups, and each
//    thread's reads are its base address plus compile-time offsets. Its K outputs go back through
//    shared memory (the same padding), so that a warp's global stores are contiguous 512-byte
//    spans rather than 16 bytes every S chunks.
// Each output's taps are applied in order j = -r .. r (its FMAs interleave with other outputs'
// FMAs, never with each other), so each output is the same left-to-right chain as on the CPU.
// (The alternatives were slower or no faster at radius 64: 32 outputs per thread, 64 KB of fully
// unrolled code per run, starves the instruction cache; a loop over tap blocks with the window in a
// register ring and the weights in shared memory keeps the code small but compiles to more
// non-FMA instructions than it saves; staging per warp instead of per block, with __syncwarp,
// trades the barrier stalls for instruction-cache misses as the warps drift apart.)
//
// The tile stages in[tile_base - HALO, tile_base + TILE + HALO) (HALO = RADIUS rounded up to whole
// chunks, so the staging is aligned): with 16-byte loads when the whole window lies inside the array,
// element by element through the boundary mode otherwise (the first and last tiles). The 16-byte
// loads of a block's next tile are issued into registers before it computes the current one, so
// that they are in flight while it computes; the registers go to shared memory once every thread is
// done reading the current tile. The grid is persistent (as many blocks as fit the GPU at once,
// each striding over the tiles).
//
// Two barriers per tile: (A) after staging, before anyone reads the staged tile (the halo and most
// of each thread's window were staged by other threads, those at the ends of each warp's span by
// threads of other warps), and (B) after computing, before the next tile overwrites the staging. A
// build with -DSTENCIL_SKIP_BARRIER_FOR_RACECHECK=1 leaves out (A), so that a test can show
// compute-sanitizer's racecheck catching the missing barrier; nothing else uses it.

#ifndef RADIUS
#define RADIUS 1
#endif
#define TAPS (2 * RADIUS + 1)
#define STENCIL_THREADS 256
#define VEC (16 / (int)sizeof(elem_t))                  // elements per 16-byte chunk
#define HALO ((RADIUS + VEC - 1) / VEC * VEC)
#define HALO_CHUNKS (HALO / VEC)
#define SHIFT (HALO - RADIUS)                          // first window element within the first chunk

// The layouts (the host mirrors them in `stencil_tile`; the -D overrides are for experiments).
#ifndef STENCIL_SMALL_RADIUS
#define STENCIL_SMALL_RADIUS 8
#endif
#define SMALL (RADIUS <= STENCIL_SMALL_RADIUS)
#ifndef STENCIL_K_LARGE
#define STENCIL_K_LARGE (sizeof(elem_t) == 4 ? 16 : 8)
#endif
#define K (SMALL ? VEC : STENCIL_K_LARGE)              // consecutive outputs per run
#define GROUPS (SMALL ? 2 : 1)                         // runs per thread
#define S (K / VEC)                                    // chunks per run
#define PAD (S % 2 == 0)
// Registers: at most 64 (4 blocks of 256 threads per SM) for the register-blocked layout, which
// needs the warps; the compiler's choice for the small one (48 to 80, by element type).
#define MIN_BLOCKS (RADIUS <= STENCIL_SMALL_RADIUS ? 1 : 4)
// Where staged chunk c lives (in chunks): one unused chunk after every S when padded.
#define PHYS_CHUNK(c) (PAD ? (c) + (c) / S : (c))
#define PHYS(i) (PHYS_CHUNK((i) / VEC) * VEC + (i) % VEC)
#define CHUNKS ((SHIFT + K + 2 * RADIUS - 1 + VEC) / VEC) // chunks a run's window spans
#define TILE (STENCIL_THREADS * K * GROUPS)
#define TILE_CHUNKS (TILE / VEC)
#define STAGED_CHUNKS (TILE_CHUNKS + 2 * HALO_CHUNKS)
// Runs longer than a chunk store their outputs through shared memory.
#define OUTSTAGE (K > VEC)
// Chunks each thread stages: its GROUPS * S chunks of the tile, and (some threads) one of the halo's.
#define MAIN_PER_THREAD (TILE_CHUNKS / STENCIL_THREADS)
#define HALO_PER_THREAD ((2 * HALO_CHUNKS + STENCIL_THREADS - 1) / STENCIL_THREADS)
#define STAGE_PER_THREAD (MAIN_PER_THREAD + HALO_PER_THREAD)

struct __align__(16) chunk_t { elem_t v[16 / sizeof(elem_t)]; };
struct stencil_weights { elem_t w[TAPS]; };

// Staged chunk number i of thread t (i < STAGE_PER_THREAD): its chunk of the staging (the left
// halo, the tile, the right halo), or -1 where the thread has no chunk to stage.
__device__ __forceinline__ int staged_chunk(int t, int i) {
    if (i < MAIN_PER_THREAD) return HALO_CHUNKS + i * STENCIL_THREADS + t;
    const int h = (i - MAIN_PER_THREAD) * STENCIL_THREADS + t;
    if (h >= 2 * HALO_CHUNKS) return -1;
    return h < HALO_CHUNKS ? h : h + TILE_CHUNKS;
}

// The 16-byte loads of a tile that lies inside the array (`src` = in + tile_base - HALO).
__device__ __forceinline__ void load_tile(chunk_t (&r)[STAGE_PER_THREAD], const chunk_t* src, int t) {
#pragma unroll
    for (int i = 0; i < STAGE_PER_THREAD; i++) {
        const int c = staged_chunk(t, i);
        if (c >= 0) r[i] = src[c];
    }
}

__device__ __forceinline__ void store_tile(elem_t* s, const chunk_t (&r)[STAGE_PER_THREAD], int t) {
#pragma unroll
    for (int i = 0; i < STAGE_PER_THREAD; i++) {
        const int c = staged_chunk(t, i);
        if (c >= 0) *reinterpret_cast<chunk_t*>(s + PHYS_CHUNK(c) * VEC) = r[i];
    }
}

// Window chunk Q of a run: its VEC values, each applied to every output of the run that takes it.
// Output k takes window element k + j as its tap j, j = 0 .. 2r, so each output's taps arrive in
// order. A template per chunk (rather than one loop over all CHUNKS * VEC * K steps, which the
// compiler does not unroll at radius 64) keeps every index a compile-time constant.
template <int Q> struct window {
    static __device__ __forceinline__ void run(ACC_T (&acc)[K], const elem_t* win,
                                               const stencil_weights& wt) {
        const chunk_t c = *reinterpret_cast<const chunk_t*>(win + PHYS_CHUNK(Q) * VEC);
#pragma unroll
        for (int v = 0; v < VEC; v++) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int j = Q * VEC + v - SHIFT - k;
                if (j >= 0 && j < TAPS) {
#if WEIGHTED
                    acc[k] = fma_step(wt.w[j], c.v[v], acc[k]);
#else
                    acc[k] += (ACC_T)c.v[v];
#endif
                }
            }
        }
        window<Q + 1>::run(acc, win, wt);
    }
};
template <> struct window<CHUNKS> {
    static __device__ __forceinline__ void run(ACC_T (&)[K], const elem_t*, const stencil_weights&) {}
};

extern "C" __global__ void __launch_bounds__(STENCIL_THREADS, MIN_BLOCKS)
    stencil1d(const elem_t* __restrict__ in, elem_t* __restrict__ out, const stencil_weights wt,
              unsigned long long n, int boundary) {
    __shared__ __align__(16) elem_t s[(PHYS_CHUNK(STAGED_CHUNKS) + 1) * VEC];
    __shared__ __align__(16) elem_t so[OUTSTAGE ? (PHYS_CHUNK(TILE_CHUNKS) + 1) * VEC : VEC];
    const long long nn = (long long)n;
    const unsigned long long ntiles = (n + TILE - 1) / TILE;
    const bool aligned = (((unsigned long long)in | (unsigned long long)out) & 15) == 0;
    const int t = threadIdx.x;
    // Whether tile `tile` (< ntiles) and its halo lie inside the array, for the 16-byte path.
#define INSIDE(tile) (aligned && (long long)((tile) * TILE) >= HALO && \
                      (long long)((tile) * TILE) + TILE + HALO <= nn)
    chunk_t staged[STAGE_PER_THREAD];
    if (blockIdx.x < ntiles && INSIDE((unsigned long long)blockIdx.x))
        load_tile(staged, reinterpret_cast<const chunk_t*>(in + (long long)blockIdx.x * TILE - HALO), t);
    for (unsigned long long tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const long long base = (long long)(tile * TILE);
        const bool inside = INSIDE(tile);
        if (inside) {
            store_tile(s, staged, t);
        } else {
            for (int i = t; i < STAGED_CHUNKS * VEC; i += STENCIL_THREADS)
                s[PHYS(i)] = load(in, base - HALO + i, nn, boundary);
        }
        // (A) The halo and the chunks staged by other threads must be in place before anyone reads.
#if !STENCIL_SKIP_BARRIER_FOR_RACECHECK
        __syncthreads();
#endif
        {
            // The next tile's loads, in flight while this one computes.
            const unsigned long long next = tile + gridDim.x;
            if (next < ntiles && INSIDE(next))
                load_tile(staged, reinterpret_cast<const chunk_t*>(in + (long long)(next * TILE) - HALO), t);
        }
#pragma unroll
        for (int g = 0; g < GROUPS; g++) {
            const int run = g * STENCIL_THREADS + t;
            const int first = run * K;                   // the run's first output in the tile
            // Its window: staged chunks run * S + q, q < CHUNKS (element SHIFT of chunk 0 first).
            const elem_t* win = s + run * (S + PAD) * VEC;
            ACC_T acc[K];
#pragma unroll
            for (int k = 0; k < K; k++) acc[k] = (ACC_T)0;
            window<0>::run(acc, win, wt);
            const long long o = base + first;
            if (inside) {
#pragma unroll
                for (int k = 0; k < K; k += VEC) {
                    chunk_t c;
#pragma unroll
                    for (int v = 0; v < VEC; v++) c.v[v] = (elem_t)acc[k + v];
                    if (OUTSTAGE)  // output chunk run * S + k / VEC of the tile, padded as the staging
                        *reinterpret_cast<chunk_t*>(so + (run * (S + PAD) + k / VEC) * VEC) = c;
                    else
                        *reinterpret_cast<chunk_t*>(out + o + k) = c;
                }
            } else {
#pragma unroll
                for (int k = 0; k < K; k++)
                    if (o + k < nn) out[o + k] = (elem_t)acc[k];
            }
        }
        // (B) The next tile overwrites the staging (and, with OUTSTAGE, the staged outputs are read).
        __syncthreads();
        // The staged outputs, chunk t + i * STENCIL_THREADS: a warp stores 512 contiguous bytes.
        // (The next writes to `so` come after the next tile's barrier A.)
        if (OUTSTAGE && inside) {
#pragma unroll
            for (int i = 0; i < TILE_CHUNKS / STENCIL_THREADS; i++) {
                const int c = i * STENCIL_THREADS + t;
                reinterpret_cast<chunk_t*>(out + base)[c] = *reinterpret_cast<const chunk_t*>(so + PHYS_CHUNK(c) * VEC);
            }
        }
    }
#undef INSIDE
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
