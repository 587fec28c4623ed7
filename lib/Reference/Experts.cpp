//===- Experts.cpp - oracle of recur.route_topk and recur.moe -------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

#include <cmath>

using namespace recur::reference;
using namespace recur::reference::detail;

double recur::reference::activate(Activation activation, double x) {
  switch (activation) {
  case Activation::Relu:
    return x > 0.0 ? x : 0.0;
  case Activation::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Activation::Silu:
    return x * sigmoid(x);
  }
  fail("activate", "unknown activation");
}

RouteResult recur::reference::routeTopK(const Tensor<double> &probs, int64_t k,
                                        double eps) {
  const std::string op = "route_topk";
  requireRank(probs, 1, op, "probs");
  int64_t experts = probs.dim(-1);
  if (k < 1 || k > experts)
    fail(op, "'k' (" + std::to_string(k) + ") must be in [1, " +
                 std::to_string(experts) + "]");
  if (!(eps >= 0.0))
    fail(op, "'eps' must be non-negative");
  std::vector<int64_t> outShape = join(leading(probs.shape, 1), {k});
  RouteResult r{Tensor<double>(outShape), Tensor<int32_t>(outShape)};
  int64_t tokens = numElements(leading(probs.shape, 1));
  for (int64_t t = 0; t < tokens; ++t) {
    const double *p = &probs.data[t * experts];
    // Selection: k times, the largest not yet taken; the strict comparison
    // keeps the lower index on ties.
    std::vector<int64_t> order;
    std::vector<bool> taken(experts, false);
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < experts; ++e)
        if (!taken[e] && (best < 0 || p[e] > p[best]))
          best = e;
      taken[best] = true;
      order.push_back(best);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j)
      sum += p[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      r.indices.data[t * k + j] = static_cast<int32_t>(order[j]);
      r.gates.data[t * k + j] = p[order[j]] / (sum + eps);
    }
  }
  return r;
}

Tensor<double> recur::reference::moe(const Tensor<double> &x,
                                     const Tensor<int32_t> &indices,
                                     const Tensor<double> &gates,
                                     const Tensor<double> &wIn,
                                     const Tensor<double> &wOut,
                                     const std::optional<Tensor<bool>> &active,
                                     Activation activation) {
  const std::string op = "moe";
  requireRank(x, 1, op, "x");
  std::vector<int64_t> tokenShape = leading(x.shape, 1);
  requireRank(indices, 1, op, "indices");
  if (leading(indices.shape, 1) != tokenShape)
    fail(op, "'indices' shape " + shapeString(indices.shape) +
                 " must be the token shape " + shapeString(tokenShape) +
                 " plus the k dimension");
  requireShape(gates, indices.shape, op, "gates");
  if (wIn.rank() != 3)
    fail(op, "'w_in' must be [experts, d, hidden], got shape " +
                 shapeString(wIn.shape));
  int64_t experts = wIn.dim(0), d = x.dim(-1), hidden = wIn.dim(2);
  requireShape(wIn, {experts, d, hidden}, op, "w_in");
  requireShape(wOut, {experts, hidden, d}, op, "w_out");
  if (active)
    requireShape(*active, tokenShape, op, "active");
  int64_t k = indices.dim(-1), tokens = numElements(tokenShape);

  Tensor<double> y(x.shape);
  std::vector<double> hid(hidden);
  for (int64_t t = 0; t < tokens; ++t) {
    if (active && !active->data[t])
      continue; // the no-op expert: y = 0
    const double *xt = &x.data[t * d];
    for (int64_t j = 0; j < k; ++j) {
      int64_t e = indices.data[t * k + j];
      if (e < 0 || e >= experts)
        fail(op, "expert index " + std::to_string(e) + " of token " +
                     std::to_string(t) + " is out of range for " +
                     std::to_string(experts) + " experts");
      double g = gates.data[t * k + j];
      for (int64_t c = 0; c < hidden; ++c) {
        double s = 0.0;
        for (int64_t m = 0; m < d; ++m)
          s += xt[m] * wIn.data[(e * d + m) * hidden + c];
        hid[c] = activate(activation, s);
      }
      for (int64_t m = 0; m < d; ++m) {
        double s = 0.0;
        for (int64_t c = 0; c < hidden; ++c)
          s += hid[c] * wOut.data[(e * hidden + c) * d + m];
        y.data[t * d + m] += g * s;
      }
    }
  }
  return y;
}
