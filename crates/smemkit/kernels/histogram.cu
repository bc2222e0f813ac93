// Histogram kernels: shared (one private histogram per block in dynamic shared memory), cluster
// (the bins split across the shared memories of a thread block cluster, reached through
// distributed shared memory) and global (counters in global memory).
//
// Compiled by NVRTC once per sample type: the host passes -DSAMPLE_T=<C type>, -DSAMPLE_IS_FLOAT=0|1
// and -DSAMPLE_IS_SIGNED=0|1. Each strategy comes in four binning modes (integer bins, uniform bins in
// float32 or float64 arithmetic, explicit edges) and three weight kinds (none, float, double), as
// extern "C" kernels named hist_<strategy>_<mode>_<weights>.
//
// The uniform modes repeat numpy's arithmetic exactly (crates/smemkit/src/bins.rs is the reference):
// the estimate (x - first) / denom * n in the same precision, then the correction against the edge
// values, which are recomputed here with linspace's formula. The _rn intrinsics keep NVRTC from
// contracting a multiply and an add into one FMA, which would round differently from numpy.

#include <cooperative_groups.h>
#include <cuda/std/type_traits>
namespace cg = cooperative_groups;

#ifndef SAMPLE_T
#error "SAMPLE_T must be defined by the host"
#endif
typedef SAMPLE_T sample_t;

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
                          // 2: float32 bins from 0 of a power-of-two width (mode uniform32x)
    float scale32;
    double scale64;
    const float* edges32;  // numpy's float32 edges (uniform32 with multiply, small bin counts), or null
    const unsigned* gate;  // the skew verdict (see `hist_verdict`), or null: the kernel always runs
    unsigned gate_want;    // with `gate`: the verdict for which this kernel runs
};

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
        int est = p.denom_is_f64 ? (int)__dmul_rn((double)diff, p.scale64) : (int)__fmul_rn(diff, p.scale32);
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

// Float32 bins from 0 of a power-of-two width whose every edge is exactly i * width (the host
// checks them: `UniformF32::exact_power_of_two_width` in bins.rs): the true bin is floor(x / width), the
// product by the power of two exact, and numpy's corrected estimate is the true bin. Its own kernel
// builds, so that the other float32 kernels keep their registers and this one needs few.
__device__ __forceinline__ long long locate_uniform32_exact(sample_t v, const BinParams& p) {
    float x = (float)v;
    if (x != x) return SLOT_NAN;
    if (x < 0.0f) return SLOT_BELOW;
    if (x > p.last32) return SLOT_ABOVE;
    const int n = (int)p.nbins;
    const int est = (int)__fmul_rn(x, p.scale32);
    return est < n - 1 ? est : n - 1;
}

__device__ __forceinline__ long long locate_uniform64(sample_t v, const BinParams& p) {
    double x = (double)v;
    if (x != x) return SLOT_NAN;
    if (x < p.first64) return SLOT_BELOW;
    if (x > p.last64) return SLOT_ABOVE;
    double diff = __dsub_rn(x, p.first64);
    long long est = p.multiply ? (long long)__dmul_rn(diff, p.scale64)
                               : (long long)__dmul_rn(__ddiv_rn(diff, p.denom64), (double)p.nbins);
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
    unsigned long long lo = 0, hi = n + 1;  // first edge above x, searched in [lo, hi)
    while (lo < hi) {
        unsigned long long mid = (lo + hi) / 2;
        if (__ldg(e + mid) <= x) lo = mid + 1; else hi = mid;
    }
    return (long long)lo - 1;
}

#define MODE_INTEGER 0
#define MODE_UNIFORM32 1
#define MODE_UNIFORM64 2
#define MODE_EDGES 3
#define MODE_UNIFORM32_EXACT 4

template <int MODE>
__device__ __forceinline__ long long locate(sample_t v, const BinParams& p) {
    if (MODE == MODE_INTEGER) return locate_integer(v, p);
    if (MODE == MODE_UNIFORM32) return locate_uniform32(v, p);
    if (MODE == MODE_UNIFORM64) return locate_uniform64(v, p);
    if (MODE == MODE_UNIFORM32_EXACT) return locate_uniform32_exact(v, p);
    return locate_edges(v, p);
}

// Per-thread tallies of samples outside the bins, summed over the warp and added to global memory
// once per warp at the end.
struct Tally {
    unsigned long long below, above, nan;
};

__device__ __forceinline__ void flush_tally(Tally t, unsigned long long* tallies) {
    for (int off = 16; off > 0; off >>= 1) {
        t.below += __shfl_down_sync(0xffffffffu, t.below, off);
        t.above += __shfl_down_sync(0xffffffffu, t.above, off);
        t.nan += __shfl_down_sync(0xffffffffu, t.nan, off);
    }
    if ((threadIdx.x & 31) == 0) {
        if (t.below) atomicAdd(tallies + 0, t.below);
        if (t.above) atomicAdd(tallies + 1, t.above);
        if (t.nan) atomicAdd(tallies + 2, t.nan);
    }
}

// Resolves a slot under the policy: the bin to count, or -1.
__device__ __forceinline__ long long resolve(long long slot, const BinParams& p, Tally& t) {
    if (slot >= 0) return slot;
    if (slot == SLOT_NAN) { t.nan++; return -1; }
    if (slot == SLOT_BELOW) { t.below++; return p.clamp ? 0 : -1; }
    t.above++;
    return p.clamp ? (long long)p.nbins - 1 : -1;
}

// Counts sample i's bin into a sink. Unweighted counts may be aggregated: lanes of a warp that hit
// the same bin send one update carrying their number, so skewed data does not serialise on one
// counter. Weighted sums (W = float or double) add each weight.
template <class W, class Sink>
__device__ __forceinline__ void count(long long bin, const W* w, unsigned long long i, const BinParams& p, Sink& sink) {
    if constexpr (!cuda::std::is_void<W>::value) {
        if (bin >= 0) sink.add((unsigned long long)bin, (double)__ldg(w + i));
    } else if (!p.aggregate) {
        if (bin >= 0) sink.add((unsigned long long)bin, 1u);
    } else {
        unsigned mask = __activemask();
        unsigned key = bin >= 0 ? (unsigned)bin : 0xffffffffu;
        unsigned peers = __match_any_sync(mask, key);
        if (bin >= 0 && (int)(threadIdx.x & 31) == __ffs(peers) - 1) sink.add((unsigned long long)bin, (unsigned)__popc(peers));
    }
}

// The grid-stride loop shared by all strategies: 16-byte loads, two in flight per thread. With
// PREFETCH the next pair is loaded before the current pair is counted, so that the loads' latency
// hides behind the counting within the warp, not only behind other warps: for the count kernels
// that an SM holds at most 1024 threads of (one block of 1024 or two of 512), where ncu put most
// stalls on the loads (long scoreboard, 7.2 of 17.5 cycles per instruction at 131072 bins). It
// costs 8-14 registers, so kernels that run three or four 512-thread blocks per SM go without.
//
// `block` of `blocks` is this block's place in the loop: the grid's (blockIdx.x of gridDim.x) for
// every strategy but sliced, whose blocks of one slice each read the whole input as a grid of their
// own.
template <bool PREFETCH, class Sink, class Step>
__device__ __forceinline__ void grid_walk(const sample_t* __restrict__ in, unsigned long long n, Sink& sink,
                                          Step step, unsigned block, unsigned blocks) {
    constexpr int VEC = 16 / sizeof(sample_t);
    union Vec { uint4 raw; sample_t s[VEC]; };
    const unsigned long long nvec = n / VEC;
    const unsigned long long stride = (unsigned long long)blocks * blockDim.x;
    const uint4* in4 = reinterpret_cast<const uint4*>(in);
    unsigned long long i = (unsigned long long)block * blockDim.x + threadIdx.x;
    auto step_pair = [&](const Vec& a, const Vec& b, unsigned long long at) {
        sink.step();
#pragma unroll
        for (int k = 0; k < VEC; k++) step(a.s[k], at * VEC + k);
#pragma unroll
        for (int k = 0; k < VEC; k++) step(b.s[k], (at + stride) * VEC + k);
    };
    if (PREFETCH) {
        if (i + stride < nvec) {
            Vec a, b;
            a.raw = __ldg(in4 + i);
            b.raw = __ldg(in4 + i + stride);
            for (;;) {
                const unsigned long long next = i + 2 * stride;
                const bool more = next + stride < nvec;
                Vec na, nb;
                if (more) {
                    na.raw = __ldg(in4 + next);
                    nb.raw = __ldg(in4 + next + stride);
                }
                step_pair(a, b, i);
                i = next;
                if (!more) break;
                a = na, b = nb;
            }
        }
    } else {
        for (; i + stride < nvec; i += 2 * stride) {
            Vec a, b;
            a.raw = __ldg(in4 + i);
            b.raw = __ldg(in4 + i + stride);
            step_pair(a, b, i);
        }
    }
    for (; i < nvec; i += stride) {
        Vec a;
        a.raw = __ldg(in4 + i);
#pragma unroll
        for (int k = 0; k < VEC; k++) step(a.s[k], i * VEC + k);
    }
    for (unsigned long long j = nvec * VEC + (unsigned long long)block * blockDim.x + threadIdx.x; j < n; j += stride)
        step(in[j], j);
}

// Every sample through numpy's rule (`locate`), its slot resolved against the policy and counted
// (with its weight) into `sink`, over `grid_walk`.
template <int MODE, class W, class Sink, bool PREFETCH = false>
__device__ __forceinline__ void process(const sample_t* __restrict__ in, unsigned long long n, const W* w,
                                        const BinParams& p, Sink& sink, Tally& t, unsigned block,
                                        unsigned blocks) {
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long j) {
        count<W>(resolve(locate<MODE>(v, p), p, t), w, j, p, sink);
    }, block, blocks);
}

// The lean loop of the sliced kernels (defined after `bin32`, below), which the shared and packed
// kernels use for integer bins and (packed) exact float32 bins.
template <int MODE, bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ void lean_loop(const sample_t* __restrict__ in, unsigned long long n, const BinParams& p,
                                          Sink& sink, Tally& t, unsigned lo, unsigned len, unsigned block,
                                          unsigned blocks);

// ---- shared: one private histogram per block -------------------------------------------------

template <class C>
struct SharedSink {
    C* h;
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) { atomicAdd(h + bin, (C)amount); }
};

template <class C, class Out>
__device__ __forceinline__ void flush_counters(const C* h, unsigned long long count, Out* out) {
    for (unsigned long long b = threadIdx.x; b < count; b += blockDim.x) {
        C v = h[b];
        if (v != (C)0) atomicAdd(out + b, (Out)v);
    }
}

template <int MODE, class W, class C, class Out, bool PREFETCH = false>
__device__ void shared_kernel(const sample_t* in, unsigned long long n, const W* w, BinParams p, Out* out,
                              unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    C* h = reinterpret_cast<C*>(smem_raw);
    for (unsigned long long b = threadIdx.x; b < p.nbins; b += blockDim.x) h[b] = (C)0;
    __syncthreads();
    SharedSink<C> sink{h};
    Tally t{0, 0, 0};
    // Unaggregated u32 counts of integer bins take the lean step (see `lean_loop`).
    constexpr bool LEAN = cuda::std::is_void<W>::value && cuda::std::is_same<C, unsigned int>::value &&
                          MODE == MODE_INTEGER;
    if (LEAN && !p.aggregate)
        lean_loop<MODE, true, PREFETCH>(in, n, p, sink, t, 0u, (unsigned)p.nbins, blockIdx.x, gridDim.x);
    else
        process<MODE, W, SharedSink<C>, PREFETCH>(in, n, w, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_counters(h, p.nbins, out);
    flush_tally(t, tallies);
}

#define NO_HOT_KEY 0xffffffffu
/// A sample counted in no bin (partition and exchange).
#define NO_BIN 0xffffffffu

// ---- packed: narrow shared counters, two (16-bit) or four (8-bit) to a word ---------------------
//
// Half or a quarter of the shared memory of u32 counters: three blocks per SM where u32 counters
// allow one (32768 bins), and one block holds up to ~116000 (16-bit) or ~232000 (8-bit) bins, or
// ~464000 as 4-bit counters (one 1024-thread build only: they wrap every 16 counts, so they serve
// spread data over many bins, where a block sees a few counts per bin).
// A narrow counter wraps, and its carry runs into the next counter of the word. Both are undone
// exactly, without any timing assumption: a shared atomicAdd returns the word before the add, so the
// one thread whose add made a counter wrap sees it, and it alone knows what every counter of the
// word lost or gained. It adds the difference between what it meant to add and what each counter
// of the word actually changed by (the wrapped one lost 2^BITS, the next gained a carry of 1, and so
// on up the word) to the u64 result in global memory. The narrow counters only ever change by
// atomics, so each counter's final value plus all the corrections made for it is its exact count.
// Wraps are rare (one per 2^BITS counts of a bin in one block), so global memory sees few of them.
//
// Skewed data needs more care. Returning atomics on one shared address serialise (each lane needs
// its own old value): with 7 of 8 samples in one bin, 16-bit counters ran the standard hot workload
// at 1024 GB/s against 2175 uniform at 32768 bins (533632c). And 8-bit counters would send a stream
// of corrections to one global address (~900000 for 2^28 hot samples). So the first bin of a block
// that reaches 256 counts (the wrap itself for 8 bits) becomes the block's hot bin, and from then
// on each lane counts it in its own u32 counter (32 of them, one per bank, after the packed words):
// still one atomic instruction per sample, now without conflicts. Checking every sample against a
// hot bin in a separate branch instead (e80c0ce) split mixed warps into two atomic instructions:
// 1768 GB/s hot at 32768 bins.

/// Per-lane counters of the hot bin, after the packed words.
#define PACKED_HOT_LANES 32

template <int BITS>
__device__ __noinline__ void packed_crossed(unsigned bin, unsigned old, unsigned amount, unsigned long long nbins,
                                            unsigned long long* out, unsigned* hot_key) {
    constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1;
    const unsigned lane = bin % PER, first = bin - lane;
    if (((old >> (lane * BITS)) & MASK) + amount > MASK) {
        const unsigned now = old + (amount << (lane * BITS));
        for (unsigned j = lane; j < PER && first + j < nbins; j++) {
            const int changed = (int)((now >> (j * BITS)) & MASK) - (int)((old >> (j * BITS)) & MASK);
            const int meant = j == lane ? (int)amount : 0;
            // A negative correction wraps the u64 counter modulo 2^64 and comes out exact in the sum.
            if (meant != changed) atomicAdd(out + first + j, (unsigned long long)(long long)(meant - changed));
        }
    }
    atomicCAS(hot_key, NO_HOT_KEY, bin);
}

template <int BITS>
struct PackedSink {
    unsigned* h;
    unsigned long long* out;
    unsigned long long nbins;
    unsigned* hot_key;
    unsigned* hot_lane;  // this lane's counter of the hot bin
    unsigned hot;        // this thread's copy of *hot_key, refreshed once per loop step (a stale copy
                         // is still exact: both routes count)
    __device__ __forceinline__ void step() { hot = *(volatile unsigned*)hot_key; }
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1, CLAIM = MASK < 0xFFu ? MASK : 0xFFu;
        const unsigned b = (unsigned)bin, a = (unsigned)amount;
        const bool is_hot = b == hot;
        const unsigned shift = (b % PER) * BITS;
        const unsigned old = atomicAdd(is_hot ? hot_lane : h + b / PER, is_hot ? a : a << shift);
        // Past a multiple of 256 counts (for 8 and 4 bits: a wrap): a wrap to undo, a hot bin to claim.
        if (!is_hot && ((old >> shift) & CLAIM) + a > CLAIM)
            packed_crossed<BITS>(b, old, a, nbins, out, hot_key);
    }
};

// Adds a block's packed counters of `nbins` bins and its hot bin's per-lane counters to `out` (the
// u64 result of those bins), after the block's last add.
template <int BITS>
__device__ __forceinline__ void flush_packed(const unsigned* h, unsigned long long nbins, const unsigned* hot_counts,
                                             unsigned hot_key, unsigned long long* out) {
    constexpr unsigned PER = 32 / BITS, MASK = (1u << BITS) - 1;
    const unsigned long long words = (nbins + PER - 1) / PER;
    for (unsigned long long wd = threadIdx.x; wd < words; wd += blockDim.x) {
        const unsigned v = h[wd];
        if (v == 0) continue;
        for (unsigned j = 0; j < PER && wd * PER + j < nbins; j++) {
            const unsigned c = (v >> (j * BITS)) & MASK;
            if (c) atomicAdd(out + wd * PER + j, (unsigned long long)c);
        }
    }
    if (threadIdx.x < 32 && hot_key != NO_HOT_KEY) {
        unsigned long long c = hot_counts[threadIdx.x];
        for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
        if (threadIdx.x == 0 && c != 0) atomicAdd(out + hot_key, c);
    }
}

template <int MODE, int BITS, bool PREFETCH>
__device__ void packed_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned long long* out,
                              unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned long long words = (p.nbins + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    for (unsigned long long b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    __syncthreads();
    PackedSink<BITS> sink{h, out, p.nbins, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    Tally t{0, 0, 0};
    // The prefetching builds of the cheap binning modes count unaggregated samples with the sliced
    // kernels' lean step (a whole slice: the bins from 0); the rest with `process`.
    constexpr bool LEAN = PREFETCH && (MODE == MODE_INTEGER || MODE == MODE_UNIFORM32_EXACT);
    if (LEAN && !p.aggregate)
        lean_loop<MODE, true, true>(in, n, p, sink, t, 0u, (unsigned)p.nbins, blockIdx.x, gridDim.x);
    else
        process<MODE, void, PackedSink<BITS>, PREFETCH>(in, n, (const void*)0, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_packed<BITS>(h, p.nbins, hot_counts, hot_key, out);
    flush_tally(t, tallies);
}

// ---- cluster: the bins split across the blocks of a cluster ----------------------------------

// Like the global kernel (below), each block keeps one hot bin in its own shared memory, so that
// skewed data does not serialise on one remote counter; the block adds it to the owner at the end.
template <class C>
struct ClusterSink {
    C* h;
    cg::cluster_group cluster;
    unsigned int per_block;
    unsigned* hot_key;
    C* hot_count;
    __device__ __forceinline__ void step() {}
    __device__ __forceinline__ C* owner(unsigned long long bin) {
        unsigned int rank = (unsigned int)(bin / per_block);
        unsigned int off = (unsigned int)(bin - (unsigned long long)rank * per_block);
        return cluster.map_shared_rank(h, rank) + off;
    }
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        if constexpr (cuda::std::is_same<C, unsigned int>::value) {
            unsigned key = *(volatile unsigned*)hot_key;
            if ((unsigned)bin == key) {
                atomicAdd(hot_count, (C)amount);
                return;
            }
            atomicAdd(owner(bin), (C)amount);
            if (key == NO_HOT_KEY && amount >= 8) atomicCAS(hot_key, NO_HOT_KEY, (unsigned)bin);
        } else {
            atomicAdd(owner(bin), (C)amount);
        }
    }
};

template <int MODE, class W, class C, class Out>
__device__ void cluster_kernel(const sample_t* in, unsigned long long n, const W* w, BinParams p, Out* out,
                               unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    __shared__ C hot_count;
    C* h = reinterpret_cast<C*>(smem_raw);
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned int per_block = p.bins_per_block;
    for (unsigned int b = threadIdx.x; b < per_block; b += blockDim.x) h[b] = (C)0;
    if (threadIdx.x == 0) {
        hot_key = NO_HOT_KEY;
        hot_count = (C)0;
    }
    // No block may update a remote histogram before its owner has zeroed it.
    cluster.sync();
    ClusterSink<C> sink{h, cluster, per_block, &hot_key, &hot_count};
    Tally t{0, 0, 0};
    process<MODE, W>(in, n, w, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    if (threadIdx.x == 0 && hot_key != NO_HOT_KEY && hot_count != (C)0) atomicAdd(sink.owner(hot_key), hot_count);
    // Every remote update must land before the owners read their slices (and before any block exits).
    cluster.sync();
    unsigned long long first = (unsigned long long)cluster.block_rank() * per_block;
    if (first < p.nbins) {
        unsigned long long count = p.nbins - first < per_block ? p.nbins - first : per_block;
        flush_counters(h, count, out + first);
    }
    flush_tally(t, tallies);
}

// The lanes of the warp with this lane's `valid` and, among valid lanes, the same low `key_bits`
// bits of `key`: one ballot per bit, where __match_any_sync measured slower (exchange: 266 against
// 350 GB/s at 1M bins). Every lane of the warp must call this. Used to let one lane of each group
// update a shared cursor for all of them (the exchange sends, the partition scatter's ranks).
__device__ __forceinline__ unsigned lanes_with_key(bool valid, unsigned key, unsigned key_bits) {
    unsigned peers = __ballot_sync(0xffffffffu, valid);
    if (!valid) peers = ~peers;
    for (unsigned bit = 0; bit < key_bits; bit++) {
        const bool set = (key >> bit) & 1u;
        const unsigned vote = __ballot_sync(0xffffffffu, set);
        peers &= set ? vote : ~vote;
    }
    return peers;
}

// ---- exchange: the bins split across a cluster, samples sent to their owner in batches -----------
//
// For bin counts beyond one block (1M bins: 1 MiB even as 8-bit counters). Each block of a cluster
// owns a slice of the bins as packed narrow counters (see `packed`), and the cluster reads the input
// in phases. In a phase every block bins one tile of samples and writes each sample's offset within
// its owner's slice into the owner's inbox (its own included) through distributed shared memory:
// 4 bytes, no atomic, since each source block has its own region of every inbox and the positions
// come from shared-memory cursors in the source. A cluster barrier ends the phase, and each block
// then counts what it received with shared atomics. Cluster-wide atomics on remote counters
// measured no better than global ones (cluster4 341 GB/s at 131072 bins, run 3); here global
// memory sees the samples once (the partition passes: 12 bytes per sample).
//
// Inboxes are double-buffered: the blocks write phase p + 1's entries while their owners may still
// be counting phase p's, and an owner finishes counting phase p before it arrives at the barrier
// that ends phase p + 1, after which phase p + 2 reuses phase p's buffer. A region that fills up (at
// most `cap` entries per source, owner and phase: skewed data) sends the rest as remote atomics on
// the owner's packed counters, which correct their own wraps like local ones.
//
// Instructions are the cost (ncu at 6957f1d: 178 warp instructions per 32 samples, IPC 2.3), so the
// sample loop keeps to 32-bit arithmetic, writes through 32-bit shared::cluster addresses and has
// one path for every sample.

#define EXCHANGE_MAX_CLUSTER 16

/// Samples each thread bins per phase: 8, or 16 for 1-byte samples (one 16-byte load).
#define EXCHANGE_SAMPLES (16 / sizeof(sample_t) > 8 ? 16 / sizeof(sample_t) : 8)

// The owner of bin b among slices of `per_block` bins: a float estimate, corrected (b < 2^24 is
// exact in float; the estimate is off by at most one). Garbage for NO_BIN, which callers discard.
__device__ __forceinline__ unsigned owner_of(unsigned b, unsigned per_block, float inv) {
    unsigned q = (unsigned)((float)b * inv);
    q -= q * per_block > b ? 1u : 0u;
    q += (q + 1) * per_block <= b ? 1u : 0u;
    return q;
}

// A sample's bin, or NO_BIN, in 32-bit arithmetic where that is exact (integer bins of samples of
// at most 4 bytes: the CUDA engine refuses 2^32 bins or more); otherwise through `locate`.
// TALLY = false skips the tallies (the sliced kernels' blocks of every slice but the first).
template <int MODE, bool TALLY = true>
__device__ __forceinline__ unsigned bin32(sample_t v, const BinParams& p, Tally& t) {
#if !SAMPLE_IS_FLOAT
    if (MODE == MODE_INTEGER && sizeof(sample_t) <= 4) {
        const unsigned n = (unsigned)p.nbins;
#if SAMPLE_IS_SIGNED
        if (v < 0) {
            if (TALLY) t.below++;
            return p.clamp ? 0u : NO_BIN;
        }
#endif
        const unsigned u = (unsigned)v;
        if (u >= n) {
            if (TALLY) t.above++;
            return p.clamp ? n - 1 : NO_BIN;
        }
        return u;
    }
#endif
#if SAMPLE_IS_F32
    // locate_uniform32_exact with 32-bit results.
    if (MODE == MODE_UNIFORM32_EXACT) {
        const float x = (float)v;
        const unsigned n = (unsigned)p.nbins;
        if (!(x >= 0.0f)) {
            if (x != x) {
                if (TALLY) t.nan++;
                return NO_BIN;
            }
            if (TALLY) t.below++;
            return p.clamp ? 0u : NO_BIN;
        }
        if (x > p.last32) {
            if (TALLY) t.above++;
            return p.clamp ? n - 1 : NO_BIN;
        }
        return min((unsigned)__fmul_rn(x, p.scale32), n - 1);
    }
#endif
    const long long b = resolve(locate<MODE>(v, p), p, t);
    return b >= 0 ? (unsigned)b : NO_BIN;
}

// ---- sliced: the bins cut into slices of one block's narrow counters ---------------------------
//
// Beyond what one block's narrow counters hold, the bins are cut into slices of p.bins_per_block
// bins; each block counts one slice and reads the whole input, skipping the samples of other
// slices. Block b counts slice b % slices as member b / slices of that slice's blocks, and the
// members of every slice walk the input in the same order: the blocks reading a tile at about the
// same time are one per slice, so the tile comes from DRAM once and from L2 once per slice (ncu at
// 1M bins in five slices: 1.08 GB read from DRAM for 1.07 GB of samples, L2 hit rate 75 %). What it
// costs: every sample is read and binned once per slice, whether counted or not (a warp's lanes
// rarely agree on skipping: with five slices some lane of 32 almost always counts), so the time
// grows with the slice count: ~2000 / slices GB/s with the generic step (~50 warp instructions per
// 32 samples read, ncu at d6ad53e), ~2200-2360 / slices with `lean_loop` (f8eb8bb). Staging each
// warp's samples of the slice in a shared ring to count them 32 at a time cost more instructions
// than it saved (d6ad53e: 785 against 973 GB/s in two slices, 377 against 414 in five). What it
// saves against partition or global: each count is a shared-memory atomic, with no round trip of
// the samples through DRAM and no global atomic per sample. The host launches a multiple of
// `slices` blocks so that every slice has as many members, which keeps them in step.

// A sample's bin for the slice test (`bin - lo < len`): bin32's, or for integer samples of at most
// 4 bytes without tallies the value itself. Out of range, the value minus lo is never below len:
// a negative value is at least 2^31 as unsigned, above the 2^31 - len the test would need (the host
// keeps sliced plans under 2^30 bins), and a value from nbins on is at least nbins - lo >= len
// above lo. NO_BIN - lo is never below len either (lo + len <= nbins < NO_BIN).
template <int MODE, bool TALLY>
__device__ __forceinline__ unsigned slice_bin(sample_t v, const BinParams& p, Tally& t) {
#if !SAMPLE_IS_FLOAT
    if (MODE == MODE_INTEGER && sizeof(sample_t) <= 4 && !TALLY) {
        if (!p.clamp) return (unsigned)v;
        const unsigned n = (unsigned)p.nbins;
#if SAMPLE_IS_SIGNED
        if (v < 0) return 0u;
#endif
        return (unsigned)v < n ? (unsigned)v : n - 1;
    }
#endif
    return bin32<MODE, TALLY>(v, p, t);
}

// `grid_walk` (two 16-byte loads per lane, the next two in flight) with the
// lean per-sample step of the sliced kernels: the 32-bit bin of `slice_bin`, one subtraction and
// one compare for the slice test, and the packed add; only the first slice's blocks keep tallies.
// The generic step (64-bit slot codes, `resolve`, the aggregation branch) cost ~30 PTX
// instructions per sample read at 0b27299, which every sample pays whether in the slice or not.
template <int MODE, bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ void lean_loop(const sample_t* __restrict__ in, unsigned long long n, const BinParams& p,
                                          Sink& sink, Tally& t, unsigned lo, unsigned len, unsigned block,
                                          unsigned blocks) {
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long) {
        const unsigned local = slice_bin<MODE, TALLY>(v, p, t) - lo;
        if (local < len) sink.add(local, 1u);
    }, block, blocks);
}

template <int MODE, int BITS>
__device__ void sliced_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned long long* out,
                              unsigned long long* tallies) {
    if (gated_off(p)) return;
    constexpr unsigned PER = 32 / BITS;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    const unsigned per = p.bins_per_block;
    const unsigned slices = (unsigned)((p.nbins + per - 1) / per);
    const unsigned slice = blockIdx.x % slices;
    const unsigned member = blockIdx.x / slices;
    const unsigned members = (gridDim.x - slice + slices - 1) / slices;
    const unsigned lo = slice * per;
    const unsigned len = (unsigned)min((unsigned long long)per, p.nbins - lo);
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned words = (len + PER - 1) / PER;
    unsigned* hot_counts = h + words;
    for (unsigned b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    __syncthreads();
    PackedSink<BITS> sink{h, out + lo, len, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    Tally t{0, 0, 0};
    // A second copy of the loop without tallies where binning is cheap (the modes `auto` slices);
    // the others keep one copy, which fits their registers without spilling.
    constexpr bool LEAN = MODE == MODE_INTEGER || MODE == MODE_UNIFORM32_EXACT;
    if (!LEAN || slice == 0)
        lean_loop<MODE, true, true>(in, n, p, sink, t, lo, len, member, members);
    else
        lean_loop<MODE, !LEAN, true>(in, n, p, sink, t, lo, len, member, members);
    __syncthreads();
    flush_packed<BITS>(h, len, hot_counts, hot_key, out + lo);
    // Every slice sees every sample; the first slice's blocks report the ones outside the bins.
    if (slice == 0) flush_tally(t, tallies);
}

// The address of `local` (this block's shared memory) in block `rank`'s window of the cluster.
__device__ __forceinline__ unsigned cluster_address(const void* local, unsigned rank) {
    unsigned r;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"((unsigned)__cvta_generic_to_shared(local)), "r"(rank));
    return r;
}

__device__ __forceinline__ void store_cluster(unsigned address, unsigned v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(address), "r"(v) : "memory");
}

// A full inbox region: one remote atomic on the owner's packed counters (rare, out of line).
template <int BITS>
__device__ __noinline__ void exchange_overflow(unsigned* h, unsigned* hot_key, unsigned dest, unsigned local,
                                               unsigned long long* out, unsigned per_block, unsigned long long nbins) {
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned long long first = (unsigned long long)dest * per_block;
    PackedSink<BITS> owner{cluster.map_shared_rank(h, dest), out + first,
                           nbins - first < per_block ? nbins - first : per_block,
                           cluster.map_shared_rank(hot_key, dest), nullptr, NO_HOT_KEY};
    owner.add(local, 1u);
}

template <int MODE, int BITS>
__device__ void exchange_kernel(const sample_t* __restrict__ in, unsigned long long n, BinParams p,
                                unsigned long long* out, unsigned long long* tallies) {
    constexpr unsigned PER = 32 / BITS;
    constexpr unsigned S = EXCHANGE_SAMPLES;
    constexpr unsigned VEC = 16 / sizeof(sample_t);            // samples per 16-byte load
    constexpr unsigned LOADS = (S + VEC - 1) / VEC;            // 16-byte loads per thread per phase
    union Vec { uint4 raw; sample_t s[VEC]; };
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned hot_key;
    __shared__ unsigned cursor[EXCHANGE_MAX_CLUSTER];
    __shared__ unsigned received[2][EXCHANGE_MAX_CLUSTER];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned K = cluster.num_blocks();
    const unsigned me = cluster.block_rank();
    const unsigned per_block = p.bins_per_block;  // a multiple of 32: no packed word spans two owners
    const unsigned words = per_block / PER;
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    unsigned* hot_counts = h + words;
    unsigned* inbox = hot_counts + PACKED_HOT_LANES;  // [2][K][cap]: phase parity, source, entry
    unsigned dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    const unsigned cap = (dynamic_bytes / 4 - words - PACKED_HOT_LANES) / (2 * K);
    const unsigned long long first = (unsigned long long)me * per_block;
    const unsigned long long mine = first >= p.nbins ? 0 : (p.nbins - first < per_block ? p.nbins - first : per_block);
    for (unsigned b = threadIdx.x; b < words + PACKED_HOT_LANES; b += blockDim.x) h[b] = 0;
    if (threadIdx.x == 0) hot_key = NO_HOT_KEY;
    if (threadIdx.x < EXCHANGE_MAX_CLUSTER) cursor[threadIdx.x] = 0;
    // No block may write to another's counters or inbox before its owner has zeroed them.
    cluster.sync();

    PackedSink<BITS> sink{h, out + first, mine, &hot_key, hot_counts + (threadIdx.x & 31), NO_HOT_KEY};
    Tally t{0, 0, 0};
    const float inv = 1.0f / (float)per_block;
    const unsigned lane = threadIdx.x & 31;
    const unsigned below_lane = (1u << lane) - 1u;
    const unsigned dest_bits = 32 - __clz(K - 1);  // bits of a block rank
    const unsigned inbox_address = (unsigned)__cvta_generic_to_shared(inbox);
    const unsigned long long tile = (unsigned long long)blockDim.x * LOADS * VEC;
    const unsigned long long ntiles = (n + tile - 1) / tile;
    // Every block of a cluster runs the same number of phases (the barriers need all of them).
    const unsigned long long phases = (ntiles + gridDim.x - 1) / gridDim.x;
    const uint4* in4 = reinterpret_cast<const uint4*>(in);

    // Thread x's samples in tile `tl`: vectors x, x + blockDim.x, ... of the tile. A partial tile
    // (the input's end) is read one sample at a time, out-of-range positions marked invalid.
    auto load = [&](unsigned long long tl, Vec (&v)[LOADS], unsigned& valid) {
        const unsigned long long base = tl * tile;
        if (tl < ntiles && base + tile <= n) {
#pragma unroll
            for (unsigned j = 0; j < LOADS; j++) v[j].raw = __ldg(in4 + base / VEC + j * blockDim.x + threadIdx.x);
            valid = 0xffffffffu;
        } else {
            valid = 0;
#pragma unroll
            for (unsigned j = 0; j < LOADS; j++)
#pragma unroll
                for (unsigned k = 0; k < VEC; k++) {
                    const unsigned long long at = base + ((unsigned long long)j * blockDim.x + threadIdx.x) * VEC + k;
                    v[j].s[k] = (sample_t)0;
                    if (tl < ntiles && at < n) {
                        v[j].s[k] = in[at];
                        valid |= 1u << (j * VEC + k);
                    }
                }
        }
    };

    Vec cur[LOADS], nxt[LOADS];
    unsigned cur_valid, nxt_valid = 0;
    load(blockIdx.x, cur, cur_valid);
    for (unsigned long long ph = 0; ph < phases; ph++) {
        const unsigned buf = (unsigned)(ph & 1);
        const unsigned region = (buf * K + me) * cap;  // this block's region of every inbox
        // The next tile's loads go out before this one is binned.
        if (ph + 1 < phases) load(blockIdx.x + (ph + 1) * gridDim.x, nxt, nxt_valid);
#pragma unroll
        for (unsigned k = 0; k < LOADS * VEC; k++) {
            const unsigned b = (cur_valid >> k) & 1u ? bin32<MODE>(cur[k / VEC].s[k % VEC], p, t) : NO_BIN;
            const bool sends = b != NO_BIN;
            const unsigned dest = sends ? owner_of(b, per_block, inv) : 0u;
            // Lanes sending to the same block share one cursor update.
            const unsigned peers = lanes_with_key(sends, dest, dest_bits);
            const unsigned leader = __ffs(peers) - 1;
            unsigned pos = 0;
            if (sends && lane == leader) pos = atomicAdd(cursor + dest, (unsigned)__popc(peers));
            pos = __shfl_sync(0xffffffffu, pos, leader) + (unsigned)__popc(peers & below_lane);
            if (sends) {
                const unsigned local = b - dest * per_block;
                if (pos < cap)
                    store_cluster(cluster_address(inbox, dest) + (region + pos) * 4u, local);
                else
                    exchange_overflow<BITS>(h, &hot_key, dest, local, out, per_block, p.nbins);
            }
        }
        __syncthreads();  // every cursor of the phase is final
        if (threadIdx.x < K) {
            const unsigned sent = cursor[threadIdx.x] < cap ? cursor[threadIdx.x] : cap;
            store_cluster(cluster_address(&received[buf][me], threadIdx.x), sent);
            cursor[threadIdx.x] = 0;
        }
        // Releases this phase's inbox entries and counts to their owners, and acquires theirs.
        cluster.sync();
        sink.step();
        for (unsigned src = 0; src < K; src++) {
            const unsigned got = received[buf][src];
            const unsigned* entries = inbox + (buf * K + src) * cap;
            for (unsigned i = threadIdx.x; i < got; i += blockDim.x) sink.add(entries[i], 1u);
        }
#pragma unroll
        for (unsigned j = 0; j < LOADS; j++) cur[j] = nxt[j];
        cur_valid = nxt_valid;
    }
    // The last barrier came after every remote write to this block; the counting since was local.
    __syncthreads();
    flush_packed<BITS>(h, mine, hot_counts, hot_key, out + first);
    flush_tally(t, tallies);
}

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
        if constexpr (cuda::std::is_same<Out, unsigned int>::value) {
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
// (gated like the global kernel it follows: see `gated_off`).
extern "C" __global__ void hist_fold_u32(unsigned int* scratch, unsigned long long* out, unsigned long long n,
                                         const unsigned* gate, unsigned gate_want) {
    if (gate != nullptr && *gate != gate_want) return;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned int v = scratch[i];
        if (v) {
            out[i] += v;
            scratch[i] = 0;
        }
    }
}

// ---- partition: bin ranges that fit shared memory, for bin counts beyond a cluster --------------
//
// Four kernels per batch: (1) count the samples of each bucket (a range of 2^bits bins) in shared
// memory, and tally what falls outside; (2) one block turns the bucket counts into segment offsets
// of an index array, on the device so that no host round trip separates the passes; (3) scatter
// each sample's bin, as a 16-bit offset within its bucket, into its bucket's segment: each block
// first sorts a tile of samples by bucket in shared memory, so that the writes to global memory are
// contiguous runs rather than one scattered 2-byte store per sample; (4) each block walks a
// contiguous run of the index array, one bucket segment at a time, counting in a shared-memory
// histogram of 2^bits bins and adding it to the result. Every sample costs shared atomics only;
// global memory sees the samples twice and 4 bytes of index per sample instead of one L2 atomic.

struct BucketSink {
    unsigned* cnt;
    unsigned bits;
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) { atomicAdd(cnt + (bin >> bits), (unsigned)amount); }
};

template <int MODE>
__device__ void part_count(const sample_t* in, unsigned long long n, BinParams p, unsigned bits, unsigned nbuckets,
                           unsigned long long* bucket_counts, unsigned long long* tallies) {
    if (gated_off(p)) return;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned* cnt = reinterpret_cast<unsigned*>(smem_raw);
    for (unsigned b = threadIdx.x; b < nbuckets; b += blockDim.x) cnt[b] = 0;
    __syncthreads();
    BucketSink sink{cnt, bits};
    Tally t{0, 0, 0};
    p.aggregate = 0;
    process<MODE, void>(in, n, (const void*)0, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_counters(cnt, nbuckets, bucket_counts);
    flush_tally(t, tallies);
}

// offsets[b] = sum of counts[0..b) for b in 0..=nbuckets, and the scatter's cursors start there.
// One block of 1024 threads; each thread sums a run of consecutive buckets.
extern "C" __global__ void __launch_bounds__(1024) hist_part_scan(const unsigned long long* __restrict__ counts,
                                                                  unsigned nbuckets, unsigned long long* offsets,
                                                                  unsigned long long* cursor) {
    __shared__ unsigned long long warp_total[32];
    const unsigned per = (nbuckets + blockDim.x - 1) / blockDim.x;
    const unsigned b0 = threadIdx.x * per;
    const unsigned b1 = b0 + per < nbuckets ? b0 + per : nbuckets;
    unsigned long long mine = 0;
    for (unsigned b = b0; b < b1; b++) mine += counts[b];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned long long incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned long long up = __shfl_up_sync(0xffffffffu, incl, d);
        if ((int)lane >= d) incl += up;
    }
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        unsigned long long w = lane < blockDim.x / 32 ? warp_total[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            unsigned long long up = __shfl_up_sync(0xffffffffu, w, d);
            if ((int)lane >= d) w += up;
        }
        warp_total[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    unsigned long long run = incl - mine + (warp ? warp_total[warp - 1] : 0);
    for (unsigned b = b0; b < b1; b++) {
        offsets[b] = run;
        cursor[b] = run;
        run += counts[b];
    }
    if (threadIdx.x == blockDim.x - 1) offsets[nbuckets] = warp_total[blockDim.x / 32 - 1];
}

// Exclusive prefix sum of n shared counters into out (n up to a few thousand), by the whole block;
// returns the total to every thread. `warp_sums` holds 32 entries.
__device__ unsigned block_exclusive_scan(const unsigned* in, unsigned* out, unsigned n, unsigned* warp_sums) {
    const unsigned per = (n + blockDim.x - 1) / blockDim.x;
    const unsigned b0 = threadIdx.x * per;
    const unsigned b1 = b0 + per < n ? b0 + per : n;
    unsigned mine = 0;
    for (unsigned b = b0; b < b1; b++) mine += in[b];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x / 32;
    unsigned incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned up = __shfl_up_sync(0xffffffffu, incl, d);
        if ((int)lane >= d) incl += up;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        unsigned w = lane < nwarps ? warp_sums[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            unsigned up = __shfl_up_sync(0xffffffffu, w, d);
            if ((int)lane >= d) w += up;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    unsigned run = incl - mine + (warp ? warp_sums[warp - 1] : 0);
    for (unsigned b = b0; b < b1; b++) {
        out[b] = run;
        run += in[b];
    }
    const unsigned total = warp_sums[nwarps - 1];
    __syncthreads();  // warp_sums may be reused by the caller
    return total;
}

#define PART_K 16

// A sample's rank among the tile's samples of its bucket. With split_bits > 0 (the bucket number has
// at most that many bits) the warp first finds the lanes that share its bucket from one ballot per
// bit, and only the lowest of them updates the shared counter, for all of them: few buckets (or one
// hot bucket) would otherwise serialise 32 returning atomics on a handful of addresses. Every lane
// of the warp must call this (it votes even for a sample that lands in no bin).
__device__ __forceinline__ unsigned bucket_rank(unsigned bin, unsigned bits, unsigned split_bits, unsigned* cnt) {
    const bool valid = bin != NO_BIN;
    const unsigned bucket = bin >> bits;
    if (split_bits == 0) return valid ? atomicAdd(cnt + bucket, 1u) : 0u;
    const unsigned peers = lanes_with_key(valid, bucket, split_bits);
    const unsigned lane = threadIdx.x & 31;
    const unsigned leader = __ffs(peers) - 1;
    unsigned first = 0;
    if (valid && lane == leader) first = atomicAdd(cnt + bucket, (unsigned)__popc(peers));
    first = __shfl_sync(0xffffffffu, first, leader);
    return first + (unsigned)__popc(peers & ((1u << lane) - 1u));
}

// Shared memory per bucket: the count, the local offset and the shift from a tile position to the
// index array position (u32: a batch holds at most 2^28 samples); then the tile's bins (u32).
template <int MODE>
__device__ void part_scatter(const sample_t* __restrict__ in, unsigned long long n, BinParams p, unsigned bits,
                             unsigned nbuckets, unsigned split_bits, unsigned long long* cursor,
                             unsigned short* __restrict__ idx) {
    if (gated_off(p)) return;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ unsigned warp_sums[32];
    unsigned* cnt = reinterpret_cast<unsigned*>(smem_raw);
    unsigned* local = cnt + nbuckets;
    unsigned* shift = local + nbuckets;
    unsigned* staged = shift + nbuckets;
    const unsigned mask = (1u << bits) - 1;
    const unsigned long long tile = (unsigned long long)blockDim.x * PART_K;
    const unsigned long long ntiles = (n + tile - 1) / tile;
    Tally ignored{0, 0, 0};
    for (unsigned long long t0 = blockIdx.x; t0 < ntiles; t0 += gridDim.x) {
        for (unsigned b = threadIdx.x; b < nbuckets; b += blockDim.x) cnt[b] = 0;
        __syncthreads();
        unsigned bin[PART_K];
        unsigned rank[PART_K];
        const sample_t* tin = in + t0 * tile + threadIdx.x;
        const long long left = (long long)(n - t0 * tile) - (long long)threadIdx.x;
#pragma unroll
        for (int k = 0; k < PART_K; k++) {
            long long b = (long long)k * blockDim.x < left ? resolve(locate<MODE>(tin[k * blockDim.x], p), p, ignored) : -1;
            bin[k] = b >= 0 ? (unsigned)b : NO_BIN;
        }
#pragma unroll
        for (int k = 0; k < PART_K; k++) rank[k] = bucket_rank(bin[k], bits, split_bits, cnt);
        __syncthreads();
        const unsigned valid = block_exclusive_scan(cnt, local, nbuckets, warp_sums);
        // Tile position j of bucket b goes to index position base_b + (j - local_b); the sum wraps
        // modulo 2^32 through the shift and comes out exact because positions stay below 2^28.
        for (unsigned b = threadIdx.x; b < nbuckets; b += blockDim.x)
            if (cnt[b]) shift[b] = (unsigned)atomicAdd(cursor + b, (unsigned long long)cnt[b]) - local[b];
#pragma unroll
        for (int k = 0; k < PART_K; k++)
            if (bin[k] != NO_BIN) staged[local[bin[k] >> bits] + rank[k]] = bin[k];
        __syncthreads();
        // Consecutive threads write consecutive entries of one bucket's run.
        for (unsigned j = threadIdx.x; j < valid; j += blockDim.x) {
            const unsigned v = staged[j];
            idx[shift[v >> bits] + j] = (unsigned short)(v & mask);
        }
        __syncthreads();
    }
}

// offsets: nbuckets + 1 segment boundaries of the index array (offsets[nbuckets] = total); each
// entry is a bin's offset within its bucket (bits <= 16).
extern "C" __global__ void __launch_bounds__(512) hist_part_bins(const unsigned short* __restrict__ idx,
                                                                const unsigned long long* __restrict__ offsets,
                                                                unsigned nbuckets, unsigned bits,
                                                                unsigned long long nbins, unsigned long long* out) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned long long total = offsets[nbuckets];
    // Chunks of whole 16-byte vectors, so that every block's vector loads are aligned.
    const unsigned long long chunk = ((total + gridDim.x - 1) / gridDim.x + 7) & ~7ull;
    const unsigned long long cs = (unsigned long long)blockIdx.x * chunk;
    const unsigned long long ce = cs + chunk < total ? cs + chunk : total;
    if (cs >= ce) return;
    // The first bucket whose segment ends after cs (every thread finds the same one).
    unsigned lo = 0, hi = nbuckets;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (offsets[mid + 1] <= cs) lo = mid + 1; else hi = mid;
    }
    const unsigned width = 1u << bits;
    const uint4* idx8 = reinterpret_cast<const uint4*>(idx);
    for (unsigned b = lo; b < nbuckets && offsets[b] < ce; b++) {
        const unsigned long long s0 = offsets[b] > cs ? offsets[b] : cs;
        const unsigned long long s1 = offsets[b + 1] < ce ? offsets[b + 1] : ce;
        if (s0 >= s1) continue;
        for (unsigned j = threadIdx.x; j < width; j += blockDim.x) h[j] = 0;
        __syncthreads();
        // Unaligned head and tail one entry at a time, the aligned middle 8 entries per load.
        unsigned long long v0 = (s0 + 7) / 8, v1 = s1 / 8;
        if (v1 < v0) v1 = v0;
        const unsigned long long head_end = v0 * 8 < s1 ? v0 * 8 : s1;
        for (unsigned long long i = s0 + threadIdx.x; i < head_end; i += blockDim.x) atomicAdd(h + __ldg(idx + i), 1u);
        for (unsigned long long i = (v1 * 8 > head_end ? v1 * 8 : head_end) + threadIdx.x; i < s1; i += blockDim.x)
            atomicAdd(h + __ldg(idx + i), 1u);
        for (unsigned long long v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
            union { uint4 raw; unsigned short e[8]; } q;
            q.raw = __ldg(idx8 + v);
#pragma unroll
            for (int k = 0; k < 8; k++) atomicAdd(h + q.e[k], 1u);
        }
        __syncthreads();
        const unsigned long long first = (unsigned long long)b << bits;
        const unsigned long long count = nbins - first < width ? nbins - first : width;
        flush_counters(h, count, out + first);
        __syncthreads();
    }
}

// ---- Skew verdict --------------------------------------------------------------------------------
// Before the partition or sliced passes, `auto` looks at `probes` (at most VERDICT_SLOTS / 2)
// samples spread evenly over the input, counts their bins (under the policy; a sample counted in no
// bin counts for none) in a shared-memory hash table, and writes verdict[0] = 1 where the
// commonest bin holds at least `threshold` of the probed samples (the global kernel, whose
// per-block hot bin absorbs it, then runs: see `hot_share_for_global` in
// crates/smemkit/src/plan/mod.rs), else 0; verdict[1] = that bin's count, for reports. One block.
#define VERDICT_SLOTS 4096
template <int MODE>
__device__ void skew_verdict(const sample_t* __restrict__ in, unsigned long long n, BinParams p, unsigned probes,
                             double threshold, unsigned* __restrict__ verdict) {
    __shared__ unsigned keys[VERDICT_SLOTS];
    __shared__ unsigned counts[VERDICT_SLOTS];
    __shared__ unsigned best;
    for (unsigned i = threadIdx.x; i < VERDICT_SLOTS; i += blockDim.x) {
        keys[i] = NO_BIN;
        counts[i] = 0;
    }
    if (threadIdx.x == 0) best = 0;
    __syncthreads();
    // Sample floor(i * n / probes) (evenly spread, the first at 0, all below n), as
    // i * q + i * r / probes with n = q * probes + r, which cannot overflow.
    const unsigned long long q = n / probes, r = n % probes;
    for (unsigned i = threadIdx.x; i < probes; i += blockDim.x) {
        const unsigned long long j = i * q + (unsigned long long)i * r / probes;
        Tally unused = {0, 0, 0};
        const long long bin = resolve(locate<MODE>(in[j], p), p, unused);
        if (bin < 0) continue;
        const unsigned key = (unsigned)bin;
        // Open addressing from a multiplicative hash; at most half the slots are ever taken.
        unsigned slot = (key * 2654435761u) >> 20;
        for (;;) {
            const unsigned prev = atomicCAS(keys + slot, NO_BIN, key);
            if (prev == NO_BIN || prev == key) {
                atomicAdd(counts + slot, 1u);
                break;
            }
            slot = (slot + 1) & (VERDICT_SLOTS - 1);
        }
    }
    __syncthreads();
    unsigned m = 0;
    for (unsigned i = threadIdx.x; i < VERDICT_SLOTS; i += blockDim.x) m = max(m, counts[i]);
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_down_sync(0xffffffffu, m, off));
    if ((threadIdx.x & 31) == 0) atomicMax(&best, m);
    __syncthreads();
    if (threadIdx.x == 0) {
        verdict[0] = (double)best / (double)probes >= threshold ? 1u : 0u;
        verdict[1] = best;
    }
}

// ---- extern "C" entry points -----------------------------------------------------------------

// Counts of integer bins in shared memory run four 512-thread blocks per SM while the counters are
// small (256 bins: u8 samples at 90 % of a copy is a target), which leaves 32 registers a thread:
// the lean step took byte samples to 39 unbounded.
#define SHARED_MIN_BLOCKS(MODE, WTYPE) ((MODE) == MODE_INTEGER && cuda::std::is_void<WTYPE>::value ? 4 : 1)
#define HIST_KERNELS(MODE, MNAME, WTYPE, WNAME, C, OUT, GOUT)                                                         \
    extern "C" __global__ void __launch_bounds__(512, SHARED_MIN_BLOCKS(MODE, WTYPE)) hist_shared_##MNAME##_##WNAME( \
        const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p, OUT* out, unsigned long long* t) { \
        shared_kernel<MODE, WTYPE, C, OUT>(in, n, w, p, out, t);                                                 \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(512) hist_cluster_##MNAME##_##WNAME(                          \
        const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p, OUT* out, unsigned long long* t) { \
        cluster_kernel<MODE, WTYPE, C, OUT>(in, n, w, p, out, t);                                                \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(512) hist_global_##MNAME##_##WNAME(                           \
        const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p, GOUT* out, unsigned long long* t) { \
        global_kernel<MODE, WTYPE, GOUT>(in, n, w, p, out, t);                                                    \
    }

#define PART_KERNELS(MODE, MNAME)                                                                              \
    extern "C" __global__ void __launch_bounds__(512) hist_part_count_##MNAME(                                  \
        const sample_t* in, unsigned long long n, BinParams p, unsigned bits, unsigned nbuckets,               \
        unsigned long long* bucket_counts, unsigned long long* t) {                                            \
        part_count<MODE>(in, n, p, bits, nbuckets, bucket_counts, t);                                          \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(512, 2) hist_part_scatter_##MNAME(                             \
        const sample_t* in, unsigned long long n, BinParams p, unsigned bits, unsigned nbuckets,               \
        unsigned split_bits, unsigned long long* cursor, unsigned short* idx) {                                \
        part_scatter<MODE>(in, n, p, bits, nbuckets, split_bits, cursor, idx);                                             \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(1024) hist_verdict_##MNAME(                                   \
        const sample_t* in, unsigned long long n, BinParams p, unsigned probes, double threshold,              \
        unsigned* verdict) {                                                                                   \
        skew_verdict<MODE>(in, n, p, probes, threshold, verdict);                                              \
    }

// Two builds of each: without and with the prefetching loop (`p`, see `process`), which needs ~14
// more registers; the host takes the `p` build where an SM holds at most 1024 of the kernel's threads
// (plan::prefetch_build), launching 1024-thread blocks where one block fills an SM. The other build
// runs three or four 512-thread blocks per SM, which fit only at 40 registers or fewer: integer bins
// ask for that (41 registers, allocated as 48, cost 32768 bins a block per SM and 5 % at ba9ae65),
// and so do float32 bins without correction (42 unbounded; 16-bit 40 without spills, 8-bit 8 bytes);
// the other float modes need ~56-64 and keep two blocks rather than spill.
#define PACKED_MIN_BLOCKS(MODE) ((MODE) == MODE_INTEGER || (MODE) == MODE_UNIFORM32_EXACT ? 3 : 2)
#define PACKED_KERNEL(MODE, MNAME, BITS, SUFFIX, PREFETCH, BOUNDS)                                              \
    extern "C" __global__ void BOUNDS hist_shared##BITS##SUFFIX##_##MNAME##_none(                              \
        const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,         \
        unsigned long long* t) {                                                                               \
        packed_kernel<MODE, BITS, PREFETCH>(in, n, p, out, t);                                                 \
    }
#define PACKED_KERNELS(MODE, MNAME)                                                                            \
    PACKED_KERNEL(MODE, MNAME, 16, , false, __launch_bounds__(512, PACKED_MIN_BLOCKS(MODE)))                   \
    PACKED_KERNEL(MODE, MNAME, 16, p, true, __launch_bounds__(1024))                                           \
    PACKED_KERNEL(MODE, MNAME, 8, , false, __launch_bounds__(512, PACKED_MIN_BLOCKS(MODE)))                    \
    PACKED_KERNEL(MODE, MNAME, 8, p, true, __launch_bounds__(1024))                                            \
    PACKED_KERNEL(MODE, MNAME, 4, p, true, __launch_bounds__(1024))

// u32 counts where an SM holds at most 1024 threads (two 512-thread blocks, or one of 1024 where
// one block fills an SM: 19201 to 58108 bins): the prefetching loop, as the narrow counters' `p`
// build (plan::prefetch_build).
#define SHARED_ONE_BLOCK_KERNEL(MODE, MNAME)                                                                   \
    extern "C" __global__ void __launch_bounds__(1024) hist_sharedp_##MNAME##_none(                            \
        const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,         \
        unsigned long long* t) {                                                                               \
        shared_kernel<MODE, void, unsigned int, unsigned long long, true>(in, n, w, p, out, t);                \
    }

// Counts only, one 1024-thread block per SM (the inboxes fill the shared memory the counters leave).
#define EXCHANGE_KERNEL(MODE, MNAME, BITS)                                                                     \
    extern "C" __global__ void __launch_bounds__(1024) hist_exchange##BITS##_##MNAME##_none(                   \
        const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,         \
        unsigned long long* t) {                                                                               \
        exchange_kernel<MODE, BITS>(in, n, p, out, t);                                                         \
    }

// Counts only, one 1024-thread block per SM (narrow counters fill its shared memory), prefetching.
#define SLICED_KERNEL(MODE, MNAME, BITS)                                                                       \
    extern "C" __global__ void __launch_bounds__(1024) hist_sliced##BITS##_##MNAME##_none(                     \
        const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,         \
        unsigned long long* t) {                                                                               \
        sliced_kernel<MODE, BITS>(in, n, p, out, t);                                                           \
    }

#define HIST_MODE(MODE, MNAME)                                             \
    PART_KERNELS(MODE, MNAME)                                              \
    SLICED_KERNEL(MODE, MNAME, 8)                                          \
    SLICED_KERNEL(MODE, MNAME, 4)                                          \
    EXCHANGE_KERNEL(MODE, MNAME, 16)                                       \
    EXCHANGE_KERNEL(MODE, MNAME, 8)                                        \
    PACKED_KERNELS(MODE, MNAME)                                            \
    SHARED_ONE_BLOCK_KERNEL(MODE, MNAME)                                   \
    HIST_KERNELS(MODE, MNAME, void, none, unsigned int, unsigned long long, unsigned int) \
    HIST_KERNELS(MODE, MNAME, float, f32, double, double, double)                         \
    HIST_KERNELS(MODE, MNAME, double, f64, double, double, double)

#if SAMPLE_IS_FLOAT
#if SAMPLE_IS_F32
HIST_MODE(MODE_UNIFORM32, uniform32)
HIST_MODE(MODE_UNIFORM32_EXACT, uniform32x)
#else
HIST_MODE(MODE_UNIFORM64, uniform64)
#endif
#else
HIST_MODE(MODE_INTEGER, integer)
HIST_MODE(MODE_UNIFORM64, uniform64)
#endif
HIST_MODE(MODE_EDGES, edges)
