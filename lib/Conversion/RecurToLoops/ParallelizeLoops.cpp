//===- ParallelizeLoops.cpp - marked loops to scf.parallel
//-----------------===//
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

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURPARALLELIZELOOPS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

using loops::dependsOnIv;

/// Whether a view op (the buffer it views is operand 0): memref's, and
/// recur's views of complex buffers as their parts and back.
bool isView(Operation *op) {
  return isa<memref::SubViewOp, memref::CastOp, memref::ReinterpretCastOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp, ViewAsRealOp,
             ViewAsComplexOp>(op);
}

/// The buffer and indices of a store of one element or of one vector.
std::optional<std::pair<Value, ValueRange>> storeInto(Operation *op) {
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return std::make_pair(store.getMemRef(), store.getIndices());
  if (auto store = dyn_cast<vector::TransferWriteOp>(op))
    return std::make_pair(store.getBase(), store.getIndices());
  if (auto store = dyn_cast<vector::StoreOp>(op))
    return std::make_pair(store.getBase(), store.getIndices());
  return std::nullopt;
}

/// Whether every write into `buffer` (directly, through views, or through
/// the iteration arguments of loops nested in `loop`) lands at a position
/// computed from `loop`'s induction variable, so that two iterations never
/// write the same element. `indexed` says that `buffer` is already a view
/// placed by the induction variable. A buffer one iteration writes at fixed
/// positions (a scratch row shared by all of them) fails.
bool writesOwnElements(Value buffer, scf::ForOp loop, bool indexed) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (std::optional<std::pair<Value, ValueRange>> store = storeInto(user)) {
      if (store->first == buffer && !indexed &&
          llvm::none_of(store->second,
                        [&](Value i) { return dependsOnIv(i, loop); }))
        return false;
      continue;
    }
    if (isView(user)) {
      bool placed = indexed || llvm::any_of(user->getOperands(), [&](Value v) {
                      return v != buffer && dependsOnIv(v, loop);
                    });
      if (!writesOwnElements(user->getResult(0), loop, placed))
        return false;
      continue;
    }
    if (auto inner = dyn_cast<scf::ForOp>(user)) {
      unsigned i = use.getOperandNumber() - inner.getNumControlOperands();
      if (!writesOwnElements(inner.getRegionIterArgs()[i], loop, indexed) ||
          !writesOwnElements(inner.getResult(i), loop, indexed))
        return false;
      continue;
    }
    // A branch's results are the buffer too.
    if (auto branch = dyn_cast<scf::IfOp>(user->getParentOp());
        branch && isa<scf::YieldOp>(user)) {
      if (!writesOwnElements(branch.getResult(use.getOperandNumber()), loop,
                             indexed))
        return false;
      continue;
    }
    if (isa<scf::YieldOp>(user))
      continue;
    if (!indexed && hasEffect<MemoryEffects::Write>(user, buffer))
      return false;
    // Regions of other ops (scf.if, nested parallel loops) write through
    // the values they capture: look inside.
    for (Region &region : user->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (arg.getType() == buffer.getType() &&
              !writesOwnElements(arg, loop, indexed))
            return false;
  }
  return true;
}

/// Calls `fn(buffer, placed)` for each buffer `value` may be, inside `loop`:
/// back through views (`placed` when one is offset by the induction
/// variable) and through the iteration arguments and results of loops and
/// the results of ifs nested in `loop`, which carry a buffer from outside
/// into the body (bufferization reuses one scratch buffer across the
/// iterations of a loop that was sequential when it ran).
void forEachRoot(Value value, scf::ForOp loop, bool placed,
                 llvm::DenseSet<std::pair<Value, unsigned>> &seen,
                 llvm::function_ref<void(Value, bool)> fn) {
  if (!seen.insert({value, placed ? 1u : 0u}).second)
    return;
  auto inside = [&](Operation *op) { return op && loop->isProperAncestor(op); };
  if (Operation *def = value.getDefiningOp(); def && isView(def)) {
    placed |= llvm::any_of(def->getOperands().drop_front(),
                           [&](Value v) { return dependsOnIv(v, loop); });
    return forEachRoot(def->getOperand(0), loop, placed, seen, fn);
  }
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto inner = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (inner && inside(inner) && arg.getArgNumber() > 0) {
      unsigned i = arg.getArgNumber() - 1;
      forEachRoot(inner.getInitArgs()[i], loop, placed, seen, fn);
      forEachRoot(inner.getBody()->getTerminator()->getOperand(i), loop, placed,
                  seen, fn);
      return;
    }
  }
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *owner = result.getOwner();
    unsigned i = result.getResultNumber();
    if (auto inner = dyn_cast<scf::ForOp>(owner); inner && inside(inner)) {
      forEachRoot(inner.getInitArgs()[i], loop, placed, seen, fn);
      forEachRoot(inner.getBody()->getTerminator()->getOperand(i), loop, placed,
                  seen, fn);
      return;
    }
    if (auto branch = dyn_cast<scf::IfOp>(owner); branch && inside(branch)) {
      for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()})
        if (!region->empty())
          forEachRoot(region->front().getTerminator()->getOperand(i), loop,
                      placed, seen, fn);
      return;
    }
  }
  fn(value, placed);
}

/// Whether every write in `loop` to a buffer that exists before the loop
/// (captured, or reached through the iteration arguments of loops nested in
/// it; the loop's own iteration arguments are writesOwnElements' to check)
/// lands at a position placed by the induction variable.
bool capturedWritesOwnElements(scf::ForOp loop) {
  // The block form's tiles publish and read each other's statuses by
  // atomics; elsewhere an atomic at a shared position is a dependence.
  bool blocks = loop->hasAttr(kGpuBlockAttrName);
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (blocks && isa<memref::AtomicRMWOp, memref::GenericAtomicRMWOp>(op))
      return WalkResult::advance();
    for (Value operand : op->getOperands()) {
      if (!isa<MemRefType>(operand.getType()) ||
          !hasEffect<MemoryEffects::Write>(op, operand))
        continue;
      bool placed = false;
      if (std::optional<std::pair<Value, ValueRange>> store = storeInto(op))
        placed = llvm::any_of(store->second,
                              [&](Value i) { return dependsOnIv(i, loop); });
      bool shared = false;
      llvm::DenseSet<std::pair<Value, unsigned>> seen;
      forEachRoot(operand, loop, placed, seen, [&](Value base, bool placed) {
        // A buffer made in the body is each iteration's own.
        bool captured =
            !loop->isAncestor(base.getParentRegion()->getParentOp());
        shared |= captured && !placed &&
                  !llvm::is_contained(loop.getRegionIterArgs(), base);
      });
      if (shared)
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Whether every iteration argument of `loop` is a memref that each
/// iteration yields back unchanged: the loop updates its buffers in place.
bool yieldsInPlace(scf::ForOp loop) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  return llvm::all_of(
      llvm::zip_equal(loop.getRegionIterArgs(), yield.getOperands()),
      [](auto pair) {
        auto [arg, yielded] = pair;
        return isa<MemRefType>(arg.getType()) &&
               loops::inPlaceSource(yielded) == arg;
      });
}

/// Whether every iteration argument of `loop` is a memref that each
/// iteration yields back unchanged and writes only at positions placed by
/// the induction variable: the iterations then write disjoint parts of the
/// buffers the loop was given, in place.
bool writesInPlace(scf::ForOp loop) {
  return yieldsInPlace(loop) &&
         llvm::all_of(loop.getRegionIterArgs(),
                      [&](Value arg) {
                        return writesOwnElements(arg, loop, /*indexed=*/false);
                      }) &&
         capturedWritesOwnElements(loop);
}

/// Replaces a tagged, in-place `loop` by an scf.parallel with the same body;
/// its iteration arguments and results become the buffers it was given.
scf::ParallelOp toParallel(RewriterBase &rewriter, scf::ForOp loop) {
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
  return parallel;
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
    // The lanes of a warp (kWarpLanesAttrName) may all write a warp's
    // result (the same value) to one element: their iteration arguments'
    // writes are not checked. They exchange values by gpu.shuffle, so they
    // must run in parallel: otherwise an error.
    // The threads of a block (kBlockThreadsAttrName) stay scf.for, but
    // must update their buffers in place, each its own elements:
    // recur-gpu-offload runs them side by side.
    WalkResult threads = func.walk([&](scf::ForOp loop) {
      if (!loop->hasAttr(kBlockThreadsAttrName) ||
          (yieldsInPlace(loop) &&
           llvm::all_of(loop.getRegionIterArgs(),
                        [&](Value arg) {
                          return writesOwnElements(arg, loop,
                                                   /*indexed=*/false);
                        }) &&
           capturedWritesOwnElements(loop)))
        return WalkResult::advance();
      loop.emitError("the threads of a block cannot run side by side: "
                     "bufferization did not update their buffers in place, "
                     "each thread its own elements");
      return WalkResult::interrupt();
    });
    if (threads.wasInterrupted())
      return signalPassFailure();

    for (scf::ForOp loop : tagged) {
      bool blocks = loop->hasAttr(kGpuBlockAttrName);
      if (blocks) {
        if (!writesInPlace(loop)) {
          loop.emitError("the blocks of a block form cannot run in "
                         "parallel: bufferization did not update their "
                         "buffers in place");
          return signalPassFailure();
        }
        toParallel(rewriter, loop)
            ->setAttr(kGpuBlockAttrName, rewriter.getUnitAttr());
        continue;
      }
      bool lanes = loop->hasAttr(kWarpLanesAttrName);
      if (lanes ? yieldsInPlace(loop) && capturedWritesOwnElements(loop)
                : writesInPlace(loop)) {
        scf::ParallelOp parallel = toParallel(rewriter, loop);
        if (lanes)
          parallel->setAttr(kWarpLanesAttrName, rewriter.getUnitAttr());
      } else if (lanes) {
        loop.emitError("the lanes of a warp cannot run in parallel: "
                       "bufferization did not update their buffers in place");
        return signalPassFailure();
      } else {
        loop->removeAttr(loops::kParallelAttrName);
      }
    }

    // Merge perfect nests (scf.parallel's canonicalization does exactly
    // that, among its other folds).
    RewritePatternSet patterns(&getContext());
    scf::ParallelOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    // One thread team per nest: a parallel loop inside another runs on the
    // thread that reached it. A warp's lanes that did not merge into the
    // parallel loop around them (the merged loop does not keep the tag)
    // would run one lane after another: an error.
    SmallVector<scf::ParallelOp> nested;
    WalkResult unmerged = func.walk([&](scf::ParallelOp parallel) {
      bool inner = parallel->getParentOfType<scf::ParallelOp>() != nullptr;
      if (parallel->hasAttr(kWarpLanesAttrName)) {
        if (inner) {
          parallel.emitError("the lanes of a warp did not merge into the "
                             "parallel loop around them");
          return WalkResult::interrupt();
        }
        parallel->removeAttr(kWarpLanesAttrName);
      }
      // A block form inside another parallel loop runs in its thread, its
      // blocks and their threads one after another.
      if (inner)
        parallel->removeAttr(kGpuBlockAttrName);
      if (inner && parallel.getNumReductions() == 0)
        nested.push_back(parallel);
      return WalkResult::advance();
    });
    if (unmerged.wasInterrupted())
      return signalPassFailure();
    for (scf::ParallelOp parallel : nested)
      toSequential(rewriter, parallel);
  }
};

} // namespace
