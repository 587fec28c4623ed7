//===- ParallelizeLoops.cpp - marked loops to scf.parallel -----------------===//
//
// Part of the Recur project.
//
// After bufferization, the loops RecurToLoops tagged `recur.parallel` become
// scf.parallel when bufferization kept them in place, perfect nests merge,
// and parallel loops inside parallel loops go back to scf.for, so the
// OpenMP conversion forks one thread team per nest.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Utility.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURPARALLELIZELOOPS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// The buffer `value` is, looking through the results of scf.for loops
/// that yield their iteration argument back (sequential loops inside the
/// nest that update a buffer in place).
Value inPlaceSource(Value value) {
  while (auto result = dyn_cast<OpResult>(value)) {
    auto loop = dyn_cast<scf::ForOp>(result.getOwner());
    if (!loop)
      break;
    unsigned i = result.getResultNumber();
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    if (inPlaceSource(yield.getOperand(i)) != loop.getRegionIterArgs()[i])
      break;
    value = loop.getInitArgs()[i];
  }
  return value;
}

/// Whether every iteration argument of `loop` is a memref that each
/// iteration yields back unchanged: the iterations then write in place into
/// the buffers the loop was given.
bool writesInPlace(scf::ForOp loop) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [arg, yielded] :
       llvm::zip_equal(loop.getRegionIterArgs(), yield.getOperands()))
    if (!isa<MemRefType>(arg.getType()) || inPlaceSource(yielded) != arg)
      return false;
  return true;
}

/// Replaces a tagged, in-place `loop` by an scf.parallel with the same body;
/// its iteration arguments and results become the buffers it was given.
void toParallel(RewriterBase &rewriter, scf::ForOp loop) {
  rewriter.setInsertionPoint(loop);
  auto parallel = scf::ParallelOp::create(
      rewriter, loop.getLoc(), ValueRange{loop.getLowerBound()},
      ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
  Block *body = parallel.getBody();
  rewriter.eraseOp(body->getTerminator());
  SmallVector<Value> args = {parallel.getInductionVars()[0]};
  llvm::append_range(args, loop.getInitArgs());
  rewriter.eraseOp(loop.getBody()->getTerminator());
  rewriter.inlineBlockBefore(loop.getBody(), body, body->end(), args);
  rewriter.setInsertionPointToEnd(body);
  scf::ReduceOp::create(rewriter, loop.getLoc());
  rewriter.replaceOp(loop, loop.getInitArgs());
}

/// Replaces an scf.parallel without reductions by a nest of scf.for loops,
/// outermost dimension first.
void toSequential(RewriterBase &rewriter, scf::ParallelOp parallel) {
  rewriter.setInsertionPoint(parallel);
  Location loc = parallel.getLoc();
  SmallVector<Value> ivs;
  OpBuilder::InsertionGuard guard(rewriter);
  for (auto [lb, ub, step] :
       llvm::zip_equal(parallel.getLowerBound(), parallel.getUpperBound(),
                       parallel.getStep())) {
    auto loop = scf::ForOp::create(rewriter, loc, lb, ub, step);
    ivs.push_back(loop.getInductionVar());
    rewriter.setInsertionPoint(loop.getBody()->getTerminator());
  }
  Block *inner = rewriter.getInsertionBlock();
  rewriter.eraseOp(parallel.getBody()->getTerminator());
  rewriter.inlineBlockBefore(parallel.getBody(), inner,
                             rewriter.getInsertionPoint(), ivs);
  rewriter.eraseOp(parallel);
}

struct RecurParallelizeLoopsPass
    : recur::impl::RecurParallelizeLoopsBase<RecurParallelizeLoopsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(&getContext());

    // Innermost first: once an inner loop is parallel, its results are the
    // buffers it was given, so the loop around it yields its own arguments.
    SmallVector<scf::ForOp> tagged;
    func.walk([&](scf::ForOp loop) {
      if (loop->hasAttr(loops::kParallelAttrName))
        tagged.push_back(loop);
    });
    for (scf::ForOp loop : tagged) {
      if (writesInPlace(loop))
        toParallel(rewriter, loop);
      else
        loop->removeAttr(loops::kParallelAttrName);
    }

    // Merge perfect nests (scf.parallel's canonicalization does exactly
    // that, among its other folds).
    RewritePatternSet patterns(&getContext());
    scf::ParallelOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    // One thread team per nest: a parallel loop inside another runs on the
    // thread that reached it.
    SmallVector<scf::ParallelOp> nested;
    func.walk([&](scf::ParallelOp parallel) {
      if (parallel->getParentOfType<scf::ParallelOp>() &&
          parallel.getNumReductions() == 0)
        nested.push_back(parallel);
    });
    for (scf::ParallelOp parallel : nested)
      toSequential(rewriter, parallel);
  }
};

} // namespace
