// ---- small: the whole histogram of a small input in one launch ---------------------------------
//
// Below a few thousand samples a call's cost is its launches, not its counting: clearing the
// output (a memset), copying the edges numpy returns (a memcpy) and the histogram kernel are three
// enqueues of a few microseconds each on the host. This kernel does all three: block b owns the
// bins [b * slice_bins, (b + 1) * slice_bins) in shared memory, reads the whole input (small, and
// from L2 after the first block), counts the samples of its slice, and stores every one of its
// bins, zeros included, so the output needs no clearing; its share of the edges' 32-bit words is
// copied from `edges_src` (the edges the host resolved, bit for bit) on the way. It writes no
// tallies: the callers that read them take the other kernels. Warps combine equal bins before the
// shared atomic, so an input of one value does not serialise on one counter.
template <int MODE>
__device__ void small_kernel(const sample_t* in, unsigned long long n, BinParams p, unsigned slice_bins,
                             unsigned long long* out, const unsigned* edges_src, unsigned* edges_dst,
                             unsigned edge_words) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned* h = reinterpret_cast<unsigned*>(smem_raw);
    const unsigned lo = blockIdx.x * slice_bins;
    const unsigned len = (unsigned)min((unsigned long long)slice_bins, p.nbins - lo);
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) h[b] = 0u;
    const unsigned per = (edge_words + gridDim.x - 1) / gridDim.x;
    const unsigned e_end = min(edge_words, (blockIdx.x + 1) * per);
    for (unsigned k = blockIdx.x * per + threadIdx.x; k < e_end; k += blockDim.x) edges_dst[k] = __ldg(edges_src + k);
    __syncthreads();
    SharedSink<unsigned> sink{h};
    Tally t{0, 0, 0};
    grid_walk<false>(in, n, sink, [&](sample_t v, unsigned long long) {
        const unsigned local = slice_bin<MODE, false>(v, p, t) - lo;
        const bool mine = local < len;
        const unsigned peers = __match_any_sync(__activemask(), mine ? local : 0xffffffffu);
        if (mine && (int)(threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(h + local, (unsigned)__popc(peers));
    }, 0u, 1u);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < len; b += blockDim.x) out[lo + b] = (unsigned long long)h[b];
}
