//===- Pipelines.h - recur pass pipelines -----------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TARGET_PIPELINES_H
#define RECUR_TARGET_PIPELINES_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class ModuleOp;
class OpPassManager;

namespace recur {

/// recur -> scalar loops (RecurToLoops) -> bufferized memrefs -> LLVM dialect.
/// The result runs under mlir-runner or the ExecutionEngine; it is the
/// correctness reference, not a fast path.
void buildReferenceLoweringPipeline(OpPassManager &pm);

/// recur (with linalg/arith/math/complex glue) to the LLVM dialect for the
/// CPU backend: the RecurToLoops loops with independent iterations and the
/// parallel dimensions of linalg glue on OpenMP, buffers allocated through
/// librecur_rt. Registered as `recur-cpu-to-llvm`.
void buildCpuLoweringPipeline(OpPassManager &pm);

/// Adds `F_backward` beside each layer F of `module` that can be
/// differentiated (recur-derive-backward{allow-missing}: a layer using an op
/// without an adjoint gets a remark saying so, and no backward). With
/// `keepAllStates` recurrences keep every intermediate state instead of the
/// states at chunk boundaries (the default).
LogicalResult deriveBackwardFunctions(ModuleOp module,
                                      bool keepAllStates = false);

/// Registers the pipelines above with the pass registry
/// (`--recur-reference-to-llvm`).
void registerRecurPipelines();

} // namespace recur
} // namespace mlir

#endif // RECUR_TARGET_PIPELINES_H
