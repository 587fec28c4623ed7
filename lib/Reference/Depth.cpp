//===- Depth.cpp - oracle of recur.halting and recur.depth_loop -----------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

using namespace recur::reference;
using namespace recur::reference::detail;

HaltingResult
recur::reference::halting(const Tensor<double> &pHat, const Tensor<double> &h,
                          const Tensor<double> &mass, const Tensor<double> &acc,
                          const Tensor<double> &sPrev, double threshold) {
  const std::string op = "halting";
  requireRank(h, 1, op, "h");
  if (leading(h.shape, 1) != pHat.shape)
    fail(op, "'h' shape " + shapeString(h.shape) + " must be the 'p_hat' " +
                 "shape " + shapeString(pHat.shape) +
                 " plus a feature dimension");
  requireShape(mass, pHat.shape, op, "mass");
  requireShape(acc, h.shape, op, "acc");
  requireShape(sPrev, h.shape, op, "s_prev");
  if (!(threshold > 0.0 && threshold <= 1.0))
    fail(op, "'threshold' must be in (0, 1], got " + std::to_string(threshold));

  int64_t tokens = pHat.numElements(), d = h.dim(-1);
  HaltingResult r{Tensor<double>(pHat.shape), Tensor<double>(h.shape),
                  Tensor<double>(pHat.shape), Tensor<double>(h.shape)};
  for (int64_t t = 0; t < tokens; ++t) {
    double m = mass.data[t];
    if (m < threshold) {
      // Active: Eq. 2 and Eq. 3 of the Sparse Universal Transformer.
      double a = pHat.data[t] * (1.0 - m);
      r.a.data[t] = a;
      r.newMass.data[t] = m + a;
      for (int64_t e = 0; e < d; ++e) {
        int64_t x = t * d + e;
        r.s.data[x] = (1.0 - m) * h.data[x] + acc.data[x];
        r.newAcc.data[x] = acc.data[x] + a * h.data[x];
      }
    } else {
      // Halted: exact copies.
      r.a.data[t] = 0.0;
      r.newMass.data[t] = m;
      for (int64_t e = 0; e < d; ++e) {
        int64_t x = t * d + e;
        r.s.data[x] = sPrev.data[x];
        r.newAcc.data[x] = acc.data[x];
      }
    }
  }
  return r;
}

std::vector<Tensor<double>>
recur::reference::depthLoop(const std::vector<Tensor<double>> &inits,
                            int64_t maxDepth, const DepthBody &body) {
  const std::string op = "depth_loop";
  if (inits.empty())
    fail(op, "expects at least one carried value");
  if (maxDepth < 1)
    fail(op, "'max_depth' must be at least 1, got " + std::to_string(maxDepth));
  if (!body)
    fail(op, "needs a body");
  std::vector<Tensor<double>> carried = inits;
  for (int64_t l = 0; l < maxDepth; ++l) {
    std::vector<Tensor<double>> next = body(l, carried);
    if (next.size() != inits.size())
      fail(op, "body yielded " + std::to_string(next.size()) +
                   " carried values, expected " + std::to_string(inits.size()));
    for (size_t m = 0; m < inits.size(); ++m)
      requireShape(next[m], inits[m].shape, op,
                   "carried value #" + std::to_string(m));
    carried = std::move(next);
  }
  return carried;
}
