//===- recur-opt.cpp - mlir-opt for the recur dialect ---------------------===//
//
// Part of the Recur project.
//
// Registers the recur dialect, every recur pass and pipeline, and the upstream
// dialects, passes and extensions the lowerings use.
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"
#include "recur/Conversion/Passes.h"
#include "recur/Target/Pipelines.h"
#include "recur/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::recur::registerRecurConversionPasses();
  mlir::recur::registerRecurTransformsPasses();
  mlir::recur::registerRecurPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::recur::registerGlueAdjointModels(registry);
  registry.insert<mlir::recur::RecurDialect>();
  // gpu-module-to-binary translates GPU modules to LLVM IR.
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Recur optimizer driver\n", registry));
}
