// FP32 matrix multiply through shared memory, C = alpha * op(A) * op(B) + beta * C, row-major with
// leading dimensions, any M, N, K. Four kernels, each a step of the progression and each kept so
// that the steps can be measured against each other:
//
//   matmul_tiled16   the CUDA programming guide's kernel: 16 x 16 tiles of A and B in shared
//                    memory, one output per thread (every loaded value is used 16 times);
//   matmul_regblock  128 x 128 block tiles, BK = 8, 256 threads each computing 8 x 8 outputs in
//                    registers (every shared-memory value read feeds 8 multiply-adds);
//   matmul_vec4      the same tiling with 16-byte global loads, 16-byte shared-memory reads, A stored
//                    transposed in shared memory (k-major, so a thread's 4 rows are one float4) and
//                    padded by 4 floats per row so that the transposing stores do not conflict, and
//                    each thread's 8 rows and columns split into two groups of 4, 64 apart, so that a
//                    warp's float4 reads cover consecutive addresses;
//   matmul_async     matmul_vec4 with BK = 16 and two shared-memory stages: the next tiles are
//                    copied by cp.async (sm_80+) while the current ones are multiplied.
//
// Shared memory always holds op(A) as As[k][m] and op(B) as Bs[k][n]. A matrix operand is read as
// X(mn, k), mn being m for A and n for B; MN_CONTIG says whether consecutive mn are consecutive in
// memory (A transposed, B not transposed), which decides how a tile can be loaded.
//
// Host contract: M, N, K >= 1 and below 2^30 (so that index arithmetic cannot overflow an int);
// the leading dimensions cover the columns; vec_a/vec_b/vec_c are nonzero only when that matrix's
// leading dimension and base address are multiples of 4 floats. C is not read when beta == 0.
//
// Compiled with -DTRANS_A=0|1 -DTRANS_B=0|1.

#ifndef TRANS_A
#error "TRANS_A must be defined by the host"
#endif
#ifndef TRANS_B
#error "TRANS_B must be defined by the host"
#endif

#define A_MN_CONTIG (TRANS_A != 0)
#define B_MN_CONTIG (TRANS_B == 0)

typedef long long i64;

// Offset of X(mn, k).
template <bool MN_CONTIG>
__device__ __forceinline__ i64 offset(int mn, int k, i64 ld) {
    return MN_CONTIG ? (i64)k * ld + mn : (i64)mn * ld + k;
}

template <bool MN_CONTIG>
__device__ __forceinline__ float load_or_zero(const float* __restrict__ p, i64 ld, int mn, int k,
                                              int MN, int K) {
    return (mn < MN && k < K) ? p[offset<MN_CONTIG>(mn, k, ld)] : 0.0f;
}

// C(m, n) = alpha * acc + beta * C(m, n), reading C only when beta != 0 (BLAS semantics).
__device__ __forceinline__ float blend(float acc, float alpha, float beta, const float* old) {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *old;
}

// ---------------------------------------------------------------------------------------------
// The programming guide's kernel.

extern "C" __global__ void __launch_bounds__(256)
    matmul_tiled16(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                   int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta,
                   int vec_a, int vec_b, int vec_c) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        // Out-of-range elements load as zero, so the inner loop needs no bounds checks.
        As[ty][tx] = load_or_zero<A_MN_CONTIG>(a, lda, row, k0 + tx, M, K);
        Bs[ty][tx] = load_or_zero<B_MN_CONTIG>(b, ldb, col, k0 + ty, N, K);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        // The next iteration overwrites the tiles.
        __syncthreads();
    }
    if (row < M && col < N) {
        float* p = c + (i64)row * ldc + col;
        *p = blend(acc, alpha, beta, p);
    }
}

// ---------------------------------------------------------------------------------------------
// Register blocking.

#define BM 128
#define THREADS 256

// Fills S[k][mn] (row stride LDS) with the BK x BMN tile of X at (mn0, k0), zeros outside X.
// Consecutive threads read consecutive addresses: along mn when MN_CONTIG, along k otherwise.
template <bool MN_CONTIG, int BK, int LDS>
__device__ __forceinline__ void load_tile_scalar(float* S, const float* __restrict__ p, i64 ld,
                                                 int mn0, int k0, int MN, int K) {
#pragma unroll
    for (int i = 0; i < BM * BK / THREADS; ++i) {
        const int e = threadIdx.x + i * THREADS;
        const int mn = MN_CONTIG ? e % BM : e / BK;
        const int k = MN_CONTIG ? e / BM : e % BK;
        S[k * LDS + mn] = load_or_zero<MN_CONTIG>(p, ld, mn0 + mn, k0 + k, MN, K);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_regblock(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                    int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta,
                    int vec_a, int vec_b, int vec_c) {
    constexpr int BK = 8;
    __shared__ float As[BK * BM];
    __shared__ float Bs[BK * BM];
    // A 16 x 16 grid of threads, each owning rows ty*8.. and columns tx*8.. of the block tile.
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BM;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile_scalar<A_MN_CONTIG, BK, BM>(As, a, lda, m0, k0, M, K);
        load_tile_scalar<B_MN_CONTIG, BK, BM>(Bs, b, ldb, n0, k0, N, K);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ar[8], br[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) ar[i] = As[k * BM + ty * 8 + i];
#pragma unroll
            for (int j = 0; j < 8; ++j) br[j] = Bs[k * BM + tx * 8 + j];
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + ty * 8 + i;
        if (m >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int n = n0 + tx * 8 + j;
            if (n < N) {
                float* p = c + (i64)m * ldc + n;
                *p = blend(acc[i][j], alpha, beta, p);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Vectorised loads, transposed and padded tiles, split thread layout.

// 4 floats of padding per shared row: rows stay 16-byte aligned (132 * 4 = 528 bytes) and the
// transposing stores of a warp (4 consecutive k, 8 or 16 consecutive mn) land in distinct banks.
#define LDS (BM + 4)

// Fills S[k][mn] with 16-byte global loads when `vec`: 4 elements consecutive in memory per load,
// stored as one float4 into a row of S when MN_CONTIG, or scattered down a column of S (the
// transposed tile) otherwise. Groups that cross the edge of X, or layouts that are not 16-byte
// aligned, take bounds-checked scalar loads.
template <bool MN_CONTIG, int BK>
__device__ __forceinline__ void load_tile_vec(float* S, const float* __restrict__ p, i64 ld,
                                              int mn0, int k0, int MN, int K, bool vec) {
#pragma unroll
    for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
        const int g = threadIdx.x + i * THREADS;
        const int mn = MN_CONTIG ? (g % (BM / 4)) * 4 : g / (BK / 4);
        const int k = MN_CONTIG ? g / (BM / 4) : (g % (BK / 4)) * 4;
        const int gmn = mn0 + mn, gk = k0 + k;
        const bool full = MN_CONTIG ? (gk < K && gmn + 3 < MN) : (gmn < MN && gk + 3 < K);
        float v[4];
        if (vec && full) {
            // Aligned: ld, the base, mn0 + mn (or k0 + k) are all multiples of 4.
            const float4 t = *reinterpret_cast<const float4*>(p + offset<MN_CONTIG>(gmn, gk, ld));
            v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                v[j] = MN_CONTIG ? load_or_zero<true>(p, ld, gmn + j, gk, MN, K)
                                 : load_or_zero<false>(p, ld, gmn, gk + j, MN, K);
        }
        if (MN_CONTIG) {
            *reinterpret_cast<float4*>(&S[k * LDS + mn]) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) S[(k + j) * LDS + mn] = v[j];
        }
    }
}

// One BK-deep step on the split layout: a thread's rows are ty*4 + {0..3} and 64 + ty*4 + {0..3},
// its columns tx*4 + {0..3} and 64 + tx*4 + {0..3}; each k is four 16-byte shared-memory reads.
template <int BK>
__device__ __forceinline__ void mma_split(const float* As, const float* Bs, float (&acc)[8][8],
                                          int tx, int ty) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        const float4 a0 = *reinterpret_cast<const float4*>(&As[k * LDS + ty * 4]);
        const float4 a1 = *reinterpret_cast<const float4*>(&As[k * LDS + 64 + ty * 4]);
        const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k * LDS + tx * 4]);
        const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k * LDS + 64 + tx * 4]);
        const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
}

// Writes the split layout's 8 x 8 outputs: 16-byte stores where 4 columns are inside C and C is
// aligned, scalar stores with bounds checks at the edges.
__device__ __forceinline__ void store_split(float* __restrict__ c, i64 ldc, int M, int N, int m0,
                                            int n0, int tx, int ty, const float (&acc)[8][8],
                                            float alpha, float beta, bool vec) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (m >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int n = n0 + h * 64 + tx * 4;
            float* p = c + (i64)m * ldc + n;
            const float* r = &acc[i][h * 4];
            if (vec && n + 3 < N) {
                float4 v = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(p);
                    v.x += beta * old.x, v.y += beta * old.y, v.z += beta * old.z, v.w += beta * old.w;
                }
                *reinterpret_cast<float4*>(p) = v;
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (n + j < N) p[j] = blend(r[j], alpha, beta, p + j);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_vec4(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta, int vec_a,
                int vec_b, int vec_c) {
    constexpr int BK = 8;
    __shared__ __align__(16) float As[BK * LDS];
    __shared__ __align__(16) float Bs[BK * LDS];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BM;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile_vec<A_MN_CONTIG, BK>(As, a, lda, m0, k0, M, K, vec_a != 0);
        load_tile_vec<B_MN_CONTIG, BK>(Bs, b, ldb, n0, k0, N, K, vec_b != 0);
        __syncthreads();
        mma_split<BK>(As, Bs, acc, tx, ty);
        __syncthreads();
    }
    store_split(c, ldc, M, N, m0, n0, tx, ty, acc, alpha, beta, vec_c != 0);
}

// ---------------------------------------------------------------------------------------------
// Double buffering with asynchronous copies.

// Every cp.async below copies its whole size (16 or 4 bytes) from an address inside the operand:
// none is given a smaller src-size to zero-fill the rest. Such copies are what memcheck failed
// on (H200, A transposed with lda 68: a 16-byte copy with src-size 12 whose 16 bytes run past the
// end of A's allocation was the one access that differed from the cases that passed), and a
// src-size of 0 still takes an address. Shared elements outside X are zeroed by ordinary stores
// instead: the stage they go to was last read before a barrier every thread has passed, as for
// the copies.

// Copies 16 bytes from global `src` (16-byte aligned, all inside the operand) to shared `dst`
// without passing through registers. Below sm_80 (no cp.async) it copies synchronously.
__device__ __forceinline__ void cp_async16(float* dst, const float* src) {
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
#else
    *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
#endif
}

// One float.
__device__ __forceinline__ void cp_async4(float* dst, const float* src) {
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
#else
    *dst = *src;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// Starts the copies of the BK x BM tile of X at (mn0, k0) into S[k][mn]. Rows of S that are
// contiguous in memory go as 16-byte copies where all 4 elements are inside X, as 4-byte copies
// for a group that crosses the edge of X; otherwise each element is its own 4-byte copy into the
// transposed tile. Elements outside X are stored as zeros (no copy, no address outside X).
template <bool MN_CONTIG, int BK>
__device__ __forceinline__ void load_tile_async(float* S, const float* __restrict__ p, i64 ld,
                                                int mn0, int k0, int MN, int K, bool vec) {
    if (MN_CONTIG && vec) {
#pragma unroll
        for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
            const int g = threadIdx.x + i * THREADS;
            const int mn = (g % (BM / 4)) * 4, k = g / (BM / 4);
            const int gmn = mn0 + mn, gk = k0 + k;
            const int live = gk < K ? max(0, min(4, MN - gmn)) : 0;  // elements inside X
            float* d = &S[k * LDS + mn];
            if (live == 4) {
                cp_async16(d, p + offset<true>(gmn, gk, ld));
            } else if (live == 0) {
                *reinterpret_cast<float4*>(d) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            } else {
                const float* src = p + offset<true>(gmn, gk, ld);
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (j < live)
                        cp_async4(d + j, src + j);
                    else
                        d[j] = 0.0f;
                }
            }
        }
    } else {
#pragma unroll
        for (int i = 0; i < BM * BK / THREADS; ++i) {
            const int e = threadIdx.x + i * THREADS;
            const int mn = MN_CONTIG ? e % BM : e / BK;
            const int k = MN_CONTIG ? e / BM : e % BK;
            const int gmn = mn0 + mn, gk = k0 + k;
            if (gmn < MN && gk < K)
                cp_async4(&S[k * LDS + mn], p + offset<MN_CONTIG>(gmn, gk, ld));
            else
                S[k * LDS + mn] = 0.0f;
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_async(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                 int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta, int vec_a,
                 int vec_b, int vec_c) {
    constexpr int BK = 16;
    // Two stages of A and B: 2 * 2 * 16 * 132 * 4 = 33792 bytes, within the static 48 KiB.
    __shared__ __align__(16) float As[2][BK * LDS];
    __shared__ __align__(16) float Bs[2][BK * LDS];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BM;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    const int tiles = (K + BK - 1) / BK;
    load_tile_async<A_MN_CONTIG, BK>(As[0], a, lda, m0, 0, M, K, vec_a != 0);
    load_tile_async<B_MN_CONTIG, BK>(Bs[0], b, ldb, n0, 0, N, K, vec_b != 0);
    cp_async_commit();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < tiles) {
            // Stage cur ^ 1 was last read in iteration t - 1, which ended with a barrier.
            load_tile_async<A_MN_CONTIG, BK>(As[cur ^ 1], a, lda, m0, (t + 1) * BK, M, K, vec_a != 0);
            load_tile_async<B_MN_CONTIG, BK>(Bs[cur ^ 1], b, ldb, n0, (t + 1) * BK, N, K, vec_b != 0);
            cp_async_commit();
            cp_async_wait<1>();  // tile t has landed; tile t + 1 may still be in flight
        } else {
            cp_async_wait<0>();
        }
        // Every thread's copies of tile t are complete and visible to the block.
        __syncthreads();
        mma_split<BK>(As[cur], Bs[cur], acc, tx, ty);
        // The next iteration starts copies into the stage just read.
        __syncthreads();
    }
    store_split(c, ldc, M, N, m0, n0, tx, ty, acc, alpha, beta, vec_c != 0);
}
