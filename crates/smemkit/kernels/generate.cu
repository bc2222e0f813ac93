// Benchmark data drawn on the device: a counter-based generator (splitmix64 of seed and index), so
// every sample is independent of the launch shape and the same seed gives the same data.
//
// Each sample equals 7 % nbins with probability hot / 65536 (chosen at random), else it is uniform
// in [0, nbins): hot = 0 is the uniform workload, 57344 (7 of 8) the skewed one of shared/BENCH.md,
// and other values let the benchmark sweep the skew.

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform integer in [0, nbins) from 64 random bits (multiply-shift: no modulo bias worth noting).
__device__ __forceinline__ unsigned long long draw_bin(unsigned long long r, unsigned long long nbins) {
    return __umul64hi(r, nbins);
}

__device__ __forceinline__ unsigned long long draw(unsigned long long seed, unsigned long long i,
                                                   unsigned long long nbins, unsigned hot) {
    unsigned long long r = splitmix64(seed ^ splitmix64(i));
    if ((r & 0xFFFFull) < hot) return 7ull % nbins;
    return draw_bin(splitmix64(r), nbins);
}

extern "C" __global__ void generate_i32(int* out, unsigned long long n, unsigned long long nbins,
                                        unsigned long long seed, unsigned hot) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        out[i] = (int)draw(seed, i, nbins, hot);
}

extern "C" __global__ void generate_u8(unsigned char* out, unsigned long long n, unsigned long long nbins,
                                       unsigned long long seed, unsigned hot) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        out[i] = (unsigned char)draw(seed, i, nbins, hot);
}

// Floats: the bin's integer value plus a uniform fraction, so uniform float bins over [0, nbins)
// see the same distribution as the integer workloads.
extern "C" __global__ void generate_f32(float* out, unsigned long long n, unsigned long long nbins,
                                        unsigned long long seed, unsigned hot) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long b = draw(seed, i, nbins, hot);
        float frac = (float)(splitmix64(seed + 0x5151ull * i) >> 40) * (1.0f / 16777216.0f);
        float v = (float)b + frac;
        // Rounding can reach the next integer: stay inside the bin's value range.
        out[i] = v < (float)(b + 1) ? v : (float)b;
    }
}
