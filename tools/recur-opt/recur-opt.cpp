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
#include "recur/Transforms/Passes.h"
#include "recur/Target/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
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

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Recur optimizer driver\n", registry));
}
