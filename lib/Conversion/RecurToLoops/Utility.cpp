//===- Utility.cpp - helpers of the scalar reference lowering -------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

using namespace mlir;
using namespace mlir::recur;

//===----------------------------------------------------------------------===//
// Sizes and tensors
//===----------------------------------------------------------------------===//

Value loops::dimSize(OpBuilder &b, Location loc, Value tensor, int64_t dim) {
  int64_t size = cast<RankedTensorType>(tensor.getType()).getDimSize(dim);
  if (ShapedType::isDynamic(size))
    return tensor::DimOp::create(b, loc, tensor, dim);
  return indexConst(b, loc, size);
}

SmallVector<Value> loops::dimSizes(OpBuilder &b, Location loc, Value tensor) {
  SmallVector<Value> sizes;
  for (int64_t i = 0, e = cast<RankedTensorType>(tensor.getType()).getRank();
       i < e; ++i)
    sizes.push_back(dimSize(b, loc, tensor, i));
  return sizes;
}

/// The entries of `sizes` (one per dimension of `type`, or none when `type`
/// is static) for its dynamic dimensions.
static SmallVector<Value> dynamicSizes(RankedTensorType type,
                                       ArrayRef<Value> sizes) {
  SmallVector<Value> dynamic;
  if (type.hasStaticShape())
    return dynamic;
  assert(static_cast<int64_t>(sizes.size()) == type.getRank() &&
         "one size per dimension of a dynamic type");
  for (auto [d, size] : llvm::zip_equal(type.getShape(), sizes))
    if (ShapedType::isDynamic(d))
      dynamic.push_back(size);
  return dynamic;
}

Value loops::emptyLike(OpBuilder &b, Location loc, RankedTensorType type,
                       ArrayRef<Value> sizes) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dynamicSizes(type, sizes));
}

Value loops::privateScratch(OpBuilder &b, Location loc, RankedTensorType type,
                            ArrayRef<Value> sizes) {
  return bufferization::AllocTensorOp::create(b, loc, type,
                                              dynamicSizes(type, sizes));
}

SmallVector<Value> loops::fmaBlock(OpBuilder &b, Location loc, Value from,
                                   Value n, ValueRange init, int64_t rows,
                                   int64_t cols, VectorFn x, VectorFn y) {
  return buildLoop(
      b, loc, from, n, init,
      [&](OpBuilder &kb, Location kl, ValueRange k, ValueRange acc) {
        SmallVector<Value> xs, ys, out;
        for (int64_t i = 0; i < rows; ++i)
          xs.push_back(x(kb, kl, k[0], i));
        for (int64_t c = 0; c < cols; ++c)
          ys.push_back(y(kb, kl, k[0], c));
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t c = 0; c < cols; ++c)
            out.push_back(
                vector::FMAOp::create(kb, kl, xs[i], ys[c], acc[i * cols + c]));
        return out;
      });
}

bool loops::dependsOnIv(Value value, scf::ForOp loop) {
  if (value == loop.getInductionVar())
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || !loop->isProperAncestor(def))
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value v) { return dependsOnIv(v, loop); });
}

std::optional<int64_t> loops::elementBytes(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type)) {
    std::optional<int64_t> part = elementBytes(complex.getElementType());
    return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
  }
  if (isa<IndexType>(type))
    return 8;
  if (type.isIntOrFloat())
    return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
  return std::nullopt;
}

SmallVector<Value> loops::concatIndices(ValueRange a, ValueRange b) {
  SmallVector<Value> idx(a);
  llvm::append_range(idx, b);
  return idx;
}

Value loops::extractAt(OpBuilder &b, Location loc, Value tensor,
                       ValueRange idx) {
  return tensor::ExtractOp::create(b, loc, tensor, idx);
}

Value loops::insertAt(OpBuilder &b, Location loc, Value value, Value tensor,
                      ValueRange idx) {
  return tensor::InsertOp::create(b, loc, value, tensor, idx);
}

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

Value loops::indexConst(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value loops::floatConst(OpBuilder &b, Location loc, Type elem, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, value));
}

Value loops::zeroOf(OpBuilder &b, Location loc, Type elem) {
  if (auto complex = dyn_cast<ComplexType>(elem)) {
    auto zero = FloatAttr::get(complex.getElementType(), 0.0);
    return complex::ConstantOp::create(b, loc, complex,
                                       b.getArrayAttr({zero, zero}));
  }
  return floatConst(b, loc, elem, 0.0);
}

Value loops::mul(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<ComplexType>(x.getType()))
    return complex::MulOp::create(b, loc, x, y);
  return arith::MulFOp::create(b, loc, x, y);
}

Value loops::add(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<ComplexType>(x.getType()))
    return complex::AddOp::create(b, loc, x, y);
  return arith::AddFOp::create(b, loc, x, y);
}

Value loops::sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConst(b, loc, x.getType(), 1.0);
  Value negX = arith::NegFOp::create(b, loc, x);
  Value e = math::ExpOp::create(b, loc, negX);
  Value denom = arith::AddFOp::create(b, loc, one, e);
  return arith::DivFOp::create(b, loc, one, denom);
}

Value loops::dotProduct(OpBuilder &b, Location loc, Type elem, Value n,
                        IndexFn x, IndexFn y) {
  Value zero = indexConst(b, loc, 0);
  return buildLoop(
      b, loc, zero, n, zeroOf(b, loc, elem),
      [&](OpBuilder &eb, Location l, ValueRange e, ValueRange acc) {
        Value prod =
            arith::MulFOp::create(eb, l, x(eb, l, e[0]), y(eb, l, e[0]));
        return SmallVector<Value>{arith::AddFOp::create(eb, l, acc[0], prod)};
      })[0];
}

Value loops::indexToFloat(OpBuilder &b, Location loc, Value x, Type elem) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), x);
  return arith::SIToFPOp::create(b, loc, elem, i64);
}

Value loops::attentionScale(OpBuilder &b, Location loc, Type elem,
                            std::optional<APFloat> scale, Value d) {
  if (scale)
    return floatConst(b, loc, elem, scale->convertToDouble());
  if (std::optional<int64_t> width = getConstantIntValue(d))
    return floatConst(b, loc, elem,
                      1.0 / std::sqrt(static_cast<double>(*width)));
  Value root = math::SqrtOp::create(b, loc, indexToFloat(b, loc, d, elem));
  return arith::DivFOp::create(b, loc, floatConst(b, loc, elem, 1.0), root);
}

//===----------------------------------------------------------------------===//
// Loops and regions
//===----------------------------------------------------------------------===//

SmallVector<Value> loops::buildLoop(OpBuilder &b, Location loc, Value lb,
                                    Value ub, ValueRange iterArgs,
                                    LoopBody body) {
  Value one = indexConst(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, one, iterArgs,
      [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
        scf::YieldOp::create(nb, l, body(nb, l, iv, args));
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> loops::buildBlockedLoop(OpBuilder &b, Location loc, Value n,
                                           int64_t block, ValueRange iterArgs,
                                           BlockBody body) {
  Value size = indexConst(b, loc, block);
  Value blocks = arith::DivUIOp::create(b, loc, n, size);
  SmallVector<Value> carried =
      buildLoop(b, loc, indexConst(b, loc, 0), blocks, iterArgs,
                [&](OpBuilder &kb, Location kl, ValueRange k, ValueRange args) {
                  Value first = arith::MulIOp::create(kb, kl, k[0], size);
                  SmallVector<Value> indices{first};
                  for (int64_t i = 1; i < block; ++i)
                    indices.push_back(arith::AddIOp::create(
                        kb, kl, first, indexConst(kb, kl, i)));
                  return body(kb, kl, indices, args);
                });
  return buildLoop(b, loc, arith::MulIOp::create(b, loc, blocks, size), n,
                   carried,
                   [&](OpBuilder &ib, Location il, ValueRange i,
                       ValueRange args) { return body(ib, il, {i[0]}, args); });
}

SmallVector<Value> loops::buildNest(OpBuilder &b, Location loc, ValueRange ubs,
                                    ValueRange iterArgs, LoopBody body) {
  Value zero = indexConst(b, loc, 0);
  Value one = indexConst(b, loc, 1);
  SmallVector<Value> lbs(ubs.size(), zero), steps(ubs.size(), one);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, iterArgs,
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
        return scf::ValueVector(body(nb, l, ivs, args));
      });
  for (scf::ForOp loop : nest.loops)
    loop->setAttr(kParallelAttrName, b.getUnitAttr());
  return SmallVector<Value>(nest.results);
}

SmallVector<Value> loops::buildNestExcept(OpBuilder &b, Location loc,
                                          ArrayRef<Value> sizes, int64_t axis,
                                          ValueRange iterArgs, LoopBody body) {
  SmallVector<Value> ubs;
  for (auto [i, size] : llvm::enumerate(sizes))
    if (static_cast<int64_t>(i) != axis)
      ubs.push_back(size);
  return buildNest(b, loc, ubs, iterArgs, body);
}

Value loops::updateRow(
    OpBuilder &b, Location loc, Value tensor, ValueRange prefix, Value n,
    function_ref<Value(OpBuilder &, Location, Value j, Value old)> update) {
  Value zero = indexConst(b, loc, 0);
  return buildLoop(
      b, loc, zero, n, tensor,
      [&](OpBuilder &jb, Location l, ValueRange j, ValueRange row) {
        SmallVector<Value> idx = concatIndices(prefix, j);
        Value old = extractAt(jb, l, row[0], idx);
        Value next = update(jb, l, j[0], old);
        return SmallVector<Value>{insertAt(jb, l, next, row[0], idx)};
      })[0];
}

Value loops::fillRow(OpBuilder &b, Location loc, Value tensor,
                     ValueRange prefix, Value n, IndexFn value) {
  Value zero = indexConst(b, loc, 0);
  return buildLoop(
      b, loc, zero, n, tensor,
      [&](OpBuilder &jb, Location l, ValueRange j, ValueRange row) {
        return SmallVector<Value>{insertAt(jb, l, value(jb, l, j[0]), row[0],
                                           concatIndices(prefix, j))};
      })[0];
}

SmallVector<Value> loops::inlineBlock(OpBuilder &b, Block &block,
                                      ValueRange args) {
  IRMapping map;
  map.map(block.getArguments(), args);
  for (Operation &inner : block.without_terminator())
    b.clone(inner, map);
  SmallVector<Value> yielded;
  for (Value v : cast<YieldOp>(block.getTerminator()).getValues())
    yielded.push_back(map.lookupOrDefault(v));
  return yielded;
}

Value loops::inPlaceSource(Value value) {
  while (auto result = dyn_cast<OpResult>(value)) {
    unsigned i = result.getResultNumber();
    if (auto loop = dyn_cast<scf::ForOp>(result.getOwner())) {
      auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
      if (inPlaceSource(yield.getOperand(i)) != loop.getRegionIterArgs()[i])
        break;
      value = loop.getInitArgs()[i];
      continue;
    }
    if (auto branch = dyn_cast<scf::IfOp>(result.getOwner())) {
      if (branch.getElseRegion().empty())
        break;
      Value source = inPlaceSource(branch.thenYield().getOperand(i));
      if (source != inPlaceSource(branch.elseYield().getOperand(i)))
        break;
      value = source;
      continue;
    }
    // A round trip through a flat view (linear_scan's few-channels form):
    // the same buffer, the same shape.
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(result.getOwner())) {
      auto collapse = inPlaceSource(expand.getSrc())
                          .getDefiningOp<memref::CollapseShapeOp>();
      if (!collapse ||
          collapse.getReassociationIndices() !=
              expand.getReassociationIndices() ||
          collapse.getSrc().getType() != expand.getType())
        break;
      value = collapse.getSrc();
      continue;
    }
    // A round trip through the parts of complex numbers (linear_scan's
    // streaming form of complex channels): the same buffer, the same type.
    if (auto complex = dyn_cast<ViewAsComplexOp>(result.getOwner())) {
      auto real =
          inPlaceSource(complex.getSource()).getDefiningOp<ViewAsRealOp>();
      if (!real || real.getSource().getType() != complex.getType())
        break;
      value = real.getSource();
      continue;
    }
    break;
  }
  return value;
}
