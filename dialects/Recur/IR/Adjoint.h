//===- Adjoint.h - what an op's adjoint sees of the backward pass -*- C++
//-*-===//
//
// Part of the Recur project.
//
// AdjointOpInterface::buildAdjoint reads the cotangents of an op's results
// and adds those of its operands through an AdjointBuilder, which the
// backward derivation (lib/Transforms/Autodiff) implements.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_DIALECT_RECUR_IR_ADJOINT_H
#define RECUR_DIALECT_RECUR_IR_ADJOINT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::recur {

class AdjointBuilder {
public:
  virtual ~AdjointBuilder();

  /// The cotangent accumulated so far for `value` (a result of the op being
  /// differentiated), or null when nothing flows into it (zero).
  virtual Value getCotangent(Value value) = 0;

  /// Adds `cotangent` (of the type of `value`) to what flows into `value`.
  virtual void addCotangent(Value value, Value cotangent) = 0;

  /// The memory policy: whether adjoints may keep every intermediate state
  /// of a recurrence (true), or keep states only at chunk boundaries and
  /// recompute inside each chunk (false, the default: the papers' kernels).
  virtual bool keepsAllStates() const { return false; }

  /// The cotangent of `value`, zeros when none flows into it.
  Value getCotangentOrZeros(OpBuilder &b, Location loc, Value value);

  /// For region ops: re-runs the ops of `body` at `b` with its arguments
  /// bound to `args`, then differentiates them given the cotangents of the
  /// values its terminator yields (`yielded`, null: zero). Sets `argCts` to
  /// the cotangents of the arguments and `capturedCts` to those of the
  /// values in `captured` (defined outside the body and used in it); null
  /// where none flows.
  virtual LogicalResult
  differentiateBody(OpBuilder &b, Block &body, ValueRange args,
                    ArrayRef<Value> yielded, ArrayRef<Value> captured,
                    SmallVectorImpl<Value> &argCts,
                    SmallVectorImpl<Value> &capturedCts) = 0;
};

/// A zero of scalar `type` (float or complex).
Value zeroScalar(OpBuilder &b, Location loc, Type type);

/// A tensor of zeros shaped like `like` (its dynamic sizes read from it), or
/// a zero scalar when `like` is a scalar.
Value zerosLike(OpBuilder &b, Location loc, Value like);

/// A linalg.generic over `inputs` (tensors of one shape) whose body is
/// `body(scalars)`, producing a tensor of `elementType` of that shape.
Value elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                  Type elementType,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// x + y for float or complex scalars, or tensors of them.
Value addScalars(OpBuilder &b, Location loc, Value x, Value y);
Value addValues(OpBuilder &b, Location loc, Value x, Value y);

/// The offsets, sizes and unit strides of the whole of `tensor` but
/// positions [offset, offset + size) of `axis`.
struct AxisRange {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
AxisRange rangeAlong(OpBuilder &b, Location loc, Value tensor, int64_t axis,
                     OpFoldResult offset, OpFoldResult size);

/// `size` positions of `tensor` from `offset` along `axis`.
Value sliceAlong(OpBuilder &b, Location loc, Value tensor, int64_t axis,
                 OpFoldResult offset, OpFoldResult size);

/// `first` then `second` along `axis` (the other sizes equal).
Value concatAlong(OpBuilder &b, Location loc, Value first, Value second,
                  int64_t axis);

/// Whether values of `type` (or of its elements) carry gradients: floats and
/// complex numbers.
bool isDifferentiableType(Type type);

} // namespace mlir::recur

#endif // RECUR_DIALECT_RECUR_IR_ADJOINT_H
