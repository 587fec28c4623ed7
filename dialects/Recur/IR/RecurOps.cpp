//===- RecurOps.cpp - recur op verifiers and type inference ---------------===//
//
// Part of the Recur project.
//
// Every verifier message here has a matching expected-error in
// test/Dialect/Recur/invalid.mlir; test/lint/verifier-coverage.test checks it.
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::recur;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

namespace {

/// Renders a shape the way tensor types spell it: `2x?x4`, or `scalar`.
std::string shapeStr(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      [&] { os << 'x'; });
  return s;
}

bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool shapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  return llvm::all_of(llvm::zip_equal(a, b), [](auto p) {
    return dimsCompatible(std::get<0>(p), std::get<1>(p));
  });
}

/// Same element type and compatible shapes.
bool typesCompatible(Type a, Type b) {
  auto ta = dyn_cast<RankedTensorType>(a);
  auto tb = dyn_cast<RankedTensorType>(b);
  if (!ta || !tb)
    return a == b;
  return ta.getElementType() == tb.getElementType() &&
         shapesCompatible(ta.getShape(), tb.getShape());
}

/// True when two shapes agree in every dimension except `skip`.
bool shapesCompatibleExcept(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                            int64_t skip) {
  if (a.size() != b.size())
    return false;
  for (auto [i, p] : llvm::enumerate(llvm::zip_equal(a, b)))
    if (static_cast<int64_t>(i) != skip &&
        !dimsCompatible(std::get<0>(p), std::get<1>(p)))
      return false;
  return true;
}

SmallVector<int64_t> dropDim(ArrayRef<int64_t> shape, int64_t dim) {
  SmallVector<int64_t> out(shape);
  out.erase(out.begin() + dim);
  return out;
}

SmallVector<int64_t> withDim(ArrayRef<int64_t> shape, int64_t dim,
                             int64_t size) {
  SmallVector<int64_t> out(shape);
  out[dim] = size;
  return out;
}

/// Shape `lead ++ tail` where `lead` is all but the last `drop` dimensions.
SmallVector<int64_t> replaceTail(ArrayRef<int64_t> shape, unsigned drop,
                                 ArrayRef<int64_t> tail) {
  SmallVector<int64_t> out(shape.drop_back(drop));
  out.append(tail.begin(), tail.end());
  return out;
}

/// True when `src` broadcasts to `dst` under numpy rules (trailing aligned,
/// each dimension equal or 1).
bool broadcastsTo(ArrayRef<int64_t> src, ArrayRef<int64_t> dst) {
  if (src.size() > dst.size())
    return false;
  ArrayRef<int64_t> tail = dst.take_back(src.size());
  return llvm::all_of(llvm::zip_equal(src, tail), [](auto p) {
    return std::get<0>(p) == 1 ||
           dimsCompatible(std::get<0>(p), std::get<1>(p));
  });
}

bool isStatic(int64_t d) { return !ShapedType::isDynamic(d); }

LogicalResult verifyScale(Operation *op, std::optional<APFloat> scale) {
  if (!scale)
    return success();
  double value = scale->convertToDouble();
  if (!(value > 0.0 && std::isfinite(value)))
    return op->emitOpError("'scale' must be positive and finite, got ")
           << value;
  return success();
}

RankedTensorType rankedOf(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

} // namespace

//===----------------------------------------------------------------------===//
// LinearScanOp
//===----------------------------------------------------------------------===//

LogicalResult LinearScanOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  RankedTensorType bType = rankedOf(adaptor.getB());
  IntegerAttr axisAttr = adaptor.getAxisAttr();
  if (!bType || !axisAttr)
    return failure();
  int64_t axis = axisAttr.getInt();
  if (axis < 0 || axis >= bType.getRank())
    return emitOptionalError(location, "'axis' ", axis,
                             " is out of range for 'b' of rank ",
                             bType.getRank());
  inferredReturnTypes.push_back(bType);
  inferredReturnTypes.push_back(RankedTensorType::get(
      dropDim(bType.getShape(), axis), bType.getElementType()));
  return success();
}

LogicalResult LinearScanOp::verify() {
  auto aType = cast<RankedTensorType>(getA().getType());
  auto bType = cast<RankedTensorType>(getB().getType());
  int64_t axis = getAxisAttr().getInt();
  int64_t aRank = aType.getRank(), bRank = bType.getRank();
  if (aRank <= axis || aRank > bRank)
    return emitOpError("'a' must have rank between axis + 1 (")
           << axis + 1 << ") and the rank of 'b' (" << bRank << "), got "
           << aRank;
  if (!shapesCompatible(aType.getShape(), bType.getShape().take_front(aRank)))
    return emitOpError("'a' shape ") << shapeStr(aType.getShape())
                                     << " is not a leading part of 'b' shape "
                                     << shapeStr(bType.getShape());
  Type aElem = aType.getElementType(), bElem = bType.getElementType();
  auto bComplex = dyn_cast<ComplexType>(bElem);
  if (aElem != bElem && !(bComplex && bComplex.getElementType() == aElem))
    return emitOpError("element type of 'a' (")
           << aElem << ") must be that of 'b' (" << bElem
           << ") or its real part";
  if (Value init = getInit()) {
    auto stateType = cast<RankedTensorType>(getLast().getType());
    if (!typesCompatible(init.getType(), stateType))
      return emitOpError("'init' type ")
             << init.getType() << " does not match the state type "
             << stateType;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

LogicalResult
ScanOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                         Adaptor adaptor,
                         SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, adaptor.getInputs().getTypes());
  return success();
}

LogicalResult ScanOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  auto first = cast<RankedTensorType>(getInputs().front().getType());
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis >= first.getRank())
    return emitOpError("'axis' ")
           << axis << " is out of range for inputs of rank " << first.getRank();
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (!shapesCompatible(type.getShape(), first.getShape()))
      return emitOpError("input #")
             << i << " shape " << shapeStr(type.getShape())
             << " does not match input #0 shape " << shapeStr(first.getShape());
  }
  size_t n = getInputs().size();
  if (!getInits().empty() && getInits().size() != n)
    return emitOpError("expects no 'init' operands or one per input (")
           << n << "), got " << getInits().size();
  for (auto [i, init, input] : llvm::enumerate(getInits(), getInputs())) {
    auto inputType = cast<RankedTensorType>(input.getType());
    auto carry = RankedTensorType::get(dropDim(inputType.getShape(), axis),
                                       inputType.getElementType());
    if (!typesCompatible(init.getType(), carry))
      return emitOpError("'init' #")
             << i << " type " << init.getType()
             << " does not match the carry type " << carry;
  }
  if (std::optional<ArrayAttr> identity = getIdentity()) {
    if (identity->size() != n)
      return emitOpError("'identity' must hold one element per input (")
             << n << "), got " << identity->size();
    for (auto [i, attr, input] : llvm::enumerate(*identity, getInputs())) {
      Type elem = cast<RankedTensorType>(input.getType()).getElementType();
      auto typed = dyn_cast<TypedAttr>(attr);
      if (!typed || typed.getType() != elem)
        return emitOpError("'identity' element #")
               << i << " must be a constant of type " << elem;
    }
  }
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  Block &block = getCombine().front();
  size_t n = getInputs().size();
  if (block.getNumArguments() != 2 * n)
    return emitOpError("combine region must take ")
           << 2 * n << " scalar arguments (earlier then later elements), got "
           << block.getNumArguments();
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    Type elem =
        cast<RankedTensorType>(getInputs()[i % n].getType()).getElementType();
    if (arg.getType() != elem)
      return emitOpError("combine region argument #")
             << i << " has type " << arg.getType() << ", expected " << elem;
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("combine region must end with 'recur.yield', got '")
           << block.getTerminator()->getName() << "'";
  if (yield.getValues().size() != n)
    return emitOpError("combine region must yield ")
           << n << " values, got " << yield.getValues().size();
  for (auto [i, value, input] :
       llvm::enumerate(yield.getValues(), getInputs())) {
    Type elem = cast<RankedTensorType>(input.getType()).getElementType();
    if (value.getType() != elem)
      return emitOpError("combine region yield #")
             << i << " has type " << value.getType() << ", expected " << elem;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GatedLinearAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult GatedLinearAttentionOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  RankedTensorType qType = rankedOf(adaptor.getQ());
  RankedTensorType vType = rankedOf(adaptor.getV());
  RankedTensorType aType = rankedOf(adaptor.getA());
  if (!qType || !vType || !aType)
    return failure();
  if (qType.getRank() < 2 || vType.getRank() < 2)
    return emitOptionalError(location,
                             "'q' and 'v' must have rank >= 2 ([..., T, d])");
  inferredReturnTypes.push_back(vType);
  int64_t dk = qType.getShape().back(), dv = vType.getShape().back();
  inferredReturnTypes.push_back(RankedTensorType::get(
      replaceTail(qType.getShape(), 2, {dk, dv}), aType.getElementType()));
  return success();
}

LogicalResult GatedLinearAttentionGradOp::verify() {
  // The forward's operands must make a valid gla, and `dstate` its state.
  auto qType = cast<RankedTensorType>(getQ().getType());
  auto vType = cast<RankedTensorType>(getV().getType());
  auto aType = cast<RankedTensorType>(getA().getType());
  auto stateType = cast<RankedTensorType>(getDstate().getType());
  if (qType.getRank() < 2 || vType.getRank() < 2 ||
      !shapesCompatible(qType.getShape(), getK().getType().getShape()) ||
      !shapesCompatible(aType.getShape(), qType.getShape()))
    return emitOpError("'q', 'k' and 'a' must share one shape [..., T, dk]");
  SmallVector<int64_t> want = replaceTail(
      qType.getShape(), 2, {qType.getShape().back(), vType.getShape().back()});
  if (!shapesCompatible(stateType.getShape(), want) ||
      stateType.getElementType() != aType.getElementType() ||
      (getInit() && !typesCompatible(getInit().getType(), stateType)))
    return emitOpError("'dstate' (and 'init') must have the state type (")
           << shapeStr(want) << " of " << aType.getElementType() << "), got "
           << stateType;
  if (getChunkSize() <= 0)
    return emitOpError("'chunk_size' must be positive, got ") << getChunkSize();
  return success();
}

LogicalResult GatedLinearAttentionOp::verify() {
  auto qType = cast<RankedTensorType>(getQ().getType());
  auto kType = cast<RankedTensorType>(getK().getType());
  auto vType = cast<RankedTensorType>(getV().getType());
  auto aType = cast<RankedTensorType>(getA().getType());
  if (!shapesCompatible(qType.getShape(), kType.getShape()))
    return emitOpError("'q' shape ")
           << shapeStr(qType.getShape()) << " does not match 'k' shape "
           << shapeStr(kType.getShape());
  if (!shapesCompatible(aType.getShape(), kType.getShape()))
    return emitOpError("'a' shape ")
           << shapeStr(aType.getShape()) << " does not match 'k' shape "
           << shapeStr(kType.getShape());
  if (!shapesCompatibleExcept(vType.getShape(), kType.getShape(),
                              kType.getRank() - 1))
    return emitOpError("'v' shape ")
           << shapeStr(vType.getShape()) << " must match 'k' shape "
           << shapeStr(kType.getShape()) << " in all but the last dimension";
  Type elem = qType.getElementType();
  if (kType.getElementType() != elem || vType.getElementType() != elem)
    return emitOpError("'q', 'k' and 'v' must share one element type, got ")
           << elem << ", " << kType.getElementType() << ", "
           << vType.getElementType();
  Type aElem = aType.getElementType();
  auto aComplex = dyn_cast<ComplexType>(aElem);
  if (aElem != elem && !(aComplex && aComplex.getElementType() == elem))
    return emitOpError("element type of 'a' (")
           << aElem << ") must be that of 'q' (" << elem
           << ") or complex of it";
  if (Value init = getInit()) {
    Type stateType = getState().getType();
    if (!typesCompatible(init.getType(), stateType))
      return emitOpError("'init' type ")
             << init.getType() << " does not match the state type "
             << stateType;
  }
  if (std::optional<uint64_t> chunk = getChunkSize()) {
    if (getChunkSizeAttr().getInt() <= 0)
      return emitOpError("'chunk_size' must be positive, got ")
             << getChunkSizeAttr().getInt();
    if (getAlgorithm() == ScanAlgorithm::Recurrent)
      return emitOpError("'chunk_size' has no meaning for the recurrent "
                         "algorithm");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GateOp
//===----------------------------------------------------------------------===//

LogicalResult GateOp::verify() {
  unsigned expected = getKind() == GateKind::Lstm ? 2 : 1;
  if (getGates().size() != expected)
    return emitOpError("'")
           << stringifyGateKind(getKind()) << "' gate expects " << expected
           << (expected == 1 ? " gate operand" : " gate operands") << ", got "
           << getGates().size();
  if ((getInputBias() || getForgetBias()) && getKind() != GateKind::Lstm)
    return emitOpError(
        "'input_bias' and 'forget_bias' apply only to the lstm gate");
  auto stateType = cast<RankedTensorType>(getState().getType());
  for (auto [i, gate] : llvm::enumerate(getGates())) {
    auto gateType = cast<RankedTensorType>(gate.getType());
    if (gateType.getElementType() != stateType.getElementType())
      return emitOpError("gate operand #")
             << i << " element type " << gateType.getElementType()
             << " does not match the state's " << stateType.getElementType();
    if (!broadcastsTo(gateType.getShape(), stateType.getShape()))
      return emitOpError("gate operand #")
             << i << " shape " << shapeStr(gateType.getShape())
             << " does not broadcast to the state shape "
             << shapeStr(stateType.getShape());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Attention helpers
//===----------------------------------------------------------------------===//

namespace {

/// Checks the `[..., T, d]` layout shared by the attention ops: equal ranks of
/// at least `minRank`, one element type, `k` matching `q` but for the time
/// dimension, `v` matching `k` but for the last.
LogicalResult verifyQKV(Operation *op, RankedTensorType q, RankedTensorType k,
                        RankedTensorType v, int64_t minRank) {
  if (q.getRank() < minRank || k.getRank() != q.getRank() ||
      v.getRank() != q.getRank())
    return op->emitOpError("'q', 'k' and 'v' must have one rank, at least ")
           << minRank;
  int64_t timeDim = q.getRank() - 2;
  if (!shapesCompatibleExcept(k.getShape(), q.getShape(), timeDim))
    return op->emitOpError("'k' shape ")
           << shapeStr(k.getShape()) << " must match 'q' shape "
           << shapeStr(q.getShape()) << " in all but the time dimension";
  if (!shapesCompatibleExcept(v.getShape(), k.getShape(), q.getRank() - 1))
    return op->emitOpError("'v' shape ")
           << shapeStr(v.getShape()) << " must match 'k' shape "
           << shapeStr(k.getShape()) << " in all but the last dimension";
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return op->emitOpError("'q', 'k' and 'v' must share one element type");
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// WindowAttentionOp
//===----------------------------------------------------------------------===//

namespace {

/// The operands and attributes of a window_attention, or of the
/// window_attention_grad of one (the same getters).
template <typename OpT> LogicalResult verifyWindowAttention(OpT op) {
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  auto kType = cast<RankedTensorType>(op.getK().getType());
  auto vType = cast<RankedTensorType>(op.getV().getType());
  if (failed(verifyQKV(op, qType, kType, vType, 2)))
    return failure();
  int64_t timeDim = qType.getRank() - 2;
  if (!dimsCompatible(kType.getDimSize(timeDim), qType.getDimSize(timeDim)))
    return op.emitOpError("'k' must cover the same ")
           << qType.getDimSize(timeDim)
           << " positions as 'q'; earlier keys go in the cache";
  int64_t window = op.getWindowAttr().getInt(),
          block = op.getBlockAttr().getInt();
  if (window < 1)
    return op.emitOpError("'window' must be at least 1, got ") << window;
  if (block < 0)
    return op.emitOpError("'block' must be non-negative, got ") << block;
  if (block > 0 && window % block != 0)
    return op.emitOpError("'window' (")
           << window << ") must be a multiple of 'block' (" << block << ")";
  if (failed(verifyScale(op, op.getScale())))
    return failure();

  Type elem = qType.getElementType();
  BiasKind kind = op.getBiasKind();
  RankedTensorType biasType = rankedOf(op.getBias());
  if (kind == BiasKind::None && biasType)
    return op.emitOpError("a 'bias' operand needs 'bias_kind' t5 or alibi");
  if (kind != BiasKind::None && !biasType)
    return op.emitOpError("'bias_kind' ")
           << stringifyBiasKind(kind) << " needs a 'bias' operand";
  if ((op.getNumBuckets() || op.getMaxDistance()) && kind != BiasKind::T5)
    return op.emitOpError(
        "'num_buckets' and 'max_distance' apply only to the t5 bias");
  if (biasType) {
    if (qType.getRank() < 3)
      return op.emitOpError("a position bias needs a heads dimension: 'q' must "
                            "have rank >= 3");
    if (biasType.getElementType() != elem)
      return op.emitOpError("'bias' element type ")
             << biasType.getElementType() << " does not match 'q' (" << elem
             << ")";
    int64_t heads = qType.getDimSize(qType.getRank() - 3);
    SmallVector<int64_t> expected{heads};
    if (kind == BiasKind::T5) {
      int64_t buckets =
          op.getNumBuckets() ? op.getNumBucketsAttr().getInt() : 32;
      int64_t maxDistance =
          op.getMaxDistance() ? op.getMaxDistanceAttr().getInt() : 128;
      if (buckets < 2 || buckets % 2 != 0)
        return op.emitOpError("'num_buckets' must be even and at least 2, got ")
               << buckets;
      if (maxDistance <= buckets / 2)
        return op.emitOpError("'max_distance' (")
               << maxDistance << ") must exceed the " << buckets / 2
               << " exact buckets";
      expected.push_back(buckets);
    }
    if (!shapesCompatible(biasType.getShape(), expected))
      return op.emitOpError("'bias' shape ")
             << shapeStr(biasType.getShape()) << " does not match "
             << (kind == BiasKind::T5 ? "[heads, num_buckets]" : "[heads]")
             << " = " << shapeStr(expected);
  }

  RankedTensorType kc = rankedOf(op.getKCache()), vc = rankedOf(op.getVCache());
  if (!kc != !vc)
    return op.emitOpError("'k_cache' and 'v_cache' must be given together");
  if (kc) {
    if (kc.getRank() != qType.getRank() ||
        !shapesCompatibleExcept(kc.getShape(), kType.getShape(), timeDim))
      return op.emitOpError("'k_cache' shape ")
             << shapeStr(kc.getShape()) << " must match 'k' shape "
             << shapeStr(kType.getShape()) << " in all but the time dimension";
    if (vc.getRank() != qType.getRank() ||
        !shapesCompatibleExcept(vc.getShape(), vType.getShape(), timeDim))
      return op.emitOpError("'v_cache' shape ")
             << shapeStr(vc.getShape()) << " must match 'v' shape "
             << shapeStr(vType.getShape()) << " in all but the time dimension";
    if (!dimsCompatible(kc.getDimSize(timeDim), vc.getDimSize(timeDim)))
      return op.emitOpError(
          "'k_cache' and 'v_cache' must hold the same number of positions");
    if (kc.getElementType() != elem || vc.getElementType() != elem)
      return op.emitOpError("the cache must have the element type of 'q' (")
             << elem << ")";
  }
  return success();
}

} // namespace

LogicalResult WindowAttentionOp::verify() {
  return verifyWindowAttention(*this);
}

LogicalResult WindowAttentionGradOp::verify() {
  if (failed(verifyWindowAttention(*this)))
    return failure();
  // One cotangent per differentiable operand, in operand order, each of
  // its operand's type.
  SmallVector<Value> operands{getQ(), getK(), getV()};
  for (Value optional : {getBias(), getKCache(), getVCache()})
    if (optional)
      operands.push_back(optional);
  if (getGrads().size() != operands.size())
    return emitOpError("expects ")
           << operands.size()
           << " results (dq, dk, dv, then dbias with a bias and dk_cache, "
              "dv_cache with a cache), got "
           << getGrads().size();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(operands, getGrads())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError("result #")
             << i << " must have the type of its operand ("
             << std::get<0>(pair).getType() << "), got "
             << std::get<1>(pair).getType();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult
AttentionOp::inferReturnTypes(MLIRContext *context,
                              std::optional<Location> location, Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  RankedTensorType qType = rankedOf(adaptor.getQ());
  RankedTensorType vType = rankedOf(adaptor.getV());
  if (!qType || !vType)
    return failure();
  if (qType.getRank() < 2 || vType.getRank() < 2)
    return emitOptionalError(location,
                             "'q' and 'v' must have rank >= 2 ([..., T, d])");
  inferredReturnTypes.push_back(RankedTensorType::get(
      replaceTail(qType.getShape(), 1, {vType.getShape().back()}),
      qType.getElementType()));
  return success();
}

LogicalResult AttentionOp::verify() {
  auto qType = cast<RankedTensorType>(getQ().getType());
  auto kType = cast<RankedTensorType>(getK().getType());
  auto vType = cast<RankedTensorType>(getV().getType());
  if (failed(verifyQKV(*this, qType, kType, vType, 2)) ||
      failed(verifyScale(*this, getScale())))
    return failure();
  int64_t timeDim = qType.getRank() - 2;
  int64_t tq = qType.getDimSize(timeDim), tk = kType.getDimSize(timeDim);
  MaskKind mask = getMask();
  if (getMemorySlots() && mask != MaskKind::Memory)
    return emitOpError("'memory_slots' applies only to the memory mask");
  if (mask == MaskKind::Causal && isStatic(tq) && isStatic(tk) && tk < tq)
    return emitOpError("causal mask needs at least as many keys as queries, "
                       "got ")
           << tk << " keys for " << tq << " queries";
  if (mask == MaskKind::Memory) {
    if (!getMemorySlots())
      return emitOpError("memory mask needs 'memory_slots'");
    if (!dimsCompatible(tq, tk))
      return emitOpError("memory mask needs as many queries as keys, got ")
             << tq << " queries and " << tk << " keys";
    int64_t slots = getMemorySlotsAttr().getInt();
    if (slots < 1 || (isStatic(tq) && slots > tq))
      return emitOpError("'memory_slots' (")
             << slots << ") must be in [1, " << shapeStr({tq}) << "]";
  }
  if (RankedTensorType pad = rankedOf(getKeyPadding())) {
    SmallVector<int64_t> expected(kType.getShape().drop_back());
    if (!shapesCompatible(pad.getShape(), expected))
      return emitOpError("'key_padding' shape ")
             << shapeStr(pad.getShape())
             << " does not match [..., Tk] = " << shapeStr(expected);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RelAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult RelAttentionOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  RankedTensorType qType = rankedOf(adaptor.getQ());
  RankedTensorType vType = rankedOf(adaptor.getV());
  if (!qType || !vType)
    return failure();
  if (qType.getRank() < 3 || vType.getRank() < 3)
    return emitOptionalError(
        location, "'q' and 'v' must have rank >= 3 ([..., H, T, d])");
  inferredReturnTypes.push_back(RankedTensorType::get(
      replaceTail(qType.getShape(), 1, {vType.getShape().back()}),
      qType.getElementType()));
  return success();
}

LogicalResult RelAttentionOp::verify() {
  auto qType = cast<RankedTensorType>(getQ().getType());
  auto kType = cast<RankedTensorType>(getK().getType());
  auto vType = cast<RankedTensorType>(getV().getType());
  if (failed(verifyQKV(*this, qType, kType, vType, 3)) ||
      failed(verifyScale(*this, getScale())))
    return failure();
  int64_t rank = qType.getRank();
  int64_t heads = qType.getDimSize(rank - 3);
  int64_t segment = qType.getDimSize(rank - 2);
  int64_t keys = kType.getDimSize(rank - 2);
  int64_t headDim = qType.getDimSize(rank - 1);
  if (isStatic(segment) && isStatic(keys) && keys < segment)
    return emitOpError("the ") << keys << " keys must cover the " << segment
                               << " segment positions (memory first)";
  Type elem = qType.getElementType();
  auto check = [&](Value operand, StringRef name, ArrayRef<int64_t> expected,
                   StringRef layout) -> LogicalResult {
    auto type = cast<RankedTensorType>(operand.getType());
    if (!shapesCompatible(type.getShape(), expected))
      return emitOpError("'")
             << name << "' shape " << shapeStr(type.getShape())
             << " does not match " << layout << " = " << shapeStr(expected);
    if (type.getElementType() != elem)
      return emitOpError("'")
             << name << "' must have the element type of 'q' (" << elem << ")";
    return success();
  };
  if (failed(check(getR(), "r", {heads, keys, headDim},
                   "[heads, keys, head_dim]")) ||
      failed(check(getU(), "u", {heads, headDim}, "[heads, head_dim]")) ||
      failed(check(getPosBias(), "pos_bias", {heads, headDim},
                   "[heads, head_dim]")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// BlockRecurrenceOp
//===----------------------------------------------------------------------===//

namespace {

/// The type of one block of `type`: `blockSize` positions along `axis`.
Type blockTypeOf(Type type, int64_t axis, int64_t blockSize) {
  auto ranked = cast<RankedTensorType>(type);
  return RankedTensorType::get(withDim(ranked.getShape(), axis, blockSize),
                               ranked.getElementType());
}

} // namespace

LogicalResult BlockRecurrenceOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  int64_t blockSize = getBlockSizeAttr().getInt();
  int64_t axis = getAxisAttr().getInt();
  if (blockSize < 1)
    return emitOpError("'block_size' must be at least 1, got ") << blockSize;
  int64_t length = ShapedType::kDynamic;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (axis < 0 || axis >= type.getRank())
      return emitOpError("'axis' ") << axis << " is out of range for input #"
                                    << i << " of rank " << type.getRank();
    int64_t n = type.getDimSize(axis);
    if (!dimsCompatible(n, length))
      return emitOpError("input #")
             << i << " has " << n << " positions along 'axis', but the "
             << "inputs before it have " << length;
    if (isStatic(n))
      length = n;
  }
  if (isStatic(length) && length % blockSize != 0)
    return emitOpError("sequence length ")
           << length << " is not a multiple of 'block_size' (" << blockSize
           << ")";
  size_t numInits = getInits().size();
  if (getResults().size() < numInits)
    return emitOpError("expects at least ")
           << numInits << " results (the final carried values), got "
           << getResults().size();
  for (auto [i, result] : llvm::enumerate(getOutputs())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || axis >= type.getRank() ||
        !dimsCompatible(type.getDimSize(axis), length))
      return emitOpError("output #")
             << i << " must be a tensor with the " << shapeStr({length})
             << " input positions along 'axis', got " << result.getType();
  }
  for (auto [i, result, init] : llvm::enumerate(getFinalStates(), getInits())) {
    if (result.getType() != init.getType())
      return emitOpError("final state #")
             << i << " has type " << result.getType()
             << ", but its 'init' has type " << init.getType();
  }
  return success();
}

LogicalResult BlockRecurrenceOp::verifyRegions() {
  Block &body = getBody().front();
  int64_t blockSize = getBlockSizeAttr().getInt();
  int64_t axis = getAxisAttr().getInt();
  SmallVector<Type> expectedArgs;
  for (Value input : getInputs())
    expectedArgs.push_back(blockTypeOf(input.getType(), axis, blockSize));
  llvm::append_range(expectedArgs, getInits().getTypes());
  if (body.getNumArguments() != expectedArgs.size())
    return emitOpError("body must take ")
           << expectedArgs.size()
           << " arguments (one block of each input, then the carried "
              "values), got "
           << body.getNumArguments();
  for (auto [i, arg, expected] :
       llvm::enumerate(body.getArguments(), expectedArgs))
    if (arg.getType() != expected)
      return emitOpError("body argument #")
             << i << " has type " << arg.getType() << ", expected " << expected;

  SmallVector<Type> expectedYield;
  for (Value output : getOutputs())
    expectedYield.push_back(blockTypeOf(output.getType(), axis, blockSize));
  llvm::append_range(expectedYield, getInits().getTypes());
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with 'recur.yield', got '")
           << body.getTerminator()->getName() << "'";
  if (yield.getValues().size() != expectedYield.size())
    return emitOpError("body must yield ")
           << expectedYield.size()
           << " values (one block of each output, then the carried values), "
              "got "
           << yield.getValues().size();
  for (auto [i, value, expected] :
       llvm::enumerate(yield.getValues(), expectedYield))
    if (value.getType() != expected)
      return emitOpError("body yield #") << i << " has type " << value.getType()
                                         << ", expected " << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// MemoryUpdateOp
//===----------------------------------------------------------------------===//

LogicalResult MemoryUpdateOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  RankedTensorType memType = rankedOf(adaptor.getMemory());
  IntegerAttr axisAttr = adaptor.getAxisAttr();
  IntegerAttr sizeAttr = adaptor.getSizeAttr();
  if (!memType || !axisAttr || !sizeAttr)
    return failure();
  int64_t axis = axisAttr.getInt();
  if (axis < 0 || axis >= memType.getRank())
    return emitOptionalError(location, "'axis' ", axis,
                             " is out of range for 'memory' of rank ",
                             memType.getRank());
  if (sizeAttr.getInt() < 0)
    return emitOptionalError(location, "'size' must be non-negative, got ",
                             sizeAttr.getInt());
  inferredReturnTypes.push_back(RankedTensorType::get(
      withDim(memType.getShape(), axis, sizeAttr.getInt()),
      memType.getElementType()));
  return success();
}

LogicalResult MemoryUpdateOp::verify() {
  auto memType = cast<RankedTensorType>(getMemory().getType());
  auto newType = cast<RankedTensorType>(getNewStates().getType());
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis >= memType.getRank())
    return emitOpError("'axis' ")
           << axis << " is out of range for 'memory' of rank "
           << memType.getRank();
  if (!shapesCompatibleExcept(newType.getShape(), memType.getShape(), axis))
    return emitOpError("'new_states' shape ")
           << shapeStr(newType.getShape()) << " must match 'memory' shape "
           << shapeStr(memType.getShape()) << " in all but dimension " << axis;
  if (newType.getElementType() != memType.getElementType())
    return emitOpError("'new_states' element type ")
           << newType.getElementType() << " does not match 'memory' ("
           << memType.getElementType() << ")";
  int64_t m = memType.getDimSize(axis), l = newType.getDimSize(axis);
  int64_t size = getSizeAttr().getInt();
  if (isStatic(m) && isStatic(l) && size > m + l)
    return emitOpError("'size' (") << size << ") exceeds the " << m + l
                                   << " positions of memory and new states";
  return success();
}

//===----------------------------------------------------------------------===//
// HaltingOp
//===----------------------------------------------------------------------===//

LogicalResult HaltingOp::verify() {
  auto pType = cast<RankedTensorType>(getPHat().getType());
  auto hType = cast<RankedTensorType>(getH().getType());
  if (hType.getRank() != pType.getRank() + 1 ||
      !shapesCompatible(hType.getShape().drop_back(), pType.getShape()))
    return emitOpError("'h' shape ")
           << shapeStr(hType.getShape()) << " must be the 'p_hat' shape "
           << shapeStr(pType.getShape()) << " plus a feature dimension";
  if (hType.getElementType() != pType.getElementType())
    return emitOpError("'h' element type ")
           << hType.getElementType() << " does not match 'p_hat' ("
           << pType.getElementType() << ")";
  double threshold = getThreshold().convertToDouble();
  if (!(threshold > 0.0 && threshold <= 1.0))
    return emitOpError("'threshold' must be in (0, 1], got ") << threshold;
  return success();
}

//===----------------------------------------------------------------------===//
// DepthLoopOp
//===----------------------------------------------------------------------===//

LogicalResult
DepthLoopOp::inferReturnTypes(MLIRContext *context,
                              std::optional<Location> location, Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, adaptor.getInits().getTypes());
  return success();
}

LogicalResult DepthLoopOp::verify() {
  if (getInits().empty())
    return emitOpError("expects at least one carried value");
  if (getMaxDepthAttr().getInt() < 1)
    return emitOpError("'max_depth' must be at least 1, got ")
           << getMaxDepthAttr().getInt();
  return success();
}

LogicalResult DepthLoopOp::verifyRegions() {
  Block &body = getBody().front();
  size_t n = getInits().size();
  if (body.getNumArguments() != n + 1)
    return emitOpError("body must take ")
           << n + 1 << " arguments (the step index, then the carried values), "
           << "got " << body.getNumArguments();
  if (!body.getArgument(0).getType().isIndex())
    return emitOpError("body's first argument must be the step index "
                       "(index), got ")
           << body.getArgument(0).getType();
  for (auto [i, arg, init] :
       llvm::enumerate(body.getArguments().drop_front(), getInits()))
    if (arg.getType() != init.getType())
      return emitOpError("body argument #")
             << i + 1 << " has type " << arg.getType() << ", expected "
             << init.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with 'recur.yield', got '")
           << body.getTerminator()->getName() << "'";
  if (yield.getValues().size() != n)
    return emitOpError("body must yield ")
           << n << " carried values, got " << yield.getValues().size();
  for (auto [i, value, init] : llvm::enumerate(yield.getValues(), getInits()))
    if (value.getType() != init.getType())
      return emitOpError("body yield #") << i << " has type " << value.getType()
                                         << ", expected " << init.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// RouteTopKOp
//===----------------------------------------------------------------------===//

LogicalResult
RouteTopKOp::inferReturnTypes(MLIRContext *context,
                              std::optional<Location> location, Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  RankedTensorType probs = rankedOf(adaptor.getProbs());
  IntegerAttr kAttr = adaptor.getKAttr();
  if (!probs || !kAttr)
    return failure();
  if (probs.getRank() < 1)
    return emitOptionalError(location,
                             "'probs' must have an experts dimension");
  // A non-positive `k` would make a result type with a negative dimension.
  int64_t k = kAttr.getInt(), experts = probs.getShape().back();
  if (k < 1)
    return emitOptionalError(location, "'k' (", k, ") must be in [1, ",
                             shapeStr({experts}), "] for ", shapeStr({experts}),
                             " experts");
  SmallVector<int64_t> shape = replaceTail(probs.getShape(), 1, {k});
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, probs.getElementType()));
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 32)));
  return success();
}

LogicalResult RouteTopKOp::verify() {
  auto probs = cast<RankedTensorType>(getProbs().getType());
  if (probs.getRank() < 1)
    return emitOpError("'probs' must have an experts dimension");
  int64_t k = getKAttr().getInt();
  int64_t experts = probs.getShape().back();
  if (k < 1 || (isStatic(experts) && k > experts))
    return emitOpError("'k' (")
           << k << ") must be in [1, " << shapeStr({experts}) << "] for "
           << shapeStr({experts}) << " experts";
  if (!(getEps().convertToDouble() >= 0.0))
    return emitOpError("'eps' must be non-negative, got ")
           << getEps().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// MoEOp
//===----------------------------------------------------------------------===//

LogicalResult MoEOp::verify() {
  auto xType = cast<RankedTensorType>(getX().getType());
  auto idxType = cast<RankedTensorType>(getIndices().getType());
  auto gatesType = cast<RankedTensorType>(getGates().getType());
  auto wIn = cast<RankedTensorType>(getWIn().getType());
  auto wOut = cast<RankedTensorType>(getWOut().getType());
  if (xType.getRank() < 1)
    return emitOpError("'x' must have a feature dimension");
  ArrayRef<int64_t> tokens = xType.getShape().drop_back();
  if (idxType.getRank() != xType.getRank() ||
      !shapesCompatible(idxType.getShape().drop_back(), tokens))
    return emitOpError("'indices' shape ")
           << shapeStr(idxType.getShape()) << " must be the token shape "
           << shapeStr(tokens) << " plus the k dimension";
  if (!shapesCompatible(gatesType.getShape(), idxType.getShape()))
    return emitOpError("'gates' shape ")
           << shapeStr(gatesType.getShape()) << " does not match 'indices' "
           << "shape " << shapeStr(idxType.getShape());
  Type elem = xType.getElementType();
  if (gatesType.getElementType() != elem || wIn.getElementType() != elem ||
      wOut.getElementType() != elem)
    return emitOpError("'gates', 'w_in' and 'w_out' must have the element "
                       "type of 'x' (")
           << elem << ")";
  if (wIn.getRank() != 3)
    return emitOpError("'w_in' must be [experts, d, hidden], got shape ")
           << shapeStr(wIn.getShape());
  int64_t experts = wIn.getDimSize(0), width = xType.getShape().back();
  int64_t hidden = wIn.getDimSize(2);
  if (!dimsCompatible(wIn.getDimSize(1), width))
    return emitOpError("'w_in' model width ")
           << wIn.getDimSize(1) << " does not match the width of 'x' (" << width
           << ")";
  SmallVector<int64_t> expectedOut{experts, hidden, width};
  if (!shapesCompatible(wOut.getShape(), expectedOut))
    return emitOpError("'w_out' shape ")
           << shapeStr(wOut.getShape())
           << " does not match [experts, hidden, d] = "
           << shapeStr(expectedOut);
  int64_t k = idxType.getShape().back();
  if (isStatic(k) && isStatic(experts) && k > experts)
    return emitOpError("selects ")
           << k << " experts per token but there are only " << experts;
  if (RankedTensorType active = rankedOf(getActive()))
    if (!shapesCompatible(active.getShape(), tokens))
      return emitOpError("'active' shape ")
             << shapeStr(active.getShape()) << " does not match the token "
             << "shape " << shapeStr(tokens);
  return success();
}

//===----------------------------------------------------------------------===//
// Shared semantics
//===----------------------------------------------------------------------===//

/// The bucket of a distance n >= numBuckets / 2 by the definition, in f64.
static int64_t logSpacedT5Bucket(int64_t n, int64_t numBuckets,
                                 int64_t maxDistance) {
  int64_t maxExact = numBuckets / 2;
  double exact = static_cast<double>(maxExact);
  double frac = std::log(static_cast<double>(n) / exact) /
                std::log(static_cast<double>(maxDistance) / exact);
  int64_t bucket =
      maxExact +
      static_cast<int64_t>(frac * static_cast<double>(numBuckets - maxExact));
  return std::min(bucket, numBuckets - 1);
}

SmallVector<int64_t> mlir::recur::t5BucketThresholds(int64_t numBuckets,
                                                     int64_t maxDistance) {
  assert(numBuckets >= 2 && numBuckets % 2 == 0 &&
         maxDistance > numBuckets / 2 && "verified by window_attention");
  // The bucket never decreases with n (log is monotonic, the divisor
  // positive) and is the last one from maxDistance on (frac >= 1), so the
  // first n of each bucket is a binary search over [exact, maxDistance].
  int64_t maxExact = numBuckets / 2;
  SmallVector<int64_t> thresholds;
  for (int64_t k = maxExact + 1; k < numBuckets; ++k) {
    int64_t lo = maxExact, hi = maxDistance;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (logSpacedT5Bucket(mid, numBuckets, maxDistance) >= k)
        hi = mid;
      else
        lo = mid + 1;
    }
    thresholds.push_back(lo);
  }
  return thresholds;
}

Value mlir::recur::buildT5Bucket(OpBuilder &b, Location loc, Value delta,
                                 int64_t numBuckets, int64_t maxDistance) {
  // exact + #{k : n >= thresholds[k]}: the same buckets as the definition's
  // logs, which the compiler evaluates once here instead of a kernel per
  // (query, key) pair.
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value exact = index(numBuckets / 2);
  Value n = arith::MaxSIOp::create(b, loc, delta, index(0));
  Value isExact =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, n, exact);
  Value bucket = exact;
  for (int64_t threshold : t5BucketThresholds(numBuckets, maxDistance)) {
    Value reached = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, n,
                                          index(threshold));
    bucket = arith::AddIOp::create(
        b, loc, bucket,
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), reached));
  }
  return arith::SelectOp::create(b, loc, isExact, n, bucket);
}

//===----------------------------------------------------------------------===//
// ViewAsRealOp, ViewAsComplexOp
//===----------------------------------------------------------------------===//

namespace {

/// The view of a `source` of complex elements as their parts (`toReal`),
/// or of parts as complex elements: the last dimension twice (half) as
/// long and, for a buffer, the offset and the other strides twice (half)
/// as large. Null where there is none: not a ranked tensor or buffer of
/// rank 1 or more, the wrong elements, a buffer whose last stride is not a
/// static 1, or (to complex) an odd static size, stride or offset.
Type complexViewType(Type source, bool toReal) {
  auto shaped = dyn_cast<ShapedType>(source);
  if (!shaped || !shaped.hasRank() || shaped.getRank() == 0)
    return {};
  Type elem = shaped.getElementType(), viewElem;
  if (toReal) {
    auto complex = dyn_cast<ComplexType>(elem);
    if (!complex || !isa<FloatType>(complex.getElementType()))
      return {};
    viewElem = complex.getElementType();
  } else {
    if (!isa<FloatType>(elem))
      return {};
    viewElem = ComplexType::get(elem);
  }
  // A static extent, stride or offset scaled; std::nullopt when halving
  // an odd one.
  auto scale = [&](int64_t n) -> std::optional<int64_t> {
    if (ShapedType::isDynamic(n))
      return n;
    if (toReal)
      return 2 * n;
    if (n % 2)
      return std::nullopt;
    return n / 2;
  };
  SmallVector<int64_t> shape(shaped.getShape());
  std::optional<int64_t> last = scale(shape.back());
  if (!last)
    return {};
  shape.back() = *last;
  if (auto tensor = dyn_cast<RankedTensorType>(source))
    return tensor.getEncoding() ? Type()
                                : RankedTensorType::get(shape, viewElem);
  auto memref = dyn_cast<MemRefType>(source);
  if (!memref)
    return {};
  if (memref.getLayout().isIdentity())
    return MemRefType::get(shape, viewElem, MemRefLayoutAttrInterface(),
                           memref.getMemorySpace());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1)
    return {};
  for (int64_t &stride : MutableArrayRef<int64_t>(strides).drop_back()) {
    std::optional<int64_t> scaled = scale(stride);
    if (!scaled)
      return {};
    stride = *scaled;
  }
  std::optional<int64_t> viewOffset = scale(offset);
  if (!viewOffset)
    return {};
  return MemRefType::get(
      shape, viewElem,
      StridedLayoutAttr::get(source.getContext(), *viewOffset, strides),
      memref.getMemorySpace());
}

/// The checks of both views, `toReal` for view_as_real.
LogicalResult verifyComplexView(Operation *op, Type source, Type result,
                                bool toReal) {
  if (isa<RankedTensorType>(source) != isa<RankedTensorType>(result))
    return op->emitOpError(
        "must view a tensor as a tensor or a buffer as a buffer");
  auto shaped = cast<ShapedType>(source);
  if (shaped.getRank() == 0)
    return op->emitOpError("must view a source of rank 1 or more");
  Type elem = shaped.getElementType();
  auto complex = dyn_cast<ComplexType>(elem);
  if (toReal && (!complex || !isa<FloatType>(complex.getElementType())))
    return op->emitOpError("must view complex elements of a float type, not ")
           << elem;
  if (!toReal && !isa<FloatType>(elem))
    return op->emitOpError("must view float elements, not ") << elem;
  if (auto tensor = dyn_cast<RankedTensorType>(source);
      tensor && tensor.getEncoding())
    return op->emitOpError("must view a tensor without an encoding");
  if (auto memref = dyn_cast<MemRefType>(source)) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!memref.getLayout().isIdentity() &&
        (failed(memref.getStridesAndOffset(strides, offset)) ||
         strides.back() != 1))
      return op->emitOpError("must view a buffer whose last dimension has a "
                             "static stride of 1");
  }
  Type expected = complexViewType(source, toReal);
  if (!expected)
    return op->emitOpError("cannot halve the odd last dimension, offset or "
                           "strides of ")
           << source;
  if (result != expected)
    return op->emitOpError("result type ")
           << result << " is not the view of " << source << ", " << expected;
  return success();
}

} // namespace

Type ViewAsRealOp::getViewType(Type source) {
  return complexViewType(source, /*toReal=*/true);
}

LogicalResult ViewAsRealOp::verify() {
  return verifyComplexView(*this, getSource().getType(), getType(),
                           /*toReal=*/true);
}

Value ViewAsRealOp::getViewSource() { return getSource(); }

Type ViewAsComplexOp::getViewType(Type source) {
  return complexViewType(source, /*toReal=*/false);
}

LogicalResult ViewAsComplexOp::verify() {
  return verifyComplexView(*this, getSource().getType(), getType(),
                           /*toReal=*/false);
}

Value ViewAsComplexOp::getViewSource() { return getSource(); }

#define GET_OP_CLASSES
#include "Recur/IR/RecurOps.cpp.inc"
