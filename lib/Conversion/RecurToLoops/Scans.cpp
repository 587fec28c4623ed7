//===- Scans.cpp - reference loops of the recur scans ---------------------===//
//
// Part of the Recur project.
//
// recur.linear_scan, recur.scan and recur.gated_linear_attention as
// sequential loops over time, one element of the state at a time.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

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
  Value one = indexConst(b, loc, 1);
  Value last = arith::SubIOp::create(b, loc, length, one);
  return arith::SubIOp::create(b, loc, last, t);
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

    SmallVector<Value> results = buildNestExcept(
        rewriter, loc, sizes, axis, {hInit, lastInit},
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange args) {
          Value carry0 = op.getInit() ? extractAt(b, l, op.getInit(), outer)
                                      : zeroOf(b, l, elem);
          Value zero = indexConst(b, l, 0);
          SmallVector<Value> time = buildLoop(
              b, l, zero, length, ValueRange{args[0], carry0},
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange iter) {
                Value pos = stepPosition(tb, tl, t[0], length, op.getReverse());
                SmallVector<Value> idx = withTimeIndex(outer, axis, pos);
                Value at = extractAt(tb, tl, op.getA(),
                                     ArrayRef<Value>(idx).take_front(aRank));
                if (promoteA)
                  at = complex::CreateOp::create(tb, tl, elem, at,
                                                 zeroOf(tb, tl, at.getType()));
                Value bt = extractAt(tb, tl, op.getB(), idx);
                Value h = add(tb, tl, mul(tb, tl, at, iter[1]), bt);
                Value hs = insertAt(tb, tl, h, iter[0], idx);
                return SmallVector<Value>{hs, h};
              });
          Value last = insertAt(b, l, time[1], args[1], outer);
          return SmallVector<Value>{time[0], last};
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

    SmallVector<Value> sizes = dimSizes(rewriter, loc, op.getInputs().front());
    Value length = sizes[axis];
    SmallVector<Value> outInits;
    for (Value input : op.getInputs())
      outInits.push_back(emptyLike(
          rewriter, loc, cast<RankedTensorType>(input.getType()), sizes));

    // The combine region on (carry, x) at the builder's point.
    auto applyCombine = [&](OpBuilder &b, ValueRange carry, ValueRange x) {
      return inlineBlock(b, combine, concatIndices(carry, x));
    };

    SmallVector<Value> results = buildNestExcept(
        rewriter, loc, sizes, axis, outInits,
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange outs) {
          SmallVector<Value> iterInit(outs);
          for (size_t i = 0; i < n; ++i) {
            Type elem = getElementTypeOrSelf(op.getInputs()[i]);
            // Without an init the first step takes x_0 as it is, so the
            // starting carry is never read.
            iterInit.push_back(hasInit
                                   ? extractAt(b, l, op.getInits()[i], outer)
                                   : zeroOf(b, l, elem));
          }
          Value zero = indexConst(b, l, 0);
          SmallVector<Value> time = buildLoop(
              b, l, zero, length, iterInit,
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange iter) {
                Value pos = stepPosition(tb, tl, t[0], length, op.getReverse());
                SmallVector<Value> idx = withTimeIndex(outer, axis, pos);
                SmallVector<Value> x;
                for (Value input : op.getInputs())
                  x.push_back(extractAt(tb, tl, input, idx));
                ValueRange carry = iter.drop_front(n);
                SmallVector<Value> next;
                if (hasInit) {
                  next = applyCombine(tb, carry, x);
                } else {
                  Value first = arith::CmpIOp::create(
                      tb, tl, arith::CmpIPredicate::eq, t[0], zero);
                  auto branch =
                      scf::IfOp::create(tb, tl, ValueRange(x).getTypes(), first,
                                        /*withElse=*/true);
                  OpBuilder thenB = branch.getThenBodyBuilder();
                  scf::YieldOp::create(thenB, tl, x);
                  OpBuilder elseB = branch.getElseBodyBuilder();
                  scf::YieldOp::create(elseB, tl,
                                       applyCombine(elseB, carry, x));
                  next = SmallVector<Value>(branch.getResults());
                }
                SmallVector<Value> yields;
                for (size_t i = 0; i < n; ++i)
                  yields.push_back(insertAt(tb, tl, next[i], iter[i], idx));
                llvm::append_range(yields, next);
                return yields;
              });
          return SmallVector<Value>(ArrayRef<Value>(time).take_front(n));
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.gated_linear_attention
//===----------------------------------------------------------------------===//

/// The sizes of a gated_linear_attention problem.
struct GlaSizes {
  SmallVector<Value> lead; // batch, heads, ...
  Value steps, dk, dv;
};

/// Writes `S_{-1}` (the `init` operand, or zero) for the leading index `lead`
/// into `state` `[..., dk, dv]`.
Value writeInitialState(OpBuilder &b, Location loc, Value state,
                        ValueRange lead, const GlaSizes &sizes, Value init) {
  Type elem = cast<RankedTensorType>(state.getType()).getElementType();
  return buildNest(
      b, loc, {sizes.dk, sizes.dv}, state,
      [&](OpBuilder &nb, Location l, ValueRange ij, ValueRange args) {
        SmallVector<Value> idx = concatIndices(lead, ij);
        Value s0 = init ? extractAt(nb, l, init, idx) : zeroOf(nb, l, elem);
        return SmallVector<Value>{insertAt(nb, l, s0, args[0], idx)};
      })[0];
}

struct GatedLinearAttentionToLoops : OpRewritePattern<GatedLinearAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  // The `algorithm` and `chunk_size` attributes choose how an optimized
  // lowering evaluates the op; the result is the recurrence's either way, so
  // the reference always runs the recurrent loop.
  LogicalResult matchAndRewrite(GatedLinearAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto yType = cast<RankedTensorType>(op.getY().getType());
    auto stateType = cast<RankedTensorType>(op.getState().getType());
    Type elem = yType.getElementType();
    bool complexState = isa<ComplexType>(stateType.getElementType());
    int64_t rank = yType.getRank();

    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    GlaSizes sizes{SmallVector<Value>(ArrayRef<Value>(qSizes).drop_back(2)),
                   qSizes[rank - 2], qSizes[rank - 1], vSizes[rank - 1]};
    Value yInit = emptyLike(rewriter, loc, yType, vSizes);
    Value stateInit =
        emptyLike(rewriter, loc, stateType,
                  concatIndices(sizes.lead, ValueRange{sizes.dk, sizes.dv}));

    // For one leading index, every step t and output column j:
    //   S_t[i, j] = a_t[i] * S_{t-1}[i, j] + k_t[i] * v_t[j]   (i = 0 .. dk)
    //   y_t[j]    = sum_i q_t[i] * Re(S_t[i, j])
    // The state lives in the `state` result, updated in place.
    auto stepColumn = [&](OpBuilder &b, Location l, ValueRange lead, Value t,
                          Value j, Value y, Value state) {
      SmallVector<Value> vIdx = concatIndices(lead, ValueRange{t, j});
      Value vt = extractAt(b, l, op.getV(), vIdx);
      Value zero = indexConst(b, l, 0);
      SmallVector<Value> col = buildLoop(
          b, l, zero, sizes.dk, ValueRange{state, zeroOf(b, l, elem)},
          [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iter) {
            SmallVector<Value> kIdx = concatIndices(lead, ValueRange{t, i[0]});
            SmallVector<Value> sIdx = concatIndices(lead, ValueRange{i[0], j});
            Value at = extractAt(ib, il, op.getA(), kIdx);
            Value kt = extractAt(ib, il, op.getK(), kIdx);
            Value qt = extractAt(ib, il, op.getQ(), kIdx);
            Value kv = arith::MulFOp::create(ib, il, kt, vt);
            if (complexState)
              kv = complex::CreateOp::create(ib, il, stateType.getElementType(),
                                             kv, zeroOf(ib, il, elem));
            Value prev = extractAt(ib, il, iter[0], sIdx);
            Value s = add(ib, il, mul(ib, il, at, prev), kv);
            Value newState = insertAt(ib, il, s, iter[0], sIdx);
            Value sRe = complexState ? complex::ReOp::create(ib, il, s) : s;
            Value term = arith::MulFOp::create(ib, il, qt, sRe);
            Value acc = arith::AddFOp::create(ib, il, iter[1], term);
            return SmallVector<Value>{newState, acc};
          });
      Value newY = insertAt(b, l, col[1], y, vIdx);
      return SmallVector<Value>{newY, col[0]};
    };

    SmallVector<Value> results = buildNest(
        rewriter, loc, sizes.lead, {yInit, stateInit},
        [&](OpBuilder &b, Location l, ValueRange lead, ValueRange args) {
          Value state =
              writeInitialState(b, l, args[1], lead, sizes, op.getInit());
          Value zero = indexConst(b, l, 0);
          return buildLoop(
              b, l, zero, sizes.steps, ValueRange{args[0], state},
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange iter) {
                return buildLoop(tb, tl, zero, sizes.dv, iter,
                                 [&](OpBuilder &jb, Location jl, ValueRange j,
                                     ValueRange jIter) {
                                   return stepColumn(jb, jl, lead, t[0], j[0],
                                                     jIter[0], jIter[1]);
                                 });
              });
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateScanPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearScanToLoops, ScanToLoops, GatedLinearAttentionToLoops>(
      patterns.getContext());
}
