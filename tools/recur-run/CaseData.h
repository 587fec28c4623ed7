//===- CaseData.h - tensors of a recur-run case, without MLIR ----*- C++ -*-===//
//
// Part of the Recur project.
//
// What recur-run and recur-case share: a tensor element of any runtime dtype
// read and written as a complex double, the error measure both print, and
// the file format of a saved case (`recur-run --save-case`, run by
// recur-case where no LLVM or MLIR is installed; docs/cuda.md).
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TOOLS_RECUR_RUN_CASEDATA_H
#define RECUR_TOOLS_RECUR_RUN_CASEDATA_H

#include "recur/Runtime/recur_rt.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <vector>

namespace recur::casedata {

using Complex = std::complex<double>;

/// The first line of a case's manifest (`case.txt`); the format's version
/// is its second word.
constexpr const char *kMagic = "recur-case";
constexpr int kVersion = 1;

inline bool isComplexType(recur_dtype d) {
  return d == RECUR_C64 || d == RECUR_C128;
}

/// `f` rounded to bfloat16 (nearest, ties to even; NaN stays NaN).
inline uint16_t toBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// Stores `v` as element `i` of a `dtype` buffer.
inline void storeElement(recur_dtype dtype, unsigned char *p, int64_t i, Complex v) {
  switch (dtype) {
  case RECUR_F16:
    reinterpret_cast<_Float16 *>(p)[i] = static_cast<_Float16>(v.real());
    return;
  case RECUR_BF16:
    reinterpret_cast<uint16_t *>(p)[i] = toBF16(static_cast<float>(v.real()));
    return;
  case RECUR_F32:
    reinterpret_cast<float *>(p)[i] = static_cast<float>(v.real());
    return;
  case RECUR_F64:
    reinterpret_cast<double *>(p)[i] = v.real();
    return;
  case RECUR_C64:
    reinterpret_cast<std::complex<float> *>(p)[i] = std::complex<float>(
        static_cast<float>(v.real()), static_cast<float>(v.imag()));
    return;
  case RECUR_C128:
    reinterpret_cast<Complex *>(p)[i] = v;
    return;
  case RECUR_BOOL:
    p[i] = v.real() != 0.0;
    return;
  case RECUR_I32:
    reinterpret_cast<int32_t *>(p)[i] = static_cast<int32_t>(v.real());
    return;
  }
}

/// Element `i` of a `dtype` buffer.
inline Complex loadElement(recur_dtype dtype, const unsigned char *p, int64_t i) {
  switch (dtype) {
  case RECUR_F16:
    return static_cast<double>(reinterpret_cast<const _Float16 *>(p)[i]);
  case RECUR_BF16: {
    uint32_t bits = uint32_t(reinterpret_cast<const uint16_t *>(p)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  case RECUR_F32:
    return reinterpret_cast<const float *>(p)[i];
  case RECUR_F64:
    return reinterpret_cast<const double *>(p)[i];
  case RECUR_C64: {
    std::complex<float> c = reinterpret_cast<const std::complex<float> *>(p)[i];
    return Complex(c.real(), c.imag());
  }
  case RECUR_C128:
    return reinterpret_cast<const Complex *>(p)[i];
  case RECUR_BOOL:
    return p[i] ? 1.0 : 0.0;
  case RECUR_I32:
    return reinterpret_cast<const int32_t *>(p)[i];
  }
  return 0.0;
}

/// max |got - want| / max |want| (the absolute error when want is 0).
inline double maxRelErr(const std::vector<Complex> &got,
                 const std::vector<Complex> &want) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = std::abs(got[i] - want[i]);
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0.0 ? err / scale : err;
}

} // namespace recur::casedata

#endif // RECUR_TOOLS_RECUR_RUN_CASEDATA_H
