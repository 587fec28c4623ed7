//===- RecurAdjoints.cpp - reverse-mode adjoints of the recur ops --------===//
//
// Part of the Recur project.
//
// AdjointOpInterface::buildAdjoint of each differentiable recur op: the
// cotangents of its operands from those of its results, as recur ops and
// elementwise linalg glue (so the backward lowers like any layer).
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Transforms/RegionUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::recur;

namespace {

/// conj(x) for a complex scalar, x for a real one.
Value conjScalar(OpBuilder &b, Location loc, Value x) {
  if (isa<ComplexType>(x.getType()))
    return complex::ConjOp::create(b, loc, x);
  return x;
}

/// x * y where x may be the real part type of a complex y.
Value mulScalars(OpBuilder &b, Location loc, Value x, Value y) {
  auto cy = dyn_cast<ComplexType>(y.getType());
  if (!cy)
    return arith::MulFOp::create(b, loc, x, y);
  if (!isa<ComplexType>(x.getType())) {
    Value zero = arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(b.getZeroAttr(cy.getElementType())));
    x = complex::CreateOp::create(b, loc, cy, x, zero);
  }
  return complex::MulOp::create(b, loc, x, y);
}

/// One of scalar `type`.
Value oneScalar(OpBuilder &b, Location loc, Type type) {
  if (auto complex = dyn_cast<ComplexType>(type)) {
    Type part = complex.getElementType();
    return complex::ConstantOp::create(
        b, loc, complex,
        b.getArrayAttr({b.getFloatAttr(part, 1.0), b.getFloatAttr(part, 0.0)}));
  }
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 1.0));
}

/// A tensor of ones shaped like `like` but `size` long along `axis`.
Value onesAlong(OpBuilder &b, Location loc, Value like, int64_t axis,
                int64_t size) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  sizes[axis] = b.getIndexAttr(size);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  return linalg::FillOp::create(b, loc,
                                oneScalar(b, loc, type.getElementType()), empty)
      .getResult(0);
}

/// The slice of `tensor` at position `pos` of `axis`, without that axis.
Value takeAlong(OpBuilder &b, Location loc, Value tensor, int64_t axis,
                OpFoldResult pos) {
  auto type = cast<RankedTensorType>(tensor.getType());
  AxisRange r = rangeAlong(b, loc, tensor, axis, pos, b.getIndexAttr(1));
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, resultType, tensor, r.offsets,
                                        r.sizes, r.strides);
}

/// `part` (the type of `into` without `axis`) written at `pos` of `axis`.
Value putAlong(OpBuilder &b, Location loc, Value part, Value into, int64_t axis,
               OpFoldResult pos) {
  AxisRange r = rangeAlong(b, loc, into, axis, pos, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, part, into, r.offsets, r.sizes,
                                       r.strides);
}

/// `values` (of rank r) written into `into` from `pos` of `axis`.
Value putRange(OpBuilder &b, Location loc, Value values, Value into,
               int64_t axis, OpFoldResult pos) {
  AxisRange r = rangeAlong(b, loc, values, axis, pos,
                           tensor::getMixedSize(b, loc, values, axis));
  return tensor::InsertSliceOp::create(b, loc, values, into, r.offsets, r.sizes,
                                       r.strides);
}

/// A generic over the shape of `fulls[0]` (rank r) reading `prefixes`
/// (tensors shaped like `prefixLike`, of rank p <= r: the leading dimensions,
/// broadcast over the trailing ones) and `fulls`, computing body(prefix
/// scalars, full scalars). It writes a tensor of `fulls[0]`'s shape, or with
/// `reduce` one of `prefixLike`'s shape, summing over the trailing
/// dimensions.
Value prefixGeneric(
    OpBuilder &b, Location loc, Value prefixLike, ValueRange prefixes,
    ValueRange fulls, bool reduce, Type elementType,
    function_ref<Value(OpBuilder &, Location, ValueRange, ValueRange)> body) {
  int64_t r = cast<RankedTensorType>(fulls[0].getType()).getRank();
  int64_t p = cast<RankedTensorType>(prefixLike.getType()).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(r);
  AffineMap lead =
      AffineMap::get(r, 0, identity.getResults().take_front(p), b.getContext());
  SmallVector<utils::IteratorType> iterators(r, utils::IteratorType::parallel);
  Value init;
  if (reduce) {
    for (int64_t d = p; d < r; ++d)
      iterators[d] = utils::IteratorType::reduction;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, prefixLike);
    init = linalg::FillOp::create(
               b, loc, zeroScalar(b, loc, elementType),
               tensor::EmptyOp::create(b, loc, sizes, elementType).getResult())
               .getResult(0);
  } else {
    init = tensor::EmptyOp::create(
        b, loc, tensor::getMixedSizes(b, loc, fulls[0]), elementType);
  }
  SmallVector<Value> inputs(prefixes);
  llvm::append_range(inputs, fulls);
  SmallVector<AffineMap> maps(prefixes.size(), lead);
  maps.append(fulls.size(), identity);
  maps.push_back(reduce ? lead : identity);
  size_t np = prefixes.size(), nf = fulls.size();
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value v = body(nb, nl, args.take_front(np), args.slice(np, nf));
        if (reduce)
          v = addScalars(nb, nl, args.back(), v);
        linalg::YieldOp::create(nb, nl, v);
      });
  return generic.getResult(0);
}

/// The adjoint of an op through ops that compute the same results
/// (`decomposed`, in order; `names` pairs their results with the op's):
/// each one's adjoint, last first. The decomposed forward ops are dead
/// afterwards unless an adjoint reads them.
LogicalResult adjointThroughOps(OpBuilder &b, ArrayRef<Operation *> decomposed,
                                ArrayRef<std::pair<Value, Value>> names,
                                AdjointBuilder &adjoint) {
  // Each stand-in starts from the cotangent of the result it stands for;
  // the decomposed ops that use it add theirs.
  for (auto [from, to] : names)
    if (Value ct = adjoint.getCotangent(to))
      adjoint.addCotangent(from, ct);
  for (Operation *op : llvm::reverse(decomposed)) {
    if (llvm::none_of(op->getResults(), [&](Value r) {
          return adjoint.getCotangent(r) != nullptr;
        }))
      continue;
    auto model = dyn_cast<AdjointOpInterface>(op);
    // An op none of whose operands carries a gradient passes none.
    if (!model && llvm::none_of(op->getOperandTypes(), isDifferentiableType))
      continue;
    if (!model)
      return op->emitError("no adjoint for '") << op->getName() << "'";
    if (failed(model.buildAdjoint(b, adjoint)))
      return failure();
  }
  return success();
}

/// The ops a decomposition built at the end of `block` after `last` (null:
/// the block was empty), in order.
SmallVector<Operation *> builtSince(Block *block, Operation *last) {
  SmallVector<Operation *> ops;
  for (Operation *op = last ? last->getNextNode() : &block->front(); op;
       op = op->getNextNode())
    ops.push_back(op);
  return ops;
}

/// The adjoint of an elementwise op through the linalg.generic that
/// computes the same thing over the shape of `like` (operands broadcast by
/// numpy rules, aligned on the trailing dimensions): the generic's own
/// adjoint (an external model) does the work, and the generic itself is
/// dead afterwards.
LogicalResult adjointThroughGeneric(
    OpBuilder &b, Location loc, Value result, ValueRange operands,
    AdjointBuilder &adjoint,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto type = cast<RankedTensorType>(result.getType());
  int64_t rank = type.getRank();
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    auto opType = cast<RankedTensorType>(operand.getType());
    SmallVector<AffineExpr> exprs;
    int64_t lead = rank - opType.getRank();
    for (int64_t d = 0; d < opType.getRank(); ++d)
      exprs.push_back(opType.getDimSize(d) == 1 &&
                              type.getDimSize(lead + d) != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(lead + d));
    maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, operands.front()),
      type.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, type, operands, init, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args.drop_back()));
      });
  return adjointThroughOps(b, {generic.getOperation()},
                           {{generic.getResult(0), result}}, adjoint);
}

Value sigmoidScalar(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 1.0));
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

} // namespace

//===----------------------------------------------------------------------===//
// linear_scan
//===----------------------------------------------------------------------===//

// h_t = a_t h_{t-1} + b_t (t forward; backward for `reverse`). With g_t the
// whole cotangent of h_t:
//   g_t = dh_t + conj(a_{t+1}) g_{t+1},  g after the last step = dlast
//     (a reverse scan over the decays shifted by one, 1 at the end)
//   db_t = g_t,  da_t = sum over broadcast dims of g_t conj(h_{t-1})
//     (its real part for a real decay of a complex state),
//   dinit = conj(a_0) g_0.
LogicalResult LinearScanOp::buildAdjoint(OpBuilder &b,
                                         AdjointBuilder &adjoint) {
  Value dh = adjoint.getCotangent(getH());
  Value dlast = adjoint.getCotangent(getLast());
  if (!dh && !dlast)
    return success();
  Location loc = getLoc();
  int64_t axis = getAxis();
  bool reverse = getReverse();
  Value a = getA(), bIn = getB();
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(bIn.getType());
  Type aElem = aType.getElementType(), bElem = bType.getElementType();
  if (!dh)
    dh = zerosLike(b, loc, bIn);

  // The decays of the adjoint scan: conj(a) shifted one step towards the
  // end the forward scan starts from, 1 where it has no successor.
  OpFoldResult steps = tensor::getMixedSize(b, loc, a, axis);
  Value stepsV = getValueOrCreateConstantIndexOp(b, loc, steps);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value rest = arith::SubIOp::create(b, loc, stepsV, c1);
  Value aConj = a;
  if (isa<ComplexType>(aElem))
    aConj = elementwise(b, loc, {a}, aElem,
                        [](OpBuilder &nb, Location nl, ValueRange args) {
                          return conjScalar(nb, nl, args[0]);
                        });
  Value one = onesAlong(b, loc, a, axis, 1);
  Value shifted = reverse ? concatAlong(b, loc, one,
                                        sliceAlong(b, loc, aConj, axis,
                                                   b.getIndexAttr(0), rest),
                                        axis)
                          : concatAlong(b, loc,
                                        sliceAlong(b, loc, aConj, axis,
                                                   b.getIndexAttr(1), rest),
                                        one, axis);
  auto scan = LinearScanOp::create(b, loc, shifted, dh, dlast,
                                   b.getI64IntegerAttr(axis),
                                   reverse ? UnitAttr() : b.getUnitAttr());
  Value g = scan.getH(), gFirst = scan.getLast();
  adjoint.addCotangent(bIn, g);

  // The states each step started from: init (or zeros), then h shifted.
  Value start = getInit();
  Value hPrev = zerosLike(b, loc, bIn);
  OpFoldResult initPos = reverse ? OpFoldResult(rest) : b.getIndexAttr(0);
  if (start)
    hPrev = putAlong(b, loc, start, hPrev, axis, initPos);
  hPrev =
      reverse
          ? putRange(b, loc,
                     sliceAlong(b, loc, getH(), axis, b.getIndexAttr(1), rest),
                     hPrev, axis, b.getIndexAttr(0))
          : putRange(b, loc,
                     sliceAlong(b, loc, getH(), axis, b.getIndexAttr(0), rest),
                     hPrev, axis, b.getIndexAttr(1));
  // da = sum over the broadcast dims of g conj(hprev) (real part for a
  // real decay of a complex state).
  bool realOfComplex = aElem != bElem;
  Value da = prefixGeneric(
      b, loc, a, {}, {g, hPrev}, /*reduce=*/true, aElem,
      [&](OpBuilder &nb, Location nl, ValueRange, ValueRange f) {
        Value v =
            isa<ComplexType>(bElem)
                ? complex::MulOp::create(nb, nl, f[0], conjScalar(nb, nl, f[1]))
                      .getResult()
                : arith::MulFOp::create(nb, nl, f[0], f[1]).getResult();
        return realOfComplex ? complex::ReOp::create(nb, nl, v).getResult() : v;
      });
  adjoint.addCotangent(a, da);

  // dinit = conj(a at the first step taken) g there.
  if (start) {
    Value aFirst = takeAlong(b, loc, a, axis,
                             reverse ? OpFoldResult(rest) : b.getIndexAttr(0));
    Value dinit = prefixGeneric(
        b, loc, aFirst, {aFirst}, {gFirst}, /*reduce=*/false, bElem,
        [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) {
          return mulScalars(nb, nl, conjScalar(nb, nl, p[0]), f[0]);
        });
    adjoint.addCotangent(start, dinit);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// gated_linear_attention
//===----------------------------------------------------------------------===//

namespace {

/// The cotangents of the values of a piece of the backward built apart
/// (one chunk of a recurrence), summed over uses; keeps every state.
class LocalAdjoint : public AdjointBuilder {
public:
  explicit LocalAdjoint(OpBuilder &b) : b(b) {}
  Value getCotangent(Value value) override { return cts.lookup(value); }
  void addCotangent(Value value, Value cotangent) override {
    if (!cotangent || !isDifferentiableType(value.getType()))
      return;
    Value &slot = cts[value];
    slot = slot ? addValues(b, value.getLoc(), slot, cotangent) : cotangent;
  }
  bool keepsAllStates() const override { return true; }
  LogicalResult differentiateBody(OpBuilder &, Block &body, ValueRange,
                                  ArrayRef<Value>, ArrayRef<Value>,
                                  SmallVectorImpl<Value> &,
                                  SmallVectorImpl<Value> &) override {
    return failure();
  }

private:
  OpBuilder &b;
  DenseMap<Value, Value> cts;
};

} // namespace

/// The chunk of gla's reverse sweep when the op names none: the most steps,
/// a power of two from 8 to 64, whose states (dk x dv each) hold at most
/// 512 KiB, a core's L2 cache on this project's machine (the sweep stacks
/// a chunk's states and reads them back in reverse); 64 when dk or dv is
/// not static. With dk = dv = 64 in f32 (chunks of 32), gla_bwd took 216
/// and 218 ms against 224 and 236 ms with chunks of 64 (2026-11-27,
/// docs/performance.md); the results are the same to the bit.
static int64_t defaultGradChunk(GatedLinearAttentionOp op) {
  constexpr int64_t kStackBytes = int64_t(512) << 10;
  auto stateType = cast<RankedTensorType>(op.getState().getType());
  int64_t rank = stateType.getRank();
  int64_t dk = stateType.getDimSize(rank - 2),
          dv = stateType.getDimSize(rank - 1);
  if (ShapedType::isDynamic(dk) || ShapedType::isDynamic(dv))
    return 64;
  Type elem = stateType.getElementType();
  auto complexType = dyn_cast<ComplexType>(elem);
  Type scalar = complexType ? complexType.getElementType() : elem;
  int64_t bytes = (complexType ? 2 : 1) * scalar.getIntOrFloatBitWidth() / 8;
  int64_t chunk = 64;
  while (chunk > 8 && chunk * dk * dv * bytes > kStackBytes)
    chunk /= 2;
  return chunk;
}

// By default (AdjointBuilder::keepsAllStates false), the reverse sweep
// gated_linear_attention_grad, which keeps the state at chunk boundaries
// (the op's chunk size, or defaultGradChunk without one) and recomputes
// each chunk. Keeping all states, through the definition over the whole
// sequence (O(T dk dv) memory): b = k (x) v, S = linear_scan(a, b, init), y =
// Re(sum_i q_i S_i).
LogicalResult GatedLinearAttentionOp::buildAdjoint(OpBuilder &b,
                                                   AdjointBuilder &adjoint) {
  if (!adjoint.getCotangent(getY()) && !adjoint.getCotangent(getState()))
    return success();
  Location loc = getLoc();
  if (!adjoint.keepsAllStates()) {
    auto grad = GatedLinearAttentionGradOp::create(
        b, loc, getQ(), getK(), getV(), getA(),
        adjoint.getCotangentOrZeros(b, loc, getY()),
        adjoint.getCotangentOrZeros(b, loc, getState()), getInit(),
        getChunkSize().value_or(defaultGradChunk(*this)));
    adjoint.addCotangent(getQ(), grad.getDq());
    adjoint.addCotangent(getK(), grad.getDk());
    adjoint.addCotangent(getV(), grad.getDv());
    adjoint.addCotangent(getA(), grad.getDa());
    if (getInit())
      adjoint.addCotangent(getInit(), grad.getDinit());
    return success();
  }
  MLIRContext *ctx = b.getContext();
  Value q = getQ(), k = getK(), v = getV();
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t r = qType.getRank(), t = r - 2;
  Type real = qType.getElementType();
  Type stateElem = cast<RankedTensorType>(getA().getType()).getElementType();
  bool complexState = isa<ComplexType>(stateElem);
  auto dims = [&](int64_t n) {
    SmallVector<AffineExpr> e;
    for (int64_t d = 0; d < n; ++d)
      e.push_back(getAffineDimExpr(d, ctx));
    return e;
  };
  auto mapOf = [&](int64_t numDims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(numDims, 0, results, ctx);
  };

  // b[..., t, i, j] = k[..., t, i] v[..., t, j] over loops (..., t, i, j).
  SmallVector<AffineExpr> l = dims(r + 1);
  SmallVector<AffineExpr> lead(l.begin(), l.begin() + t + 1); // ..., t
  SmallVector<AffineExpr> kIdx(lead), vIdx(lead);
  kIdx.push_back(l[r - 1]);
  vIdx.push_back(l[r]);
  SmallVector<OpFoldResult> bSizes = tensor::getMixedSizes(b, loc, k);
  bSizes.push_back(tensor::getMixedSize(b, loc, v, r - 1));
  Value bInit = tensor::EmptyOp::create(b, loc, bSizes, stateElem);
  auto outer = linalg::GenericOp::create(
      b, loc, bInit.getType(), ValueRange{k, v}, bInit,
      {mapOf(r + 1, kIdx), mapOf(r + 1, vIdx), mapOf(r + 1, l)},
      SmallVector<utils::IteratorType>(r + 1, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value p = arith::MulFOp::create(nb, nl, args[0], args[1]);
        if (complexState)
          p = complex::CreateOp::create(nb, nl, stateElem, p,
                                        zeroScalar(nb, nl, real));
        linalg::YieldOp::create(nb, nl, p);
      });
  auto scan =
      LinearScanOp::create(b, loc, getA(), outer.getResult(0), getInit(),
                           b.getI64IntegerAttr(t), UnitAttr());

  // y[..., t, j] = sum_i q[..., t, i] Re(S[..., t, i, j]) over loops
  // (..., t, j, i).
  SmallVector<AffineExpr> qIdx(lead), sIdx(lead), yIdx(lead);
  qIdx.push_back(l[r]);
  sIdx.push_back(l[r]);
  sIdx.push_back(l[r - 1]);
  yIdx.push_back(l[r - 1]);
  Value yInit = zerosLike(b, loc, getY());
  SmallVector<utils::IteratorType> iterators(r + 1,
                                             utils::IteratorType::parallel);
  iterators[r] = utils::IteratorType::reduction;
  auto readout = linalg::GenericOp::create(
      b, loc, yInit.getType(), ValueRange{q, scan.getH()}, yInit,
      {mapOf(r + 1, qIdx), mapOf(r + 1, sIdx), mapOf(r + 1, yIdx)}, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value s = args[1];
        if (complexState)
          s = complex::ReOp::create(nb, nl, s);
        Value p = arith::MulFOp::create(nb, nl, args[0], s);
        Value sum = arith::AddFOp::create(nb, nl, args[2], p);
        linalg::YieldOp::create(nb, nl, sum);
      });
  return adjointThroughOps(
      b, {outer.getOperation(), scan.getOperation(), readout.getOperation()},
      {{readout.getResult(0), getY()}, {scan.getLast(), getState()}}, adjoint);
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

namespace {

/// A linalg.generic over `numLoops` loops reading `inputs` through `maps`
/// and writing `init` through `outMap`, for the attention decompositions.
linalg::GenericOp
attentionGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                 ArrayRef<AffineMap> maps, Value init, AffineMap outMap,
                 ArrayRef<utils::IteratorType> iterators,
                 function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> all(maps);
  all.push_back(outMap);
  return linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, all, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args));
      });
}

/// A tensor of `elem` with `sizes`, filled with `value`.
Value filled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
             Type elem, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elem);
  Value v = arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, value));
  return linalg::FillOp::create(b, loc, v, empty).getResult(0);
}

} // namespace

namespace {

/// What the attention decompositions share: the leading dims of q (n of
/// them), its element type, and affine maps over loops (lead..., extra...).
struct AttentionShape {
  MLIRContext *ctx;
  Type elem;
  int64_t n;
  /// The position of the first query the decomposition covers (a tile of
  /// the queries), null for 0.
  Value qOffset = nullptr;

  /// The index of the first key the decomposition covers (the band of keys
  /// a tile of queries can see, counted over the key operands laid end to
  /// end), null for 0.
  Value kOffset = nullptr;

  /// The position of the query at loop `dim` of a generic.
  Value queryIndex(OpBuilder &b, Location loc, int64_t dim) const {
    Value i = linalg::IndexOp::create(b, loc, dim);
    return qOffset ? arith::AddIOp::create(b, loc, i, qOffset).getResult() : i;
  }
  /// The index of the key at loop `dim` of a generic.
  Value keyIndex(OpBuilder &b, Location loc, int64_t dim) const {
    Value j = linalg::IndexOp::create(b, loc, dim);
    return kOffset ? arith::AddIOp::create(b, loc, j, kOffset).getResult() : j;
  }

  AffineMap map(unsigned numDims, ArrayRef<int64_t> dims,
                bool withLead = true) const {
    SmallVector<AffineExpr> e;
    if (withLead)
      for (int64_t d = 0; d < n; ++d)
        e.push_back(getAffineDimExpr(d, ctx));
    for (int64_t d : dims)
      e.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(numDims, 0, e, ctx);
  }
  SmallVector<utils::IteratorType> iters(unsigned numDims,
                                         unsigned reductions = 0) const {
    SmallVector<utils::IteratorType> it(numDims, utils::IteratorType::parallel);
    for (unsigned k = 0; k < reductions; ++k)
      it[numDims - 1 - k] = utils::IteratorType::reduction;
    return it;
  }
  Value cst(OpBuilder &b, Location loc, double x) const {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, x));
  }
};

/// scale * sum_c q[..., i, c] k[..., j, c]: the scores [..., Tq, Tk].
Value attentionScores(OpBuilder &b, Location loc, const AttentionShape &s,
                      Value q, Value k, double scale) {
  int64_t n = s.n, I = n, J = n + 1, C = n + 2;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, q);
  sizes.back() = tensor::getMixedSize(b, loc, k, n);
  auto raw = attentionGeneric(
      b, loc, {q, k}, {s.map(n + 3, {I, C}), s.map(n + 3, {J, C})},
      filled(b, loc, sizes, s.elem, 0.0), s.map(n + 3, {I, J}),
      s.iters(n + 3, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value p = arith::MulFOp::create(nb, nl, a[0], a[1]);
        return arith::AddFOp::create(nb, nl, a[2], p).getResult();
      });
  auto scaled = attentionGeneric(
      b, loc, {raw.getResult(0)}, {s.map(n + 2, {I, J})},
      tensor::EmptyOp::create(b, loc, sizes, s.elem), s.map(n + 2, {I, J}),
      s.iters(n + 2), [&](OpBuilder &nb, Location nl, ValueRange a) {
        return arith::MulFOp::create(nb, nl, a[0], s.cst(nb, nl, scale))
            .getResult();
      });
  return scaled.getResult(0);
}

/// The scores with hidden keys at -inf: `visible(i, j, inputs)` over
/// (..., i, j), reading `scores` and `extra` inputs through `extraMaps`;
/// `add(i, j, inputs)` (optional) is added to a visible score.
Value maskScores(
    OpBuilder &b, Location loc, const AttentionShape &s, Value scores,
    ValueRange extra, ArrayRef<AffineMap> extraMaps,
    function_ref<Value(OpBuilder &, Location, Value, Value, ValueRange)>
        visible,
    function_ref<Value(OpBuilder &, Location, Value, Value, ValueRange)> add) {
  int64_t n = s.n, I = n, J = n + 1;
  SmallVector<Value> inputs = {scores};
  llvm::append_range(inputs, extra);
  SmallVector<AffineMap> maps = {s.map(n + 2, {I, J})};
  llvm::append_range(maps, extraMaps);
  auto masked = attentionGeneric(
      b, loc, inputs, maps,
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, scores),
                              s.elem),
      s.map(n + 2, {I, J}), s.iters(n + 2),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value i = s.queryIndex(nb, nl, I);
        Value j = s.keyIndex(nb, nl, J);
        ValueRange rest = a.slice(1, extra.size());
        Value score = a[0];
        if (add)
          score = arith::AddFOp::create(nb, nl, score, add(nb, nl, i, j, rest));
        Value shown = visible(nb, nl, i, j, rest);
        return arith::SelectOp::create(
                   nb, nl, shown, score,
                   s.cst(nb, nl, -std::numeric_limits<double>::infinity()))
            .getResult();
      });
  return masked.getResult(0);
}

/// Safe softmax over the last dim of `masked` (the row max as a
/// stop-gradient shift; rows that see no key give zeros), then p v with `v`
/// [..., Tk, dv]: the output [..., Tq, dv].
Value softmaxReadout(OpBuilder &b, Location loc, const AttentionShape &s,
                     Value masked, Value v, Value resultLike) {
  int64_t n = s.n, I = n, J = n + 1;
  SmallVector<OpFoldResult> scoreSizes = tensor::getMixedSizes(b, loc, masked);
  SmallVector<OpFoldResult> rowSizes(scoreSizes.begin(), scoreSizes.end() - 1);
  double negInf = -std::numeric_limits<double>::infinity();
  auto rowMax = attentionGeneric(
      b, loc, {masked}, {s.map(n + 2, {I, J})},
      filled(b, loc, rowSizes, s.elem, negInf), s.map(n + 2, {I}),
      s.iters(n + 2, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
        return arith::MaximumFOp::create(nb, nl, a[1], a[0]).getResult();
      });
  Value shift = StopGradientOp::create(b, loc, rowMax.getResult(0));
  auto expd = attentionGeneric(
      b, loc, {masked, shift}, {s.map(n + 2, {I, J}), s.map(n + 2, {I})},
      tensor::EmptyOp::create(b, loc, scoreSizes, s.elem), s.map(n + 2, {I, J}),
      s.iters(n + 2), [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value none = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                           a[1], s.cst(nb, nl, negInf));
        Value d =
            arith::SelectOp::create(nb, nl, none, s.cst(nb, nl, 0.0),
                                    arith::SubFOp::create(nb, nl, a[0], a[1]));
        Value e = math::ExpOp::create(nb, nl, d);
        return arith::SelectOp::create(nb, nl, none, s.cst(nb, nl, 0.0), e)
            .getResult();
      });
  Value e = expd.getResult(0);
  auto rowSum = attentionGeneric(
      b, loc, {e}, {s.map(n + 2, {I, J})},
      filled(b, loc, rowSizes, s.elem, 0.0), s.map(n + 2, {I}),
      s.iters(n + 2, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
        return arith::AddFOp::create(nb, nl, a[1], a[0]).getResult();
      });
  auto probs = attentionGeneric(
      b, loc, {e, rowSum.getResult(0)},
      {s.map(n + 2, {I, J}), s.map(n + 2, {I})},
      tensor::EmptyOp::create(b, loc, scoreSizes, s.elem), s.map(n + 2, {I, J}),
      s.iters(n + 2), [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value zero = s.cst(nb, nl, 0.0);
        Value empty = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                            a[1], zero);
        Value den =
            arith::SelectOp::create(nb, nl, empty, s.cst(nb, nl, 1.0), a[1]);
        return arith::DivFOp::create(nb, nl, a[0], den).getResult();
      });
  // out[..., i, c] = sum_j p[i, j] v[j, c] over (..., i, c, j).
  auto out = attentionGeneric(
      b, loc, {probs.getResult(0), v},
      {s.map(n + 3, {I, I + 2}), s.map(n + 3, {I + 2, I + 1})},
      zerosLike(b, loc, resultLike), s.map(n + 3, {I, I + 1}),
      s.iters(n + 3, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value p = arith::MulFOp::create(nb, nl, a[0], a[1]);
        return arith::AddFOp::create(nb, nl, a[2], p).getResult();
      });
  return out.getResult(0);
}

/// 1 / sqrt(d) unless `scale` is given; fails for a dynamic d.
FailureOr<double> attentionScale(Operation *op, std::optional<APFloat> scale,
                                 RankedTensorType qType) {
  if (scale)
    return scale->convertToDouble();
  if (qType.isDynamicDim(qType.getRank() - 1))
    return op->emitError("cannot differentiate attention with a dynamic "
                         "head width and no scale");
  return 1.0 / std::sqrt(static_cast<double>(qType.getShape().back()));
}

Value cmpIndex(OpBuilder &b, Location loc, arith::CmpIPredicate p, Value x,
               Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}

/// The scores of attention op `op` for the queries `q` over the keys `k`
/// (`[..., Tq or a tile, d]`, `[..., Tk or a band, d]`, s.n leading dims),
/// the keys `op`'s mask or `padding` (its key padding cut like `k`, or null)
/// hides at -inf. `tq` and `tk` are the op's query and key counts (the
/// causal mask compares whole positions).
Value attentionOpScores(OpBuilder &b, Location loc, AttentionOp op,
                        const AttentionShape &s, double scale, Value q, Value k,
                        Value tq, Value tk, Value padding) {
  Value scores = attentionScores(b, loc, s, q, k, scale);
  MaskKind mask = op.getMask();
  int64_t slots =
      op.getMemorySlots() ? static_cast<int64_t>(*op.getMemorySlots()) : 0;
  SmallVector<Value> extra;
  SmallVector<AffineMap> extraMaps;
  if (padding) {
    extra.push_back(padding);
    extraMaps.push_back(s.map(s.n + 2, {s.n + 1}));
  }
  return maskScores(
      b, loc, s, scores, extra, extraMaps,
      [&](OpBuilder &nb, Location nl, Value i, Value j, ValueRange a) {
        Value shown = arith::ConstantIntOp::create(nb, nl, 1, 1);
        if (mask == MaskKind::Causal) {
          Value lastKey = arith::AddIOp::create(
              nb, nl, i, arith::SubIOp::create(nb, nl, tk, tq));
          shown = cmpIndex(nb, nl, arith::CmpIPredicate::sle, j, lastKey);
        } else if (mask == MaskKind::Memory) {
          // A slot row sees its own slot and every token; a token row
          // sees everything.
          Value m = arith::ConstantIndexOp::create(nb, nl, slots);
          shown = arith::OrIOp::create(
              nb, nl, cmpIndex(nb, nl, arith::CmpIPredicate::sge, i, m),
              arith::OrIOp::create(
                  nb, nl, cmpIndex(nb, nl, arith::CmpIPredicate::eq, j, i),
                  cmpIndex(nb, nl, arith::CmpIPredicate::sge, j, m)));
        }
        if (padding)
          shown = arith::AndIOp::create(
              nb, nl, shown,
              arith::XOrIOp::create(
                  nb, nl, a[0], arith::ConstantIntOp::create(nb, nl, 1, 1)));
        return shown;
      },
      nullptr);
}

/// Builds the decomposition of an attention op for the queries `q` (all of
/// them, or a tile) and returns its output; `resultLike` has its shape.
/// `operands` are the op's operands, those of a KeyBand's segments cut to
/// the keys the tile can see (`AttentionShape::kOffset` is the first one).
using AttentionBuild =
    function_ref<FailureOr<Value>(const AttentionShape &, double, Value q,
                                  Value resultLike, ValueRange operands)>;

/// The keys a tile of queries can see, for ops whose queries see a band of
/// them: the key operands as segments laid end to end along the key
/// dimension (e.g. the cache, then the sequence), each a list of operand
/// numbers cut together (keys and values; the first gives the length), and
/// `range(b, loc, start, len)`, the first and one-past-the-last key index
/// over the segments that queries [start, start + len) can see, within
/// [0, total keys). Queries see no key outside it, so the decomposition of
/// the tile over those keys alone has the same value and gradients.
struct KeyBand {
  SmallVector<SmallVector<unsigned, 2>> segments;
  function_ref<std::pair<Value, Value>(OpBuilder &, Location, Value, Value)>
      range;
};

/// The adjoint of attention op `op` (result `result`, queries `q` along dim
/// n of [..., Tq, d]) through the ops `build` makes. With
/// AdjointBuilder::keepsAllStates, once over all the queries (the scores of
/// every pair at once); by default tile by tile of kQueryTile queries in a
/// loop, each tile's scores recomputed and differentiated on their own
/// (O(tile x Tk) scores at a time; with a `band`, O(tile x keys in the
/// band): the key operands are cut to the band and their cotangents added
/// to that range only), the queries' cotangents written tile by tile and
/// the other operands' summed.
constexpr int64_t kQueryTile = 64;

LogicalResult attentionAdjoint(Operation *op, Value result, Value q,
                               std::optional<APFloat> scaleAttr, OpBuilder &b,
                               AdjointBuilder &adjoint, AttentionBuild build,
                               const KeyBand *band = nullptr) {
  Value dy = adjoint.getCotangent(result);
  if (!dy)
    return success();
  auto qType = cast<RankedTensorType>(q.getType());
  FailureOr<double> scale = attentionScale(op, scaleAttr, qType);
  if (failed(scale))
    return failure();
  AttentionShape s{b.getContext(), qType.getElementType(), qType.getRank() - 2};
  Location loc = op->getLoc();
  if (adjoint.keepsAllStates()) {
    Block *block = b.getInsertionBlock();
    Operation *last = block->empty() ? nullptr : &block->back();
    FailureOr<Value> out = build(s, *scale, q, result, op->getOperands());
    if (failed(out))
      return failure();
    return adjointThroughOps(b, builtSince(block, last), {{*out, result}},
                             adjoint);
  }
  MLIRContext *ctx = b.getContext();
  int64_t n = s.n;
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value tq = tensor::DimOp::create(b, loc, q, n);
  AffineExpr s0 = getAffineSymbolExpr(0, ctx), d0 = getAffineDimExpr(0, ctx);
  Value tiles = affine::AffineApplyOp::create(
      b, loc, AffineMap::get(0, 1, s0.ceilDiv(kQueryTile)), ValueRange{tq});
  // Per operand that carries a gradient: its cotangent so far.
  SmallVector<unsigned> diff;
  SmallVector<Value> inits;
  for (OpOperand &operand : op->getOpOperands())
    if (isDifferentiableType(operand.get().getType()) &&
        isa<RankedTensorType>(operand.get().getType())) {
      diff.push_back(operand.getOperandNumber());
      inits.push_back(zerosLike(b, loc, operand.get()));
    }
  // The band's segments: where each starts among the keys, and its length.
  SmallVector<std::pair<Value, Value>> segmentSpan;
  if (band) {
    Value at = c0;
    for (ArrayRef<unsigned> segment : band->segments) {
      Value len = tensor::DimOp::create(b, loc, op->getOperand(segment[0]), n);
      segmentSpan.push_back({at, len});
      at = arith::AddIOp::create(b, loc, at, len);
    }
  }
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, c0, tiles, c1, inits,
      [&](OpBuilder &bodyBuilder, Location nl, Value tile, ValueRange accs) {
        // `build` creates its ops with `b`: point it into the loop.
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(bodyBuilder.getInsertionBlock(),
                            bodyBuilder.getInsertionPoint());
        OpBuilder &nb = b;
        Value start = affine::AffineApplyOp::create(
            nb, nl, AffineMap::get(1, 0, d0 * kQueryTile), ValueRange{tile});
        Value len = affine::AffineMinOp::create(
            nb, nl,
            AffineMap::get(
                1, 1,
                {getAffineConstantExpr(kQueryTile, ctx), s0 - d0 * kQueryTile},
                ctx),
            ValueRange{tile, tq});
        Value qTile = sliceAlong(nb, nl, q, n, start, len);
        Value resultTile = sliceAlong(nb, nl, result, n, start, len);
        AttentionShape ts = s;
        ts.qOffset = start;
        // The key operands cut to the band: operand number -> (offset,
        // size) of its cut.
        SmallVector<Value> operands(op->getOperands());
        DenseMap<unsigned, std::pair<Value, Value>> cuts;
        if (band) {
          auto [first, end] = band->range(nb, nl, start, len);
          ts.kOffset = first;
          for (auto [segment, span] :
               llvm::zip_equal(band->segments, segmentSpan)) {
            // [first, end) - at, clamped to [0, len) (affine.max and
            // affine.min, which recur-workspace-bound can bound).
            Value at = span.first, segmentLen = span.second;
            AffineExpr x = getAffineSymbolExpr(0, ctx),
                       a = getAffineSymbolExpr(1, ctx);
            auto clamp = [&](Value v) -> Value {
              Value rel = affine::AffineMaxOp::create(
                  nb, nl,
                  AffineMap::get(0, 2, {x - a, getAffineConstantExpr(0, ctx)},
                                 ctx),
                  ValueRange{v, at});
              return affine::AffineMinOp::create(
                  nb, nl, AffineMap::get(0, 2, {x, a}, ctx),
                  ValueRange{rel, segmentLen});
            };
            Value lo = clamp(first), hi = clamp(end);
            // hi - lo, never more than the segment: said with affine.min so
            // that the bound is seen (an affine.min has no lower bound).
            Value size = affine::AffineMinOp::create(
                nb, nl,
                AffineMap::get(
                    0, 3,
                    {getAffineSymbolExpr(0, ctx) - getAffineSymbolExpr(1, ctx),
                     getAffineSymbolExpr(2, ctx)},
                    ctx),
                ValueRange{hi, lo, segmentLen});
            for (unsigned number : segment) {
              operands[number] =
                  sliceAlong(nb, nl, op->getOperand(number), n, lo, size);
              cuts[number] = {lo, size};
            }
          }
        }
        Block *block = nb.getInsertionBlock();
        Operation *last = block->empty() ? nullptr : &block->back();
        FailureOr<Value> out = build(ts, *scale, qTile, resultTile, operands);
        LocalAdjoint local(nb);
        if (failed(out)) {
          status = failure();
        } else {
          local.addCotangent(*out, sliceAlong(nb, nl, dy, n, start, len));
          if (failed(adjointThroughOps(nb, builtSince(block, last), {}, local)))
            status = failure();
        }
        // `acc` with `ct` added to positions [offset, offset + size) of dim n.
        auto addInto = [&](Value acc, Value ct, Value offset, Value size) {
          AxisRange r = rangeAlong(nb, nl, acc, n, offset, size);
          Value part = tensor::ExtractSliceOp::create(nb, nl, acc, r.offsets,
                                                      r.sizes, r.strides);
          return tensor::InsertSliceOp::create(nb, nl,
                                               addValues(nb, nl, part, ct), acc,
                                               r.offsets, r.sizes, r.strides)
              .getResult();
        };
        SmallVector<Value> next;
        for (auto [k, number] : llvm::enumerate(diff)) {
          Value operand = op->getOperand(number), acc = accs[k];
          if (operand == q && number == 0) {
            if (Value ct = local.getCotangent(qTile)) {
              AxisRange r = rangeAlong(nb, nl, acc, n, start, len);
              acc = tensor::InsertSliceOp::create(nb, nl, ct, acc, r.offsets,
                                                  r.sizes, r.strides);
            }
          } else if (auto cut = cuts.find(number); cut != cuts.end()) {
            if (Value ct = local.getCotangent(operands[number]))
              acc = addInto(acc, ct, cut->second.first, cut->second.second);
          } else if (Value ct = local.getCotangent(operand)) {
            acc = addValues(nb, nl, acc, ct);
          }
          next.push_back(acc);
        }
        scf::YieldOp::create(nb, nl, next);
      });
  if (failed(status))
    return failure();
  for (auto [k, number] : llvm::enumerate(diff))
    adjoint.addCotangent(op->getOperand(number), loop.getResult(k));
  return success();
}

} // namespace

// Through its definition, tile of queries by tile (attentionAdjoint): s =
// scale q k^T, hidden keys at -inf, the row max as a stop-gradient shift
// (softmax does not depend on it), e = exp(s - max) (0 for hidden keys and
// rows that see none), p = e / sum(e) (0 for such rows), out = p v.
LogicalResult AttentionOp::buildAdjoint(OpBuilder &b, AdjointBuilder &adjoint) {
  Location loc = getLoc();
  unsigned kNumber = getKMutable().getOperandNumber();
  unsigned vNumber = getVMutable().getOperandNumber();
  // Causal queries [start, start + len) see keys up to start + len - 1 +
  // Tk - Tq; a key padding mask is indexed by key, so it keeps every key.
  auto causalRange = [&](OpBuilder &nb, Location nl, Value start, Value len) {
    int64_t n = getQ().getType().getRank() - 2;
    Value tq = tensor::DimOp::create(nb, nl, getQ(), n);
    Value tk = tensor::DimOp::create(nb, nl, getK(), n);
    // min(max(start + len + Tk - Tq, 0), Tk), with affine ops that
    // recur-workspace-bound can bound.
    MLIRContext *ctx = nb.getContext();
    AffineExpr s = getAffineSymbolExpr(0, ctx), l = getAffineSymbolExpr(1, ctx),
               k = getAffineSymbolExpr(2, ctx), q = getAffineSymbolExpr(3, ctx);
    Value end = affine::AffineMaxOp::create(
        nb, nl,
        AffineMap::get(0, 4, {s + l + k - q, getAffineConstantExpr(0, ctx)},
                       ctx),
        ValueRange{start, len, tk, tq});
    end = affine::AffineMinOp::create(
        nb, nl,
        AffineMap::get(
            0, 2, {getAffineSymbolExpr(0, ctx), getAffineSymbolExpr(1, ctx)},
            ctx),
        ValueRange{end, tk});
    return std::pair<Value, Value>(arith::ConstantIndexOp::create(nb, nl, 0),
                                   end);
  };
  KeyBand causal{{{kNumber, vNumber}}, causalRange};
  bool banded = getMask() == MaskKind::Causal && !getKeyPadding();
  return attentionAdjoint(
      *this, getResult(), getQ(), getScale(), b, adjoint,
      [&](const AttentionShape &s, double scale, Value q, Value resultLike,
          ValueRange operands) -> FailureOr<Value> {
        Value tq = tensor::DimOp::create(b, loc, getQ(), s.n);
        Value tk = tensor::DimOp::create(b, loc, getK(), s.n);
        Value masked =
            attentionOpScores(b, loc, *this, s, scale, q, operands[kNumber], tq,
                              tk, getKeyPadding());
        Value out =
            softmaxReadout(b, loc, s, masked, operands[vNumber], resultLike);
        return out;
      },
      banded ? &causal : nullptr);
}

FailureOr<Value> mlir::recur::decomposeAttention(OpBuilder &b, Location loc,
                                                 AttentionOp op, Value q,
                                                 Value k, Value v,
                                                 Value padding,
                                                 int64_t leading) {
  auto qType = cast<RankedTensorType>(q.getType());
  // Checked first: attentionScale reports the dynamic width as an error.
  if (!op.getScale() && qType.isDynamicDim(qType.getRank() - 1))
    return failure();
  double scale = *attentionScale(op, op.getScale(), qType);
  Type elem = qType.getElementType();
  AttentionShape s{b.getContext(), elem, leading};
  int64_t n = op.getQ().getType().getRank() - 2;
  Value tq = tensor::DimOp::create(b, loc, op.getQ(), n);
  Value tk = tensor::DimOp::create(b, loc, op.getK(), n);
  Value masked = attentionOpScores(b, loc, op, s, scale, q, k, tq, tk, padding);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, q);
  sizes.back() = tensor::getMixedSize(b, loc, v, leading + 1);
  Value resultLike = tensor::EmptyOp::create(b, loc, sizes, elem);
  return softmaxReadout(b, loc, s, masked, v, resultLike);
}

//===----------------------------------------------------------------------===//
// window_attention
//===----------------------------------------------------------------------===//

// The fused backward, window_attention_grad: per query row, the softmax
// weights recomputed over the keys it sees, then dq, and dk, dv, the bias
// and the cache accumulated over the rows (O(T window) work, no score
// matrix kept).
LogicalResult WindowAttentionOp::buildAdjoint(OpBuilder &b,
                                              AdjointBuilder &adjoint) {
  Value dy = adjoint.getCotangent(getResult());
  if (!dy)
    return success();
  SmallVector<Value> operands{getQ(), getK(), getV()};
  for (Value optional : {getBias(), getKCache(), getVCache()})
    if (optional)
      operands.push_back(optional);
  SmallVector<Type> types;
  for (Value operand : operands)
    types.push_back(operand.getType());
  auto grad = WindowAttentionGradOp::create(
      b, getLoc(), types, getQ(), getK(), getV(), dy, getBias(), getKCache(),
      getVCache(), getWindowAttr(), getBlockAttr(), getIncludeSelfAttr(),
      getBiasKindAttr(), getScaleAttr(), getNumBucketsAttr(),
      getMaxDistanceAttr());
  for (auto [operand, cotangent] : llvm::zip(operands, grad.getGrads()))
    adjoint.addCotangent(operand, cotangent);
  return success();
}

//===----------------------------------------------------------------------===//
// rel_attention
//===----------------------------------------------------------------------===//

// Through its definition: the content term (q + u) . k_j, the position term
// (q + pos_bias) . r_row for every row of r, then each (i, j) picks row
// L - 1 - i + j (a sum over one-hot rows, so r gets its gradient), keys
// j <= M + i visible, and the safe softmax readout.
LogicalResult RelAttentionOp::buildAdjoint(OpBuilder &b,
                                           AdjointBuilder &adjoint) {
  Location loc = getLoc();
  return attentionAdjoint(
      *this, getResult(), getQ(), getScale(), b, adjoint,
      [&](const AttentionShape &s, double scale, Value q, Value resultLike,
          ValueRange) -> FailureOr<Value> {
        int64_t n = s.n;
        if (n < 1)
          return FailureOr<Value>(
              emitError("cannot differentiate rel_attention without a head "
                        "dimension"));
        MLIRContext *ctx = s.ctx;
        auto headMap = [&](unsigned numDims, ArrayRef<int64_t> dims) {
          SmallVector<AffineExpr> e = {getAffineDimExpr(n - 1, ctx)};
          for (int64_t d : dims)
            e.push_back(getAffineDimExpr(d, ctx));
          return AffineMap::get(numDims, 0, e, ctx);
        };
        const int64_t I = n, J = n + 1, C = n + 2;
        Value segment = tensor::DimOp::create(b, loc, getQ(), n);
        Value keyLen = tensor::DimOp::create(b, loc, getK(), n);
        Value memLen = arith::SubIOp::create(b, loc, keyLen, segment);
        SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, q);
        sizes.back() = tensor::getMixedSize(b, loc, getK(), n);

        // (q_i + u) . k_j over (..., i, j, c).
        auto plusDot = [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value sum = arith::AddFOp::create(nb, nl, a[0], a[1]);
          Value p = arith::MulFOp::create(nb, nl, sum, a[2]);
          return arith::AddFOp::create(nb, nl, a[3], p).getResult();
        };
        auto content = attentionGeneric(
            b, loc, {q, getU(), getK()},
            {s.map(n + 3, {I, C}), headMap(n + 3, {C}), s.map(n + 3, {J, C})},
            filled(b, loc, sizes, s.elem, 0.0), s.map(n + 3, {I, J}),
            s.iters(n + 3, 1), plusDot);
        // (q_i + pos_bias) . r[h, row] for every row, over (..., i, row, c).
        SmallVector<OpFoldResult> rowSizes = tensor::getMixedSizes(b, loc, q);
        rowSizes.back() = tensor::getMixedSize(b, loc, getR(), 1);
        auto byRow = attentionGeneric(
            b, loc, {q, getPosBias(), getR()},
            {s.map(n + 3, {I, C}), headMap(n + 3, {C}), headMap(n + 3, {J, C})},
            filled(b, loc, rowSizes, s.elem, 0.0), s.map(n + 3, {I, J}),
            s.iters(n + 3, 1), plusDot);
        // position[..., i, j] = byRow[..., i, L - 1 - i + j] over (..., i, j,
        // row).
        auto position = attentionGeneric(
            b, loc, {byRow.getResult(0)}, {s.map(n + 3, {I, C})},
            filled(b, loc, sizes, s.elem, 0.0), s.map(n + 3, {I, J}),
            s.iters(n + 3, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
              Value i = s.queryIndex(nb, nl, I);
              Value j = linalg::IndexOp::create(nb, nl, J);
              Value row = linalg::IndexOp::create(nb, nl, C);
              Value want = arith::AddIOp::create(
                  nb, nl,
                  arith::SubIOp::create(
                      nb, nl, segment,
                      arith::AddIOp::create(
                          nb, nl, i,
                          arith::ConstantIndexOp::create(nb, nl, 1))),
                  j);
              Value hit = cmpIndex(nb, nl, arith::CmpIPredicate::eq, row, want);
              Value term = arith::SelectOp::create(nb, nl, hit, a[0],
                                                   s.cst(nb, nl, 0.0));
              return arith::AddFOp::create(nb, nl, a[1], term).getResult();
            });
        Value masked = maskScores(
            b, loc, s, content.getResult(0), {position.getResult(0)},
            {s.map(n + 2, {I, J})},
            [&](OpBuilder &nb, Location nl, Value i, Value j, ValueRange) {
              return cmpIndex(nb, nl, arith::CmpIPredicate::sle, j,
                              arith::AddIOp::create(nb, nl, memLen, i));
            },
            [&](OpBuilder &nb, Location nl, Value, Value, ValueRange a) {
              return a[0];
            });
        // scale * (content + position): maskScores added position; scale the
        // visible scores (-inf stays -inf).
        auto scaled = attentionGeneric(
            b, loc, {masked}, {s.map(n + 2, {I, J})},
            tensor::EmptyOp::create(b, loc, sizes, s.elem),
            s.map(n + 2, {I, J}), s.iters(n + 2),
            [&](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::MulFOp::create(nb, nl, a[0], s.cst(nb, nl, scale))
                  .getResult();
            });
        Value out =
            softmaxReadout(b, loc, s, scaled.getResult(0), getV(), resultLike);
        return out;
      });
}

//===----------------------------------------------------------------------===//
// block_recurrence and depth_loop
//===----------------------------------------------------------------------===//

namespace {

/// Offsets, sizes and unit strides of block `start .. start + len` of
/// `tensor` along `axis`.
AxisRange blockRange(OpBuilder &b, Location loc, Value tensor, int64_t axis,
                     Value start, int64_t len) {
  return rangeAlong(b, loc, tensor, axis, start, b.getIndexAttr(len));
}

/// Row `i` of a stack `[n, ...]` (rank-reduced to `...`).
Value stackRow(OpBuilder &b, Location loc, Value stack, Value i,
               RankedTensorType rowType) {
  AxisRange r = rangeAlong(b, loc, stack, 0, i, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, rowType, stack, r.offsets,
                                        r.sizes, r.strides);
}

/// A region op that runs `body` `count` times, carrying values from one
/// iteration to the next: the body's last `inits.size()` arguments and
/// yielded values are the carried ones; its leading arguments are given per
/// iteration (a block of the inputs, the step index) and its leading
/// yielded values are per-iteration outputs.
struct CarriedLoop {
  Block *body;
  Value count;
  SmallVector<Value> inits;
  /// The op's results holding the carried values after the last iteration.
  SmallVector<Value> finals;
  /// The body's leading arguments at iteration `i`.
  function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> leadingArgs;
  /// The cotangents of the body's leading yielded values at iteration `i`
  /// (null: none).
  function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> leadingCts;
  /// Values summed over the iterations from the cotangents of the leading
  /// arguments: their starting values, and `accumulate(b, loc, i,
  /// leadingArgCts, accs)` giving the next ones.
  SmallVector<Value> accInits;
  function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ArrayRef<Value>,
                                  ValueRange)>
      accumulate;
};

/// The adjoint of a CarriedLoop with the papers' memory policy: the carried
/// values are kept only at the start of each iteration (a forward loop
/// stacks them), and a reverse loop re-runs each iteration's body and
/// differentiates it (through the backward builder) with the cotangents of
/// its outputs and of what it carried on. Adds the cotangents of the inits
/// and of the values the body reads from outside (weights, summed over the
/// iterations); returns the accumulators' final values in `accs`.
LogicalResult adjointOfCarriedLoop(OpBuilder &b, Location loc,
                                   const CarriedLoop &loop,
                                   AdjointBuilder &adjoint,
                                   SmallVectorImpl<Value> &accs) {
  Block &body = *loop.body;
  size_t nc = loop.inits.size();
  size_t nLead = body.getNumArguments() - nc;
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);

  // 1. The carried values at the start of every iteration, stacked.
  SmallVector<Value> forwardInits(loop.inits);
  for (Value init : loop.inits) {
    SmallVector<OpFoldResult> sizes = {OpFoldResult(loop.count)};
    llvm::append_range(sizes, tensor::getMixedSizes(b, loc, init));
    forwardInits.push_back(tensor::EmptyOp::create(
        b, loc, sizes,
        cast<RankedTensorType>(init.getType()).getElementType()));
  }
  auto forward = scf::ForOp::create(
      b, loc, c0, loop.count, c1, forwardInits,
      [&](OpBuilder &nb, Location nl, Value i, ValueRange iter) {
        SmallVector<Value> next, newStacks;
        for (size_t k = 0; k < nc; ++k) {
          Value stack = iter[nc + k];
          AxisRange r = rangeAlong(nb, nl, stack, 0, i, nb.getIndexAttr(1));
          newStacks.push_back(tensor::InsertSliceOp::create(
              nb, nl, iter[k], stack, r.offsets, r.sizes, r.strides));
        }
        IRMapping mapping;
        SmallVector<Value> args = loop.leadingArgs(nb, nl, i);
        llvm::append_range(args, iter.take_front(nc));
        for (auto [from, to] : llvm::zip(body.getArguments(), args))
          mapping.map(from, to);
        for (Operation &op : body.without_terminator())
          nb.clone(op, mapping);
        for (Value v : body.getTerminator()->getOperands().take_back(nc))
          next.push_back(mapping.lookupOrDefault(v));
        llvm::append_range(next, newStacks);
        scf::YieldOp::create(nb, nl, next);
      });
  SmallVector<Value> stacked(forward.getResults().drop_front(nc));

  // 2. The iterations in reverse.
  SetVector<Value> capturedSet;
  getUsedValuesDefinedAbove(*body.getParent(), capturedSet);
  SmallVector<Value> captured;
  for (Value v : capturedSet)
    if (isDifferentiableType(v.getType()) && isa<RankedTensorType>(v.getType()))
      captured.push_back(v);
  SmallVector<Value> reverseInits;
  for (Value final : loop.finals)
    reverseInits.push_back(adjoint.getCotangentOrZeros(b, loc, final));
  llvm::append_range(reverseInits, loop.accInits);
  for (Value v : captured)
    reverseInits.push_back(zerosLike(b, loc, v));
  size_t na = loop.accInits.size();
  LogicalResult status = success();
  auto reverse = scf::ForOp::create(
      b, loc, c0, loop.count, c1, reverseInits,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange iter) {
        Value last = arith::SubIOp::create(nb, nl, loop.count, c1);
        Value i = arith::SubIOp::create(nb, nl, last, k);
        SmallVector<Value> args = loop.leadingArgs(nb, nl, i);
        for (auto [c, stack] : llvm::enumerate(stacked))
          args.push_back(
              stackRow(nb, nl, stack, i,
                       cast<RankedTensorType>(loop.inits[c].getType())));
        SmallVector<Value> yielded = loop.leadingCts(nb, nl, i);
        llvm::append_range(yielded, iter.take_front(nc));
        SmallVector<Value> argCts, capturedCts;
        if (failed(adjoint.differentiateBody(nb, body, args, yielded, captured,
                                             argCts, capturedCts))) {
          status = failure();
          argCts.assign(args.size(), Value());
          capturedCts.assign(captured.size(), Value());
        }
        SmallVector<Value> next;
        for (size_t c = 0; c < nc; ++c) {
          Value ct = argCts[nLead + c];
          next.push_back(ct ? ct : zerosLike(nb, nl, args[nLead + c]));
        }
        llvm::append_range(
            next, loop.accumulate(nb, nl, i,
                                  ArrayRef<Value>(argCts).take_front(nLead),
                                  iter.slice(nc, na)));
        for (auto [c, v] : llvm::enumerate(captured)) {
          Value acc = iter[nc + na + c];
          Value ct = capturedCts[c];
          next.push_back(ct ? addValues(nb, nl, acc, ct) : acc);
        }
        scf::YieldOp::create(nb, nl, next);
      });
  if (failed(status))
    return failure();
  ValueRange results = reverse.getResults();
  for (size_t c = 0; c < nc; ++c)
    adjoint.addCotangent(loop.inits[c], results[c]);
  accs.assign(results.begin() + nc, results.begin() + nc + na);
  for (auto [c, v] : llvm::enumerate(captured))
    adjoint.addCotangent(v, results[nc + na + c]);
  return success();
}

/// Fails unless every carried value is a float or complex tensor.
LogicalResult checkCarried(Operation *op, ValueRange inits) {
  for (Value init : inits)
    if (!isa<RankedTensorType>(init.getType()) ||
        !isDifferentiableType(init.getType()))
      return op->emitError("cannot differentiate a loop carrying ")
             << init.getType() << " (only float and complex tensors)";
  return success();
}

} // namespace

// The blocks of the inputs are the leading arguments; their cotangents are
// written into whole-sequence accumulators block by block.
LogicalResult BlockRecurrenceOp::buildAdjoint(OpBuilder &b,
                                              AdjointBuilder &adjoint) {
  if (llvm::none_of(getResults(),
                    [&](Value r) { return adjoint.getCotangent(r); }))
    return success();
  Location loc = getLoc();
  Block &body = getBody().front();
  int64_t axis = getAxis(), len = getBlockSize();
  SmallVector<Value> inputs(getInputs());
  if (failed(checkCarried(*this, getInits())))
    return failure();
  Value lenV = arith::ConstantIndexOp::create(b, loc, len);
  Value total = tensor::DimOp::create(b, loc, inputs.front(), axis);
  // T / block_size as an affine floordiv, which value bounds understand
  // (the workspace bound of the stacks).
  Value blocks = affine::AffineApplyOp::create(
      b, loc,
      AffineMap::get(0, 1,
                     getAffineSymbolExpr(0, b.getContext()).floorDiv(len)),
      ValueRange{total});
  auto inputBlocks = [&](OpBuilder &nb, Location nl, Value i) {
    Value start = arith::MulIOp::create(nb, nl, i, lenV);
    SmallVector<Value> parts;
    for (auto [k, in] : llvm::enumerate(inputs)) {
      AxisRange r = blockRange(nb, nl, in, axis, start, len);
      auto type = cast<RankedTensorType>(body.getArgument(k).getType());
      parts.push_back(tensor::ExtractSliceOp::create(
          nb, nl, type, in, r.offsets, r.sizes, r.strides));
    }
    return parts;
  };
  SmallVector<Value> outCts;
  for (Value out : getOutputs())
    outCts.push_back(adjoint.getCotangent(out));
  auto outputBlockCts = [&](OpBuilder &nb, Location nl, Value i) {
    Value start = arith::MulIOp::create(nb, nl, i, lenV);
    SmallVector<Value> cts;
    for (auto [o, ct] : llvm::enumerate(outCts)) {
      if (!ct) {
        cts.push_back(Value());
        continue;
      }
      AxisRange r = blockRange(nb, nl, ct, axis, start, len);
      auto type =
          cast<RankedTensorType>(body.getTerminator()->getOperand(o).getType());
      cts.push_back(tensor::ExtractSliceOp::create(nb, nl, type, ct, r.offsets,
                                                   r.sizes, r.strides));
    }
    return cts;
  };
  SmallVector<size_t> diffInputs;
  SmallVector<Value> accInits;
  for (auto [k, in] : llvm::enumerate(inputs))
    if (isDifferentiableType(in.getType())) {
      diffInputs.push_back(k);
      accInits.push_back(zerosLike(b, loc, in));
    }
  auto accumulate = [&](OpBuilder &nb, Location nl, Value i,
                        ArrayRef<Value> argCts, ValueRange accs) {
    Value start = arith::MulIOp::create(nb, nl, i, lenV);
    SmallVector<Value> next;
    for (auto [d, k] : llvm::enumerate(diffInputs)) {
      Value acc = accs[d];
      if (Value ct = argCts[k]) {
        AxisRange r = blockRange(nb, nl, acc, axis, start, len);
        acc = tensor::InsertSliceOp::create(nb, nl, ct, acc, r.offsets, r.sizes,
                                            r.strides);
      }
      next.push_back(acc);
    }
    return next;
  };
  CarriedLoop loop{&body,
                   blocks,
                   SmallVector<Value>(getInits()),
                   SmallVector<Value>(getFinalStates()),
                   inputBlocks,
                   outputBlockCts,
                   accInits,
                   accumulate};
  SmallVector<Value> accs;
  if (failed(adjointOfCarriedLoop(b, loc, loop, adjoint, accs)))
    return failure();
  for (auto [d, k] : llvm::enumerate(diffInputs))
    adjoint.addCotangent(inputs[k], accs[d]);
  return success();
}

// Every yielded value is carried; the only leading argument is the step
// index. The states at each depth are kept and each step re-run in reverse.
LogicalResult DepthLoopOp::buildAdjoint(OpBuilder &b, AdjointBuilder &adjoint) {
  if (llvm::none_of(getResults(),
                    [&](Value r) { return adjoint.getCotangent(r); }))
    return success();
  if (failed(checkCarried(*this, getInits())))
    return failure();
  Location loc = getLoc();
  Value depth = arith::ConstantIndexOp::create(b, loc, getMaxDepth());
  auto stepIndex = [](OpBuilder &, Location, Value i) {
    return SmallVector<Value>{i};
  };
  auto noCts = [](OpBuilder &, Location, Value) {
    return SmallVector<Value>();
  };
  auto nothing = [](OpBuilder &, Location, Value, ArrayRef<Value>, ValueRange) {
    return SmallVector<Value>();
  };
  CarriedLoop loop{&getBody().front(),
                   depth,
                   SmallVector<Value>(getInits()),
                   SmallVector<Value>(getResults()),
                   stepIndex,
                   noCts,
                   {},
                   nothing};
  SmallVector<Value> accs;
  return adjointOfCarriedLoop(b, loc, loop, adjoint, accs);
}

//===----------------------------------------------------------------------===//
// halting
//===----------------------------------------------------------------------===//

// Through the same formulas as generics (a token is active while its mass
// is below the threshold; a halted token's values are copies, so only the
// copied operands get its cotangents).
LogicalResult HaltingOp::buildAdjoint(OpBuilder &b, AdjointBuilder &adjoint) {
  if (llvm::none_of(getResults(),
                    [&](Value r) { return adjoint.getCotangent(r); }))
    return success();
  Location loc = getLoc();
  Type elem = cast<RankedTensorType>(getPHat().getType()).getElementType();
  double threshold = getThreshold().convertToDouble();
  Block *block = b.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  auto cst = [&](OpBuilder &nb, Location nl, double v) {
    return arith::ConstantOp::create(nb, nl, nb.getFloatAttr(elem, v));
  };
  auto active = [&](OpBuilder &nb, Location nl, Value mass) {
    return arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT, mass,
                                 cst(nb, nl, threshold));
  };
  auto oneMinus = [&](OpBuilder &nb, Location nl, Value x) {
    return arith::SubFOp::create(nb, nl, cst(nb, nl, 1.0), x);
  };
  // a = active ? p_hat (1 - mass) : 0
  Value a = elementwise(
      b, loc, {getPHat(), getMass()}, elem,
      [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
        Value p = arith::MulFOp::create(nb, nl, v[0], oneMinus(nb, nl, v[1]));
        return arith::SelectOp::create(nb, nl, active(nb, nl, v[1]), p,
                                       cst(nb, nl, 0.0));
      });
  // new_mass = mass + a
  Value newMass = elementwise(b, loc, {getMass(), a}, elem,
                              [&](OpBuilder &nb, Location nl, ValueRange v) {
                                return addScalars(nb, nl, v[0], v[1]);
                              });
  // s = active ? (1 - mass) h + acc : s_prev
  Value s = prefixGeneric(
      b, loc, getMass(), {getMass()}, {getH(), getAcc(), getSPrev()}, false,
      elem,
      [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) -> Value {
        Value mixed = arith::AddFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, oneMinus(nb, nl, p[0]), f[0]),
            f[1]);
        return arith::SelectOp::create(nb, nl, active(nb, nl, p[0]), mixed,
                                       f[2]);
      });
  // new_acc = acc + a h
  Value newAcc = prefixGeneric(
      b, loc, a, {a}, {getH(), getAcc()}, false, elem,
      [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) -> Value {
        return arith::AddFOp::create(nb, nl, f[1],
                                     arith::MulFOp::create(nb, nl, p[0], f[0]));
      });
  return adjointThroughOps(b, builtSince(block, last),
                           {{a, getA()},
                            {s, getS()},
                            {newMass, getNewMass()},
                            {newAcc, getNewAcc()}},
                           adjoint);
}

//===----------------------------------------------------------------------===//
// route_topk
//===----------------------------------------------------------------------===//

// gates_j = p[i_j] / (sum_j' p[i_j'] + eps) through generics that pick the
// selected probabilities by comparing indices (the selection itself, a
// piecewise-constant function of the probabilities, has no gradient): only
// the selected experts' probabilities get cotangents.
LogicalResult RouteTopKOp::buildAdjoint(OpBuilder &b, AdjointBuilder &adjoint) {
  if (!adjoint.getCotangent(getGates()))
    return success();
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  Value probs = getProbs(), indices = getIndices();
  auto probsType = cast<RankedTensorType>(probs.getType());
  Type elem = probsType.getElementType();
  int64_t r = probsType.getRank();
  Block *block = b.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  // picked[..., j] = sum_e (i_j == e) p[..., e] over loops (..., j, e).
  SmallVector<AffineExpr> lead, pIdx, jIdx;
  for (int64_t d = 0; d < r - 1; ++d)
    lead.push_back(getAffineDimExpr(d, ctx));
  pIdx = jIdx = lead;
  pIdx.push_back(getAffineDimExpr(r, ctx));
  jIdx.push_back(getAffineDimExpr(r - 1, ctx));
  SmallVector<utils::IteratorType> iterators(r + 1,
                                             utils::IteratorType::parallel);
  iterators[r] = utils::IteratorType::reduction;
  Value pickedInit = zerosLike(b, loc, getGates());
  auto picked = linalg::GenericOp::create(
      b, loc, pickedInit.getType(), ValueRange{probs, indices}, pickedInit,
      {AffineMap::get(r + 1, 0, pIdx, ctx), AffineMap::get(r + 1, 0, jIdx, ctx),
       AffineMap::get(r + 1, 0, jIdx, ctx)},
      iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value e = linalg::IndexOp::create(nb, nl, r);
        Value i =
            arith::IndexCastOp::create(nb, nl, nb.getIndexType(), args[1]);
        Value same =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, i, e);
        Value p = arith::SelectOp::create(nb, nl, same, args[0],
                                          zeroScalar(nb, nl, elem));
        linalg::YieldOp::create(
            nb, nl, arith::AddFOp::create(nb, nl, args[2], p).getResult());
      });
  // The sum over the k picks, plus eps.
  SmallVector<OpFoldResult> tokenSizes = tensor::getMixedSizes(b, loc, probs);
  tokenSizes.pop_back();
  Value tokens = tensor::EmptyOp::create(b, loc, tokenSizes, elem);
  Value sum = prefixGeneric(
      b, loc, tokens, {}, {picked.getResult(0)}, /*reduce=*/true, elem,
      [](OpBuilder &, Location, ValueRange, ValueRange f) { return f[0]; });
  double eps = getEps().convertToDouble();
  Value gates = prefixGeneric(
      b, loc, sum, {sum}, {picked.getResult(0)}, false, elem,
      [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) -> Value {
        Value denom = arith::AddFOp::create(
            nb, nl, p[0],
            arith::ConstantOp::create(nb, nl, nb.getFloatAttr(elem, eps)));
        return arith::DivFOp::create(nb, nl, f[0], denom);
      });
  return adjointThroughOps(b, builtSince(block, last), {{gates, getGates()}},
                           adjoint);
}

//===----------------------------------------------------------------------===//
// moe
//===----------------------------------------------------------------------===//

namespace {

/// act(x) as recur.moe lowers it (relu, exact gelu, silu) and its
/// derivative act'(x) (relu: 1 for x > 0, else 0).
std::pair<Value, Value> activationAndSlope(OpBuilder &b, Location loc,
                                           Activation activation, Value x) {
  Type type = x.getType();
  auto cst = [&](double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v))
        .getResult();
  };
  auto mul = [&](Value p, Value q) {
    return arith::MulFOp::create(b, loc, p, q).getResult();
  };
  switch (activation) {
  case Activation::Relu: {
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, cst(0.0));
    return {arith::SelectOp::create(b, loc, positive, x, cst(0.0)),
            arith::SelectOp::create(b, loc, positive, cst(1.0), cst(0.0))};
  }
  case Activation::Gelu: {
    // Phi(x) = (1 + erf(x / sqrt 2)) / 2; gelu = x Phi(x),
    // gelu' = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi).
    Value phi =
        mul(cst(0.5),
            arith::AddFOp::create(
                b, loc, cst(1.0),
                math::ErfOp::create(
                    b, loc,
                    arith::DivFOp::create(b, loc, x, cst(std::sqrt(2.0))))));
    Value density = arith::DivFOp::create(
        b, loc, math::ExpOp::create(b, loc, mul(cst(-0.5), mul(x, x))),
        cst(std::sqrt(2.0 * M_PI)));
    return {mul(x, phi),
            arith::AddFOp::create(b, loc, phi, mul(x, density)).getResult()};
  }
  case Activation::Silu: {
    // silu = x s, silu' = s (1 + x (1 - s)) with s = sigmoid(x).
    Value sig = sigmoidScalar(b, loc, x);
    Value oneMinus = arith::SubFOp::create(b, loc, cst(1.0), sig);
    return {mul(x, sig),
            mul(sig, arith::AddFOp::create(b, loc, cst(1.0), mul(x, oneMinus))
                         .getResult())};
  }
  }
  llvm_unreachable("unknown activation");
}

} // namespace

// y = sum_j g_j act(x W_in[e_j]) W_out[e_j] per token. The hidden
// pre-activations z of the selected experts are recomputed (tokens x k x F,
// never the other experts), then with u = W_out[e_j] dy:
//   dg_j = act(z_j) . u_j,  dz_j = g_j u_j act'(z_j),
//   dx = sum_j W_in[e_j] dz_j,
//   dW_in[e] = sum over (token, j) with e_j = e of x dz_j^T,
//   dW_out[e] = sum over (token, j) with e_j = e of g_j act(z_j) dy^T.
// The weights are read by expert index inside the loops (a gather); the
// weight gradients visit every (expert, token, slot) pair and keep the
// matching ones. An inactive token contributes nothing.
LogicalResult MoEOp::buildAdjoint(OpBuilder &b, AdjointBuilder &adjoint) {
  Value dy = adjoint.getCotangent(getResult());
  if (!dy)
    return success();
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  Value x = getX(), indices = getIndices(), gates = getGates();
  Value wIn = getWIn(), wOut = getWOut();
  auto xType = cast<RankedTensorType>(x.getType());
  Type elem = xType.getElementType();
  int64_t n = xType.getRank() - 1; // token dims
  Activation activation = getActivation();
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  auto tokenDims = [&](int64_t from) {
    SmallVector<AffineExpr> e;
    for (int64_t d = 0; d < n; ++d)
      e.push_back(dim(from + d));
    return e;
  };
  auto withDims = [&](SmallVector<AffineExpr> e, ArrayRef<int64_t> extra) {
    for (int64_t d : extra)
      e.push_back(dim(d));
    return e;
  };
  auto iteratorsOf = [](int64_t total, int64_t parallel) {
    SmallVector<utils::IteratorType> it(total, utils::IteratorType::reduction);
    for (int64_t d = 0; d < parallel; ++d)
      it[d] = utils::IteratorType::parallel;
    return it;
  };
  auto expertOf = [&](OpBuilder &nb, Location nl, Value index) {
    return arith::IndexCastOp::create(nb, nl, nb.getIndexType(), index)
        .getResult();
  };
  auto extract = [&](OpBuilder &nb, Location nl, Value t, ValueRange idx) {
    return tensor::ExtractOp::create(nb, nl, t, idx).getResult();
  };
  auto fmaAcc = [&](OpBuilder &nb, Location nl, Value acc, Value p, Value q) {
    return arith::AddFOp::create(nb, nl, acc,
                                 arith::MulFOp::create(nb, nl, p, q))
        .getResult();
  };
  auto zerosOf = [&](ArrayRef<OpFoldResult> sizes) {
    return linalg::FillOp::create(
               b, loc, zeroScalar(b, loc, elem),
               tensor::EmptyOp::create(b, loc, sizes, elem).getResult())
        .getResult(0);
  };
  SmallVector<OpFoldResult> slotSizes = tensor::getMixedSizes(b, loc, indices);
  SmallVector<OpFoldResult> hiddenSizes(slotSizes);
  hiddenSizes.push_back(tensor::getMixedSize(b, loc, wIn, 2));

  // hidden[tok, j, f] = sum_m vec[tok, m] W[e_j, m, f] (W_in), or
  // sum_m W[e_j, f, m] vec[tok, m] (W_out); loops (tok, j, f, m).
  SmallVector<AffineExpr> tok = tokenDims(0);
  int64_t jD = n, fD = n + 1, mD = n + 2;
  auto hiddenByExpert = [&](Value vec, Value w, bool transposed) {
    Value init = zerosOf(hiddenSizes);
    return linalg::GenericOp::create(
               b, loc, init.getType(), ValueRange{vec, indices}, init,
               {AffineMap::get(n + 3, 0, withDims(tok, {mD}), ctx),
                AffineMap::get(n + 3, 0, withDims(tok, {jD}), ctx),
                AffineMap::get(n + 3, 0, withDims(tok, {jD, fD}), ctx)},
               iteratorsOf(n + 3, n + 2),
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value e = expertOf(nb, nl, args[1]);
                 Value f = linalg::IndexOp::create(nb, nl, fD);
                 Value m = linalg::IndexOp::create(nb, nl, mD);
                 Value wv = transposed ? extract(nb, nl, w, {e, f, m})
                                       : extract(nb, nl, w, {e, m, f});
                 linalg::YieldOp::create(nb, nl,
                                         fmaAcc(nb, nl, args[2], args[0], wv));
               })
        .getResult(0);
  };
  Value z = hiddenByExpert(x, wIn, /*transposed=*/false);
  Value u = hiddenByExpert(dy, wOut, /*transposed=*/true);
  // Zeros at the tokens `active` switches off (none without it).
  auto maskInactive = [&](Value v) -> Value {
    Value active = getActive();
    if (!active)
      return v;
    return prefixGeneric(
        b, loc, active, {active}, {v}, false, elem,
        [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) -> Value {
          return arith::SelectOp::create(nb, nl, p[0], f[0],
                                         zeroScalar(nb, nl, elem));
        });
  };
  Value g = maskInactive(gates);
  // dg[tok, j] = sum_f act(z) u (zero for an inactive token).
  Value dg = prefixGeneric(
      b, loc, gates, {}, {z, u}, /*reduce=*/true, elem,
      [&](OpBuilder &nb, Location nl, ValueRange, ValueRange f) -> Value {
        return arith::MulFOp::create(
            nb, nl, activationAndSlope(nb, nl, activation, f[0]).first, f[1]);
      });
  adjoint.addCotangent(gates, maskInactive(dg));
  // dz[tok, j, f] = g u act'(z).
  Value dz = prefixGeneric(
      b, loc, gates, {g}, {z, u}, false, elem,
      [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) -> Value {
        Value slope = activationAndSlope(nb, nl, activation, f[0]).second;
        return arith::MulFOp::create(
            nb, nl, p[0], arith::MulFOp::create(nb, nl, f[1], slope));
      });
  // dx[tok, m] = sum_{j, f} dz[tok, j, f] W_in[e_j, m, f]; loops
  // (tok, m, j, f).
  {
    int64_t m2 = n, j2 = n + 1, f2 = n + 2;
    auto dxGen = linalg::GenericOp::create(
        b, loc, x.getType(), ValueRange{dz, indices}, zerosLike(b, loc, x),
        {AffineMap::get(n + 3, 0, withDims(tok, {j2, f2}), ctx),
         AffineMap::get(n + 3, 0, withDims(tok, {j2}), ctx),
         AffineMap::get(n + 3, 0, withDims(tok, {m2}), ctx)},
        iteratorsOf(n + 3, n + 1),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value e = expertOf(nb, nl, args[1]);
          Value m = linalg::IndexOp::create(nb, nl, m2);
          Value f = linalg::IndexOp::create(nb, nl, f2);
          Value w = extract(nb, nl, wIn, {e, m, f});
          linalg::YieldOp::create(nb, nl, fmaAcc(nb, nl, args[2], args[0], w));
        });
    adjoint.addCotangent(x, dxGen.getResult(0));
  }
  // dW[e, p, q] = sum over (tok, j) with e_j = e of lhs[tok, j?, p] *
  // rhs[tok, j?, q]: loops (e, p, q, tok, j).
  SmallVector<AffineExpr> tok3 = tokenDims(3);
  int64_t jW = n + 3;
  auto weightCt =
      [&](Value w, Value lhs, AffineMap lhsMap, Value rhs, AffineMap rhsMap,
          function_ref<Value(OpBuilder &, Location, Value, Value)> product) {
        auto gen = linalg::GenericOp::create(
            b, loc, w.getType(), ValueRange{lhs, rhs, indices},
            zerosLike(b, loc, w),
            {lhsMap, rhsMap,
             AffineMap::get(n + 4, 0, withDims(tok3, {jW}), ctx),
             AffineMap::get(n + 4, 0, {dim(0), dim(1), dim(2)}, ctx)},
            iteratorsOf(n + 4, 3),
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              Value e = linalg::IndexOp::create(nb, nl, 0);
              Value same =
                  arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                        expertOf(nb, nl, args[2]), e);
              Value p = product(nb, nl, args[0], args[1]);
              Value picked = arith::SelectOp::create(nb, nl, same, p,
                                                     zeroScalar(nb, nl, elem));
              linalg::YieldOp::create(
                  nb, nl,
                  arith::AddFOp::create(nb, nl, args[3], picked).getResult());
            });
        adjoint.addCotangent(w, gen.getResult(0));
      };
  // dW_in[e, m, f]: x[tok, m] dz[tok, j, f].
  weightCt(wIn, x, AffineMap::get(n + 4, 0, withDims(tok3, {1}), ctx), dz,
           AffineMap::get(n + 4, 0, withDims(tok3, {jW, 2}), ctx),
           [](OpBuilder &nb, Location nl, Value p, Value q) -> Value {
             return arith::MulFOp::create(nb, nl, p, q);
           });
  // dW_out[e, f, m]: g[tok, j] act(z[tok, j, f]) dy[tok, m], with the gate
  // folded into the hidden activations first.
  Value gAct = prefixGeneric(
      b, loc, gates, {g}, {z}, false, elem,
      [&](OpBuilder &nb, Location nl, ValueRange p, ValueRange f) -> Value {
        return arith::MulFOp::create(
            nb, nl, p[0], activationAndSlope(nb, nl, activation, f[0]).first);
      });
  weightCt(wOut, gAct, AffineMap::get(n + 4, 0, withDims(tok3, {jW, 1}), ctx),
           dy, AffineMap::get(n + 4, 0, withDims(tok3, {2}), ctx),
           [](OpBuilder &nb, Location nl, Value p, Value q) -> Value {
             return arith::MulFOp::create(nb, nl, p, q);
           });
  return success();
}

//===----------------------------------------------------------------------===//
// gate
//===----------------------------------------------------------------------===//

// Elementwise: the adjoint of the same formula written as a generic.
LogicalResult GateOp::buildAdjoint(OpBuilder &b, AdjointBuilder &adjoint) {
  if (!adjoint.getCotangent(getResult()))
    return success();
  SmallVector<Value> operands = {getState(), getCandidate()};
  llvm::append_range(operands, getGates());
  GateKind kind = getKind();
  double inputBias = getInputBiasOrDefault();
  double forgetBias = getForgetBiasOrDefault();
  return adjointThroughGeneric(
      b, getLoc(), getResult(), operands, adjoint,
      [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
        Type type = v[0].getType();
        auto cst = [&](double x) {
          return arith::ConstantOp::create(nb, nl, nb.getFloatAttr(type, x));
        };
        auto mul = [&](Value x, Value y) {
          return arith::MulFOp::create(nb, nl, x, y).getResult();
        };
        auto add = [&](Value x, Value y) {
          return arith::AddFOp::create(nb, nl, x, y).getResult();
        };
        Value c = v[0], z = v[1];
        switch (kind) {
        case GateKind::Fixed: {
          Value g = sigmoidScalar(nb, nl, v[2]);
          return add(mul(c, g),
                     mul(z, arith::SubFOp::create(nb, nl, cst(1.0), g)));
        }
        case GateKind::Lstm: {
          Value i = sigmoidScalar(nb, nl, add(v[2], cst(inputBias)));
          Value f = sigmoidScalar(nb, nl, add(v[3], cst(forgetBias)));
          return add(mul(c, f), mul(z, i));
        }
        case GateKind::Update: {
          Value u = sigmoidScalar(nb, nl, v[2]);
          return add(mul(u, z),
                     mul(arith::SubFOp::create(nb, nl, cst(1.0), u), c));
        }
        }
        llvm_unreachable("unknown gate kind");
      });
}

//===----------------------------------------------------------------------===//
// memory_update
//===----------------------------------------------------------------------===//

LogicalResult MemoryUpdateOp::buildAdjoint(OpBuilder &, AdjointBuilder &) {
  return success(); // stop-gradient by definition: nothing flows back
}

//===----------------------------------------------------------------------===//
// stop_gradient
//===----------------------------------------------------------------------===//

LogicalResult StopGradientOp::buildAdjoint(OpBuilder &, AdjointBuilder &) {
  return success(); // nothing flows back through it
}
