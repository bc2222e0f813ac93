// Times the float16 / bfloat16 counting kernel (hist_lut.cuh: the code-to-counter table and the
// counters in shared memory, each row of 32 counters rotated by its row number) against the same
// loop with the counters in bin order (`plain`) and XORed by their row (`xor`). Why: at 4096 bins
// over [-4, 4] a bfloat16 code in [1, 2) spans 4 bins and one in [2, 4) 8, so in bin order the
// counters a warp's normal samples hit lie 4 or 8 words apart, on 8 or 4 of the 32 banks; at 256
// and 1000 bins they are 1-2 apart. Every variant's counts must equal the library kernel's, and
// sum to n. Needs only nvcc on the device.
// Build: nvcc -arch=sm_90a -std=c++17 -I<kernels copy> bench/lab/lut_lab.cu
// Usage: lut_lab LOG2N NBINS...   (bfloat16 normal samples, bins over [-4, 4]; prints JSON lines)
#define SAMPLE_T unsigned short
#define SAMPLE_IS_FLOAT 1
#define SAMPLE_IS_F32 0
#define SAMPLE_IS_SIGNED 0
#define SAMPLE_IS_HALF 1
#define SMEMKIT_ONE_KERNEL 1
#define SMEMKIT_KERNEL_hist_lut_shared_none 1
#include "histogram.cu"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)

// The counter of slot `s`: 0 in bin order, 2 XORed by row.
template <int SWZ>
__device__ __forceinline__ unsigned place(unsigned s) {
    if (SWZ == 2) return s ^ ((s >> 5) & 31u);
    return s;
}

template <int SWZ>
__global__ void __launch_bounds__(1024) lut_variant(const sample_t* in, unsigned long long n, BinParams p,
                                                   unsigned long long* out) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned short* table = reinterpret_cast<unsigned short*>(smem_raw);
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw + LUT_TABLE_CODES * sizeof(unsigned short));
    const unsigned slots = ((unsigned)p.nbins + 3 + 31) & ~31u;
    const uint4* src = reinterpret_cast<const uint4*>(p.lut);
    uint4* dst = reinterpret_cast<uint4*>(table);
    for (unsigned i = threadIdx.x; i < LUT_TABLE_CODES * sizeof(unsigned short) / 16; i += blockDim.x)
        dst[i] = __ldg(src + i);
    for (unsigned b = threadIdx.x; b < slots; b += blockDim.x) h[b] = 0;
    __syncthreads();
    LutSink sink{h};
    grid_walk<true>(in, n, sink, [&](sample_t v, unsigned long long) {
        atomicAdd(h + place<SWZ>(table[(unsigned short)v]), 1u);
    }, blockIdx.x, gridDim.x);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < (unsigned)p.nbins + 3; b += blockDim.x) {
        const unsigned v = h[place<SWZ>(b)];
        if (v != 0) atomicAdd(out + b, (unsigned long long)v);
    }
}

static unsigned short to_bf16(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return (unsigned short)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

int main(int argc, char** argv) {
    const int lg = argc > 1 ? atoi(argv[1]) : 28;
    const size_t n = (size_t)1 << lg;
    std::vector<int> bins_list;
    for (int a = 2; a < argc; ++a) bins_list.push_back(atoi(argv[a]));
    if (bins_list.empty()) bins_list = {256, 1000, 4096, 16384};
    std::vector<unsigned short> hx(n);
    std::mt19937_64 g(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) hx[i] = to_bf16(nd(g));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    sample_t *dx, *dcopy;
    unsigned short* dtable;
    unsigned long long* out;
    CK(cudaMalloc(&dx, n * 2));
    CK(cudaMalloc(&dcopy, n * 2));
    CK(cudaMemcpy(dx, hx.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dtable, 65536 * 2));
    CK(cudaMalloc(&out, (1 << 16) * 8 + 64));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto time_it = [&](auto launch) {
        std::vector<float> ms;
        for (int r = 0; r < 12; ++r) {
            CK(cudaEventRecord(e0));
            launch();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            if (r >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    };
    const float copy_ms = time_it([&] { CK(cudaMemcpyAsync(dcopy, dx, n * 2, cudaMemcpyDeviceToDevice)); });
    printf("{\"lab\": \"lut\", \"variant\": \"copy_d2d\", \"n\": %zu, \"ms\": %.5f}\n", n, copy_ms);
    for (int nbins : bins_list) {
        std::vector<unsigned short> table(65536);
        for (unsigned c = 0; c < 65536; ++c) {
            unsigned u = c << 16;
            float v;
            memcpy(&v, &u, 4);
            unsigned s;
            if (v != v) s = nbins + 2;
            else if (v < -4.0f) s = nbins;
            else if (v > 4.0f) s = nbins + 1;
            else s = (unsigned)std::min((double)nbins - 1, std::floor(((double)v + 4.0) * nbins / 8.0));
            table[c] = (unsigned short)s;
        }
        CK(cudaMemcpy(dtable, table.data(), 65536 * 2, cudaMemcpyHostToDevice));
        BinParams p;
        memset(&p, 0, sizeof p);
        p.nbins = nbins;
        p.lut = reinterpret_cast<const unsigned*>(dtable);
        const size_t smem = 65536 * 2 + (size_t)((nbins + 3 + 31) & ~31) * 4;
        const size_t words = nbins + 3;
        std::vector<unsigned long long> want(words), got(words);
        auto run = [&](int which) {
            CK(cudaMemsetAsync(out, 0, words * 8));
            const unsigned long long* tl = out + nbins;
            (void)tl;
            if (which == 0) hist_lut_shared_none<<<prop.multiProcessorCount, 1024, smem>>>(dx, n, nullptr, p, out, out + nbins);
            if (which == 1) lut_variant<0><<<prop.multiProcessorCount, 1024, smem>>>(dx, n, p, out);
            if (which == 2) lut_variant<2><<<prop.multiProcessorCount, 1024, smem>>>(dx, n, p, out);
        };
        CK(cudaFuncSetAttribute(hist_lut_shared_none, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(lut_variant<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(lut_variant<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const char* names[3] = {"library", "plain", "xor"};
        for (int which = 0; which < 3; ++which) {
            const float ms = time_it([&] { run(which); });
            run(which);
            CK(cudaDeviceSynchronize());
            // The library kernel adds its tallies (below, above, NaN) at out + nbins: the
            // variants' three extra counters land in the same words.
            CK(cudaMemcpy(got.data(), out, words * 8, cudaMemcpyDeviceToHost));
            if (which == 0) want = got;
            unsigned long long total = 0;
            for (auto c : got) total += c;
            const bool same = got == want && total == n;
            printf("{\"lab\": \"lut\", \"variant\": \"%s\", \"n\": %zu, \"nbins\": %d, \"ms\": %.5f, "
                   "\"of_copy\": %.3f, \"same\": %s}\n",
                   names[which], n, nbins, ms, copy_ms / ms, same ? "true" : "false");
        }
    }
    return 0;
}
