// Histogram kernels, one family per header: shared (one private histogram per block in dynamic
// shared memory), packed (narrow counters), cluster, cluster_packed and exchange (the bins split
// across the shared memories of a thread block cluster, reached through distributed shared memory), sliced (the bins
// cut into slices of one block each), spill (the busiest run of bins in shared memory, the rest in
// global memory), global (counters in global memory), the partition passes,
// the skew verdict (hist_probe.cuh), one window of the bins (hist_window.cuh: bins sharded over
// ranks), the deterministic weighted sums (hist_exact.cuh) and the weighted sums in numpy's order
// (hist_numpy_sums.cuh), both with their own entry points. This file holds the sample-type defines
// and the extern "C" entry points; the headers hold the device code (hist_bins.cuh: numpy's rule;
// hist_walk.cuh: the loop every strategy shares).
//
// Compiled by NVRTC once per sample type and kernel: the host passes -DSAMPLE_T=<C type>,
// -DSAMPLE_IS_FLOAT=0|1, -DSAMPLE_IS_F32=0|1, -DSAMPLE_IS_SIGNED=0|1 and -DSAMPLE_IS_HALF=0|1, and names the one kernel it
// wants (one_kernel.cuh). Each strategy comes in four binning modes (integer bins, uniform bins in
// float32 or float64 arithmetic, explicit edges) and four weight kinds (none, float, double, and
// int64 summed exactly in unsigned 64-bit counters: shared, cluster and global only), as extern "C"
// kernels named hist_<strategy>_<mode>_<weights>.

// Compiled with no header outside this folder: cooperative_groups and libcu++ each cost NVRTC most
// of a second per compilation, which one-kernel builds pay every time.
#include "one_kernel.cuh"

template <class T>
struct IsVoid {
    static constexpr bool value = false;
};
template <>
struct IsVoid<void> {
    static constexpr bool value = true;
};
template <class A, class B>
struct IsSame {
    static constexpr bool value = false;
};
template <class A>
struct IsSame<A, A> {
    static constexpr bool value = true;
};

#ifndef SAMPLE_T
#error "SAMPLE_T must be defined by the host"
#endif
typedef SAMPLE_T sample_t;
#ifndef SAMPLE_IS_HALF
#define SAMPLE_IS_HALF 0
#endif

#include "hist_bins.cuh"
#include "hist_walk.cuh"
#include "hist_shared.cuh"
#include "hist_packed.cuh"
#include "hist_cluster.cuh"
#include "hist_sliced.cuh"
#include "hist_small.cuh"
#include "hist_exchange.cuh"
#include "hist_cluster_packed.cuh"
#include "hist_global.cuh"
#include "hist_partition.cuh"
#include "hist_spill.cuh"
#include "hist_probe.cuh"
#include "hist_window.cuh"

// ---- extern "C" entry points -----------------------------------------------------------------

// Counts of integer bins in shared memory run four 512-thread blocks per SM while the counters are
// small (256 bins: u8 samples at 90 % of a copy is a target), which leaves 32 registers a thread:
// the lean step took byte samples to 39 unbounded. Unweighted counts of computed bins (uniform
// float bins, edges) run two, 64 registers a thread: one 512-thread block per SM leaves too few
// loads in flight to hide the memory's latency.
#define SHARED_MIN_BLOCKS(MODE, WTYPE) \
    (!IsVoid<WTYPE>::value ? 1 : ((MODE) == MODE_INTEGER || (MODE) == MODE_LUT) ? 4 : 2)
#define HIST_KERNELS(MODE, MNAME, WTYPE, WNAME, C, OUT, GOUT)                                                  \
    SMEMKIT_ENTRY(hist_shared_##MNAME##_##WNAME,                                                              \
        extern "C" __global__ void __launch_bounds__(512, SHARED_MIN_BLOCKS(MODE, WTYPE))                     \
        hist_shared_##MNAME##_##WNAME(const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p,  \
                                      OUT* out, unsigned long long* t) {                                      \
            shared_kernel<MODE, WTYPE, C, OUT>(in, n, w, p, out, t);                                          \
        })                                                                                                    \
    SMEMKIT_ENTRY(hist_cluster_##MNAME##_##WNAME,                                                             \
        extern "C" __global__ void __launch_bounds__(512)                                                     \
        hist_cluster_##MNAME##_##WNAME(const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p, \
                                       OUT* out, unsigned long long* t) {                                     \
            cluster_kernel<MODE, WTYPE, C, OUT>(in, n, w, p, out, t);                                         \
        })                                                                                                    \
    SMEMKIT_ENTRY(hist_global_##MNAME##_##WNAME,                                                              \
        extern "C" __global__ void __launch_bounds__(512)                                                     \
        hist_global_##MNAME##_##WNAME(const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p,  \
                                      GOUT* out, unsigned long long* t) {                                     \
            global_kernel<MODE, WTYPE, GOUT>(in, n, w, p, out, t);                                            \
        })

#define PART_KERNELS(MODE, MNAME)                                                                              \
    SMEMKIT_ENTRY(hist_part_count_##MNAME,                                                                     \
        extern "C" __global__ void __launch_bounds__(512) hist_part_count_##MNAME(                             \
            const sample_t* in, unsigned long long n, BinParams p, unsigned bits, unsigned nbuckets,           \
            unsigned long long* bucket_counts, unsigned long long* t) {                                        \
            part_count<MODE>(in, n, p, bits, nbuckets, bucket_counts, t);                                      \
        })                                                                                                     \
    SMEMKIT_ENTRY(hist_part_scatter_##MNAME,                                                                   \
        extern "C" __global__ void __launch_bounds__(512, 2) hist_part_scatter_##MNAME(                        \
            const sample_t* in, unsigned long long n, BinParams p, unsigned bits, unsigned nbuckets,           \
            unsigned split_bits, unsigned long long* cursor, unsigned short* idx) {                            \
            part_scatter<MODE>(in, n, p, bits, nbuckets, split_bits, cursor, idx);                             \
        })                                                                                                     \
    SMEMKIT_ENTRY(hist_verdict_##MNAME,                                                                        \
        extern "C" __global__ void __launch_bounds__(1024) hist_verdict_##MNAME(                               \
            const sample_t* in, unsigned long long n, BinParams p, unsigned probes, double threshold,          \
            unsigned slice_bins, double slice_threshold, unsigned crowded, unsigned pair_threshold,            \
            unsigned spill_len, double spill_threshold, unsigned* verdict) {                                   \
            skew_verdict<MODE>(in, n, p, probes, threshold, slice_bins, slice_threshold, crowded,             \
                               pair_threshold, spill_len, spill_threshold, verdict);                           \
        })

// Two builds of each: without and with the prefetching loop (`p`, see `process`), which needs ~14
// more registers; the host takes the `p` build where an SM holds at most 1024 of the kernel's threads
// (plan::prefetch_build), launching 1024-thread blocks where one block fills an SM. The other build
// runs three or four 512-thread blocks per SM, which fit only at 40 registers or fewer: integer bins
// ask for that (41 registers, allocated as 48, cost 32768 bins a block per SM and was slower),
// and so do float32 bins without correction (42 unbounded; 16-bit 40 without spills, 8-bit 8 bytes);
// the other float modes need ~56-64 and keep two blocks rather than spill.
#define PACKED_MIN_BLOCKS(MODE) (CHEAP_MODE(MODE) ? 3 : 2)
#define PACKED_KERNEL(MODE, MNAME, BITS, SUFFIX, PREFETCH, BOUNDS)                                              \
    SMEMKIT_ENTRY(hist_shared##BITS##SUFFIX##_##MNAME##_none,                                                  \
        extern "C" __global__ void BOUNDS hist_shared##BITS##SUFFIX##_##MNAME##_none(                          \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            packed_kernel<MODE, BITS, PREFETCH>(in, n, p, out, t);                                             \
        })
#define PACKED_KERNELS(MODE, MNAME)                                                                            \
    PACKED_KERNEL(MODE, MNAME, 16, , false, __launch_bounds__(512, PACKED_MIN_BLOCKS(MODE)))                   \
    PACKED_KERNEL(MODE, MNAME, 16, p, true, __launch_bounds__(1024))                                           \
    PACKED_KERNEL(MODE, MNAME, 8, , false, __launch_bounds__(512, PACKED_MIN_BLOCKS(MODE)))                    \
    PACKED_KERNEL(MODE, MNAME, 8, p, true, __launch_bounds__(1024))                                            \
    PACKED_KERNEL(MODE, MNAME, 4, p, true, __launch_bounds__(1024))

// u32 counts where an SM holds at most 1024 threads (two 512-thread blocks, or one of 1024 where
// one block fills an SM: 19201 to 58108 bins): the prefetching loop, as the narrow counters' `p`
// build (plan::prefetch_build).
#define SHARED_ONE_BLOCK_KERNEL(MODE, MNAME)                                                                   \
    SMEMKIT_ENTRY(hist_sharedp_##MNAME##_none,                                                                 \
        extern "C" __global__ void __launch_bounds__(1024) hist_sharedp_##MNAME##_none(                        \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            shared_kernel<MODE, void, unsigned int, unsigned long long, true>(in, n, w, p, out, t);            \
        })

// Counts only, one 1024-thread block per SM (the inboxes fill the shared memory the counters leave).
#define EXCHANGE_KERNEL(MODE, MNAME, BITS)                                                                     \
    SMEMKIT_ENTRY(hist_exchange##BITS##_##MNAME##_none,                                                        \
        extern "C" __global__ void __launch_bounds__(1024) hist_exchange##BITS##_##MNAME##_none(               \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            exchange_kernel<MODE, BITS>(in, n, p, out, t);                                                     \
        })

// Counts only, 1024-thread blocks (one per SM where the counters take 128 KiB), prefetching.
#define CLUSTER_PACKED_KERNEL(MODE, MNAME, BITS)                                                               \
    SMEMKIT_ENTRY(hist_clusterpacked##BITS##_##MNAME##_none,                                                   \
        extern "C" __global__ void __launch_bounds__(1024) hist_clusterpacked##BITS##_##MNAME##_none(          \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            cluster_packed_kernel<MODE, BITS>(in, n, p, out, t);                                               \
        })

// Counts only, one 1024-thread block per SM (narrow counters fill its shared memory), prefetching.
#define SLICED_KERNEL(MODE, MNAME, BITS)                                                                       \
    SMEMKIT_ENTRY(hist_sliced##BITS##_##MNAME##_none,                                                          \
        extern "C" __global__ void __launch_bounds__(1024) hist_sliced##BITS##_##MNAME##_none(                 \
            const sample_t* in, unsigned long long n, const void* w, BinParams p, unsigned long long* out,     \
            unsigned long long* t) {                                                                           \
            sliced_kernel<MODE, BITS>(in, n, p, out, t);                                                       \
        })

// Weight sums (and int64 weights' 64-bit sums) in slices of the bins, 512-thread blocks as the
// other weighted kernels.
#define SLICED_SUMS_KERNEL(MODE, MNAME, WTYPE, WNAME, C, OUT)                                                  \
    SMEMKIT_ENTRY(hist_slicedsums_##MNAME##_##WNAME,                                                          \
        extern "C" __global__ void __launch_bounds__(512, 1) hist_slicedsums_##MNAME##_##WNAME(               \
            const sample_t* in, unsigned long long n, const WTYPE* w, BinParams p, OUT* out,                  \
            unsigned long long* t) {                                                                           \
            sliced_sums_kernel<MODE, WTYPE, C, OUT>(in, n, w, p, out, t);                                     \
        })

// Counts only, small inputs: the whole call in one launch (output written whole, edges copied).
#define SMALL_KERNEL(MODE, MNAME)                                                                              \
    SMEMKIT_ENTRY(hist_small_##MNAME##_none,                                                                   \
        extern "C" __global__ void __launch_bounds__(512) hist_small_##MNAME##_none(                           \
            const sample_t* in, unsigned long long n, BinParams p, unsigned slice_bins, unsigned long long* out, \
            const unsigned* edges_src, unsigned* edges_dst, unsigned edge_words) {                             \
            small_kernel<MODE>(in, n, p, slice_bins, out, edges_src, edges_dst, edge_words);                   \
        })

#define HIST_MODE(MODE, MNAME)                                             \
    PART_KERNELS(MODE, MNAME)                                              \
    SMALL_KERNEL(MODE, MNAME)                                              \
    SLICED_KERNEL(MODE, MNAME, 8)                                          \
    SLICED_KERNEL(MODE, MNAME, 4)                                          \
    SPILL_KERNEL(MODE, MNAME, 8)                                           \
    SPILL_KERNEL(MODE, MNAME, 4)                                           \
    EXCHANGE_KERNEL(MODE, MNAME, 16)                                       \
    EXCHANGE_KERNEL(MODE, MNAME, 8)                                        \
    CLUSTER_PACKED_KERNEL(MODE, MNAME, 16)                                 \
    CLUSTER_PACKED_KERNEL(MODE, MNAME, 8)                                  \
    PACKED_KERNELS(MODE, MNAME)                                            \
    SHARED_ONE_BLOCK_KERNEL(MODE, MNAME)                                   \
    HIST_KERNELS(MODE, MNAME, void, none, unsigned int, unsigned long long, unsigned int) \
    HIST_KERNELS(MODE, MNAME, float, f32, double, double, double)                         \
    HIST_KERNELS(MODE, MNAME, double, f64, double, double, double)                         \
    HIST_KERNELS(MODE, MNAME, long long, i64, unsigned long long, unsigned long long,       \
                 unsigned long long)                                                       \
    SLICED_SUMS_KERNEL(MODE, MNAME, float, f32, double, double)                            \
    SLICED_SUMS_KERNEL(MODE, MNAME, double, f64, double, double)                           \
    SLICED_SUMS_KERNEL(MODE, MNAME, long long, i64, unsigned long long, unsigned long long) \
    WINDOW_KERNELS(MODE, MNAME)

#if SAMPLE_IS_HALF
// float16 / bfloat16 (SAMPLE_T is their 16-bit code): every binning counts from the host's table of
// slots (MODE_LUT).
HIST_MODE(MODE_LUT, lut)
#include "hist_lut.cuh"
#else
#if SAMPLE_IS_FLOAT
#if SAMPLE_IS_F32
HIST_MODE(MODE_UNIFORM32, uniform32)
HIST_MODE(MODE_UNIFORM32_EXACT, uniform32x)
HIST_MODE(MODE_UNIFORM32_INTERIOR, uniform32i)
HIST_MODE(MODE_UNIFORM32_WIDE, uniform32w)
#else
HIST_MODE(MODE_UNIFORM64, uniform64)
HIST_MODE(MODE_UNIFORM64_EXACT, uniform64x)
#endif
#else
HIST_MODE(MODE_INTEGER, integer)
HIST_MODE(MODE_UNIFORM64, uniform64)
#endif
HIST_MODE(MODE_EDGES, edges)
#endif

// The deterministic weighted sums: their own entry points over the binning above.
#include "hist_exact.cuh"
// Float weights summed in numpy's order (its blocks of 65536 samples): their own entry points too.
#include "hist_numpy_sums.cuh"
