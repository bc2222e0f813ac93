// The bank-conflict lab: every warp reads shared memory with a fixed stride between its lanes, many
// times over, so the time per read shows how many bank cycles each warp-wide access needs. With 32
// banks of 4-byte words, lanes at a stride of s words fall into 32 / gcd(s, 32) distinct banks: a
// gcd(s, 32)-way conflict.

#define WORDS 1024

extern "C" __global__ void bank_probe(unsigned* out, unsigned stride, unsigned iters) {
    __shared__ unsigned s[WORDS];
    for (unsigned i = threadIdx.x; i < WORDS; i += blockDim.x) s[i] = i * 2654435761u;
    __syncthreads();
    // volatile: each read must really go to shared memory, not to a register copy of the last one.
    volatile unsigned* vs = s;
    unsigned lane = threadIdx.x & 31;
    unsigned idx = (lane * stride) % WORDS;
    unsigned acc = 0;
    for (unsigned it = 0; it < iters; it++) acc += vs[idx];
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The cache lab's atomics: counting values (each already in [0, nbins)) into nbins counters, once
// with a block-private copy of the counters in shared memory (atomics in the SM, flushed to global
// memory once per block), once with every increment a global atomic (performed in L2: global
// atomics are not done in L1). Values at or above nbins are skipped.
extern "C" __global__ void atomic_shared(const unsigned* __restrict__ in, unsigned long long n,
                                         unsigned* __restrict__ bins, unsigned nbins) {
    extern __shared__ unsigned counts[];
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x) counts[b] = 0;
    __syncthreads();
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned v = in[i];
        if (v < nbins) atomicAdd(&counts[v], 1u);
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < nbins; b += blockDim.x)
        if (counts[b]) atomicAdd(&bins[b], counts[b]);
}

extern "C" __global__ void atomic_global(const unsigned* __restrict__ in, unsigned long long n,
                                         unsigned* __restrict__ bins, unsigned nbins) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned v = in[i];
        if (v < nbins) atomicAdd(&bins[v], 1u);
    }
}
