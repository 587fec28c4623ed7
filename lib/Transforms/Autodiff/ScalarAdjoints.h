//===- ScalarAdjoints.h - reverse mode through scalar ops -------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_TRANSFORMS_AUTODIFF_SCALARADJOINTS_H
#define RECUR_LIB_TRANSFORMS_AUTODIFF_SCALARADJOINTS_H

#include "mlir/IR/Builders.h"

namespace mlir::recur {

/// Cotangents of scalar values, summed over uses.
class ScalarCotangents {
public:
  explicit ScalarCotangents(OpBuilder &b) : b(b) {}
  Value get(Value v) const { return map.lookup(v); }
  void add(Value v, Value cotangent);

private:
  OpBuilder &b;
  DenseMap<Value, Value> map;
};

/// Whether `op` is a scalar arith, math or complex op the rules know
/// (differentiable, or one that carries no gradient such as a comparison).
bool hasScalarAdjoint(Operation *op);

/// Adds to `cts` the cotangents of `op`'s operands from those of its
/// results (a scalar arith / math / complex op); fails for an op the rules
/// do not cover.
LogicalResult buildScalarAdjoint(OpBuilder &b, Operation *op,
                                 ScalarCotangents &cts);

/// The reverse pass over `ops` (scalar ops in program order, cotangents of
/// some of their results already in `cts`): each op's rule, last op first;
/// ops no cotangent reaches are skipped. Fails for an op without a rule.
LogicalResult buildScalarAdjoints(OpBuilder &b, ArrayRef<Operation *> ops,
                                  ScalarCotangents &cts);

} // namespace mlir::recur

#endif // RECUR_LIB_TRANSFORMS_AUTODIFF_SCALARADJOINTS_H
