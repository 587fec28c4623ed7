//===- VectorMath.cpp - vector math for the kernels' vectorized loops -----===//
//
// Part of the Recur project.
//
// When LLVM vectorizes a kernel loop that calls exp, log, sin, cos or tanh
// on an AVX2 target, it calls these with 8 floats or 4 doubles at once
// (lib/Target/CpuTarget.cpp maps the scalar functions to them). They forward
// to glibc's vector math library, libmvec, which librecur_rt links: a
// program that links the kernels and librecur_rt needs nothing more, and
// the kernels' objects name no glibc-internal symbol. libmvec's functions
// are accurate to a few units in the last place, like the scalar ones, but
// are not bit for bit the same.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>

// Compiled with -mavx2 -mfma (CMakeLists.txt): a target attribute alone
// would keep the non-AVX calling convention, passing the vectors in memory.
#define RECUR_EXPORT __attribute__((visibility("default")))

extern "C" {

// glibc's AVX2 variants (x86_64 vector function ABI, ISA 'd').
#define RECUR_LIBMVEC(name)                                                    \
  __m256 _ZGVdN8v_##name##f(__m256);                                           \
  __m256d _ZGVdN4v_##name(__m256d);                                            \
  RECUR_EXPORT __m256 recur_rt_v8_##name##f(__m256 x) {                        \
    return _ZGVdN8v_##name##f(x);                                              \
  }                                                                            \
  RECUR_EXPORT __m256d recur_rt_v4_##name(__m256d x) {                         \
    return _ZGVdN4v_##name(x);                                                 \
  }

RECUR_LIBMVEC(exp)
RECUR_LIBMVEC(log)
RECUR_LIBMVEC(sin)
RECUR_LIBMVEC(cos)
RECUR_LIBMVEC(tanh)

#undef RECUR_LIBMVEC

} // extern "C"
