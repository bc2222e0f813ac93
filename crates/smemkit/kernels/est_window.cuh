// The quartiles by a sampled window (crates/smemkit/src/histogram/cuda/estimate_window.rs), included
// at the end of estimate.cu (whose types, key_of, kept, flush_extremes, digits_pass, GATHER and
// AHEAD these kernels use):
// est_sample copies a few evenly spaced samples, among which the radix select finds the order
// statistics that end one or two key windows that should hold the quartiles' neighbours; est_window, one pass over all samples,
// counts the samples below and up to each window's ends, copies those inside the windows and finds
// the extremes as est_digits' first pass does; est_digits_mapped then selects in the copy on keys
// mapped into the windows (map_key). The host checks with the counts that every rank it wants is
// inside a window and otherwise runs the radix select over all samples, so the result is exact
// whatever the sample looked like.

// est_digits over a copy made by est_window (no range, no extremes), its keys mapped by map_key;
// held to est_digits' five blocks an SM (the host's DIGITS_BLOCKS_PER_SM), which the map's
// registers would otherwise exceed for 64-bit integers.
extern "C" __global__ void __launch_bounds__(256, 5) est_digits_mapped(const sample_t* __restrict__ in, u64 n,
                                                                       int shift, int bits, int first,
                                                                       const u64* __restrict__ prefix,
                                                                       u64* __restrict__ hist, u64 lo0,
                                                                       u64 hi0, u64 lo1, u64 off1) {
    digits_pass<true>(in, n, 0, 0.0, 0.0, shift, bits, first, prefix, hist, nullptr, lo0, hi0, lo1, off1);
}

// The samples at indices floor(i * n / m), i < m, copied to out[i] (the host selects among them
// as among samples: the range and NaN are left to the passes that read them).
extern "C" __global__ void __launch_bounds__(256) est_sample(const sample_t* __restrict__ in, u64 n, u64 m,
                                                             sample_t* __restrict__ out) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    // i * n / m without overflow: i * (n % m) < m * m, and the host keeps m below 2^24.
    if (i < m) out[i] = in[i * (n / m) + i * (n % m) / m];
}

// The keys of up to 32 bits as 32-bit words (keys of 32-bit samples compare in one instruction).
template <int SIZE> struct key_word { typedef u64 t; };
template <> struct key_word<1> { typedef unsigned t; };
template <> struct key_word<2> { typedef unsigned t; };
template <> struct key_word<4> { typedef unsigned t; };
typedef key_word<sizeof(sample_t)>::t wkey_t;

__device__ __forceinline__ u64 warp_sum(u64 x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(FULL, x, o);
    return x;
}

// What one thread of est_window has seen: the extremes' statistics and the window counts.
struct window_seen {
    wkey_t lo_key, hi_key;
    unsigned count, nans, below0, upto0, below1, upto1;
};

// The range as est_window compares samples with it (kept's rounding, done once).
#if SAMPLE_KIND == 0
typedef float bound_t;
__device__ __forceinline__ bound_t bound_of(double x) { return __double2float_rn(x); }
__device__ __forceinline__ bound_t bound_value(sample_t v) { return v; }
#elif SAMPLE_KIND == 4
typedef float bound_t;
__device__ __forceinline__ bound_t bound_of(double x) { return (float)x; }  // a float16 value
__device__ __forceinline__ bound_t bound_value(sample_t v) { return h2f(v); }
#elif SAMPLE_KIND == 5
typedef float bound_t;
__device__ __forceinline__ bound_t bound_of(double x) { return __double2float_rn(x); }
__device__ __forceinline__ bound_t bound_value(sample_t v) { return b2f(v); }
#else
typedef double bound_t;
__device__ __forceinline__ bound_t bound_of(double x) { return x; }
__device__ __forceinline__ bound_t bound_value(sample_t v) { return (bound_t)v; }
#endif

// Looks at sample v (`inside`: within the n samples; RANGE: trimmed to [lo, hi], which `kept`
// would do) for est_window; returns whether to copy it.
template <bool RANGE>
__device__ __forceinline__ bool window_look(sample_t v, bool inside, bound_t lo, bound_t hi, wkey_t lo0,
                                            wkey_t hi0, wkey_t lo1, wkey_t hi1, window_seen& s) {
    const bool nan = inside && is_nan(v);
    bool valid = inside && !nan;
    if (RANGE) valid = valid && bound_value(v) >= lo && bound_value(v) <= hi;
    const wkey_t key = (wkey_t)key_of(v);
    s.nans += nan;
    s.count += valid;
    if (valid) {
        s.lo_key = key < s.lo_key ? key : s.lo_key;
        s.hi_key = key > s.hi_key ? key : s.hi_key;
    }
    const bool lt0 = key < lo0, le0 = key <= hi0, lt1 = key < lo1, le1 = key <= hi1;
    s.below0 += valid && lt0;
    s.upto0 += valid && le0;
    s.below1 += valid && lt1;
    s.upto1 += valid && le1;
    return valid && ((!lt0 && le0) || (!lt1 && le1));
}

// Copies the warp's taken samples to out in batches: stages them in `mine` (the warp's GATHER
// slots, `held` of them full) and claims room once the stage is nearly full (counts[8]: the
// samples claimed, past cap too) or, with `last`, for what is left.
__device__ __forceinline__ void window_stage(bool take, sample_t v, sample_t* mine, unsigned& held,
                                             bool last, sample_t* __restrict__ out, u64 cap,
                                             u64* __restrict__ counts) {
    const unsigned lane = threadIdx.x & 31;
    if (!last) {
        const unsigned votes = __ballot_sync(FULL, take);
        if (votes == 0) return;
        if (take) mine[held + __popc(votes & ((1u << lane) - 1))] = v;
        held += __popc(votes);
        if (held <= GATHER - 32) return;
    }
    if (held == 0) return;
    __syncwarp();
    u64 base = 0;
    if (lane == 0) base = atomicAdd(&counts[8], (u64)held);
    base = __shfl_sync(FULL, base, 0);
    for (unsigned j = lane; j < held; j += 32)
        if (base + j < cap) out[base + j] = mine[j];
    held = 0;
    __syncwarp();
}

template <bool RANGE>
__device__ __forceinline__ void window_pass(const sample_t* __restrict__ in, u64 n, bound_t lo, bound_t hi,
                                            wkey_t lo0, wkey_t hi0, wkey_t lo1, wkey_t hi1,
                                            sample_t* __restrict__ out, u64 cap, u64* __restrict__ counts,
                                            sample_t* mine) {
    unsigned held = 0;
    window_seen s = {(wkey_t)~0ull, 0, 0, 0, 0, 0, 0, 0};
    auto look = [&](sample_t v, bool inside) {
        const bool take = window_look<RANGE>(v, inside, lo, hi, lo0, hi0, lo1, hi1, s);
        window_stage(take, v, mine, held, false, out, cap, counts);
    };
    each_trip(in, n, look);
    window_stage(false, (sample_t)0, mine, held, true, out, cap, counts);
    flush_extremes(s.count, (u64)s.lo_key, (u64)s.hi_key, s.nans, counts);
    const u64 b0 = warp_sum(s.below0), u0 = warp_sum(s.upto0);
    const u64 b1 = warp_sum(s.below1), u1 = warp_sum(s.upto1);
    if ((threadIdx.x & 31) == 0) {
        if (b0) atomicAdd(&counts[4], b0);
        if (u0) atomicAdd(&counts[5], u0);
        if (b1) atomicAdd(&counts[6], b1);
        if (u1) atomicAdd(&counts[7], u1);
    }
}

// One pass over the samples for two key windows [lo0, hi0] and [lo1, hi1] (the same twice when the
// host merged them): the samples inside the range whose key is in a window are copied (in no
// particular order, staged per warp as est_gather does) to out[0..cap); counts (set by the host to
// [0, ~0, 0, 0, 0...]) gets [kept count, smallest key, largest key, NaN count] as est_extremes
// gives them, then the kept samples with a key below lo0, up to hi0, below lo1 and up to hi1, and
// the number of samples taken (all of them, even past cap). Four blocks an SM (the host's
// WINDOW_BLOCKS_PER_SM) keep enough loads in flight; the trips wholly inside the samples (all but
// the last few) skip the per-sample bounds checks, and the pass without a range any comparison
// with it.
extern "C" __global__ void __launch_bounds__(256, 4) est_window(const sample_t* __restrict__ in, u64 n,
                                                                int has_range, double lo, double hi,
                                                                u64 wlo0, u64 whi0, u64 wlo1, u64 whi1,
                                                                sample_t* __restrict__ out, u64 cap,
                                                                u64* __restrict__ counts) {
    __shared__ sample_t stage[256 / 32][GATHER];
    sample_t* mine = stage[threadIdx.x >> 5];
    const wkey_t lo0 = (wkey_t)wlo0, hi0 = (wkey_t)whi0, lo1 = (wkey_t)wlo1, hi1 = (wkey_t)whi1;
    if (has_range)
        window_pass<true>(in, n, bound_of(lo), bound_of(hi), lo0, hi0, lo1, hi1, out, cap, counts, mine);
    else
        window_pass<false>(in, n, 0, 0, lo0, hi0, lo1, hi1, out, cap, counts, mine);
}
