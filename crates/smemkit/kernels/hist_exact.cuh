// ---- Deterministic weighted sums -----------------------------------------------------------------
// Included at the end of histogram.cu, using its binning (`locate`, `resolve`, `process`); each entry
// point is built alone like the others (one_kernel.cuh). Float atomics add weights in whatever order
// blocks and threads reach them, so two runs can differ in the last bits; these kernels make the sums
// independent of that order. Each finite weight w becomes the integer rint(w * 2^(61 - E)), where E = floor(log2 max|w|)
// over the finite non-zero weights (hist_exact_scale finds it), so every integer lies within
// +-2^62; the integers add exactly in two u64 words per bin (a two's complement 128-bit sum, which
// fewer than 2^65 samples cannot overflow) whatever the order; hist_exact_finish rounds each bin's
// sum once to f64 and scales it back. Infinite and NaN weights set flag bits instead (1: +inf,
// 2: -inf, 4: NaN), resolved as any IEEE sum would be (NaN, or both infinities: NaN).
// crates/smemkit/src/histogram/cuda/exact_sums.rs repeats this arithmetic on the CPU (the tests' reference).
//
// Layout of the scratch: word 0 holds E + EXACT_EXP_BIAS (0: no finite non-zero weight), words
// 1 .. 1 + 2 * nbins the bins' low and high words, then nbins u32 flags.

#define EXACT_EXP_BIAS 2048

// 2^e as a double, for -1022 <= e <= 1023.
__device__ __forceinline__ double exact_pow2(int e) {
    return __longlong_as_double((long long)(e + 1023) << 52);
}

// floor(log2 |x|) for finite non-zero x, subnormals included.
__device__ __forceinline__ int exact_floor_log2(double x) {
    const unsigned long long bits = (unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffull;
    const int e = (int)(bits >> 52);
    return e != 0 ? e - 1023 : 63 - __clzll((long long)bits) - 1074;
}

// The shift k = 61 - E that scales weights to integers (0 when there is no finite non-zero weight).
__device__ __forceinline__ int exact_shift(unsigned scale_word) {
    return scale_word == 0 ? 0 : 61 - ((int)scale_word - EXACT_EXP_BIAS);
}

// Adds the 128-bit value (lo, hi) to the two words at w, exactly in any order of callers.
__device__ __forceinline__ void exact_add128(unsigned long long* w, unsigned long long lo, unsigned long long hi) {
    if (lo != 0) {
        const unsigned long long old = atomicAdd(w, lo);
        if (old + lo < old) hi += 1;
    }
    if (hi != 0) atomicAdd(w + 1, hi);
}

struct ExactSink {
    unsigned long long* acc;  // two words per bin, in shared or global memory
    unsigned* flags;          // global
    int a, b;                 // the scale 2^k as two factors (each a normal double)
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        const double x = (double)amount;
        if (!isfinite(x)) {
            atomicOr(flags + bin, x != x ? 4u : (x > 0 ? 1u : 2u));
            return;
        }
        const long long v = __double2ll_rn(__dmul_rn(__dmul_rn(x, exact_pow2(a)), exact_pow2(b)));
        exact_add128(acc + 2 * bin, (unsigned long long)v, v < 0 ? ~0ull : 0ull);
    }
};

template <class W>
__device__ void exact_scale(const W* __restrict__ w, unsigned long long n, unsigned* scale_word) {
    unsigned m = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const double x = (double)w[i];
        if (isfinite(x) && x != 0.0) m = max(m, (unsigned)(exact_floor_log2(x) + EXACT_EXP_BIAS));
    }
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_down_sync(0xffffffffu, m, off));
    if ((threadIdx.x & 31) == 0 && m != 0) atomicMax(scale_word, m);
}

// `in_shared`: the block sums in shared memory (2 * nbins words) and adds them to `acc` at the
// end; otherwise every weight goes to `acc` directly. Both give the same bits.
template <int MODE, class W>
__device__ void exact_kernel(const sample_t* in, unsigned long long n, const W* w, BinParams p,
                             unsigned long long* scratch, unsigned long long* tallies, int in_shared) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned long long* acc = scratch + 1;
    unsigned* flags = reinterpret_cast<unsigned*>(acc + 2 * p.nbins);
    const int k = exact_shift(*reinterpret_cast<const unsigned*>(scratch));
    unsigned long long* h = in_shared ? reinterpret_cast<unsigned long long*>(smem_raw) : acc;
    if (in_shared) {
        for (unsigned long long b = threadIdx.x; b < 2 * p.nbins; b += blockDim.x) h[b] = 0;
        __syncthreads();
    }
    ExactSink sink{h, flags, k / 2, k - k / 2};
    Tally t{0, 0, 0};
    p.aggregate = 0;
    process<MODE, W>(in, n, w, p, sink, t, blockIdx.x, gridDim.x);
    if (in_shared) {
        __syncthreads();
        for (unsigned long long b = threadIdx.x; b < p.nbins; b += blockDim.x) exact_add128(acc + 2 * b, h[2 * b], h[2 * b + 1]);
    }
    flush_tally(t, tallies);
}

// The two's complement 128-bit integer (lo, hi) rounded once to the nearest double (ties to even):
// the top 64 significant bits with a sticky bit for the rest, converted, then scaled exactly.
__device__ __forceinline__ double exact_i128_to_double(unsigned long long lo, unsigned long long hi) {
    const bool neg = (long long)hi < 0;
    if (neg) {
        lo = ~lo + 1;
        hi = ~hi + (lo == 0 ? 1 : 0);
    }
    double d;
    if (hi == 0) {
        d = __ull2double_rn(lo);
    } else {
        const int s = 64 - __clzll((long long)hi);  // 1 ..= 64 bits beyond the top 64
        unsigned long long top, rest;
        if (s == 64) {
            top = hi;
            rest = lo;
        } else {
            top = (hi << (64 - s)) | (lo >> s);
            rest = lo << (64 - s);
        }
        d = __dmul_rn(__ull2double_rn(top | (rest != 0 ? 1ull : 0ull)), exact_pow2(s));
    }
    return neg ? -d : d;
}

#if SMEMKIT_WANTS(hist_exact_finish)
extern "C" __global__ void hist_exact_finish(const unsigned long long* scratch, unsigned long long nbins, double* out,
                                             int accumulate) {
    const unsigned long long* acc = scratch + 1;
    const unsigned* flags = reinterpret_cast<const unsigned*>(acc + 2 * nbins);
    const int e = -exact_shift(*reinterpret_cast<const unsigned*>(scratch));
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < nbins;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned f = flags[i];
        double v;
        if ((f & 4u) || (f & 3u) == 3u) v = __longlong_as_double(0x7ff8000000000000ll);
        else if (f & 1u) v = __longlong_as_double(0x7ff0000000000000ll);
        else if (f & 2u) v = __longlong_as_double((long long)0xfff0000000000000ull);
        else v = __dmul_rn(__dmul_rn(exact_i128_to_double(acc[2 * i], acc[2 * i + 1]), exact_pow2(e / 2)), exact_pow2(e - e / 2));
        out[i] = accumulate ? out[i] + v : v;
    }
}
#endif

#if SMEMKIT_WANTS(hist_exact_scale_f32)
extern "C" __global__ void hist_exact_scale_f32(const float* w, unsigned long long n, unsigned* scale_word) {
    exact_scale<float>(w, n, scale_word);
}
#endif
#if SMEMKIT_WANTS(hist_exact_scale_f64)
extern "C" __global__ void hist_exact_scale_f64(const double* w, unsigned long long n, unsigned* scale_word) {
    exact_scale<double>(w, n, scale_word);
}
#endif

#define EXACT_KERNELS(MODE, MNAME)                                                                             \
    SMEMKIT_ENTRY(hist_exact_##MNAME##_f32,                                                                    \
        extern "C" __global__ void __launch_bounds__(512) hist_exact_##MNAME##_f32(                            \
            const sample_t* in, unsigned long long n, const float* w, BinParams p, unsigned long long* scratch, \
            unsigned long long* t, int in_shared) {                                                            \
            exact_kernel<MODE, float>(in, n, w, p, scratch, t, in_shared);                                     \
        })                                                                                                     \
    SMEMKIT_ENTRY(hist_exact_##MNAME##_f64,                                                                    \
        extern "C" __global__ void __launch_bounds__(512) hist_exact_##MNAME##_f64(                            \
            const sample_t* in, unsigned long long n, const double* w, BinParams p,                            \
            unsigned long long* scratch, unsigned long long* t, int in_shared) {                               \
            exact_kernel<MODE, double>(in, n, w, p, scratch, t, in_shared);                                    \
        })

#if SAMPLE_IS_HALF
EXACT_KERNELS(MODE_LUT, lut)
#else
#if SAMPLE_IS_FLOAT
#if SAMPLE_IS_F32
EXACT_KERNELS(MODE_UNIFORM32, uniform32)
EXACT_KERNELS(MODE_UNIFORM32_EXACT, uniform32x)
EXACT_KERNELS(MODE_UNIFORM32_INTERIOR, uniform32i)
EXACT_KERNELS(MODE_UNIFORM32_WIDE, uniform32w)
#else
EXACT_KERNELS(MODE_UNIFORM64, uniform64)
EXACT_KERNELS(MODE_UNIFORM64_EXACT, uniform64x)
#endif
#else
EXACT_KERNELS(MODE_INTEGER, integer)
EXACT_KERNELS(MODE_UNIFORM64, uniform64)
#endif
EXACT_KERNELS(MODE_EDGES, edges)
#endif
