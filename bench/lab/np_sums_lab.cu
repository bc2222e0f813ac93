// Times the weighted sums in numpy's order (hist_numpy_sums.cuh: one warp per block of 65536
// samples and slice of bins, lanes of a bin added in order) at several slice sizes, against a
// variant that adds with shared-memory atomics from every warp of a block while tracking, per
// bin, whether any order gives numpy's float64 sum (the smallest set bit of the bin's weights and
// the sum of their magnitudes), redoing the other bins one sample after another. Every variant's
// partial sums must equal the first one's bit for bit. Needs only nvcc on the device.
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

// Lowest set bit of a finite non-zero float32 (2^k: k), subnormals included.
__device__ __forceinline__ int lowbit32(float w) {
    const unsigned b = __float_as_uint(w) & 0x7fffffffu;
    const unsigned e = b >> 23, m = b & 0x7fffffu;
    return e == 0 ? -149 + __ffs(m) - 1 : (int)e - 150 + __ffs(m | 0x800000u) - 1;
}

// One CTA per (block, slice): every thread adds its samples' weights with atomics, tracking per
// bin the magnitude sum and the lowest set bit; a bin whose magnitudes stay below 2^(low + 52)
// has every partial sum exact in float64, so any order gives numpy's; warp 0 redoes the others.
template <bool AGG>
__global__ void __launch_bounds__(1024) np_tracked(const float* __restrict__ in, unsigned long long n,
                                                   const float* __restrict__ w, BinParams p,
                                                   unsigned long long blocks, unsigned slice_bins,
                                                   float* __restrict__ partial, unsigned long long* tallies,
                                                   unsigned* redone) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const unsigned slices = (unsigned)((p.nbins + slice_bins - 1) / slice_bins);
    const unsigned long long blk = blockIdx.x / slices;
    const unsigned slice = blockIdx.x % slices;
    const unsigned long long lo_bin = (unsigned long long)slice * slice_bins;
    const unsigned len = (unsigned)min((unsigned long long)slice_bins, p.nbins - lo_bin);
    double* sums = reinterpret_cast<double*>(smem_raw);
    float* mag = reinterpret_cast<float*>(sums + slice_bins);
    int* low = reinterpret_cast<int*>(mag + slice_bins);
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) {
        sums[b] = 0.0;
        mag[b] = 0.0f;
        low[b] = 0x7fffffff;
    }
    __syncthreads();
    const unsigned long long begin = blk * NP_BLOCK, end = min(begin + NP_BLOCK, n);
    Tally t{0, 0, 0};
    for (unsigned long long base = begin; base < end; base += (unsigned long long)blockDim.x * 4) {
        float v[4], x[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const unsigned long long i = base + (unsigned long long)k * blockDim.x + threadIdx.x;
            v[k] = i < end ? in[i] : 0.0f;
            x[k] = i < end ? w[i] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const unsigned long long i = base + (unsigned long long)k * blockDim.x + threadIdx.x;
            bool mine = false;
            unsigned long long local = 0;
            if (i < end) {
                const long long bin = resolve(locate<MODE_UNIFORM32>(v[k], p), p, t);
                local = (unsigned long long)bin - lo_bin;
                mine = bin >= 0 && local < len && x[k] != 0.0f;
            }
            if (AGG) {
                // Lanes of one bin combined by the group's first lane first: any order is exact
                // where the bin is, and a bin that is not is redone below anyway.
                const unsigned lane = threadIdx.x & 31;
                const unsigned key = mine ? (unsigned)local : 0xffffffffu;
                const unsigned group = __match_any_sync(0xffffffffu, key);
                const bool lead = mine && lane == (unsigned)(__ffs(group) - 1);
                double sum = (double)x[k];
                float m = fabsf(x[k]);
                int lb = mine ? lowbit32(x[k]) : 0x7fffffff;
                unsigned todo = lead ? group & (group - 1) : 0u;
                while (__any_sync(0xffffffffu, todo != 0)) {
                    const int src = todo ? __ffs(todo) - 1 : (int)lane;
                    const float xv = __shfl_sync(0xffffffffu, x[k], src);
                    if (todo) {
                        sum += (double)xv;
                        m += fabsf(xv);
                        lb = min(lb, lowbit32(xv));
                        todo &= todo - 1;
                    }
                }
                if (lead) {
                    atomicAdd(sums + local, sum);
                    atomicAdd(mag + local, m);
                    atomicMin(low + local, lb);
                }
            } else if (mine) {
                atomicAdd(sums + local, (double)x[k]);
                atomicAdd(mag + local, fabsf(x[k]));
                atomicMin(low + local, lowbit32(x[k]));
            }
        }
    }
    __syncthreads();
    int any = 0;
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) {
        const float m = mag[b];
        const bool exact = m == 0.0f || (m <= 3.4e38f && (double)m * (1.0 + 1.0 / 128) < ldexp(1.0, low[b] + 52));
        if (!exact) {
            sums[b] = 0.0;
            mag[b] = -1.0f;
            any = 1;
        }
    }
    any = __syncthreads_or(any);
    if (any && threadIdx.x < 32) {
        const unsigned lane = threadIdx.x;
        if (lane == 0) atomicAdd(redone, 1u);
        Tally dummy{0, 0, 0};
        for (unsigned long long i0 = begin; i0 < end; i0 += 32) {
            const unsigned long long i = i0 + lane;
            unsigned key = 0xffffffffu;
            float xv = 0.0f;
            if (i < end) {
                xv = w[i];
                const long long bin = resolve(locate<MODE_UNIFORM32>(in[i], p), p, dummy);
                const unsigned long long local = (unsigned long long)bin - lo_bin;
                if (bin >= 0 && local < len && mag[local] < 0.0f) key = (unsigned)local;
            }
            const unsigned group = __match_any_sync(0xffffffffu, key);
            const bool lead = key != 0xffffffffu && lane == (unsigned)(__ffs(group) - 1);
            double acc = lead ? sums[key] : 0.0;
            unsigned todo = lead ? group : 0u;
            while (__any_sync(0xffffffffu, todo != 0)) {
                const int src = todo ? __ffs(todo) - 1 : (int)lane;
                const float got = __shfl_sync(0xffffffffu, xv, src);
                if (todo) {
                    acc = __dadd_rn(acc, (double)got);
                    todo &= todo - 1;
                }
            }
            if (lead) sums[key] = acc;
        }
    }
    __syncthreads();
    float* row = partial + blk * p.nbins + lo_bin;
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) row[b] = (float)sums[b];
    if (slice == 0) flush_tally(t, tallies);
}

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
    float *dx, *dw, *part; unsigned long long* tl; unsigned* redone;
    double* out;
    CK(cudaMalloc(&dx, n * 4)); CK(cudaMalloc(&dw, n * 4));
    CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw.data(), n * 4, cudaMemcpyHostToDevice));
    const size_t blocks = (n + NP_BLOCK - 1) / NP_BLOCK;
    CK(cudaMalloc(&part, blocks * nbins * 4)); CK(cudaMalloc(&tl, 24)); CK(cudaMalloc(&redone, 4));
    CK(cudaMalloc(&out, nbins * 8));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> first;
    struct V { std::string name; int kind; unsigned slice; unsigned threads; };  // kind 0: warp, 1: tracked, 2: tracked + warp aggregation
    std::vector<V> vs = {{"warp-s1536", 0, 1536, 128}};
    for (unsigned s : {1024u, 4096u, 8192u, 13312u}) {
        vs.push_back({"tracked-s" + std::to_string(s), 1, s, 1024});
        vs.push_back({"tracked-agg-s" + std::to_string(s), 2, s, 1024});
    }
    for (const V& v : vs) {
        const unsigned slice = std::min<unsigned>(v.slice, nbins);
        const unsigned slices = (nbins + slice - 1) / slice;
        size_t smem; unsigned grid;
        if (v.kind == 0) { smem = (size_t)(v.threads / 32) * slice * 8; grid = (unsigned)((blocks * slices + v.threads / 32 - 1) / (v.threads / 32)); }
        else { smem = (size_t)slice * 16; grid = (unsigned)(blocks * slices); }
        if (smem > 227 * 1024) continue;
        auto launch = [&]() {
            CK(cudaMemsetAsync(out, 0, nbins * 8)); CK(cudaMemsetAsync(tl, 0, 24)); CK(cudaMemsetAsync(redone, 0, 4));
            if (v.kind == 0) {
                CK(cudaFuncSetAttribute(hist_np_sums_uniform32_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                hist_np_sums_uniform32_f32<<<grid, v.threads, smem>>>(dx, n, dw, p, 0, blocks, slice, part, tl);
            } else if (v.kind == 1) {
                CK(cudaFuncSetAttribute(np_tracked<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                np_tracked<false><<<grid, v.threads, smem>>>(dx, n, dw, p, blocks, slice, part, tl, redone);
            } else {
                CK(cudaFuncSetAttribute(np_tracked<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                np_tracked<true><<<grid, v.threads, smem>>>(dx, n, dw, p, blocks, slice, part, tl, redone);
            }
            hist_np_chain_f32<<<(nbins + 31) / 32, 256>>>(part, blocks, nbins, out);
        };
        std::vector<float> ms;
        for (int r = 0; r < 7; ++r) {
            CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float t; CK(cudaEventElapsedTime(&t, e0, e1)); if (r >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        std::vector<float> got(blocks * nbins); unsigned rd = 0;
        CK(cudaMemcpy(got.data(), part, got.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&rd, redone, 4, cudaMemcpyDeviceToHost));
        bool same = true;
        if (first.empty()) first = got; else same = memcmp(first.data(), got.data(), got.size() * 4) == 0;
        printf("{\"op\": \"np_sums_lab\", \"variant\": \"%s\", \"nbins\": %d, \"weights\": \"%s\", \"n\": %zu, \"slice\": %u, \"ms\": %.4f, \"redone_pairs\": %u, \"same_bits\": %s}\n",
               v.name.c_str(), nbins, wkind.c_str(), n, slice, ms[ms.size() / 2], rd, same ? "true" : "false");
        fflush(stdout);
    }
    return 0;
}
