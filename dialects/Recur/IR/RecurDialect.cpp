//===- RecurDialect.cpp - recur dialect registration ----------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::recur;

#include "Recur/IR/RecurDialect.cpp.inc"
#include "Recur/IR/RecurEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Recur/IR/RecurAttrs.cpp.inc"

void RecurDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Recur/IR/RecurAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Recur/IR/RecurOps.cpp.inc"
      >();
  addRecurToLLVMInterface(this);
}
