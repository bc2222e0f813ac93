// Integer and bool weights widened to int64 on the device, for the histogram kernels' one integer
// weight kind (hist_*_i64, which sum int64 weights exactly in 64-bit counters). One entry point
// for every source type, which it takes as arguments (the width in bytes and whether it is
// signed; bool is an unsigned byte of 0 or 1): one build of one small kernel rather than one per
// type. Every thread of a launch takes the same branch, so the switch costs nothing per element
// beyond its first test; the copy is bound by memory either way.

extern "C" __global__ void __launch_bounds__(256) widen_weights_i64(const void* in, unsigned width,
                                                                  unsigned is_signed,
                                                                  unsigned long long n, long long* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (width == 1) {
        if (is_signed) {
            const signed char* s = (const signed char*)in;
            for (; i < n; i += stride) out[i] = (long long)__ldg(s + i);
        } else {
            const unsigned char* s = (const unsigned char*)in;
            for (; i < n; i += stride) out[i] = (long long)__ldg(s + i);
        }
    } else if (width == 2) {
        if (is_signed) {
            const short* s = (const short*)in;
            for (; i < n; i += stride) out[i] = (long long)__ldg(s + i);
        } else {
            const unsigned short* s = (const unsigned short*)in;
            for (; i < n; i += stride) out[i] = (long long)__ldg(s + i);
        }
    } else if (width == 4) {
        if (is_signed) {
            const int* s = (const int*)in;
            for (; i < n; i += stride) out[i] = (long long)__ldg(s + i);
        } else {
            const unsigned* s = (const unsigned*)in;
            for (; i < n; i += stride) out[i] = (long long)__ldg(s + i);
        }
    } else {
        // 64-bit weights (uint64 as its two's-complement bits): a plain copy.
        const long long* s = (const long long*)in;
        for (; i < n; i += stride) out[i] = __ldg(s + i);
    }
}
