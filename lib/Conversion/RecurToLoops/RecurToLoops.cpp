//===- RecurToLoops.cpp - scalar reference lowering of recur ops ----------===//
//
// Part of the Recur project.
//
// Lowers recur ops to sequential scf.for nests over tensors, one element at a
// time. This is the executable statement of each op's semantics: the
// optimized lowerings are tested against the same equations.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::recur {
#define GEN_PASS_DEF_CONVERTRECURTOLOOPS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The sizes of every dimension of `tensor`, constants where static.
SmallVector<Value> dimSizes(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<Value> sizes;
  for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
    int64_t size = type.getDimSize(i);
    sizes.push_back(
        ShapedType::isDynamic(size)
            ? tensor::DimOp::create(b, loc, tensor, i).getResult()
            : arith::ConstantIndexOp::create(b, loc, size).getResult());
  }
  return sizes;
}

/// An uninitialized tensor of `type` whose dynamic sizes come from `sizes`.
Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type,
                ArrayRef<Value> sizes) {
  SmallVector<Value> dynamic;
  for (auto [d, size] : llvm::zip_equal(type.getShape(), sizes))
    if (ShapedType::isDynamic(d))
      dynamic.push_back(size);
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType(), dynamic);
}

Value zeroOf(OpBuilder &b, Location loc, Type elem) {
  if (auto complex = dyn_cast<ComplexType>(elem)) {
    auto zero = FloatAttr::get(complex.getElementType(), 0.0);
    return complex::ConstantOp::create(b, loc, complex,
                                       b.getArrayAttr({zero, zero}));
  }
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, 0.0));
}

Value floatConst(OpBuilder &b, Location loc, Type elem, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, value));
}

Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<ComplexType>(x.getType()))
    return complex::MulOp::create(b, loc, x, y);
  return arith::MulFOp::create(b, loc, x, y);
}

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<ComplexType>(x.getType()))
    return complex::AddOp::create(b, loc, x, y);
  return arith::AddFOp::create(b, loc, x, y);
}

/// sigmoid(x) = 1 / (1 + exp(-x)).
Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConst(b, loc, x.getType(), 1.0);
  Value negX = arith::NegFOp::create(b, loc, x);
  Value e = math::ExpOp::create(b, loc, negX);
  Value denom = arith::AddFOp::create(b, loc, one, e);
  return arith::DivFOp::create(b, loc, one, denom);
}

/// `outer` with the time index inserted at `axis`.
SmallVector<Value> withTimeIndex(ValueRange outer, int64_t axis, Value t) {
  SmallVector<Value> idx(outer);
  idx.insert(idx.begin() + axis, t);
  return idx;
}

/// The position that step `t` of a scan of `length` steps visits.
Value stepPosition(OpBuilder &b, Location loc, Value t, Value length,
                   bool reverse) {
  if (!reverse)
    return t;
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value last = arith::SubIOp::create(b, loc, length, one);
  return arith::SubIOp::create(b, loc, last, t);
}

/// Builds the nest of loops over every dimension of `sizes` except `axis`
/// (all of them when `axis` is negative), threading `iterArgs`.
SmallVector<Value> buildParallelNest(
    OpBuilder &b, Location loc, ArrayRef<Value> sizes, int64_t axis,
    ValueRange iterArgs,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange,
                                    ValueRange)>
        body) {
  SmallVector<Value> ubs;
  for (auto [i, size] : llvm::enumerate(sizes))
    if (static_cast<int64_t>(i) != axis)
      ubs.push_back(size);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs(ubs.size(), zero), steps(ubs.size(), one);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, iterArgs,
      [&](OpBuilder &nb, Location nloc, ValueRange ivs, ValueRange args) {
        return scf::ValueVector(body(nb, nloc, ivs, args));
      });
  return SmallVector<Value>(nest.results);
}

//===----------------------------------------------------------------------===//
// recur.linear_scan
//===----------------------------------------------------------------------===//

struct LinearScanToLoops : OpRewritePattern<LinearScanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearScanOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto hType = cast<RankedTensorType>(op.getH().getType());
    auto lastType = cast<RankedTensorType>(op.getLast().getType());
    Type elem = hType.getElementType();
    int64_t axis = op.getAxisAttr().getInt();
    int64_t aRank = cast<RankedTensorType>(op.getA().getType()).getRank();
    bool promoteA = op.getA().getType() != op.getB().getType() &&
                    isa<ComplexType>(elem) &&
                    !isa<ComplexType>(getElementTypeOrSelf(op.getA()));

    SmallVector<Value> sizes = dimSizes(rewriter, loc, op.getB());
    SmallVector<Value> lastSizes(sizes);
    lastSizes.erase(lastSizes.begin() + axis);
    Value hInit = emptyLike(rewriter, loc, hType, sizes);
    Value lastInit = emptyLike(rewriter, loc, lastType, lastSizes);
    Value length = sizes[axis];

    SmallVector<Value> results = buildParallelNest(
        rewriter, loc, sizes, axis, {hInit, lastInit},
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange args) {
          Value carry0 = op.getInit()
                             ? tensor::ExtractOp::create(b, l, op.getInit(),
                                                         outer)
                                   .getResult()
                             : zeroOf(b, l, elem);
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          auto time = scf::ForOp::create(
              b, l, zero, length, one, ValueRange{args[0], carry0},
              [&](OpBuilder &tb, Location tl, Value t, ValueRange iter) {
                Value pos = stepPosition(tb, tl, t, length, op.getReverse());
                SmallVector<Value> idx = withTimeIndex(outer, axis, pos);
                Value at = tensor::ExtractOp::create(
                    tb, tl, op.getA(), ArrayRef<Value>(idx).take_front(aRank));
                if (promoteA)
                  at = complex::CreateOp::create(
                      tb, tl, elem, at, zeroOf(tb, tl, at.getType()));
                Value bt = tensor::ExtractOp::create(tb, tl, op.getB(), idx);
                Value h = add(tb, tl, mul(tb, tl, at, iter[1]), bt);
                Value hs = tensor::InsertOp::create(tb, tl, h, iter[0], idx);
                scf::YieldOp::create(tb, tl, ValueRange{hs, h});
              });
          Value last = tensor::InsertOp::create(b, l, time.getResult(1),
                                                args[1], outer);
          return SmallVector<Value>{time.getResult(0), last};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.scan
//===----------------------------------------------------------------------===//

struct ScanToLoops : OpRewritePattern<ScanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScanOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    size_t n = op.getInputs().size();
    int64_t axis = op.getAxisAttr().getInt();
    bool hasInit = !op.getInits().empty();
    Block &combine = op.getCombine().front();

    SmallVector<Value> sizes =
        dimSizes(rewriter, loc, op.getInputs().front());
    Value length = sizes[axis];
    SmallVector<Value> outInits;
    for (Value input : op.getInputs())
      outInits.push_back(emptyLike(
          rewriter, loc, cast<RankedTensorType>(input.getType()), sizes));

    // Applies the combine region to (carry, x) at the builder's point.
    auto applyCombine = [&](OpBuilder &b, ValueRange carry, ValueRange x) {
      IRMapping map;
      for (size_t i = 0; i < n; ++i) {
        map.map(combine.getArgument(i), carry[i]);
        map.map(combine.getArgument(n + i), x[i]);
      }
      for (Operation &inner : combine.without_terminator())
        b.clone(inner, map);
      SmallVector<Value> out;
      for (Value v : cast<YieldOp>(combine.getTerminator()).getValues())
        out.push_back(map.lookupOrDefault(v));
      return out;
    };

    SmallVector<Value> results = buildParallelNest(
        rewriter, loc, sizes, axis, outInits,
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange outs) {
          SmallVector<Value> iterInit(outs);
          for (size_t i = 0; i < n; ++i) {
            Type elem = getElementTypeOrSelf(op.getInputs()[i]);
            // Without an init the first step takes x_0 as it is, so the
            // starting carry is never read.
            iterInit.push_back(hasInit ? tensor::ExtractOp::create(
                                             b, l, op.getInits()[i], outer)
                                             .getResult()
                                       : zeroOf(b, l, elem));
          }
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          auto time = scf::ForOp::create(
              b, l, zero, length, one, iterInit,
              [&](OpBuilder &tb, Location tl, Value t, ValueRange iter) {
                Value pos = stepPosition(tb, tl, t, length, op.getReverse());
                SmallVector<Value> idx = withTimeIndex(outer, axis, pos);
                SmallVector<Value> x;
                for (Value input : op.getInputs())
                  x.push_back(tensor::ExtractOp::create(tb, tl, input, idx));
                ValueRange carry = iter.drop_front(n);
                SmallVector<Value> next;
                if (hasInit) {
                  next = applyCombine(tb, carry, x);
                } else {
                  Value first = arith::CmpIOp::create(
                      tb, tl, arith::CmpIPredicate::eq, t, zero);
                  auto branch = scf::IfOp::create(tb, tl, ValueRange(x).getTypes(),
                                                  first, /*withElse=*/true);
                  OpBuilder thenB = branch.getThenBodyBuilder();
                  scf::YieldOp::create(thenB, tl, x);
                  OpBuilder elseB = branch.getElseBodyBuilder();
                  scf::YieldOp::create(elseB, tl, applyCombine(elseB, carry, x));
                  next = SmallVector<Value>(branch.getResults());
                }
                SmallVector<Value> yields;
                for (size_t i = 0; i < n; ++i)
                  yields.push_back(
                      tensor::InsertOp::create(tb, tl, next[i], iter[i], idx));
                llvm::append_range(yields, next);
                scf::YieldOp::create(tb, tl, yields);
              });
          return SmallVector<Value>(time.getResults().take_front(n));
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.gate
//===----------------------------------------------------------------------===//

/// Reads gate operand `gate` at the state index `idx`, broadcasting its
/// dimensions of size one (static or found at run time).
Value extractBroadcast(OpBuilder &b, Location loc, Value gate,
                       ValueRange idx) {
  auto type = cast<RankedTensorType>(gate.getType());
  int64_t offset = static_cast<int64_t>(idx.size()) - type.getRank();
  SmallVector<Value> gateIdx;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t j = 0, e = type.getRank(); j < e; ++j) {
    int64_t size = type.getDimSize(j);
    if (size == 1) {
      gateIdx.push_back(zero);
    } else if (ShapedType::isDynamic(size)) {
      Value dim = tensor::DimOp::create(b, loc, gate, j);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value isOne =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim, one);
      gateIdx.push_back(
          arith::SelectOp::create(b, loc, isOne, zero, idx[offset + j]));
    } else {
      gateIdx.push_back(idx[offset + j]);
    }
  }
  return tensor::ExtractOp::create(b, loc, gate, gateIdx);
}

struct GateToLoops : OpRewritePattern<GateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType();
    SmallVector<Value> sizes = dimSizes(rewriter, loc, op.getState());
    Value init = emptyLike(rewriter, loc, type, sizes);

    SmallVector<Value> results = buildParallelNest(
        rewriter, loc, sizes, /*axis=*/-1, {init},
        [&](OpBuilder &b, Location l, ValueRange idx, ValueRange args) {
          Value c = tensor::ExtractOp::create(b, l, op.getState(), idx);
          Value z = tensor::ExtractOp::create(b, l, op.getCandidate(), idx);
          SmallVector<Value> g;
          for (Value gate : op.getGates())
            g.push_back(extractBroadcast(b, l, gate, idx));
          Value one = floatConst(b, l, elem, 1.0);
          Value next;
          switch (op.getKind()) {
          case GateKind::Fixed: {
            // c' = c * g + z * (1 - g), g = sigmoid(b_g)
            Value gv = sigmoid(b, l, g[0]);
            Value keep = arith::MulFOp::create(b, l, c, gv);
            Value rest = arith::SubFOp::create(b, l, one, gv);
            Value write = arith::MulFOp::create(b, l, z, rest);
            next = arith::AddFOp::create(b, l, keep, write);
            break;
          }
          case GateKind::Lstm: {
            // c' = c * sigmoid(f + forget_bias) + z * sigmoid(i + input_bias)
            Value ib = floatConst(b, l, elem, op.getInputBiasOrDefault());
            Value fb = floatConst(b, l, elem, op.getForgetBiasOrDefault());
            Value i = sigmoid(b, l, arith::AddFOp::create(b, l, g[0], ib));
            Value f = sigmoid(b, l, arith::AddFOp::create(b, l, g[1], fb));
            Value keep = arith::MulFOp::create(b, l, c, f);
            Value write = arith::MulFOp::create(b, l, z, i);
            next = arith::AddFOp::create(b, l, keep, write);
            break;
          }
          case GateKind::Update: {
            // c' = u * z + (1 - u) * c, u = sigmoid(p)
            Value u = sigmoid(b, l, g[0]);
            Value write = arith::MulFOp::create(b, l, u, z);
            Value rest = arith::SubFOp::create(b, l, one, u);
            Value keep = arith::MulFOp::create(b, l, rest, c);
            next = arith::AddFOp::create(b, l, write, keep);
            break;
          }
          }
          return SmallVector<Value>{
              tensor::InsertOp::create(b, l, next, args[0], idx)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.stop_gradient
//===----------------------------------------------------------------------===//

struct StopGradientToLoops : OpRewritePattern<StopGradientOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(StopGradientOp op,
                                PatternRewriter &rewriter) const override {
    // The forward value is the operand; the gradient rule lives in autodiff.
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct ConvertRecurToLoopsPass
    : recur::impl::ConvertRecurToLoopsBase<ConvertRecurToLoopsPass> {
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addIllegalDialect<RecurDialect>();
    target.addLegalDialect<arith::ArithDialect, complex::ComplexDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<RecurDialect>();
    RewritePatternSet patterns(&getContext());
    populateRecurToLoopsPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::recur::populateRecurToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearScanToLoops, ScanToLoops, GateToLoops,
               StopGradientToLoops>(patterns.getContext());
}
