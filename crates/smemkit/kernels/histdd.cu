// Joint histograms (numpy.histogramdd): each sample's bin on every axis is found in registers and
// flattened in C order into one joint bin index, which is then counted like a 1-D bin: in a private
// histogram per block in shared memory when the joint bins fit (histdd_shared), else straight into
// global memory (histdd_global).
//
// numpy.histogramdd's rule on each axis is defined by its edges alone (searchsorted(edges, x,
// 'right') - 1, the last edge counted in the last bin), so the arithmetic estimate here is only a
// hint: it is checked against the edges (one bin either way), and anything else is found by binary
// search. Comparisons are in float64, which is exact for every sample type's conversion that numpy
// itself makes (integers round to float64 as numpy casts them; float32 widens exactly), so the bins
// are the CPU engine's bit for bit whatever the GPU's rounding of the estimate.
//
// Compiled by NVRTC once per sample type: the host passes -DSAMPLE_T=<C type>, -DSAMPLE_IS_FLOAT=0|1.
// Each axis is read through a base pointer and a stride (in elements), so an (N, D) array in C order
// (and interleaved RGB pixels), in Fortran order, or D separate arrays all take the same kernels.

#ifndef SAMPLE_T
#error "SAMPLE_T must be defined by the host"
#endif
typedef SAMPLE_T sample_t;

// Axes one launch takes; mirrors HISTDD_MAX_DIMS in crates/smemkit/src/histogramdd/cuda.rs.
#define HISTDD_MAX_DIMS 8

// Mirrors `KernelAxis` in crates/smemkit/src/histogramdd/cuda.rs field for field.
struct Axis {
    const sample_t* base;      // this axis's coordinate of sample 0
    unsigned long long stride;  // elements from one sample's coordinate to the next's
    const double* edges;        // nbins + 1 edges, increasing (equal neighbours allowed)
    unsigned int nbins;
    int has_estimate;           // 1: first and scale give an index estimate (finite, spread edges)
    double first, scale;
};

// Mirrors `KernelJoint` in crates/smemkit/src/histogramdd/cuda.rs.
struct Joint {
    Axis axis[HISTDD_MAX_DIMS];
    unsigned long long n;      // samples
    unsigned long long nbins;  // joint bins (the product of every axis's)
    int dims;
};

#define JOINT_OUTSIDE (-1LL)
#define JOINT_NAN (-2LL)

// The bin of coordinate x on axis a, or -1 outside it. x is not NaN.
__device__ __forceinline__ long long axis_bin(double x, const Axis& a) {
    const double* e = a.edges;
    const unsigned n = a.nbins;
    if (x < __ldg(e)) return -1;
    const double top = __ldg(e + n);
    if (x > top) return -1;
    if (x == top) return (long long)n - 1;
    // Here e[0] <= x < e[n]: the bin is the one i with e[i] <= x < e[i + 1].
    if (a.has_estimate) {
        double f = __dmul_rn(__dsub_rn(x, a.first), a.scale);
        unsigned i = f < (double)(n - 1) ? (unsigned)f : n - 1;
        if (__ldg(e + i) <= x) {
            if (x < __ldg(e + i + 1)) return i;
            if (i + 2 <= n && x < __ldg(e + i + 2)) return i + 1;
        } else if (i > 0 && __ldg(e + i - 1) <= x) {
            return i - 1;
        }
    }
    unsigned lo = 0, hi = n + 1;  // the first edge above x, searched in [lo, hi)
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (__ldg(e + mid) <= x) lo = mid + 1; else hi = mid;
    }
    return (long long)lo - 1;
}

// The joint bin of sample i (C order, the last axis fastest), JOINT_NAN when any coordinate is
// NaN, else JOINT_OUTSIDE when any is outside its axis.
__device__ __forceinline__ long long joint_bin(const Joint& p, unsigned long long i) {
    long long flat = 0;
    bool outside = false;
    for (int d = 0; d < HISTDD_MAX_DIMS; d++) {
        if (d >= p.dims) break;
        const Axis& a = p.axis[d];
        const double x = (double)a.base[i * a.stride];
        if (x != x) return JOINT_NAN;
        const long long b = axis_bin(x, a);
        if (b < 0) outside = true;
        flat = flat * (long long)a.nbins + b;
    }
    return outside ? JOINT_OUTSIDE : flat;
}

// Sums each thread's tallies over its warp; lane 0 adds them to tallies[0] (outside), tallies[1] (NaN).
__device__ __forceinline__ void flush_tallies(unsigned long long outside, unsigned long long nan,
                                              unsigned long long* tallies) {
    for (int off = 16; off > 0; off >>= 1) {
        outside += __shfl_down_sync(0xffffffffu, outside, off);
        nan += __shfl_down_sync(0xffffffffu, nan, off);
    }
    if ((threadIdx.x & 31) == 0) {
        if (outside) atomicAdd(tallies + 0, outside);
        if (nan) atomicAdd(tallies + 1, nan);
    }
}

// One private u32 histogram per block in dynamic shared memory (joint bins * 4 bytes), added to
// the u64 counts in global memory at the end. Every thread reaches the warp reduction (no early
// exit), as __shfl_down_sync needs.
extern "C" __global__ void __launch_bounds__(512) histdd_shared(const Joint p, unsigned long long* __restrict__ out,
                                                                unsigned long long* tallies) {
    extern __shared__ __align__(16) unsigned int h[];
    for (unsigned long long b = threadIdx.x; b < p.nbins; b += blockDim.x) h[b] = 0u;
    __syncthreads();
    unsigned long long outside = 0, nan = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) {
        const long long b = joint_bin(p, i);
        if (b >= 0) atomicAdd(h + b, 1u);
        else if (b == JOINT_NAN) nan++;
        else outside++;
    }
    __syncthreads();
    for (unsigned long long b = threadIdx.x; b < p.nbins; b += blockDim.x) {
        const unsigned v = h[b];
        if (v) atomicAdd(out + b, (unsigned long long)v);
    }
    flush_tallies(outside, nan, tallies);
}

// Counters in global memory, for joint bins beyond a block's shared memory.
extern "C" __global__ void __launch_bounds__(512) histdd_global(const Joint p, unsigned long long* __restrict__ out,
                                                                unsigned long long* tallies) {
    unsigned long long outside = 0, nan = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) {
        const long long b = joint_bin(p, i);
        if (b >= 0) atomicAdd(out + b, 1ull);
        else if (b == JOINT_NAN) nan++;
        else outside++;
    }
    flush_tallies(outside, nan, tallies);
}
