// Array reversal through shared memory, three ways: a compile-time sized (static) tile, an
// `extern __shared__` (dynamic) tile sized at launch, and one dynamic allocation carved into two
// arrays of different types. Each block stages a tile of the input in shared memory and writes it
// back mirrored, so that both the global reads and the global writes are coalesced.
//
// Every global access moves a 16-byte chunk (VEC elements), and a thread has several of them in
// flight. Output chunk g (out[g * VEC, g * VEC + VEC)) holds in[r + (nch - 1 - g) * VEC, + VEC)
// reversed, where nch = n / VEC is the number of whole output chunks and r = n % VEC: those input
// elements straddle two aligned input chunks, nch - 1 - g and nch - g, whenever r > 0. So a tile
// stages the aligned input chunks its output needs (one more than its output chunks when r > 0),
// and each output chunk is cut out of two staged chunks at a byte offset of r * sizeof(elem_t) (a
// funnel shift in registers), reversed within its 16 bytes and stored aligned. Input chunk nch is
// the partial one (r elements): it is read element by element. The r elements after the last whole
// output chunk come from the start of input chunk 0 and are written by the tile that holds it.
//
// The input and output must be 16-byte aligned (device allocations are).
//
// Compiled per element type: -DELEM_T=<C type>.

#ifndef ELEM_T
#error "ELEM_T must be defined by the host"
#endif
typedef ELEM_T elem_t;

// Elements per 16-byte chunk.
#define VEC (16 / (unsigned)sizeof(elem_t))
// Threads per block (the host launches this many) and chunks each moves per tile.
#define REVERSE_THREADS 256
#define CHUNKS_PER_THREAD 4
// Output chunks per tile of the static kernel: 16 KiB. The host sizes the dynamic and carved tiles
// the same way (REVERSE_TILE_BYTES in crates/smemkit/src/cuda/ops.rs).
#define STATIC_CHUNKS (REVERSE_THREADS * CHUNKS_PER_THREAD)
// Elements of the static tile.
#define STATIC_TILE (STATIC_CHUNKS * VEC)

static_assert(16 % sizeof(elem_t) == 0, "elements of 1, 2, 4, 8 or 16 bytes");

// The VEC elements of a chunk in reverse order.
__device__ __forceinline__ uint4 reverse_chunk(uint4 v) {
    if (sizeof(elem_t) == 16) return v;
    if (sizeof(elem_t) == 8) return make_uint4(v.z, v.w, v.x, v.y);
    if (sizeof(elem_t) == 4) return make_uint4(v.w, v.z, v.y, v.x);
    if (sizeof(elem_t) == 2)
        return make_uint4(__byte_perm(v.w, 0, 0x1032), __byte_perm(v.z, 0, 0x1032),
                          __byte_perm(v.y, 0, 0x1032), __byte_perm(v.x, 0, 0x1032));
    return make_uint4(__byte_perm(v.w, 0, 0x0123), __byte_perm(v.z, 0, 0x0123),
                      __byte_perm(v.y, 0, 0x0123), __byte_perm(v.x, 0, 0x0123));
}

// Bytes [shift, shift + 16) of the 32 bytes lo, hi (little-endian); shift in [1, 16), the same for
// every thread.
__device__ __forceinline__ uint4 funnel(uint4 lo, uint4 hi, unsigned shift) {
    unsigned a0, a1, a2, a3, a4;
    switch (shift >> 2) {
        case 0: a0 = lo.x; a1 = lo.y; a2 = lo.z; a3 = lo.w; a4 = hi.x; break;
        case 1: a0 = lo.y; a1 = lo.z; a2 = lo.w; a3 = hi.x; a4 = hi.y; break;
        case 2: a0 = lo.z; a1 = lo.w; a2 = hi.x; a3 = hi.y; a4 = hi.z; break;
        default: a0 = lo.w; a1 = hi.x; a2 = hi.y; a3 = hi.z; a4 = hi.w; break;
    }
    unsigned b = (shift & 3) * 8;
    return make_uint4(__funnelshift_r(a0, a1, b), __funnelshift_r(a1, a2, b),
                      __funnelshift_r(a2, a3, b), __funnelshift_r(a3, a4, b));
}

// What every tile needs to know about the whole array.
struct Whole {
    const uint4* in;
    uint4* out;
    const elem_t* in_elems;
    elem_t* out_elems;
    unsigned long long n;
    long long nch;    // whole output chunks: n / VEC
    unsigned r;       // n % VEC
};

// One tile: output chunks [g0, g0 + tc) (those below nch), from input chunks [kmin, kmin + tc]
// staged in stage[0 .. tc] (stage[tc] only when SHIFT, i.e. r > 0). Output chunk g0 + j is cut out
// of stage[slot(j)] and stage[slot(j) + 1], where slot(j) = tc - 1 - j (the carved kernel reads it
// from its position array). nt threads; each loads up to CPT chunks before it stores any, so CPT
// 16-byte loads are in flight per thread. EDGE: a tile at either end of the array, where chunks
// outside it are skipped, the partial input chunk nch is read element by element, and the last
// tile writes the r tail elements.
template <bool EDGE, bool SHIFT, unsigned CPT, class Slot>
__device__ __forceinline__ void reverse_tile(const Whole& w, uint4* stage, unsigned tc, unsigned nt,
                                             long long g0, Slot slot) {
    const long long kmin = w.nch - g0 - tc;
    // With SHIFT, the last thread also stages chunk kmin + tc (in slot tc), with its first batch.
    const bool extra = SHIFT && threadIdx.x == nt - 1;
    const long long ke = kmin + tc;  // >= 0; == nch (the partial chunk) only in the first tile
    uint4 e;
    if (extra && (!EDGE || ke < w.nch)) e = w.in[ke];
    for (unsigned s0 = 0; s0 < tc; s0 += CPT * nt) {
        uint4 v[CPT];
#pragma unroll
        for (unsigned i = 0; i < CPT; i++) {
            unsigned s = s0 + i * nt + threadIdx.x;
            long long k = kmin + s;
            if (s < tc && (!EDGE || k >= 0)) v[i] = w.in[k];
        }
#pragma unroll
        for (unsigned i = 0; i < CPT; i++) {
            unsigned s = s0 + i * nt + threadIdx.x;
            long long k = kmin + s;
            if (s < tc && (!EDGE || k >= 0)) stage[s] = v[i];
        }
    }
    if (extra) {
        if (!EDGE || ke < w.nch) {
            stage[tc] = e;
        } else {
            // The partial input chunk nch: its r elements, the rest zero (never used).
            elem_t* p = reinterpret_cast<elem_t*>(stage + tc);
            unsigned long long first = (unsigned long long)w.nch * VEC;
            for (unsigned i = 0; i < VEC; i++) p[i] = i < w.r ? w.in_elems[first + i] : elem_t(0);
        }
    }
    __syncthreads();
    const unsigned shift = w.r * (unsigned)sizeof(elem_t);
    for (unsigned j0 = 0; j0 < tc; j0 += CPT * nt) {
#pragma unroll
        for (unsigned i = 0; i < CPT; i++) {
            unsigned j = j0 + i * nt + threadIdx.x;
            if (j < tc && (!EDGE || g0 + j < w.nch)) {
                unsigned s = slot(j);
                uint4 v = stage[s];
                if (SHIFT) v = funnel(v, stage[s + 1], shift);
                w.out[g0 + j] = reverse_chunk(v);
            }
        }
    }
    if (EDGE && SHIFT && kmin <= 0 && threadIdx.x < w.r) {
        // The tail out[nch * VEC, n) = in[r - 1], ..., in[0]: input chunk 0 is in slot -kmin.
        const elem_t* e = reinterpret_cast<const elem_t*>(stage - kmin);
        w.out_elems[(unsigned long long)w.nch * VEC + threadIdx.x] = e[w.r - 1 - threadIdx.x];
    }
}

// Every tile of tc output chunks, grid-stride. A tile is an edge tile when it reaches past either
// end of the array (kmin < 0), and when r > 0 the first and the last.
template <bool SHIFT, unsigned CPT, class Slot>
__device__ __forceinline__ void reverse_tiles(const Whole& w, uint4* stage, unsigned tc,
                                              unsigned nt, Slot slot) {
    const long long tiles = w.nch > 0 ? (w.nch + tc - 1) / tc : 1;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long g0 = t * tc;
        const long long kmin = w.nch - g0 - tc;
        // With SHIFT, the first tile reads the partial chunk and the last one (kmin <= 0) writes
        // the tail.
        if (kmin < 0 || (SHIFT && (t == 0 || kmin == 0)))
            reverse_tile<true, SHIFT, CPT>(w, stage, tc, nt, g0, slot);
        else
            reverse_tile<false, SHIFT, CPT>(w, stage, tc, nt, g0, slot);
        // The next tile overwrites `stage`: every thread must have read its part first.
        __syncthreads();
    }
}

template <unsigned CPT, class Slot>
__device__ __forceinline__ void reverse_all(const elem_t* in, elem_t* out, unsigned long long n,
                                            uint4* stage, unsigned tc, unsigned nt, Slot slot) {
    Whole w;
    w.in = reinterpret_cast<const uint4*>(in);
    w.out = reinterpret_cast<uint4*>(out);
    w.in_elems = in;
    w.out_elems = out;
    w.n = n;
    w.nch = (long long)(n / VEC);
    w.r = (unsigned)(n % VEC);
    if (w.r == 0)
        reverse_tiles<false, CPT>(w, stage, tc, nt, slot);
    else
        reverse_tiles<true, CPT>(w, stage, tc, nt, slot);
}

// The static tile: STATIC_TILE elements (16 KiB) plus one chunk for the straddling reads.
extern "C" __global__ void __launch_bounds__(REVERSE_THREADS)
    reverse_static(const elem_t* __restrict__ in, elem_t* __restrict__ out, unsigned long long n) {
    __shared__ __align__(16) elem_t tile[STATIC_TILE + VEC];
    uint4* stage = reinterpret_cast<uint4*>(tile);
    reverse_all<CHUNKS_PER_THREAD>(in, out, n, stage, STATIC_CHUNKS, REVERSE_THREADS,
                                   [](unsigned j) { return STATIC_CHUNKS - 1 - j; });
}

// The dynamic tile: tile_len elements (a multiple of VEC) plus one chunk, sized at launch.
extern "C" __global__ void __launch_bounds__(REVERSE_THREADS)
    reverse_dynamic(const elem_t* __restrict__ in, elem_t* __restrict__ out, unsigned long long n,
                    unsigned tile_len) {
    extern __shared__ __align__(16) unsigned char smem[];
    elem_t* tile = reinterpret_cast<elem_t*>(smem);
    const unsigned tc = tile_len / VEC;
    reverse_all<CHUNKS_PER_THREAD>(in, out, n, reinterpret_cast<uint4*>(tile), tc, blockDim.x,
                                   [tc](unsigned j) { return tc - 1 - j; });
}

// One dynamic allocation holds two arrays: the staged values (tile_len + VEC elements), and after
// them, aligned for u32, the mirrored staging slot each output chunk of a tile reads (tile_len /
// VEC entries), filled once per block since it is the same for every tile. The host sizes the
// allocation as carve_bytes(tile_len) in crates/smemkit/src/cuda/ops.rs.
extern "C" __global__ void __launch_bounds__(REVERSE_THREADS)
    reverse_carved(const elem_t* __restrict__ in, elem_t* __restrict__ out, unsigned long long n,
                   unsigned tile_len) {
    extern __shared__ __align__(16) unsigned char smem[];
    elem_t* vals = reinterpret_cast<elem_t*>(smem);
    const unsigned tc = tile_len / VEC;
    size_t pos_offset = ((size_t)(tile_len + VEC) * sizeof(elem_t) + 3) & ~(size_t)3;
    unsigned* pos = reinterpret_cast<unsigned*>(smem + pos_offset);
    for (unsigned j = threadIdx.x; j < tc; j += blockDim.x) pos[j] = tc - 1 - j;
    __syncthreads();
    reverse_all<CHUNKS_PER_THREAD>(in, out, n, reinterpret_cast<uint4*>(vals), tc, blockDim.x,
                                   [pos](unsigned j) { return pos[j]; });
}
