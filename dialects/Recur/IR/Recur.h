//===- Recur.h - recur dialect declarations ---------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_DIALECT_RECUR_IR_RECUR_H
#define RECUR_DIALECT_RECUR_IR_RECUR_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "Recur/IR/Adjoint.h"
#include "Recur/IR/RecurDialect.h.inc"
#include "Recur/IR/RecurEnums.h.inc"
#include "Recur/IR/RecurInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Recur/IR/RecurAttrs.h.inc"

#define GET_OP_CLASSES
#include "Recur/IR/RecurOps.h.inc"

namespace mlir::recur {

/// Gives `dialect` the patterns with which convert-to-llvm lowers the views
/// of buffers (recur.view_as_real, recur.view_as_complex): ComplexViews.cpp.
void addRecurToLLVMInterface(RecurDialect *dialect);

/// The unidirectional T5 bucket of `delta` (an index) as
/// `recur.window_attention` defines it: with exact = numBuckets / 2, a
/// distance n < exact is its own bucket; a larger one goes to exact +
/// (int)(log(n / exact) / log(maxDistance / exact) * (numBuckets - exact)),
/// clamped to the last bucket. The logs are evaluated in f64 (whatever the
/// element type, so the bucket boundaries do not move with it) at compile
/// time: the result compares n with t5BucketThresholds.
Value buildT5Bucket(OpBuilder &b, Location loc, Value delta, int64_t numBuckets,
                    int64_t maxDistance);

/// The first distance of each log-spaced T5 bucket, numBuckets / 2 + 1 up to
/// the last: n goes to bucket numBuckets / 2 + #{thresholds <= n} when n >=
/// numBuckets / 2. Requires an even numBuckets >= 2 and maxDistance >
/// numBuckets / 2 (the window_attention verifier's conditions).
SmallVector<int64_t> t5BucketThresholds(int64_t numBuckets,
                                        int64_t maxDistance);

/// `op` as the linalg ops its adjoint differentiates, over queries `q`,
/// keys `k`, values `v` and key padding `padding` (null when `op` has none)
/// that are `op`'s own or one leading index of them (`leading` dims before
/// the query/key one): the scores `scale q k^T` (a contraction), the keys
/// the mask hides at -inf, the safe softmax of each row and the product
/// with `v` (a contraction). Fails, creating nothing, where the scale is
/// not known (no `scale` and a dynamic head width). The scores are
/// materialized: `[..., Tq, Tk]`.
FailureOr<Value> decomposeAttention(OpBuilder &b, Location loc, AttentionOp op,
                                    Value q, Value k, Value v, Value padding,
                                    int64_t leading);

} // namespace mlir::recur

#endif // RECUR_DIALECT_RECUR_IR_RECUR_H
