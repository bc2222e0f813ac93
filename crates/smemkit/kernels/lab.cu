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
