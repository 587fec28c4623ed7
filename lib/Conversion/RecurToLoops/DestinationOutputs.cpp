//===- DestinationOutputs.cpp - outputs written into the caller's buffers -===//
//
// Part of the Recur project.
//
// recur-destination-outputs, after bufferization and before buffer
// deallocation: each layer function gets one argument per output (after
// its own arguments, in output order), the buffer the caller wants the
// output in; each backward function likewise one per gradient. Where the
// function returns a buffer it allocated in its entry block (directly, or
// through loops and branches that update it in place), that allocation becomes
// the argument, so the loops computing the output write straight into the
// caller's memory; any other returned buffer (an argument passed through, a
// view, a buffer made inside a loop, one already returned as an earlier output)
// is copied into the argument at the end. The outputs are then dropped from the
// results: the caller has them.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Utility.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURDESTINATIONOUTPUTS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// The results of `func` whose role is output (a layer's) or grad (its
/// backward's), in order.
SmallVector<unsigned> outputResults(func::FuncOp func) {
  SmallVector<unsigned> outputs;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (auto role = func.getResultAttrOfType<StringAttr>(i, "recur.role");
        role && (role.getValue() == "output" || role.getValue() == "grad"))
      outputs.push_back(i);
  return outputs;
}

LogicalResult addDestinations(func::FuncOp func) {
  SmallVector<unsigned> outputs = outputResults(func);
  if (outputs.empty())
    return success();
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("recur-destination-outputs: expected a body of "
                            "one block");
  for (unsigned i : outputs)
    if (!isa<MemRefType>(func.getResultTypes()[i]))
      return func.emitOpError("recur-destination-outputs: output ")
             << i << " is not a memref (run it after bufferization)";

  Builder b(func.getContext());
  unsigned first = func.getNumArguments();
  for (unsigned i : outputs) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("recur.role", b.getStringAttr("destination"))};
    if (auto name = func.getResultAttrOfType<StringAttr>(i, "recur.name"))
      attrs.push_back(b.getNamedAttr("recur.name", name));
    if (failed(func.insertArgument(func.getNumArguments(),
                                   func.getResultTypes()[i],
                                   b.getDictionaryAttr(attrs), func.getLoc())))
      return failure();
  }

  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [k, i] : llvm::enumerate(outputs)) {
    Value result = ret.getOperand(i);
    BlockArgument dest = func.getArgument(first + k);
    auto alloc = loops::inPlaceSource(result).getDefiningOp<memref::AllocOp>();
    if (alloc && alloc->getBlock() == &body &&
        alloc.getType() == dest.getType()) {
      alloc.replaceAllUsesWith(dest);
      alloc.erase();
      continue;
    }
    OpBuilder rb(ret);
    memref::CopyOp::create(rb, ret.getLoc(), result, dest);
  }
  // The outputs are no longer results: a returned argument would be copied
  // by the deallocation pipeline (a public function's results are owned by
  // its caller), which is the copy this pass removes.
  llvm::BitVector erase(func.getNumResults());
  for (unsigned i : outputs)
    erase.set(i);
  ret->eraseOperands(erase);
  return func.eraseResults(erase);
}

struct RecurDestinationOutputsPass
    : recur::impl::RecurDestinationOutputsBase<RecurDestinationOutputsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(addDestinations(func)))
        return signalPassFailure();
  }
};

} // namespace
