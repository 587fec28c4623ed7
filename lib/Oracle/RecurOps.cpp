//===- RecurOps.cpp - recur ops through lib/Reference ---------------------===//
//
// Part of the Recur project.
//
// Maps every recur op's operands and attributes onto the matching
// lib/Reference function, exactly as RecurOps.td defines them, and evaluates
// the op's regions with the evaluator through lib/Reference's callbacks:
//
//   linear_scan             linearScan (real, complex, real decay of complex)
//   scan                    scan, the combine region as a ScalarProgram
//   gated_linear_attention  gatedLinearAttention, always the recurrent form:
//                           `algorithm` and `chunk_size` pick how a backend
//                           evaluates the same equations, not what they are
//   gate                    gate (kind, input_bias, forget_bias)
//   window_attention        windowAttention (window, block, include_self,
//                           bias_kind, scale, num_buckets, max_distance)
//   attention               attention (mask, memory_slots, scale)
//   rel_attention           relAttention (the direct scores), scale
//   block_recurrence        blockRecurrence, the body by the evaluator
//   memory_update           memoryUpdate
//   stop_gradient           stopGradient (any element type)
//   halting                 halting (threshold)
//   depth_loop              depthLoop, the body by the evaluator
//   route_topk              routeTopK (k, eps)
//   moe                     moe (activation, active)
//
// Two things lib/Reference does not provide are done here: recur.scan over a
// mix of real and complex inputs runs in complex (real inputs have a zero
// imaginary part, and the region sees and yields their real parts), and the
// region values of block_recurrence and depth_loop, which lib/Reference
// carries as double tensors, travel encoded (see encode / decode) so that
// complex, mask, index and scalar values survive the trip exactly.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "Recur/IR/Recur.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace ::recur::oracle;
using namespace ::recur::oracle::detail;

namespace ir = ::mlir::recur;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The results of an op, moved into Datums.
template <typename... Ts> std::vector<Datum> datums(Ts &&...values) {
  std::vector<Datum> result;
  result.reserve(sizeof...(Ts));
  (result.push_back(Datum(std::forward<Ts>(values))), ...);
  return result;
}

std::optional<double> toDouble(std::optional<llvm::APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}

bool holdsComplex(const Datum &datum) {
  return std::holds_alternative<Tensor<Complex>>(datum);
}

reference::GateKind toReference(ir::GateKind kind) {
  switch (kind) {
  case ir::GateKind::Fixed:
    return reference::GateKind::Fixed;
  case ir::GateKind::Lstm:
    return reference::GateKind::Lstm;
  case ir::GateKind::Update:
    return reference::GateKind::Update;
  }
  llvm_unreachable("unknown enumerator");
}

reference::BiasKind toReference(ir::BiasKind kind) {
  switch (kind) {
  case ir::BiasKind::None:
    return reference::BiasKind::None;
  case ir::BiasKind::T5:
    return reference::BiasKind::T5;
  case ir::BiasKind::Alibi:
    return reference::BiasKind::Alibi;
  }
  llvm_unreachable("unknown enumerator");
}

reference::MaskKind toReference(ir::MaskKind kind) {
  switch (kind) {
  case ir::MaskKind::None:
    return reference::MaskKind::None;
  case ir::MaskKind::Causal:
    return reference::MaskKind::Causal;
  case ir::MaskKind::Memory:
    return reference::MaskKind::Memory;
  }
  llvm_unreachable("unknown enumerator");
}

reference::Activation toReference(ir::Activation activation) {
  switch (activation) {
  case ir::Activation::Relu:
    return reference::Activation::Relu;
  case ir::Activation::Gelu:
    return reference::Activation::Gelu;
  case ir::Activation::Silu:
    return reference::Activation::Silu;
  }
  llvm_unreachable("unknown enumerator");
}

//===----------------------------------------------------------------------===//
// Region values as double tensors
//===----------------------------------------------------------------------===//

/// A value as the double tensor lib/Reference's block_recurrence and
/// depth_loop carry: real tensors as they are, complex tensors as `[..., 2]`
/// (re, im) pairs (the scanned axis stays in front), masks and i32 tensors
/// as exact doubles, scalars as rank-0 tensors (complex ones as `[2]`).
Tensor<double> encode(const Datum &datum) {
  auto pairs = [](std::vector<int64_t> shape, const std::vector<Complex> &z) {
    shape.push_back(2);
    Tensor<double> result(std::move(shape));
    for (size_t i = 0; i < z.size(); ++i) {
      result.data[2 * i] = z[i].real();
      result.data[2 * i + 1] = z[i].imag();
    }
    return result;
  };
  return std::visit(
      [&](const auto &value) -> Tensor<double> {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, Tensor<double>>) {
          return value;
        } else if constexpr (std::is_same_v<T, Tensor<Complex>>) {
          return pairs(value.shape, value.data);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          if (const auto *z = std::get_if<Complex>(&value))
            return pairs({}, {*z});
          if (const auto *x = std::get_if<double>(&value))
            return Tensor<double>({}, std::vector<double>{*x});
          return Tensor<double>(
              {}, std::vector<double>{double(std::get<int64_t>(value))});
        } else {
          Tensor<double> result(value.shape);
          for (int64_t i = 0; i < value.numElements(); ++i)
            result.data[i] = double(value.data[i]);
          return result;
        }
      },
      datum);
}

/// The value of `type` that `encode` turned into `tensor`.
Datum decode(const Tensor<double> &tensor, Type type, Operation *op) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  Type element = tensorType ? tensorType.getElementType() : type;
  std::vector<int64_t> shape = tensor.shape;
  bool isComplex = scalarKindOf(element, op) == ScalarKind::Complex;
  if (isComplex) {
    if (shape.empty() || shape.back() != 2)
      fail(op, "internal error: a complex value lost its (re, im) pairs");
    shape.pop_back();
  }
  if (!tensorType && !shape.empty())
    fail(op, "internal error: a scalar came back as a tensor of shape " +
                 reference::shapeString(shape));
  Datum result =
      tensorType ? makeTensor(element, shape, op) : Datum(Scalar(0.0));
  int64_t n = reference::numElements(shape);
  for (int64_t i = 0; i < n; ++i) {
    Scalar value;
    if (isComplex)
      value = Complex(tensor.data[2 * i], tensor.data[2 * i + 1]);
    else if (scalarKindOf(element, op) == ScalarKind::Int)
      value = int64_t(tensor.data[i]);
    else
      value = tensor.data[i];
    writeElement(result, i, value);
  }
  return result;
}

std::vector<Tensor<double>> encodeAll(const std::vector<Datum> &values) {
  std::vector<Tensor<double>> encoded;
  for (const Datum &value : values)
    encoded.push_back(encode(value));
  return encoded;
}

/// Decodes `tensors` as values of `types`.
std::vector<Datum> decodeAll(const std::vector<Tensor<double>> &tensors,
                             TypeRange types, Operation *op) {
  if (tensors.size() != types.size())
    fail(op, "expected " + llvm::Twine(types.size()) + " values, got " +
                 llvm::Twine(tensors.size()));
  std::vector<Datum> values;
  for (size_t i = 0; i < tensors.size(); ++i)
    values.push_back(decode(tensors[i], types[i], op));
  return values;
}

//===----------------------------------------------------------------------===//
// Scans
//===----------------------------------------------------------------------===//

void linearScan(Evaluator &ev, ir::LinearScanOp op) {
  Operation *o = op;
  int64_t axis = static_cast<int64_t>(op.getAxis());
  bool reverse = op.getReverse();
  bool complexA = holdsComplex(ev.get(op.getA(), o));
  bool complexB = holdsComplex(ev.get(op.getB(), o));
  if (!complexB) {
    auto r = reference::linearScan(
        ev.getTensor<double>(op.getA(), o), ev.getTensor<double>(op.getB(), o),
        ev.getOptional<double>(op.getInit(), o), axis, reverse);
    return ev.setResults(o, datums(std::move(r.h), std::move(r.last)));
  }
  const Tensor<Complex> &b = ev.getTensor<Complex>(op.getB(), o);
  std::optional<Tensor<Complex>> init =
      ev.getOptional<Complex>(op.getInit(), o);
  auto r = complexA ? reference::linearScan(ev.getTensor<Complex>(op.getA(), o),
                                            b, init, axis, reverse)
                    : reference::linearScan(ev.getTensor<double>(op.getA(), o),
                                            b, init, axis, reverse);
  ev.setResults(o, datums(std::move(r.h), std::move(r.last)));
}

/// `datum` as a tensor of `T` (double or Complex); real tensors widen to
/// complex.
template <typename T> Tensor<T> scanOperand(const Datum &datum, Operation *op) {
  if (const auto *tensor = std::get_if<Tensor<T>>(&datum))
    return *tensor;
  if constexpr (std::is_same_v<T, Complex>)
    if (const auto *real = std::get_if<Tensor<double>>(&datum))
      return reference::toComplex(*real);
  fail(op, "cannot scan " + describe(datum));
}

/// `x` as a region argument of `kind`.
template <typename T> Scalar toArgument(const T &x, ScalarKind kind) {
  if constexpr (std::is_same_v<T, Complex>)
    if (kind == ScalarKind::Real)
      return x.real();
  if (kind == ScalarKind::Complex)
    return Complex(x);
  return x;
}

template <typename T> T fromYield(const Scalar &value, Operation *op) {
  if (const auto *x = std::get_if<T>(&value))
    return *x;
  if constexpr (std::is_same_v<T, Complex>)
    if (const auto *x = std::get_if<double>(&value))
      return Complex(*x);
  fail(op, "the combine region yielded " + describe(value));
}

/// recur.scan with every element as a `T`.
template <typename T> void scanAs(Evaluator &ev, ir::ScanOp op) {
  Operation *o = op;
  std::vector<Tensor<T>> inputs, inits;
  for (mlir::Value input : op.getInputs())
    inputs.push_back(scanOperand<T>(ev.get(input, o), o));
  for (mlir::Value init : op.getInits())
    inits.push_back(scanOperand<T>(ev.get(init, o), o));
  size_t n = inputs.size();

  Block &body = op.getCombine().front();
  ScalarProgram program(o, body.getArguments(), body.without_terminator(),
                        body.getTerminator()->getOperands(),
                        [&](mlir::Value value, Operation *user) {
                          return ev.getScalar(value, user);
                        });
  if (program.getNumInputs() != 2 * n ||
      body.getTerminator()->getNumOperands() != n)
    fail(o, "the combine region must take " + llvm::Twine(2 * n) +
                " elements and yield " + llvm::Twine(n));
  reference::CombineFn<T> combine = [&](const std::vector<T> &acc,
                                        const std::vector<T> &next) {
    for (size_t i = 0; i < n; ++i) {
      program.input(i) = toArgument(acc[i], program.inputKind(i));
      program.input(n + i) = toArgument(next[i], program.inputKind(n + i));
    }
    program.run();
    std::vector<T> combined;
    for (size_t i = 0; i < n; ++i)
      combined.push_back(fromYield<T>(program.output(i), o));
    return combined;
  };

  std::vector<Tensor<T>> scanned =
      reference::scan(inputs, inits, static_cast<int64_t>(op.getAxis()),
                      op.getReverse(), combine);
  std::vector<Datum> results;
  for (size_t i = 0; i < n; ++i) {
    bool real = !isa<ComplexType>(
        cast<RankedTensorType>(o->getResult(i).getType()).getElementType());
    if constexpr (std::is_same_v<T, Complex>)
      if (real) {
        results.push_back(reference::realPart(scanned[i]));
        continue;
      }
    results.push_back(std::move(scanned[i]));
  }
  ev.setResults(o, std::move(results));
}

void scan(Evaluator &ev, ir::ScanOp op) {
  bool anyComplex = false;
  for (mlir::Value input : op.getInputs())
    anyComplex |= holdsComplex(ev.get(input, op));
  if (anyComplex)
    return scanAs<Complex>(ev, op);
  scanAs<double>(ev, op);
}

void gatedLinearAttention(Evaluator &ev, ir::GatedLinearAttentionOp op) {
  Operation *o = op;
  const Tensor<double> &q = ev.getTensor<double>(op.getQ(), o);
  const Tensor<double> &k = ev.getTensor<double>(op.getK(), o);
  const Tensor<double> &v = ev.getTensor<double>(op.getV(), o);
  if (holdsComplex(ev.get(op.getA(), o))) {
    auto r = reference::gatedLinearAttention(
        q, k, v, ev.getTensor<Complex>(op.getA(), o),
        ev.getOptional<Complex>(op.getInit(), o));
    return ev.setResults(o, datums(std::move(r.y), std::move(r.state)));
  }
  auto r = reference::gatedLinearAttention(
      q, k, v, ev.getTensor<double>(op.getA(), o),
      ev.getOptional<double>(op.getInit(), o));
  ev.setResults(o, datums(std::move(r.y), std::move(r.state)));
}

//===----------------------------------------------------------------------===//
// Gates and attention
//===----------------------------------------------------------------------===//

void gate(Evaluator &ev, ir::GateOp op) {
  Operation *o = op;
  std::vector<Tensor<double>> gates;
  for (mlir::Value g : op.getGates())
    gates.push_back(ev.getTensor<double>(g, o));
  ev.setResult(o, reference::gate(toReference(op.getKind()),
                                  ev.getTensor<double>(op.getState(), o),
                                  ev.getTensor<double>(op.getCandidate(), o),
                                  gates, op.getInputBiasOrDefault(),
                                  op.getForgetBiasOrDefault()));
}

void windowAttention(Evaluator &ev, ir::WindowAttentionOp op) {
  Operation *o = op;
  reference::WindowAttentionAttrs attrs;
  attrs.window = static_cast<int64_t>(op.getWindow());
  attrs.block = static_cast<int64_t>(op.getBlock());
  attrs.includeSelf = op.getIncludeSelf();
  attrs.biasKind = toReference(op.getBiasKind());
  attrs.scale = toDouble(op.getScale());
  if (std::optional<uint64_t> buckets = op.getNumBuckets())
    attrs.numBuckets = static_cast<int64_t>(*buckets);
  if (std::optional<uint64_t> distance = op.getMaxDistance())
    attrs.maxDistance = static_cast<int64_t>(*distance);
  ev.setResult(
      o, reference::windowAttention(ev.getTensor<double>(op.getQ(), o),
                                    ev.getTensor<double>(op.getK(), o),
                                    ev.getTensor<double>(op.getV(), o), attrs,
                                    ev.getOptional<double>(op.getBias(), o),
                                    ev.getOptional<double>(op.getKCache(), o),
                                    ev.getOptional<double>(op.getVCache(), o)));
}

void attention(Evaluator &ev, ir::AttentionOp op) {
  Operation *o = op;
  reference::AttentionAttrs attrs;
  attrs.mask = toReference(op.getMask());
  attrs.memorySlots = static_cast<int64_t>(op.getMemorySlots().value_or(0));
  attrs.scale = toDouble(op.getScale());
  ev.setResult(
      o, reference::attention(ev.getTensor<double>(op.getQ(), o),
                              ev.getTensor<double>(op.getK(), o),
                              ev.getTensor<double>(op.getV(), o), attrs,
                              ev.getOptional<bool>(op.getKeyPadding(), o)));
}

void relAttention(Evaluator &ev, ir::RelAttentionOp op) {
  Operation *o = op;
  ev.setResult(o,
               reference::relAttention(ev.getTensor<double>(op.getQ(), o),
                                       ev.getTensor<double>(op.getK(), o),
                                       ev.getTensor<double>(op.getV(), o),
                                       ev.getTensor<double>(op.getR(), o),
                                       ev.getTensor<double>(op.getU(), o),
                                       ev.getTensor<double>(op.getPosBias(), o),
                                       toDouble(op.getScale())));
}

//===----------------------------------------------------------------------===//
// Block recurrence, memory, depth and experts
//===----------------------------------------------------------------------===//

std::vector<Datum> values(Evaluator &ev, ValueRange range, Operation *op) {
  std::vector<Datum> result;
  for (mlir::Value value : range)
    result.push_back(ev.get(value, op));
  return result;
}

void blockRecurrence(Evaluator &ev, ir::BlockRecurrenceOp op) {
  Operation *o = op;
  Block &body = op.getBody().front();
  size_t numInputs = op.getInputs().size();
  size_t numInits = op.getInits().size();
  size_t numOutputs = o->getNumResults() - numInits;
  if (body.getNumArguments() != numInputs + numInits ||
      body.getTerminator()->getNumOperands() != o->getNumResults())
    fail(o, "the body does not match the inputs, inits and results");
  TypeRange argTypes = body.getArgumentTypes();
  TypeRange resultTypes = o->getResultTypes();

  reference::BlockBody step = [&](const std::vector<Tensor<double>> &blocks,
                                  const std::vector<Tensor<double>> &carried) {
    std::vector<Datum> args =
        decodeAll(blocks, argTypes.take_front(numInputs), o);
    for (Datum &value : decodeAll(carried, argTypes.drop_front(numInputs), o))
      args.push_back(std::move(value));
    std::vector<Datum> yielded = ev.runBlock(body, std::move(args));
    std::vector<Tensor<double>> encoded = encodeAll(yielded);
    reference::BlockStep result;
    result.outputs.assign(encoded.begin(), encoded.begin() + numOutputs);
    result.carried.assign(encoded.begin() + numOutputs, encoded.end());
    return result;
  };
  reference::BlockRecurrenceResult r =
      reference::blockRecurrence(encodeAll(values(ev, op.getInputs(), o)),
                                 encodeAll(values(ev, op.getInits(), o)),
                                 static_cast<int64_t>(op.getBlockSize()),
                                 static_cast<int64_t>(op.getAxis()), step);
  std::vector<Datum> results =
      decodeAll(r.outputs, resultTypes.take_front(numOutputs), o);
  for (Datum &value :
       decodeAll(r.finals, resultTypes.drop_front(numOutputs), o))
    results.push_back(std::move(value));
  ev.setResults(o, std::move(results));
}

void depthLoop(Evaluator &ev, ir::DepthLoopOp op) {
  Operation *o = op;
  Block &body = op.getBody().front();
  if (body.getNumArguments() != op.getInits().size() + 1)
    fail(o, "the body must take the step index and the carried values");
  TypeRange carriedTypes = TypeRange(body.getArgumentTypes()).drop_front();
  reference::DepthBody step = [&](int64_t l,
                                  const std::vector<Tensor<double>> &carried) {
    std::vector<Datum> args;
    args.push_back(Scalar(l));
    for (Datum &value : decodeAll(carried, carriedTypes, o))
      args.push_back(std::move(value));
    return encodeAll(ev.runBlock(body, std::move(args)));
  };
  std::vector<Tensor<double>> finals =
      reference::depthLoop(encodeAll(values(ev, op.getInits(), o)),
                           static_cast<int64_t>(op.getMaxDepth()), step);
  ev.setResults(o, decodeAll(finals, o->getResultTypes(), o));
}

void halting(Evaluator &ev, ir::HaltingOp op) {
  Operation *o = op;
  reference::HaltingResult r = reference::halting(
      ev.getTensor<double>(op.getPHat(), o), ev.getTensor<double>(op.getH(), o),
      ev.getTensor<double>(op.getMass(), o),
      ev.getTensor<double>(op.getAcc(), o),
      ev.getTensor<double>(op.getSPrev(), o),
      op.getThreshold().convertToDouble());
  ev.setResults(o, datums(std::move(r.a), std::move(r.s), std::move(r.newMass),
                          std::move(r.newAcc)));
}

void routeTopK(Evaluator &ev, ir::RouteTopKOp op) {
  Operation *o = op;
  reference::RouteResult r = reference::routeTopK(
      ev.getTensor<double>(op.getProbs(), o), static_cast<int64_t>(op.getK()),
      op.getEps().convertToDouble());
  ev.setResults(o, datums(std::move(r.gates), std::move(r.indices)));
}

void moe(Evaluator &ev, ir::MoEOp op) {
  Operation *o = op;
  ev.setResult(o, reference::moe(ev.getTensor<double>(op.getX(), o),
                                 ev.getTensor<int32_t>(op.getIndices(), o),
                                 ev.getTensor<double>(op.getGates(), o),
                                 ev.getTensor<double>(op.getWIn(), o),
                                 ev.getTensor<double>(op.getWOut(), o),
                                 ev.getOptional<bool>(op.getActive(), o),
                                 toReference(op.getActivation())));
}

} // namespace

void Evaluator::evalRecurOp(Operation &op) {
  Evaluator &ev = *this;
  llvm::TypeSwitch<Operation *, void>(&op)
      .Case<ir::LinearScanOp>([&](auto o) { linearScan(ev, o); })
      .Case<ir::ScanOp>([&](auto o) { scan(ev, o); })
      .Case<ir::GatedLinearAttentionOp>(
          [&](auto o) { gatedLinearAttention(ev, o); })
      .Case<ir::GateOp>([&](auto o) { gate(ev, o); })
      .Case<ir::WindowAttentionOp>([&](auto o) { windowAttention(ev, o); })
      .Case<ir::AttentionOp>([&](auto o) { attention(ev, o); })
      .Case<ir::RelAttentionOp>([&](auto o) { relAttention(ev, o); })
      .Case<ir::BlockRecurrenceOp>([&](auto o) { blockRecurrence(ev, o); })
      .Case<ir::MemoryUpdateOp>([&](ir::MemoryUpdateOp o) {
        setResult(&op, reference::memoryUpdate(
                           getTensor<double>(o.getMemory(), &op),
                           getTensor<double>(o.getNewStates(), &op),
                           static_cast<int64_t>(o.getAxis()),
                           static_cast<int64_t>(o.getSize())));
      })
      .Case<ir::StopGradientOp>(
          [&](ir::StopGradientOp o) { setResult(&op, get(o.getInput(), &op)); })
      .Case<ir::HaltingOp>([&](auto o) { halting(ev, o); })
      .Case<ir::DepthLoopOp>([&](auto o) { depthLoop(ev, o); })
      .Case<ir::RouteTopKOp>([&](auto o) { routeTopK(ev, o); })
      .Case<ir::MoEOp>([&](auto o) { moe(ev, o); })
      .Default([&](Operation *) {
        fail(&op, "is not supported by the float64 evaluator");
      });
}
