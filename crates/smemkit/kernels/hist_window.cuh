// ---- window: one window of the bins, for bins sharded over ranks -----------------------------

// Bins sharded over ranks (crates/smemkit/src/histogram/cuda/bin_shards.rs) are counted one window
// [lo, lo + len) of the bins per pass, so that a GPU never holds every counter: a sample is binned
// against the whole binning (numpy's rule, `locate`, the policy's clamping), and counted at
// out[bin - lo] only where its bin lies in the window; the others are skipped, not tallied. The
// window's counters are u64 counts or f64 sums in global memory (a window is large by design: the
// counters that did not fit on one GPU, cut by the ranks). The tallies are kept where `tallies`
// is not null: the host passes them in its first pass only, so that every sample is tallied once.
// Aggregation stays off (the host's parameters): its warp key is a 32-bit bin.

template <class Out>
struct WindowSink {
    Out* out;
    unsigned long long lo, len;
    __device__ __forceinline__ void step() {}
    template <class A>
    __device__ __forceinline__ void add(unsigned long long bin, A amount) {
        // Below the window, bin - lo wraps to at least 2^64 - lo >= len: one compare for both ends.
        const unsigned long long local = bin - lo;
        if (local < len) atomicAdd(out + local, (Out)amount);
    }
};

template <int MODE, class W, class Out>
__device__ void window_kernel(const sample_t* in, unsigned long long n, const W* w, BinParams p,
                              unsigned long long lo, unsigned long long len, Out* out,
                              unsigned long long* tallies) {
    WindowSink<Out> sink{out, lo, len};
    Tally t{0, 0, 0};
    process<MODE, W>(in, n, w, p, sink, t, blockIdx.x, gridDim.x);
    if (tallies != nullptr) flush_tally(t, tallies);
}

#define WINDOW_KERNEL(MODE, MNAME, WTYPE, WNAME, OUT)                                                          \
    SMEMKIT_ENTRY(hist_window_##MNAME##_##WNAME,                                                              \
        extern "C" __global__ void __launch_bounds__(512) hist_window_##MNAME##_##WNAME(                      \
            const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p, unsigned long long lo,     \
            unsigned long long len, OUT* out, unsigned long long* t) {                                        \
            window_kernel<MODE, WTYPE, OUT>(in, n, w, p, lo, len, out, t);                                    \
        })
#define WINDOW_KERNELS(MODE, MNAME)                                   \
    WINDOW_KERNEL(MODE, MNAME, void, none, unsigned long long)        \
    WINDOW_KERNEL(MODE, MNAME, float, f32, double)                    \
    WINDOW_KERNEL(MODE, MNAME, double, f64, double)
