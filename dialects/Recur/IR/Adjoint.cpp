//===- Adjoint.cpp - AdjointOpInterface and its helpers -------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

using namespace mlir;
using namespace mlir::recur;

#include "Recur/IR/RecurInterfaces.cpp.inc"

AdjointBuilder::~AdjointBuilder() = default;

Value AdjointBuilder::getCotangentOrZeros(OpBuilder &b, Location loc,
                                          Value value) {
  if (Value cotangent = getCotangent(value))
    return cotangent;
  return zerosLike(b, loc, value);
}

bool mlir::recur::isDifferentiableType(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return isa<FloatType, ComplexType>(type);
}

Value mlir::recur::zeroScalar(OpBuilder &b, Location loc, Type type) {
  if (auto complex = dyn_cast<ComplexType>(type)) {
    Attribute zero = b.getZeroAttr(complex.getElementType());
    return complex::ConstantOp::create(b, loc, complex,
                                       b.getArrayAttr({zero, zero}));
  }
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

Value mlir::recur::zerosLike(OpBuilder &b, Location loc, Value like) {
  auto type = dyn_cast<RankedTensorType>(like.getType());
  if (!type)
    return zeroScalar(b, loc, like.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  Value zero = zeroScalar(b, loc, type.getElementType());
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

Value mlir::recur::elementwise(
    OpBuilder &b, Location loc, ValueRange inputs, Type elementType,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto shapeOf = cast<RankedTensorType>(inputs.front().getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, inputs[0]);
  Value init = tensor::EmptyOp::create(b, loc, sizes, elementType);
  int64_t rank = shapeOf.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps(inputs.size() + 1, identity);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value result = body(nb, nl, args.drop_back());
        linalg::YieldOp::create(nb, nl, result);
      });
  return generic.getResult(0);
}

Value mlir::recur::addScalars(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<ComplexType>(x.getType()))
    return complex::AddOp::create(b, loc, x, y);
  return arith::AddFOp::create(b, loc, x, y);
}

Value mlir::recur::addValues(OpBuilder &b, Location loc, Value x, Value y) {
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type)
    return addScalars(b, loc, x, y);
  return elementwise(b, loc, {x, y}, type.getElementType(),
                     [](OpBuilder &nb, Location nl, ValueRange args) {
                       return addScalars(nb, nl, args[0], args[1]);
                     });
}

AxisRange mlir::recur::rangeAlong(OpBuilder &b, Location loc, Value tensor,
                                  int64_t axis, OpFoldResult offset,
                                  OpFoldResult size) {
  int64_t rank = cast<RankedTensorType>(tensor.getType()).getRank();
  AxisRange range{SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
                  tensor::getMixedSizes(b, loc, tensor),
                  SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
  range.offsets[axis] = offset;
  range.sizes[axis] = size;
  return range;
}

Value mlir::recur::sliceAlong(OpBuilder &b, Location loc, Value tensor,
                              int64_t axis, OpFoldResult offset,
                              OpFoldResult size) {
  AxisRange r = rangeAlong(b, loc, tensor, axis, offset, size);
  return tensor::ExtractSliceOp::create(b, loc, tensor, r.offsets, r.sizes,
                                        r.strides);
}

Value mlir::recur::concatAlong(OpBuilder &b, Location loc, Value first,
                               Value second, int64_t axis) {
  auto type = cast<RankedTensorType>(first.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, first);
  OpFoldResult firstSize = sizes[axis];
  OpFoldResult secondSize = tensor::getMixedSize(b, loc, second, axis);
  std::optional<int64_t> a = getConstantIntValue(firstSize),
                         c = getConstantIntValue(secondSize);
  sizes[axis] =
      a && c
          ? OpFoldResult(b.getIndexAttr(*a + *c))
          : OpFoldResult(
                arith::AddIOp::create(
                    b, loc, getValueOrCreateConstantIndexOp(b, loc, firstSize),
                    getValueOrCreateConstantIndexOp(b, loc, secondSize))
                    .getResult());
  Value result = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  auto insert = [&](Value part, OpFoldResult offset) {
    AxisRange r = rangeAlong(b, loc, part, axis, offset,
                             tensor::getMixedSize(b, loc, part, axis));
    result = tensor::InsertSliceOp::create(b, loc, part, result, r.offsets,
                                           r.sizes, r.strides);
  };
  insert(first, b.getIndexAttr(0));
  insert(second, firstSize);
  return result;
}
