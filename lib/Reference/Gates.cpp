//===- Gates.cpp - oracle of recur.gate -----------------------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

#include <cmath>

using namespace recur::reference;
using namespace recur::reference::detail;

double recur::reference::sigmoid(double x) {
  if (x >= 0.0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

namespace {

/// True when `src` broadcasts to `dst` (numpy rules, trailing aligned).
bool broadcastsTo(const std::vector<int64_t> &src,
                  const std::vector<int64_t> &dst) {
  if (src.size() > dst.size())
    return false;
  size_t shift = dst.size() - src.size();
  for (size_t d = 0; d < src.size(); ++d)
    if (src[d] != 1 && src[d] != dst[shift + d])
      return false;
  return true;
}

/// The element of `g` that broadcasts to flat index `flat` of `shape`.
double broadcastAt(const Tensor<double> &g, const std::vector<int64_t> &shape,
                   int64_t flat) {
  // Unravel `flat` in `shape`, then re-ravel the trailing dimensions in `g`,
  // using index 0 where `g` has a 1.
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  size_t shift = shape.size() - g.shape.size();
  int64_t offset = 0;
  for (size_t d = 0; d < g.shape.size(); ++d)
    offset = offset * g.shape[d] + (g.shape[d] == 1 ? 0 : index[shift + d]);
  return g.data[offset];
}

} // namespace

Tensor<double> recur::reference::gate(GateKind kind, const Tensor<double> &c,
                                      const Tensor<double> &z,
                                      const std::vector<Tensor<double>> &gates,
                                      double inputBias, double forgetBias) {
  const std::string op = "gate";
  requireShape(z, c.shape, op, "candidate");
  size_t expected = kind == GateKind::Lstm ? 2 : 1;
  if (gates.size() != expected)
    fail(op, "expects " + std::to_string(expected) + " gate operand(s), got " +
                 std::to_string(gates.size()));
  for (size_t g = 0; g < gates.size(); ++g)
    if (!broadcastsTo(gates[g].shape, c.shape))
      fail(op, "gate operand #" + std::to_string(g) + " shape " +
                   shapeString(gates[g].shape) +
                   " does not broadcast to the state shape " +
                   shapeString(c.shape));

  Tensor<double> out(c.shape);
  for (int64_t e = 0; e < c.numElements(); ++e) {
    double state = c.data[e], cand = z.data[e];
    switch (kind) {
    case GateKind::Fixed: {
      double g = sigmoid(broadcastAt(gates[0], c.shape, e));
      out.data[e] = state * g + cand * (1.0 - g);
      break;
    }
    case GateKind::Lstm: {
      double i = sigmoid(broadcastAt(gates[0], c.shape, e) + inputBias);
      double f = sigmoid(broadcastAt(gates[1], c.shape, e) + forgetBias);
      out.data[e] = state * f + cand * i;
      break;
    }
    case GateKind::Update: {
      double u = sigmoid(broadcastAt(gates[0], c.shape, e));
      out.data[e] = u * cand + (1.0 - u) * state;
      break;
    }
    }
  }
  return out;
}
