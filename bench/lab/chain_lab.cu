// Times est_chain_walk (est_chain.cuh) alone on generated bfloat16 data and checks its total
// against the host's one-after-another sum: a bench for the chain's inner loop that needs only
// nvcc on the device (no Rust build). Build: nvcc -arch=sm_90a -std=c++17 -I<kernels copy>
//   -DSAMPLE_T="unsigned short" -DSAMPLE_KIND=5 bench/lab/chain_lab.cu
// Usage: chain_lab DIST LOG2N   (DIST: normal | magnitude | alternating | halfway | cubes)
#include "estimate.cu"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>
#include <string>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
static float hb2f(unsigned short h) { unsigned u = (unsigned)h << 16; float f; memcpy(&f, &u, 4); return f; }
static unsigned short hf2b(float x) { unsigned u; memcpy(&u, &x, 4); if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0; return (unsigned short)((u + 0x7fff + ((u >> 16) & 1)) >> 16); }
// The latency of one dependent bfloat16 add (the chain's floor): `steps` adds in a row on
// registers, 8 independent chains per thread's call timed alone with clock64.
__global__ void bf16_add_latency(unsigned short seed, int steps, long long* cycles, unsigned short* sink) {
    unsigned short t = seed, v = (unsigned short)(seed ^ 0x3c00u);
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i) {
        t = bf_add(t, v);
        t = bf_add(t, v);
        t = bf_add(t, v);
        t = bf_add(t, v);
    }
    const long long t1 = clock64();
    *cycles = t1 - t0;
    *sink = t;
}

int main(int argc, char** argv) {
    std::string dist = argc > 1 ? argv[1] : "normal";
    if (dist == "latency") {
        long long* cyc; unsigned short* sink; long long c = 0;
        CK(cudaMalloc(&cyc, 8)); CK(cudaMalloc(&sink, 2));
        for (int r = 0; r < 2; ++r) bf16_add_latency<<<1, 1>>>(0x0001, 1 << 20, cyc, sink);
        CK(cudaDeviceSynchronize()); CK(cudaGetLastError());
        CK(cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost));
        printf("{\"op\": \"bf16_add_latency\", \"adds\": %d, \"cycles_per_add\": %.2f}\n", 4 << 20, (double)c / (4 << 20));
        return 0;
    }
    int lg = argc > 2 ? atoi(argv[2]) : 26;
    size_t n = (size_t)1 << lg;
    std::mt19937_64 g(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_int_distribution<int> ui(0, 1 << 30);
    std::vector<unsigned short> h(n);
    for (size_t i = 0; i < n; ++i) {
        float x;
        if (dist == "normal") x = nd(g) * 0.01f;
        else if (dist == "magnitude") x = fabsf(nd(g)) * 0.01f;
        else if (dist == "alternating") x = (i & 1) ? -0.75f : 0.75f;
        else if (dist == "halfway") x = (float)(ui(g) % 511 - 255) * ldexpf(1.0f, -(ui(g) % 20));
        else { float z = nd(g); x = z * z * z; }
        h[i] = hf2b(x);
    }
    unsigned short t = h[0];
    for (size_t i = 1; i < n; ++i) t = hf2b(hb2f(t) + hb2f(h[i]));
    unsigned short* d; float2 *ce, *se; float* out;
    size_t chunks = (n + CHAIN_CHUNK - 1) / CHAIN_CHUNK, supers = (chunks + CHAIN_SUPER - 1) / CHAIN_SUPER;
    CK(cudaMalloc(&d, n * 2)); CK(cudaMalloc(&ce, chunks * 8)); CK(cudaMalloc(&se, supers * 8)); CK(cudaMalloc(&out, 4));
    CK(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
    int blocks = (int)((supers * 32 + 255) / 256); if (blocks > 132 * 8) blocks = 132 * 8;
    est_chain_maxima<<<blocks, 256>>>(d, n, 0, 0.0f, 0.0f, ce, se);
    CK(cudaGetLastError());
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    float best = 1e30f, got = 0;
    for (int r = 0; r < 3; ++r) {
        CK(cudaMemset(out, 0xff, 4));
        CK(cudaEventRecord(a));
        est_chain_walk<<<1, 32>>>(d, n, 0, 0.0f, 0.0f, ce, se, out);
        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (ms < best) best = ms;
        CK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
    }
    int clk; CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    bool same = (got != got && hb2f(t) != hb2f(t)) || got == hb2f(t);
    printf("{\"dist\": \"%s\", \"n\": %zu, \"walk_ms\": %.3f, \"cycles_per_value\": %.2f, \"got\": %g, \"want\": %g, \"equal\": %s}\n",
           dist.c_str(), n, best, best * 1e-3 * clk * 1e3 / n, got, hb2f(t), same ? "true" : "false");
    return same ? 0 : 1;
}
