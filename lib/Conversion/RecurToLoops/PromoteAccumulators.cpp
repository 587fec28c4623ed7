//===- PromoteAccumulators.cpp - reduction accumulators in registers ------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//
//
// A linalg reduction lowered to loops adds into its output element in
// memory on every step of its innermost loop: a load and a store of the same
// element per step, which LLVM cannot keep in a register because it cannot
// tell that the other loads of the loop (from views of the layer's
// arguments) do not read that element. Each step then waits for the
// previous step's store. Where the element lives in a buffer the kernel
// allocated itself, nothing else can reach it, so the sum can go through the
// loop as a value instead: loaded once before, stored once after.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURPROMOTEACCUMULATORS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// The buffer `memref` is a view of, through view-like ops (subview, cast,
/// reshapes).
Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// Whether `memref` is a buffer the function allocated: no other buffer,
/// and no argument, shares its memory.
bool isLocalBuffer(Value root) {
  return root.getDefiningOp<memref::AllocOp>() ||
         root.getDefiningOp<memref::AllocaOp>();
}

/// A load and a store of one element at indices fixed over the loop.
struct Accumulator {
  memref::LoadOp load;
  memref::StoreOp store;
};

/// The accumulators of `loop`, an innermost loop (no regions in its body)
/// whose only effects are loads and stores: for each store at indices
/// defined outside the loop into a buffer the function allocated, the load
/// of the same element before it, when no other load or store of the loop
/// touches that buffer.
SmallVector<Accumulator> findAccumulators(scf::ForOp loop) {
  SmallVector<memref::LoadOp> loads;
  SmallVector<memref::StoreOp> stores;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions())
      return {};
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      loads.push_back(load);
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      stores.push_back(store);
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return {};
  }
  auto invariant = [&](ValueRange values) {
    return llvm::all_of(
        values, [&](Value v) { return loop.isDefinedOutsideOfLoop(v); });
  };
  SmallVector<Accumulator> found;
  for (memref::StoreOp store : stores) {
    Value root = rootOf(store.getMemRef());
    if (!isLocalBuffer(root) ||
        !loop.isDefinedOutsideOfLoop(store.getMemRef()) ||
        !invariant(store.getIndices()))
      continue;
    memref::LoadOp match;
    bool alone = true;
    for (memref::LoadOp load : loads) {
      if (rootOf(load.getMemRef()) != root)
        continue;
      if (!match && load.getMemRef() == store.getMemRef() &&
          llvm::equal(load.getIndices(), store.getIndices()) &&
          load->isBeforeInBlock(store))
        match = load;
      else
        alone = false;
    }
    for (memref::StoreOp other : stores)
      if (other != store && rootOf(other.getMemRef()) == root)
        alone = false;
    if (match && alone)
      found.push_back({match, store});
  }
  return found;
}

/// Carries each accumulator of `loop` as an iteration argument: loaded
/// before the loop, stored after it.
void promote(scf::ForOp loop, MutableArrayRef<Accumulator> accumulators) {
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> inits;
  for (Accumulator &acc : accumulators)
    inits.push_back(memref::LoadOp::create(rewriter, acc.load.getLoc(),
                                           acc.load.getMemRef(),
                                           acc.load.getIndices()));
  unsigned first = loop.getNumRegionIterArgs();
  FailureOr<LoopLikeOpInterface> grown = loop.replaceWithAdditionalYields(
      rewriter, inits, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        SmallVector<Value> sums;
        for (Accumulator &acc : accumulators)
          sums.push_back(acc.store.getValueToStore());
        return sums;
      });
  auto newLoop = cast<scf::ForOp>(grown->getOperation());
  rewriter.setInsertionPointAfter(newLoop);
  for (auto [k, acc] : llvm::enumerate(accumulators)) {
    BlockArgument sum = newLoop.getRegionIterArgs()[first + k];
    rewriter.replaceAllUsesWith(acc.load.getResult(), sum);
    // A float sum `sum + x` may be reassociated: LLVM then vectorizes it
    // with partial sums (a different rounding, within the same bounds).
    if (auto add = acc.store.getValueToStore().getDefiningOp<arith::AddFOp>())
      if (add.getLhs() == sum || add.getRhs() == sum)
        add.setFastmath(add.getFastmath() | arith::FastMathFlags::reassoc);
    memref::StoreOp::create(rewriter, acc.store.getLoc(),
                            newLoop.getResult(first + k), acc.store.getMemRef(),
                            acc.store.getIndices());
    rewriter.eraseOp(acc.store);
    rewriter.eraseOp(acc.load);
  }
}

struct RecurPromoteAccumulatorsPass
    : recur::impl::RecurPromoteAccumulatorsBase<RecurPromoteAccumulatorsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      SmallVector<Accumulator> accumulators = findAccumulators(loop);
      if (!accumulators.empty())
        promote(loop, accumulators);
    }
  }
};

} // namespace
