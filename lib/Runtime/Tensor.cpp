//===- Tensor.cpp - dtypes, strided views and element conversions ---------===//
//
// Part of the Recur project.
//
// All per-dtype code of the runtime lives here: an element is read as a
// complex double and written back in any dtype, and every copy or fill goes
// through copyView / fillElements.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

using namespace recur::rt;

namespace {

using Element = std::complex<double>;

/// An IEEE-style binary format narrower than float (half, bfloat16).
struct SmallFloat {
  int exponentBits;
  int fractionBits;
};
constexpr SmallFloat kHalf{5, 10};
constexpr SmallFloat kBFloat16{8, 7};

/// `x` rounded to nearest, ties to even, in `format`: overflow gives an
/// infinity, tiny values a subnormal or zero, NaN a quiet NaN.
uint16_t encodeSmallFloat(double x, SmallFloat format) {
  const int bias = (1 << (format.exponentBits - 1)) - 1;
  const uint32_t maxField = (1u << format.exponentBits) - 1;
  const uint32_t implicitBit = 1u << format.fractionBits;
  const uint32_t sign =
      std::signbit(x) ? 1u << (format.exponentBits + format.fractionBits) : 0;
  const uint32_t infinity = sign | maxField << format.fractionBits;
  if (std::isnan(x))
    return static_cast<uint16_t>(infinity | implicitBit >> 1);
  double magnitude = std::fabs(x);
  if (std::isinf(magnitude))
    return static_cast<uint16_t>(infinity);
  if (magnitude == 0)
    return static_cast<uint16_t>(sign);
  int binade;
  std::frexp(magnitude, &binade);
  // The exponent of the value's ulp; subnormals share the smallest one.
  int exponent = std::max(binade - 1, 1 - bias);
  double units =
      std::nearbyint(std::ldexp(magnitude, format.fractionBits - exponent));
  if (units >= 2.0 * implicitBit) { // rounding carried into the next binade
    units /= 2;
    ++exponent;
  }
  if (exponent > bias)
    return static_cast<uint16_t>(infinity);
  uint32_t fraction = static_cast<uint32_t>(units);
  if (fraction < implicitBit) // subnormal
    return static_cast<uint16_t>(sign | fraction);
  uint32_t field = static_cast<uint32_t>(exponent + bias);
  return static_cast<uint16_t>(sign | field << format.fractionBits |
                               (fraction - implicitBit));
}

double decodeSmallFloat(uint16_t bits, SmallFloat format) {
  const int bias = (1 << (format.exponentBits - 1)) - 1;
  const uint32_t maxField = (1u << format.exponentBits) - 1;
  const uint32_t implicitBit = 1u << format.fractionBits;
  uint32_t field = (bits >> format.fractionBits) & maxField;
  uint32_t fraction = bits & (implicitBit - 1);
  double sign =
      (bits >> (format.exponentBits + format.fractionBits)) & 1 ? -1.0 : 1.0;
  if (field == maxField)
    return fraction ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (field == 0)
    return sign * std::ldexp(fraction, 1 - bias - format.fractionBits);
  return sign *
         std::ldexp(fraction + implicitBit,
                    static_cast<int>(field) - bias - format.fractionBits);
}

/// `x` truncated toward zero and saturated to int32 (NaN gives 0).
int32_t toInt32(double x) {
  if (std::isnan(x))
    return 0;
  if (x <= std::numeric_limits<int32_t>::min())
    return std::numeric_limits<int32_t>::min();
  if (x >= std::numeric_limits<int32_t>::max())
    return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(x);
}

/// Reads a `T` from possibly unaligned memory.
template <typename T> T load(const char *ptr) {
  T value;
  std::memcpy(&value, ptr, sizeof(T));
  return value;
}

/// Writes a `T` to possibly unaligned memory.
template <typename T> void store(char *ptr, T value) {
  std::memcpy(ptr, &value, sizeof(T));
}

Element loadElement(recur_dtype dtype, const char *ptr) {
  switch (dtype) {
  case RECUR_F16:
    return decodeSmallFloat(load<uint16_t>(ptr), kHalf);
  case RECUR_BF16:
    return decodeSmallFloat(load<uint16_t>(ptr), kBFloat16);
  case RECUR_F32:
    return load<float>(ptr);
  case RECUR_F64:
    return load<double>(ptr);
  case RECUR_C64: {
    auto value = load<std::complex<float>>(ptr);
    return {value.real(), value.imag()};
  }
  case RECUR_C128:
    return load<Element>(ptr);
  case RECUR_BOOL:
    return *ptr ? 1.0 : 0.0;
  case RECUR_I32:
    return load<int32_t>(ptr);
  }
  return 0.0;
}

/// Writes `value` as a `dtype` element; real dtypes keep the real part.
void storeElement(recur_dtype dtype, char *ptr, Element value) {
  switch (dtype) {
  case RECUR_F16:
    return store(ptr, encodeSmallFloat(value.real(), kHalf));
  case RECUR_BF16:
    return store(ptr, encodeSmallFloat(value.real(), kBFloat16));
  case RECUR_F32:
    return store(ptr, static_cast<float>(value.real()));
  case RECUR_F64:
    return store(ptr, value.real());
  case RECUR_C64:
    return store(ptr, std::complex<float>(static_cast<float>(value.real()),
                                          static_cast<float>(value.imag())));
  case RECUR_C128:
    return store(ptr, value);
  case RECUR_BOOL:
    return store<uint8_t>(ptr, value != Element(0.0) ? 1 : 0);
  case RECUR_I32:
    return store(ptr, toInt32(value.real()));
  }
}

/// Copies one element, converting it when the dtypes differ.
void copyElement(recur_dtype srcType, const char *src, recur_dtype dstType,
                 char *dst) {
  if (srcType == dstType)
    std::memcpy(dst, src, recur_dtype_size(srcType));
  else
    storeElement(dstType, dst, loadElement(srcType, src));
}

/// copyView over dimensions `dim` and up, from `src` to `dst`.
void copyDims(const View &srcView, const View &dstView, int32_t dim,
              const char *src, char *dst) {
  if (dim == srcView.rank) {
    copyElement(srcView.dtype, src, dstView.dtype, dst);
    return;
  }
  int64_t srcSize = static_cast<int64_t>(recur_dtype_size(srcView.dtype));
  int64_t dstSize = static_cast<int64_t>(recur_dtype_size(dstView.dtype));
  int64_t length = srcView.shape[dim];
  int64_t srcStep = srcView.strides[dim] * srcSize;
  int64_t dstStep = dstView.strides[dim] * dstSize;
  if (dim < srcView.rank - 1) {
    for (int64_t i = 0; i < length; ++i)
      copyDims(srcView, dstView, dim + 1, src + i * srcStep, dst + i * dstStep);
    return;
  }
  // The innermost dimension: one memcpy when both sides are dense.
  if (srcView.dtype == dstView.dtype && srcStep == srcSize &&
      dstStep == dstSize) {
    std::memcpy(dst, src, static_cast<size_t>(length * srcSize));
    return;
  }
  for (int64_t i = 0; i < length; ++i)
    copyElement(srcView.dtype, src + i * srcStep, dstView.dtype,
                dst + i * dstStep);
}

} // namespace

bool recur::rt::elementCount(int32_t rank, const int64_t *shape,
                             int64_t &count) {
  count = 1;
  for (int32_t d = 0; d < rank; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(count, shape[d], &count))
      return false;
  return true;
}

bool recur::rt::byteCount(int64_t count, recur_dtype dtype, size_t &bytes) {
  return count >= 0 && !__builtin_mul_overflow(static_cast<uint64_t>(count),
                                               recur_dtype_size(dtype), &bytes);
}

void recur::rt::rowMajorStrides(int32_t rank, const int64_t *shape,
                                int64_t *strides) {
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
}

bool recur::rt::isRowMajor(int32_t rank, const int64_t *shape,
                           const int64_t *strides) {
  int64_t count;
  if (elementCount(rank, shape, count) && count == 0)
    return true;
  int64_t expected = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

void recur::rt::copyView(const View &src, const View &dst) {
  int64_t count;
  if (!elementCount(src.rank, src.shape, count) || count == 0)
    return;
  if (src.dtype == dst.dtype && isRowMajor(src.rank, src.shape, src.strides) &&
      isRowMajor(dst.rank, dst.shape, dst.strides)) {
    std::memcpy(dst.data, src.data,
                static_cast<size_t>(count) * recur_dtype_size(src.dtype));
    return;
  }
  copyDims(src, dst, 0, src.data, dst.data);
}

void recur::rt::fillElements(recur_dtype dtype, void *data, int64_t count,
                             double value) {
  size_t size = recur_dtype_size(dtype);
  if (count <= 0 || size == 0)
    return;
  char *out = static_cast<char *>(data);
  storeElement(dtype, out, value);
  // Double the filled prefix until it covers all `count` elements.
  size_t total = static_cast<size_t>(count) * size;
  for (size_t filled = size; filled < total; filled *= 2)
    std::memcpy(out + filled, out, std::min(filled, total - filled));
}

std::string recur::rt::formatShape(int32_t rank, const int64_t *shape) {
  std::string text = "[";
  for (int32_t d = 0; d < rank; ++d) {
    if (d)
      text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + "]";
}

size_t recur::rt::dtypeSize(int64_t dtype) {
  switch (dtype) {
  case RECUR_F16:
  case RECUR_BF16:
    return 2;
  case RECUR_F32:
  case RECUR_I32:
    return 4;
  case RECUR_F64:
  case RECUR_C64:
    return 8;
  case RECUR_C128:
    return 16;
  case RECUR_BOOL:
    return 1;
  }
  return 0;
}

const char *recur::rt::dtypeName(int64_t dtype) {
  switch (dtype) {
  case RECUR_F16:
    return "f16";
  case RECUR_BF16:
    return "bf16";
  case RECUR_F32:
    return "f32";
  case RECUR_F64:
    return "f64";
  case RECUR_C64:
    return "c64";
  case RECUR_C128:
    return "c128";
  case RECUR_BOOL:
    return "bool";
  case RECUR_I32:
    return "i32";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

extern "C" size_t recur_dtype_size(recur_dtype dtype) {
  return dtypeSize(rawValue(dtype));
}

extern "C" const char *recur_dtype_name(recur_dtype dtype) {
  return dtypeName(rawValue(dtype));
}

extern "C" recur_tensor recur_tensor_contiguous(void *data, recur_dtype dtype,
                                                int32_t rank,
                                                const int64_t *shape) {
  recur_tensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  std::memcpy(&t.dtype, &dtype, sizeof(dtype)); // any value, checked later
  t.rank = rank;
  // An impossible rank is kept as is (with no sizes) so that the call the
  // tensor goes to reports it.
  if (rank <= 0 || rank > RECUR_MAX_RANK || !shape)
    return t;
  std::memcpy(t.shape, shape, static_cast<size_t>(rank) * sizeof(int64_t));
  rowMajorStrides(rank, t.shape, t.strides);
  return t;
}

extern "C" int64_t recur_tensor_numel(const recur_tensor *t) {
  int64_t count;
  if (!t || t->rank < 0 || t->rank > RECUR_MAX_RANK ||
      !elementCount(t->rank, t->shape, count))
    return 0;
  return count;
}

/// Appends the descriptor of a row-major buffer to `words`.
void recur::rt::pushMemRef(std::vector<int64_t> &words, void *allocated,
                           void *aligned, int32_t rank, const int64_t *shape) {
  int64_t strides[RECUR_MAX_RANK];
  rowMajorStrides(rank, shape, strides);
  words.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(allocated)));
  words.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(aligned)));
  words.push_back(0);
  words.insert(words.end(), shape, shape + rank);
  words.insert(words.end(), strides, strides + rank);
}
