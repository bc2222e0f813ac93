// One entry point per build. The host compiles a kernel file once per kernel it launches, with
// -DSMEMKIT_ONE_KERNEL=1 -DSMEMKIT_KERNEL_<name>=1, so that NVRTC (and the driver) handle that
// kernel alone; without SMEMKIT_ONE_KERNEL every entry point is built (the compile checks).
//
// SMEMKIT_ENTRY(name, definition...) keeps the definition only where `name` is wanted;
// `#if SMEMKIT_WANTS(name)` does the same around a definition written out. The test is the
// preprocessor's: SMEMKIT_IS_1(x) is 1 when the macro x is defined as 1 and 0 when x is not a
// macro, by pasting x's expansion onto SMEMKIT_PROBE_: only SMEMKIT_PROBE_1 expands to two
// arguments, which moves the 1 into the place that SMEMKIT_SECOND takes.

#define SMEMKIT_CAT_(a, b) a##b
#define SMEMKIT_CAT(a, b) SMEMKIT_CAT_(a, b)
#define SMEMKIT_SECOND_(a, b, ...) b
#define SMEMKIT_SECOND(...) SMEMKIT_SECOND_(__VA_ARGS__)
#define SMEMKIT_PROBE_1 ~, 1
#define SMEMKIT_IS_1(x) SMEMKIT_SECOND(SMEMKIT_CAT(SMEMKIT_PROBE_, x), 0, ~)

#if defined(SMEMKIT_ONE_KERNEL) && SMEMKIT_ONE_KERNEL
#define SMEMKIT_WANTS(name) SMEMKIT_IS_1(SMEMKIT_KERNEL_##name)
#else
#define SMEMKIT_WANTS(name) 1
#endif

#define SMEMKIT_KEEP_0(...)
#define SMEMKIT_KEEP_1(...) __VA_ARGS__
#define SMEMKIT_ENTRY(name, ...) SMEMKIT_CAT(SMEMKIT_KEEP_, SMEMKIT_WANTS(name))(__VA_ARGS__)
