// Joint histograms (numpy.histogramdd): each sample's bin on every axis is found in registers and
// flattened in C order into one joint bin, which is counted like a 1-D bin through the 1-D
// strategies' counting code (hist_shared/packed/cluster/global.cuh's sinks): a private histogram
// per block in shared memory (u32 or packed narrow counters), the bins split over a cluster's
// shared memories, or counters in global memory, as the planner chose for the joint bin count.
//
// numpy.histogramdd's rule on an axis is defined by its edges alone: the bin of x is the number of
// interior edges e[1] .. e[n-1] at or below x, for e[0] <= x <= e[n] (searchsorted(edges, x,
// 'right') - 1, the last edge counted in the last bin). The comparisons are exact in the common
// type of sample and edges, float64, for every sample type: `axis_bin` compares there. Float32
// samples compare against float32 edges rounded up (down for the top edge), which gives the same
// answer for every float32 x with float32 instructions; 8-bit samples look their bin up in a table
// of 256 entries per axis that the host filled with the CPU engine's rule. The arithmetic estimate
// is only a hint, always checked against the edges, with a binary search behind it.
//
// Compiled by NVRTC once per sample type and entry point (one_kernel.cuh). Entry points are
// histdd_<strategy>_<layout>_<weights>. Layouts: `strided` (any axis base and stride, 1 to 8 axes:
// Fortran order, separate arrays, permuted channels), `rows<D>` (an (N, D) array in C order whose
// sample 0 is 16-byte aligned: interleaved RGB pixels, float32 (N, 2) / (N, 3) rows; loaded as
// 16-byte vectors holding whole samples), `cols<D>` (D separate 16-byte aligned arrays of stride 1,
// one 16-byte vector of each per step).
//
// Variants (preprocessor defines the host passes, `JointVariant` in
// crates/smemkit/src/histogramdd/cuda/variant.rs; the defaults below are the first build's):
// HISTDD_EDGES 1 lets float32 axes whose edges the host proved to follow a float32 formula compare
// against edges computed in registers instead of loaded from the table (per axis, `edge_mode`);
// HISTDD_UNROLL groups of vectors per thread per step; HISTDD_PREFETCH 1 loads the next step's
// groups before counting the current ones; HISTDD_HOT_EACH 1 refreshes the packed counters' hot bin
// before every sample rather than once per step.

#include "one_kernel.cuh"

template <class T>
struct IsVoid {
    static constexpr bool value = false;
};
template <>
struct IsVoid<void> {
    static constexpr bool value = true;
};
template <class A, class B>
struct IsSame {
    static constexpr bool value = false;
};
template <class A>
struct IsSame<A, A> {
    static constexpr bool value = true;
};

#ifndef SAMPLE_T
#error "SAMPLE_T must be defined by the host"
#endif
typedef SAMPLE_T sample_t;

// The strategies' sinks and tallies (their kernels are templates, not instantiated here).
#include "hist_bins.cuh"
#include "hist_walk.cuh"
#include "hist_shared.cuh"
#include "hist_packed.cuh"
#include "hist_cluster.cuh"
#include "hist_global.cuh"

#ifndef HISTDD_EDGES
#define HISTDD_EDGES 0
#endif
#ifndef HISTDD_UNROLL
#define HISTDD_UNROLL 2
#endif
#ifndef HISTDD_PREFETCH
#define HISTDD_PREFETCH 0
#endif
#ifndef HISTDD_HOT_EACH
#define HISTDD_HOT_EACH 1
#endif

// Axes one launch takes; mirrors HISTDD_MAX_DIMS in crates/smemkit/src/histogramdd/cuda/params.rs.
#define HISTDD_MAX_DIMS 8

// 8-bit samples take the table (their 256 values), float32 the float32 edges, the rest float64.
#define HISTDD_LUT (sizeof(sample_t) == 1)

// Mirrors `KernelAxis` in crates/smemkit/src/histogramdd/cuda/params.rs field for field.
struct JointAxis {
    const sample_t* base;      // this axis's coordinate of sample 0
    unsigned long long stride;  // elements from one sample's coordinate to the next's
    const double* edges;        // nbins + 1 edges, increasing (equal neighbours allowed)
    const float* edges32;       // the same rounded up to float32 (float32 samples), or null
    const unsigned* lut;        // 8-bit samples: 256 entries, bin * (C-order stride) or JOINT_LUT_OUT
    unsigned int nbins;
    int has_estimate;           // 1: first and scale give an index estimate (finite, spread edges)
    double first, scale, lo, hi;  // lo = edges[0], hi = edges[nbins]
    float first32, scale32, lo32, hi32;  // lo rounded up, hi rounded down to float32
    int edge_mode;              // float32 samples, HISTDD_EDGES builds: EDGES_* below
    float start32, step32;      // EDGES_LINEAR / EDGES_POW2: interior edge i is start32 + i * step32
    double interior_lo, interior_hi;     // fractional parts of the estimate that need no edge
    float interior_lo32, interior_hi32;  // read (float64 / float32 arithmetic), or (0, 0)
};

// How a float32 axis checks its estimate. TABLE: against edges32 loaded from memory. LINEAR: the
// host checked that every interior edges32[i] is __fadd_rn(__fmul_rn(i, step32), start32), so the
// same checks run on edges computed in registers (the table still backs the rare search). POW2:
// moreover step32 is a power of two, first32 = start32 and scale32 = 1 / step32, and start32 + i *
// step32 is exact for every interior i: the rounded difference x - start32 is then monotone in x
// and each edge offset i * step32 is a float32, so the estimate is the bin or the one above it,
// and one comparison decides (see `axis_bin`).
#define EDGES_TABLE 0
#define EDGES_LINEAR 1
#define EDGES_POW2 2

// Mirrors `KernelJoint` in crates/smemkit/src/histogramdd/cuda/params.rs.
struct Joint {
    JointAxis axis[HISTDD_MAX_DIMS];
    unsigned long long n;      // samples
    unsigned long long nbins;  // joint bins (the product of every axis's)
    int dims;
    int aggregate;               // combine a warp's equal bins into one update (skewed data)
    unsigned int bins_per_block; // cluster: bins owned by each block
    int lut_shared;              // 8-bit samples: the tables are copied into shared memory, after
                                 // the counters (the host made room); 0: read from global memory
    unsigned long long window_lo; // window kernels: the first joint bin counted in shared memory
    unsigned long long window_len; // window kernels: the joint bins counted in shared memory
};

#define JOINT_OUTSIDE 0xffffffffu
#define JOINT_NAN 0xfffffffeu
#define JOINT_LUT_OUT 0x80000000u

// The interior edge count at or below x over e[lo_i .. hi_i], given that the bin is in [0, n).
template <class E>
__device__ __forceinline__ unsigned search_bin(E x, const E* e, unsigned n) {
    unsigned lo = 1, hi = n;  // the first interior edge above x, searched in [lo, hi)
    while (lo < hi) {
        const unsigned mid = (lo + hi) / 2;
        if (__ldg(e + mid) <= x) lo = mid + 1; else hi = mid;
    }
    return lo - 1;
}

// Interior edge i read from a table, or computed as the host proved it equal to the table's.
template <class E>
struct TableEdge {
    const E* e;
    __device__ __forceinline__ E operator()(unsigned i) const { return __ldg(e + i); }
};
struct LinearEdge32 {
    float start, step;
    __device__ __forceinline__ float operator()(unsigned i) const {
        return __fadd_rn(__fmul_rn((float)i, step), start);
    }
};

// Bin i is right for x (inside the axis) when e[i] <= x (or i = 0) and x < e[i + 1] (or i = n - 1).
// `edge` gives the interior edges; the table `e` backs the search where the estimate is off by more
// than one bin.
template <class E, class Edge>
__device__ __forceinline__ unsigned finish_bin(E x, const E* e, unsigned n, unsigned i, Edge edge) {
    const bool above_lo = i == 0 || edge(i) <= x;
    if (above_lo) {
        if (i + 1 == n || x < edge(i + 1)) return i;
        if (i + 2 == n || x < edge(i + 2)) return i + 1;
    } else if (i == 1 || edge(i - 1) <= x) {
        return i - 1;
    }
    return search_bin(x, e, n);
}

template <class E>
__device__ __forceinline__ unsigned finish_bin(E x, const E* e, unsigned n, unsigned i) {
    return finish_bin(x, e, n, i, TableEdge<E>{e});
}

// The bin of coordinate v on axis a, JOINT_OUTSIDE outside it, JOINT_NAN for NaN.
__device__ __forceinline__ unsigned axis_bin(sample_t v, const JointAxis& a) {
#if SAMPLE_IS_F32
    const float x = (float)v;
#if HISTDD_EDGES
    if (a.edge_mode != EDGES_TABLE) {
        // Inside the axis fails for NaN too; which of the two it is matters only then.
        if (!(x >= a.lo32 && x <= a.hi32)) return x != x ? JOINT_NAN : JOINT_OUTSIDE;
        const float f = __fmul_rn(__fsub_rn(x, a.first32), a.scale32);
        const unsigned i = f < (float)(a.nbins - 1) ? (unsigned)fmaxf(f, 0.0f) : a.nbins - 1;
        const LinearEdge32 edge{a.start32, a.step32};
        if (a.edge_mode == EDGES_POW2) return i > 0 && x < edge(i) ? i - 1 : i;
        return finish_bin(x, a.edges32, a.nbins, i, edge);
    }
#endif
    if (x != x) return JOINT_NAN;
    if (!(x >= a.lo32 && x <= a.hi32)) return JOINT_OUTSIDE;
    unsigned i = 0;
    if (a.has_estimate) {
        const float f = __fmul_rn(__fsub_rn(x, a.first32), a.scale32);
        // Far enough inside its bin, the estimate is the bin (crates/smemkit/src/histogramdd/
        // cuda/interior.rs proves the margin): no edge read. f >= 0 here (x >= lo32 >= first32).
        const float frac = __fsub_rn(f, truncf(f));
        if (frac > a.interior_lo32 && frac < a.interior_hi32 && f < (float)a.nbins) return (unsigned)f;
        i = f < (float)(a.nbins - 1) ? (unsigned)fmaxf(f, 0.0f) : a.nbins - 1;
        return finish_bin(x, a.edges32, a.nbins, i);
    }
    return search_bin(x, a.edges32, a.nbins);
#else
    const double x = (double)v;
#if SAMPLE_IS_FLOAT
    if (x != x) return JOINT_NAN;
#endif
    if (!(x >= a.lo && x <= a.hi)) return JOINT_OUTSIDE;
    if (a.has_estimate) {
        const double f = __dmul_rn(__dsub_rn(x, a.first), a.scale);
        const double frac = __dsub_rn(f, trunc(f));
        if (frac > a.interior_lo && frac < a.interior_hi && f < (double)a.nbins) return (unsigned)f;
        const unsigned i = f < (double)(a.nbins - 1) ? (unsigned)fmax(f, 0.0) : a.nbins - 1;
        return finish_bin(x, a.edges, a.nbins, i);
    }
    return search_bin(x, a.edges, a.nbins);
#endif
}

// The 8-bit samples' tables (every axis's 256 entries one after another, as the host lays them
// out): copied to `dst` in shared memory where the host made room for them, else left in global
// memory. The caller's barrier after its counters are zeroed also covers this copy.
__device__ __forceinline__ const unsigned* joint_tables(const Joint& p, unsigned char* dst) {
    if (!HISTDD_LUT) return nullptr;
    const unsigned* lut = p.axis[0].lut;
    if (!p.lut_shared) return lut;
    unsigned* t = reinterpret_cast<unsigned*>(dst);
    for (unsigned i = threadIdx.x; i < (unsigned)p.dims * 256u; i += blockDim.x) t[i] = __ldg(lut + i);
    return t;
}

// Where the tables go in dynamic shared memory: after `counter_bytes` of counters, 16-byte aligned
// (mirrors `DeviceJoint::tables_in_shared` in crates/smemkit/src/histogramdd/cuda/device.rs).
__device__ __forceinline__ unsigned char* tables_at(unsigned char* smem, unsigned long long counter_bytes) {
    return smem + ((counter_bytes + 15) & ~15ull);
}

// The joint bin of one sample's coordinates (C order, the last axis fastest), JOINT_NAN when any
// coordinate is NaN, else JOINT_OUTSIDE when any is outside its axis. DIMS 0: p.dims at run time.
// `lut`: joint_tables' answer (8-bit samples only).
template <int DIMS>
__device__ __forceinline__ unsigned joint_bin(const sample_t* x, const Joint& p, const unsigned* lut) {
    constexpr int D = DIMS == 0 ? HISTDD_MAX_DIMS : DIMS;
    if (HISTDD_LUT) {
        unsigned acc = 0, flags = 0;
#pragma unroll
        for (int d = 0; d < D; d++) {
            if (DIMS == 0 && d >= p.dims) break;
            const unsigned e = lut[d * 256 + (unsigned)(unsigned char)x[d]];
            acc += e;
            flags |= e;
        }
        return (flags & JOINT_LUT_OUT) ? JOINT_OUTSIDE : acc;
    }
    unsigned flat = 0;
    bool outside = false;
#pragma unroll
    for (int d = 0; d < D; d++) {
        if (DIMS == 0 && d >= p.dims) break;
        const unsigned b = axis_bin(x[d], p.axis[d]);
        if (b == JOINT_NAN) return JOINT_NAN;
        outside |= b == JOINT_OUTSIDE;
        flat = flat * p.axis[d].nbins + b;
    }
    return outside ? JOINT_OUTSIDE : flat;
}

struct JointTally {
    unsigned long long outside, nan;
};

// Counts one joint bin (with sample j's weight) into the sink, or tallies it.
template <class W, class Sink>
__device__ __forceinline__ void joint_count(unsigned b, const W* w, unsigned long long j, const Joint& p,
                                            Sink& sink, JointTally& t) {
    if (b == JOINT_NAN) t.nan++;
    else if (b == JOINT_OUTSIDE) t.outside++;
    if constexpr (!IsVoid<W>::value) {
        if (b < JOINT_NAN) sink.add((unsigned long long)b, (double)__ldg(w + j));
    } else if (!p.aggregate) {
        if (b < JOINT_NAN) sink.add((unsigned long long)b, 1u);
    } else {
        const unsigned mask = __activemask();
        const unsigned peers = __match_any_sync(mask, b);
        if (b < JOINT_NAN && (int)(threadIdx.x & 31) == __ffs(peers) - 1) sink.add((unsigned long long)b, (unsigned)__popc(peers));
    }
}

#define LAYOUT_STRIDED 0
#define LAYOUT_ROWS 1
#define LAYOUT_COLS 2

__host__ __device__ constexpr int gcd_c(int a, int b) { return b == 0 ? a : gcd_c(b, a % b); }

// Samples one thread takes per step (G) and the 16-byte vectors that hold them (V).
template <int LAYOUT, int DIMS>
struct Group {
    static constexpr int BYTES = DIMS * (int)sizeof(sample_t);
    static constexpr int G = LAYOUT == LAYOUT_ROWS ? 16 / gcd_c(16, BYTES)
                           : LAYOUT == LAYOUT_COLS ? 16 / (int)sizeof(sample_t) : 1;
    static constexpr int V = LAYOUT == LAYOUT_ROWS ? G * BYTES / 16 : LAYOUT == LAYOUT_COLS ? DIMS : 0;
};

template <int LAYOUT, int DIMS>
struct Loaded {
    static constexpr int V = Group<LAYOUT, DIMS>::V > 0 ? Group<LAYOUT, DIMS>::V : 1;
    union {
        uint4 raw[V];
        sample_t s[V * 16 / sizeof(sample_t)];
    };
};

// Vectors of group g (rows: consecutive vectors from axis 0's base; cols: one from each axis).
template <int LAYOUT, int DIMS>
__device__ __forceinline__ void load_group(const Joint& p, unsigned long long g, Loaded<LAYOUT, DIMS>& v) {
    constexpr int V = Group<LAYOUT, DIMS>::V;
    if (LAYOUT == LAYOUT_ROWS) {
        const uint4* in = reinterpret_cast<const uint4*>(p.axis[0].base) + g * V;
#pragma unroll
        for (int k = 0; k < V; k++) v.raw[k] = __ldg(in + k);
    } else {
#pragma unroll
        for (int d = 0; d < DIMS; d++) v.raw[d] = __ldg(reinterpret_cast<const uint4*>(p.axis[d].base) + g);
    }
}

// The coordinates of sample k of a loaded group.
template <int LAYOUT, int DIMS>
__device__ __forceinline__ void coords(const Loaded<LAYOUT, DIMS>& v, int k, sample_t* x) {
    constexpr int PER = 16 / (int)sizeof(sample_t);
#pragma unroll
    for (int d = 0; d < DIMS; d++) x[d] = LAYOUT == LAYOUT_ROWS ? v.s[k * DIMS + d] : v.s[d * PER + k];
}

// The coordinates of sample j read one by one through each axis's base and stride.
template <int DIMS>
__device__ __forceinline__ void coords_strided(const Joint& p, unsigned long long j, sample_t* x) {
    constexpr int D = DIMS == 0 ? HISTDD_MAX_DIMS : DIMS;
#pragma unroll
    for (int d = 0; d < D; d++) {
        if (DIMS == 0 && d >= p.dims) break;
        x[d] = p.axis[d].base[j * p.axis[d].stride];
    }
}

// The grid-stride walk over the samples (block `block` of `blocks`): whole groups as 16-byte
// vectors, up to HISTDD_UNROLL groups in flight per thread (see U; with HISTDD_PREFETCH, the next
// step's groups are loaded before the current ones are counted, so that their latency hides behind
// this warp's counting too), then the samples past the last whole group one by one.
// `sink.step()` runs once per step (the packed counters' hot-bin refresh), unless HISTDD_HOT_EACH
// asks for every sample.
template <int LAYOUT, int DIMS, class Sink, class Step>
__device__ __forceinline__ void joint_walk(const Joint& p, Sink& sink, Step step, unsigned block, unsigned blocks) {
    constexpr int D = DIMS == 0 ? HISTDD_MAX_DIMS : DIMS;
    constexpr int G = Group<LAYOUT, DIMS>::G;
    // Vectors in flight per thread capped at 8, or with prefetch at 2 per buffer (two 16-byte
    // groups of (N, 2) rows, one group of columns or of 3-D rows): 1024-thread blocks have 64
    // registers per thread, and 4 per buffer spilled under ptxas for 2-D columns.
    constexpr int V = Group<LAYOUT, DIMS>::V > 0 ? Group<LAYOUT, DIMS>::V : 1;
    constexpr int CAP = (HISTDD_PREFETCH ? 2 : 8) / V;
    constexpr int U = HISTDD_UNROLL < CAP ? HISTDD_UNROLL : (CAP > 0 ? CAP : 1);
    const unsigned long long stride = (unsigned long long)blocks * blockDim.x;
    const unsigned long long first = (unsigned long long)block * blockDim.x + threadIdx.x;
    sample_t x[D];
    unsigned long long done = 0;
    auto refresh = [&]() {
        if (!HISTDD_HOT_EACH) sink.step();
    };
    if (LAYOUT != LAYOUT_STRIDED) {
        const unsigned long long groups = p.n / G;
        unsigned long long g = first;
        auto count_group = [&](const Loaded<LAYOUT, DIMS>& v, unsigned long long at) {
#pragma unroll
            for (int k = 0; k < G; k++) {
                coords<LAYOUT, DIMS>(v, k, x);
                step(x, at * G + k);
            }
        };
        if (HISTDD_PREFETCH) {
            if (g + (U - 1) * stride < groups) {
                Loaded<LAYOUT, DIMS> cur[U];
#pragma unroll
                for (int u = 0; u < U; u++) load_group<LAYOUT, DIMS>(p, g + u * stride, cur[u]);
                for (;;) {
                    const unsigned long long next = g + U * stride;
                    const bool more = next + (U - 1) * stride < groups;
                    Loaded<LAYOUT, DIMS> nxt[U];
                    if (more) {
#pragma unroll
                        for (int u = 0; u < U; u++) load_group<LAYOUT, DIMS>(p, next + u * stride, nxt[u]);
                    }
                    refresh();
#pragma unroll
                    for (int u = 0; u < U; u++) count_group(cur[u], g + u * stride);
                    g = next;
                    if (!more) break;
#pragma unroll
                    for (int u = 0; u < U; u++) cur[u] = nxt[u];
                }
            }
        } else {
            for (; g + (U - 1) * stride < groups; g += U * stride) {
                Loaded<LAYOUT, DIMS> v[U];
#pragma unroll
                for (int u = 0; u < U; u++) load_group<LAYOUT, DIMS>(p, g + u * stride, v[u]);
                refresh();
#pragma unroll
                for (int u = 0; u < U; u++) count_group(v[u], g + u * stride);
            }
        }
        for (; g < groups; g += stride) {
            Loaded<LAYOUT, DIMS> a;
            load_group<LAYOUT, DIMS>(p, g, a);
            refresh();
            count_group(a, g);
        }
        done = groups * G;
    }
    for (unsigned long long j = done + first; j < p.n; j += stride) {
        coords_strided<LAYOUT == LAYOUT_STRIDED ? DIMS : D>(p, j, x);
        refresh();
        step(x, j);
    }
}

template <int LAYOUT, int DIMS, class W, class Sink>
__device__ __forceinline__ void joint_process(const Joint& p, const unsigned* lut, const W* w, Sink& sink,
                                              JointTally& t) {
    joint_walk<LAYOUT, DIMS>(p, sink, [&](const sample_t* x, unsigned long long j) {
        joint_count<W>(joint_bin<DIMS>(x, p, lut), w, j, p, sink, t);
    }, blockIdx.x, gridDim.x);
}

__device__ __forceinline__ void flush_joint_tally(JointTally t, unsigned long long* tallies) {
    Tally u{t.outside, 0, t.nan};
    flush_tally(u, tallies);  // tallies[0]: outside, tallies[2]: NaN
}

// ---- one kernel body per strategy ------------------------------------------------------------

template <int LAYOUT, int DIMS, class W, class C, class Out>
__device__ void joint_shared(const Joint& p, const W* w, Out* out, unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    C* h = reinterpret_cast<C*>(smem_raw);
    for (unsigned long long b = threadIdx.x; b < p.nbins; b += blockDim.x) h[b] = (C)0;
    const unsigned* lut = joint_tables(p, tables_at(smem_raw, p.nbins * sizeof(C)));
    __syncthreads();
    SharedSink<C> sink{h};
    JointTally t{0, 0};
    joint_process<LAYOUT, DIMS, W>(p, lut, w, sink, t);
    __syncthreads();
    flush_counters(h, p.nbins, out);
    flush_joint_tally(t, tallies);
}

template <int LAYOUT, int DIMS, int BITS>
__device__ void joint_packed(const Joint& p, unsigned long long* out, unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned long long words = (p.nbins + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    for (unsigned long long b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    const unsigned* lut = joint_tables(p, tables_at(smem_raw, (words + PACKED_HOT_LANES) * 4));
    __syncthreads();
    PackedSink<BITS> sink{h, out, p.nbins, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    JointTally t{0, 0};
    joint_walk<LAYOUT, DIMS>(p, sink, [&](const sample_t* x, unsigned long long j) {
        if (HISTDD_HOT_EACH) sink.step();
        joint_count<void>(joint_bin<DIMS>(x, p, lut), (const void*)0, j, p, sink, t);
    }, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_packed<BITS>(h, p.nbins, hot_counts, hot_key, out);
    flush_joint_tally(t, tallies);
}

// Packed counters for a window of the joint bins (window_lo .. + window_len, contiguous in C order:
// whole planes of the first axis, centred, where all the bins do not fit one block), u64 atomics in
// global memory for the bins outside it: data that gathers in the middle of the bins (normal
// samples) counts on chip almost entirely. The window's counters are the packed kernels' with the
// window as their bins, so their wrap corrections go to the window's part of the result.
template <int LAYOUT, int DIMS, int BITS>
__device__ void joint_window(const Joint& p, unsigned long long* out, unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned long long lo = p.window_lo, len = p.window_len;
    const unsigned long long words = (len + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    for (unsigned long long b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    const unsigned* lut = joint_tables(p, tables_at(smem_raw, (words + PACKED_HOT_LANES) * 4));
    __syncthreads();
    PackedSink<BITS> sink{h, out + lo, len, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    JointTally t{0, 0};
    joint_walk<LAYOUT, DIMS>(p, sink, [&](const sample_t* x, unsigned long long) {
        if (HISTDD_HOT_EACH) sink.step();
        const unsigned b = joint_bin<DIMS>(x, p, lut);
        if (b == JOINT_NAN) t.nan++;
        else if (b == JOINT_OUTSIDE) t.outside++;
        unsigned amount = 1;
        bool lead = b < JOINT_NAN;
        if (p.aggregate) {
            const unsigned peers = __match_any_sync(__activemask(), b);
            amount = (unsigned)__popc(peers);
            lead = lead && (int)(threadIdx.x & 31) == __ffs(peers) - 1;
        }
        if (lead) {
            if ((unsigned long long)b - lo < len) sink.add((unsigned long long)b - lo, amount);
            else atomicAdd(out + b, (unsigned long long)amount);
        }
    }, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_packed<BITS>(h, len, hot_counts, hot_key, out + lo);
    flush_joint_tally(t, tallies);
}

template <int LAYOUT, int DIMS, class W, class C, class Out>
__device__ void joint_cluster(const Joint& p, const W* w, Out* out, unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    __shared__ C hot_count;
    C* h = reinterpret_cast<C*>(smem_raw);
    Cluster cluster;
    const unsigned per_block = p.bins_per_block;
    for (unsigned b = threadIdx.x; b < per_block; b += blockDim.x) h[b] = (C)0;
    if (threadIdx.x == 0) {
        hot_key = NO_HOT_KEY;
        hot_count = (C)0;
    }
    const unsigned* lut = joint_tables(p, tables_at(smem_raw, (unsigned long long)per_block * sizeof(C)));
    // No block may update a remote histogram before its owner has zeroed it.
    cluster.sync();
    ClusterSink<C> sink{h, cluster, per_block, &hot_key, &hot_count};
    JointTally t{0, 0};
    joint_process<LAYOUT, DIMS, W>(p, lut, w, sink, t);
    __syncthreads();
    if (threadIdx.x == 0 && hot_key != NO_HOT_KEY && hot_count != (C)0) atomicAdd(sink.owner(hot_key), hot_count);
    // Every remote update must land before the owners read their slices (and before any block exits).
    cluster.sync();
    const unsigned long long first = (unsigned long long)cluster.block_rank() * per_block;
    if (first < p.nbins) {
        const unsigned long long count = p.nbins - first < per_block ? p.nbins - first : per_block;
        flush_counters(h, count, out + first);
    }
    flush_joint_tally(t, tallies);
}

// Global counters: u64 counts or f64 sums straight into the result (no per-block hot bin, which
// the global sink keeps for u32 counters only).
template <int LAYOUT, int DIMS, class W, class Out>
__device__ void joint_global(const Joint& p, const W* w, Out* out, unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const unsigned* lut = joint_tables(p, smem_raw);
    __syncthreads();
    GlobalSink<Out> sink{out, nullptr, nullptr};
    JointTally t{0, 0};
    joint_process<LAYOUT, DIMS, W>(p, lut, w, sink, t);
    flush_joint_tally(t, tallies);
}

// ---- extern "C" entry points -----------------------------------------------------------------
// Each takes (Joint p, const W* weights, Out* out, u64* tallies): out holds nbins u64 counts (f64
// sums when weighted), tallies [outside, unused, NaN]. 1024-thread bounds: every plan's block fits.

#define JOINT_SUMS(LAYOUT, DIMS, LNAME, WTYPE, WNAME)                                                          \
    SMEMKIT_ENTRY(histdd_shared_##LNAME##_##WNAME,                                                            \
        extern "C" __global__ void __launch_bounds__(1024) histdd_shared_##LNAME##_##WNAME(                   \
            const Joint p, const WTYPE* w, double* out, unsigned long long* t) {                               \
            joint_shared<LAYOUT, DIMS, WTYPE, double>(p, w, out, t);                                          \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_cluster_##LNAME##_##WNAME,                                                           \
        extern "C" __global__ void __launch_bounds__(1024) histdd_cluster_##LNAME##_##WNAME(                  \
            const Joint p, const WTYPE* w, double* out, unsigned long long* t) {                               \
            joint_cluster<LAYOUT, DIMS, WTYPE, double>(p, w, out, t);                                         \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_global_##LNAME##_##WNAME,                                                            \
        extern "C" __global__ void __launch_bounds__(1024) histdd_global_##LNAME##_##WNAME(                   \
            const Joint p, const WTYPE* w, double* out, unsigned long long* t) {                               \
            joint_global<LAYOUT, DIMS, WTYPE>(p, w, out, t);                                                  \
        })

#define JOINT_LAYOUT(LAYOUT, DIMS, LNAME)                                                                      \
    SMEMKIT_ENTRY(histdd_shared_##LNAME##_none,                                                               \
        extern "C" __global__ void __launch_bounds__(1024) histdd_shared_##LNAME##_none(                      \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_shared<LAYOUT, DIMS, void, unsigned int>(p, w, out, t);                                     \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_shared16_##LNAME##_none,                                                             \
        extern "C" __global__ void __launch_bounds__(1024) histdd_shared16_##LNAME##_none(                    \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_packed<LAYOUT, DIMS, 16>(p, out, t);                                                        \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_shared8_##LNAME##_none,                                                              \
        extern "C" __global__ void __launch_bounds__(1024) histdd_shared8_##LNAME##_none(                     \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_packed<LAYOUT, DIMS, 8>(p, out, t);                                                         \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_shared4_##LNAME##_none,                                                              \
        extern "C" __global__ void __launch_bounds__(1024) histdd_shared4_##LNAME##_none(                     \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_packed<LAYOUT, DIMS, 4>(p, out, t);                                                         \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_window16_##LNAME##_none,                                                             \
        extern "C" __global__ void __launch_bounds__(1024) histdd_window16_##LNAME##_none(                    \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_window<LAYOUT, DIMS, 16>(p, out, t);                                                        \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_window8_##LNAME##_none,                                                              \
        extern "C" __global__ void __launch_bounds__(1024) histdd_window8_##LNAME##_none(                     \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_window<LAYOUT, DIMS, 8>(p, out, t);                                                         \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_cluster_##LNAME##_none,                                                              \
        extern "C" __global__ void __launch_bounds__(1024) histdd_cluster_##LNAME##_none(                     \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_cluster<LAYOUT, DIMS, void, unsigned int>(p, w, out, t);                                    \
        })                                                                                                    \
    SMEMKIT_ENTRY(histdd_global_##LNAME##_none,                                                               \
        extern "C" __global__ void __launch_bounds__(1024) histdd_global_##LNAME##_none(                      \
            const Joint p, const void* w, unsigned long long* out, unsigned long long* t) {                    \
            joint_global<LAYOUT, DIMS, void>(p, w, out, t);                                                   \
        })                                                                                                    \
    JOINT_SUMS(LAYOUT, DIMS, LNAME, float, f32)                                                               \
    JOINT_SUMS(LAYOUT, DIMS, LNAME, double, f64)

JOINT_LAYOUT(LAYOUT_STRIDED, 0, strided)
JOINT_LAYOUT(LAYOUT_ROWS, 2, rows2)
JOINT_LAYOUT(LAYOUT_ROWS, 3, rows3)
JOINT_LAYOUT(LAYOUT_ROWS, 4, rows4)
JOINT_LAYOUT(LAYOUT_COLS, 2, cols2)
JOINT_LAYOUT(LAYOUT_COLS, 3, cols3)
JOINT_LAYOUT(LAYOUT_COLS, 4, cols4)
