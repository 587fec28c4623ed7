//===- Experts.cpp - reference loops of the expert ops --------------------===//
//
// Part of the Recur project.
//
// recur.route_topk (k rounds of selection per token) and recur.moe (each
// selected expert's feed-forward network, token by token).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

//===----------------------------------------------------------------------===//
// recur.route_topk
//===----------------------------------------------------------------------===//

/// One round of top-k selection over the E probabilities of token `tok`:
/// the largest probability among the experts that come after the previous
/// pick (`prevValue`, `prevIndex`) in the order "probability descending,
/// index ascending" (the experts not taken yet), ties to the lower index.
/// Returns the pick's index and probability.
std::pair<Value, Value> selectNext(OpBuilder &b, Location loc, Value probs,
                                   ValueRange tok, Value experts,
                                   Value prevValue, Value prevIndex) {
  Type elem = prevValue.getType();
  Value zero = indexConst(b, loc, 0);
  // Visits expert e with the best (index, probability) so far, (-1, 0)
  // before any.
  auto visit = [&](OpBuilder &eb, Location l, ValueRange e, ValueRange best) {
    Value p = extractAt(eb, l, probs, concatIndices(tok, e));
    auto fcmp = [&](arith::CmpFPredicate pred, Value x, Value y) {
      return arith::CmpFOp::create(eb, l, pred, x, y).getResult();
    };
    auto icmp = [&](arith::CmpIPredicate pred, Value x, Value y) {
      return arith::CmpIOp::create(eb, l, pred, x, y).getResult();
    };
    // Not taken yet: p < prev, or p == prev at a higher index.
    Value after = arith::OrIOp::create(
        eb, l, fcmp(arith::CmpFPredicate::OLT, p, prevValue),
        arith::AndIOp::create(
            eb, l, fcmp(arith::CmpFPredicate::OEQ, p, prevValue),
            icmp(arith::CmpIPredicate::sgt, e[0], prevIndex)));
    // Strictly better than the best so far keeps the lower index on ties.
    Value better = arith::OrIOp::create(
        eb, l, icmp(arith::CmpIPredicate::slt, best[0], zero),
        fcmp(arith::CmpFPredicate::OGT, p, best[1]));
    Value take = arith::AndIOp::create(eb, l, after, better);
    return SmallVector<Value>{
        arith::SelectOp::create(eb, l, take, e[0], best[0]),
        arith::SelectOp::create(eb, l, take, p, best[1])};
  };
  SmallVector<Value> best = buildLoop(
      b, loc, zero, experts,
      ValueRange{indexConst(b, loc, -1), zeroOf(b, loc, elem)}, visit);
  return {best[0], best[1]};
}

struct RouteTopKToLoops : OpRewritePattern<RouteTopKOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RouteTopKOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto gatesType = cast<RankedTensorType>(op.getGates().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    Type elem = gatesType.getElementType();
    SmallVector<Value> sizes = dimSizes(rewriter, loc, op.getProbs());
    Value experts = sizes.back();
    Value k = indexConst(rewriter, loc, op.getKAttr().getInt());
    SmallVector<Value> outSizes(ArrayRef<Value>(sizes).drop_back());
    outSizes.push_back(k);
    SmallVector<Value> inits = {
        emptyLike(rewriter, loc, gatesType, outSizes),
        emptyLike(rewriter, loc, indicesType, outSizes)};

    SmallVector<Value> results = buildNest(
        rewriter, loc, ArrayRef<Value>(sizes).drop_back(), inits,
        [&](OpBuilder &b, Location l, ValueRange tok, ValueRange args) {
          // k rounds, each writing its pick's probability (normalized below)
          // and index, and summing the picked probabilities in order.
          Value zero = indexConst(b, l, 0);
          Value inf =
              floatConst(b, l, elem, std::numeric_limits<double>::infinity());
          SmallVector<Value> picks = buildLoop(
              b, l, zero, k,
              ValueRange{args[0], args[1], inf, indexConst(b, l, -1),
                         zeroOf(b, l, elem)},
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange iter) {
                auto [index, value] = selectNext(jb, jl, op.getProbs(), tok,
                                                 experts, iter[2], iter[3]);
                SmallVector<Value> idx = concatIndices(tok, j);
                Value gates = insertAt(jb, jl, value, iter[0], idx);
                Value asI32 = arith::IndexCastOp::create(
                    jb, jl, indicesType.getElementType(), index);
                Value indices = insertAt(jb, jl, asI32, iter[1], idx);
                Value sum = arith::AddFOp::create(jb, jl, iter[4], value);
                return SmallVector<Value>{gates, indices, value, index, sum};
              });
          // g / (sum_topk g + eps)
          Value denom = arith::AddFOp::create(
              b, l, picks[4],
              floatConst(b, l, elem, op.getEps().convertToDouble()));
          Value gates = updateRow(
              b, l, picks[0], tok, k,
              [&](OpBuilder &nb, Location nl, Value, Value g) {
                return arith::DivFOp::create(nb, nl, g, denom).getResult();
              });
          return SmallVector<Value>{gates, picks[1]};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.moe
//===----------------------------------------------------------------------===//

/// relu(x) = x > 0 ? x : 0; gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) (exact,
/// not the tanh approximation); silu(x) = x sigmoid(x).
Value activate(OpBuilder &b, Location loc, Activation activation, Value x) {
  Type elem = x.getType();
  switch (activation) {
  case Activation::Relu: {
    Value zero = zeroOf(b, loc, elem);
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
    return arith::SelectOp::create(b, loc, positive, x, zero);
  }
  case Activation::Gelu: {
    Value half =
        arith::MulFOp::create(b, loc, floatConst(b, loc, elem, 0.5), x);
    Value scaled = arith::DivFOp::create(
        b, loc, x, floatConst(b, loc, elem, std::sqrt(2.0)));
    Value erf = math::ErfOp::create(b, loc, scaled);
    Value onePlus =
        arith::AddFOp::create(b, loc, floatConst(b, loc, elem, 1.0), erf);
    return arith::MulFOp::create(b, loc, half, onePlus);
  }
  case Activation::Silu:
    return arith::MulFOp::create(b, loc, x, sigmoid(b, loc, x));
  }
  llvm_unreachable("unknown activation");
}

struct MoEToLoops : OpRewritePattern<MoEOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MoEOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto xType = cast<RankedTensorType>(op.getX().getType());
    Type elem = xType.getElementType();
    auto wInType = cast<RankedTensorType>(op.getWIn().getType());
    SmallVector<Value> xSizes = dimSizes(rewriter, loc, op.getX());
    ArrayRef<Value> tokenSizes = ArrayRef<Value>(xSizes).drop_back();
    Value width = xSizes.back();
    Value k = dimSize(rewriter, loc, op.getIndices(), xType.getRank() - 1);
    Value hiddenLen = dimSize(rewriter, loc, op.getWIn(), 2);
    // One hidden activation row per token, reused by its experts (made in
    // the token's iteration, so tokens share nothing and run in parallel).
    auto hiddenType = RankedTensorType::get({wInType.getDimSize(2)}, elem);
    Value yInit = emptyLike(rewriter, loc, xType, xSizes);

    // y = sum_j gates[j] act(x W_in[e_j]) W_out[e_j] for one token, added
    // into its (zeroed) row of y.
    auto addExperts = [&](OpBuilder &b, Location l, ValueRange tok, Value y) {
      Value zero = indexConst(b, l, 0);
      Value hidden = privateScratch(b, l, hiddenType, {hiddenLen});
      return buildLoop(
          b, l, zero, k, ValueRange{y, hidden},
          [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange iter) {
            SmallVector<Value> slot = concatIndices(tok, j);
            Value expert = arith::IndexCastOp::create(
                jb, jl, jb.getIndexType(),
                extractAt(jb, jl, op.getIndices(), slot));
            Value gate = extractAt(jb, jl, op.getGates(), slot);
            // hidden[c] = act(sum_m x[m] W_in[e, m, c])
            Value hid = fillRow(
                jb, jl, iter[1], {}, hiddenLen,
                [&](OpBuilder &cb, Location cl, Value c) {
                  Value s = dotProduct(
                      cb, cl, elem, width,
                      [&](OpBuilder &mb, Location ml, Value m) {
                        return extractAt(mb, ml, op.getX(),
                                         concatIndices(tok, m));
                      },
                      [&](OpBuilder &mb, Location ml, Value m) {
                        return extractAt(mb, ml, op.getWIn(), {expert, m, c});
                      });
                  return activate(cb, cl, op.getActivation(), s);
                });
            // y[m] += gate * sum_c hidden[c] W_out[e, c, m]
            Value row = updateRow(
                jb, jl, iter[0], tok, width,
                [&](OpBuilder &mb, Location ml, Value m, Value old) {
                  Value s = dotProduct(
                      mb, ml, elem, hiddenLen,
                      [&](OpBuilder &cb, Location cl, Value c) {
                        return extractAt(cb, cl, hid, c);
                      },
                      [&](OpBuilder &cb, Location cl, Value c) {
                        return extractAt(cb, cl, op.getWOut(), {expert, c, m});
                      });
                  Value weighted = arith::MulFOp::create(mb, ml, gate, s);
                  return arith::AddFOp::create(mb, ml, old, weighted)
                      .getResult();
                });
            return SmallVector<Value>{row, hid};
          })[0];
    };

    SmallVector<Value> results = buildNest(
        rewriter, loc, tokenSizes, ValueRange{yInit},
        [&](OpBuilder &b, Location l, ValueRange tok, ValueRange args) {
          Value zeroF = zeroOf(b, l, elem);
          Value y =
              fillRow(b, l, args[0], tok, width,
                      [&](OpBuilder &, Location, Value) { return zeroF; });
          if (!op.getActive())
            return SmallVector<Value>{addExperts(b, l, tok, y)};
          // An inactive token goes to no expert and keeps its zero row.
          Value active = extractAt(b, l, op.getActive(), tok);
          auto ifOp = scf::IfOp::create(
              b, l, active,
              [&](OpBuilder &tb, Location tl) {
                scf::YieldOp::create(tb, tl, addExperts(tb, tl, tok, y));
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, y);
              });
          return SmallVector<Value>(ifOp.getResults());
        });
    rewriter.replaceOp(op, results[0]);
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateExpertPatterns(RewritePatternSet &patterns) {
  patterns.add<RouteTopKToLoops, MoEToLoops>(patterns.getContext());
}
