//===- StripAttributes.cpp - drop recur.* attributes before LLVM IR -------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURSTRIPFRONTENDATTRIBUTES
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

bool isRecurAttr(NamedAttribute attr) {
  return attr.getName().getValue().starts_with("recur.");
}

SmallVector<NamedAttribute> withoutRecur(ArrayRef<NamedAttribute> attrs) {
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute attr : attrs)
    if (!isRecurAttr(attr))
      kept.push_back(attr);
  return kept;
}

struct RecurStripFrontEndAttributesPass
    : recur::impl::RecurStripFrontEndAttributesBase<
          RecurStripFrontEndAttributesPass> {
  void runOnOperation() override { stripFrontEndAttributes(getOperation()); }
};

} // namespace

void mlir::recur::stripFrontEndAttributes(ModuleOp module) {
  // A loop annotation set on an scf.for (`llvm.loop_annotation`) reaches
  // its latch branch through the scf and cf lowerings as a discardable
  // attribute, which the translation to LLVM IR ignores: it becomes the
  // branch's `loop_annotation` here.
  StringRef annotation = "llvm.loop_annotation";
  module.walk([&](LLVM::BrOp br) {
    if (auto attr = dyn_cast_or_null<LLVM::LoopAnnotationAttr>(
            br->getDiscardableAttr(annotation))) {
      br.setLoopAnnotationAttr(attr);
      br->removeDiscardableAttr(annotation);
    }
  });
  module.walk([](LLVM::LLVMFuncOp func) {
    auto fn = cast<FunctionOpInterface>(func.getOperation());
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, withoutRecur(fn.getArgAttrs(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, withoutRecur(fn.getResultAttrs(i)));
    SmallVector<StringAttr> names;
    for (NamedAttribute attr : func->getDiscardableAttrs())
      if (isRecurAttr(attr))
        names.push_back(attr.getName());
    for (StringAttr name : names)
      func->removeDiscardableAttr(name);
  });
}
