// The table that cuts a sample's binary search among monotonic bins to a few steps (explicit
// histogram edges, digitize's bins): crates/smemkit/src/search_table.rs builds it and explains
// why the search stays exact. A sample's cell gives its first candidate; the search then takes
// `top`, `top / 2`, ... 1 steps from there, the same number for every sample.

#ifndef SMEMKIT_SEARCH_TABLE_CUH
#define SMEMKIT_SEARCH_TABLE_CUH

// Mirrors `KernelSearchTable` in crates/smemkit/src/search_table.rs field for field.
struct SearchTable {
    const unsigned* starts;     // the lowest partition point of each cell's samples; null: no table
    double first, scale;        // kind 1: cell = floor((x - first) * scale), clamped
    unsigned long long key_lo;  // kind 2: cell = (key(x) - key_lo) >> shift, clamped
    unsigned shift, cells, top;
    int kind;
};

// The order-preserving key of a float64 (negative values reversed below the positive ones).
__device__ __forceinline__ unsigned long long search_key(double x) {
    const unsigned long long u = (unsigned long long)__double_as_longlong(x);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

// The first candidate of a sample that is not NaN (`SearchTable::cell` on the host).
__device__ __forceinline__ unsigned search_start(const SearchTable& t, double x) {
    const unsigned last = t.cells - 1;
    unsigned cell;
    if (t.kind == 1) {
        const double c = __dmul_rn(__dsub_rn(x, t.first), t.scale);
        cell = !(c > 0.0) ? 0u : (c >= (double)last ? last : (unsigned)c);
    } else {
        const unsigned long long k = search_key(x);
        const unsigned long long c = k <= t.key_lo ? 0ull : (k - t.key_lo) >> t.shift;
        cell = c >= last ? last : (unsigned)c;
    }
    return __ldg(t.starts + cell);
}

#endif  // SMEMKIT_SEARCH_TABLE_CUH
