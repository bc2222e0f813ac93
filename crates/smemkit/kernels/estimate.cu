// numpy's bin estimators on data already on the GPU (crates/smemkit/src/histogram/cuda/estimate.rs
// drives them; crates/smemkit/src/histogram/bins/stats.rs is the reference). The estimators need
// only a few statistics of the samples (trimmed to the range when one is given): their count,
// extremes, mean, standard deviation, skew and two percentiles. These kernels compute them where
// the samples are, so that only a handful of numbers come back to the host:
//
// - est_extremes: the count of samples inside the range, their extremes (as order-preserving
//   integer keys, so that atomicMin/Max are exact) and the number of NaN.
// - est_sum_values / est_sum_squares / est_sum_cubes / est_combine / est_sequential: numpy's
//   pairwise summation, the same tree as stats.rs, so the sums are identical bit for bit. numpy
//   splits a block of m > 128 values at n2 = m / 2 rounded down to a multiple of 8 and sums blocks
//   of at most 128 values with eight accumulators. The tree depends on m alone: the host picks a
//   depth D whose nodes hold at most 240 values (one leaf, or two after one split) and above which
//   every node is split; eight lanes find a node by following the bits of its index and sum it in
//   numpy's order with every load issued before the first add (see group_node), a warp adds four
//   such node sums as the tree does, and est_combine adds the rest pairwise, which is exactly the
//   upper part of numpy's tree. Without a range, the pass that sums the samples also finds their
//   extremes from the values it loads (so that `scott` and `doane` read the samples once for
//   both). Integer data is summed as numpy's casting reduction does: float64 blocks of 8192
//   values, each pairwise, added in order (est_sequential).
// - est_tile_counts / est_scan / est_compact: the samples inside a range, packed in order, for
//   the sums (numpy sums the trimmed array, whose tree differs from the full one); the pass that
//   counts the tiles' samples can find their extremes too.
// - est_digits / est_select: exact order statistics by radix select over the same keys, 11 bits
//   at a time from the top, for up to four ranks at once (the two neighbours of each quartile);
//   the first digit pass also finds the extremes (so that `fd` and `auto` need no pass of their
//   own for them). When the samples that agree with the ranks' first digits are few, est_gather
//   copies them out in one pass and the later digit passes read only the copy. This is the
//   fallback of the quartiles by a sampled window (est_window.cuh), which reads the samples once.
//
// Every add, subtract, multiply and divide of the sums is an explicitly rounded intrinsic, so that
// NVRTC contracts nothing into a fused multiply-add.
//
// - est_chain_maxima / est_chain_walk (bfloat16 only, est_chain.cuh): ml_dtypes' bfloat16 sums,
//   one value after another with each total rounded to bfloat16, walked by one warp that skips
//   every stretch of values too small to move the total.
//
// Compiled by NVRTC once per sample type: -DSAMPLE_T=<C type> -DSAMPLE_KIND=0 (float32),
// 1 (float64), 2 (signed integer), 3 (unsigned integer), 4 (float16, read as its 16 bits: numpy
// sums float16 values in float32 and rounds each deviation, square and cube to float16) or 5
// (bfloat16, read as its 16 bits: ml_dtypes rounds each operation to bfloat16, sums included).

#ifndef SAMPLE_T
#error "SAMPLE_T must be defined by the host"
#endif
typedef SAMPLE_T sample_t;
typedef unsigned long long u64;
#define FULL 0xffffffffu

#if SAMPLE_KIND == 4
// float16 bits to float32 (exact), and a float32 rounded to the nearest float16 (ties to even,
// overflow to infinity), as numpy's float16 operations round their float32 results.
__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ float r16(float x) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h2f(h);
}
#endif

#if SAMPLE_KIND == 5
// bfloat16 bits to float32 (exact), and a float32 rounded to the nearest bfloat16 (ties to even),
// as ml_dtypes rounds the float32 result of each of its operations.
__device__ __forceinline__ float b2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ float rbf(float x) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return b2f(h);
}
#endif

#if SAMPLE_KIND == 0 || SAMPLE_KIND == 4 || SAMPLE_KIND == 5
typedef float acc_t;
__device__ __forceinline__ acc_t add(acc_t a, acc_t b) { return __fadd_rn(a, b); }
#else
typedef double acc_t;
__device__ __forceinline__ acc_t add(acc_t a, acc_t b) { return __dadd_rn(a, b); }
#endif

// The key order is the samples' order (floats: negative ones reversed below the positive ones).
__device__ __forceinline__ u64 key_of(sample_t v) {
#if SAMPLE_KIND == 0
    const unsigned u = __float_as_uint(v);
    return (u64)((u & 0x80000000u) ? ~u : (u | 0x80000000u));
#elif SAMPLE_KIND == 1
    const u64 u = (u64)__double_as_longlong(v);
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
#elif SAMPLE_KIND == 4 || SAMPLE_KIND == 5
    const unsigned u = v;
    return (u64)((u & 0x8000u) ? (~u & 0xffffu) : (u | 0x8000u));
#elif SAMPLE_KIND == 2
    constexpr int W = 8 * (int)sizeof(sample_t);
    const u64 mask = W == 64 ? ~0ull : ((1ull << (W % 64)) - 1);
    return ((u64)(long long)v & mask) ^ (1ull << (W - 1));
#else
    return (u64)v;
#endif
}

__device__ __forceinline__ bool is_nan(sample_t v) {
#if SAMPLE_KIND < 2
    return v != v;
#elif SAMPLE_KIND == 4
    return (v & 0x7fffu) > 0x7c00u;
#elif SAMPLE_KIND == 5
    return (v & 0x7fffu) > 0x7f80u;
#else
    return false;
#endif
}

// numpy's trimming: float32 and bfloat16 samples against the range rounded to float32 (ml_dtypes
// compares bfloat16 with Python floats in float32), float16 ones against it rounded to float16
// (by the host: lo and hi are float16 values), others in float64.
__device__ __forceinline__ bool kept(sample_t v, int has_range, double lo, double hi) {
    if (!has_range) return true;
#if SAMPLE_KIND == 0
    return v >= __double2float_rn(lo) && v <= __double2float_rn(hi);
#elif SAMPLE_KIND == 4
    const float x = h2f(v);
    return x >= (float)lo && x <= (float)hi;
#elif SAMPLE_KIND == 5
    const float x = b2f(v);
    return x >= __double2float_rn(lo) && x <= __double2float_rn(hi);
#else
    const double x = (double)v;
    return x >= lo && x <= hi;
#endif
}

// Samples each thread of the one-pass kernels, est_digits and est_gather loads before it looks at
// the first.
#define AHEAD 8

#include "est_trips.cuh"

// A warp's smallest and largest key, NaN count and count, added to ext = [count, smallest key,
// largest key, NaN count] (set to [0, ~0, 0, 0] by the host) by its first lane.
__device__ __forceinline__ void flush_extremes(u64 count, u64 lo_key, u64 hi_key, u64 nans, u64* ext) {
    for (int o = 16; o > 0; o >>= 1) {
        count += __shfl_down_sync(FULL, count, o);
        nans += __shfl_down_sync(FULL, nans, o);
        const u64 a = __shfl_down_sync(FULL, lo_key, o);
        const u64 b = __shfl_down_sync(FULL, hi_key, o);
        lo_key = a < lo_key ? a : lo_key;
        hi_key = b > hi_key ? b : hi_key;
    }
    if ((threadIdx.x & 31) == 0) {
        if (count) {
            atomicAdd(&ext[0], count);
            atomicMin(&ext[1], lo_key);
            atomicMax(&ext[2], hi_key);
        }
        if (nans) atomicAdd(&ext[3], nans);
    }
}

// out: [kept count, smallest key, largest key, NaN count], set to [0, ~0, 0, 0] by the host.
extern "C" __global__ void __launch_bounds__(256) est_extremes(const sample_t* __restrict__ in, u64 n,
                                                               int has_range, double lo, double hi,
                                                               u64* __restrict__ out) {
    u64 count = 0, lo_key = ~0ull, hi_key = 0, nans = 0;
    auto look = [&](sample_t v, bool inside) {
        const bool nan = inside && is_nan(v);
        nans += nan;
        if (!inside || nan || !kept(v, has_range, lo, hi)) return;
        ++count;
        const u64 k = key_of(v);
        lo_key = k < lo_key ? k : lo_key;
        hi_key = k > hi_key ? k : hi_key;
    };
    each_trip(in, n, look);
    flush_extremes(count, lo_key, hi_key, nans, out);
}

// The value numpy sums: the sample (TERM 0), its squared deviation from p1 (TERM 1, np.std), or
// its deviation divided by p2, cubed (TERM 2, Doane's skew). The cube is correctly rounded
// (float32: the exact square times the value, rounded once in float64 and once to float32; float64:
// the square and the product split into exact parts with fused multiply-adds): the host's libm
// `pow` is within an ulp of it.
template <int TERM>
__device__ __forceinline__ acc_t term(sample_t v, acc_t p1, acc_t p2) {
#if SAMPLE_KIND == 4
    // float16: p1 and p2 are float16 values; each operation rounded to float16 as numpy does (its
    // cube is float32's pow rounded to float16: the exact cube, 33 bits, rounded once to float32).
    const float x = h2f(v);
    if (TERM == 0) return x;
    const float d = r16(__fsub_rn(x, p1));
    if (TERM == 1) return r16(__fmul_rn(d, d));
    const double q = (double)r16(__fdiv_rn(d, p2));
    return r16(__double2float_rn(__dmul_rn(__dmul_rn(q, q), q)));
#elif SAMPLE_KIND == 5
    // bfloat16: p1 and p2 are bfloat16 values; each operation rounded to bfloat16 as ml_dtypes
    // does (its cube is float32's pow rounded to bfloat16: the cube of 8 significant bits is
    // exact in float64, then rounded once to float32).
    const float x = b2f(v);
    if (TERM == 0) return x;
    const float d = rbf(__fsub_rn(x, p1));
    if (TERM == 1) return rbf(__fmul_rn(d, d));
    const double q = (double)rbf(__fdiv_rn(d, p2));
    return rbf(__double2float_rn(__dmul_rn(__dmul_rn(q, q), q)));
#elif SAMPLE_KIND == 0
    if (TERM == 0) return v;
    const float d = __fsub_rn(v, p1);
    if (TERM == 1) return __fmul_rn(d, d);
    const double q = (double)__fdiv_rn(d, p2);
    return __double2float_rn(__dmul_rn(__dmul_rn(q, q), q));
#else
    const double x = (double)v;
    if (TERM == 0) return x;
    const double d = __dsub_rn(x, p1);
    if (TERM == 1) return __dmul_rn(d, d);
    const double q = __ddiv_rn(d, p2);
    const double sq = __dmul_rn(q, q);
    const double sq_err = __fma_rn(q, q, -sq);
    const double hi = __dmul_rn(sq, q);
    const double lo = __fma_rn(sq_err, q, __fma_rn(sq, q, -hi));
    return __dadd_rn(hi, lo);
#endif
}

// The most rows of 8 values a node of the kernels' depth holds (nodes of at most 240 values: see
// estimate_passes.rs for the choice of the depth).
#define NODE_ROWS 30

#include "est_sums.cuh"

// Blocks per SM the sum kernels are built for: three (24 warps) for float32, whose rows and float32
// chains fit the 80 registers that leaves without spilling; two for the float64 chains of the
// other types (which spill at 80).
#if SAMPLE_KIND == 0 || SAMPLE_KIND == 4 || SAMPLE_KIND == 5
#define SUM_BLOCKS 3
#else
#define SUM_BLOCKS 2
#endif

// One kernel per term, so that the cubes' division does not set the registers of the others.
extern "C" __global__ void __launch_bounds__(256, SUM_BLOCKS) est_sum_values(const sample_t* __restrict__ in, u64 m,
                                                                 u64 problems, int depth, acc_t p1, acc_t p2,
                                                                 acc_t* __restrict__ out,
                                                                 u64* __restrict__ ext) {
    sum_nodes<0>(in, m, problems, depth, p1, p2, out, ext);
}

extern "C" __global__ void __launch_bounds__(256, SUM_BLOCKS) est_sum_squares(const sample_t* __restrict__ in, u64 m,
                                                                  u64 problems, int depth, acc_t p1, acc_t p2,
                                                                  acc_t* __restrict__ out,
                                                                  u64* __restrict__ ext) {
    sum_nodes<1>(in, m, problems, depth, p1, p2, out, ext);
}

extern "C" __global__ void __launch_bounds__(256, SUM_BLOCKS) est_sum_cubes(const sample_t* __restrict__ in, u64 m,
                                                                u64 problems, int depth, acc_t p1, acc_t p2,
                                                                acc_t* __restrict__ out,
                                                                u64* __restrict__ ext) {
    sum_nodes<2>(in, m, problems, depth, p1, p2, out, ext);
}

// Groups of 2^k consecutive values (k <= 10) added pairwise as a perfect binary tree:
// out[g] = the sum of in[g << k .. (g + 1) << k). One group per block of at least 2^(k-1) threads
// (32 to 512).
extern "C" __global__ void __launch_bounds__(512) est_combine(const acc_t* __restrict__ in, int k,
                                                              acc_t* __restrict__ out) {
    __shared__ acc_t s[1024];
    const unsigned width = 1u << k;
    const acc_t* g = in + ((u64)blockIdx.x << k);
    for (unsigned i = threadIdx.x; i < width; i += blockDim.x) s[i] = g[i];
    __syncthreads();
    for (unsigned w = width; w > 1; w >>= 1) {
        acc_t v = 0;
        const unsigned half = w >> 1;
        if (threadIdx.x < half) v = add(s[2 * threadIdx.x], s[2 * threadIdx.x + 1]);
        __syncthreads();
        if (threadIdx.x < half) s[threadIdx.x] = v;
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// numpy's running total of a casting reduction: 0.0 plus each block's sum, in order. One warp:
// the lanes load 32 sums at a time (the next 32 while these are added) and every lane adds them
// in order from the lanes holding them, so that the chain of additions waits on no load.
extern "C" __global__ void est_sequential(const acc_t* __restrict__ in, u64 count, acc_t* __restrict__ out) {
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    const unsigned lane = threadIdx.x;
    acc_t acc = 0;
    acc_t next = lane < count ? in[lane] : (acc_t)0;
    for (u64 i = 0; i < count; i += 32) {
        const acc_t v = next;
        next = i + 32 + lane < count ? in[i + 32 + lane] : (acc_t)0;
        const u64 here = count - i < 32 ? count - i : 32;
        for (unsigned j = 0; j < 32; ++j) {
            const acc_t x = __shfl_sync(FULL, v, j);
            if (j < here) acc = add(acc, x);
        }
    }
    if (lane == 0) out[0] = acc;
}

#define TILE_THREADS 256
#define TILE_PER_THREAD 16
#define TILE (TILE_THREADS * TILE_PER_THREAD)

// counts[b]: the samples of tile b (TILE values) inside the range. The blocks stride over the
// tiles (one wave of them), so that with `ext` non-null (the same pass adds the extremes of the
// samples inside the range to it, as est_extremes does, so that a trimmed `scott` or `doane`,
// which packs the samples, reads them once for both) each warp flushes its extremes once: a flush
// per tile made the global atomics on ext's four words the pass's bound.
extern "C" __global__ void __launch_bounds__(TILE_THREADS) est_tile_counts(const sample_t* __restrict__ in, u64 n,
                                                                           double lo, double hi,
                                                                           u64* __restrict__ counts,
                                                                           u64* __restrict__ ext) {
    __shared__ unsigned warp[TILE_THREADS / 32];
    const u64 tiles = (n + TILE - 1) / TILE;
    u64 kept_all = 0, lo_key = ~0ull, hi_key = 0, nans = 0;
    for (u64 b = blockIdx.x; b < tiles; b += gridDim.x) {
        const u64 base = b * TILE;
        unsigned c = 0;
        sample_t x[TILE_PER_THREAD];
#pragma unroll
        for (unsigned k = 0; k < TILE_PER_THREAD; ++k) {
            const u64 i = base + threadIdx.x + k * TILE_THREADS;
            if (i < n) x[k] = in[i];
        }
#pragma unroll
        for (unsigned k = 0; k < TILE_PER_THREAD; ++k) {
            const u64 i = base + threadIdx.x + k * TILE_THREADS;
            if (i >= n) continue;
            const sample_t v = x[k];
            if (is_nan(v)) {
                ++nans;
            } else if (kept(v, 1, lo, hi)) {
                ++c;
                const u64 key = key_of(v);
                lo_key = key < lo_key ? key : lo_key;
                hi_key = key > hi_key ? key : hi_key;
            }
        }
        kept_all += c;
        for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
        if ((threadIdx.x & 31) == 0) warp[threadIdx.x >> 5] = c;
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned total = 0;
            for (int w = 0; w < TILE_THREADS / 32; ++w) total += warp[w];
            counts[b] = total;
        }
        __syncthreads();
    }
    if (ext) flush_extremes(kept_all, lo_key, hi_key, nans, ext);
}

// counts[0..tiles) replaced by their exclusive prefix sums: one block of 1024 threads.
extern "C" __global__ void __launch_bounds__(1024) est_scan(u64* __restrict__ counts, u64 tiles) {
    __shared__ u64 part[1024];
    const u64 per = (tiles + 1023) / 1024;
    const u64 a = (u64)threadIdx.x * per;
    const u64 b = a + per < tiles ? a + per : tiles;
    u64 s = 0;
    for (u64 i = a; i < b; ++i) s += counts[i];
    part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 run = 0;
        for (int t = 0; t < 1024; ++t) {
            const u64 v = part[t];
            part[t] = run;
            run += v;
        }
    }
    __syncthreads();
    u64 run = part[threadIdx.x];
    for (u64 i = a; i < b; ++i) {
        const u64 v = counts[i];
        counts[i] = run;
        run += v;
    }
}

// The samples of each tile inside the range, in order, at out[offsets[b]...]: the tile in rounds
// of TILE_THREADS consecutive samples (coalesced reads, every load issued first), each round's
// kept samples placed by a warp ballot and the block's warp counts (coalesced writes).
extern "C" __global__ void __launch_bounds__(TILE_THREADS) est_compact(const sample_t* __restrict__ in, u64 n,
                                                                       double lo, double hi,
                                                                       const u64* __restrict__ offsets,
                                                                       sample_t* __restrict__ out) {
    __shared__ unsigned warp_kept[TILE_PER_THREAD][TILE_THREADS / 32];
    const unsigned lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const u64 base = (u64)blockIdx.x * TILE + threadIdx.x;
    sample_t x[TILE_PER_THREAD];
    unsigned ballots[TILE_PER_THREAD];
#pragma unroll
    for (unsigned k = 0; k < TILE_PER_THREAD; ++k) {
        const u64 i = base + k * TILE_THREADS;
        if (i < n) x[k] = in[i];
    }
#pragma unroll
    for (unsigned k = 0; k < TILE_PER_THREAD; ++k) {
        const u64 i = base + k * TILE_THREADS;
        ballots[k] = __ballot_sync(FULL, i < n && kept(x[k], 1, lo, hi));
        if (lane == 0) warp_kept[k][wid] = __popc(ballots[k]);
    }
    __syncthreads();
    u64 at = offsets[blockIdx.x];
    const unsigned below = (1u << lane) - 1;
#pragma unroll
    for (unsigned k = 0; k < TILE_PER_THREAD; ++k) {
        unsigned before = 0, total = 0;
#pragma unroll
        for (unsigned w = 0; w < TILE_THREADS / 32; ++w) {
            const unsigned c = warp_kept[k][w];
            before += w < wid ? c : 0;
            total += c;
        }
        if ((ballots[k] >> lane) & 1) out[at + before + __popc(ballots[k] & below)] = x[k];
        at += total;
    }
}

#define RANKS 4
#define DIGIT_BITS 11
#define DIGITS (1 << DIGIT_BITS)

// The first target with the same prefix as target t: targets that share a prefix share a
// histogram, so a sample is counted once per distinct prefix.
__device__ __forceinline__ int shares_with(const u64* prefix, int t) {
    for (int u = 0; u < t; ++u)
        if (prefix[u] == prefix[t]) return u;
    return t;
}

// The key's place among the keys of two disjoint windows [lo0, hi0] < [lo1, ...] taken
// together: window 0's keys from 0, window 1's from off1 = hi0 - lo0 + 1 (one window: hi0 its top,
// so that every key of the copy maps by the first case). Order-preserving on the windows' keys,
// whose mapped keys span far fewer bits than the keys themselves.
__device__ __forceinline__ u64 map_key(u64 key, u64 lo0, u64 hi0, u64 lo1, u64 off1) {
    return key <= hi0 ? key - lo0 : key - lo1 + off1;
}

// One radix-select pass: for each target t, hist[t][d] counts the samples inside the range whose
// key agrees with prefix[t] above bit shift + bits and has digit d in bits [shift, shift + bits).
// The first pass (`first` 1 or 2: the prefixes are all 0, every sample agrees) counts every sample
// into one histogram, whose few busy digits the warp aggregates: 1, by a warp match (one shared
// atomic per distinct digit); 2, only the lanes sharing lane 0's digit (one warp vote; the others
// add one by one). Later passes (`first` 0) count the few samples that agree with a prefix one
// by one. With `ext` non-null the
// pass also adds the extremes of the samples inside the range to it, as est_extremes does.
// MAPPED (est_digits_mapped): the keys are first mapped by map_key (a copy of the samples of one
// or two key windows, see est_window), so that their top digits spread.
template <bool MAPPED>
__device__ __forceinline__ void digits_pass(const sample_t* __restrict__ in, u64 n, int has_range,
                                            double lo, double hi, int shift, int bits, int first,
                                            const u64* __restrict__ prefix, u64* __restrict__ hist,
                                            u64* __restrict__ ext, u64 lo0, u64 hi0, u64 lo1, u64 off1) {
    __shared__ unsigned counts[RANKS][DIGITS];
    __shared__ u64 pre[RANKS];
    __shared__ int owner[RANKS];
    const unsigned digits = 1u << bits;
    for (unsigned i = threadIdx.x; i < RANKS * DIGITS; i += blockDim.x) (&counts[0][0])[i] = 0;
    if (threadIdx.x < RANKS) pre[threadIdx.x] = prefix[threadIdx.x];
    __syncthreads();
    if (threadIdx.x < RANKS) owner[threadIdx.x] = shares_with(pre, threadIdx.x);
    __syncthreads();
    const u64 high = shift + bits >= 64 ? 0 : (~0ull << (shift + bits));
    const unsigned lane = threadIdx.x & 31;
    const u64 stride = (u64)gridDim.x * blockDim.x * AHEAD;
    u64 count = 0, lo_key = ~0ull, hi_key = 0, nans = 0;
    // Every thread of a block makes the same number of trips, so the warp-wide match is legal.
    // Each trip loads AHEAD samples per thread before counting any (the counting's shared atomics
    // and warp votes would otherwise leave one load in flight per thread).
    for (u64 i0 = (u64)blockIdx.x * blockDim.x * AHEAD; i0 < n; i0 += stride) {
        sample_t x[AHEAD];
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) {
            const u64 i = i0 + (u64)u * blockDim.x + threadIdx.x;
            if (i < n) x[u] = in[i];
        }
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) {
            const u64 i = i0 + (u64)u * blockDim.x + threadIdx.x;
            bool valid = false;
            u64 key = 0;
            if (i < n) {
                const sample_t v = x[u];
                const bool nan = is_nan(v);
                nans += nan;
                valid = !nan && kept(v, has_range, lo, hi);
                key = key_of(v);
                if (MAPPED) key = map_key(key, lo0, hi0, lo1, off1);
            }
            if (valid) {
                ++count;
                lo_key = key < lo_key ? key : lo_key;
                hi_key = key > hi_key ? key : hi_key;
            }
            const unsigned digit = (unsigned)(key >> shift) & (digits - 1);
            if (first == 1) {
                const unsigned peers = __match_any_sync(FULL, valid ? digit : 0xffffffffu);
                if (valid && (unsigned)(__ffs(peers) - 1) == lane) atomicAdd(&counts[0][digit], __popc(peers));
                continue;
            }
            if (first == 2) {
                // The lanes sharing lane 0's digit (all of them when the samples are tied) add
                // together; the others, whose digits repeat only a few times in a warp of samples
                // from a spread distribution, add one by one.
                const unsigned d0 = __shfl_sync(FULL, valid ? digit : 0xffffffffu, 0);
                const bool with0 = valid && digit == d0;
                const unsigned same = __ballot_sync(FULL, with0);
                if (with0) {
                    if ((unsigned)(__ffs(same) - 1) == lane) atomicAdd(&counts[0][digit], __popc(same));
                } else if (valid) {
                    atomicAdd(&counts[0][digit], 1u);
                }
                continue;
            }
            for (int t = 0; t < RANKS; ++t) {
                if (owner[t] != t) continue;
                if (valid && ((key ^ pre[t]) & high) == 0) atomicAdd(&counts[t][digit], 1u);
            }
        }
    }
    if (ext) flush_extremes(count, lo_key, hi_key, nans, ext);
    __syncthreads();
    for (int t = 0; t < RANKS; ++t) {
        if (owner[t] != t) continue;
        for (unsigned d = threadIdx.x; d < digits; d += blockDim.x) {
            const unsigned c = counts[t][d];
            if (c) atomicAdd(&hist[t * DIGITS + d], (u64)c);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) est_digits(const sample_t* __restrict__ in, u64 n,
                                                             int has_range, double lo, double hi,
                                                             int shift, int bits, int first,
                                                             const u64* __restrict__ prefix,
                                                             u64* __restrict__ hist,
                                                             u64* __restrict__ ext) {
    digits_pass<false>(in, n, has_range, lo, hi, shift, bits, first, prefix, hist, ext, 0, 0, 0, 0);
}

#define SELECT_THREADS 1024

// After est_digits: each target's digit is the one holding its rank (0-based among the samples
// that agree with its prefix); the rank becomes the rank inside that digit, and sizes[t] the
// number of samples agreeing with the longer prefix. One block of SELECT_THREADS threads: thread i
// holds digits 2i and 2i + 1, a block-wide scan gives the counts below them, and the one thread
// whose digits straddle the rank writes the target's answer (a rank beyond every count, which
// the host never asks for, leaves the prefix and size as they were and the rank past the total).
extern "C" __global__ void __launch_bounds__(SELECT_THREADS) est_select(int shift, int bits,
                                                                         u64* __restrict__ prefix,
                                                                         u64* __restrict__ rank,
                                                                         const u64* __restrict__ hist,
                                                                         u64* __restrict__ sizes) {
    __shared__ u64 pre[RANKS], want[RANKS];
    __shared__ u64 warp_total[SELECT_THREADS / 32];
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid < RANKS) {
        pre[tid] = prefix[tid];
        want[tid] = rank[tid];
    }
    __syncthreads();
    const unsigned digits = 1u << bits;
    for (int t = 0; t < RANKS; ++t) {
        const u64* h = hist + shares_with(pre, t) * DIGITS;
        const unsigned d0 = 2 * tid, d1 = d0 + 1;
        const u64 c0 = d0 < digits ? h[d0] : 0, c1 = d1 < digits ? h[d1] : 0;
        // Inclusive scan of c0 + c1 over the warp, then over the warps' totals.
        u64 incl = c0 + c1;
        for (int o = 1; o < 32; o <<= 1) {
            const u64 v = __shfl_up_sync(FULL, incl, o);
            if (lane >= (unsigned)o) incl += v;
        }
        if (lane == 31) warp_total[warp] = incl;
        __syncthreads();
        u64 below = incl - (c0 + c1);
        for (unsigned w = 0; w < warp; ++w) below += warp_total[w];
        const u64 r = want[t];
        if (r >= below && r < below + c0) {
            prefix[t] = pre[t] | ((u64)d0 << shift);
            sizes[t] = c0;
            rank[t] = r - below;
        } else if (r >= below + c0 && r < below + c0 + c1) {
            prefix[t] = pre[t] | ((u64)d1 << shift);
            sizes[t] = c1;
            rank[t] = r - below - c0;
        }
        if (tid == SELECT_THREADS - 1 && r >= below + c0 + c1) rank[t] = r - (below + c0 + c1);
        __syncthreads();
    }
}

#define GATHER 256

// The samples inside the range whose key agrees with one of the prefixes in its bits from `shift`
// up, copied (in no particular order) to out[0..cap) for the remaining radix-select passes, which
// then read only them. Each warp stages what it takes in shared memory and claims room in `out`
// (counter: the samples written, 0 from the host) once per GATHER samples, not once per sample.
extern "C" __global__ void __launch_bounds__(256) est_gather(const sample_t* __restrict__ in, u64 n,
                                                             int has_range, double lo, double hi, int shift,
                                                             const u64* __restrict__ prefix,
                                                             sample_t* __restrict__ out, u64 cap,
                                                             u64* __restrict__ counter) {
    __shared__ sample_t stage[256 / 32][GATHER];
    __shared__ u64 pre[RANKS];
    __shared__ int owner[RANKS];
    if (threadIdx.x < RANKS) pre[threadIdx.x] = prefix[threadIdx.x];
    __syncthreads();
    if (threadIdx.x < RANKS) owner[threadIdx.x] = shares_with(pre, threadIdx.x);
    __syncthreads();
    const u64 high = shift >= 64 ? 0 : (~0ull << shift);
    const unsigned lane = threadIdx.x & 31;
    sample_t* mine = stage[threadIdx.x >> 5];
    unsigned held = 0;
    const u64 stride = (u64)gridDim.x * blockDim.x * AHEAD;
    // Every thread of a block makes the same number of trips, so the warp-wide votes are legal;
    // each trip loads AHEAD samples per thread before taking any (as est_digits).
    for (u64 i0 = (u64)blockIdx.x * blockDim.x * AHEAD; i0 < n; i0 += stride) {
        sample_t x[AHEAD];
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) {
            const u64 i = i0 + (u64)u * blockDim.x + threadIdx.x;
            if (i < n) x[u] = in[i];
        }
#pragma unroll
        for (int u = 0; u < AHEAD; ++u) {
            const u64 i = i0 + (u64)u * blockDim.x + threadIdx.x;
            bool take = false;
            sample_t v = 0;
            if (i < n) {
                v = x[u];
                if (!is_nan(v) && kept(v, has_range, lo, hi)) {
                    const u64 key = key_of(v);
                    for (int t = 0; t < RANKS; ++t)
                        if (owner[t] == t && ((key ^ pre[t]) & high) == 0) take = true;
                }
            }
            const unsigned votes = __ballot_sync(FULL, take);
            if (take) mine[held + __popc(votes & ((1u << lane) - 1))] = v;
            held += __popc(votes);
            if (held > GATHER - 32) {
                __syncwarp();
                u64 base = 0;
                if (lane == 0) base = atomicAdd(counter, (u64)held);
                base = __shfl_sync(FULL, base, 0);
                for (unsigned j = lane; j < held; j += 32)
                    if (base + j < cap) out[base + j] = mine[j];
                held = 0;
                __syncwarp();
            }
        }
    }
    __syncwarp();
    if (held) {
        u64 base = 0;
        if (lane == 0) base = atomicAdd(counter, (u64)held);
        base = __shfl_sync(FULL, base, 0);
        for (unsigned j = lane; j < held; j += 32)
            if (base + j < cap) out[base + j] = mine[j];
    }
}

// The quartiles by a sampled window: est_digits_mapped, est_sample, est_window.
#include "est_window.cuh"

#if SAMPLE_KIND == 5
// ml_dtypes' one-after-another bfloat16 sums: est_chain_maxima, est_chain_walk.
#include "est_chain.cuh"
#endif
