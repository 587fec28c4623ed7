//===- Util.h - shape helpers shared by the float64 oracle ------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_REFERENCE_UTIL_H
#define RECUR_LIB_REFERENCE_UTIL_H

#include "recur/Reference/Reference.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace recur {
namespace reference {
namespace detail {

[[noreturn]] inline void fail(const std::string &op, const std::string &what) {
  throw std::invalid_argument(op + ": " + what);
}

/// The product of shape[begin .. end).
inline int64_t product(const std::vector<int64_t> &shape, size_t begin,
                       size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= shape[d];
  return n;
}

/// All but the last `drop` dimensions of `shape` (which has at least `drop`).
inline std::vector<int64_t> leading(const std::vector<int64_t> &shape,
                                    size_t drop) {
  return std::vector<int64_t>(shape.begin(), shape.end() - drop);
}

/// `lead` followed by `tail`.
inline std::vector<int64_t> join(std::vector<int64_t> lead,
                                 const std::vector<int64_t> &tail) {
  lead.insert(lead.end(), tail.begin(), tail.end());
  return lead;
}

inline void checkAxis(int64_t axis, int64_t rank, const std::string &op) {
  if (axis < 0 || axis >= rank)
    fail(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
}

/// True when `a` and `b` have one rank and agree outside dimension `skip`.
inline bool sameExcept(const std::vector<int64_t> &a,
                       const std::vector<int64_t> &b, int64_t skip) {
  if (a.size() != b.size())
    return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (static_cast<int64_t>(d) != skip && a[d] != b[d])
      return false;
  return true;
}

template <typename T>
void requireShape(const Tensor<T> &t, const std::vector<int64_t> &expected,
                  const std::string &op, const std::string &name) {
  if (t.shape != expected)
    fail(op, "'" + name + "' has shape " + shapeString(t.shape) +
                 ", expected " + shapeString(expected));
}

template <typename T>
void requireRank(const Tensor<T> &t, int64_t minRank, const std::string &op,
                 const std::string &name) {
  if (t.rank() < minRank)
    fail(op, "'" + name + "' of shape " + shapeString(t.shape) +
                 " must have rank >= " + std::to_string(minRank));
}

/// A shape viewed as [outer, length, inner] around one axis, for loops over
/// the positions along that axis.
struct AxisSplit {
  int64_t outer, length, inner;
  AxisSplit(const std::vector<int64_t> &shape, int64_t axis)
      : outer(product(shape, 0, axis)), length(shape[axis]),
        inner(product(shape, axis + 1, shape.size())) {}
  /// The flat offset of (outer index o, position t, inner index i).
  int64_t at(int64_t o, int64_t t, int64_t i) const {
    return (o * length + t) * inner + i;
  }
};

inline double re(double x) { return x; }
inline double re(const Complex &z) { return z.real(); }

} // namespace detail
} // namespace reference
} // namespace recur

#endif // RECUR_LIB_REFERENCE_UTIL_H
