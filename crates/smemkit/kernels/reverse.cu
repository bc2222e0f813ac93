// Array reversal through shared memory, three ways: a compile-time sized (static) tile, an
// `extern __shared__` (dynamic) tile sized at launch, and one dynamic allocation carved into two
// arrays of different types. Each block stages a tile of the input in shared memory and writes it
// back mirrored, so that both the global reads and the global writes are coalesced.
//
// Compiled per element type: -DELEM_T=<C type>.

#ifndef ELEM_T
#error "ELEM_T must be defined by the host"
#endif
typedef ELEM_T elem_t;

#define STATIC_TILE 2048

// The tile [base, base + len) of the input lands mirrored at [n - base - len, n - base).
extern "C" __global__ void reverse_static(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                          unsigned long long n) {
    __shared__ elem_t tile[STATIC_TILE];
    for (unsigned long long base = (unsigned long long)blockIdx.x * STATIC_TILE; base < n;
         base += (unsigned long long)gridDim.x * STATIC_TILE) {
        unsigned len = n - base < STATIC_TILE ? (unsigned)(n - base) : STATIC_TILE;
        for (unsigned i = threadIdx.x; i < len; i += blockDim.x) tile[i] = in[base + i];
        __syncthreads();
        unsigned long long dst = n - base - len;
        for (unsigned j = threadIdx.x; j < len; j += blockDim.x) out[dst + j] = tile[len - 1 - j];
        // The next tile overwrites `tile`: every thread must have read its part first.
        __syncthreads();
    }
}

extern "C" __global__ void reverse_dynamic(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                           unsigned long long n, unsigned tile_len) {
    extern __shared__ __align__(16) unsigned char smem[];
    elem_t* tile = reinterpret_cast<elem_t*>(smem);
    for (unsigned long long base = (unsigned long long)blockIdx.x * tile_len; base < n;
         base += (unsigned long long)gridDim.x * tile_len) {
        unsigned len = n - base < tile_len ? (unsigned)(n - base) : tile_len;
        for (unsigned i = threadIdx.x; i < len; i += blockDim.x) tile[i] = in[base + i];
        __syncthreads();
        unsigned long long dst = n - base - len;
        for (unsigned j = threadIdx.x; j < len; j += blockDim.x) out[dst + j] = tile[len - 1 - j];
        __syncthreads();
    }
}

// One dynamic allocation holds two arrays: the staged values, and (after them, aligned for u32) the
// mirrored position each value goes to within the tile. The host sizes the allocation as
// carve_bytes(tile_len) in crates/smemkit/src/cuda/ops.rs.
extern "C" __global__ void reverse_carved(const elem_t* __restrict__ in, elem_t* __restrict__ out,
                                          unsigned long long n, unsigned tile_len) {
    extern __shared__ __align__(16) unsigned char smem[];
    elem_t* vals = reinterpret_cast<elem_t*>(smem);
    size_t pos_offset = ((size_t)tile_len * sizeof(elem_t) + 3) & ~(size_t)3;
    unsigned* pos = reinterpret_cast<unsigned*>(smem + pos_offset);
    for (unsigned long long base = (unsigned long long)blockIdx.x * tile_len; base < n;
         base += (unsigned long long)gridDim.x * tile_len) {
        unsigned len = n - base < tile_len ? (unsigned)(n - base) : tile_len;
        for (unsigned i = threadIdx.x; i < len; i += blockDim.x) {
            vals[i] = in[base + i];
            pos[len - 1 - i] = i;
        }
        __syncthreads();
        unsigned long long dst = n - base - len;
        for (unsigned j = threadIdx.x; j < len; j += blockDim.x) out[dst + j] = vals[pos[j]];
        __syncthreads();
    }
}
