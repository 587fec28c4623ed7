//===- InterchangeReductions.cpp - contiguous dimension innermost ---------===//
//
// Part of the Recur project.
//
// recur-interchange-reductions: reorders the loops of linalg contractions so
// that the dimension walking the output's last (contiguous) dimension is the
// innermost loop, after the reductions. Lowered to loops, a matmul then
// updates output rows from input rows (vectorized by LLVM) instead of
// computing one scalar dot product per element down a strided column. Every
// output element sums its terms in the same order as before.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURINTERCHANGEREDUCTIONS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;

namespace {

/// The loop dimension that `map`'s last result is, if it is a plain
/// dimension.
std::optional<unsigned> lastDim(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!dim)
    return std::nullopt;
  return dim.getPosition();
}

/// The loop order putting `op`'s contiguous output dimension innermost,
/// after the reductions, or nothing when `op` does not qualify (no
/// reduction, already innermost-parallel, the dimension is not parallel, is
/// not the same for every init, or no input reads it contiguously).
std::optional<SmallVector<unsigned>> contiguousOrder(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (op.getNumReductionLoops() == 0 ||
      iterators.back() == utils::IteratorType::parallel)
    return std::nullopt;
  std::optional<unsigned> inner;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    std::optional<unsigned> dim = lastDim(op.getMatchingIndexingMap(&init));
    if (!dim || (inner && *dim != *inner))
      return std::nullopt;
    inner = dim;
  }
  if (!inner || iterators[*inner] != utils::IteratorType::parallel)
    return std::nullopt;
  bool streamed = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
    return lastDim(op.getMatchingIndexingMap(in)) == inner;
  });
  if (!streamed)
    return std::nullopt;
  SmallVector<unsigned> order;
  for (auto [d, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::parallel && d != *inner)
      order.push_back(d);
  for (auto [d, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::reduction)
      order.push_back(d);
  order.push_back(*inner);
  return order;
}

struct InterchangeContraction : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<SmallVector<unsigned>> order = contiguousOrder(op);
    if (!order)
      return rewriter.notifyMatchFailure(op, "no contiguous dimension to move");
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generalized))
        return failure();
      generic = *generalized;
    }
    if (failed(linalg::interchangeGenericOp(rewriter, generic, *order)))
      return failure();
    return success();
  }
};

struct RecurInterchangeReductionsPass
    : recur::impl::RecurInterchangeReductionsBase<
          RecurInterchangeReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<InterchangeContraction>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
