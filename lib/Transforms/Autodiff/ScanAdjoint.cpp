//===- ScanAdjoint.cpp - the adjoint of recur.scan ------------------------===//
//
// Part of the Recur project.
//
// recur.scan applies a user operator, so its adjoint needs the reverse pass
// of the operator's scalar body (ScalarAdjoints). It lives here, with the
// scalar rules, as an external model of the op.
//
// With c_t = c_{t-1} (.) x_t in scan order (t' the step after t) and dc_t
// the cotangent of the result c_t, the whole cotangent of c_t is
//
//   lambda_t = dc_t + J_acc(c_t, x_t')^T lambda_t'      (the last: dc_t)
//
// a scan in the opposite order of 3N tensors (c_t, x_t', dc_t) whose
// combine runs the operator's reverse pass with respect to its accumulated
// operand; it is not associative, so it runs sequentially. Then
//
//   dx_t  = J_new(c_t_before, x_t)^T lambda_t      (dx_first = lambda_first
//                                                  without init: c = x)
//   dinit = J_acc(init, x_first)^T lambda_first
//
// elementwise, through the same reverse pass.
//
//===----------------------------------------------------------------------===//

#include "ScalarAdjoints.h"

#include "Recur/IR/Recur.h"
#include "recur/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::recur;

namespace {

/// Builds at `b` the operator `combine` applied to (`acc`, `next`) and its
/// reverse pass for the cotangents `cts` of what it yields; sets `accCts`
/// and `nextCts` to the cotangents of its operands (zeros where none
/// flows).
LogicalResult combineVjp(OpBuilder &b, Location loc, Block &combine,
                         ValueRange acc, ValueRange next, ValueRange cts,
                         SmallVectorImpl<Value> &accCts,
                         SmallVectorImpl<Value> &nextCts) {
  size_t n = acc.size();
  IRMapping mapping;
  for (size_t k = 0; k < n; ++k) {
    mapping.map(combine.getArgument(k), acc[k]);
    mapping.map(combine.getArgument(n + k), next[k]);
  }
  SmallVector<Operation *> cloned;
  for (Operation &op : combine.without_terminator())
    cloned.push_back(b.clone(op, mapping));
  ScalarCotangents scalarCts(b);
  for (auto [yielded, ct] :
       llvm::zip(combine.getTerminator()->getOperands(), cts))
    scalarCts.add(mapping.lookupOrDefault(yielded), ct);
  if (failed(buildScalarAdjoints(b, cloned, scalarCts)))
    return failure();
  auto ctOf = [&](Value v) {
    Value ct = scalarCts.get(v);
    return ct ? ct : zeroScalar(b, loc, v.getType());
  };
  for (size_t k = 0; k < n; ++k) {
    accCts.push_back(ctOf(acc[k]));
    nextCts.push_back(ctOf(next[k]));
  }
  return success();
}

/// A linalg.generic over the shape of `inputs[0]` (all of one shape,
/// identity maps) with one result per element `body` returns, of the types
/// of `resultTypes`' elements.
linalg::GenericOp
elementwiseN(OpBuilder &b, Location loc, ValueRange inputs,
             TypeRange elementTypes,
             function_ref<LogicalResult(OpBuilder &, Location, ValueRange,
                                        SmallVectorImpl<Value> &)>
                 body,
             LogicalResult &status) {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, inputs[0]);
  SmallVector<Value> inits;
  SmallVector<Type> resultTypes;
  for (Type elem : elementTypes) {
    inits.push_back(tensor::EmptyOp::create(b, loc, sizes, elem));
    resultTypes.push_back(inits.back().getType());
  }
  SmallVector<AffineMap> maps(inputs.size() + inits.size(),
                              b.getMultiDimIdentityMap(rank));
  return linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> results;
        if (failed(body(nb, nl, args.take_front(inputs.size()), results))) {
          status = failure();
          results.clear();
          for (Type elem : elementTypes)
            results.push_back(zeroScalar(nb, nl, elem));
        }
        linalg::YieldOp::create(nb, nl, results);
      });
}

/// Position `pos` of `tensor` along `axis`, the axis dropped (the shape of
/// a scan's init).
Value positionAlong(OpBuilder &b, Location loc, Value tensor, int64_t axis,
                    OpFoldResult pos, Type type) {
  AxisRange r = rangeAlong(b, loc, tensor, axis, pos, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, cast<RankedTensorType>(type),
                                        tensor, r.offsets, r.sizes, r.strides);
}

struct ScanAdjoint : AdjointOpInterface::ExternalModel<ScanAdjoint, ScanOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             AdjointBuilder &adjoint) const {
    auto scan = cast<ScanOp>(op);
    if (llvm::none_of(scan.getResults(),
                      [&](Value r) { return adjoint.getCotangent(r); }))
      return success();
    Location loc = scan.getLoc();
    SmallVector<Value> inputs(scan.getInputs()), inits(scan.getInits());
    SmallVector<Value> results(scan.getResults());
    for (Value in : inputs)
      if (!isDifferentiableType(in.getType()))
        return scan.emitError("cannot differentiate a scan of ")
               << in.getType() << " (only float and complex tensors)";
    size_t n = inputs.size();
    int64_t axis = scan.getAxis();
    bool reverse = scan.getReverse();
    Block &combine = scan.getCombine().front();
    SmallVector<Type> elems;
    for (Value in : inputs)
      elems.push_back(cast<RankedTensorType>(in.getType()).getElementType());

    Value steps = tensor::DimOp::create(b, loc, inputs[0], axis);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value rest = arith::SubIOp::create(b, loc, steps, c1);
    OpFoldResult zero = b.getIndexAttr(0);
    // Each position gets its neighbour at the higher index (`fromHigher`)
    // or the lower one; the position left over keeps its own value. (Cast
    // back to the tensor's type: the pieces' sizes are computed.)
    auto shift = [&](Value t, bool fromHigher) -> Value {
      Value shifted =
          fromHigher
              ? concatAlong(b, loc, sliceAlong(b, loc, t, axis, c1, rest),
                            sliceAlong(b, loc, t, axis, rest, c1), axis)
              : concatAlong(b, loc, sliceAlong(b, loc, t, axis, zero, c1),
                            sliceAlong(b, loc, t, axis, zero, rest), axis);
      if (shifted.getType() == t.getType())
        return shifted;
      return tensor::CastOp::create(b, loc, t.getType(), shifted);
    };
    // The value one step later in scan order, and one step earlier.
    auto shiftAfter = [&](Value t) { return shift(t, !reverse); };
    auto shiftBefore = [&](Value t) { return shift(t, reverse); };
    OpFoldResult first = reverse ? OpFoldResult(rest) : zero;

    // 1. lambda by a scan in the opposite order over (c_t, x_t', dc_t).
    SmallVector<Value> elements(results);
    for (Value in : inputs)
      elements.push_back(shiftAfter(in));
    for (Value r : results)
      elements.push_back(adjoint.getCotangentOrZeros(b, loc, r));
    SmallVector<Type> scalarTypes;
    for (int copy = 0; copy < 3; ++copy)
      llvm::append_range(scalarTypes, elems);
    auto lambdaScan = ScanOp::create(
        b, loc, elements, ValueRange{}, b.getI64IntegerAttr(axis),
        reverse ? UnitAttr() : b.getUnitAttr(), UnitAttr(), ArrayAttr());
    Block *body = b.createBlock(&lambdaScan.getCombine());
    for (Type t : scalarTypes)
      body->addArgument(t, loc);
    for (Type t : scalarTypes)
      body->addArgument(t, loc);
    LogicalResult status = success();
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(body);
      ValueRange accArgs = body->getArguments().take_front(3 * n);
      ValueRange newArgs = body->getArguments().drop_front(3 * n);
      SmallVector<Value> accCts, nextCts;
      if (failed(combineVjp(b, loc, combine, newArgs.take_front(n),
                            newArgs.slice(n, n), accArgs.slice(2 * n, n),
                            accCts, nextCts)))
        status = failure();
      SmallVector<Value> yielded(newArgs.take_front(2 * n));
      for (size_t k = 0; k < n; ++k)
        yielded.push_back(
            failed(status) ? newArgs[2 * n + k]
                           : addScalars(b, loc, newArgs[2 * n + k], accCts[k]));
      YieldOp::create(b, loc, yielded);
    }
    b.setInsertionPointAfter(lambdaScan);
    if (failed(status))
      return failure();
    SmallVector<Value> lambda(lambdaScan.getResults().drop_front(2 * n));

    // 2. dx_t through the operator's reverse pass at (c before t, x_t).
    SmallVector<Value> before;
    for (auto [k, r] : llvm::enumerate(results)) {
      Value shifted = shiftBefore(r);
      // At the first step the state before is the init, when there is one.
      if (!inits.empty()) {
        AxisRange range =
            rangeAlong(b, loc, shifted, axis, first, b.getIndexAttr(1));
        shifted = tensor::InsertSliceOp::create(b, loc, inits[k], shifted,
                                                range.offsets, range.sizes,
                                                range.strides);
      }
      before.push_back(shifted);
    }
    SmallVector<Value> dxInputs(before);
    llvm::append_range(dxInputs, inputs);
    llvm::append_range(dxInputs, lambda);
    Value firstV = getValueOrCreateConstantIndexOp(b, loc, first);
    bool hasInit = !inits.empty();
    linalg::GenericOp dx = elementwiseN(
        b, loc, dxInputs, elems,
        [&](OpBuilder &nb, Location nl, ValueRange args,
            SmallVectorImpl<Value> &out) {
          SmallVector<Value> accCts, nextCts;
          if (failed(combineVjp(nb, nl, combine, args.take_front(n),
                                args.slice(n, n), args.slice(2 * n, n), accCts,
                                nextCts)))
            return failure();
          if (hasInit) {
            out.assign(nextCts.begin(), nextCts.end());
            return success();
          }
          // Without init the first result is x itself: dx = lambda there.
          Value pos = linalg::IndexOp::create(nb, nl, axis);
          Value isFirst = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::eq, pos, firstV);
          for (size_t k = 0; k < n; ++k)
            out.push_back(arith::SelectOp::create(nb, nl, isFirst,
                                                  args[2 * n + k], nextCts[k]));
          return success();
        },
        status);
    if (failed(status))
      return failure();
    for (auto [k, in] : llvm::enumerate(inputs))
      adjoint.addCotangent(in, dx.getResult(k));

    // 3. dinit through the reverse pass at (init, x_first).
    if (!hasInit)
      return success();
    SmallVector<Value> initInputs(inits);
    for (auto [k, in] : llvm::enumerate(inputs))
      initInputs.push_back(
          positionAlong(b, loc, in, axis, first, inits[k].getType()));
    for (auto [k, l] : llvm::enumerate(lambda))
      initInputs.push_back(
          positionAlong(b, loc, l, axis, first, inits[k].getType()));
    linalg::GenericOp dinit = elementwiseN(
        b, loc, initInputs, elems,
        [&](OpBuilder &nb, Location nl, ValueRange args,
            SmallVectorImpl<Value> &out) {
          SmallVector<Value> nextCts;
          return combineVjp(nb, nl, combine, args.take_front(n),
                            args.slice(n, n), args.slice(2 * n, n), out,
                            nextCts);
        },
        status);
    if (failed(status))
      return failure();
    for (auto [k, init] : llvm::enumerate(inits))
      adjoint.addCotangent(init, dinit.getResult(k));
    return success();
  }
};

} // namespace

void mlir::recur::registerScanAdjointModel(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, RecurDialect *) {
    ScanOp::attachInterface<ScanAdjoint>(*ctx);
  });
}
