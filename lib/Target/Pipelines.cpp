//===- Pipelines.cpp - recur pass pipelines -------------------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Target/Pipelines.h"

#include "recur/Conversion/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

void mlir::recur::buildReferenceLoweringPipeline(OpPassManager &pm) {
  // Spelled as text so the pipeline reads the same here, in the docs and in a
  // recur-opt command line.
  static constexpr const char *kPipeline =
      "convert-recur-to-loops,"
      "canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries},"
      "buffer-deallocation-pipeline,"
      "convert-bufferization-to-memref,"
      "convert-linalg-to-loops,"
      "convert-scf-to-cf,"
      "expand-strided-metadata,"
      "lower-affine,"
      "convert-complex-to-standard,"
      "convert-to-llvm,"
      "reconcile-unrealized-casts";
  if (failed(parsePassPipeline(kPipeline, pm)))
    llvm::report_fatal_error("recur: malformed reference lowering pipeline");
}

void mlir::recur::registerRecurPipelines() {
  PassPipelineRegistration<>(
      "recur-reference-to-llvm",
      "Lower recur through the scalar reference loops to the LLVM dialect",
      buildReferenceLoweringPipeline);
}
