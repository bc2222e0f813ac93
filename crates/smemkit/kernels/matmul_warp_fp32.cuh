// Included by matmul_warp.cu after its configuration (BM, BN, BK, WM, WN, STAGES, PAD, ...).

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
