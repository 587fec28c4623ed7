//===- Scan.cpp - oracle of recur.linear_scan and recur.scan --------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

using namespace recur::reference;
using namespace recur::reference::detail;

namespace {

/// h_t = a_t * h_{t-1} + b_t, one sequential loop per index of the
/// non-scanned dimensions.
template <typename TA, typename TB>
ScanResult<TB> linearScanImpl(const Tensor<TA> &a, const Tensor<TB> &b,
                              const std::optional<Tensor<TB>> &init,
                              int64_t axis, bool reverse) {
  const std::string op = "linear_scan";
  checkAxis(axis, b.rank(), op);
  if (a.rank() <= axis || a.rank() > b.rank())
    fail(op, "'a' must have rank between axis + 1 (" +
                 std::to_string(axis + 1) + ") and the rank of 'b' (" +
                 std::to_string(b.rank()) + "), got shape " +
                 shapeString(a.shape));
  for (int64_t d = 0; d < a.rank(); ++d)
    if (a.shape[d] != b.shape[d])
      fail(op, "'a' shape " + shapeString(a.shape) +
                   " is not a leading part of 'b' shape " +
                   shapeString(b.shape));

  std::vector<int64_t> stateShape = b.shape;
  stateShape.erase(stateShape.begin() + axis);
  if (init)
    requireShape(*init, stateShape, op, "init");

  AxisSplit split(b.shape, axis);
  // The trailing dimensions of `b` that `a` does not cover: `a`'s element for
  // inner index i of `b` is inner index i / broadcast of `a`.
  int64_t broadcast = product(b.shape, a.shape.size(), b.shape.size());
  AxisSplit aSplit(a.shape, axis);

  ScanResult<TB> result{Tensor<TB>(b.shape), Tensor<TB>(stateShape)};
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < split.inner; ++i) {
      TB h = init ? init->data[o * split.inner + i] : TB(0);
      for (int64_t step = 0; step < split.length; ++step) {
        int64_t t = reverse ? split.length - 1 - step : step;
        TA decay = a.data[aSplit.at(o, t, i / broadcast)];
        h = decay * h + b.data[split.at(o, t, i)];
        result.h.data[split.at(o, t, i)] = h;
      }
      result.last.data[o * split.inner + i] = h;
    }
  }
  return result;
}

} // namespace

ScanResult<double>
recur::reference::linearScan(const Tensor<double> &a, const Tensor<double> &b,
                             const std::optional<Tensor<double>> &init,
                             int64_t axis, bool reverse) {
  return linearScanImpl(a, b, init, axis, reverse);
}

ScanResult<Complex>
recur::reference::linearScan(const Tensor<Complex> &a, const Tensor<Complex> &b,
                             const std::optional<Tensor<Complex>> &init,
                             int64_t axis, bool reverse) {
  return linearScanImpl(a, b, init, axis, reverse);
}

ScanResult<Complex>
recur::reference::linearScan(const Tensor<double> &a, const Tensor<Complex> &b,
                             const std::optional<Tensor<Complex>> &init,
                             int64_t axis, bool reverse) {
  return linearScanImpl(a, b, init, axis, reverse);
}

template <typename T>
std::vector<Tensor<T>>
recur::reference::scan(const std::vector<Tensor<T>> &inputs,
                       const std::vector<Tensor<T>> &inits, int64_t axis,
                       bool reverse, const CombineFn<T> &combine) {
  const std::string op = "scan";
  if (inputs.empty())
    fail(op, "expects at least one input");
  if (!combine)
    fail(op, "needs a combine function");
  const std::vector<int64_t> &shape = inputs.front().shape;
  checkAxis(axis, static_cast<int64_t>(shape.size()), op);
  size_t n = inputs.size();
  for (size_t m = 0; m < n; ++m)
    requireShape(inputs[m], shape, op, "input #" + std::to_string(m));
  if (!inits.empty() && inits.size() != n)
    fail(op, "expects no inits or one per input (" + std::to_string(n) +
                 "), got " + std::to_string(inits.size()));
  std::vector<int64_t> carryShape = shape;
  carryShape.erase(carryShape.begin() + axis);
  for (size_t m = 0; m < inits.size(); ++m)
    requireShape(inits[m], carryShape, op, "init #" + std::to_string(m));

  AxisSplit split(shape, axis);
  std::vector<Tensor<T>> results(n, Tensor<T>(shape));
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < split.inner; ++i) {
      std::vector<T> acc(n);
      bool haveAcc = !inits.empty();
      for (size_t m = 0; m < inits.size(); ++m)
        acc[m] = inits[m].data[o * split.inner + i];
      for (int64_t step = 0; step < split.length; ++step) {
        int64_t t = reverse ? split.length - 1 - step : step;
        std::vector<T> x(n);
        for (size_t m = 0; m < n; ++m)
          x[m] = inputs[m].data[split.at(o, t, i)];
        if (haveAcc) {
          acc = combine(acc, x);
          if (acc.size() != n)
            fail(op, "combine returned " + std::to_string(acc.size()) +
                         " elements, expected " + std::to_string(n));
        } else {
          acc = x;
          haveAcc = true;
        }
        for (size_t m = 0; m < n; ++m)
          results[m].data[split.at(o, t, i)] = acc[m];
      }
    }
  }
  return results;
}

namespace recur {
namespace reference {
template std::vector<Tensor<double>> scan(const std::vector<Tensor<double>> &,
                                          const std::vector<Tensor<double>> &,
                                          int64_t, bool,
                                          const CombineFn<double> &);
template std::vector<Tensor<Complex>> scan(const std::vector<Tensor<Complex>> &,
                                           const std::vector<Tensor<Complex>> &,
                                           int64_t, bool,
                                           const CombineFn<Complex> &);
} // namespace reference
} // namespace recur
