//===- RecurToGPU.h - offloading bufferized layers to the GPU ---*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_CONVERSION_RECURTOGPU_RECURTOGPU_H
#define RECUR_CONVERSION_RECURTOGPU_RECURTOGPU_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace recur {

#define GEN_PASS_DECL_RECURGPUOFFLOAD
#define GEN_PASS_DECL_RECURMERGEGPUKERNELS
#include "recur/Conversion/Passes.h.inc"

} // namespace recur
} // namespace mlir

#endif // RECUR_CONVERSION_RECURTOGPU_RECURTOGPU_H
