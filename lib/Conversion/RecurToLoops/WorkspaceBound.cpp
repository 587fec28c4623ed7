//===- WorkspaceBound.cpp - how much memory a kernel allocates -----------===//
//
// Part of the Recur project.
//
// For each layer function F, after bufferization and buffer deallocation,
// adds F_workspace: the same arguments and the thread count, returning an
// upper bound on the bytes F's memref.alloc ops hold at once. Each alloc's
// sizes are bounded above in terms of F's arguments (value bounds: loop
// bounds, affine.min, memref.dim), and its count is its number of possible
// live copies: the threads of each enclosing scf.parallel, and two for each
// enclosing sequential loop that carries buffers (the buffer of the previous
// iteration and the new one; deallocation frees every other per iteration).
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Utility.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Transforms/Transforms.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURWORKSPACEBOUND
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// Whether `loop` carries buffers from one iteration to the next.
bool carriesBuffers(Operation *loop) {
  return llvm::any_of(loop->getResultTypes(), llvm::IsaPred<BaseMemRefType>);
}

/// Whether calling `call` allocates nothing (the deallocation helper the
/// bufferization-to-memref conversion adds only compares pointers).
bool allocatesNothing(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!callee)
    return false;
  if (callee.isExternal())
    return callee->hasAttr(kAllocatesNothingAttrName);
  return !callee
              .walk([](Operation *op) {
                return isa<memref::AllocOp, memref::ReallocOp, CallOpInterface>(
                           op)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

/// Materializes, at the start of a function's entry block, upper bounds of
/// index values and memref sizes in terms of the function's arguments.
class BoundBuilder {
public:
  BoundBuilder(Block &entry, Location loc)
      : entry(entry), loc(loc), b(&entry, entry.begin()) {}

  OpBuilder &builder() { return b; }

  /// An upper bound of index value `value`.
  FailureOr<Value> valueBound(Value value) {
    Value bound = valueBoundOrNull(value);
    if (!bound)
      return failure();
    return bound;
  }

private:
  /// The value bounds of `value` (loop bounds, affine.min, memref.dim of
  /// arguments...), else, for the size of a buffer, the sizes it may have
  /// been given. Null when neither bounds it.
  Value valueBoundOrNull(Value value) {
    auto atArguments = [&](Value v, std::optional<int64_t>,
                           ValueBoundsConstraintSet &) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &entry;
    };
    FailureOr<OpFoldResult> bound = affine::reifyIndexValueBound(
        b, loc, presburger::BoundType::UB, value, atArguments,
        /*closedUB=*/true);
    if (succeeded(bound))
      return getValueOrCreateConstantIndexOp(b, loc, *bound);
    if (auto dim = value.getDefiningOp<memref::DimOp>())
      if (std::optional<int64_t> index = dim.getConstantIndex()) {
        FailureOr<Value> size = dimBound(dim.getSource(), *index);
        if (succeeded(size))
          return *size;
      }
    // What the value bounds miss (an affine.min among affine.min and
    // affine.max of loop-dependent values, as the band of keys a tile of
    // attention queries sees): a sum is bounded by the sum of its terms'
    // bounds, an affine.min by any of its results that is a constant or an
    // operand with a bound.
    if (auto sum = value.getDefiningOp<arith::AddIOp>()) {
      Value lhs = valueBoundOrNull(sum.getLhs());
      Value rhs = lhs ? valueBoundOrNull(sum.getRhs()) : nullptr;
      if (lhs && rhs)
        return arith::AddIOp::create(b, loc, lhs, rhs);
    }
    if (auto min = value.getDefiningOp<affine::AffineMinOp>()) {
      AffineMap map = min.getMap();
      for (AffineExpr e : map.getResults()) {
        if (auto c = dyn_cast<AffineConstantExpr>(e))
          return arith::ConstantIndexOp::create(b, loc, c.getValue());
        Value operand;
        if (auto d = dyn_cast<AffineDimExpr>(e))
          operand = min.getMapOperands()[d.getPosition()];
        else if (auto sym = dyn_cast<AffineSymbolExpr>(e))
          operand = min.getMapOperands()[map.getNumDims() + sym.getPosition()];
        if (operand)
          if (Value bound = valueBoundOrNull(operand))
            return bound;
      }
    }
    return nullptr;
  }

  /// An upper bound of size `dim` of buffer `memref`: null when `memref`
  /// only comes back to itself (a loop-carried buffer seen already).
  /// Buffers carried by loops and chosen by scf.if take the largest of the
  /// sizes they may have.
  FailureOr<Value> dimBound(Value memref, int64_t dim) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(dim))
      return Value(
          arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim)));
    if (!visiting.insert({memref, dim}).second)
      return Value();
    FailureOr<Value> result = dimBoundOf(memref, dim);
    visiting.erase({memref, dim});
    return result;
  }

  FailureOr<Value> dimBoundOf(Value memref, int64_t dim) {
    if (auto arg = dyn_cast<BlockArgument>(memref)) {
      if (arg.getOwner() == &entry)
        return Value(memref::DimOp::create(b, loc, memref, dim));
      if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
        if (arg.getArgNumber() >= 1)
          return loopDimBound(loop, arg.getArgNumber() - 1, dim);
      return failure();
    }
    Operation *def = memref.getDefiningOp();
    unsigned number = cast<OpResult>(memref).getResultNumber();
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return valueBound(
          alloc.getDynamicSizes()[alloc.getType().getDynamicDimIndex(dim)]);
    if (auto cast = dyn_cast<memref::CastOp>(def))
      return dimBound(cast.getSource(), dim);
    if (auto loop = dyn_cast<scf::ForOp>(def))
      return loopDimBound(loop, number, dim);
    if (auto branch = dyn_cast<scf::IfOp>(def))
      return largest({branch.thenYield().getOperand(number),
                      branch.elseYield().getOperand(number)},
                     dim);
    return failure();
  }

  FailureOr<Value> loopDimBound(scf::ForOp loop, unsigned k, int64_t dim) {
    return largest({loop.getInitArgs()[k], loop.getYieldedValues()[k]}, dim);
  }

  /// The largest of the bounds of size `dim` of `memrefs`.
  FailureOr<Value> largest(ArrayRef<Value> memrefs, int64_t dim) {
    Value result;
    for (Value memref : memrefs) {
      FailureOr<Value> bound = dimBound(memref, dim);
      if (failed(bound))
        return failure();
      if (!*bound)
        continue;
      result = result
                   ? arith::MaxUIOp::create(b, loc, result, *bound).getResult()
                   : *bound;
    }
    return result;
  }

  Block &entry;
  Location loc;
  OpBuilder b;
  /// The buffer sizes being bounded, to stop at loop-carried cycles.
  llvm::DenseSet<std::pair<Value, int64_t>> visiting;
};

/// Drops everything of `workspace` after `ret` (the return of the bound at
/// the start of its entry block), and gives it its type.
void dropBodyAfter(func::FuncOp workspace, Operation *ret) {
  Block &entry = workspace.getBody().front();
  // Last first: users before producers.
  while (&entry.back() != ret)
    entry.back().erase();
  while (workspace.getBody().getBlocks().size() > 1)
    workspace.getBody().back().erase();
  workspace.setFunctionType(
      FunctionType::get(workspace.getContext(), entry.getArgumentTypes(),
                        {IndexType::get(workspace.getContext())}));
}

/// Builds, at the start of `workspace` (a clone of a layer function), the
/// bound on what the clone's allocs hold at once, then drops its body.
LogicalResult buildBound(func::FuncOp workspace) {
  Block &entry = workspace.getBody().front();
  Location loc = workspace.getLoc();
  Value threads = entry.getArguments().back();

  SmallVector<memref::AllocOp> allocs;
  WalkResult walk = workspace.walk([&](Operation *op) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      allocs.push_back(alloc);
      return WalkResult::advance();
    }
    auto call = dyn_cast<func::CallOp>(op);
    if (isa<memref::ReallocOp>(op) || (call && !allocatesNothing(call)) ||
        (!call && isa<CallOpInterface>(op))) {
      op->emitRemark("recur-workspace-bound: cannot bound the memory of '")
          << op->getName() << "'";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // On failure, the bound is unknown (-1); a remark says why.
  BoundBuilder bounds(entry, loc);
  OpBuilder &b = bounds.builder();
  Value total = arith::ConstantIndexOp::create(b, loc, 0);
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    std::optional<int64_t> bytes = loops::elementBytes(type.getElementType());
    if (!bytes)
      return alloc.emitRemark("recur-workspace-bound: no byte size for ")
             << type.getElementType();
    int64_t constant = *bytes;
    Value size = nullptr;
    auto multiply = [&](Value factor) {
      size = size ? arith::MulIOp::create(b, loc, size, factor).getResult()
                  : factor;
    };
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      if (!type.isDynamicDim(dim)) {
        constant *= type.getDimSize(dim);
        continue;
      }
      FailureOr<Value> bound = bounds.valueBound(
          alloc.getDynamicSizes()[type.getDynamicDimIndex(dim)]);
      if (failed(bound))
        return alloc.emitRemark(
                   "recur-workspace-bound: no upper bound for dimension ")
               << dim << " in terms of the function's arguments";
      multiply(*bound);
    }
    // Bytes of one copy; an aligned alloc asks for `alignment` more, to
    // align by hand.
    multiply(arith::ConstantIndexOp::create(b, loc, constant));
    if (std::optional<uint64_t> alignment = alloc.getAlignment())
      size = arith::AddIOp::create(
          b, loc, size, arith::ConstantIndexOp::create(b, loc, *alignment));
    // Live copies.
    int64_t copies = 1;
    for (Operation *parent = alloc->getParentOp(); parent != workspace;
         parent = parent->getParentOp()) {
      if (isa<scf::ParallelOp>(parent))
        multiply(threads);
      else if (isa<LoopLikeOpInterface>(parent) && carriesBuffers(parent))
        copies *= 2;
    }
    multiply(arith::ConstantIndexOp::create(b, loc, copies));
    total = arith::AddIOp::create(b, loc, total, size);
  }
  dropBodyAfter(workspace, func::ReturnOp::create(b, loc, total));
  return success();
}

/// Makes `workspace` return -1: the bound is unknown.
void returnUnknown(func::FuncOp workspace) {
  Block &entry = workspace.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = workspace.getLoc();
  dropBodyAfter(
      workspace,
      func::ReturnOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, -1).getResult()));
}

struct RecurWorkspaceBoundPass
    : recur::impl::RecurWorkspaceBoundBase<RecurWorkspaceBoundPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> layers;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.isPublic())
        layers.push_back(func);
    for (func::FuncOp func : layers) {
      OpBuilder b(module.getContext());
      b.setInsertionPointAfter(func);
      auto workspace = cast<func::FuncOp>(b.clone(*func));
      workspace.setSymName((func.getSymName() + kWorkspaceSuffix).str());
      workspace.removeResAttrsAttr();
      if (failed(workspace.insertArgument(workspace.getNumArguments(),
                                          b.getIndexType(), nullptr,
                                          workspace.getLoc())))
        return signalPassFailure();
      // Ops the bound code already built at the start stay until
      // returnUnknown drops them with the rest.
      if (failed(buildBound(workspace)))
        returnUnknown(workspace);
    }
  }
};

} // namespace
