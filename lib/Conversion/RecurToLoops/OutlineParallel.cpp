//===- OutlineParallel.cpp - one function per OpenMP parallel region ------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//
//
// Moves each outermost omp.parallel of a func.func or an llvm.func into a
// function of its own that is never inlined, and merges the structurally
// identical ones. This is a compile-time measure: translation to LLVM IR
// outlines each parallel region with a walk of its whole enclosing
// function, and the lowering and LLVM would otherwise see each copy of a
// kernel; see the pass description.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECUROUTLINEPARALLEL
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// A value the region may recompute instead of receiving: the result of an
/// operation with no operands, no regions and no effects (a constant, a
/// global's address, undef, zero).
bool isCopiedIn(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         isMemoryEffectFree(def);
}

/// A name not yet in `symbols`: `<host>_parallel<N>`.
std::string freshName(SymbolTable &symbols, StringRef host, unsigned &next) {
  std::string name;
  do
    name = (host + "_parallel" + Twine(next++)).str();
  while (symbols.lookup(name));
  return name;
}

/// Moves `region` into a new internal function placed after `after` and
/// calls it in its place; returns the function. The function is of the
/// host's kind: a func.func (the pass run before the conversion to LLVM,
/// the function then private and marked to become an internal llvm.func)
/// or an llvm.func. Either way it is never inlined: each call site of a
/// kernel stays a call, and the code that hands the region its values to
/// the OpenMP runtime is in the kernel's function once.
FunctionOpInterface outline(omp::ParallelOp region, Operation *after,
                            SymbolTable &symbols, unsigned &next) {
  auto host = region->getParentOfType<FunctionOpInterface>();
  SetVector<Value> used(region->operand_begin(), region->operand_end());
  getUsedValuesDefinedAbove(region->getRegions(), used);
  SmallVector<Value> arguments;
  SetVector<Operation *> copied;
  for (Value value : used) {
    if (isCopiedIn(value))
      copied.insert(value.getDefiningOp());
    else
      arguments.push_back(value);
  }

  MLIRContext *context = region.getContext();
  Location loc = region.getLoc();
  OpBuilder b(context);
  b.setInsertionPointAfter(after);
  SmallVector<Type> argumentTypes(ValueRange(arguments).getTypes());
  std::string name = freshName(symbols, host.getName(), next);
  FunctionOpInterface func;
  Block *entry;
  if (isa<func::FuncOp>(host)) {
    auto made = func::FuncOp::create(b, loc, name,
                                     b.getFunctionType(argumentTypes, {}));
    made.setPrivate();
    made->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
    // The conversion to LLVM keeps `passthrough`, not `no_inline`.
    made->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
    entry = made.addEntryBlock();
    func = made;
  } else {
    auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context),
                                            argumentTypes);
    auto made =
        LLVM::LLVMFuncOp::create(b, loc, name, type, LLVM::Linkage::Internal);
    made.setNoInline(true);
    entry = made.addEntryBlock(b);
    func = made;
  }
  symbols.insert(func);
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (auto [value, argument] : llvm::zip(arguments, entry->getArguments()))
    mapping.map(value, argument);
  for (Operation *op : copied)
    b.clone(*op, mapping);
  b.clone(*region, mapping);
  if (isa<func::FuncOp>(func)) {
    func::ReturnOp::create(b, loc);
    b.setInsertionPoint(region);
    func::CallOp::create(b, loc, cast<func::FuncOp>(*func), arguments);
  } else {
    LLVM::ReturnOp::create(b, loc, ValueRange());
    b.setInsertionPoint(region);
    LLVM::CallOp::create(b, loc, cast<LLVM::LLVMFuncOp>(*func), arguments);
  }
  region.erase();
  return func;
}

/// A hash of what `isRegionEquivalentTo` compares: each operation's name,
/// attributes and result types, in order, and the function's type.
llvm::hash_code structuralHash(FunctionOpInterface func) {
  llvm::hash_code hash = hash_value(func.getFunctionType());
  func.getFunctionBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

struct RecurOutlineParallelPass
    : recur::impl::RecurOutlineParallelBase<RecurOutlineParallelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<omp::ParallelOp> regions;
    // Regions in the module's own functions (its symbol table is the one
    // the new functions join), not inside another parallel region.
    module.walk([&](omp::ParallelOp region) {
      auto host = region->getParentOfType<FunctionOpInterface>();
      if (!region->getParentOfType<omp::ParallelOp>() &&
          isa_and_present<func::FuncOp, LLVM::LLVMFuncOp>(host) &&
          host->getParentOp() == module)
        regions.push_back(region);
    });

    SymbolTable symbols(module);
    unsigned next = 0;
    SmallVector<FunctionOpInterface> outlined;
    // Each host's functions follow it in the order of its regions.
    DenseMap<Operation *, Operation *> last;
    for (omp::ParallelOp region : regions) {
      Operation *host = region->getParentOfType<FunctionOpInterface>();
      Operation *&after = last[host];
      outlined.push_back(outline(region, after ? after : host, symbols, next));
      after = outlined.back();
    }

    // Merge: the first of each class of identical functions stays, the
    // calls of the others call it.
    DenseMap<llvm::hash_code, SmallVector<FunctionOpInterface>> kept;
    DenseMap<StringAttr, FlatSymbolRefAttr> replacement;
    for (FunctionOpInterface func : outlined) {
      SmallVector<FunctionOpInterface> &candidates = kept[structuralHash(func)];
      FunctionOpInterface same;
      for (FunctionOpInterface other : candidates)
        if (other.getFunctionType() == func.getFunctionType() &&
            OperationEquivalence::isRegionEquivalentTo(
                &other.getFunctionBody(), &func.getFunctionBody(),
                OperationEquivalence::IgnoreLocations)) {
          same = other;
          break;
        }
      if (!same) {
        candidates.push_back(func);
        continue;
      }
      replacement[func.getNameAttr()] =
          FlatSymbolRefAttr::get(same.getNameAttr());
      symbols.erase(func);
    }
    if (replacement.empty())
      return;
    module.walk([&](CallOpInterface call) {
      auto callee = dyn_cast_if_present<FlatSymbolRefAttr>(
          dyn_cast<SymbolRefAttr>(call.getCallableForCallee()));
      if (!callee)
        return;
      auto it = replacement.find(callee.getAttr());
      if (it != replacement.end())
        call.setCalleeFromCallable(it->second);
    });
  }
};

} // namespace
