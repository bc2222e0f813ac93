// Times the library's digitize kernel (kernels/digitize.cu) against variants of its walk, on
// issue 23's workload: |N(0, 1)| float32 samples, 1000 log-spaced bins (geomspace(1e-3, 4)),
// right=False. Why: the kernel moved 3.35 TB/s (1 GiB read, 2 GiB of int64 written) against a
// device copy's ~4.0, with one 16-byte load in flight per thread and the indices stored through
// L2 like any data. Variants: `cs` streams the stores (st.global.cs: the indices are not read
// again), `cs2` also keeps a second load in flight. Every variant's indices must equal the
// library kernel's and the host's. Needs only nvcc on the device.
// Build: nvcc -arch=sm_90a -std=c++17 -I<kernels copy> bench/lab/digitize_lab.cu
// Usage: digitize_lab LOG2N   (prints JSON lines)
#define SAMPLE_T float
#define SAMPLE_IS_FLOAT 1
#include "digitize.cu"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)

// The library's walk with streamed stores and, for LOADS == 2, the next vector loaded while this
// one is searched.
template <int LOADS>
__global__ void __launch_bounds__(512) digitize_variant(const float* in, unsigned long long n, const double* bins,
                                                       unsigned nbins, unsigned top, long long* out,
                                                       SearchTable table) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    double* s = reinterpret_cast<double*>(smem_raw);
    for (unsigned i = threadIdx.x; i < nbins; i += blockDim.x) s[i] = __ldg(bins + i);
    __syncthreads();
    const unsigned long long nvec = n / 4;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    auto one = [&](float4 a, unsigned long long i) {
        const long long r0 = digitize_one<DIGITIZE_INC_LEFT>(a.x, s, nbins, top, table);
        const long long r1 = digitize_one<DIGITIZE_INC_LEFT>(a.y, s, nbins, top, table);
        const long long r2 = digitize_one<DIGITIZE_INC_LEFT>(a.z, s, nbins, top, table);
        const long long r3 = digitize_one<DIGITIZE_INC_LEFT>(a.w, s, nbins, top, table);
        longlong2* o2 = reinterpret_cast<longlong2*>(out + i * 4);
        __stcs(o2, make_longlong2(r0, r1));
        __stcs(o2 + 1, make_longlong2(r2, r3));
    };
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (LOADS == 2) {
        if (i < nvec) {
            float4 a = __ldg(in4 + i);
            for (;;) {
                const unsigned long long next = i + stride;
                const bool more = next < nvec;
                float4 b;
                if (more) b = __ldg(in4 + next);
                one(a, i);
                if (!more) break;
                a = b;
                i = next;
            }
        }
    } else {
        for (; i < nvec; i += stride) one(__ldg(in4 + i), i);
    }
}

static unsigned long long key_of(double x) {
    unsigned long long u;
    memcpy(&u, &x, 8);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}
static double from_key(unsigned long long k) {
    const unsigned long long u = (k >> 63) ? (k & ~0x8000000000000000ull) : ~k;
    double x;
    memcpy(&x, &u, 8);
    return x;
}

int main(int argc, char** argv) {
    const int lg = argc > 1 ? atoi(argv[1]) : 28;
    const size_t n = (size_t)1 << lg;
    const unsigned nbins = 1000;
    std::vector<double> bins(nbins);
    for (unsigned i = 0; i < nbins; ++i) bins[i] = 1e-3 * std::pow(4000.0, i / 999.0);
    bins[nbins - 1] = 4.0;
    std::vector<float> hx(n);
    std::mt19937_64 g(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) hx[i] = std::fabs(nd(g));
    // Key cells (the library's table for log-spaced bins): the smallest shift that covers the
    // bins' keys with 4096 cells; each cell's start is the partition point of its lowest value.
    const unsigned cells = 4096;
    const unsigned long long key_lo = key_of(bins[0]), span = key_of(bins[nbins - 1]) - key_lo;
    unsigned shift = 0;
    while ((span >> shift) >= cells - 1) ++shift;
    auto point = [&](double x) {
        return (unsigned)(std::upper_bound(bins.begin(), bins.end(), x) - bins.begin());
    };
    std::vector<unsigned> starts(cells);
    starts[0] = 0;
    for (unsigned c = 1; c < cells; ++c) starts[c] = point(from_key(key_lo + ((unsigned long long)c << shift)));
    unsigned widest = nbins - starts[cells - 1];
    for (unsigned c = 0; c + 1 < cells; ++c) widest = std::max(widest, starts[c + 1] - starts[c]);
    unsigned top = 1;
    while (top * 2 <= widest) top *= 2;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    float* dx;
    double* dbins;
    unsigned* dstarts;
    long long *out, *ref;
    CK(cudaMalloc(&dx, n * 4));
    CK(cudaMalloc(&dbins, nbins * 8));
    CK(cudaMalloc(&dstarts, cells * 4));
    CK(cudaMalloc(&out, n * 8));
    CK(cudaMalloc(&ref, n * 8));
    CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbins, bins.data(), nbins * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dstarts, starts.data(), cells * 4, cudaMemcpyHostToDevice));
    SearchTable table;
    memset(&table, 0, sizeof table);
    table.starts = dstarts;
    table.key_lo = key_lo;
    table.shift = shift;
    table.cells = cells;
    table.top = top;
    table.kind = 2;
    const size_t smem = nbins * 8;
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, digitize, 512, smem));
    const unsigned grid = per_sm * prop.multiProcessorCount;
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
    // A device copy of n int64 (2 GiB read, 2 GiB written): its bytes a millisecond is the
    // bandwidth digitize's 12 bytes a sample are held against.
    const float copy_ms = time_it([&] { CK(cudaMemcpyAsync(ref, out, n * 8, cudaMemcpyDeviceToDevice)); });
    printf("{\"lab\": \"digitize\", \"variant\": \"copy_d2d_8n\", \"n\": %zu, \"ms\": %.5f, \"tb_s\": %.3f}\n", n,
           copy_ms, n * 16.0 / copy_ms / 1e9);
    printf("{\"lab\": \"digitize\", \"grid\": %u, \"shift\": %u, \"top\": %u, \"widest\": %u}\n", grid, shift, top,
           widest);
    const char* names[3] = {"library", "cs", "cs2"};
    std::vector<long long> host(n);
    for (int which = 0; which < 3; ++which) {
        auto run = [&] {
            if (which == 0) digitize<<<grid, 512, smem>>>(dx, n, dbins, nbins, 512, DIGITIZE_INC_LEFT, 1, out, table);
            if (which == 1) digitize_variant<1><<<grid, 512, smem>>>(dx, n, dbins, nbins, 512, out, table);
            if (which == 2) digitize_variant<2><<<grid, 512, smem>>>(dx, n, dbins, nbins, 512, out, table);
        };
        CK(cudaMemset(out, 0xff, n * 8));
        const float ms = time_it(run);
        CK(cudaMemset(out, 0xff, n * 8));
        run();
        CK(cudaDeviceSynchronize());
        if (which == 0) CK(cudaMemcpy(ref, out, n * 8, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(host.data(), out, n * 8, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < n; i += 97) bad += host[i] != (long long)point(hx[i]);
        std::vector<long long> r0(n);
        CK(cudaMemcpy(r0.data(), ref, n * 8, cudaMemcpyDeviceToHost));
        const bool same = r0 == host && bad == 0;
        printf("{\"lab\": \"digitize\", \"variant\": \"%s\", \"n\": %zu, \"ms\": %.5f, \"tb_s\": %.3f, "
               "\"same\": %s}\n",
               names[which], n, ms, n * 12.0 / ms / 1e9, same ? "true" : "false");
    }
    return 0;
}
