//===- GlueAdjoints.cpp - adjoints of the upstream glue ops ---------------===//
//
// Part of the Recur project.
//
// AdjointOpInterface as external models of the upstream ops the front end
// emits around the recur ops: linalg.generic (elementwise maps, broadcasts,
// einsums, reductions), linalg.fill, tensor slices and tensor.from_elements.
//
//===----------------------------------------------------------------------===//

#include "ScalarAdjoints.h"

#include "Recur/IR/Recur.h"
#include "recur/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::recur;

namespace {

//===----------------------------------------------------------------------===//
// linalg.generic
//===----------------------------------------------------------------------===//

/// How an output's block argument is used in the body.
enum class Accumulation { None, Add, Max };

/// An output of a generic: how its result is formed and the value its
/// cotangent flows into.
struct OutputInfo {
  Accumulation kind = Accumulation::None;
  /// The yielded value without the accumulation (`e` of `out + e`).
  Value contribution;
  /// The accumulating op, not cloned into the adjoint bodies.
  Operation *combiner = nullptr;
};

FailureOr<OutputInfo> analyzeOutput(linalg::GenericOp generic,
                                    OpOperand &init) {
  OutputInfo info;
  BlockArgument out = generic.getMatchingBlockArgument(&init);
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  Value yielded =
      yield.getOperand(init.getOperandNumber() - generic.getNumDpsInputs());
  if (out.use_empty()) {
    info.contribution = yielded;
    return info;
  }
  Operation *combiner = yielded.getDefiningOp();
  if (!out.hasOneUse() || !combiner || !yielded.hasOneUse() ||
      combiner->getNumOperands() != 2 ||
      !llvm::is_contained(combiner->getOperands(), Value(out)))
    return generic.emitError("cannot differentiate an output that the body "
                             "reads other than as `out + e` or `max(out, e)`");
  if (isa<arith::AddFOp, complex::AddOp>(combiner))
    info.kind = Accumulation::Add;
  else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
               arith::MinNumFOp>(combiner))
    info.kind = Accumulation::Max;
  else
    return generic.emitError("cannot differentiate a reduction by '")
           << combiner->getName() << "'";
  info.combiner = combiner;
  info.contribution = combiner->getOperand(0) == out ? combiner->getOperand(1)
                                                     : combiner->getOperand(0);
  return info;
}

/// The loops of a generic seen from one of its operands: each loop as an
/// expression of the operand's indices (the first `rank` dims) and of the
/// loops the operand does not index (the `extra` dims after them).
struct InvertedIndexing {
  unsigned rank = 0, extra = 0;
  SmallVector<AffineExpr> loops;
};

/// Inverts `map` (loops -> operand indices) where each index is a loop
/// `d`, a split loop `d floordiv c` with `d mod c` (heads), a merged pair
/// `d_a * c + d_b` where d_b runs over c (merge_heads), or a constant; fails
/// when a loop is indexed twice or another expression appears.
FailureOr<InvertedIndexing> invertIndexing(AffineMap map,
                                           ArrayRef<int64_t> ranges) {
  MLIRContext *ctx = map.getContext();
  InvertedIndexing inv;
  inv.rank = map.getNumResults();
  SmallVector<AffineExpr> loops(map.getNumDims());
  auto set = [&](unsigned loop, AffineExpr e) {
    if (loops[loop])
      return false;
    loops[loop] = e;
    return true;
  };
  auto dimOf = [](AffineExpr e) -> std::optional<unsigned> {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return d.getPosition();
    return std::nullopt;
  };
  for (auto [j, e] : llvm::enumerate(map.getResults())) {
    AffineExpr idx = getAffineDimExpr(j, ctx);
    if (isa<AffineConstantExpr>(e))
      continue;
    if (std::optional<unsigned> d = dimOf(e)) {
      if (!set(*d, idx))
        return failure();
      continue;
    }
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin)
      return failure();
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (bin.getKind() == AffineExprKind::Mod && c && dimOf(bin.getLHS()))
      continue; // with its floordiv
    if (bin.getKind() == AffineExprKind::FloorDiv && c && dimOf(bin.getLHS())) {
      unsigned d = *dimOf(bin.getLHS());
      AffineExpr mod = getAffineDimExpr(d, ctx) % c.getValue();
      auto pos = llvm::find(map.getResults(), mod);
      if (pos == map.getResults().end() ||
          !set(d, idx * c.getValue() +
                      getAffineDimExpr(pos - map.getResults().begin(), ctx)))
        return failure();
      continue;
    }
    if (bin.getKind() == AffineExprKind::Add) {
      auto mul = dyn_cast<AffineBinaryOpExpr>(bin.getLHS());
      std::optional<unsigned> low = dimOf(bin.getRHS());
      if (!mul || mul.getKind() != AffineExprKind::Mul || !low)
        return failure();
      auto scale = dyn_cast<AffineConstantExpr>(mul.getRHS());
      std::optional<unsigned> high = dimOf(mul.getLHS());
      if (!scale || !high || ranges[*low] != scale.getValue() ||
          !set(*high, idx.floorDiv(scale.getValue())) ||
          !set(*low, idx % scale.getValue()))
        return failure();
      continue;
    }
    return failure();
  }
  for (AffineExpr &loop : loops)
    if (!loop)
      loop = getAffineDimExpr(inv.rank + inv.extra++, ctx);
  inv.loops = std::move(loops);
  return inv;
}

/// The cotangent of input `input` of `generic`: a generic over the same
/// loops reading the inputs, the cotangents of the results (and the results
/// for max accumulations), and summing the scalar reverse pass of the body
/// over the loops the input does not index.
FailureOr<Value> inputCotangent(OpBuilder &b, linalg::GenericOp generic,
                                OpOperand &input, ArrayRef<OutputInfo> outputs,
                                ArrayRef<Value> resultCts) {
  Location loc = generic.getLoc();
  AffineMap inputMap = generic.getMatchingIndexingMap(&input);
  FailureOr<InvertedIndexing> inv =
      invertIndexing(inputMap, generic.getStaticLoopRanges());
  if (failed(inv))
    return generic.emitError("cannot differentiate with respect to an input "
                             "indexed by ")
           << AffineMapAttr::get(inputMap);
  // The adjoint runs over the input's indices, then the loops the input
  // does not index (summed).
  unsigned numLoops = inv->rank + inv->extra;
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::parallel);
  for (unsigned e = 0; e < inv->extra; ++e)
    iterators[inv->rank + e] = utils::IteratorType::reduction;
  auto seen = [&](AffineMap map) {
    return simplifyAffineMap(
        map.replaceDimsAndSymbols(inv->loops, {}, numLoops, 0));
  };

  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : generic.getDpsInputOperands()) {
    operands.push_back(in->get());
    maps.push_back(seen(generic.getMatchingIndexingMap(in)));
  }
  // Per output with a cotangent: the cotangent, and the result when it
  // accumulates by max.
  SmallVector<std::pair<unsigned, unsigned>> ctArgs, resultArgs;
  for (auto [j, init] : llvm::enumerate(generic.getDpsInitsMutable())) {
    if (!resultCts[j])
      continue;
    AffineMap map = seen(generic.getMatchingIndexingMap(&init));
    ctArgs.push_back({j, operands.size()});
    operands.push_back(resultCts[j]);
    maps.push_back(map);
    if (outputs[j].kind == Accumulation::Max) {
      resultArgs.push_back({j, operands.size()});
      operands.push_back(generic.getResult(j));
      maps.push_back(map);
    }
  }
  Value init = zerosLike(b, loc, input.get());
  maps.push_back(AffineMap::get(
      numLoops, 0,
      b.getMultiDimIdentityMap(numLoops).getResults().take_front(inv->rank),
      b.getContext()));

  Block *body = generic.getBody();
  LogicalResult status = success();
  auto adjoint = linalg::GenericOp::create(
      b, loc, init.getType(), operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < generic.getNumDpsInputs(); ++i)
          mapping.map(body->getArgument(i), args[i]);
        // The original loop indices from the adjoint's.
        SmallVector<Value> indices;
        for (unsigned d = 0; d < numLoops; ++d)
          indices.push_back(linalg::IndexOp::create(nb, nl, d));
        for (Operation &op : body->without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(op)) {
            AffineMap loop =
                AffineMap::get(numLoops, 0, inv->loops[index.getDim()]);
            mapping.map(index.getResult(),
                        affine::AffineApplyOp::create(nb, nl, loop, indices));
            continue;
          }
          if (llvm::any_of(outputs, [&](const OutputInfo &o) {
                return o.combiner == &op;
              }))
            continue;
          nb.clone(op, mapping);
        }
        ScalarCotangents cts(nb);
        for (auto [output, pos] : ctArgs) {
          unsigned j = output;
          Value contribution = mapping.lookup(outputs[j].contribution);
          Value ct = args[pos];
          if (outputs[j].kind == Accumulation::Max) {
            // Only the element the max picked gets the cotangent.
            unsigned rpos = llvm::find_if(resultArgs, [&](auto p) {
                              return p.first == j;
                            })->second;
            Value picked = arith::CmpFOp::create(
                nb, nl, arith::CmpFPredicate::OEQ, contribution, args[rpos]);
            ct = arith::SelectOp::create(nb, nl, picked, ct,
                                         zeroScalar(nb, nl, ct.getType()));
          }
          cts.add(contribution, ct);
        }
        // The cloned body, last op first.
        SmallVector<Operation *> cloned;
        for (Operation &op : *nb.getInsertionBlock())
          if (!isa<linalg::IndexOp>(op))
            cloned.push_back(&op);
        if (failed(buildScalarAdjoints(nb, cloned, cts)))
          status = failure();
        // Summed over the loops the input does not index; with none, each
        // element is written once and the init (zeros) is not read.
        Value acc = args.back();
        Value ct = cts.get(args[input.getOperandNumber()]);
        if (!ct)
          ct = zeroScalar(nb, nl, acc.getType());
        linalg::YieldOp::create(nb, nl,
                                inv->extra ? addScalars(nb, nl, acc, ct) : ct);
      });
  if (failed(status))
    return failure();
  return adjoint.getResult(0);
}

struct GenericAdjoint
    : AdjointOpInterface::ExternalModel<GenericAdjoint, linalg::GenericOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             AdjointBuilder &adjoint) const {
    auto generic = cast<linalg::GenericOp>(op);
    if (!generic.hasPureTensorSemantics())
      return generic.emitError("cannot differentiate a generic on buffers");
    SmallVector<Value> resultCts;
    bool any = false;
    for (Value result : generic.getResults()) {
      resultCts.push_back(adjoint.getCotangent(result));
      any |= resultCts.back() != nullptr;
    }
    if (!any)
      return success();
    SmallVector<OutputInfo> outputs;
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      FailureOr<OutputInfo> info = analyzeOutput(generic, init);
      if (failed(info))
        return failure();
      outputs.push_back(*info);
    }
    // An accumulating output starts from its init: `out + e` passes the
    // cotangent to it unchanged (a max reduction starts from a constant).
    for (auto [j, init] : llvm::enumerate(generic.getDpsInitsMutable()))
      if (resultCts[j] && outputs[j].kind == Accumulation::Add)
        adjoint.addCotangent(init.get(), resultCts[j]);
    for (OpOperand *input : generic.getDpsInputOperands()) {
      if (!isa<RankedTensorType>(input->get().getType())) {
        if (isDifferentiableType(input->get().getType()) &&
            !matchPattern(input->get(), m_Constant()))
          return generic.emitError("cannot differentiate with respect to a "
                                   "scalar input");
        continue;
      }
      if (!isDifferentiableType(input->get().getType()))
        continue;
      FailureOr<Value> ct =
          inputCotangent(b, generic, *input, outputs, resultCts);
      if (failed(ct))
        return failure();
      adjoint.addCotangent(input->get(), *ct);
    }
    return success();
  }
};

//===----------------------------------------------------------------------===//
// linalg.fill, tensor slices, tensor.from_elements
//===----------------------------------------------------------------------===//

struct FillAdjoint
    : AdjointOpInterface::ExternalModel<FillAdjoint, linalg::FillOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &,
                             AdjointBuilder &adjoint) const {
    auto fill = cast<linalg::FillOp>(op);
    // The fill overwrites its init; a cotangent reaches only its value.
    if (adjoint.getCotangent(fill.getResult(0)) &&
        !matchPattern(fill.value(), m_Constant()))
      return fill.emitError("cannot differentiate a fill with a computed "
                            "value");
    return success();
  }
};

struct InsertSliceAdjoint
    : AdjointOpInterface::ExternalModel<InsertSliceAdjoint,
                                        tensor::InsertSliceOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             AdjointBuilder &adjoint) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    Value ct = adjoint.getCotangent(insert.getResult());
    if (!ct)
      return success();
    Location loc = insert.getLoc();
    // The slice's part goes to the source, the rest to the destination.
    adjoint.addCotangent(insert.getSource(),
                         tensor::ExtractSliceOp::create(
                             b, loc, insert.getSourceType(), ct,
                             insert.getMixedOffsets(), insert.getMixedSizes(),
                             insert.getMixedStrides()));
    adjoint.addCotangent(insert.getDest(),
                         tensor::InsertSliceOp::create(
                             b, loc, zerosLike(b, loc, insert.getSource()), ct,
                             insert.getMixedOffsets(), insert.getMixedSizes(),
                             insert.getMixedStrides()));
    return success();
  }
};

struct ExtractSliceAdjoint
    : AdjointOpInterface::ExternalModel<ExtractSliceAdjoint,
                                        tensor::ExtractSliceOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             AdjointBuilder &adjoint) const {
    auto extract = cast<tensor::ExtractSliceOp>(op);
    Value ct = adjoint.getCotangent(extract.getResult());
    if (!ct)
      return success();
    Location loc = extract.getLoc();
    adjoint.addCotangent(extract.getSource(),
                         tensor::InsertSliceOp::create(
                             b, loc, ct, zerosLike(b, loc, extract.getSource()),
                             extract.getMixedOffsets(), extract.getMixedSizes(),
                             extract.getMixedStrides()));
    return success();
  }
};

struct FromElementsAdjoint
    : AdjointOpInterface::ExternalModel<FromElementsAdjoint,
                                        tensor::FromElementsOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             AdjointBuilder &adjoint) const {
    auto from = cast<tensor::FromElementsOp>(op);
    Value ct = adjoint.getCotangent(from.getResult());
    if (!ct)
      return success();
    Location loc = from.getLoc();
    ArrayRef<int64_t> shape = from.getType().getShape();
    SmallVector<int64_t> strides = computeStrides(shape);
    for (auto [k, element] : llvm::enumerate(from.getElements())) {
      SmallVector<int64_t> pos = delinearize(k, strides);
      SmallVector<Value> indices;
      for (int64_t i : pos)
        indices.push_back(arith::ConstantIndexOp::create(b, loc, i));
      adjoint.addCotangent(element,
                           tensor::ExtractOp::create(b, loc, ct, indices));
    }
    return success();
  }
};

} // namespace

void mlir::recur::registerGlueAdjointModels(DialectRegistry &registry) {
  registerScanAdjointModel(registry);
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    linalg::GenericOp::attachInterface<GenericAdjoint>(*ctx);
    linalg::FillOp::attachInterface<FillAdjoint>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::InsertSliceOp::attachInterface<InsertSliceAdjoint>(*ctx);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceAdjoint>(*ctx);
    tensor::FromElementsOp::attachInterface<FromElementsAdjoint>(*ctx);
  });
}
