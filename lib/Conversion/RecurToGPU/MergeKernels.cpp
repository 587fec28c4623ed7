//===- MergeKernels.cpp - one GPU module per distinct kernel --------------===//
//
// Part of the Recur project.
//
// recur-merge-gpu-kernels: after gpu-kernel-outlining, a module per launch;
// modules holding the same kernel are merged into the first of them, and
// the kernels' matrix buffers aligned for a warp's tiles (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToGPU/RecurToGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURMERGEGPUKERNELS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// The attributes of `op` but its symbol name.
DictionaryAttr attributesButName(Operation *op) {
  NamedAttrList attrs(op->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  return attrs.getDictionary(op->getContext());
}

/// A hash of what `sameKernels` compares.
llvm::hash_code structuralHash(gpu::GPUModuleOp module) {
  llvm::hash_code hash = hash_value(attributesButName(module));
  for (Operation &top : module.getBody()->getOperations()) {
    hash = llvm::hash_combine(hash, top.getName(), attributesButName(&top));
    for (Region &region : top.getRegions())
      region.walk([&](Operation *op) {
        hash = llvm::hash_combine(hash,
                                  OperationEquivalence::computeHash(
                                      op, OperationEquivalence::ignoreHashValue,
                                      OperationEquivalence::ignoreHashValue,
                                      OperationEquivalence::IgnoreLocations));
      });
  }
  return hash;
}

/// Whether two outlined modules hold the same code: the same ops in order,
/// their attributes equal but the symbol names of the kernels (each module
/// names its kernel after its launch), their regions equivalent.
bool sameKernels(gpu::GPUModuleOp a, gpu::GPUModuleOp b) {
  if (attributesButName(a) != attributesButName(b))
    return false;
  auto opsA = a.getBody()->getOperations().begin(),
       endA = a.getBody()->getOperations().end();
  auto opsB = b.getBody()->getOperations().begin(),
       endB = b.getBody()->getOperations().end();
  for (; opsA != endA && opsB != endB; ++opsA, ++opsB) {
    Operation &x = *opsA, &y = *opsB;
    bool isKernel = isa<gpu::GPUFuncOp>(x);
    if (x.getName() != y.getName() || x.getNumRegions() != y.getNumRegions())
      return false;
    if (isKernel ? attributesButName(&x) != attributesButName(&y)
                 : x.getAttrDictionary() != y.getAttrDictionary())
      return false;
    for (auto [ra, rb] : llvm::zip(x.getRegions(), y.getRegions()))
      if (!OperationEquivalence::isRegionEquivalentTo(
              &ra, &rb, OperationEquivalence::IgnoreLocations))
        return false;
  }
  return opsA == endA && opsB == endB;
}

/// The alignment of a kernel's matrix buffers (workgroup attributions of
/// rank 2 or more): a warp's tile loads and stores (wmma) take addresses of
/// 256 bits.
constexpr int64_t kMatrixBufferAlign = 32;

struct RecurMergeGpuKernelsPass
    : recur::impl::RecurMergeGpuKernelsBase<RecurMergeGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(module.getContext());
    module.walk([&](gpu::GPUFuncOp kernel) {
      for (auto [index, buffer] :
           llvm::enumerate(kernel.getWorkgroupAttributions()))
        if (cast<MemRefType>(buffer.getType()).getRank() >= 2)
          kernel.setWorkgroupAttributionAttr(
              index, LLVM::LLVMDialect::getAlignAttrName(),
              builder.getI64IntegerAttr(kMatrixBufferAlign));
    });
    SymbolTable symbols(module);
    DenseMap<llvm::hash_code, SmallVector<gpu::GPUModuleOp>> kept;
    // The kernel that replaces each merged one, by module and kernel name.
    DenseMap<SymbolRefAttr, SymbolRefAttr> replacement;
    for (auto gpuModule :
         llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
      SmallVector<gpu::GPUModuleOp> &candidates =
          kept[structuralHash(gpuModule)];
      auto same = llvm::find_if(candidates, [&](gpu::GPUModuleOp other) {
        return sameKernels(other, gpuModule);
      });
      if (same == candidates.end()) {
        candidates.push_back(gpuModule);
        continue;
      }
      auto kernelsA = (*same).getOps<gpu::GPUFuncOp>();
      auto kernelsB = gpuModule.getOps<gpu::GPUFuncOp>();
      for (auto [keep, drop] : llvm::zip(kernelsA, kernelsB))
        replacement[SymbolRefAttr::get(
            gpuModule.getSymNameAttr(),
            {FlatSymbolRefAttr::get(SymbolTable::getSymbolName(drop))})] =
            SymbolRefAttr::get(
                (*same).getSymNameAttr(),
                {FlatSymbolRefAttr::get(SymbolTable::getSymbolName(keep))});
      symbols.erase(gpuModule);
    }
    if (replacement.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = replacement.find(launch.getKernel());
      if (it != replacement.end())
        launch.setKernelAttr(it->second);
    });
  }
};

} // namespace
