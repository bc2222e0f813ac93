// numpy's pairwise sums on the device, node by node (included by estimate.cu, after its keys,
// extremes and `term`): a lane's running extremes, one node summed by a group of eight lanes or,
// for aligned float32 samples, by a pair of lanes with 16-byte loads, the walk to a node of
// numpy's tree, and the warp loop over the nodes that the est_sum_* kernels run.

// A lane's running count, extremes and NaN count in the sum passes (what est_extremes finds), in
// 32-bit words for samples of at most 4 bytes, whose keys fit: with 64-bit keys the compares and
// selects made the pass that sums the values bound by the integer pipe rather than by memory.
template <int BYTES>
struct LaneKey {
    typedef u64 type;
};
template <>
struct LaneKey<1> {
    typedef unsigned type;
};
template <>
struct LaneKey<2> {
    typedef unsigned type;
};
template <>
struct LaneKey<4> {
    typedef unsigned type;
};

struct LaneExtremes {
    typedef LaneKey<sizeof(sample_t)>::type key_t;
    unsigned count = 0, nans = 0;
    key_t lo = (key_t)~(key_t)0, hi = 0;

    __device__ __forceinline__ void note(sample_t v) {
        if (is_nan(v)) {
            ++nans;
            return;
        }
        ++count;
        const key_t k = (key_t)key_of(v);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }

    // A lane without samples keeps lo at the type's largest key, no smaller than any real one.
    __device__ __forceinline__ void flush(u64* ext) const {
        flush_extremes((u64)count, (u64)lo, (u64)hi, (u64)nans, ext);
    }
};

// numpy's pairwise_sum of one node of at most 240 values at `a`, by the eight lanes of a group
// (j = 0..7; every lane returns the sum). A node of more than 128 values is split once at
// n2 = size / 2 rounded down to a multiple of 8 into two leaves of at most 128 (so the left leaf
// has whole rows of 8 and the node's tail, if any, is the right leaf's). In each leaf numpy's
// accumulator r[j] adds value j of each row in order: lane j holds it, so a group's load of a row
// is 8 consecutive values and a warp's is four rows of four nodes. Every row of both leaves is
// loaded before the first add (up to NODE_ROWS loads in flight per lane), the chains start from
// -0.0 (x + -0.0 is x for every x, so r[j] starts as numpy's a[j]), and the eight accumulators
// are added as numpy does, ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), by a butterfly over
// j (exact: one addition of two values commutes). The tail is then added in order, and a block of
// fewer than 8 values is summed in order from -0.0 as numpy does. With `track`, lane j notes
// value j of each row (and lane 0 the tail) in the running extremes.
template <int TERM>
__device__ __forceinline__ acc_t group_node(const sample_t* __restrict__ a, u64 size, acc_t p1, acc_t p2,
                                            unsigned j, bool track, LaneExtremes& ext) {
    const unsigned rows = (unsigned)(size >> 3);
    const bool split = size > 128;
    const unsigned left_rows = split ? (unsigned)((size / 2) >> 3) : rows;
    sample_t x[NODE_ROWS];
#pragma unroll
    for (int k = 0; k < NODE_ROWS; ++k)
        if ((unsigned)k < rows) x[k] = a[8 * k + j];
    acc_t left = (acc_t)-0.0, right = (acc_t)-0.0;
#pragma unroll
    for (int k = 0; k < NODE_ROWS; ++k) {
        if ((unsigned)k < rows) {
            const acc_t t = term<TERM>(x[k], p1, p2);
            if ((unsigned)k < left_rows)
                left = add(left, t);
            else
                right = add(right, t);
            if (track) ext.note(x[k]);
        }
    }
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) {
        left = add(left, __shfl_xor_sync(FULL, left, o));
        right = add(right, __shfl_xor_sync(FULL, right, o));
    }
    acc_t s;
    if (rows == 0) {
        s = (acc_t)-0.0;
        for (u64 i = 0; i < size; ++i) s = add(s, term<TERM>(a[i], p1, p2));
        s = add((acc_t)0.0, s);
    } else if (split) {
        for (u64 i = 8 * (u64)rows; i < size; ++i) right = add(right, term<TERM>(a[i], p1, p2));
        s = add(left, right);
    } else {
        for (u64 i = 8 * (u64)rows; i < size; ++i) left = add(left, term<TERM>(a[i], p1, p2));
        s = left;
    }
    if (track && j == 0)
        for (u64 i = 8 * (u64)rows; i < size; ++i) ext.note(a[i]);
    return s;
}

#if SAMPLE_KIND == 0
// Rows of a float32 node a pair of lanes loads before adding any (16 bytes a lane a row).
#define PAIR_CHUNK 8

// group_node's sum of a float32 node by two lanes (h = 0, 1) with 16-byte loads: lane h holds
// numpy's accumulators 4h..4h + 3, so one load per lane a row instead of one per value, and a
// warp sums sixteen nodes at a time. The same additions in the same order: each accumulator adds
// its value of each row of its leaf, lane 0 forms (r0 + r1) + (r2 + r3), lane 1
// (r4 + r5) + (r6 + r7), and their sum is the leaf's; the tail and the short blocks as
// group_node. `a` 16-byte aligned.
template <int TERM>
__device__ __forceinline__ float pair_node(const float* __restrict__ a, u64 size, float p1, float p2, unsigned h,
                                           bool track, LaneExtremes& ext) {
    const unsigned rows = (unsigned)(size >> 3);
    const bool split = size > 128;
    const unsigned left_rows = split ? (unsigned)((size / 2) >> 3) : rows;
    const float4* a4 = reinterpret_cast<const float4*>(a) + h;
    float l0 = -0.0f, l1 = -0.0f, l2 = -0.0f, l3 = -0.0f;
    float r0 = -0.0f, r1 = -0.0f, r2 = -0.0f, r3 = -0.0f;
#pragma unroll
    for (int c = 0; c < NODE_ROWS; c += PAIR_CHUNK) {
        float4 x[PAIR_CHUNK];
#pragma unroll
        for (int k = 0; k < PAIR_CHUNK; ++k)
            if ((unsigned)(c + k) < rows) x[k] = __ldg(a4 + 2 * (c + k));
#pragma unroll
        for (int k = 0; k < PAIR_CHUNK; ++k) {
            if ((unsigned)(c + k) < rows) {
                const float t0 = term<TERM>(x[k].x, p1, p2), t1 = term<TERM>(x[k].y, p1, p2);
                const float t2 = term<TERM>(x[k].z, p1, p2), t3 = term<TERM>(x[k].w, p1, p2);
                if ((unsigned)(c + k) < left_rows) {
                    l0 = add(l0, t0), l1 = add(l1, t1), l2 = add(l2, t2), l3 = add(l3, t3);
                } else {
                    r0 = add(r0, t0), r1 = add(r1, t1), r2 = add(r2, t2), r3 = add(r3, t3);
                }
                if (track) {
                    ext.note(x[k].x);
                    ext.note(x[k].y);
                    ext.note(x[k].z);
                    ext.note(x[k].w);
                }
            }
        }
    }
    float left = add(add(l0, l1), add(l2, l3)), right = add(add(r0, r1), add(r2, r3));
    left = add(left, __shfl_xor_sync(FULL, left, 1));
    right = add(right, __shfl_xor_sync(FULL, right, 1));
    float s;
    if (rows == 0) {
        s = -0.0f;
        for (u64 i = 0; i < size; ++i) s = add(s, term<TERM>(a[i], p1, p2));
        s = add(0.0f, s);
    } else if (split) {
        for (u64 i = 8 * (u64)rows; i < size; ++i) right = add(right, term<TERM>(a[i], p1, p2));
        s = add(left, right);
    } else {
        for (u64 i = 8 * (u64)rows; i < size; ++i) left = add(left, term<TERM>(a[i], p1, p2));
        s = left;
    }
    if (track && h == 0)
        for (u64 i = 8 * (u64)rows; i < size; ++i) ext.note(a[i]);
    return s;
}
#endif

#if SAMPLE_KIND == 4
// Rows of a float16 node a lane loads before adding any (16 bytes a row).
#define HALF_CHUNK 4

// group_node's sum of a float16 node by one lane with 16-byte loads: a row of 8 values is one
// load, and the lane holds numpy's eight accumulators of each leaf, so a warp sums 32 nodes at a
// time with an eighth of group_node's loads (group_node's 2-byte loads left the passes far from
// the memory bound). The same additions in the same order: accumulator j adds value j of each row
// of its leaf from -0.0, the leaf's sum is ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), and
// the tail and the short blocks are added in order as group_node adds them. `a` 16-byte aligned.
template <int TERM>
__device__ __forceinline__ float lane_node(const sample_t* __restrict__ a, u64 size, float p1, float p2, bool track,
                                           LaneExtremes& ext) {
    const unsigned rows = (unsigned)(size >> 3);
    const bool split = size > 128;
    const unsigned left_rows = split ? (unsigned)((size / 2) >> 3) : rows;
    const uint4* a4 = reinterpret_cast<const uint4*>(a);
    float l[8], r[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) l[j] = r[j] = -0.0f;
#pragma unroll
    for (int c = 0; c < NODE_ROWS; c += HALF_CHUNK) {
        uint4 x[HALF_CHUNK];
#pragma unroll
        for (int k = 0; k < HALF_CHUNK; ++k)
            if ((unsigned)(c + k) < rows) x[k] = __ldg(a4 + c + k);
#pragma unroll
        for (int k = 0; k < HALF_CHUNK; ++k) {
            if ((unsigned)(c + k) < rows) {
                const unsigned w[4] = {x[k].x, x[k].y, x[k].z, x[k].w};
                const bool left = (unsigned)(c + k) < left_rows;
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    const sample_t v = (sample_t)(w[j >> 1] >> (16 * (j & 1)));
                    const float t = term<TERM>(v, p1, p2);
                    if (left)
                        l[j] = add(l[j], t);
                    else
                        r[j] = add(r[j], t);
                    if (track) ext.note(v);
                }
            }
        }
    }
    float left = add(add(add(l[0], l[1]), add(l[2], l[3])), add(add(l[4], l[5]), add(l[6], l[7])));
    float right = add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])));
    float s;
    if (rows == 0) {
        s = -0.0f;
        for (u64 i = 0; i < size; ++i) s = add(s, term<TERM>(a[i], p1, p2));
        s = add(0.0f, s);
    } else if (split) {
        for (u64 i = 8 * (u64)rows; i < size; ++i) right = add(right, term<TERM>(a[i], p1, p2));
        s = add(left, right);
    } else {
        for (u64 i = 8 * (u64)rows; i < size; ++i) left = add(left, term<TERM>(a[i], p1, p2));
        s = left;
    }
    if (track)
        for (u64 i = 8 * (u64)rows; i < size; ++i) ext.note(a[i]);
    return s;
}
#endif

// Node `t` (left to right) at `depth` of numpy's tree over m values: its first value and size.
// In 32-bit arithmetic where m fits (the walk runs once per node, and 64-bit shifts, subtractions
// and selects are two instructions each on the integer pipe, which bounds these passes).
template <class I>
__device__ __forceinline__ void node_walk(I m, int depth, I t, I* start, I* size) {
    I s = 0, z = m;
    for (int d = depth - 1; d >= 0; --d) {
        I n2 = z / 2;
        n2 -= n2 % 8;
        if ((t >> d) & 1) {
            s += n2;
            z -= n2;
        } else {
            z = n2;
        }
    }
    *start = s;
    *size = z;
}

__device__ __forceinline__ void node_at(u64 m, int depth, u64 t, u64* start, u64* size) {
    if (m <= 0xffffffffull) {
        unsigned s, z;
        node_walk<unsigned>((unsigned)m, depth, (unsigned)t, &s, &z);
        *start = s;
        *size = z;
    } else {
        node_walk<u64>(m, depth, t, start, size);
    }
}

// Problem p (`problems` of `m` values each, one after the other) at `depth` (every node there of
// at most 240 values, every node above it split): each warp takes four consecutive nodes at a
// time, a group of eight lanes each (the grid strides over the quads), and adds their sums as
// numpy's tree does above them, 2^G at a time with G = min(depth, 2): out[w >> G] is the sum of
// TERM of nodes w..w + 2^G (numbered across the problems), so that the host combines
// problems << (depth - G) values. With `ext` non-null (no range: every sample is kept) the same
// pass adds the samples' extremes to it, as est_extremes does, from the values loaded for the sum.
template <int TERM>
__device__ __forceinline__ void sum_nodes(const sample_t* __restrict__ in, u64 m, u64 problems, int depth,
                                          acc_t p1, acc_t p2, acc_t* __restrict__ out,
                                          u64* __restrict__ ext) {
    const unsigned lane = threadIdx.x & 31, j = lane & 7, group = lane >> 3;
    const u64 nodes = problems << depth;
    const u64 mask = (1ull << depth) - 1;
    const int g = depth < 2 ? depth : 2;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    const bool track = ext != nullptr;
    LaneExtremes lane_ext;
#if SAMPLE_KIND == 0
    // Float32 nodes in pairs of lanes where every node starts 16-byte aligned (node starts are
    // multiples of 8 values within a problem): sixteen nodes a warp, combined as below.
    if (((u64)in & 15) == 0 && (problems == 1 || m % 4 == 0)) {
        const unsigned h = lane & 1, pair = lane >> 1;
        for (u64 q = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; 16 * q < nodes; q += warps) {
            const u64 w = 16 * q + pair;
            u64 start = 0, size = 0;
            if (w < nodes) node_at(m, depth, w & mask, &start, &size);
            const float* a = in + (w >> depth) * m + start;
            float s = pair_node<TERM>(a, size, p1, p2, h, track, lane_ext);
            if (g >= 1) s = add(s, __shfl_xor_sync(FULL, s, 2));
            if (g >= 2) s = add(s, __shfl_xor_sync(FULL, s, 4));
            if (w < nodes && h == 0 && (pair & ((1u << g) - 1)) == 0) out[w >> g] = s;
        }
        if (track) lane_ext.flush(ext);
        return;
    }
#endif
#if SAMPLE_KIND == 4
    // float16 nodes a lane each where every node starts 16-byte aligned: 32 nodes a warp,
    // combined as below.
    if (((u64)in & 15) == 0 && (problems == 1 || m % 8 == 0)) {
        for (u64 q = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; 32 * q < nodes; q += warps) {
            const u64 w = 32 * q + lane;
            u64 start = 0, size = 0;
            if (w < nodes) node_at(m, depth, w & mask, &start, &size);
            const sample_t* a = in + (w >> depth) * m + start;
            float s = lane_node<TERM>(a, size, p1, p2, track, lane_ext);
            if (g >= 1) s = add(s, __shfl_xor_sync(FULL, s, 1));
            if (g >= 2) s = add(s, __shfl_xor_sync(FULL, s, 2));
            if (w < nodes && (lane & ((1u << g) - 1)) == 0) out[w >> g] = s;
        }
        if (track) lane_ext.flush(ext);
        return;
    }
#endif
    for (u64 q = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; 4 * q < nodes; q += warps) {
        const u64 w = 4 * q + group;
        u64 start = 0, size = 0;
        if (w < nodes) node_at(m, depth, w & mask, &start, &size);
        const sample_t* a = in + (w >> depth) * m + start;
        acc_t s = group_node<TERM>(a, size, p1, p2, j, track, lane_ext);
        // Nodes come in aligned pairs and quads of one problem when g is 1 or 2 (2^depth of them
        // per problem), so every group of a combining warp holds a node.
        if (g >= 1) s = add(s, __shfl_xor_sync(FULL, s, 8));
        if (g >= 2) s = add(s, __shfl_xor_sync(FULL, s, 16));
        if (w < nodes && j == 0 && (group & ((1u << g) - 1)) == 0) out[w >> g] = s;
    }
    if (track) lane_ext.flush(ext);
}

