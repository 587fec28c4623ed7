//===- Passes.h - recur conversion passes -----------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_CONVERSION_PASSES_H
#define RECUR_CONVERSION_PASSES_H

#include "recur/Conversion/RecurToGPU/RecurToGPU.h"
#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

namespace mlir::recur {

#define GEN_PASS_REGISTRATION
#include "recur/Conversion/Passes.h.inc"

} // namespace mlir::recur

#endif // RECUR_CONVERSION_PASSES_H
