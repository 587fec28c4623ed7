//===- OutlineParallel.cpp - one function per OpenMP parallel region ------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//
//
// Moves each outermost omp.parallel of an llvm.func into an internal
// function of its own and merges the structurally identical ones. This is a
// compile-time measure: translation to LLVM IR outlines each parallel region
// with a walk of its whole enclosing function, and LLVM optimizes and
// generates code for each copy of a kernel; see the pass description.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
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
/// calls it in its place; returns the function.
LLVM::LLVMFuncOp outline(omp::ParallelOp region, Operation *after,
                         SymbolTable &symbols, unsigned &next) {
  auto host = region->getParentOfType<LLVM::LLVMFuncOp>();
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
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context),
                                          argumentTypes);
  auto func = LLVM::LLVMFuncOp::create(
      b, loc, freshName(symbols, host.getSymName(), next), type,
      LLVM::Linkage::Internal);
  symbols.insert(func);
  Block *entry = func.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (auto [value, argument] : llvm::zip(arguments, entry->getArguments()))
    mapping.map(value, argument);
  for (Operation *op : copied)
    b.clone(*op, mapping);
  b.clone(*region, mapping);
  LLVM::ReturnOp::create(b, loc, ValueRange());

  b.setInsertionPoint(region);
  LLVM::CallOp::create(b, loc, func, arguments);
  region.erase();
  return func;
}

/// A hash of what `isRegionEquivalentTo` compares: each operation's name,
/// attributes and result types, in order, and the function's type.
llvm::hash_code structuralHash(LLVM::LLVMFuncOp func) {
  llvm::hash_code hash = hash_value(func.getFunctionType());
  func.getBody().walk([&](Operation *op) {
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
    module.walk([&](omp::ParallelOp region) {
      if (!region->getParentOfType<omp::ParallelOp>() &&
          region->getParentOfType<LLVM::LLVMFuncOp>())
        regions.push_back(region);
    });

    SymbolTable symbols(module);
    unsigned next = 0;
    SmallVector<LLVM::LLVMFuncOp> outlined;
    // Each host's functions follow it in the order of its regions.
    DenseMap<Operation *, Operation *> last;
    for (omp::ParallelOp region : regions) {
      Operation *host = region->getParentOfType<LLVM::LLVMFuncOp>();
      Operation *&after = last[host];
      outlined.push_back(outline(region, after ? after : host, symbols, next));
      after = outlined.back();
    }

    // Merge: the first of each class of identical functions stays, the
    // calls of the others call it.
    DenseMap<llvm::hash_code, SmallVector<LLVM::LLVMFuncOp>> kept;
    DenseMap<StringAttr, FlatSymbolRefAttr> replacement;
    for (LLVM::LLVMFuncOp func : outlined) {
      SmallVector<LLVM::LLVMFuncOp> &candidates = kept[structuralHash(func)];
      LLVM::LLVMFuncOp same;
      for (LLVM::LLVMFuncOp other : candidates)
        if (other.getFunctionType() == func.getFunctionType() &&
            OperationEquivalence::isRegionEquivalentTo(
                &other.getBody(), &func.getBody(),
                OperationEquivalence::IgnoreLocations)) {
          same = other;
          break;
        }
      if (!same) {
        candidates.push_back(func);
        continue;
      }
      replacement[func.getSymNameAttr()] =
          FlatSymbolRefAttr::get(same.getSymNameAttr());
      symbols.erase(func);
    }
    if (replacement.empty())
      return;
    module.walk([&](LLVM::CallOp call) {
      FlatSymbolRefAttr callee = call.getCalleeAttr();
      if (!callee)
        return;
      auto it = replacement.find(callee.getAttr());
      if (it != replacement.end())
        call.setCalleeAttr(it->second);
    });
  }
};

} // namespace
