// ml_dtypes' sums of bfloat16 values on the device (included by estimate.cu for SAMPLE_KIND 5).
//
// numpy reduces a bfloat16 array by calling ml_dtypes' add loop with the running total as one
// operand, so the total is rounded to bfloat16 after every value: t0, then rbf(total + t1), then
// rbf(total + t2), ... A chain of roundings has no tree to split into parallel parts, but often most
// of its steps change nothing: once the total is large beside a value, total + value rounds back to
// the total. Values within the total's slack (half the bfloat16 gap on their side of it,
// less float32's rounding of the sum) are such steps, and skipping them gives the
// same total bit for bit. So:
//
// - est_chain_maxima (a parallel pass): the smallest and largest summed value in each chunk of
//   CHAIN_CHUNK values, and in each super-chunk of CHAIN_SUPER chunks (NaN counts as both
//   infinities: it changes every total);
// - est_chain_walk (one warp): walks the chain in order, skipping every super-chunk and chunk
//   whose values all lie within the slack of the total it has reached (the slack taken
//   again after every chunk, so a total that shrinks looks at values it would have skipped), and
//   adding every value of the other chunks one after another with the device's bfloat16 add.
//
// Its cost is the parallel pass plus the chunks that may move the total. Sums of values of one
// sign (squares) soon outgrow them and stall: a handful of chunks per million values. Sums of
// mean-zero values do not: ml_dtypes' total wanders near a hundred times the values' scale and
// moves at about 40 % of the steps, so every chunk is walked, an addition's latency a value
// (~1 s per sum at 2^28 samples). (Scanning a walked chunk as runs of steps inside one binade,
// where the steps are integer shifts, is exact but no faster on one warp: bench/NOTES.md,
// session 28.)

#define CHAIN_CHUNK 256
#define CHAIN_SUPER 32
#define CHAIN_LANE (CHAIN_CHUNK / 32)
// How many chunks ahead of the walk its samples are prefetched into L2.
#define CHAIN_PREFETCH 8

// The value summed for sample v: the sample (0), its squared deviation from p1 (1) or its
// deviation divided by p2, cubed (2), each as term<> computes it.
__device__ __forceinline__ float chain_term(int which, sample_t v, float p1, float p2) {
    if (which == 0) return term<0>(v, p1, p2);
    if (which == 1) return term<1>(v, p1, p2);
    return term<2>(v, p1, p2);
}

// A chunk's (or super-chunk's) values as the skips see them: the smallest in x, the largest in
// y. NaN makes them -inf and inf (it changes every total).
__device__ __forceinline__ float2 chain_extend(float2 e, float t) {
    if (t != t) return make_float2(-__int_as_float(0x7f800000), __int_as_float(0x7f800000));
    return make_float2(fminf(e.x, t), fmaxf(e.y, t));
}
__device__ __forceinline__ float2 chain_join(float2 a, float2 b) {
    return make_float2(fminf(a.x, b.x), fmaxf(a.y, b.y));
}

// The slack of total s (a bfloat16 value): every t of magnitude below x (t of the sign of s, which
// moves it away from zero) or below y (the other sign) leaves rbf(s + t) == s. For |s| in
// [2^E, 2^(E+1)) the bfloat16 gap away from zero is 2^(E-7), the one toward zero the same or, at
// |s| = 2^E, half of it; s + t stays strictly inside half that gap, and float32's rounding of the
// sum (at most 2^-17 of the gap) cannot carry it to the midpoint when |t| is below the half gap
// less 2^-14 of it. (A total that climbed to a power of two stalls there against values of its
// own sign up to half the wider gap.) Infinite or NaN totals absorb every finite value (s + inf
// is still added: it is not below infinity); tiny totals (below 2^-117) take every value.
__device__ __forceinline__ float2 chain_slack(float s) {
    const unsigned u = __float_as_uint(s) & 0x7fffffffu;
    const float inf = __int_as_float(0x7f800000);
    if (u >= 0x7f800000u) return make_float2(inf, inf);
    const unsigned e = u >> 23;
    if (e < 10) return make_float2(0.0f, 0.0f);
    const float away = __fmul_rn(__uint_as_float((e - 8) << 23), 0.99993896484375f);
    const float toward =
        (u & 0x7fffffu) == 0 ? __fmul_rn(__uint_as_float((e - 9) << 23), 0.99993896484375f) : away;
    return s > 0.0f ? make_float2(away, toward) : make_float2(toward, away);
}

// Whether values spanning ext (smallest, largest) can move total s (`valid`: ext is a real chunk).
__device__ __forceinline__ bool chain_moves(bool valid, float2 ext, float s) {
    const float2 slack = chain_slack(s);
    return valid && !(ext.y < slack.x && ext.x > -slack.y);
}

// The smallest and largest value in each chunk (chunk_ext) and super-chunk (super_ext) of the m
// samples' values: one warp per super-chunk, the grid striding over them.
extern "C" __global__ void __launch_bounds__(256) est_chain_maxima(const sample_t* __restrict__ in, u64 m,
                                                                   int which, float p1, float p2,
                                                                   float2* __restrict__ chunk_ext,
                                                                   float2* __restrict__ super_ext) {
    const unsigned lane = threadIdx.x & 31;
    const u64 chunks = (m + CHAIN_CHUNK - 1) / CHAIN_CHUNK;
    const u64 supers = (chunks + CHAIN_SUPER - 1) / CHAIN_SUPER;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    const float inf = __int_as_float(0x7f800000);
    for (u64 sp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; sp < supers; sp += warps) {
        float2 mine = make_float2(inf, -inf);  // lane k: chunk k's
        for (unsigned k = 0; k < CHAIN_SUPER; ++k) {
            const u64 base = (sp * CHAIN_SUPER + k) * CHAIN_CHUNK;
            if (base >= m) break;
            sample_t v[CHAIN_LANE];
#pragma unroll
            for (unsigned j = 0; j < CHAIN_LANE; ++j) {
                const u64 i = base + j * 32 + lane;
                if (i < m) v[j] = in[i];
            }
            float2 e = make_float2(inf, -inf);
#pragma unroll
            for (unsigned j = 0; j < CHAIN_LANE; ++j) {
                const u64 i = base + j * 32 + lane;
                if (i < m) e = chain_extend(e, chain_term(which, v[j], p1, p2));
            }
            for (int o = 16; o > 0; o >>= 1)
                e = chain_join(e, make_float2(__shfl_xor_sync(FULL, e.x, o), __shfl_xor_sync(FULL, e.y, o)));
            if (lane == k) mine = e;
        }
        const u64 c = sp * CHAIN_SUPER + lane;
        if (c < chunks) chunk_ext[c] = mine;
        float2 all = mine;
        for (int o = 16; o > 0; o >>= 1)
            all = chain_join(all, make_float2(__shfl_xor_sync(FULL, all.x, o), __shfl_xor_sync(FULL, all.y, o)));
        if (lane == 0) super_ext[sp] = all;
    }
}

// The bfloat16 sum of bfloat16 values a and b, correctly rounded (one rounding of the exact sum):
// the same as ml_dtypes' float32 sum rounded to bfloat16, float32 holding more than twice
// bfloat16's precision plus two bits (so its rounding first never moves the second).
__device__ __forceinline__ unsigned short bf_add(unsigned short a, unsigned short b) {
    unsigned short d;
    asm("add.rn.bf16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
    return d;
}

// A chunk's samples as the lanes load them: lane l holds samples CHAIN_LANE * l .. + 7.
struct chain_samples {
    sample_t v[CHAIN_LANE];
    u64 chunk;  // which chunk they are (~0: none)
};

__device__ __forceinline__ void chain_load(const sample_t* __restrict__ in, u64 m, u64 c, chain_samples& x) {
    const u64 first = c * CHAIN_CHUNK + (u64)(threadIdx.x & 31) * CHAIN_LANE;
#pragma unroll
    for (unsigned j = 0; j < CHAIN_LANE; ++j) x.v[j] = first + j < m ? in[first + j] : (sample_t)0;
    x.chunk = c;
}

// Sample j of this lane in x as the chain adds it: its term's bfloat16 bits (a term is a bfloat16
// value held in a float: its top 16 bits), 0 past the end.
template <int WHICH>
__device__ __forceinline__ unsigned short chain_bits(const chain_samples& x, unsigned j, u64 m, float p1, float p2) {
    const u64 i = x.chunk * CHAIN_CHUNK + (u64)(threadIdx.x & 31) * CHAIN_LANE + j;
    return i < m ? (unsigned short)(__float_as_uint(term<WHICH>(x.v[j], p1, p2)) >> 16) : 0;
}

// Adds chunk c's values to the total (bfloat16 bits) in order, every one from sample 1 on
// (sample 0 started the total): the values go through shared memory as bfloat16 bits (two
// buffers, chunk c in buffer c & 1) and every lane adds them one after another. The adds are one
// dependent chain with room between its links, so a full chunk's adds also write the next
// chunk's bits into the other buffer (`staged` names the chunk whose bits are ready): a walk that
// goes on there (a total that keeps moving) finds them and waits on nothing but its additions.
// The samples two chunks on load meanwhile into `ahead`.
template <int WHICH>
__device__ __forceinline__ unsigned short chain_chunk(const sample_t* __restrict__ in, u64 m, float p1, float p2,
                                                      u64 c, unsigned short total, chain_samples& ahead,
                                                      u64& staged, unsigned short* vals) {
    const unsigned lane = threadIdx.x & 31;
    const u64 chunks = (m + CHAIN_CHUNK - 1) / CHAIN_CHUNK;
    unsigned short* cur = vals + (c & 1) * CHAIN_CHUNK;
    unsigned short* nxt = vals + ((c + 1) & 1) * CHAIN_CHUNK;
    if (staged != c) {
        chain_samples x = ahead;
        if (x.chunk != c) chain_load(in, m, c, x);
#pragma unroll
        for (unsigned j = 0; j < CHAIN_LANE; ++j) cur[lane * CHAIN_LANE + j] = chain_bits<WHICH>(x, j, m, p1, p2);
        __syncwarp();
    }
    const bool more = c + 1 < chunks;
    chain_samples x = ahead;  // chunk c + 1's samples, loaded a chunk ago when the walk went on
    if (more && x.chunk != c + 1) chain_load(in, m, c + 1, x);
    if (c + 2 < chunks) chain_load(in, m, c + 2, ahead);
    // A walk that goes from chunk to chunk outruns these loads from DRAM: the chunks further on
    // are asked into L2 now, so that `ahead`'s loads find them there.
    if (c + CHAIN_PREFETCH < chunks) {
        const sample_t* far = in + (c + CHAIN_PREFETCH) * CHAIN_CHUNK + (u64)lane * CHAIN_LANE;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(far));
    }
    const u64 base = c * CHAIN_CHUNK;
    const unsigned from = base == 0 ? 1 : 0;
    const unsigned to = m - base < CHAIN_CHUNK ? (unsigned)(m - base) : CHAIN_CHUNK;
    if (from == 0 && to == CHAIN_CHUNK) {
        const uint4* w = reinterpret_cast<const uint4*>(cur);
#pragma unroll
        for (unsigned k = 0; k < CHAIN_CHUNK / 8; ++k) {
            const uint4 q = w[k];
            const unsigned words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (unsigned h = 0; h < 4; ++h) {
                total = bf_add(total, (unsigned short)(words[h] & 0xffffu));
                total = bf_add(total, (unsigned short)(words[h] >> 16));
            }
            // The next chunk's bits, in the last quarter of the chain (its samples, when just
            // asked for, have had three quarters of it to arrive).
            const unsigned j = k - (CHAIN_CHUNK / 8 - CHAIN_LANE);
            if (k >= CHAIN_CHUNK / 8 - CHAIN_LANE && more)
                nxt[lane * CHAIN_LANE + j] = chain_bits<WHICH>(x, j, m, p1, p2);
        }
    } else {
        for (unsigned j = from; j < to; ++j) total = bf_add(total, cur[j]);
        if (more) {
#pragma unroll
            for (unsigned j = 0; j < CHAIN_LANE; ++j) nxt[lane * CHAIN_LANE + j] = chain_bits<WHICH>(x, j, m, p1, p2);
        }
    }
    __syncwarp();
    staged = more ? c + 1 : ~0ull;
    return total;
}

// ml_dtypes' sum of the m samples' values (m >= 1), as est_chain_walk's one warp walks it.
template <int WHICH>
__device__ __forceinline__ float chain_walk(const sample_t* __restrict__ in, u64 m, float p1, float p2,
                                            const float2* __restrict__ chunk_ext,
                                            const float2* __restrict__ super_ext, unsigned short* vals) {
    const unsigned lane = threadIdx.x & 31;
    const u64 chunks = (m + CHAIN_CHUNK - 1) / CHAIN_CHUNK;
    const u64 supers = (chunks + CHAIN_SUPER - 1) / CHAIN_SUPER;
    unsigned short total = (unsigned short)(__float_as_uint(term<WHICH>(in[0], p1, p2)) >> 16);
    chain_samples ahead;
    ahead.chunk = ~0ull;
    u64 staged = ~0ull;
    // Absent super-chunks and chunks read -1: below every slack, never walked.
    const float2 none = make_float2(0.0f, 0.0f);
    float2 next = lane < supers ? super_ext[lane] : none;
    for (u64 g = 0; g < supers; g += 32) {
        const float2 sx = next;
        const bool s_valid = g + lane < supers;
        // The next 32 super-chunks' maxima load while these are walked.
        next = g + 32 + lane < supers ? super_ext[g + 32 + lane] : none;
        unsigned left = FULL;
        for (;;) {
            const unsigned hit = __ballot_sync(FULL, chain_moves(s_valid, sx, b2f(total))) & left;
            if (!hit) break;
            const unsigned k = __ffs(hit) - 1;
            const u64 c0 = (g + k) * CHAIN_SUPER;
            const bool c_valid = c0 + lane < chunks;
            const float2 cx = c_valid ? chunk_ext[c0 + lane] : none;
            unsigned chunks_left = FULL;
            for (;;) {
                const unsigned chit = __ballot_sync(FULL, chain_moves(c_valid, cx, b2f(total))) & chunks_left;
                if (!chit) break;
                const unsigned q = __ffs(chit) - 1;
                total = chain_chunk<WHICH>(in, m, p1, p2, c0 + q, total, ahead, staged, vals);
                chunks_left = q == 31 ? 0u : (FULL << (q + 1));
            }
            left = k == 31 ? 0u : (FULL << (k + 1));
        }
    }
    return b2f(total);
}

// ml_dtypes' sum of the m samples' values (m >= 1) into *out: one warp (launch one block of 32).
extern "C" __global__ void __launch_bounds__(32) est_chain_walk(const sample_t* __restrict__ in, u64 m, int which,
                                                                float p1, float p2,
                                                                const float2* __restrict__ chunk_ext,
                                                                const float2* __restrict__ super_ext,
                                                                float* __restrict__ out) {
    __shared__ __align__(16) unsigned short vals[2 * CHAIN_CHUNK];
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    const float total = which == 0   ? chain_walk<0>(in, m, p1, p2, chunk_ext, super_ext, vals)
                        : which == 1 ? chain_walk<1>(in, m, p1, p2, chunk_ext, super_ext, vals)
                                     : chain_walk<2>(in, m, p1, p2, chunk_ext, super_ext, vals);
    if (threadIdx.x == 0) *out = total;
}
