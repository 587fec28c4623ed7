//===- FuseElementwise.cpp - elementwise fusion that keeps inits ----------===//
//
// Part of the Recur project.
//
// recur-fuse-elementwise: linalg's elementwise producer-consumer fusion,
// except into a consumer of a producer whose body reads its own init (an
// all-parallel generic computing `out + x * y`, as an einsum without summed
// labels is emitted). Upstream's fusion of such a producer gave wrong
// results (seen in derived backward kernels: a weight table computed inside
// a block body); the producer stays a separate loop instead.
//
// Nor into a consumer that reads each element of the producer's result more
// than once (its indexing map for it drops or repeats loop dimensions: a
// matmul's operand, a row statistic broadcast along a row): the fused body
// would recompute the producer (a gelu, a layernorm) at every point of the
// dropped dimensions, e.g. F times for `gelu(x @ W1) @ W2`.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURFUSEELEMENTWISE
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;

namespace {

/// Whether `op`'s body reads one of its inits.
bool readsInit(linalg::LinalgOp op) {
  return llvm::any_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
    return op.payloadUsesValueFromOperand(&init);
  });
}

struct RecurFuseElementwisePass
    : recur::impl::RecurFuseElementwiseBase<RecurFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *fused) {
          auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
          auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
          return producer && consumer && !readsInit(producer) &&
                 consumer.getMatchingIndexingMap(fused).isPermutation();
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
