// Times the weighted sums in numpy's order (hist_numpy_sums.cuh: atomics while the sums are exact
// in any order, one warp's walk in sample order for the other bins) at several slice and block sizes; every
// size and block size's partial sums must equal the first one's bit for bit. Needs only nvcc on the device.
// (Calls 3-4 of session 29 compared the earlier one-warp-per-block walk with the tracked atomics
// here: the lab as of commit 2445e5a.)
// Build: nvcc -arch=sm_90a -std=c++17 -I<kernels copy> bench/lab/np_sums_lab.cu
// Usage: np_sums_lab NBINS WEIGHTS LOG2N   (WEIGHTS: rand, 24-bit values in [0, 1) as torch.rand
// makes them; wide, normal times 2^[-20, 20])
#define SAMPLE_T float
#define SAMPLE_IS_FLOAT 1
#define SAMPLE_IS_F32 1
#define SAMPLE_IS_SIGNED 1
#define SMEMKIT_ONE_KERNEL 1
#define SMEMKIT_KERNEL_hist_np_sums_uniform32_f32 1
#define SMEMKIT_KERNEL_hist_np_chain_f32 1
#include "histogram.cu"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)

int main(int argc, char** argv) {
    const int nbins = argc > 1 ? atoi(argv[1]) : 1000;
    const std::string wkind = argc > 2 ? argv[2] : "rand";
    const int lg = argc > 3 ? atoi(argv[3]) : 28;
    const size_t n = (size_t)1 << lg;
    std::vector<float> hx(n), hw(n);
    std::mt19937_64 g(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> ue(-20.0f, 20.0f);
    for (size_t i = 0; i < n; ++i) {
        hx[i] = nd(g);
        if (wkind == "rand") hw[i] = (float)(g() >> 40) * 0x1p-24f;
        else hw[i] = nd(g) * exp2f(ue(g));
    }
    BinParams p;
    memset(&p, 0, sizeof p);
    p.nbins = nbins;
    p.first32 = -4.0f; p.last32 = 4.0f; p.first64 = -4.0; p.last64 = 4.0;
    p.start64 = -4.0; p.stop64 = 4.0; p.step64 = 8.0 / nbins; p.delta64 = 8.0; p.div64 = nbins;
    p.denom64 = 8.0; p.denom_is_f64 = 1; p.multiply = 1; p.scale64 = nbins / 8.0;
    float *dx, *dw, *part; unsigned long long* tl;
    double* out;
    CK(cudaMalloc(&dx, n * 4)); CK(cudaMalloc(&dw, n * 4));
    CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw.data(), n * 4, cudaMemcpyHostToDevice));
    const size_t blocks = (n + NP_BLOCK - 1) / NP_BLOCK;
    CK(cudaMalloc(&part, blocks * nbins * 4)); CK(cudaMalloc(&tl, 24));
    CK(cudaMalloc(&out, nbins * 8));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> first;
    struct V { std::string name; unsigned slice; unsigned threads; };
    std::vector<V> vs;
    for (unsigned th : {1024u, 256u})
        for (unsigned sl : {16384u, 8192u})
            vs.push_back({"library-s" + std::to_string(sl) + "-t" + std::to_string(th), sl, th});
    for (const V& v : vs) {
        const unsigned slice = std::min<unsigned>(v.slice, nbins);
        const unsigned slices = (nbins + slice - 1) / slice;
        const size_t smem = (size_t)slice * 12 + 16;
        const unsigned grid = (unsigned)(blocks * slices);
        auto launch = [&]() {
            CK(cudaMemsetAsync(out, 0, nbins * 8)); CK(cudaMemsetAsync(tl, 0, 24));
            CK(cudaFuncSetAttribute(hist_np_sums_uniform32_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            hist_np_sums_uniform32_f32<<<grid, v.threads, smem>>>(dx, n, dw, p, 0, blocks, slice, part, tl);
            hist_np_chain_f32<<<(nbins + 31) / 32, 256>>>(part, blocks, nbins, out);
        };
        std::vector<float> ms;
        for (int r = 0; r < 7; ++r) {
            CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float t; CK(cudaEventElapsedTime(&t, e0, e1)); if (r >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        std::vector<float> got(blocks * nbins);
        CK(cudaMemcpy(got.data(), part, got.size() * 4, cudaMemcpyDeviceToHost));
        bool same = true;
        if (first.empty()) first = got; else same = memcmp(first.data(), got.data(), got.size() * 4) == 0;
        printf("{\"op\": \"np_sums_lab\", \"variant\": \"%s\", \"nbins\": %d, \"weights\": \"%s\", \"n\": %zu, \"slice\": %u, \"ms\": %.4f, \"same_bits\": %s}\n",
               v.name.c_str(), nbins, wkind.c_str(), n, slice, ms[ms.size() / 2], same ? "true" : "false");
        fflush(stdout);
    }
    return 0;
}
