// Matrix transpose through shared-memory tiles, any shape, elements of 1, 2, 4 or 8 bytes.
//
// Fast path (each row of the input and of the output a whole number of 16-byte chunks, i.e.
// cols * size and rows * size multiples of 16, and 16-byte aligned pointers): a block of 256
// threads stages a tile of TR input rows x TB bytes with coalesced 16-byte loads, each thread
// holding several in flight, and writes it transposed. In between, each thread reads Q consecutive
// tile rows of one 16-byte chunk column (Q 16-byte shared loads: a Q x (16 / size) block of
// elements), transposes that block in registers (byte permutes for 1- and 2-byte elements), and
// writes 16 / size output rows of Q elements each, at neighbouring positions for neighbouring
// lanes: every warp store covers at least 128 contiguous bytes.
//
// Banks: the eight lanes of a quarter warp (one shared-memory wavefront for 16-byte accesses) read
// rows Q * g + i for eight consecutive g, which lie TB * Q bytes apart; with TB * Q a multiple of
// 128 they all start in the same bank. Padded, every group of Q rows is shifted by one more 16-byte
// chunk, so those eight reads fall on eight distinct groups of four banks. Unpadded, they fall on
// the same four banks: an 8-way conflict, kept so the bank-conflict lab can measure the difference
// (the shared pipe has enough headroom over DRAM that the two take about the same time; figures
// in bench/NOTES.md).
//
// Slow path (any other shape): 32 x 32 element tiles read and written one element per thread, the
// tile padded by one element per row (unpadded: the 32 elements of a column share one bank for
// 4-byte elements).
//
// One block per tile, tiles in row-major order (measured on an H100 at least as fast as visiting
// them in bands of 2 to 64 tile rows, column by column within a band).
//
// Compiled per element type: -DELEM_T=<C type>.

#ifndef ELEM_T
#error "ELEM_T must be defined by the host"
#endif
typedef ELEM_T elem_t;

#define ES ((unsigned)sizeof(elem_t))
#define THREADS 256
// Fast-path tile: TR rows x TB bytes: 256 x 128 for 1-byte elements, 128 x 256 for 2 (32 KiB),
// 64 x 256 for 4 and 8 (16 KiB), the best of 16 and 32 KiB shapes measured on an H100. The host
// mirrors these in transpose_tile (crates/smemkit/src/array_ops/cuda.rs).
#ifndef TR
#define TR (ES == 1 ? 256u : ES == 2 ? 128u : 64u)
#endif
#ifndef TB
#define TB (ES == 1 ? 128u : 256u)
#endif
// Tile rows per thread in the transposing read.
#define Q (ES == 8 ? 2u : 4u)
// Slow-path tile.
#define TILE_DIM 32
#define BLOCK_ROWS (THREADS / TILE_DIM)

#define CPR (TB / 16)                     // chunks per tile row
#define EPC (16 / ES)                     // elements per chunk
#define TC (TB / ES)                      // tile columns (elements)
#define GROUPS (TR / Q)                   // groups of Q rows
#define LOADS (TR * CPR / THREADS)        // chunks each thread stages
#define UNITS (GROUPS * CPR / THREADS)    // Q x EPC blocks each thread transposes
#define FAST_BYTES (TR * TB + GROUPS * 16)
#define SLOW_BYTES (TILE_DIM * (TILE_DIM + 1) * ES)
#define SMEM_BYTES (FAST_BYTES > SLOW_BYTES ? FAST_BYTES : SLOW_BYTES)

static_assert(ES == 1 || ES == 2 || ES == 4 || ES == 8, "elements of 1, 2, 4 or 8 bytes");
static_assert(CPR >= 8, "a quarter warp stages 8 consecutive chunks of one row");
static_assert(TR * CPR % THREADS == 0 && GROUPS * CPR % THREADS == 0, "whole work per thread");
static_assert(THREADS % CPR == 0, "a thread's staged chunks stay in one chunk column");
static_assert(Q * ES <= 16 && TR % Q == 0, "rows * size a multiple of 16 makes rows a multiple of Q");

// Byte offset of chunk k of tile row r.
template <int PAD>
__device__ __forceinline__ unsigned slot(unsigned r, unsigned k) {
    return r * TB + (PAD ? (r / Q) * 16 : 0) + k * 16;
}

// Stores of Q elements (Q * ES bytes) at once.
template <unsigned BYTES> struct Store;
template <> struct Store<4> {
    __device__ static void at(unsigned char* p, const unsigned* w) { *reinterpret_cast<unsigned*>(p) = w[0]; }
};
template <> struct Store<8> {
    __device__ static void at(unsigned char* p, const unsigned* w) {
        *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    }
};
template <> struct Store<16> {
    __device__ static void at(unsigned char* p, const unsigned* w) {
        *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    }
};

// Output row m (of EPC) of the Q x EPC block whose Q rows are v[0 .. Q): the Q elements of column
// m, as Q * ES / 4 words.
__device__ __forceinline__ void block_column(const uint4* v, unsigned m, unsigned* o) {
    if (ES == 8) {
        // Q = 2 rows of two 8-byte elements.
        const unsigned* a = reinterpret_cast<const unsigned*>(&v[0]);
        const unsigned* b = reinterpret_cast<const unsigned*>(&v[1]);
        o[0] = a[2 * m]; o[1] = a[2 * m + 1]; o[2] = b[2 * m]; o[3] = b[2 * m + 1];
    } else if (ES == 4) {
        o[0] = reinterpret_cast<const unsigned*>(&v[0])[m];
        o[1] = reinterpret_cast<const unsigned*>(&v[1])[m];
        o[2] = reinterpret_cast<const unsigned*>(&v[2])[m];
        o[3] = reinterpret_cast<const unsigned*>(&v[3])[m];
    } else if (ES == 2) {
        unsigned sel = (m & 1) ? 0x7632 : 0x5410;
        unsigned w = m >> 1;
        o[0] = __byte_perm(reinterpret_cast<const unsigned*>(&v[0])[w],
                           reinterpret_cast<const unsigned*>(&v[1])[w], sel);
        o[1] = __byte_perm(reinterpret_cast<const unsigned*>(&v[2])[w],
                           reinterpret_cast<const unsigned*>(&v[3])[w], sel);
    } else {
        // Byte b of word w of each of the 4 rows.
        unsigned w = m >> 2, b = m & 3;
        unsigned lo = __byte_perm(reinterpret_cast<const unsigned*>(&v[0])[w],
                                  reinterpret_cast<const unsigned*>(&v[1])[w], 0x0040 + b * 0x0011);
        unsigned hi = __byte_perm(reinterpret_cast<const unsigned*>(&v[2])[w],
                                  reinterpret_cast<const unsigned*>(&v[3])[w], 0x0040 + b * 0x0011);
        o[0] = __byte_perm(lo, hi, 0x5410);
    }
}

struct Shape {
    unsigned long long rows, cols;
};

// One fast-path tile at (y0, x0) (elements). EDGE: the tile reaches past the last row or column;
// since rows and cols are whole chunks, whole chunks and whole groups of Q rows are in or out.
template <int PAD, bool EDGE>
__device__ __forceinline__ void fast_tile(const unsigned char* __restrict__ in,
                                          unsigned char* __restrict__ out, unsigned char* tile,
                                          const Shape& s, unsigned long long y0,
                                          unsigned long long x0) {
    const unsigned long long in_row = s.cols * ES, out_row = s.rows * ES;
    // Stage: thread stages chunk k0 of rows r0, r0 + THREADS / CPR, ...
    {
        const unsigned k0 = threadIdx.x % CPR, r0 = threadIdx.x / CPR;
        const unsigned char* p = in + (y0 + r0) * in_row + x0 * ES + k0 * 16;
        const bool col_ok = !EDGE || x0 + k0 * EPC < s.cols;
        uint4 v[LOADS];
#pragma unroll
        for (unsigned i = 0; i < LOADS; i++) {
            unsigned r = r0 + i * (THREADS / CPR);
            if (!EDGE || (col_ok && y0 + r < s.rows))
                v[i] = *reinterpret_cast<const uint4*>(p + (unsigned long long)(i * (THREADS / CPR)) * in_row);
        }
#pragma unroll
        for (unsigned i = 0; i < LOADS; i++) {
            unsigned r = r0 + i * (THREADS / CPR);
            if (!EDGE || (col_ok && y0 + r < s.rows))
                *reinterpret_cast<uint4*>(tile + slot<PAD>(r, k0)) = v[i];
        }
    }
    __syncthreads();
    // Transpose: unit (g, k) reads rows Q g .. Q g + Q - 1 of chunk column k, and writes output rows
    // x0 + k EPC + m (m < EPC) at output column y0 + Q g. Neighbouring lanes take neighbouring g.
#pragma unroll
    for (unsigned u = 0; u < UNITS; u++) {
        const unsigned unit = threadIdx.x + u * THREADS;
        const unsigned g = unit % GROUPS, k = unit / GROUPS;
        if (EDGE && (y0 + Q * g >= s.rows || x0 + k * EPC >= s.cols)) continue;
        uint4 v[Q];
#pragma unroll
        for (unsigned i = 0; i < Q; i++)
            v[i] = *reinterpret_cast<const uint4*>(tile + slot<PAD>(Q * g + i, k));
        unsigned char* p = out + (x0 + k * EPC) * out_row + (y0 + Q * g) * ES;
#pragma unroll
        for (unsigned m = 0; m < EPC; m++) {
            unsigned o[4];
            block_column(v, m, o);
            Store<Q * ES>::at(p + (unsigned long long)m * out_row, o);
        }
    }
}

template <int PAD>
__device__ __forceinline__ void fast_tiles(const unsigned char* __restrict__ in,
                                           unsigned char* __restrict__ out, unsigned char* tile,
                                           unsigned long long rows, unsigned long long cols) {
    Shape s;
    s.rows = rows;
    s.cols = cols;
    const unsigned tiles_x = (unsigned)((cols + TC - 1) / TC);
    const unsigned ntiles = tiles_x * (unsigned)((rows + TR - 1) / TR);
    for (unsigned t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const unsigned ty = t / tiles_x, tx = t - ty * tiles_x;
        const unsigned long long y0 = (unsigned long long)ty * TR, x0 = (unsigned long long)tx * TC;
        if (y0 + TR > rows || x0 + TC > cols)
            fast_tile<PAD, true>(in, out, tile, s, y0, x0);
        else
            fast_tile<PAD, false>(in, out, tile, s, y0, x0);
        // The next tile reuses `tile`.
        __syncthreads();
    }
}

template <int PAD>
__device__ __forceinline__ void slow_tiles(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                           unsigned char* smem, unsigned long long rows,
                                           unsigned long long cols) {
    elem_t(*tile)[TILE_DIM + PAD] = reinterpret_cast<elem_t(*)[TILE_DIM + PAD]>(smem);
    const unsigned tx_ = threadIdx.x % TILE_DIM, ty_ = threadIdx.x / TILE_DIM;
    const unsigned long long tiles_x = (cols + TILE_DIM - 1) / TILE_DIM;
    const unsigned long long tiles_y = (rows + TILE_DIM - 1) / TILE_DIM;
    const unsigned long long ntiles = tiles_x * tiles_y;
    for (unsigned long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        unsigned long long ty0 = t / tiles_x * TILE_DIM, tx0 = t % tiles_x * TILE_DIM;
        unsigned long long x = tx0 + tx_;
#pragma unroll
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            unsigned long long y = ty0 + ty_ + j;
            if (x < cols && y < rows) tile[ty_ + j][tx_] = in[y * cols + x];
        }
        __syncthreads();
        x = ty0 + tx_;  // a column of the output is a row of the input
#pragma unroll
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            unsigned long long y = tx0 + ty_ + j;
            if (x < rows && y < cols) out[y * rows + x] = tile[tx_][ty_ + j];
        }
        // The next tile reuses `tile`.
        __syncthreads();
    }
}

template <int PAD>
__device__ __forceinline__ void transpose_tiles(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                                unsigned long long rows, unsigned long long cols) {
    __shared__ __align__(16) unsigned char smem[SMEM_BYTES];
    const bool fast = (cols * ES) % 16 == 0 && (rows * ES) % 16 == 0 &&
                      (((unsigned long long)in | (unsigned long long)out) & 15) == 0 &&
                      // 32-bit tile numbers (t + gridDim.x included)
                      (cols + TC - 1) / TC * ((rows + TR - 1) / TR) <= 0x7FFFFFFFull;
    if (fast)
        fast_tiles<PAD>(reinterpret_cast<const unsigned char*>(in), reinterpret_cast<unsigned char*>(out),
                        smem, rows, cols);
    else
        slow_tiles<PAD>(in, out, smem, rows, cols);
}

// Both take 1D blocks of THREADS threads.
extern "C" __global__ void __launch_bounds__(THREADS)
    transpose_padded(const elem_t* in, elem_t* out, unsigned long long rows, unsigned long long cols) {
    transpose_tiles<1>(in, out, rows, cols);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    transpose_unpadded(const elem_t* in, elem_t* out, unsigned long long rows, unsigned long long cols) {
    transpose_tiles<0>(in, out, rows, cols);
}

// Two transposes without shared memory, for the cache lab. Both walk 32 x 32 tiles with 32 x 8
// blocks (one element per access, like the tiled kernels' slow path), so the only difference
// between them is where the reuse is served.
// naive: coalesced row reads, and each warp's writes scattered over 32 output rows (every write
// touches its own sector; L2 merges them).
extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_naive(const elem_t* __restrict__ in, elem_t* __restrict__ out, unsigned long long rows,
                    unsigned long long cols) {
    const unsigned long long tiles_x = (cols + TILE_DIM - 1) / TILE_DIM;
    const unsigned long long ntiles = tiles_x * ((rows + TILE_DIM - 1) / TILE_DIM);
    for (unsigned long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        unsigned long long ty0 = t / tiles_x * TILE_DIM, tx0 = t % tiles_x * TILE_DIM;
        unsigned long long x = tx0 + threadIdx.x;
#pragma unroll
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            unsigned long long y = ty0 + threadIdx.y + j;
            if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
        }
    }
}

// l1: coalesced row writes, and each warp's reads gathered from 32 input rows through the read-only
// path: the 32 lines of a tile are fetched once and served from L1 to the other 31 reads of each
// line, if they stay in the cache that long.
extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_l1(const elem_t* __restrict__ in, elem_t* __restrict__ out, unsigned long long rows,
                 unsigned long long cols) {
    const unsigned long long tiles_x = (cols + TILE_DIM - 1) / TILE_DIM;
    const unsigned long long ntiles = tiles_x * ((rows + TILE_DIM - 1) / TILE_DIM);
    for (unsigned long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        unsigned long long ty0 = t / tiles_x * TILE_DIM, tx0 = t % tiles_x * TILE_DIM;
        unsigned long long x = ty0 + threadIdx.x;  // a column of the output is a row of the input
#pragma unroll
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            unsigned long long y = tx0 + threadIdx.y + j;
            if (x < rows && y < cols) out[y * rows + x] = __ldg(in + x * cols + y);
        }
    }
}
