// ---- Skew probe ----------------------------------------------------------------------------------
// Before committing to the partition passes, `auto` looks at `probes` samples spread evenly over
// the input: each lands in its bin under the policy (NO_BIN where it is counted in no bin), and the
// host measures the commonest bin's share. Much skewed data goes to the global kernel instead, whose
// per-block hot bin absorbs it (see `hot_share_for_global` in crates/smemkit/src/plan/mod.rs).
template <int MODE>
__device__ void probe(const sample_t* __restrict__ in, unsigned long long n, BinParams p, unsigned probes,
                      unsigned* __restrict__ bins) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < probes; i += gridDim.x * blockDim.x) {
        // Sample floor(i * n / probes) (evenly spread, the first at 0, all below n), as
        // i * q + i * r / probes with n = q * probes + r, which cannot overflow.
        const unsigned long long q = n / probes, r = n % probes;
        const unsigned long long j = i * q + (unsigned long long)i * r / probes;
        Tally unused = {0, 0, 0};
        const long long bin = resolve(locate<MODE>(in[j], p), p, unused);
        bins[i] = bin < 0 ? NO_BIN : (unsigned)bin;
    }
}
