//===- VectorMathTest.cpp - librecur_rt's vector math entry points --------===//
//
// Part of the Recur project.
//
// The kernels' vectorized loops call recur_rt_v8_<f>f / recur_rt_v4_<f> with
// AVX registers (lib/Runtime/VectorMath.cpp). Compiled with -mavx2 like the
// kernels, this calls each one as they do and compares every lane with the
// scalar libm function, on values across each function's range.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

extern "C" {
__m256 recur_rt_v8_expf(__m256);
__m256 recur_rt_v8_logf(__m256);
__m256 recur_rt_v8_sinf(__m256);
__m256 recur_rt_v8_cosf(__m256);
__m256 recur_rt_v8_tanhf(__m256);
__m256d recur_rt_v4_exp(__m256d);
__m256d recur_rt_v4_log(__m256d);
__m256d recur_rt_v4_sin(__m256d);
__m256d recur_rt_v4_cos(__m256d);
__m256d recur_rt_v4_tanh(__m256d);
}

namespace {

struct Case {
  const char *name;
  __m256 (*v8)(__m256);
  __m256d (*v4)(__m256d);
  double (*scalar)(double);
  double lo, hi;
};

/// Every lane of `y` = f(`x`) within 8 units in the last place of T of the
/// float64 value (libmvec's documented bound is 4 ulp), relative to
/// max(|value|, tiny).
template <typename T, size_t Lanes>
void expectLanes(const T (&x)[Lanes], const T (&y)[Lanes],
                 double (*scalar)(double)) {
  for (size_t i = 0; i < Lanes; ++i) {
    double want = scalar(x[i]);
    double scale = std::max(std::fabs(want),
                            static_cast<double>(std::numeric_limits<T>::min()));
    EXPECT_LE(std::fabs(y[i] - want) / scale,
              8 * std::numeric_limits<T>::epsilon())
        << "x = " << x[i];
  }
}

TEST(VectorMath, EveryLaneMatchesLibm) {
  if (!__builtin_cpu_supports("avx2"))
    GTEST_SKIP() << "no AVX2: the kernels do not call these here";
  const Case cases[] = {
      {"exp", recur_rt_v8_expf, recur_rt_v4_exp,
       [](double x) { return std::exp(x); }, -80, 80},
      {"log", recur_rt_v8_logf, recur_rt_v4_log,
       [](double x) { return std::log(x); }, 1e-30, 1e30},
      {"sin", recur_rt_v8_sinf, recur_rt_v4_sin,
       [](double x) { return std::sin(x); }, -100, 100},
      {"cos", recur_rt_v8_cosf, recur_rt_v4_cos,
       [](double x) { return std::cos(x); }, -100, 100},
      {"tanh", recur_rt_v8_tanhf, recur_rt_v4_tanh,
       [](double x) { return std::tanh(x); }, -20, 20},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    bool logScale = c.lo > 0;
    for (int block = 0; block < 64; ++block) {
      alignas(32) float xf[8], yf[8];
      alignas(32) double xd[4], yd[4];
      for (int i = 0; i < 8; ++i) {
        double t = (block * 8 + i) / 511.0;
        double x = logScale ? c.lo * std::pow(c.hi / c.lo, t)
                            : c.lo + (c.hi - c.lo) * t;
        xf[i] = static_cast<float>(x);
        if (i < 4)
          xd[i] = x;
      }
      _mm256_store_ps(yf, c.v8(_mm256_load_ps(xf)));
      _mm256_store_pd(yd, c.v4(_mm256_load_pd(xd)));
      expectLanes(xf, yf, c.scalar);
      expectLanes(xd, yd, c.scalar);
    }
  }
}

} // namespace
