//===- Gates.cpp - reference loops of recur.gate --------------------------===//
//
// Part of the Recur project.
//
// recur.gate as one loop nest over the state, with the gate operands read
// through numpy broadcasting.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

/// Reads gate operand `gate` at the state index `idx`, broadcasting its
/// dimensions of size one (static or found at run time).
Value extractBroadcast(OpBuilder &b, Location loc, Value gate, ValueRange idx) {
  auto type = cast<RankedTensorType>(gate.getType());
  int64_t offset = static_cast<int64_t>(idx.size()) - type.getRank();
  SmallVector<Value> gateIdx;
  Value zero = indexConst(b, loc, 0);
  for (int64_t j = 0, e = type.getRank(); j < e; ++j) {
    int64_t size = type.getDimSize(j);
    if (size == 1) {
      gateIdx.push_back(zero);
    } else if (ShapedType::isDynamic(size)) {
      Value dim = tensor::DimOp::create(b, loc, gate, j);
      Value one = indexConst(b, loc, 1);
      Value isOne =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim, one);
      gateIdx.push_back(
          arith::SelectOp::create(b, loc, isOne, zero, idx[offset + j]));
    } else {
      gateIdx.push_back(idx[offset + j]);
    }
  }
  return extractAt(b, loc, gate, gateIdx);
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

    SmallVector<Value> results = buildNest(
        rewriter, loc, sizes, {init},
        [&](OpBuilder &b, Location l, ValueRange idx, ValueRange args) {
          Value c = extractAt(b, l, op.getState(), idx);
          Value z = extractAt(b, l, op.getCandidate(), idx);
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
          return SmallVector<Value>{insertAt(b, l, next, args[0], idx)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateGatePatterns(RewritePatternSet &patterns) {
  patterns.add<GateToLoops>(patterns.getContext());
}
