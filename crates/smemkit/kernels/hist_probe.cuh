// ---- Skew verdict --------------------------------------------------------------------------------
// Before the partition or sliced passes, `auto` looks at `probes` (at most VERDICT_SLOTS / 2)
// samples spread evenly over the input, counts their bins (under the policy; a sample counted in no
// bin counts for none) in a shared-memory hash table, and writes verdict[0] = 1 where the
// commonest bin holds at least `threshold` of the probed samples (the global kernel, whose
// per-block hot bin absorbs it, then runs: see `hot_share_for_global` in
// crates/smemkit/src/histogram/plan/skew.rs), else 0; verdict[1] = that bin's count, for reports.
// Before the sliced passes (`slice_bins` > 0, the bins of one slice) the verdict is `crowded`
// otherwise where the busiest slice holds at least `slice_threshold` of the probed samples: that
// slice's blocks count most of the input while the others idle, and narrow counters wrap; 1 sends
// the run to global, 2 to the crowded-slice alternative (`crowded_slice_share` in skew.rs). With
// `pair_threshold` > 0 the data count as crowded also where at least that many pairs of probed
// samples share a bin (data piled on many bins, none hot: their narrow counters wrap in every
// block; `crowded_probe_pairs` in skew.rs).
// With `spill_len` > 0 (cheap bins in slices: each slice a pass over the input) the verdict is 3
// where no bin is hot and the best window of `spill_len` bins (hist_spill.cuh's placement over
// these probes) holds at least `spill_threshold` of them: the spill plan then counts in one pass
// and sends the rest to global atomics (`spill_share_for_sliced` in skew.rs).
// One block.
#define VERDICT_SLOTS 4096
#define VERDICT_MAX_SLICES 16
template <int MODE>
__device__ void skew_verdict(const sample_t* __restrict__ in, unsigned long long n, BinParams p, unsigned probes,
                             double threshold, unsigned slice_bins, double slice_threshold,
                             unsigned crowded, unsigned pair_threshold, unsigned spill_len,
                             double spill_threshold, unsigned* __restrict__ verdict) {
    __shared__ unsigned keys[VERDICT_SLOTS];
    __shared__ unsigned counts[VERDICT_SLOTS];
    __shared__ unsigned slice_counts[VERDICT_MAX_SLICES];
    __shared__ unsigned best, pairs;
    // The spill window's placement over the same probes (hist_spill.cuh).
    __shared__ unsigned spill_cnt[SPILL_BUCKETS], spill_scan[SPILL_BUCKETS], spill_warps[32];
    __shared__ unsigned spill_best, spill_held;
    const bool spills = spill_len > 0 && spill_len < p.nbins;
    const unsigned spill_width = spill_bucket_width((unsigned)p.nbins);
    for (unsigned i = threadIdx.x; i < SPILL_BUCKETS; i += blockDim.x) spill_cnt[i] = 0;
    for (unsigned i = threadIdx.x; i < VERDICT_SLOTS; i += blockDim.x) {
        keys[i] = NO_BIN;
        counts[i] = 0;
    }
    if (threadIdx.x < VERDICT_MAX_SLICES) slice_counts[threadIdx.x] = 0;
    if (threadIdx.x == 0) best = pairs = 0;
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
        if (slice_bins > 0) atomicAdd(slice_counts + min(key / slice_bins, VERDICT_MAX_SLICES - 1u), 1u);
        if (spills) atomicAdd(spill_cnt + key / spill_width, 1u);
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
    // The commonest bin's count, and the pairs of probes that share a bin (at most 2048 * 2047 / 2).
    unsigned m = 0, same = 0;
    for (unsigned i = threadIdx.x; i < VERDICT_SLOTS; i += blockDim.x) {
        m = max(m, counts[i]);
        same += counts[i] * (counts[i] - (counts[i] > 0 ? 1u : 0u)) / 2;
    }
    for (int off = 16; off > 0; off >>= 1) {
        m = max(m, __shfl_down_sync(0xffffffffu, m, off));
        same += __shfl_down_sync(0xffffffffu, same, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(&best, m);
        atomicAdd(&pairs, same);
    }
    __syncthreads();
    if (spills) spill_best_window((unsigned)p.nbins, spill_len, spill_cnt, spill_scan, spill_warps, &spill_best, &spill_held);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned busiest = 0;
        for (unsigned i = 0; i < VERDICT_MAX_SLICES; i++) busiest = max(busiest, slice_counts[i]);
        const bool is_crowded = slice_bins > 0 && ((double)busiest / (double)probes >= slice_threshold ||
                                                   (pair_threshold > 0 && pairs >= pair_threshold));
        const bool window_holds = spills && (double)spill_held / (double)probes >= spill_threshold;
        verdict[0] = (double)best / (double)probes >= threshold ? 1u
                     : window_holds                            ? 3u
                     : is_crowded                              ? crowded
                                                               : 0u;
        verdict[1] = best;
    }
}
