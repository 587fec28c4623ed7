//===- Linalg.cpp - structured linalg ops in the evaluator ----------------===//
//
// Part of the Recur project.
//
// Every linalg op with the structured interface (linalg.generic, fill and
// the named ops) on tensors, run by definition: the loop sizes come from the
// operand dimensions that the indexing maps index with a bare loop variable,
// the whole iteration space is walked in lexicographic order, and the body
// runs once per point on the elements the indexing maps select. The outputs
// start as copies of the inits and a body that reads its output accumulates
// into it in that order, which is what a reduction means here.
//
// Maps whose results are linear in the loops (the common case) are walked
// with incremental offsets and bounds-checked once at their extreme points;
// other maps (floordiv, mod) are evaluated and checked at every point.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace ::recur::oracle;
using namespace ::recur::oracle::detail;

namespace {

/// constant + sum_d coefficients[d] * i_d.
struct LinearForm {
  std::vector<int64_t> coefficients;
  int64_t constant = 0;
};

std::optional<LinearForm> linearize(AffineExpr expr, unsigned numDims) {
  LinearForm form;
  form.coefficients.assign(numDims, 0);
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    form.coefficients[dim.getPosition()] = 1;
    return form;
  }
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    form.constant = constant.getValue();
    return form;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<LinearForm> lhs = linearize(binary.getLHS(), numDims);
  std::optional<LinearForm> rhs = linearize(binary.getRHS(), numDims);
  if (!lhs || !rhs)
    return std::nullopt;
  auto isConstant = [](const LinearForm &f) {
    return llvm::all_of(f.coefficients, [](int64_t c) { return c == 0; });
  };
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    for (unsigned d = 0; d < numDims; ++d)
      lhs->coefficients[d] += rhs->coefficients[d];
    lhs->constant += rhs->constant;
    return lhs;
  case AffineExprKind::Mul: {
    if (!isConstant(*rhs))
      std::swap(lhs, rhs);
    if (!isConstant(*rhs))
      return std::nullopt;
    for (int64_t &c : lhs->coefficients)
      c *= rhs->constant;
    lhs->constant *= rhs->constant;
    return lhs;
  }
  default:
    return std::nullopt;
  }
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// `expr` at the loop indices `dims`, with affine's floor, ceil and
/// non-negative mod semantics; fails on `op` for a zero divisor or a symbol.
int64_t evalAffine(AffineExpr expr, const int64_t *dims, Operation *op) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return constant.getValue();
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    fail(op, "indexing maps with symbols are not supported");
  int64_t a = evalAffine(binary.getLHS(), dims, op);
  int64_t b = evalAffine(binary.getRHS(), dims, op);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return a + b;
  case AffineExprKind::Mul:
    return a * b;
  default:
    break;
  }
  if (b == 0)
    fail(op, "an indexing map divides by zero");
  switch (expr.getKind()) {
  case AffineExprKind::FloorDiv:
    return floorDiv(a, b);
  case AffineExprKind::CeilDiv:
    return -floorDiv(-a, b);
  default: // Mod: the result has the sign of the divisor.
    return a - floorDiv(a, b) * b;
  }
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// How one tensor operand is indexed: its offset at the current point.
struct Access {
  /// The operand: an input in the environment, or an output being built.
  const Datum *input = nullptr;
  Datum *output = nullptr;
  AffineMap map;
  std::vector<int64_t> shape, strides;
  /// Linear maps: the offset change per unit step of each loop.
  bool linear = true;
  std::vector<int64_t> step;
  int64_t offset = 0;
  /// The block argument it feeds, or -1 when the body does not read it.
  int64_t argument = -1;
  unsigned operandNumber = 0;

  const Datum &tensor() const { return input ? *input : *output; }

  /// Prepares the walk over `ranges`: linear maps are checked at their
  /// extreme points and start at the offset of the first point.
  void prepare(const std::vector<int64_t> &ranges, bool empty, Operation *op);
  /// The offset at `index` of a non-linear map, bounds-checked.
  int64_t offsetAt(const std::vector<int64_t> &index, Operation *op) const;
};

void Access::prepare(const std::vector<int64_t> &ranges, bool empty,
                     Operation *op) {
  unsigned numDims = ranges.size();
  step.assign(numDims, 0);
  offset = 0;
  std::vector<LinearForm> forms;
  for (AffineExpr expr : map.getResults()) {
    std::optional<LinearForm> form = linearize(expr, numDims);
    if (!form) {
      linear = false;
      return;
    }
    forms.push_back(*form);
  }
  for (size_t r = 0; r < forms.size(); ++r) {
    int64_t lo = forms[r].constant, hi = forms[r].constant;
    for (unsigned d = 0; d < numDims; ++d) {
      int64_t reach = forms[r].coefficients[d] * (ranges[d] - 1);
      lo += std::min<int64_t>(0, reach);
      hi += std::max<int64_t>(0, reach);
      step[d] += strides[r] * forms[r].coefficients[d];
    }
    if (!empty && (lo < 0 || hi >= shape[r]))
      fail(op, "the indexing map of operand #" + llvm::Twine(operandNumber) +
                   " reaches positions " + llvm::Twine(lo) + " .. " +
                   llvm::Twine(hi) + " of its dimension " + llvm::Twine(r) +
                   ", which has size " + llvm::Twine(shape[r]));
    offset += strides[r] * forms[r].constant;
  }
}

int64_t Access::offsetAt(const std::vector<int64_t> &index,
                         Operation *op) const {
  int64_t flat = 0;
  for (auto [r, expr] : llvm::enumerate(map.getResults())) {
    int64_t at = evalAffine(expr, index.data(), op);
    if (at < 0 || at >= shape[r])
      fail(op, "the indexing map of operand #" + llvm::Twine(operandNumber) +
                   " reaches position " + llvm::Twine(at) +
                   " of its dimension " + llvm::Twine(r) + ", which has size " +
                   llvm::Twine(shape[r]));
    flat += strides[r] * at;
  }
  return flat;
}

/// The loop sizes: every loop must be indexed by a bare loop variable in
/// some operand, and all such dimensions must agree.
std::vector<int64_t> loopRanges(const std::vector<Access> &accesses,
                                unsigned numLoops, Operation *op) {
  std::vector<int64_t> ranges(numLoops, -1);
  std::vector<unsigned> from(numLoops, 0);
  for (const Access &access : accesses) {
    for (auto [r, expr] : llvm::enumerate(access.map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim)
        continue;
      unsigned d = dim.getPosition();
      int64_t size = access.shape[r];
      if (ranges[d] < 0) {
        ranges[d] = size;
        from[d] = access.operandNumber;
      } else if (ranges[d] != size) {
        fail(op, "loop d" + llvm::Twine(d) + " has size " +
                     llvm::Twine(ranges[d]) + " from operand #" +
                     llvm::Twine(from[d]) + " but size " + llvm::Twine(size) +
                     " from operand #" + llvm::Twine(access.operandNumber));
      }
    }
  }
  for (unsigned d = 0; d < numLoops; ++d)
    if (ranges[d] < 0)
      fail(op, "the size of loop d" + llvm::Twine(d) +
                   " is not the size of any operand dimension");
  return ranges;
}

} // namespace

/// Moves `index` to the next point of the loop nest of `ranges` in
/// lexicographic order, calling `step(d, n)` for each loop d whose index
/// moves by n; returns false after the last point.
template <typename Step>
static bool nextPoint(std::vector<int64_t> &index,
                      const std::vector<int64_t> &ranges, Step step) {
  for (int64_t d = static_cast<int64_t>(ranges.size()) - 1; d >= 0; --d) {
    if (++index[d] < ranges[d]) {
      step(d, 1);
      return true;
    }
    index[d] = 0;
    step(d, -(ranges[d] - 1));
  }
  return false;
}

/// Runs a body that is `out + x * y` (a product or contraction: most of the
/// oracle's work) as a plain loop nest over float64 tensors, without the
/// per-element dispatch of ScalarProgram: the same points in the same order
/// and the same two roundings (a product, then a sum, as the interpreter's
/// mulf and addf), so the same bits. Returns false, having done nothing,
/// for any other body or operand.
static bool runMultiplyAccumulate(Block *body, unsigned numInputs,
                                  std::vector<Access> &accesses,
                                  const std::vector<int64_t> &ranges) {
  if (body->getNumArguments() != numInputs + 1 ||
      !llvm::hasNItems(body->without_terminator(), 2))
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body->front());
  auto add =
      dyn_cast_or_null<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  Operation *yield = body->getTerminator();
  if (!mul || !add || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != add.getResult())
    return false;
  mlir::Value acc = add.getLhs() == mul.getResult()   ? add.getRhs()
                    : add.getRhs() == mul.getResult() ? add.getLhs()
                                                      : mlir::Value();
  // The operand a block argument feeds, if it is a float64 tensor walked
  // linearly.
  auto operandOf = [&](mlir::Value value) -> Access * {
    auto arg = dyn_cast_or_null<mlir::BlockArgument>(value);
    if (!arg || arg.getOwner() != body)
      return nullptr;
    for (Access &access : accesses)
      if (access.argument == arg.getArgNumber())
        return access.linear && access.tensor().index() == 0 ? &access
                                                             : nullptr;
    return nullptr;
  };
  Access *x = operandOf(mul.getLhs()), *y = operandOf(mul.getRhs()),
         *out = operandOf(acc);
  if (!x || !y || !out || !out->output || x->output || y->output)
    return false;

  const double *xData = std::get<0>(x->tensor()).data.data();
  const double *yData = std::get<0>(y->tensor()).data.data();
  double *outData = std::get<0>(*out->output).data.data();
  std::vector<int64_t> index(ranges.size(), 0);
  int64_t xo = x->offset, yo = y->offset, oo = out->offset;
  do {
    double product = xData[xo] * yData[yo];
    outData[oo] = outData[oo] + product;
  } while (nextPoint(index, ranges, [&](int64_t d, int64_t n) {
    xo += x->step[d] * n;
    yo += y->step[d] * n;
    oo += out->step[d] * n;
  }));
  return true;
}

void Evaluator::evalLinalgOp(linalg::LinalgOp linalgOp) {
  Operation *op = linalgOp.getOperation();
  if (!linalgOp.hasPureTensorSemantics())
    fail(op, "only linalg ops on tensors are supported");
  Block *body = linalgOp.getBlock();
  unsigned numLoops = linalgOp.getNumLoops();
  unsigned numInputs = linalgOp.getNumDpsInputs();

  ScalarProgram program(
      op, body->getArguments(), body->without_terminator(),
      body->getTerminator()->getOperands(),
      [this](mlir::Value value, Operation *user) {
        return getScalar(value, user);
      },
      numLoops);

  // The outputs start as the inits; the accesses of the tensor operands.
  std::vector<Datum> results;
  for (OpOperand &init : linalgOp.getDpsInitsMutable())
    results.push_back(get(init.get(), op));
  if (program.getNumInputs() > op->getNumOperands())
    fail(op, "the body takes more arguments than the op has operands");
  std::vector<Access> accesses;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned n = operand.getOperandNumber();
    bool isUsed =
        n < body->getNumArguments() && !body->getArgument(n).use_empty();
    if (linalgOp.isScalar(&operand)) {
      if (isUsed)
        program.input(n) = getScalar(operand.get(), op);
      continue;
    }
    Access access;
    access.operandNumber = n;
    if (n < numInputs)
      access.input = &get(operand.get(), op);
    else
      access.output = &results[n - numInputs];
    access.map = linalgOp.getMatchingIndexingMap(&operand);
    access.shape = shapeOf(access.tensor(), op);
    access.strides = stridesOf(access.shape);
    access.argument = isUsed ? static_cast<int64_t>(n) : -1;
    if (access.map.getNumSymbols() != 0 ||
        access.map.getNumDims() != numLoops ||
        access.map.getNumResults() != access.shape.size())
      fail(op, "the indexing map of operand #" + llvm::Twine(n) +
                   " does not fit a tensor of shape " +
                   reference::shapeString(access.shape));
    accesses.push_back(std::move(access));
  }
  if (results.size() != body->getTerminator()->getNumOperands())
    fail(op, "the body yields " +
                 llvm::Twine(body->getTerminator()->getNumOperands()) +
                 " values for " + llvm::Twine(results.size()) + " outputs");

  std::vector<int64_t> ranges = loopRanges(accesses, numLoops, op);
  bool empty = llvm::is_contained(ranges, 0);
  for (Access &access : accesses)
    access.prepare(ranges, empty, op);
  std::vector<Access *> outputs;
  for (Access &access : accesses)
    if (access.output)
      outputs.push_back(&access);

  if (!empty && runMultiplyAccumulate(body, numInputs, accesses, ranges)) {
    setResults(op, std::move(results));
    return;
  }

  std::vector<int64_t> index(numLoops, 0);
  while (!empty) {
    for (Access &access : accesses) {
      if (!access.linear)
        access.offset = access.offsetAt(index, op);
      if (access.argument >= 0)
        program.input(access.argument) =
            readElement(access.tensor(), access.offset);
    }
    program.run(index.data());
    for (size_t j = 0; j < outputs.size(); ++j)
      writeElement(*outputs[j]->output, outputs[j]->offset, program.output(j));

    if (!nextPoint(index, ranges, [&](int64_t d, int64_t n) {
          for (Access &access : accesses)
            access.offset += access.step[d] * n;
        }))
      break;
  }
  setResults(op, std::move(results));
}
