//===- CaseData.h - tensors of a recur-run case, without MLIR ----*- C++
//-*-===//
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
inline void storeElement(recur_dtype dtype, unsigned char *p, int64_t i,
                         Complex v) {
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
inline Complex loadElement(recur_dtype dtype, const unsigned char *p,
                           int64_t i) {
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

/// A tensor of a run: its description (a TensorSignature in recur-run, a
/// recur_arg_desc in recur-case: anything with `dtype`), its shape and its
/// row-major bytes in the layer's dtype.
template <typename Desc> struct TensorBytes {
  const Desc *sig = nullptr;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  recur_tensor view() {
    return recur_tensor_contiguous(bytes.data(), sig->dtype,
                                   static_cast<int32_t>(shape.size()),
                                   shape.data());
  }
};

/// The views of `ts`.
template <typename T> std::vector<recur_tensor> viewsOf(std::vector<T> &ts) {
  std::vector<recur_tensor> v;
  for (T &t : ts)
    v.push_back(t.view());
  return v;
}

/// A state of `layer` for `batch` rows holding the bytes of `values`, or
/// NULL (recur_last_error says why).
template <typename T>
recur_state *stateHolding(const recur_layer_desc *layer, int64_t batch,
                          std::vector<recur_tensor> params,
                          const std::vector<T> &values) {
  recur_state *state = nullptr;
  if (recur_state_create(layer, batch, params.data(), &state) != RECUR_OK)
    return nullptr;
  for (size_t i = 0; i < values.size(); ++i) {
    recur_tensor v;
    recur_state_view(state, static_cast<int32_t>(i), &v);
    std::memcpy(v.data, values[i].bytes.data(), values[i].bytes.size());
  }
  return state;
}

/// Copies state tensor `i` of `state` into `bytes`, which has its size.
inline void readStateTensor(recur_state *state, int32_t i,
                            std::vector<unsigned char> &bytes) {
  recur_tensor v;
  recur_state_view(state, i, &v);
  std::memcpy(bytes.data(), v.data, bytes.size());
}

/// Views of `ts` narrowed to positions [start, start + len) of their time
/// dimension (`timeDimOf(t)`: its index in t, or -1); a per-row flag
/// (`isRowFlag(t)`) is replaced after the first piece by a zero tensor of
/// `zeros` (made by `zeroLike(t)`): it marks where a sequence starts,
/// which a continuation is not.
template <typename T, typename TimeDimOf, typename IsRowFlag, typename ZeroLike>
std::vector<recur_tensor> pieceViews(std::vector<T> &ts, int64_t start,
                                     int64_t len, std::vector<T> &zeros,
                                     TimeDimOf timeDimOf, IsRowFlag isRowFlag,
                                     ZeroLike zeroLike) {
  std::vector<recur_tensor> out;
  for (T &t : ts) {
    recur_tensor v = t.view();
    int d = timeDimOf(t);
    if (d >= 0) {
      v.data = t.bytes.data() +
               start * v.strides[d] * recur_dtype_size(t.sig->dtype);
      v.shape[d] = len;
    }
    if (start > 0 && isRowFlag(t)) {
      zeros.push_back(zeroLike(t));
      v = zeros.back().view();
    }
    out.push_back(v);
  }
  return out;
}

} // namespace recur::casedata

#endif // RECUR_TOOLS_RECUR_RUN_CASEDATA_H
