// Included by matmul_warp.cu after its configuration (BM, BN, BK, WM, WN, STAGES, PAD, ...).

// ---------------------------------------------------------------------------------------------
// FP32 on the CUDA cores, fragments prefetched (PREFETCH=1): the same tiles, stages and operand
// traffic as `matmul_warp`, with two changes to the inner loop, which stalls where `matmul_warp`
// waits for the fragments it has just asked for:
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
