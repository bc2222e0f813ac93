// CPU emulation of crates/smemkit/kernels/stencil.cu's shared-memory kernel (stencil1d), for
// checking its index arithmetic on a machine without a GPU: 256 std::threads per block with a
// std::barrier for __syncthreads, blocks run one after another, outputs compared bit for bit with a
// plain per-element reference under every boundary mode, aligned and misaligned inputs, lengths
// across tile edges. It says nothing about speed, and barriers are the only synchronisation
// emulated (no warps, no memory model). Usage, from the repository root:
//   for r in 1 3 8 16 17 64; do
//     g++ -std=c++20 -O1 -w -pthread -I. -DKERNEL='"crates/smemkit/kernels/stencil.cu"' \
//       -DELEM_T=float -DACC_T=float -DWEIGHTED=1 -DRADIUS=$r scripts/emulate_stencil.cpp \
//       -o /tmp/emu && /tmp/emu; done
// (double/double/1 and int/unsigned/0 likewise).
#include <barrier>
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <random>
struct dim { unsigned x, y, z; };
thread_local dim threadIdx;
dim blockIdx, gridDim, blockDim;
std::barrier<>* bar;
#define __syncthreads() bar->arrive_and_wait()
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
template <class T> T __ldg(const T* p) { return *p; }
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
#include KERNEL
typedef ACC_T acc_t;
int main(int argc, char** argv) {
    std::mt19937_64 rng(RADIUS * 1000 + sizeof(elem_t));
    long long lengths[] = {1, 2, 3, 255, 1000, 2047, 2048, 2049, 5000, 9000};
    stencil_weights wt;
    for (int j = 0; j < TAPS; j++) wt.w[j] = (elem_t)(WEIGHTED ? (double)(rng() % 2000) / 1000.0 - 1.0 : 0);
    int bad = 0;
    for (long long n : lengths) for (int b = 0; b < 3; b++) for (int off = 0; off < 2; off++) {
        std::vector<elem_t> storage(n + 8), out(n + 8);
        elem_t* in = (elem_t*)((char*)storage.data() + 16 * 0) + off;  // off=1: misaligned input
        for (long long i = 0; i < n; i++) in[i] = (elem_t)(WEIGHTED ? (double)(rng() % 2000000) / 1e6 - 1.0 : (double)(int)(rng() % 1000000));
        std::vector<elem_t> o(n + 8, (elem_t)-12345);
        gridDim = {3, 1, 1}; blockDim = {STENCIL_THREADS, 1, 1};
        for (unsigned blk = 0; blk < gridDim.x; blk++) {
            blockIdx = {blk, 0, 0};
            std::barrier<> br(STENCIL_THREADS); bar = &br;
            std::vector<std::thread> ts;
            for (int t = 0; t < STENCIL_THREADS; t++) ts.emplace_back([&, t] { threadIdx = {(unsigned)t, 0, 0}; stencil1d(in, o.data(), wt, n, b); });
            for (auto& t : ts) t.join();
        }
        for (long long i = 0; i < n; i++) {
            acc_t acc = 0;
            for (int j = 0; j < TAPS; j++) {
                elem_t x = load(in, i + j - RADIUS, n, b);
#if WEIGHTED
                acc = fma_step(wt.w[j], x, acc);
#else
                acc += (acc_t)x;
#endif
            }
            elem_t want = (elem_t)acc;
            if (memcmp(&want, &o[i], sizeof want) != 0) { if (bad++ < 5) printf("r=%d n=%lld b=%d off=%d i=%lld got %g want %g\n", RADIUS, n, b, off, i, (double)o[i], (double)want); }
        }
    }
    printf("r=%d size=%zu %s\n", RADIUS, sizeof(elem_t), bad ? "FAILED" : "ok");
    return bad != 0;
}
