// numpy's binning rule on the device, shared by every histogram kernel: the parameters the host
// passes (`BinParams`), and `locate`, which gives a sample's bin or the slot of a sample outside the
// bins, in each binning mode. Included by histogram.cu after the sample-type defines.
//
// The uniform modes repeat numpy's arithmetic exactly (crates/smemkit/src/bins.rs is the reference):
// the estimate (x - first) / denom * n in the same precision, then the correction against the edge
// values, which are recomputed here with linspace's formula. The _rn intrinsics keep NVRTC from
// contracting a multiply and an add into one FMA, which would round differently from numpy.

#include "search_table.cuh"

// Mirrors `KernelBinParams` in crates/smemkit/src/cuda/params.rs field for field.
struct BinParams {
    unsigned long long nbins;
    double first64, last64, denom64, start64, stop64, step64, delta64, div64;
    const double* edges;  // explicit edges (nbins + 1 of them), mode EDGES only
    float first32, last32, denom32, start32, stop32, step32, delta32, div32;
    int denom_is_f64;     // float32 mode: numpy divides in float64 when the range came from the caller
    int linspace_in_f32;  // float32 mode: edges from linspace in float32 (automatic range)
    int step_zero;        // linspace's special case for a zero step
    int clamp;            // out-of-range samples go to the first / last bin
    int aggregate;        // combine equal bins across a warp before the atomic (skewed data)
    unsigned int bins_per_block;  // cluster: bins owned by each block of the cluster
    int multiply;         // 1: the estimate multiplies by n / denom (where the host proved it exact);
                          // 2: float32 bins on a power-of-two grid (mode uniform32x)
    float scale32;
    double scale64;
    const float* edges32;  // numpy's float32 edges (uniform32 with multiply, small bin counts), or null
    const unsigned* gate;  // the skew verdict (see `hist_verdict`), or null: the kernel always runs
    unsigned gate_want;    // with `gate`: the verdict for which this kernel runs
    const unsigned* lut;   // mode LUT: the slot of each of the 65536 codes of a 16-bit float
    double interior_lo, interior_hi;  // multiply: fractions of an estimate that need no correction
                                      // (mode uniform32w: of its float64 shortcut's estimate)
    double interior64_first, interior64_scale;  // mode uniform32w: m = (x - first) * scale
    double grid64_inv, grid64_first;  // mode uniform64x: bin = floor(x * inv) - first
    float interior32_scale, interior32_lo, interior32_hi;  // the same in float32 (hi 0: off)
    SearchTable table;  // mode EDGES: narrows the search over `edges` (null starts: none)
    unsigned long long* lanes16;  // sliced counts: the flush's 16-bit lanes (`flush_packed_lanes16`), or null
    unsigned stage_ring;  // sliced counts of mode uniform32w: 1 where the warps' staging rings follow the hot lanes
    unsigned spill_bits;  // spill: counter width, 8 or 4, or 0: chosen by the kernel from its probes
};

// With the multiply estimate m (float64, m >= 0): whether m's fractional part is far enough from
// both edges of its bin that floor(m) is numpy's bin with no edge read; the host proved the bound
// (`interior_fraction` in crates/smemkit/src/histogram/bins/estimate.rs) or set (0, 0).
__device__ __forceinline__ bool interior(double m, long long est, const BinParams& p) {
    const double frac = __dsub_rn(m, (double)est);
    return frac > p.interior_lo && frac < p.interior_hi && est < (long long)p.nbins;
}

// `auto`'s choice between its planned strategy and global is made on the device (no host round
// trip, so a run can be captured in a CUDA graph): both are enqueued, each gated on the verdict, and
// the one not chosen returns here before touching memory. The test is uniform across the grid, so
// returning ahead of barriers is safe.
__device__ __forceinline__ bool gated_off(const BinParams& p) {
    return p.gate != nullptr && *p.gate != p.gate_want;
}

// Slot codes for samples that land in no bin.
#define SLOT_BELOW (-1LL)
#define SLOT_ABOVE (-2LL)
#define SLOT_NAN (-3LL)

__device__ __forceinline__ bool is_nan_sample(sample_t x) {
#if SAMPLE_IS_FLOAT
    return x != x;
#else
    return false;
#endif
}

// Edge i of numpy's linspace. The index type is the caller's: a bin number below 2^24 as an int
// converts with 32-bit instructions, any other as unsigned long long; both give the same values.
template <class I>
__device__ __forceinline__ double edge64(I i, const BinParams& p) {
    if ((unsigned long long)i == p.nbins) return p.stop64;
    double di = (double)i;
    return p.step_zero ? __dadd_rn(__dmul_rn(__ddiv_rn(di, p.div64), p.delta64), p.start64)
                       : __dadd_rn(__dmul_rn(di, p.step64), p.start64);
}

template <class I>
__device__ __forceinline__ float edge32(I i, const BinParams& p) {
    if (!p.linspace_in_f32) return (float)edge64(i, p);
    if ((unsigned long long)i == p.nbins) return p.stop32;
    float fi = (float)i;
    return p.step_zero ? __fadd_rn(__fmul_rn(__fdiv_rn(fi, p.div32), p.delta32), p.start32)
                       : __fadd_rn(__fmul_rn(fi, p.step32), p.start32);
}

// numpy's correction of the arithmetic estimate against the real edges.
template <class Edge, class T>
__device__ __forceinline__ long long correct(long long est, unsigned long long n, T x, Edge edge) {
    long long nn = (long long)n;
    if (est < 0) est = 0;
    if (est > nn) est = nn;
    if (est == nn) est -= 1;
    if (est > 0 && x < edge((unsigned long long)est)) est -= 1;
    if (est != nn - 1 && x >= edge((unsigned long long)est + 1)) est += 1;
    return est;
}

__device__ __forceinline__ long long locate_integer(sample_t v, const BinParams& p) {
#if SAMPLE_IS_FLOAT
    return SLOT_NAN;  // never launched: integer bins need integer samples
#else
#if SAMPLE_IS_SIGNED
    if (v < 0) return SLOT_BELOW;
#endif
    unsigned long long u = (unsigned long long)v;
    return u >= p.nbins ? SLOT_ABOVE : (long long)u;
#endif
}

__device__ __forceinline__ long long locate_uniform32(sample_t v, const BinParams& p) {
    float x = (float)v;
    if (x != x) return SLOT_NAN;
    if (x < p.first32) return SLOT_BELOW;
    if (x > p.last32) return SLOT_ABOVE;
    float diff = __fsub_rn(x, p.first32);
    if (p.multiply) {
        // The same estimate and correction in 32-bit arithmetic (the multiply estimate implies
        // nbins <= 2^24; diff >= 0, so est >= 0), against the edge table where the host gave one.
        const int n = (int)p.nbins;
        int est;
        if (p.denom_is_f64) {
            const double m = __dmul_rn((double)diff, p.scale64);
            est = (int)m;
            if (interior(m, est, p)) return est;
        } else {
            est = (int)__fmul_rn(diff, p.scale32);
        }
        est = est < n - 1 ? est : n - 1;
        if (p.edges32) {
            if (est > 0 && x < __ldg(p.edges32 + est)) est -= 1;
            if (est != n - 1 && x >= __ldg(p.edges32 + est + 1)) est += 1;
        } else {
            if (est > 0 && x < edge32(est, p)) est -= 1;
            if (est != n - 1 && x >= edge32(est + 1, p)) est += 1;
        }
        return est;
    }
    long long est = p.denom_is_f64 ? (long long)__dmul_rn(__ddiv_rn((double)diff, p.denom64), (double)p.nbins)
                                   : (long long)__fmul_rn(__fdiv_rn(diff, p.denom32), (float)p.nbins);
    return correct(est, p.nbins, x, [&](unsigned long long i) { return edge32(i, p); });
}

// MODE_UNIFORM32_INTERIOR's shortcut in float32 (`interior_fraction32` in crates/smemkit/src/
// histogram/bins/estimate.rs proves it) for a sample inside the bins: adding 2^23 rounding down
// leaves floor(m32) in the low bits (m32 < 2^23), and m32 minus that floor is exact. No float64, no
// edge read. True with `bin` set where the fractional part is far enough from both edges.
__device__ __forceinline__ bool interior32_bin(float x, const BinParams& p, unsigned& bin) {
    const float m32 = __fmul_rn(__fsub_rn(x, p.first32), p.interior32_scale);
    const float r = __fadd_rd(m32, 8388608.0f);
    const float frac = __fsub_rn(m32, __fsub_rn(r, 8388608.0f));
    bin = (unsigned)(__float_as_int(r) - 0x4B000000);
    return frac > p.interior32_lo && frac < p.interior32_hi && bin < (unsigned)p.nbins;
}

// MODE_UNIFORM32_INTERIOR's rule for the samples the shortcut leaves (outside the bins, NaN, near
// an edge): `locate_uniform32`'s multiply estimate and correction without its division paths. The
// host picks this mode only with the multiply estimate and a finite float32 scale, so the estimate
// is within one bin of numpy's and linspace's step is not zero. Kept out of line: inlined behind
// every unrolled sample of the walk it made NVRTC's builds twice as long as the plain float32
// kernels', for a path a warp takes rarely.
__device__ __noinline__ long long near_edge32(float x, float first, float last, float scale32, double scale64,
                                              int n, const float* edges32, int how, float step32, float start32,
                                              double step64, double start64) {
    if (x != x) return SLOT_NAN;
    if (x < first) return SLOT_BELOW;
    if (x > last) return SLOT_ABOVE;
    const float diff = __fsub_rn(x, first);
    int est = (how & 1) ? (int)__dmul_rn((double)diff, scale64) : (int)__fmul_rn(diff, scale32);
    est = est < n - 1 ? est : n - 1;
    // Edge i < n of numpy's linspace (the correction never reads edge n: est + 1 < n there).
    auto edge = [&](int i) {
        if (edges32) return __ldg(edges32 + i);
        if (how & 2) return __fadd_rn(__fmul_rn((float)i, step32), start32);
        return (float)__dadd_rn(__dmul_rn((double)i, step64), start64);
    };
    if (est > 0 && x < edge(est)) est -= 1;
    if (est != n - 1 && x >= edge(est + 1)) est += 1;
    return est;
}

__device__ __forceinline__ long long locate_uniform32_near_edge(float x, const BinParams& p) {
    return near_edge32(x, p.first32, p.last32, p.scale32, p.scale64, (int)p.nbins, p.edges32,
                       (p.denom_is_f64 ? 1 : 0) | (p.linspace_in_f32 ? 2 : 0), p.step32, p.start32, p.step64,
                       p.start64);
}

// MODE_UNIFORM32_WIDE's shortcut in float64 (`interior_fraction_wide` in crates/smemkit/src/
// histogram/bins/estimate.rs proves it against the measured edges) for a sample inside the bins:
// adding 2^52 rounding down leaves floor(m) in the low word (0 <= m <= n < 2^31), and m minus that
// floor is exact. One conversion, no edge read. True with `bin` set where the fractional part is
// far enough from both edges.
__device__ __forceinline__ bool interior64_bin(float x, const BinParams& p, unsigned& bin) {
    const double m = __dmul_rn(__dsub_rn((double)x, p.interior64_first), p.interior64_scale);
    const double r = __dadd_rd(m, 4503599627370496.0);
    const double frac = __dsub_rn(m, __dsub_rn(r, 4503599627370496.0));
    bin = (unsigned)__double2loint(r);
    return frac > p.interior_lo && frac < p.interior_hi && bin < (unsigned)p.nbins;
}

// Edge i < n of numpy's float32 edges for uniform float32 bins: read where the host keeps them,
// else numpy's linspace, in float32 or in float64 rounded to float32 as numpy computes it
// (`near_edge32`'s rule, with the parameters from `p`).
__device__ __forceinline__ float numpy_edge32(int i, const BinParams& p) {
    if (p.edges32) return __ldg(p.edges32 + i);
    if (p.linspace_in_f32) return __fadd_rn(__fmul_rn((float)i, p.step32), p.start32);
    return (float)__dadd_rn(__dmul_rn((double)i, p.step64), p.start64);
}

// A float32 sample outside [first32, last32], or NaN: its slot, in line (the out-of-line rule would
// give the same, but a call one lane makes costs the whole warp).
__device__ __forceinline__ long long outside_slot32(float x, const BinParams& p) {
    return x != x ? SLOT_NAN : x < p.first32 ? SLOT_BELOW : SLOT_ABOVE;
}

__device__ __forceinline__ long long locate_uniform32_wide(sample_t v, const BinParams& p) {
    const float x = (float)v;
    unsigned bin;
    if (!(x >= p.first32 && x <= p.last32)) return outside_slot32(x, p);
    if (interior64_bin(x, p, bin)) return bin;
    return locate_uniform32_near_edge(x, p);
}

__device__ __forceinline__ long long locate_uniform32_interior(sample_t v, const BinParams& p) {
    const float x = (float)v;
    unsigned bin;
    if (!(x >= p.first32 && x <= p.last32)) return outside_slot32(x, p);
    if (interior32_bin(x, p, bin)) return bin;
    return locate_uniform32_near_edge(x, p);
}

// Float32 bins on a grid of a power-of-two width, every edge exactly (k0 + i) * width (the host
// checks them: `UniformF32::exact_grid` in bins/mod.rs): the true bin is floor(x / width) - k0, the
// product by the power of two exact (the host refuses ranges where it could round a sample's sign
// away), k0 = first32 * scale32 exact too, and numpy's corrected estimate is the true bin. Its own
// kernel builds, so that the other float32 kernels keep their registers and this one needs few.
__device__ __forceinline__ float grid_first_index(const BinParams& p) { return __fmul_rn(p.first32, p.scale32); }

__device__ __forceinline__ long long locate_uniform32_exact(sample_t v, const BinParams& p) {
    float x = (float)v;
    if (x != x) return SLOT_NAN;
    if (x < p.first32) return SLOT_BELOW;
    if (x > p.last32) return SLOT_ABOVE;
    const int n = (int)p.nbins;
    const int est = (int)__fsub_rn(floorf(__fmul_rn(x, p.scale32)), grid_first_index(p));
    return est < n - 1 ? est : n - 1;
}

// MODE_UNIFORM64_EXACT: every edge is (first + i) / inv exactly (the host checks them), so the true
// bin is floor(x * inv) - first, each step exact (the host refuses ranges where the product could
// round a sample's sign away), and numpy's corrected estimate is the true bin.
__device__ __forceinline__ long long locate_uniform64_exact(sample_t v, const BinParams& p) {
    const double x = (double)v;
    if (x != x) return SLOT_NAN;
    if (x < p.first64) return SLOT_BELOW;
    if (x > p.last64) return SLOT_ABOVE;
    const long long n = (long long)p.nbins;
    const long long est = (long long)__dsub_rn(floor(__dmul_rn(x, p.grid64_inv)), p.grid64_first);
    return est < n - 1 ? est : n - 1;
}

__device__ __forceinline__ long long locate_uniform64(sample_t v, const BinParams& p) {
    double x = (double)v;
    if (x != x) return SLOT_NAN;
    if (x < p.first64) return SLOT_BELOW;
    if (x > p.last64) return SLOT_ABOVE;
    double diff = __dsub_rn(x, p.first64);
    long long est;
    if (p.multiply) {
        const double m = __dmul_rn(diff, p.scale64);
        est = (long long)m;
        if (interior(m, est, p)) return est;
    } else {
        est = (long long)__dmul_rn(__ddiv_rn(diff, p.denom64), (double)p.nbins);
    }
    return correct(est, p.nbins, x, [&](unsigned long long i) { return edge64(i, p); });
}

__device__ __forceinline__ long long locate_edges(sample_t v, const BinParams& p) {
    double x = (double)v;
    if (x != x) return SLOT_NAN;
    const double* e = p.edges;
    unsigned long long n = p.nbins;
    if (x < __ldg(e)) return SLOT_BELOW;
    double top = __ldg(e + n);
    if (x > top) return SLOT_ABOVE;
    if (x == top) return (long long)n - 1;
    if (p.table.starts) {
        // The number of edges <= x from the table's first candidate, in the same steps for
        // every sample (search_table.cuh); x lies in [e[0], top), so it is in [1, n].
        unsigned long long pos = search_start(p.table, x);
        for (unsigned step = p.table.top; step > 0; step >>= 1) {
            const unsigned long long next = pos + step;
            if (next <= n + 1 && __ldg(e + next - 1) <= x) pos = next;
        }
        return (long long)pos - 1;
    }
    unsigned long long lo = 0, hi = n + 1;  // first edge above x, searched in [lo, hi)
    while (lo < hi) {
        unsigned long long mid = (lo + hi) / 2;
        if (__ldg(e + mid) <= x) lo = mid + 1; else hi = mid;
    }
    return (long long)lo - 1;
}

// float16 / bfloat16 samples (read as their 16-bit codes): the host resolved every code's slot with
// the CPU engine's rule (histogram/cuda/half_table.rs), any binning, so the kernels only look it up.
// The table's three largest values are the slots outside the bins, which as int are SLOT_*.
#define LUT_NAN 0xfffffffdu
__device__ __forceinline__ long long locate_lut(sample_t v, const BinParams& p) {
    const unsigned s = __ldg(p.lut + (unsigned)(unsigned short)v);
    return s >= LUT_NAN ? (long long)(int)s : (long long)s;
}

#define MODE_INTEGER 0
#define MODE_UNIFORM32 1
#define MODE_UNIFORM64 2
#define MODE_EDGES 3
#define MODE_UNIFORM32_EXACT 4
#define MODE_LUT 5
// Uniform float32 bins with a caller's range whose float32 shortcut the host proved
// (`interior32_*`): the same rule as MODE_UNIFORM32, in kernels of its own whose step tries the
// shortcut first in 32-bit arithmetic (`bin32`).
#define MODE_UNIFORM32_INTERIOR 6
// The same with the shortcut in float64 on the exact difference (`interior64_*`), where the float32
// one's margin would send many warps down both paths.
#define MODE_UNIFORM32_WIDE 7
// Float64 samples in float64 bins on a grid of a power-of-two width (`UniformF64::exact_grid`):
// as MODE_UNIFORM32_EXACT, in float64.
#define MODE_UNIFORM64_EXACT 8
// Modes whose bin costs about an integer's: the lean loops and the builds for more blocks per SM.
#define CHEAP_MODE(MODE)                                                                            \
    ((MODE) == MODE_INTEGER || (MODE) == MODE_UNIFORM32_EXACT || (MODE) == MODE_LUT ||              \
     (MODE) == MODE_UNIFORM32_INTERIOR || (MODE) == MODE_UNIFORM32_WIDE || (MODE) == MODE_UNIFORM64_EXACT)

template <int MODE>
__device__ __forceinline__ long long locate(sample_t v, const BinParams& p) {
    if (MODE == MODE_INTEGER) return locate_integer(v, p);
    if (MODE == MODE_UNIFORM32) return locate_uniform32(v, p);
    if (MODE == MODE_UNIFORM32_INTERIOR) return locate_uniform32_interior(v, p);
    if (MODE == MODE_UNIFORM32_WIDE) return locate_uniform32_wide(v, p);
    if (MODE == MODE_UNIFORM64) return locate_uniform64(v, p);
    if (MODE == MODE_UNIFORM32_EXACT) return locate_uniform32_exact(v, p);
    if (MODE == MODE_UNIFORM64_EXACT) return locate_uniform64_exact(v, p);
    if (MODE == MODE_LUT) return locate_lut(v, p);
    return locate_edges(v, p);
}
