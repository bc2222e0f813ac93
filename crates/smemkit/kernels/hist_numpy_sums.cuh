// ---- Weighted sums in numpy's order --------------------------------------------------------------
// Included at the end of histogram.cu, using its binning (`locate`, `resolve`). numpy.histogram's
// equal-bins path walks the samples in blocks of 65536 (its BLOCK): each block's weights are summed
// per bin by np.bincount, in float64 one sample after another, the block's sums are cast to the
// weights' type and added to the result in that type, block after block. For float32 weights the
// float32 roundings make the result depend on that order, so these kernels repeat it:
//
// np_block_sums: one block of threads owns one (numpy block, slice of bins) pair. All its threads
// add the weights with shared-memory atomics, in whatever order, while tracking for each bin the
// sum of its weights' magnitudes (float32, rounded up where float64 weights narrow) and, for the
// slice, the lowest set bit L of any weight: a bin whose magnitudes stay below 2^(L + 52) has
// every partial sum a multiple of 2^L below 2^(L + 53), exact in float64 whatever the order, so
// the atomics give np.bincount's sum. The other bins (weights of a dynamic range beyond float64's
// 53 bits within one block and bin, or not finite) are cleared and redone by warp 0 walking the
// block 32 samples at a time, in order: lanes of one bin grouped (__match_any_sync) and added by
// the group's first lane in lane order, as np.bincount's loop adds them. The sums, cast to W, go
// to partial[block][bin].
// np_chain: the blocks' partial sums added per bin in block order in W, onto the output (which holds
// the earlier waves' total, or zero on the first wave).
//
// crates/smemkit/src/histogram/cuda/numpy_sums.rs launches them; the CPU engine's numpy order
// (histogram/cpu/weighted.rs) is the reference the GPU tests compare bit for bit.

#define NP_BLOCK 65536
// Samples each thread loads before adding any of them (the loads of one batch are in flight at
// once): 4 for the block's threads, 8 for the warp that redoes bins alone.
#define NP_BATCH 4
#define NP_REDO_BATCH 8
#define NP_CHAIN_ROWS 128
#define NP_CHAIN_COLS 32

// Lowest set bit (2^k: k) of a finite non-zero weight, subnormals included.
__device__ __forceinline__ int np_lowbit(float w) {
    const unsigned b = __float_as_uint(w) & 0x7fffffffu;
    const unsigned e = b >> 23, m = b & 0x7fffffu;
    return e == 0 ? -149 + __ffs(m) - 1 : (int)e - 150 + __ffs(m | 0x800000u) - 1;
}
__device__ __forceinline__ int np_lowbit(double w) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(w) & 0x7fffffffffffffffull;
    const unsigned long long e = b >> 52, m = b & 0xfffffffffffffull;
    return e == 0 ? -1074 + __ffsll((long long)m) - 1
                  : (int)e - 1075 + __ffsll((long long)(m | 0x10000000000000ull)) - 1;
}
// |w| as float32, never below it (the magnitudes bound the partial sums from above).
__device__ __forceinline__ float np_magnitude(float w) { return fabsf(w); }
__device__ __forceinline__ float np_magnitude(double w) { return __double2float_ru(fabs(w)); }

// Warp 0 of the block: the bins of the slice whose `mag` is negative, summed again from zero in
// sample order (the slot's float64 sum in `sums`).
template <int MODE, class W>
__device__ void np_redo(const sample_t* __restrict__ in, const W* __restrict__ w, const BinParams& p,
                        unsigned long long begin, unsigned long long end, unsigned long long lo_bin,
                        unsigned len, double* sums, const float* mag) {
    const unsigned lane = threadIdx.x & 31;
    Tally ignored{0, 0, 0};  // the first pass tallied every sample
    for (unsigned long long base = begin; base < end; base += 32 * NP_REDO_BATCH) {
        sample_t v[NP_REDO_BATCH] = {};
        W x[NP_REDO_BATCH] = {};
#pragma unroll
        for (int k = 0; k < NP_REDO_BATCH; ++k) {
            const unsigned long long i = base + (unsigned long long)k * 32 + lane;
            if (i < end) {
                v[k] = in[i];
                x[k] = w[i];
            }
        }
#pragma unroll
        for (int k = 0; k < NP_REDO_BATCH; ++k) {
            if (base + (unsigned long long)k * 32 >= end) break;  // warp-uniform
            const unsigned long long i = base + (unsigned long long)k * 32 + lane;
            unsigned key = 0xffffffffu;  // no bin being redone
            if (i < end) {
                const long long bin = resolve(locate<MODE>(v[k], p), p, ignored);
                const unsigned long long local = (unsigned long long)bin - lo_bin;
                if (bin >= 0 && local < len && mag[local] < 0.0f) key = (unsigned)local;
            }
            const unsigned group = __match_any_sync(0xffffffffu, key);
            const bool lead = key != 0xffffffffu && lane == (unsigned)(__ffs(group) - 1);
            double acc = lead ? sums[key] : 0.0;
            unsigned todo = lead ? group : 0u;
            // One round per member of the largest group: each leader takes its next member's
            // weight (its own first), lowest lane first, so the adds follow the samples' order.
            while (__any_sync(0xffffffffu, todo != 0)) {
                const int src = todo ? __ffs(todo) - 1 : (int)lane;
                const W got = __shfl_sync(0xffffffffu, x[k], src);
                if (todo) {
                    acc = __dadd_rn(acc, (double)got);
                    todo &= todo - 1;
                }
            }
            if (lead) sums[key] = acc;
        }
    }
}

template <int MODE, class W>
__device__ void np_block_sums(const sample_t* __restrict__ in, unsigned long long n, const W* __restrict__ w,
                              BinParams p, unsigned long long first_block, unsigned long long blocks,
                              unsigned slice_bins, W* __restrict__ partial, unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const unsigned slices = (unsigned)((p.nbins + slice_bins - 1) / slice_bins);
    const unsigned long long blk = blockIdx.x / slices;
    const unsigned slice = blockIdx.x % slices;
    const unsigned long long lo_bin = (unsigned long long)slice * slice_bins;
    const unsigned len = (unsigned)min((unsigned long long)slice_bins, p.nbins - lo_bin);
    double* sums = reinterpret_cast<double*>(smem_raw);
    float* mag = reinterpret_cast<float*>(sums + slice_bins);
    int* lowest = reinterpret_cast<int*>(mag + slice_bins);
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) {
        sums[b] = 0.0;
        mag[b] = 0.0f;
    }
    if (threadIdx.x == 0) *lowest = 0x7fffffff;
    __syncthreads();

    const unsigned long long begin = (first_block + blk) * NP_BLOCK;
    const unsigned long long end = min(begin + NP_BLOCK, n);
    Tally t{0, 0, 0};
    int low = 0x7fffffff;
    for (unsigned long long base = begin; base < end; base += (unsigned long long)blockDim.x * NP_BATCH) {
        sample_t v[NP_BATCH] = {};
        W x[NP_BATCH] = {};
#pragma unroll
        for (int k = 0; k < NP_BATCH; ++k) {
            const unsigned long long i = base + (unsigned long long)k * blockDim.x + threadIdx.x;
            if (i < end) {
                v[k] = in[i];
                x[k] = w[i];
            }
        }
#pragma unroll
        for (int k = 0; k < NP_BATCH; ++k) {
            const unsigned long long i = base + (unsigned long long)k * blockDim.x + threadIdx.x;
            if (i >= end) continue;
            const long long bin = resolve(locate<MODE>(v[k], p), p, t);
            const unsigned long long local = (unsigned long long)bin - lo_bin;
            // Zero weights change no sum in any order (0 + -0 is 0, as np.bincount's).
            if (bin >= 0 && local < len && x[k] != (W)0) {
                atomicAdd(sums + local, (double)x[k]);
                atomicAdd(mag + local, np_magnitude(x[k]));
                low = min(low, np_lowbit(x[k]));
            }
        }
    }
    low = __reduce_min_sync(0xffffffffu, low);
    if ((threadIdx.x & 31) == 0 && low != 0x7fffffff) atomicMin(lowest, low);
    __syncthreads();
    // Exact in any order where the magnitudes (float32 sums of at most 65536 terms: within 2^-8
    // of the true sum) stay below 2^(L + 52); the other bins are cleared for the redo.
    const int lo = *lowest;
    int redo = 0;
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) {
        const float m = mag[b];
        const bool exact = m == 0.0f || (m <= 3.4028234663852886e38f &&
                                         __dmul_rn((double)m, 1.0 + 1.0 / 128) < ldexp(1.0, lo + 52));
        if (!exact) {
            sums[b] = 0.0;
            mag[b] = -1.0f;
            redo = 1;
        }
    }
    redo = __syncthreads_or(redo);
    if (redo && threadIdx.x < 32) np_redo<MODE, W>(in, w, p, begin, end, lo_bin, len, sums, mag);
    __syncthreads();
    W* row = partial + blk * p.nbins + lo_bin;
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) row[b] = (W)sums[b];
    // Every slice's block sees every sample of its numpy block: the first slice's tallies them.
    if (slice == 0) flush_tally(t, tallies);
}

// Bins [blockIdx.x * 32, +32): the `blocks` rows of partial sums added in row order onto `out`
// (float64 holding W values: zero, or the earlier waves' total). Tiles of NP_CHAIN_ROWS rows are
// loaded by the whole block, then warp 0 adds them one after another.
template <class W>
__device__ void np_chain(const W* __restrict__ partial, unsigned long long blocks, unsigned long long nbins,
                         double* __restrict__ out) {
    __shared__ W tile[NP_CHAIN_ROWS][NP_CHAIN_COLS + 1];
    const unsigned long long col0 = (unsigned long long)blockIdx.x * NP_CHAIN_COLS;
    const unsigned c = threadIdx.x % NP_CHAIN_COLS;
    const bool mine = col0 + c < nbins;
    W acc = 0;
    if (threadIdx.x < NP_CHAIN_COLS && mine) acc = (W)out[col0 + c];
    for (unsigned long long r0 = 0; r0 < blocks; r0 += NP_CHAIN_ROWS) {
        const unsigned rows = (unsigned)min((unsigned long long)NP_CHAIN_ROWS, blocks - r0);
        for (unsigned r = threadIdx.x / NP_CHAIN_COLS; r < rows; r += blockDim.x / NP_CHAIN_COLS)
            tile[r][c] = mine ? partial[(r0 + r) * nbins + col0 + c] : (W)0;
        __syncthreads();
        if (threadIdx.x < NP_CHAIN_COLS) {
            for (unsigned r = 0; r < rows; ++r) acc = acc + tile[r][c];
        }
        __syncthreads();
    }
    if (threadIdx.x < NP_CHAIN_COLS && mine) out[col0 + c] = (double)acc;
}

#if SMEMKIT_WANTS(hist_np_chain_f32)
extern "C" __global__ void __launch_bounds__(256) hist_np_chain_f32(const float* partial, unsigned long long blocks,
                                                                    unsigned long long nbins, double* out) {
    np_chain<float>(partial, blocks, nbins, out);
}
#endif
#if SMEMKIT_WANTS(hist_np_chain_f64)
extern "C" __global__ void __launch_bounds__(256) hist_np_chain_f64(const double* partial, unsigned long long blocks,
                                                                    unsigned long long nbins, double* out) {
    np_chain<double>(partial, blocks, nbins, out);
}
#endif

#define NP_SUMS_KERNELS(MODE, MNAME)                                                                          \
    SMEMKIT_ENTRY(hist_np_sums_##MNAME##_f32,                                                                 \
        extern "C" __global__ void __launch_bounds__(1024) hist_np_sums_##MNAME##_f32(                         \
            const sample_t* in, unsigned long long n, const float* w, BinParams p,                            \
            unsigned long long first_block, unsigned long long blocks, unsigned slice_bins, float* partial,   \
            unsigned long long* t) {                                                                          \
            np_block_sums<MODE, float>(in, n, w, p, first_block, blocks, slice_bins, partial, t);             \
        })                                                                                                    \
    SMEMKIT_ENTRY(hist_np_sums_##MNAME##_f64,                                                                 \
        extern "C" __global__ void __launch_bounds__(1024) hist_np_sums_##MNAME##_f64(                         \
            const sample_t* in, unsigned long long n, const double* w, BinParams p,                           \
            unsigned long long first_block, unsigned long long blocks, unsigned slice_bins, double* partial,  \
            unsigned long long* t) {                                                                          \
            np_block_sums<MODE, double>(in, n, w, p, first_block, blocks, slice_bins, partial, t);            \
        })

// Uniform bins only: numpy's explicit edges and np.bincount add in other orders.
#if SAMPLE_IS_HALF
NP_SUMS_KERNELS(MODE_LUT, lut)
#else
#if SAMPLE_IS_FLOAT
#if SAMPLE_IS_F32
NP_SUMS_KERNELS(MODE_UNIFORM32, uniform32)
NP_SUMS_KERNELS(MODE_UNIFORM32_EXACT, uniform32x)
NP_SUMS_KERNELS(MODE_UNIFORM32_INTERIOR, uniform32i)
NP_SUMS_KERNELS(MODE_UNIFORM32_WIDE, uniform32w)
#else
NP_SUMS_KERNELS(MODE_UNIFORM64, uniform64)
NP_SUMS_KERNELS(MODE_UNIFORM64_EXACT, uniform64x)
#endif
#else
NP_SUMS_KERNELS(MODE_UNIFORM64, uniform64)
#endif
#endif
