//===- Tensor.cpp - dense tensors of the float64 oracle -------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

using namespace recur::reference;

std::string recur::reference::shapeString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d)
      s += 'x';
    s += std::to_string(shape[d]);
  }
  return s;
}

int64_t recur::reference::numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument("negative dimension in shape " +
                                  shapeString(shape));
    n *= d;
  }
  return n;
}

template <typename T>
Tensor<T> recur::reference::slice(const Tensor<T> &t, int64_t axis,
                                  int64_t start, int64_t length) {
  detail::checkAxis(axis, t.rank(), "slice");
  if (start < 0 || length < 0 || start + length > t.shape[axis])
    throw std::invalid_argument(
        "slice [" + std::to_string(start) + ", " +
        std::to_string(start + length) + ") is out of range for dimension " +
        std::to_string(axis) + " of shape " + shapeString(t.shape));
  detail::AxisSplit split(t.shape, axis);
  std::vector<int64_t> shape = t.shape;
  shape[axis] = length;
  Tensor<T> out(shape);
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t p = 0; p < length; ++p)
      for (int64_t i = 0; i < split.inner; ++i)
        out.data[(o * length + p) * split.inner + i] =
            t.data[split.at(o, start + p, i)];
  return out;
}

template <typename T>
Tensor<T> recur::reference::concat(const std::vector<Tensor<T>> &parts,
                                   int64_t axis) {
  if (parts.empty())
    throw std::invalid_argument("concat needs at least one tensor");
  const Tensor<T> &first = parts.front();
  detail::checkAxis(axis, first.rank(), "concat");
  std::vector<int64_t> shape = first.shape;
  shape[axis] = 0;
  for (const Tensor<T> &part : parts) {
    if (!detail::sameExcept(part.shape, first.shape, axis))
      throw std::invalid_argument("concat: shape " + shapeString(part.shape) +
                                  " does not match " +
                                  shapeString(first.shape) +
                                  " outside dimension " + std::to_string(axis));
    shape[axis] += part.shape[axis];
  }
  Tensor<T> out(shape);
  detail::AxisSplit split(shape, axis);
  int64_t base = 0;
  for (const Tensor<T> &part : parts) {
    detail::AxisSplit partSplit(part.shape, axis);
    for (int64_t o = 0; o < split.outer; ++o)
      for (int64_t p = 0; p < part.shape[axis]; ++p)
        for (int64_t i = 0; i < split.inner; ++i)
          out.data[split.at(o, base + p, i)] = part.data[partSplit.at(o, p, i)];
    base += part.shape[axis];
  }
  return out;
}

Tensor<Complex> recur::reference::toComplex(const Tensor<double> &t) {
  Tensor<Complex> out(t.shape);
  for (size_t n = 0; n < t.data.size(); ++n)
    out.data[n] = Complex(t.data[n], 0.0);
  return out;
}

Tensor<double> recur::reference::realPart(const Tensor<Complex> &t) {
  Tensor<double> out(t.shape);
  for (size_t n = 0; n < t.data.size(); ++n)
    out.data[n] = t.data[n].real();
  return out;
}

namespace recur {
namespace reference {
template Tensor<double> slice(const Tensor<double> &, int64_t, int64_t,
                              int64_t);
template Tensor<Complex> slice(const Tensor<Complex> &, int64_t, int64_t,
                               int64_t);
template Tensor<int32_t> slice(const Tensor<int32_t> &, int64_t, int64_t,
                               int64_t);
template Tensor<bool> slice(const Tensor<bool> &, int64_t, int64_t, int64_t);
template Tensor<double> concat(const std::vector<Tensor<double>> &, int64_t);
template Tensor<Complex> concat(const std::vector<Tensor<Complex>> &, int64_t);
template Tensor<int32_t> concat(const std::vector<Tensor<int32_t>> &, int64_t);
template Tensor<bool> concat(const std::vector<Tensor<bool>> &, int64_t);
} // namespace reference
} // namespace recur
