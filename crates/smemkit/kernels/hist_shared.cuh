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
    // Unaggregated u32 counts of integer bins take the lean step (see `lean_loop`), and so do float
    // samples in float64 bins where its branch-free step applies (`lean_uniform64`).
    constexpr bool LEAN = IsVoid<W>::value && IsSame<C, unsigned int>::value &&
                          (MODE == MODE_INTEGER || MODE == MODE_LUT || MODE == MODE_UNIFORM32_INTERIOR ||
                           MODE == MODE_UNIFORM32_WIDE || MODE == MODE_UNIFORM64_EXACT);
    constexpr bool LEAN64 = IsVoid<W>::value && IsSame<C, unsigned int>::value && MODE == MODE_UNIFORM64;
    if ((LEAN || (LEAN64 && lean_uniform64(p))) && !p.aggregate)
        lean_loop<MODE, true, PREFETCH>(in, n, p, sink, t, 0u, (unsigned)p.nbins, blockIdx.x, gridDim.x);
    else
        process<MODE, W, SharedSink<C>, PREFETCH>(in, n, w, p, sink, t, blockIdx.x, gridDim.x);
    __syncthreads();
    flush_counters(h, p.nbins, out);
    flush_tally(t, tallies);
}
