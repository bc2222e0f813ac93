// Included by matmul_warp.cu after its configuration (BM, BN, BK, WM, WN, STAGES, PAD, ...).

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
