// Matrix transpose through shared-memory tiles. A block reads a 32 x 32 tile with coalesced row
// reads, and writes it transposed with coalesced row writes; the tile is read column-wise in between.
// Unpadded, the 32 elements of a column share one bank (for 4-byte elements): a 32-way conflict.
// Padded by one element per row, they fall in 32 distinct banks. Both are kept so the bank-conflict
// lab can measure the difference.
//
// Compiled per element type: -DELEM_T=<C type>.

#ifndef ELEM_T
#error "ELEM_T must be defined by the host"
#endif
typedef ELEM_T elem_t;

#define TILE_DIM 32
#define BLOCK_ROWS 8

template <int PAD>
__device__ __forceinline__ void transpose_tiles(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                                unsigned long long rows, unsigned long long cols) {
    __shared__ elem_t tile[TILE_DIM][TILE_DIM + PAD];
    const unsigned long long tiles_x = (cols + TILE_DIM - 1) / TILE_DIM;
    const unsigned long long tiles_y = (rows + TILE_DIM - 1) / TILE_DIM;
    const unsigned long long ntiles = tiles_x * tiles_y;
    for (unsigned long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        unsigned long long ty0 = t / tiles_x * TILE_DIM, tx0 = t % tiles_x * TILE_DIM;
        unsigned long long x = tx0 + threadIdx.x;
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            unsigned long long y = ty0 + threadIdx.y + j;
            if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[y * cols + x];
        }
        __syncthreads();
        x = ty0 + threadIdx.x;  // a column of the output is a row of the input
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            unsigned long long y = tx0 + threadIdx.y + j;
            if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y + j];
        }
        // The next tile reuses `tile`.
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_padded(const elem_t* in, elem_t* out, unsigned long long rows, unsigned long long cols) {
    transpose_tiles<1>(in, out, rows, cols);
}

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_unpadded(const elem_t* in, elem_t* out, unsigned long long rows, unsigned long long cols) {
    transpose_tiles<0>(in, out, rows, cols);
}

// Two transposes without shared memory, for the cache lab. Both walk the same 32 x 32 tiles with the
// same 32 x 8 blocks as the tiled kernels, so the only difference is where the reuse is served.
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
