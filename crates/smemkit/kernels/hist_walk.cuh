// The per-sample machinery every strategy shares: the tallies of samples outside the bins, the
// policy (`resolve`), counting into a sink (`count`), the grid-stride walk over the input
// (`grid_walk`, `process`) and the lean 32-bit step (`bin32`, `slice_bin`, `lean_loop`) of the
// kernels that count integer or exact float32 bins only. Included by histogram.cu.

// Slots of each warp's staging ring in `wide_ring_loop` (the host's RING_SLOTS): a batch of 32
// and room for the next step's pushes.
#define WIDE_RING_SLOTS 64

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

// The tallies of the branch-free steps: samples below `first`, above `last` and NaN counted with
// no branch, in 32-bit counters (a thread reads far fewer than 2^32 samples), added to the
// thread's `Tally` once its walk ends.
struct SideTally {
    unsigned below = 0, above = 0, nan = 0;
    template <class T>
    __device__ __forceinline__ void count(T x, T first, T last) {
        below += x < first;
        above += x > last;
        nan += x != x;
    }
    __device__ __forceinline__ void into(Tally& t) const {
        t.below += below;
        t.above += above;
        t.nan += nan;
    }
};

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
// counter. Weighted sums (W = float or double) add each weight as a double; integer weights
// (W = long long) add it as its 64-bit two's-complement bits into unsigned 64-bit counters, so
// that the sums are the exact int64 sums modulo 2^64 whatever the order of the atomics.
template <class W, class Sink>
__device__ __forceinline__ void count(long long bin, const W* w, unsigned long long i, const BinParams& p, Sink& sink) {
    if constexpr (IsSame<W, long long>::value) {
        if (bin >= 0) sink.add((unsigned long long)bin, (unsigned long long)__ldg(w + i));
    } else if constexpr (!IsVoid<W>::value) {
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
// stalls on the loads (long scoreboard; figures in bench/NOTES.md). It
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

#define NO_HOT_KEY 0xffffffffu
/// A sample counted in no bin (partition and exchange).
#define NO_BIN 0xffffffffu

// The lanes of the warp with this lane's `valid` and, among valid lanes, the same low `key_bits`
// bits of `key`: one ballot per bit, since __match_any_sync measured slower (bench/NOTES.md).
// Every lane of the warp must call this. Used to let one lane of each group
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

// A float32 sample outside [first32, last32] or NaN, under the ignore policy: tallied in line. The
// out-of-line rule near an edge would answer the same, but a call that one lane of a warp makes
// costs every lane (normal samples with sigma 2 over [-4, 4]: 4.6 % outside, so most warps).
template <bool TALLY>
__device__ __forceinline__ unsigned outside32(float x, const BinParams& p, Tally& t) {
    if (TALLY) {
        if (x != x) t.nan++;
        else if (x < p.first32) t.below++;
        else t.above++;
    }
    return NO_BIN;
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
        if (!(x >= p.first32)) {
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
        return min((unsigned)__fsub_rn(floorf(__fmul_rn(x, p.scale32)), grid_first_index(p)), n - 1);
    }
    // The float32 shortcut with 32-bit results; anything else (outside the bins, NaN, near an
    // edge) takes numpy's rule out of line.
    if (MODE == MODE_UNIFORM32_INTERIOR) {
        const float x = (float)v;
        unsigned k;
        if (x >= p.first32 && x <= p.last32) {
            if (interior32_bin(x, p, k)) return k;
        } else if (!p.clamp) {
            return outside32<TALLY>(x, p, t);
        }
        const long long b = resolve(locate_uniform32_near_edge(x, p), p, t);
        return b >= 0 ? (unsigned)b : NO_BIN;
    }
    // The same with the shortcut in float64.
    if (MODE == MODE_UNIFORM32_WIDE) {
        const float x = (float)v;
        unsigned k;
        if (x >= p.first32 && x <= p.last32) {
            if (interior64_bin(x, p, k)) return k;
        } else if (!p.clamp) {
            return outside32<TALLY>(x, p, t);
        }
        const long long b = resolve(locate_uniform32_near_edge(x, p), p, t);
        return b >= 0 ? (unsigned)b : NO_BIN;
    }
#endif
#if SAMPLE_IS_FLOAT && !SAMPLE_IS_F32
    // locate_uniform64_exact with 32-bit results.
    if (MODE == MODE_UNIFORM64_EXACT) {
        const double x = (double)v;
        const unsigned n = (unsigned)p.nbins;
        if (!(x >= p.first64)) {
            if (x != x) {
                if (TALLY) t.nan++;
                return NO_BIN;
            }
            if (TALLY) t.below++;
            return p.clamp ? 0u : NO_BIN;
        }
        if (x > p.last64) {
            if (TALLY) t.above++;
            return p.clamp ? n - 1 : NO_BIN;
        }
        return min((unsigned)__dsub_rn(floor(__dmul_rn(x, p.grid64_inv)), p.grid64_first), n - 1);
    }
#endif
    // locate_lut with 32-bit results.
    if (MODE == MODE_LUT) {
        const unsigned s = __ldg(p.lut + (unsigned)(unsigned short)v);
        if (s < LUT_NAN) return s;
        if (s == LUT_NAN) {
            if (TALLY) t.nan++;
            return NO_BIN;
        }
        if ((int)s == (int)SLOT_BELOW) {
            if (TALLY) t.below++;
            return p.clamp ? 0u : NO_BIN;
        }
        if (TALLY) t.above++;
        return p.clamp ? (unsigned)p.nbins - 1 : NO_BIN;
    }
    const long long b = resolve(locate<MODE>(v, p), p, t);
    return b >= 0 ? (unsigned)b : NO_BIN;
}

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

// `A` where the condition holds, else `B`.
template <bool C, class A, class B>
struct Choose {
    typedef A type;
};
template <class A, class B>
struct Choose<false, A, B> {
    typedef B type;
};

#if SAMPLE_IS_FLOAT && !SAMPLE_IS_HALF
// `grid_slice_loop`'s step with the floor and the slice's offset in one fused multiply-add
// rounded down: r = x * inv + c, with c = 2^23 - (first index + lo) (2^52 in float64), is
// 2^23 + the bin minus the slice's first, rounded down to an integer, wherever that lies in
// [0, 2^23): the binade of r has a spacing of exactly 1 there. So r's bits minus those of 2^23
// are the sample's place in the slice, with no floor, no conversion and no subtraction in
// floating point (floor and the float-to-integer conversion issue on the SM's narrow conversion
// pipe, an eighth of the float32 rate). Elsewhere r is in another binade: below the slice, its
// bits minus 2^23's wrap past every slice's length (r may even be negative: its sign bit then
// does the same); above it, they are at least len. In float64 the high word of r must also be
// 2^52's, since the low word alone repeats from binade to binade. So no range test is needed:
// a sample below the first edge has r below 2^23 (2^52), one above the last edge a place of at
// least n - lo >= len, NaN and the infinities bits far past any slice. The product is not rounded
// before the add, so a tiny negative sample cannot become -0 here. The last edge goes to the last
// bin by a select. Needs c exact in
// the sample type (|c| < 2^24, or 2^53) and a slice within the binade: where not (a grid far
// from 0), false, and the caller takes the plain step.
template <int MODE, bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ bool grid_fma_slice_loop(const sample_t* __restrict__ in, unsigned long long n,
                                                    const BinParams& p, Sink& sink, Tally& t, unsigned lo,
                                                    unsigned len, unsigned block, unsigned blocks) {
    constexpr bool F64 = MODE == MODE_UNIFORM64_EXACT;
    typedef typename Choose<F64, double, float>::type T;
    const long long first_index = F64 ? (long long)p.grid64_first : (long long)grid_first_index(p);
    const long long binade = F64 ? (1ll << 52) : (1ll << 23);
    const long long c = binade - first_index - (long long)lo;
    if (c <= -2 * binade || c >= 2 * binade || (long long)len > binade) return false;
    const T cf = (T)c;
    const T inv = F64 ? (T)p.grid64_inv : (T)p.scale32;
    const T first = F64 ? (T)p.first64 : (T)p.first32;
    const T last = F64 ? (T)p.last64 : (T)p.last32;
    const unsigned last_at = (unsigned)(p.nbins - 1 - lo);
    SideTally side;
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long) {
        const T x = (T)v;
        unsigned local;
        bool binade_ok = true;
        if constexpr (F64) {
            const double r = __fma_rd((double)x, (double)inv, (double)cf);
            local = (unsigned)__double2loint(r);
            binade_ok = __double2hiint(r) == 0x43300000;
        } else {
            local = (unsigned)__float_as_int(__fmaf_rd((float)x, (float)inv, (float)cf)) - 0x4B000000u;
        }
        local = x == last ? last_at : local;
        if (TALLY) side.count(x, first, last);
        if (binade_ok && local < len) sink.add(local, 1u);
    }, block, blocks);
    if (TALLY) side.into(t);
    return true;
}

// `lean_loop`'s step for float bins on a power-of-two grid (modes uniform32x and uniform64x) under
// the ignore policy, without branches on the sample: f = floor(x * inv) - (first index + lo) is the
// sample's bin minus the slice's first, exact for every sample of the bins (integers below 2^24,
// or 2^53 in float64, as `exact_grid` requires), and for every other sample outside [0, len) or
// below `first`: above the last edge the floor lies at or past n - lo, and NaN compares false.
// Below the first edge it lies below the first index too, except where a grid from 0 of a width
// above 1 scales a tiny negative sample to -0, which only the comparison with `first` keeps out.
// The last edge itself, which numpy counts in the last bin, lands on n - 1 - lo (past len in every
// slice but the last). The tallies are counted on the side (`SideTally`). The generic step's branches
// (NaN, below, above, in range) cost the sliced passes about a third of their instructions.
template <int MODE, bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ void grid_slice_loop(const sample_t* __restrict__ in, unsigned long long n,
                                                const BinParams& p, Sink& sink, Tally& t, unsigned lo, unsigned len,
                                                unsigned block, unsigned blocks) {
    if (grid_fma_slice_loop<MODE, TALLY, PREFETCH>(in, n, p, sink, t, lo, len, block, blocks)) return;
    typedef typename Choose<MODE == MODE_UNIFORM64_EXACT, double, float>::type T;
    const T inv = MODE == MODE_UNIFORM64_EXACT ? (T)p.grid64_inv : (T)p.scale32;
    const T first = MODE == MODE_UNIFORM64_EXACT ? (T)p.first64 : (T)p.first32;
    const T last = MODE == MODE_UNIFORM64_EXACT ? (T)p.last64 : (T)p.last32;
    const T first_index = MODE == MODE_UNIFORM64_EXACT ? (T)p.grid64_first : (T)grid_first_index(p);
    const T base = first_index + (T)lo;
    const T lenf = (T)len;
    const T last_at = (T)(p.nbins - 1 - lo);
    SideTally side;
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long) {
        const T x = (T)v;
        T f = floor(x * inv) - base;
        f = x == last ? last_at : f;
        if (TALLY) side.count(x, first, last);
        if (f >= (T)0 && f < lenf && x >= first) sink.add((unsigned)f, 1u);
    }, block, blocks);
    if (TALLY) side.into(t);
}
#endif

#if SAMPLE_IS_F32
// `lean_loop`'s step for mode uniform32w (float32 bins off the grid, numpy's correction needed)
// under the ignore policy: the float64 shortcut (`interior64_bin`), and for a sample inside the
// bins whose fraction lies too near an edge, numpy's correction in line. The host's margin is the
// largest deviation of any float32 edge from its place, which far from 0 is the edges' own
// rounding (at 500000 bins over [-4, 4] about 1.5 % of a bin each side), so a lane of most warps
// needs the correction somewhere among its samples; the out-of-line rule then cost as much again
// as the step (ncu: 80 instructions per sample and slice, 38 % of them in the call). Here the
// correction starts from floor(m), which is within one bin of the sample's (the host bounds m's
// deviation at the edges below 1/16 of a bin, and m rises with x), reads or computes the two
// edges around it and moves at most one bin each way, as numpy's own correction does: the result
// is the bin whose float32 edges bracket the sample, which is numpy's. The tallies are counted on
// the side without branches.
// `wide_slice_loop`'s bin of a float32 sample, numpy's where `inside` [first32, last32] (anything
// for others, which skip the correction).
__device__ __forceinline__ int wide_bin(float x, bool inside, const BinParams& p) {
    const int nb = (int)p.nbins;
    const double m = __dmul_rn(__dsub_rn((double)x, p.interior64_first), p.interior64_scale);
    const double r = __dadd_rd(m, 4503599627370496.0);
    const double frac = __dsub_rn(m, __dsub_rn(r, 4503599627370496.0));
    int k = __double2loint(r);
    if (inside && !(frac > p.interior_lo && frac < p.interior_hi && (unsigned)k < (unsigned)nb)) {
        k = max(0, min(k, nb - 1));
        if (k > 0 && x < numpy_edge32(k, p)) k -= 1;
        else if (k < nb - 1 && x >= numpy_edge32(k + 1, p)) k += 1;
    }
    return k;
}

template <bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ void wide_slice_loop(const sample_t* __restrict__ in, unsigned long long n,
                                                const BinParams& p, Sink& sink, Tally& t, unsigned lo, unsigned len,
                                                unsigned block, unsigned blocks) {
    SideTally side;
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long) {
        const float x = (float)v;
        const bool inside = x >= p.first32 && x <= p.last32;
        if (TALLY) side.count(x, p.first32, p.last32);
        const unsigned local = (unsigned)wide_bin(x, inside, p) - lo;
        if (inside && local < len) sink.add(local, 1u);
    }, block, blocks);
    if (TALLY) side.into(t);
}

// `wide_slice_loop` with the samples of the slice compacted first. Its step costs about 60
// instructions per sample and slice, and every lane pays it for every sample, since some lane of
// a warp nearly always has a sample in the slice. Here each sample takes only a cheap test against
// the slice's outer float32 edges (`near`: every sample of the slice's bins, and a few beside
// them, which the full step then leaves out); the warp pushes its near samples into its ring in
// shared memory (one ballot) and bins them 32 at a time, every lane busy. With k slices a sample
// is near about one slice in k, so the full step runs about once per sample instead of k times.
// The ring is `ring` (this warp's WIDE_RING_SLOTS floats); the loads are `grid_walk`'s, but its
// trips are cut where the warp's last lane runs out, so that the ballots see every lane; the
// samples after that take the full step one by one, and the ring's rest is binned at the end.
// Tallies are kept by the first slice only (`lo` 0).
template <bool TALLY, class Sink>
__device__ __forceinline__ void wide_ring_loop(const sample_t* __restrict__ in, unsigned long long n,
                                               const BinParams& p, Sink& sink, Tally& t, unsigned lo, unsigned len,
                                               unsigned block, unsigned blocks, float* ring) {
    const float near_lo = numpy_edge32((int)lo, p), near_hi = numpy_edge32((int)(lo + len), p);
    const bool tally = TALLY && lo == 0;
    const unsigned lane = threadIdx.x & 31;
    const unsigned lower = (1u << lane) - 1u;
    unsigned held = 0;
    SideTally side;
    auto bin_it = [&](float x) {
        const bool inside = x >= p.first32 && x <= p.last32;
        const unsigned local = (unsigned)wide_bin(x, inside, p) - lo;
        if (inside && local < len) sink.add(local, 1u);
    };
    auto push = [&](float x) {
        if (tally) side.count(x, p.first32, p.last32);
        const bool near = x >= near_lo && x <= near_hi;
        const unsigned votes = __ballot_sync(0xffffffffu, near);
        if (near) ring[held + __popc(votes & lower)] = x;
        held += __popc(votes);
        if (held >= 32) {
            __syncwarp();
            held -= 32;
            const float y = ring[held + lane];
            __syncwarp();
            bin_it(y);
        }
    };
    auto alone = [&](float x) {
        if (tally) side.count(x, p.first32, p.last32);
        if (x >= near_lo && x <= near_hi) bin_it(x);
    };
    const unsigned long long nvec = n / 4;
    const unsigned long long stride = (unsigned long long)blocks * blockDim.x;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    unsigned long long i = (unsigned long long)block * blockDim.x + threadIdx.x;
    // The warp's last lane reads vector i + last_lane.
    const unsigned long long last_lane = 31 - lane;
    if (i + last_lane + stride < nvec) {
        float4 a = __ldg(in4 + i), b = __ldg(in4 + i + stride);
        for (;;) {
            const unsigned long long next = i + 2 * stride;
            const bool more = next + last_lane + stride < nvec;
            float4 na, nb;
            if (more) {
                na = __ldg(in4 + next);
                nb = __ldg(in4 + next + stride);
            }
            sink.step();
            push(a.x), push(a.y), push(a.z), push(a.w);
            push(b.x), push(b.y), push(b.z), push(b.w);
            i = next;
            if (!more) break;
            a = na, b = nb;
        }
    }
    for (; i < nvec; i += stride) {
        const float4 a = __ldg(in4 + i);
        alone(a.x), alone(a.y), alone(a.z), alone(a.w);
    }
    for (unsigned long long j = nvec * 4 + (unsigned long long)block * blockDim.x + threadIdx.x; j < n; j += stride)
        alone((float)in[j]);
    __syncwarp();
    if (lane < held) bin_it(ring[lane]);
    if (tally) side.into(t);
}
#endif

#if SAMPLE_IS_FLOAT && !SAMPLE_IS_HALF
// `lean_loop`'s step for mode uniform64 (float64 bins off the grid) with the multiply estimate
// under the ignore policy: `locate_uniform64`'s rule for a sample inside the bins, the estimate's
// floor taken by an add rounding down (m >= 0 there, so it is the truncation numpy takes), its
// fraction tested against the host's interior bounds, and numpy's correction in line where the
// fraction is too near an edge; samples outside the bins tallied on the side. The generic step
// (64-bit slot codes, `resolve`, a branch per case) cost about 80 instructions per sample and
// slice (ncu, bench/NOTES.md "Session 18").
template <bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ void uniform64_slice_loop(const sample_t* __restrict__ in, unsigned long long n,
                                                     const BinParams& p, Sink& sink, Tally& t, unsigned lo,
                                                     unsigned len, unsigned block, unsigned blocks) {
    SideTally side;
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long) {
        const double x = (double)v;
        const double m = __dmul_rn(__dsub_rn(x, p.first64), p.scale64);
        const double r = __dadd_rd(m, 4503599627370496.0);
        const double frac = __dsub_rn(m, __dsub_rn(r, 4503599627370496.0));
        long long k = (long long)(unsigned)__double2loint(r);
        const bool inside = x >= p.first64 && x <= p.last64;
        if (TALLY) side.count(x, p.first64, p.last64);
        if (inside && !(frac > p.interior_lo && frac < p.interior_hi && k < (long long)p.nbins))
            k = correct(k, p.nbins, x, [&](unsigned long long i) { return edge64(i, p); });
        const unsigned local = (unsigned)k - lo;
        if (inside && local < len) sink.add(local, 1u);
    }, block, blocks);
    if (TALLY) side.into(t);
}
#endif

// Whether `lean_loop` takes `uniform64_slice_loop` for mode uniform64: float samples, the multiply
// estimate, the ignore policy. The shared kernels count only then with the lean step: elsewhere
// its generic step is no cheaper than `process`'s. The generic step's ~80 instructions per sample
// made float64 samples at 1000 bins instruction-bound (bench/NOTES.md "Session 30").
__device__ __forceinline__ bool lean_uniform64(const BinParams& p) {
#if SAMPLE_IS_FLOAT && !SAMPLE_IS_HALF
    return !p.clamp && p.multiply == 1;
#else
    return false;
#endif
}

// `grid_walk` (two 16-byte loads per lane, the next two in flight) with the
// lean per-sample step of the sliced kernels: the 32-bit bin of `slice_bin`, one subtraction and
// one compare for the slice test, and the packed add; only the first slice's blocks keep tallies.
// The generic step (64-bit slot codes, `resolve`, the aggregation branch) costs more
// instructions per sample read, which every sample pays whether in the slice or not.
template <int MODE, bool TALLY, bool PREFETCH, class Sink>
__device__ __forceinline__ void lean_loop(const sample_t* __restrict__ in, unsigned long long n, const BinParams& p,
                                          Sink& sink, Tally& t, unsigned lo, unsigned len, unsigned block,
                                          unsigned blocks, float* ring = nullptr) {
#if SAMPLE_IS_FLOAT && !SAMPLE_IS_HALF
    if constexpr (MODE == MODE_UNIFORM32_EXACT || MODE == MODE_UNIFORM64_EXACT) {
        if (!p.clamp) {
            grid_slice_loop<MODE, TALLY, PREFETCH>(in, n, p, sink, t, lo, len, block, blocks);
            return;
        }
    }
#endif
#if SAMPLE_IS_FLOAT && !SAMPLE_IS_HALF
    if constexpr (MODE == MODE_UNIFORM64) {
        if (!p.clamp && p.multiply == 1) {
            uniform64_slice_loop<TALLY, PREFETCH>(in, n, p, sink, t, lo, len, block, blocks);
            return;
        }
    }
#endif
#if SAMPLE_IS_F32
    if constexpr (MODE == MODE_UNIFORM32_WIDE) {
        if (!p.clamp && ring) {
            wide_ring_loop<TALLY>(in, n, p, sink, t, lo, len, block, blocks, ring);
            return;
        }
        if (!p.clamp) {
            wide_slice_loop<TALLY, PREFETCH>(in, n, p, sink, t, lo, len, block, blocks);
            return;
        }
    }
#endif
    grid_walk<PREFETCH>(in, n, sink, [&](sample_t v, unsigned long long) {
        const unsigned local = slice_bin<MODE, TALLY>(v, p, t) - lo;
        if (local < len) sink.add(local, 1u);
    }, block, blocks);
}
