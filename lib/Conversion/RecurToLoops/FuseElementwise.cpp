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
          return producer && !readsInit(producer);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
