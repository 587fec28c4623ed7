//===- Depth.cpp - reference loops of the depth recurrence ops ------------===//
//
// Part of the Recur project.
//
// recur.halting (one loop nest over the tokens) and recur.depth_loop (an
// scf.for over the steps with the body inlined).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

//===----------------------------------------------------------------------===//
// recur.halting
//===----------------------------------------------------------------------===//

/// `mass < threshold`, compared in f64 (the threshold attribute's type) so
/// that a narrower mass is not judged against a rounded threshold.
Value isActive(OpBuilder &b, Location loc, Value mass, double threshold) {
  Type f64 = b.getF64Type();
  if (mass.getType() != f64)
    mass = arith::ExtFOp::create(b, loc, f64, mass);
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, mass,
                               floatConst(b, loc, f64, threshold));
}

struct HaltingToLoops : OpRewritePattern<HaltingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(HaltingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto tokenType = cast<RankedTensorType>(op.getPHat().getType());
    auto stateType = cast<RankedTensorType>(op.getH().getType());
    Type elem = tokenType.getElementType();
    double threshold = op.getThreshold().convertToDouble();
    SmallVector<Value> hSizes = dimSizes(rewriter, loc, op.getH());
    ArrayRef<Value> tokenSizes = ArrayRef<Value>(hSizes).drop_back();
    Value width = hSizes.back();
    SmallVector<Value> inits = {emptyLike(rewriter, loc, tokenType, tokenSizes),
                                emptyLike(rewriter, loc, stateType, hSizes),
                                emptyLike(rewriter, loc, tokenType, tokenSizes),
                                emptyLike(rewriter, loc, stateType, hSizes)};

    // Per token: active while mass < threshold; a halted token gets a = 0
    // and exact copies of s_prev, mass and acc.
    SmallVector<Value> results = buildNest(
        rewriter, loc, tokenSizes, inits,
        [&](OpBuilder &b, Location l, ValueRange tok, ValueRange args) {
          Value pHat = extractAt(b, l, op.getPHat(), tok);
          Value mass = extractAt(b, l, op.getMass(), tok);
          Value active = isActive(b, l, mass, threshold);
          // a = p_hat * (1 - mass), new_mass = mass + a
          Value rest =
              arith::SubFOp::create(b, l, floatConst(b, l, elem, 1.0), mass);
          Value a = arith::MulFOp::create(b, l, pHat, rest);
          Value newMass = arith::AddFOp::create(b, l, mass, a);
          Value aOut =
              arith::SelectOp::create(b, l, active, a, zeroOf(b, l, elem));
          Value massOut = arith::SelectOp::create(b, l, active, newMass, mass);
          Value zero = indexConst(b, l, 0);
          SmallVector<Value> rows = buildLoop(
              b, l, zero, width, ValueRange{args[1], args[3]},
              [&](OpBuilder &eb, Location el, ValueRange e, ValueRange iter) {
                SmallVector<Value> idx = concatIndices(tok, e);
                Value h = extractAt(eb, el, op.getH(), idx);
                Value acc = extractAt(eb, el, op.getAcc(), idx);
                Value sPrev = extractAt(eb, el, op.getSPrev(), idx);
                // s = (1 - mass) * h + acc, new_acc = acc + a * h
                Value s = arith::AddFOp::create(
                    eb, el, arith::MulFOp::create(eb, el, rest, h), acc);
                Value newAcc = arith::AddFOp::create(
                    eb, el, acc, arith::MulFOp::create(eb, el, a, h));
                Value sOut = arith::SelectOp::create(eb, el, active, s, sPrev);
                Value accOut =
                    arith::SelectOp::create(eb, el, active, newAcc, acc);
                return SmallVector<Value>{
                    insertAt(eb, el, sOut, iter[0], idx),
                    insertAt(eb, el, accOut, iter[1], idx)};
              });
          return SmallVector<Value>{insertAt(b, l, aOut, args[0], tok), rows[0],
                                    insertAt(b, l, massOut, args[2], tok),
                                    rows[1]};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.depth_loop
//===----------------------------------------------------------------------===//

struct DepthLoopToLoops : OpRewritePattern<DepthLoopOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DepthLoopOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Block &body = op.getBody().front();
    Value zero = indexConst(rewriter, loc, 0);
    Value depth = indexConst(rewriter, loc, op.getMaxDepthAttr().getInt());
    // The body's step index is the induction variable.
    SmallVector<Value> results = buildLoop(
        rewriter, loc, zero, depth, op.getInits(),
        [&](OpBuilder &b, Location, ValueRange step, ValueRange carried) {
          return inlineBlock(b, body, concatIndices(step, carried));
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateDepthPatterns(RewritePatternSet &patterns) {
  patterns.add<HaltingToLoops, DepthLoopToLoops>(patterns.getContext());
}
