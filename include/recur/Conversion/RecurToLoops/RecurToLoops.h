//===- RecurToLoops.h - scalar reference lowering ---------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_CONVERSION_RECURTOLOOPS_RECURTOLOOPS_H
#define RECUR_CONVERSION_RECURTOLOOPS_RECURTOLOOPS_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace recur {

#define GEN_PASS_DECL_CONVERTRECURTOLOOPS
#define GEN_PASS_DECL_RECURPARALLELIZELOOPS
#define GEN_PASS_DECL_RECURWORKSPACEBOUND
#define GEN_PASS_DECL_RECURFUSEELEMENTWISE
#define GEN_PASS_DECL_RECURINTERCHANGEREDUCTIONS
#include "recur/Conversion/Passes.h.inc"

/// `recur-workspace-bound` names the bound of layer function F
/// `F` + kWorkspaceSuffix.
constexpr llvm::StringLiteral kWorkspaceSuffix = "_workspace";

/// The channels one thread of a linear_scan along a dimension other than
/// the last scans together (`convert-recur-to-loops{scan-group=N}`): rows
/// of 128 suit a CPU core; a GPU wants one channel a thread.
constexpr int64_t kDefaultScanGroup = 128;

/// Adds the patterns that lower recur ops to scalar scf loops; `scanGroup`,
/// `scanChunk` and `glaColumnThreads` as the pass options scan-group,
/// scan-chunk and gla-column-threads.
void populateRecurToLoopsPatterns(RewritePatternSet &patterns,
                                  int64_t scanGroup = kDefaultScanGroup,
                                  int64_t scanChunk = 0,
                                  bool glaColumnThreads = false);

} // namespace recur
} // namespace mlir

#endif // RECUR_CONVERSION_RECURTOLOOPS_RECURTOLOOPS_H
