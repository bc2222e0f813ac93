// The pipeline every warp-tiled kernel shares: operand offsets, cp.async, the `Operand` stages
// of A and B, the block order and the split-K reduction.
// Included by matmul_warp.cu after its configuration (BM, BN, BK, WM, WN, STAGES, PAD, ...).

// Offset of X(mn, k).
template <bool MN_CONTIG>
__device__ __forceinline__ i64 offset(int mn, int k, i64 ld) {
    return MN_CONTIG ? (i64)k * ld + mn : (i64)mn * ld + k;
}

__device__ __forceinline__ float blend(float acc, float alpha, float beta, const float* old) {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *old;
}

// Whole copies only (16 or 4 bytes from inside the operand), never a src-size below the copy
// size for zero-filling: memcheck failed on such a copy at the end of an allocation (see
// matmul.cu). Shared elements outside X are stored as zeros by ordinary stores.
__device__ __forceinline__ void cp_async16(float* dst, const float* src) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}

__device__ __forceinline__ void cp_async4(float* dst, const float* src) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// One operand's traffic between global memory and a k-major stage S[k][mn] (row stride LDS) for
// BMN x BK tiles at mn0, taken in order k0 = kbase, kbase + BK, ... (each `start` issues the next
// tile).
// MN_CONTIG layouts are copied asynchronously; the others are loaded into `reg` by `start` and
// written into the stage by `finish`.
//
// With `vec` (16-byte aligned base and ld), a thread owns GROUPS groups of 4 elements consecutive
// in memory, only the tile that crosses K checks k, and without `vec` every element is its own
// bounds-checked access. A thread's groups lie a fixed STEP apart in the tile, all at the same mn
// (MN_CONTIG: consecutive groups STEP rows of k apart) or all at the same k (otherwise: STEP rows
// of mn apart), so one address (group 0's, advanced by a tile per `start`) and one bound serve
// them all: per-group pointers and bounds held in registers made BK 16 spill at 2 blocks per SM
// and left no room for double-buffered fragments.
template <bool MN_CONTIG, int BMN, int LDS>
struct Operand {
    static constexpr int GROUPS = BMN * BK / 4 / THREADS;  // 4-float groups per thread
    static constexpr int STEP = MN_CONTIG ? THREADS / (BMN / 4) : THREADS / (BK / 4);
    static_assert(THREADS % (MN_CONTIG ? BMN / 4 : BK / 4) == 0,
                  "a thread's groups share their mn (or k)");
    const float* __restrict__ p;
    i64 ld;
    int mn0, MN;
    bool vec;
    const float* ptr;  // group 0's address in the next tile (group i: STEP * i rows further)
    // MN_CONTIG: bytes of each group inside X along mn (0, 4, .., 16; the same for all groups);
    // otherwise: how many groups have their row inside X (those come first).
    int live;
    int sofs;  // group 0's offset in a stage (group i: STEP rows further)
    float reg[MN_CONTIG ? 1 : GROUPS * 4];

    // Position of group i within a tile.
    static __device__ __forceinline__ int group_mn(int i) {
        const unsigned g = threadIdx.x + i * THREADS;
        return (int)(MN_CONTIG ? (g % (BMN / 4)) * 4 : g / (BK / 4));
    }
    static __device__ __forceinline__ int group_k(int i) {
        const unsigned g = threadIdx.x + i * THREADS;
        return (int)(MN_CONTIG ? g / (BMN / 4) : (g % (BK / 4)) * 4);
    }
    // Distance from group 0 to group i in memory, in elements.
    __device__ __forceinline__ i64 group_offset(int i) const { return (i64)(i * STEP) * ld; }

    // The first tile `start` issues is the one at k0 = kbase.
    __device__ __forceinline__ void init(const float* __restrict__ p_, i64 ld_, int mn0_, int MN_,
                                         int kbase, bool vec_) {
        p = p_, ld = ld_, mn0 = mn0_, MN = MN_, vec = vec_;
        const int gmn = mn0 + group_mn(0);
        if (MN_CONTIG) {
            live = 4 * max(0, min(4, MN - gmn));
        } else {
            live = 0;
#pragma unroll
            for (int i = 0; i < GROUPS; ++i) live += mn0 + group_mn(i) < MN;
        }
        // Only formed, never dereferenced, where group 0 lies outside X.
        ptr = p + offset<MN_CONTIG>(gmn, kbase + group_k(0), ld);
        sofs = group_k(0) * LDS + group_mn(0);
    }
    // Group i's offset in a stage.
    __device__ __forceinline__ int stage_offset(int i) const {
        return sofs + i * STEP * (MN_CONTIG ? LDS : 1);
    }

    // MN_CONTIG: start the copies of the tile at k0 into S (elements outside X become zeros).
    __device__ __forceinline__ void copy_async(float* S, int k0, int K) {
        if (vec) {
            const bool full = k0 + BK <= K;
#pragma unroll
            for (int i = 0; i < GROUPS; ++i) {
                const int k = group_k(i);
                const int bytes = (full || k0 + k < K) ? live : 0;
                const float* src = ptr + group_offset(i);
                float* d = S + stage_offset(i);
                if (bytes == 16) {
                    cp_async16(d, src);
                } else if (bytes == 0) {
                    *reinterpret_cast<float4*>(d) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                } else {
                    // A group across the edge of X along mn: its elements inside X one by one.
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if (4 * j < bytes)
                            cp_async4(d + j, src + j);
                        else
                            d[j] = 0.0f;
                    }
                }
            }
            ptr += (i64)BK * ld;
        } else {
            // The same groups, element by element (4-byte copies need no alignment).
            const int gmn = mn0 + group_mn(0);
#pragma unroll
            for (int i = 0; i < GROUPS; ++i) {
                const int gk = k0 + group_k(i);
                const float* src = p + offset<true>(gmn, gk, ld);
                float* d = S + stage_offset(i);
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (gmn + j < MN && gk < K)
                        cp_async4(d + j, src + j);
                    else
                        d[j] = 0.0f;
                }
            }
        }
    }

    // k contiguous: load the tile's groups of 4 consecutive k into registers.
    __device__ __forceinline__ void fetch(int k0, int K) {
        const bool full = k0 + BK <= K;
        const int k = group_k(0);
#pragma unroll
        for (int i = 0; i < GROUPS; ++i) {
            if (vec && i < live && (full || k0 + k + 3 < K)) {
                const float4 t = *reinterpret_cast<const float4*>(ptr + group_offset(i));
                reg[4 * i] = t.x, reg[4 * i + 1] = t.y, reg[4 * i + 2] = t.z, reg[4 * i + 3] = t.w;
            } else {
                const int gmn = mn0 + group_mn(i);
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    reg[4 * i + j] =
                        (gmn < MN && k0 + k + j < K) ? p[offset<false>(gmn, k0 + k + j, ld)] : 0.0f;
            }
        }
        ptr += BK;
    }

    // Writes the fetched groups down the columns of S (the transposed tile).
    __device__ __forceinline__ void stash(float* S) const {
#pragma unroll
        for (int i = 0; i < GROUPS; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) S[stage_offset(i) + j * LDS] = reg[4 * i + j];
        }
    }

    // Starts loading the next tile (at k0) into stage S: asynchronously, or into registers (then
    // `finish`).
    __device__ __forceinline__ void start(float* S, int k0, int K) {
        if (MN_CONTIG)
            copy_async(S, k0, K);
        else
            fetch(k0, K);
    }

    __device__ __forceinline__ void finish(float* S) const {
        if (!MN_CONTIG) stash(S);
    }

    // `start` for a tile known to lie inside X (the block's rows or columns inside M or N, the
    // whole BK inside K, `vec`): no bounds, no size choices, no branches. The per-tile checks of
    // `start`, taken on every tile, cost fixed-latency waits and branch resolution that cuBLAS's
    // kernel does not pay (ncu figures in bench/NOTES.md).
    __device__ __forceinline__ void start_inside(float* S) {
#pragma unroll
        for (int i = 0; i < GROUPS; ++i) {
            if (MN_CONTIG) {
                cp_async16(S + stage_offset(i), ptr + group_offset(i));
            } else {
                const float4 t = *reinterpret_cast<const float4*>(ptr + group_offset(i));
                reg[4 * i] = t.x, reg[4 * i + 1] = t.y, reg[4 * i + 2] = t.z, reg[4 * i + 3] = t.w;
            }
        }
        ptr += MN_CONTIG ? (i64)BK * ld : (i64)BK;
    }
};

// The block's tile of C, with GROUP_M block rows per group: blocks pid, pid + 1, ... walk down a
// group's rows before moving to the next column, so a wave of resident blocks touches few panels.
__device__ __forceinline__ void block_tile(int M, int N, int& m0, int& n0) {
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = pid % per_group;
    m0 = (first_m + in_group % rows) * BM;
    n0 = (in_group / rows) * BN;
}

// Split K: gridDim.y blocks share each tile of C, block y taking K tiles [t0, t1) and writing its
// partial product to slice y of a workspace (the host passes it as C, with ldc = N, alpha 1 and
// beta 0), which `matmul_splitk_reduce` sums into C. gridDim.y = 1 is the plain product.
// Returns the offset of the block's slice of C.
__device__ __forceinline__ i64 k_range(int K, int M, i64 ldc, int& t0, int& tiles) {
    const int all = (K + BK - 1) / BK;
    t0 = (int)((i64)blockIdx.y * all / gridDim.y);
    tiles = (int)((i64)(blockIdx.y + 1) * all / gridDim.y) - t0;
    return (i64)blockIdx.y * M * ldc;
}

// C = alpha * (sum of the `splits` slices of w, each M x N dense) + beta * C (C read only when
// beta != 0), in a fixed order: the result does not depend on scheduling.
extern "C" __global__ void matmul_splitk_reduce(const float* __restrict__ w, float* __restrict__ c,
                                                int M, int N, i64 ldc, int splits, float alpha,
                                                float beta) {
    const i64 total = (i64)M * N;
    for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (i64)gridDim.x * blockDim.x) {
        float sum = 0.0f;
        for (int j = 0; j < splits; ++j) sum += w[j * total + e];
        float* p = c + (e / N) * ldc + e % N;
        *p = blend(sum, alpha, beta, p);
    }
}
