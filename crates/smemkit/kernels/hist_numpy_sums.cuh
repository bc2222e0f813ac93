// ---- Weighted sums in numpy's order --------------------------------------------------------------
// Included at the end of histogram.cu, using its binning (`locate`, `resolve`). numpy.histogram's
// equal-bins path walks the samples in blocks of 65536 (its BLOCK): each block's weights are summed
// per bin by np.bincount, in float64 one sample after another, the block's sums are cast to the
// weights' type and added to the result in that type, block after block. For float32 weights the
// float32 roundings make the result depend on that order, so these kernels repeat it:
//
// np_block_sums: one warp owns one (block, slice of bins) pair and walks the block's samples 32 at a
// time, in order. Lanes whose samples fall in the same bin of the slice are grouped
// (__match_any_sync); the group's first lane adds the group's weights to the bin's float64 sum in
// lane order, so every bin's sum takes its weights one after another in sample order, as
// np.bincount's loop does. The warp's sums live in its own part of shared memory (no atomics: no
// other warp touches them); at the end it writes them, cast to W, to partial[block][bin].
// np_chain: the blocks' partial sums added per bin in block order in W, onto the output (which holds
// the earlier waves' total, or zero on the first wave).
//
// crates/smemkit/src/histogram/cuda/numpy_sums.rs launches them; the CPU engine's float32 path
// (histogram/cpu/weighted.rs) is the reference the GPU tests compare bit for bit.

#define NP_BLOCK 65536
// Samples each lane loads before adding any of them (the loads of one batch are in flight at once).
#define NP_BATCH 8
#define NP_CHAIN_ROWS 128
#define NP_CHAIN_COLS 32

template <int MODE, class W>
__device__ void np_block_sums(const sample_t* __restrict__ in, unsigned long long n, const W* __restrict__ w,
                              BinParams p, unsigned long long first_block, unsigned long long blocks,
                              unsigned slice_bins, W* __restrict__ partial, unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const unsigned lane = threadIdx.x & 31;
    const unsigned warps = blockDim.x >> 5;
    const unsigned slices = (unsigned)((p.nbins + slice_bins - 1) / slice_bins);
    const unsigned long long pair = (unsigned long long)blockIdx.x * warps + (threadIdx.x >> 5);
    if (pair >= blocks * slices) return;  // whole warps only: nothing below synchronises the block
    const unsigned long long blk = pair / slices;
    const unsigned slice = (unsigned)(pair % slices);
    const unsigned long long lo_bin = (unsigned long long)slice * slice_bins;
    const unsigned len = (unsigned)min((unsigned long long)slice_bins, p.nbins - lo_bin);
    double* sums = reinterpret_cast<double*>(smem_raw) + (size_t)(threadIdx.x >> 5) * slice_bins;
    for (unsigned b = lane; b < len; b += 32) sums[b] = 0.0;
    __syncwarp();

    const unsigned long long begin = (first_block + blk) * NP_BLOCK;
    const unsigned long long end = min(begin + NP_BLOCK, n);
    Tally t{0, 0, 0};
    for (unsigned long long base = begin; base < end; base += 32 * NP_BATCH) {
        sample_t v[NP_BATCH] = {};
        W x[NP_BATCH] = {};
#pragma unroll
        for (int k = 0; k < NP_BATCH; ++k) {
            const unsigned long long i = base + (unsigned long long)k * 32 + lane;
            if (i < end) {
                v[k] = in[i];
                x[k] = w[i];
            }
        }
#pragma unroll
        for (int k = 0; k < NP_BATCH; ++k) {
            if (base + (unsigned long long)k * 32 >= end) break;  // warp-uniform
            const unsigned long long i = base + (unsigned long long)k * 32 + lane;
            unsigned key = 0xffffffffu;  // no bin of this slice
            if (i < end) {
                const long long bin = resolve(locate<MODE>(v[k], p), p, t);
                if (bin >= 0 && (unsigned long long)bin - lo_bin < len) key = (unsigned)(bin - lo_bin);
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
    __syncwarp();
    W* row = partial + blk * p.nbins + lo_bin;
    for (unsigned b = lane; b < len; b += 32) row[b] = (W)sums[b];
    // Every slice's warp sees every sample of its block: the first slice's warp tallies them.
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
        extern "C" __global__ void __launch_bounds__(128) hist_np_sums_##MNAME##_f32(                         \
            const sample_t* in, unsigned long long n, const float* w, BinParams p,                            \
            unsigned long long first_block, unsigned long long blocks, unsigned slice_bins, float* partial,   \
            unsigned long long* t) {                                                                          \
            np_block_sums<MODE, float>(in, n, w, p, first_block, blocks, slice_bins, partial, t);             \
        })                                                                                                    \
    SMEMKIT_ENTRY(hist_np_sums_##MNAME##_f64,                                                                 \
        extern "C" __global__ void __launch_bounds__(128) hist_np_sums_##MNAME##_f64(                         \
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
