// ---- global: counters in global memory -------------------------------------------------------

// Counts go to u32 counters (half the bytes of u64, so twice the bins stay in L2); the host folds
// them into the u64 result after every launch, long before they could overflow. Each block also
// keeps one hot bin in shared memory: the first bin that a warp hit with 8 or more lanes at once
// claims it, and from then on that bin's updates stay on chip. On skewed data this turns millions of
// same-address L2 atomics into one per block; on uniform data it costs a shared load per update.

template <class Out>
struct GlobalSink {
    Out* out;
    unsigned* hot_key;
    Out* hot_count;
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        if constexpr (IsSame<Out, unsigned int>::value) {
            unsigned key = *(volatile unsigned*)hot_key;
            if ((unsigned)bin == key) {
                atomicAdd(hot_count, (Out)amount);
                return;
            }
            atomicAdd(out + bin, (Out)amount);
            if (key == NO_HOT_KEY && amount >= 8) atomicCAS(hot_key, NO_HOT_KEY, (unsigned)bin);
        } else {
            atomicAdd(out + bin, (Out)amount);
        }
    }
};

template <int MODE, class W, class Out>
__device__ void global_kernel(const sample_t* in, unsigned long long n, const W* w, BinParams p, Out* out,
                              unsigned long long* tallies) {
    if (gated_off(p)) return;
    __shared__ unsigned hot_key;
    __shared__ Out hot_count;
    if (threadIdx.x == 0) {
        hot_key = NO_HOT_KEY;
        hot_count = (Out)0;
    }
    __syncthreads();
    GlobalSink<Out> sink{out, &hot_key, &hot_count};
    Tally t{0, 0, 0};
    process<MODE, W>(in, n, w, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    if (threadIdx.x == 0 && hot_key != NO_HOT_KEY && hot_count != (Out)0) atomicAdd(out + hot_key, hot_count);
    flush_tally(t, tallies);
}

// Adds the u32 counters of a global-memory run into the u64 result and clears them for the next
// (gated like the global kernel it follows: see `gated_off`); likewise the run's tallies, which
// the global kernel adds into `scratch_tallies` rather than the result's. With `overwrite` it
// writes every bin and tally instead of adding: the run is then the only writer of a result
// nobody cleared, which saves the memset before it (a launch) and the fold's reading the u64 bins
// back (at 1M bins, 16 MB of memory traffic of 32).
#if SMEMKIT_WANTS(hist_fold_u32)
extern "C" __global__ void hist_fold_u32(unsigned int* scratch, unsigned long long* out, unsigned long long n,
                                         const unsigned* gate, unsigned gate_want, unsigned overwrite,
                                         unsigned long long* scratch_tallies, unsigned long long* tallies) {
    if (gate != nullptr && *gate != gate_want) return;
    if (blockIdx.x == 0 && threadIdx.x < 3) {
        unsigned long long t = scratch_tallies[threadIdx.x];
        scratch_tallies[threadIdx.x] = 0;
        if (overwrite) {
            tallies[threadIdx.x] = t;
        } else if (t) {
            atomicAdd(tallies + threadIdx.x, t);
        }
    }
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned int v = scratch[i];
        if (overwrite) {
            out[i] = v;
            if (v) scratch[i] = 0;
        } else if (v) {
            out[i] += v;
            scratch[i] = 0;
        }
    }
}
#endif

// Adds the sliced kernels' 16-bit lanes (`flush_packed_lanes16`: bin b in lane b % 4 of word b / 4)
// to the u64 result of `n` bins and clears them for the next launch. Skipped like the kernel it
// follows when the skew verdict chose another plan (its lanes are then all zero anyway).
#if SMEMKIT_WANTS(hist_fold_lanes16)
extern "C" __global__ void hist_fold_lanes16(unsigned long long* lanes, unsigned long long* out, unsigned long long n,
                                             const unsigned* gate, unsigned gate_want) {
    if (gate != nullptr && *gate != gate_want) return;
    const unsigned long long words = (n + 3) / 4;
    for (unsigned long long w = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; w < words;
         w += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long v = lanes[w];
        if (v == 0) continue;
        lanes[w] = 0;
        for (unsigned j = 0; j < 4 && 4 * w + j < n; j++) {
            const unsigned long long c = (v >> (16 * j)) & 0xFFFFu;
            if (c) out[4 * w + j] += c;
        }
    }
}
#endif
