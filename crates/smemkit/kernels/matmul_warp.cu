// FP32 matrix multiply with warp tiling and a multi-stage shared-memory pipeline, C = alpha * op(A)
// * op(B) + beta * C (row-major, leading dimensions, any M, N, K), plus an optional TF32
// tensor-core variant built on the same pipeline. One configuration per compilation, so that the
// autotuner can compare tile shapes:
//
//   BM x BN   block tile of C;            BK       depth of one shared-memory stage;
//   WM x WN   warp tile (WM/8 * WN/8 = 32: each thread owns 8 x 8 outputs, as 2 x 2 sub-tiles of
//             4 x 4, so that every fragment read from shared memory is one 16-byte load; with
//             PREFETCH, WM/8 lane rows and 8 x 8 or 8 x 16 outputs per lane);
//   STAGES    shared-memory stages (2 = double buffering);  MINB  blocks per SM to aim for;
//   PAD       floats of padding per shared-memory row (rows stay 16-byte aligned);
//   PREFETCH  1: the FP32 loop with register double-buffered fragments and one barrier per tile,
//             whose tiles inside A and B load without checks and whose edge tiles are shifted
//             inside (see its section below); 0: the loop that reads each step's fragments when
//             needed, every load checked.
//
// Shared memory always holds op(A) as As[k][m] and op(B) as Bs[k][n] (k-major). An operand whose
// memory layout already has consecutive m (or n) consecutive (A transposed, B not transposed) is
// copied by cp.async straight into its stage (16 bytes per copy when aligned); the other layout
// (k contiguous) goes through registers: 16-byte global loads issued before the current stage is
// multiplied and stored transposed after it, so that their latency hides behind the arithmetic.
//
// The warps of a block form a (BM/WM) x (BN/WN) grid; the 32 lanes of a warp a (WM/8) x (WN/8)
// grid. A lane's rows are wm + s*WM/2 + tm*4 + {0..3} (s = 0, 1), its columns wn + s*WN/2 + tn*4 +
// {0..3}: per k, a warp reads WM/8 distinct float4 of A and WN/8 of B, consecutive, so without bank
// conflicts. Blocks are numbered in groups of GROUP_M block rows so that consecutive blocks share
// panels of A and B in L2.
//
// Host contract: as matmul.cu (M, N, K >= 1, below 2^30; vec_* only where base and ld are
// multiples of 4 floats; C not read when beta == 0); the grid is exactly ceil(M/BM) * ceil(N/BN)
// blocks along x (times the K splits along y, see k_range) of THREADS threads, with
// STAGES * BK * (BM + BN + 2 PAD) * 4 bytes of dynamic shared memory.

#ifndef TRANS_A
#error "TRANS_A must be defined by the host"
#endif
#ifndef TRANS_B
#error "TRANS_B must be defined by the host"
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef PAD
#define PAD 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef TF32
#define TF32 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif

#define A_MN_CONTIG (TRANS_A != 0)
#define B_MN_CONTIG (TRANS_B == 0)

typedef long long i64;

constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int LDA_S = BM + PAD, LDB_S = BN + PAD;
constexpr int A_STAGE = BK * LDA_S, B_STAGE = BK * LDB_S;

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
static_assert(BK % 8 == 0, "BK must be a multiple of 8");
static_assert(PAD % 4 == 0, "rows must stay 16-byte aligned");
static_assert(STAGES >= 2, "at least two stages");
static_assert((BM * BK / 4) % THREADS == 0 && (BN * BK / 4) % THREADS == 0,
              "every thread copies whole 4-float groups of each tile");
#if TF32
static_assert(PREFETCH == 0, "the prefetching loop is FP32 only");
static_assert(WM % 16 == 0 && WN % 8 == 0, "TF32 warp tiles are made of 16 x 8 mma tiles");
#endif

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
    // whole BK inside K, `vec`): no bounds, no size choices, no branches. ncu on the 8 x 16 prefetching kernel
    // (4224 x 4096 x 4096) put 0.20 cycles per issued instruction in fixed-latency waits and 0.05
    // in branch resolution against cuBLAS's 0.03 and 0.00, with 12x its branches: the per-tile
    // checks of `start`, taken on every tile.
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

#if !TF32 && !PREFETCH

// ---------------------------------------------------------------------------------------------
// FP32 on the CUDA cores.

static_assert((WM / 8) * (WN / 8) == 32, "a warp's lanes tile WM x WN with 8 x 8 each");

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
    matmul_warp(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta,
                int vec_a, int vec_b, int vec_c) {
    extern __shared__ __align__(16) float smem[];
    float* As = smem;
    float* Bs = smem + STAGES * A_STAGE;
    int m0, n0;
    block_tile(M, N, m0, n0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int tm = lane / (WN / 8), tn = lane % (WN / 8);
    const int ra = wm + tm * 4, rb = wn + tn * 4;  // first row / column of sub-tile 0

    Operand<A_MN_CONTIG, BM, LDA_S> opa;
    Operand<B_MN_CONTIG, BN, LDB_S> opb;
    int t0, tiles;
    c += k_range(K, M, ldc, t0, tiles);
    opa.init(a, lda, m0, M, t0 * BK, vec_a != 0);
    opb.init(b, ldb, n0, N, t0 * BK, vec_b != 0);

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    // Prologue: stages 0 .. STAGES-2 (register-staged parts are stored at once).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            opa.start(As + s * A_STAGE, (t0 + s) * BK, K);
            opb.start(Bs + s * B_STAGE, (t0 + s) * BK, K);
            opa.finish(As + s * A_STAGE);
            opb.finish(Bs + s * B_STAGE);
        }
        cp_async_commit();  // one group per stage, empty or not, so that the counting holds
    }
    for (int t = 0; t < tiles; ++t) {
        // Groups committed so far: STAGES - 1 + t; tile t is group t.
        cp_async_wait<STAGES - 2>();
        // Tile t is visible to the block, and every thread is done with tile t - 1, whose stage
        // the loads below refill.
        __syncthreads();
        const int nt = t + STAGES - 1, ns = nt % STAGES;
        if (nt < tiles) {
            opa.start(As + ns * A_STAGE, (t0 + nt) * BK, K);
            opb.start(Bs + ns * B_STAGE, (t0 + nt) * BK, K);
        }
        cp_async_commit();
        const float* as = As + (t % STAGES) * A_STAGE;
        const float* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&as[k * LDA_S + ra]);
            const float4 a1 = *reinterpret_cast<const float4*>(&as[k * LDA_S + ra + WM / 2]);
            const float4 b0 = *reinterpret_cast<const float4*>(&bs[k * LDB_S + rb]);
            const float4 b1 = *reinterpret_cast<const float4*>(&bs[k * LDB_S + rb + WN / 2]);
            const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
        // Stage ns was last read for tile t - 1 (before this iteration's barrier); tile nt is
        // read after the barrier of iteration nt >= t + 1.
        if (nt < tiles) {
            opa.finish(As + ns * A_STAGE);
            opb.finish(Bs + ns * B_STAGE);
        }
    }
    cp_async_wait<0>();  // only empty groups can remain; leave none behind

    const bool vc = vec_c != 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + ra + (i < 4 ? i : WM / 2 + i - 4);
        if (m >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int n = n0 + rb + h * (WN / 2);
            float* p = c + (i64)m * ldc + n;
            const float* r = &acc[i][h * 4];
            if (vc && n + 3 < N) {
                float4 v = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(p);
                    v.x += beta * old.x, v.y += beta * old.y, v.z += beta * old.z,
                        v.w += beta * old.w;
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

#elif !TF32

// ---------------------------------------------------------------------------------------------
// FP32 on the CUDA cores, fragments prefetched (PREFETCH=1): the same tiles, stages and operand
// traffic as `matmul_warp`, with two changes to the inner loop, which at 80 % of cuBLAS stalls
// where `matmul_warp` waits for the fragments it has just asked for:
//
// - Register double-buffering: the fragments of step k + 1 are read from shared memory before
//   the FMAs of step k, so that their latency hides behind those FMAs within the warp, not only
//   behind other warps.
// - One barrier per tile, placed before the last step of the tile: the tile's last fragments are
//   already in registers, so every read of the stage is done and the stage can be refilled; after
//   the barrier, the first fragments of the next tile are read while the last step's FMAs run.
//   The next tile's loads are issued at the top of each tile into the stage freed by the previous
//   barrier, and register-staged ones are stored just before the barrier.
//
// Each lane owns TM x TN outputs (TM = 8: WM / 8 lane rows; TN = WN / (32 / (WM / 8)), 8 or 16)
// as (TM/4) x (TN/4) sub-tiles of 4 x 4 spaced WM/2 rows and WN/(TN/4) columns apart, so that
// each fragment read is one 16-byte load and a warp's reads of one k are consecutive float4s
// (broadcast to the lanes that share them). TN = 16 (warp tiles of 64 x 64, 128 accumulators) is
// meant for one block of 8 warps per SM: more reuse of each fragment (6 loads per 128 FMAs
// against 4 per 64), paid for with fewer warps to switch to.

constexpr int TM = 8;
constexpr int LANES_M = WM / TM, LANES_N = 32 / LANES_M;
constexpr int TN = WN / LANES_N;
constexpr int FM = TM / 4, FN = TN / 4;  // float4 fragments per k per lane, of A and of B

static_assert(WM % TM == 0 && 32 % LANES_M == 0 && LANES_M * LANES_N == 32,
              "a warp's lanes form a grid of WM / 8 rows");
static_assert(WN % (4 * LANES_N) == 0, "each lane owns whole float4 columns");
static_assert(BK % 2 == 0, "the fragment buffers alternate within a tile");

// `as` and `bs` point at the lane's first fragment of the stage: every read below is at a
// constant offset from them, which ptxas folds into the load (one address register per operand).
__device__ __forceinline__ void load_fragments(float (&fa)[TM], float (&fb)[TN],
                                               const float* as, const float* bs, int k) {
#pragma unroll
    for (int s = 0; s < FM; ++s) {
        const float4 v = *reinterpret_cast<const float4*>(as + (k * LDA_S + s * (WM / FM)));
        fa[4 * s] = v.x, fa[4 * s + 1] = v.y, fa[4 * s + 2] = v.z, fa[4 * s + 3] = v.w;
    }
#pragma unroll
    for (int s = 0; s < FN; ++s) {
        const float4 v = *reinterpret_cast<const float4*>(bs + (k * LDB_S + s * (WN / FN)));
        fb[4 * s] = v.x, fb[4 * s + 1] = v.y, fb[4 * s + 2] = v.z, fb[4 * s + 3] = v.w;
    }
}

// Tile t of the prefetching loop: issues the loads of tile t + STAGES - 1 into stage ws and
// multiplies tile t (stage rs), then moves both stages on. With INSIDE the caller guarantees that
// the tile being loaded exists and lies inside A and B (`start_inside`).
template <bool INSIDE, class OpA, class OpB>
__device__ __forceinline__ void multiply_tile(int t, int tiles, int t0, int K, OpA& opa, OpB& opb,
                                              float* As, float* Bs, int ra, int rb, int& rs,
                                              int& ws, float (&fa)[2][TM], float (&fb)[2][TN],
                                              float (&acc)[TM][TN]) {
    // Groups committed before this one: STAGES - 1 + t, tile j being group j.
    const int nt = t + STAGES - 1;
    const bool loads = INSIDE || nt < tiles;
    if (INSIDE) {
        opa.start_inside(As + ws * A_STAGE);
        opb.start_inside(Bs + ws * B_STAGE);
    } else if (loads) {
        opa.start(As + ws * A_STAGE, (t0 + nt) * BK, K);
        opb.start(Bs + ws * B_STAGE, (t0 + nt) * BK, K);
    }
    cp_async_commit();
    const float* as = As + rs * A_STAGE + ra;
    const float* bs = Bs + rs * B_STAGE + rb;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        const int cur = k % 2, nxt = cur ^ 1;
        if (k + 1 < BK) {
            load_fragments(fa[nxt], fb[nxt], as, bs, k + 1);
        } else {
            if (loads) {
                opa.finish(As + ws * A_STAGE);
                opb.finish(Bs + ws * B_STAGE);
            }
            // Tile t + 1 (group t + 1) has landed once at most STAGES - 2 younger groups are
            // pending; after the barrier it is visible, and no thread reads tile t's stage
            // any more (its last fragments are in registers).
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            ws = rs;
            rs = rs + 1 == STAGES ? 0 : rs + 1;
            // After the last tile there is nothing to prefetch; reading tile t's stage again
            // keeps the reads on written memory.
            const int r = INSIDE || t + 1 < tiles ? rs : ws;
            load_fragments(fa[nxt], fb[nxt], As + r * A_STAGE + ra, Bs + r * B_STAGE + rb, 0);
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[cur][i], fb[cur][j], acc[i][j]);
    }
}

// The entry point keeps the name `matmul_warp`: the host tells the two loops apart by PREFETCH.
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
    matmul_warp(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta,
                int vec_a, int vec_b, int vec_c) {
    extern __shared__ __align__(16) float smem[];
    float* As = smem;
    float* Bs = smem + STAGES * A_STAGE;
    int lm0, ln0;  // the tile computed, which the stored tile (m0, n0) may shift (see below)
    {
        int m0, n0;
        block_tile(M, N, m0, n0);
        // A block tile that crosses M (or N) is computed shifted back to end at M (N), so that
        // its loads lie inside A and B and take the unchecked path; the rows (columns) it shares
        // with its neighbour are computed twice and stored once, by the block that owns them
        // (below m0 and n0 nothing is stored). The shift keeps 16-byte groups aligned: along an
        // mn-contiguous operand it needs that dimension to be a multiple of 4, and N always (C's
        // 16-byte stores).
        lm0 = m0 + BM > M && M >= BM && (!A_MN_CONTIG || M % 4 == 0) ? M - BM : m0;
        ln0 = n0 + BN > N && N >= BN && N % 4 == 0 ? N - BN : n0;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int ra = wm + (lane / LANES_N) * 4, rb = wn + (lane % LANES_N) * 4;

    Operand<A_MN_CONTIG, BM, LDA_S> opa;
    Operand<B_MN_CONTIG, BN, LDB_S> opb;
    int t0, tiles;
    c += k_range(K, M, ldc, t0, tiles);
    opa.init(a, lda, lm0, M, t0 * BK, vec_a != 0);
    opb.init(b, ldb, ln0, N, t0 * BK, vec_b != 0);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            opa.start(As + s * A_STAGE, (t0 + s) * BK, K);
            opb.start(Bs + s * B_STAGE, (t0 + s) * BK, K);
            opa.finish(As + s * A_STAGE);
            opb.finish(Bs + s * B_STAGE);
        }
        cp_async_commit();
    }

    float fa[2][TM], fb[2][TN];
    if (tiles > 0) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        load_fragments(fa[0], fb[0], As + ra, Bs + rb, 0);
    }
    // rs: the stage of tile t; ws: the stage that tile t + STAGES - 1 goes to, the one tile t - 1
    // occupied (free since the barrier that ended tile t - 1).
    int rs = 0, ws = STAGES - 1;
    // The tiles whose loads lie wholly inside A and B (the block's tile inside M and N, both
    // operands 16-byte aligned, whole BK steps inside K) run without the bounds checks; the
    // rest (the last STAGES - 1 tiles, edge blocks, unaligned operands) with them.
    const bool inside = vec_a != 0 && vec_b != 0 && lm0 + BM <= M && ln0 + BN <= N;
    const int whole = K / BK - t0;  // tiles from t0 on that end inside K
    const int fast = inside ? max(0, min(tiles, whole) - (STAGES - 1)) : 0;
    int t = 0;
    for (; t < fast; ++t)
        multiply_tile<true>(t, tiles, t0, K, opa, opb, As, Bs, ra, rb, rs, ws, fa, fb, acc);
    for (; t < tiles; ++t)
        multiply_tile<false>(t, tiles, t0, K, opa, opb, As, Bs, ra, rb, rs, ws, fa, fb, acc);
    cp_async_wait<0>();  // only empty groups can remain; leave none behind

    // The stored tile, derived again here rather than kept in registers through the loop.
    int m0, n0;
    block_tile(M, N, m0, n0);
    const bool vc = vec_c != 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = lm0 + ra + (i / 4) * (WM / FM) + i % 4;
        if (m < m0 || m >= M) continue;
#pragma unroll
        for (int h = 0; h < FN; ++h) {
            // n, n0 and ln0 are multiples of 4: a group of 4 columns is wholly the block's or not
            const int n = ln0 + rb + h * (WN / FN);
            if (n < n0) continue;
            float* p = c + (i64)m * ldc + n;
            const float* r = &acc[i][h * 4];
            if (vc && n + 3 < N) {
                float4 v = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(p);
                    v.x += beta * old.x, v.y += beta * old.y, v.z += beta * old.z,
                        v.w += beta * old.w;
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

#else

// ---------------------------------------------------------------------------------------------
// TF32 on the tensor cores (mma.sync m16n8k8): inputs rounded to TF32 (10-bit mantissa),
// products accumulated in FP32. Never chosen unless asked for. Each warp owns a WM x WN tile made
// of (WM/16) x (WN/8) mma tiles; fragments are read from the same k-major stages as the FP32
// kernel (PAD 8 makes those reads conflict-free).

constexpr int MT = WM / 16, NT = WN / 8;

__device__ __forceinline__ unsigned to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
    matmul_tf32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                int M, int N, int K, i64 lda, i64 ldb, i64 ldc, float alpha, float beta,
                int vec_a, int vec_b, int vec_c) {
    extern __shared__ __align__(16) float smem[];
    float* As = smem;
    float* Bs = smem + STAGES * A_STAGE;
    int m0, n0;
    block_tile(M, N, m0, n0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int gid = lane / 4, tig = lane % 4;  // the PTX ISA's groupID and threadID_in_group

    Operand<A_MN_CONTIG, BM, LDA_S> opa;
    Operand<B_MN_CONTIG, BN, LDB_S> opb;
    int t0, tiles;
    c += k_range(K, M, ldc, t0, tiles);
    opa.init(a, lda, m0, M, t0 * BK, vec_a != 0);
    opb.init(b, ldb, n0, N, t0 * BK, vec_b != 0);

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            opa.start(As + s * A_STAGE, (t0 + s) * BK, K);
            opb.start(Bs + s * B_STAGE, (t0 + s) * BK, K);
            opa.finish(As + s * A_STAGE);
            opb.finish(Bs + s * B_STAGE);
        }
        cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int nt = t + STAGES - 1, ns = nt % STAGES;
        if (nt < tiles) {
            opa.start(As + ns * A_STAGE, (t0 + nt) * BK, K);
            opb.start(Bs + ns * B_STAGE, (t0 + nt) * BK, K);
        }
        cp_async_commit();
        const float* as = As + (t % STAGES) * A_STAGE;
        const float* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
        for (int k = 0; k < BK; k += 8) {
            unsigned af[MT][4], bf[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                const int m = wm + i * 16 + gid;
                af[i][0] = to_tf32(as[(k + tig) * LDA_S + m]);
                af[i][1] = to_tf32(as[(k + tig) * LDA_S + m + 8]);
                af[i][2] = to_tf32(as[(k + tig + 4) * LDA_S + m]);
                af[i][3] = to_tf32(as[(k + tig + 4) * LDA_S + m + 8]);
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int n = wn + j * 8 + gid;
                bf[j][0] = to_tf32(bs[(k + tig) * LDB_S + n]);
                bf[j][1] = to_tf32(bs[(k + tig + 4) * LDB_S + n]);
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    asm volatile(
                        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                        : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]),
                          "+f"(acc[i][j][3])
                        : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]),
                          "r"(bf[j][0]), "r"(bf[j][1]));
        }
        if (nt < tiles) {
            opa.finish(As + ns * A_STAGE);
            opb.finish(Bs + ns * B_STAGE);
        }
    }
    cp_async_wait<0>();

    // Accumulator r of mma tile (i, j) is C(wm + i*16 + gid + 8*(r/2), wn + j*8 + 2*tig + r%2).
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int m = m0 + wm + i * 16 + gid + 8 * (r / 2);
                const int n = n0 + wn + j * 8 + 2 * tig + r % 2;
                if (m < M && n < N) {
                    float* p = c + (i64)m * ldc + n;
                    *p = blend(acc[i][j][r], alpha, beta, p);
                }
            }
    (void)vec_c;
}

#endif
