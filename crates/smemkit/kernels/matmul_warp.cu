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
// The device code: matmul_warp_pipeline.cuh (what every variant shares, the split-K reduction
// among it) and one header per kernel, the one the defines select: matmul_warp_fp32.cuh,
// matmul_warp_prefetch.cuh (PREFETCH=1), matmul_warp_tf32.cuh (TF32=1).
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

#include "matmul_warp_pipeline.cuh"

#if !TF32 && !PREFETCH
#include "matmul_warp_fp32.cuh"
#elif !TF32
#include "matmul_warp_prefetch.cuh"
#else
#include "matmul_warp_tf32.cuh"
#endif
