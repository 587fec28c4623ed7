//===- Passes.h - recur -> recur transforms ---------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TRANSFORMS_PASSES_H
#define RECUR_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;

namespace recur {

#define GEN_PASS_DECL
#include "recur/Transforms/Passes.h.inc"

/// Attaches AdjointOpInterface to the upstream ops the front end emits as
/// glue (linalg.generic, linalg.fill, tensor slices, tensor.from_elements)
/// and to recur.scan, whose adjoint runs the scalar rules over its combine
/// region (registerScanAdjointModel).
void registerGlueAdjointModels(DialectRegistry &registry);
void registerScanAdjointModel(DialectRegistry &registry);

/// The suffix of the backward function of layer function F.
constexpr llvm::StringLiteral kBackwardSuffix = "_backward";

#define GEN_PASS_REGISTRATION
#include "recur/Transforms/Passes.h.inc"

} // namespace recur
} // namespace mlir

#endif // RECUR_TRANSFORMS_PASSES_H
