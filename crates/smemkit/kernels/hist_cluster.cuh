// ---- cluster: the bins split across the blocks of a cluster ----------------------------------

// The thread block cluster through the compiler's builtins: what cooperative_groups' cluster_group
// calls, without its headers (which cost NVRTC about a second per compilation).
struct Cluster {
    // Every thread of every block of the cluster arrives (release) and waits (acquire).
    __device__ __forceinline__ static void sync() {
        __cluster_barrier_arrive();
        __cluster_barrier_wait();
    }
    // `addr` in this block's shared memory, as the same variable in block `rank`'s.
    template <class T>
    __device__ __forceinline__ static T* map_shared_rank(T* addr, int rank) {
        return static_cast<T*>(__cluster_map_shared_rank(addr, rank));
    }
    __device__ __forceinline__ static unsigned block_rank() { return __clusterRelativeBlockRank(); }
    __device__ __forceinline__ static unsigned num_blocks() { return __clusterSizeInBlocks(); }
};

// Like the global kernel (below), each block keeps one hot bin in its own shared memory, so that
// skewed data does not serialise on one remote counter; the block adds it to the owner at the end.
template <class C>
struct ClusterSink {
    C* h;
    Cluster cluster;
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
        if constexpr (IsSame<C, unsigned int>::value) {
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
    Cluster cluster;
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
