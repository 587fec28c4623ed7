//===- RecurToLoops.cpp - scalar reference lowering of recur ops ----------===//
//
// Part of the Recur project.
//
// Lowers recur ops to sequential scf.for nests over tensors, one element at a
// time. This is the executable statement of each op's semantics: the
// optimized lowerings are tested against the same equations. The patterns
// live in one file per op family (Scans, Gates, Attention, Blocks, Depth,
// Experts); this file holds the pass.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Patterns.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::recur {
#define GEN_PASS_DEF_CONVERTRECURTOLOOPS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

struct ConvertRecurToLoopsPass
    : recur::impl::ConvertRecurToLoopsBase<ConvertRecurToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addLegalDialect<arith::ArithDialect, complex::ComplexDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<RecurDialect>();
    RewritePatternSet patterns(&getContext());
    populateRecurToLoopsPatterns(
        patterns, scanGroup, scanChunk, streamStoreBytes, scanUnrollBytes,
        glaColumnThreads, windowTiles, attentionProducts, scanSpread,
        scanSpreadChunk, scanWarps, scanWarpsEmulated, glaProducts,
        windowOnePass, glaColumnChunk, scanBlocks, scanBlocksAggregatesOnly,
        glaTiles, windowWarpTiles);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // The patterns tag every nest of independent iterations; the tags stay
    // only for a pipeline that parallelizes them.
    if (!markParallel)
      getOperation()->walk(
          [](scf::ForOp loop) { loop->removeAttr(loops::kParallelAttrName); });
  }
};

} // namespace

void mlir::recur::populateRecurToLoopsPatterns(
    RewritePatternSet &patterns, int64_t scanGroup, int64_t scanChunk,
    int64_t streamStoreBytes, int64_t scanUnrollBytes, bool glaColumnThreads,
    bool windowTiles, bool attentionProducts, int64_t scanSpread,
    int64_t scanSpreadChunk, bool scanWarps, bool emulateWarps,
    bool glaProducts, bool windowOnePass, int64_t glaColumnChunk,
    int64_t scanBlocks, bool blockAggregatesOnly, bool glaTiles,
    bool windowWarpTiles) {
  loops::populateScanPatterns(
      patterns, scanGroup, scanChunk, streamStoreBytes, scanUnrollBytes,
      glaColumnThreads, scanSpread, scanSpreadChunk, scanWarps, emulateWarps,
      glaProducts, glaColumnChunk, scanBlocks, blockAggregatesOnly, glaTiles);
  loops::populateGatePatterns(patterns);
  loops::populateAttentionPatterns(patterns, windowTiles, windowOnePass,
                                   attentionProducts, windowWarpTiles);
  loops::populateBlockPatterns(patterns);
  loops::populateDepthPatterns(patterns);
  loops::populateExpertPatterns(patterns);
}
