//===- DeriveBackward.cpp - reverse-mode differentiation of layers --------===//
//
// Part of the Recur project.
//
// recur-derive-backward: F_backward(F's arguments, cotangents of F's
// results) -> cotangents of F's arguments. The body recomputes F's forward
// ops, then visits them last to first, each op building its operands'
// cotangents through AdjointOpInterface.
//
//===----------------------------------------------------------------------===//

#include "ScalarAdjoints.h"

#include "Recur/IR/Recur.h"
#include "recur/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURDERIVEBACKWARD
#include "recur/Transforms/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// The cotangents of the values of one function body, summed over uses.
class Sweep : public AdjointBuilder {
public:
  Sweep(OpBuilder &b, bool keepAll) : b(b), scalars(b), keepAll(keepAll) {}

  bool keepsAllStates() const override { return keepAll; }

  Value getCotangent(Value value) override {
    if (!isa<ShapedType>(value.getType()))
      return scalars.get(value);
    return tensors.lookup(value);
  }

  void addCotangent(Value value, Value cotangent) override {
    if (!cotangent || !isDifferentiableType(value.getType()))
      return;
    if (!isa<ShapedType>(value.getType()))
      return scalars.add(value, cotangent);
    auto it = tensors.find(value);
    if (it == tensors.end()) {
      tensors[value] = cotangent;
      return;
    }
    it->second = addValues(b, value.getLoc(), it->second, cotangent);
  }

  ScalarCotangents &scalarCotangents() { return scalars; }

  /// Visits `ops` (in program order) last to first.
  LogicalResult run(ArrayRef<Operation *> ops);

  LogicalResult
  differentiateBody(OpBuilder &bb, Block &body, ValueRange args,
                    ArrayRef<Value> yielded, ArrayRef<Value> captured,
                    SmallVectorImpl<Value> &argCts,
                    SmallVectorImpl<Value> &capturedCts) override {
    IRMapping mapping;
    for (auto [from, to] : llvm::zip(body.getArguments(), args))
      mapping.map(from, to);
    SmallVector<Operation *> cloned;
    for (Operation &op : body.without_terminator())
      cloned.push_back(bb.clone(op, mapping));
    Sweep child(bb, keepAll);
    for (auto [v, ct] : llvm::zip(body.getTerminator()->getOperands(), yielded))
      child.addCotangent(mapping.lookupOrDefault(v), ct);
    if (failed(child.run(cloned)))
      return failure();
    for (Value a : args)
      argCts.push_back(child.getCotangent(a));
    for (Value c : captured)
      capturedCts.push_back(child.getCotangent(c));
    return success();
  }

private:
  OpBuilder &b;
  DenseMap<Value, Value> tensors;
  ScalarCotangents scalars;
  bool keepAll;
};

LogicalResult Sweep::run(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return getCotangent(r) != nullptr; }))
      continue;
    if (auto adjoint = dyn_cast<AdjointOpInterface>(op)) {
      if (failed(adjoint.buildAdjoint(b, *this)))
        return failure();
      continue;
    }
    if (hasScalarAdjoint(op)) {
      if (failed(buildScalarAdjoint(b, op, scalars)))
        return failure();
      continue;
    }
    // An op none of whose operands carries a gradient passes none.
    if (llvm::none_of(op->getOperandTypes(), isDifferentiableType))
      continue;
    return op->emitError("'") << op->getName()
                              << "' has no adjoint: the layer cannot be "
                                 "differentiated yet";
  }
  return success();
}

/// `recur.name` of argument or result attributes, "" when absent.
StringRef nameOf(DictionaryAttr attrs) {
  if (!attrs)
    return "";
  if (auto name = attrs.getAs<StringAttr>("recur.name"))
    return name.getValue();
  return "";
}

/// The attributes of a cotangent of a tensor described by `attrs`.
DictionaryAttr cotangentAttrs(Builder &b, DictionaryAttr attrs,
                              StringRef role) {
  SmallVector<NamedAttribute> out;
  out.push_back(b.getNamedAttr("recur.name",
                               b.getStringAttr("d_" + nameOf(attrs).str())));
  out.push_back(b.getNamedAttr("recur.role", b.getStringAttr(role)));
  if (attrs)
    if (Attribute dims = attrs.get("recur.dims"))
      out.push_back(b.getNamedAttr("recur.dims", dims));
  return b.getDictionaryAttr(out);
}

/// Builds `F_backward` after `func`; erases it again and fails when an op
/// has no adjoint.
LogicalResult deriveBackward(func::FuncOp func, bool keepAllStates) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("cannot differentiate a function of several "
                          "blocks");
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(func);
  FunctionType type = func.getFunctionType();
  SmallVector<Type> inputs(type.getInputs());
  llvm::append_range(inputs, type.getResults());
  auto backward = func::FuncOp::create(
      b, func.getLoc(), (func.getSymName() + kBackwardSuffix).str(),
      FunctionType::get(ctx, inputs, type.getInputs()));
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    argAttrs.push_back(func.getArgAttrDict(i));
    resultAttrs.push_back(cotangentAttrs(b, func.getArgAttrDict(i), "grad"));
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    argAttrs.push_back(
        cotangentAttrs(b, func.getResultAttrDict(i), "cotangent"));
  backward.setAllArgAttrs(argAttrs);
  backward.setAllResultAttrs(resultAttrs);

  Block *entry = backward.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping mapping;
  Block &body = func.getBody().front();
  for (auto [from, to] : llvm::zip(body.getArguments(), entry->getArguments()))
    mapping.map(from, to);
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  Operation *ret = body.getTerminator();

  Sweep sweep(b, keepAllStates);
  for (auto [k, result] : llvm::enumerate(ret->getOperands()))
    sweep.addCotangent(mapping.lookupOrDefault(result),
                       entry->getArgument(type.getNumInputs() + k));
  SmallVector<Operation *> forward;
  for (Operation &op : *entry)
    forward.push_back(&op);
  if (failed(sweep.run(forward))) {
    backward.erase();
    return failure();
  }
  SmallVector<Value> grads;
  for (BlockArgument arg :
       entry->getArguments().take_front(type.getNumInputs())) {
    Value ct = sweep.getCotangent(arg);
    if (!ct) {
      auto tensorType = cast<RankedTensorType>(arg.getType());
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(b, func.getLoc(), arg);
      Value empty = tensor::EmptyOp::create(b, func.getLoc(), sizes,
                                            tensorType.getElementType());
      Value zero = arith::ConstantOp::create(
          b, func.getLoc(),
          cast<TypedAttr>(b.getZeroAttr(tensorType.getElementType())));
      ct = linalg::FillOp::create(b, func.getLoc(), zero, empty).getResult(0);
    }
    grads.push_back(ct);
  }
  func::ReturnOp::create(b, func.getLoc(), grads);
  // The recomputed forward ops that no adjoint reads are dead: erased here,
  // last first, since once lowered to loops over scratch they no longer
  // look dead and would run (a whole window attention, say).
  SmallVector<Operation *> ops;
  for (Operation &op : entry->without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

struct RecurDeriveBackwardPass
    : recur::impl::RecurDeriveBackwardBase<RecurDeriveBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> layers;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func.isPublic() &&
          !func.getSymName().ends_with(kBackwardSuffix))
        layers.push_back(func);
    for (func::FuncOp func : layers) {
      if (!allowMissing) {
        if (failed(deriveBackward(func, keepAllStates)))
          return signalPassFailure();
        continue;
      }
      // The reason a layer has no backward becomes a remark on it.
      std::string reason;
      LogicalResult derived = success();
      {
        ScopedDiagnosticHandler capture(
            &getContext(), [&](Diagnostic &diag) -> LogicalResult {
              if (diag.getSeverity() != DiagnosticSeverity::Error)
                return failure();
              if (reason.empty())
                reason = diag.str();
              return success();
            });
        derived = deriveBackward(func, keepAllStates);
      }
      if (failed(derived))
        func.emitRemark("no backward for layer '")
            << func.getSymName() << "': " << reason;
    }
  }
};

} // namespace
