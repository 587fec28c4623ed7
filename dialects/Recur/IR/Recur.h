//===- Recur.h - recur dialect declarations ---------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_DIALECT_RECUR_IR_RECUR_H
#define RECUR_DIALECT_RECUR_IR_RECUR_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Recur/IR/Adjoint.h"
#include "Recur/IR/RecurDialect.h.inc"
#include "Recur/IR/RecurInterfaces.h.inc"
#include "Recur/IR/RecurEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Recur/IR/RecurAttrs.h.inc"

#define GET_OP_CLASSES
#include "Recur/IR/RecurOps.h.inc"

#endif // RECUR_DIALECT_RECUR_IR_RECUR_H
