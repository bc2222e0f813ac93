// Times the float16 / bfloat16 counting kernel (hist_lut.cuh: the code-to-counter table and the
// counters in shared memory, each row of 32 counters rotated by its row number) against the same
// loop with the counters in bin order (`plain`) and XORed by their row (`xor`). Why: at 4096 bins
// over [-4, 4] a bfloat16 code in [1, 2) spans 4 bins and one in [2, 4) 8, so in bin order the
// counters a warp's normal samples hit lie 4 or 8 words apart, on 8 or 4 of the 32 banks; at 256
// and 1000 bins they are 1-2 apart. Every variant's counts must equal the library kernel's, and
// sum to n. `keys` counts each 16-bit code in a counter of its own (codes in order of value, the
// span of codes inside the bins only) and maps codes to bins once per block at the flush: the
// loop then has no table read, whose bank conflicts (a float16 warp touches ~32 distinct words
// of the table) cost as much as the counters'. Needs only nvcc on the device.
// Build: nvcc -arch=sm_90a -std=c++17 -I<kernels copy> bench/lab/lut_lab.cu
// Usage: lut_lab f16|bf16 LOG2N NBINS...   (normal samples, bins over [-4, 4]; prints JSON lines)
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
#include <cuda_fp16.h>
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

// Codes in value order: negative codes reversed below the positive ones (NaNs at both ends).
__device__ __host__ __forceinline__ unsigned code_key(unsigned c) { return c ^ ((c & 0x8000u) ? 0xFFFFu : 0x8000u); }

struct KeyParams {
    unsigned klo, span;          // keys klo .. klo + span - 1 lie in the bins
    unsigned nan_below, nan_above;  // keys < nan_below or > nan_above are NaN
    unsigned nbins;
    const unsigned short* bin_of;   // the bin of key klo + k
};

__global__ void __launch_bounds__(1024) lut_keys(const sample_t* in, unsigned long long n, KeyParams kp,
                                                 unsigned long long* out) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned* cnt = reinterpret_cast<unsigned*>(smem_raw);
    unsigned* h = cnt + ((kp.span + 31) & ~31u);
    for (unsigned k = threadIdx.x; k < kp.span; k += blockDim.x) cnt[k] = 0;
    for (unsigned b = threadIdx.x; b < kp.nbins; b += blockDim.x) h[b] = 0;
    __syncthreads();
    LutSink sink{cnt};
    SideTally side;
    const unsigned klo = kp.klo, span = kp.span, khi = klo + span - 1;
    grid_walk<true>(in, n, sink, [&](sample_t v, unsigned long long) {
        const unsigned key = code_key((unsigned short)v);
        const unsigned k = key - klo;
        if (k < span) atomicAdd(cnt + k, 1u);
        side.below += (key < klo) & (key >= kp.nan_below);
        side.above += (key > khi) & (key <= kp.nan_above);
        side.nan += (key < kp.nan_below) | (key > kp.nan_above);
    }, blockIdx.x, gridDim.x);
    Tally t{0, 0, 0};
    side.into(t);
    flush_tally(t, out + kp.nbins);
    __syncthreads();
    for (unsigned k = threadIdx.x; k < span; k += blockDim.x) {
        const unsigned v = cnt[k];
        if (v) atomicAdd(h + __ldg(kp.bin_of + k), v);
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < kp.nbins; b += blockDim.x) {
        const unsigned v = h[b];
        if (v != 0) atomicAdd(out + b, (unsigned long long)v);
    }
}

static unsigned short to_bf16(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return (unsigned short)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

int main(int argc, char** argv) {
    const bool f16 = argc > 1 && std::string(argv[1]) == "f16";
    const char* dtype = f16 ? "f16" : "bf16";
    const int lg = argc > 2 ? atoi(argv[2]) : 28;
    const size_t n = (size_t)1 << lg;
    std::vector<int> bins_list;
    for (int a = 3; a < argc; ++a) bins_list.push_back(atoi(argv[a]));
    if (bins_list.empty()) bins_list = {256, 1000, 4096, 16384};
    std::vector<unsigned short> hx(n);
    std::mt19937_64 g(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) hx[i] = f16 ? __half_as_ushort(__float2half_rn(nd(g))) : to_bf16(nd(g));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    sample_t *dx, *dcopy;
    unsigned short* dtable;
    unsigned long long* out;
    CK(cudaMalloc(&dx, n * 2));
    CK(cudaMalloc(&dcopy, n * 2));
    CK(cudaMemcpy(dx, hx.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dtable, 65536 * 2));
    unsigned short* dkeys;
    CK(cudaMalloc(&dkeys, 65536 * 2));
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
    printf("{\"lab\": \"lut\", \"dtype\": \"%s\", \"variant\": \"copy_d2d\", \"n\": %zu, \"ms\": %.5f}\n", dtype, n, copy_ms);
    for (int nbins : bins_list) {
        std::vector<unsigned short> table(65536);
        for (unsigned c = 0; c < 65536; ++c) {
            unsigned u = c << 16;
            float v;
            memcpy(&v, &u, 4);
            if (f16) v = __half2float(__ushort_as_half((unsigned short)c));
            unsigned s;
            if (v != v) s = nbins + 2;
            else if (v < -4.0f) s = nbins;
            else if (v > 4.0f) s = nbins + 1;
            else s = (unsigned)std::min((double)nbins - 1, std::floor(((double)v + 4.0) * nbins / 8.0));
            table[c] = (unsigned short)s;
        }
        CK(cudaMemcpy(dtable, table.data(), 65536 * 2, cudaMemcpyHostToDevice));
        // The keys variant: the span of keys in the bins, the NaN ends, each key's bin.
        KeyParams kp;
        memset(&kp, 0, sizeof kp);
        kp.nbins = nbins;
        {
            std::vector<unsigned short> by_key(65536);
            for (unsigned c = 0; c < 65536; ++c) by_key[code_key(c)] = table[c];
            unsigned lo = 65536, hi = 0;
            for (unsigned k = 0; k < 65536; ++k)
                if (by_key[k] < nbins) lo = std::min(lo, k), hi = std::max(hi, k);
            unsigned nb = 0, na = 65535;
            while (by_key[nb] == nbins + 2) ++nb;
            while (by_key[na] == nbins + 2) --na;
            kp.klo = lo, kp.span = hi - lo + 1, kp.nan_below = nb, kp.nan_above = na;
            for (unsigned k = 0; k < 65536; ++k) {
                const unsigned want = k < nb || k > na ? nbins + 2 : k < lo ? nbins : k > hi ? nbins + 1 : by_key[k];
                if (by_key[k] != want || (k >= lo && k <= hi && by_key[k] >= nbins)) {
                    printf("keys: key %u breaks the span\n", k);
                    exit(1);
                }
            }
            CK(cudaMemcpy(dkeys, by_key.data() + lo, kp.span * 2, cudaMemcpyHostToDevice));
            kp.bin_of = dkeys;
        }
        const size_t keys_smem = ((kp.span + 31) & ~31u) * 4 + (size_t)nbins * 4;
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
            if (which == 3) lut_keys<<<prop.multiProcessorCount, 1024, keys_smem>>>(dx, n, kp, out);
        };
        CK(cudaFuncSetAttribute(hist_lut_shared_none, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(lut_variant<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(lut_variant<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const bool keys_fit = keys_smem <= (size_t)prop.sharedMemPerBlockOptin;
        if (keys_fit) CK(cudaFuncSetAttribute(lut_keys, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)keys_smem));
        const char* names[4] = {"library", "plain", "xor", "keys"};
        for (int which = 0; which < 4; ++which) {
            if (which == 3 && !keys_fit) {
                printf("{\"lab\": \"lut\", \"dtype\": \"%s\", \"variant\": \"keys\", \"nbins\": %d, \"skipped\": \"%zu bytes of shared memory\"}\n", dtype, nbins, keys_smem);
                continue;
            }
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
            printf("{\"lab\": \"lut\", \"dtype\": \"%s\", \"variant\": \"%s\", \"n\": %zu, \"nbins\": %d, \"ms\": %.5f, "
                   "\"of_copy\": %.3f, \"same\": %s, \"span\": %u}\n",
                   dtype, names[which], n, nbins, ms, copy_ms / ms, same ? "true" : "false", kp.span);
        }
    }
    return 0;
}
