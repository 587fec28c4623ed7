//===- Evaluator.cpp - float64 evaluation of recur functions --------------===//
//
// Part of the Recur project.
//
// The public entry point, the environment, blocks and calls, and the scalar
// ops outside any body (index arithmetic, constants). The op families live
// in TensorOps.cpp, Linalg.cpp and RecurOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"

#include <exception>

using namespace mlir;
using namespace ::recur::oracle;
using namespace ::recur::oracle::detail;

using OracleValue = ::recur::oracle::Value;

namespace {
/// How deeply func.call may nest (recursion is evaluated, not rejected).
constexpr unsigned kMaxCallDepth = 64;
} // namespace

//===----------------------------------------------------------------------===//
// Environment
//===----------------------------------------------------------------------===//

const Datum &Evaluator::get(mlir::Value value, Operation *user) const {
  auto it = env.find(value);
  if (it == env.end())
    fail(user, operandName(user, value) + " has no value yet");
  return *it->second;
}

Scalar Evaluator::getScalar(mlir::Value value, Operation *user) const {
  const Datum &datum = get(value, user);
  if (const auto *scalar = std::get_if<Scalar>(&datum))
    return *scalar;
  fail(user, operandName(user, value) + " holds " + describe(datum) +
                 ", expected a scalar");
}

int64_t Evaluator::getIndex(mlir::Value value, Operation *user) const {
  Scalar scalar = getScalar(value, user);
  if (const auto *index = std::get_if<int64_t>(&scalar))
    return *index;
  fail(user, operandName(user, value) + " holds " + describe(scalar) +
                 ", expected an index");
}

void Evaluator::bind(mlir::Value value, Datum datum, Operation *op,
                     const llvm::Twine &what) {
  checkType(datum, value.getType(), op, what);
  env[value] = std::make_shared<const Datum>(std::move(datum));
}

void Evaluator::setResults(Operation *op, std::vector<Datum> results) {
  if (results.size() != op->getNumResults())
    fail(op, "evaluation gave " + llvm::Twine(results.size()) + " values for " +
                 llvm::Twine(op->getNumResults()) + " results");
  for (unsigned i = 0; i < results.size(); ++i)
    bind(op->getResult(i), std::move(results[i]), op,
         "result #" + llvm::Twine(i));
}

//===----------------------------------------------------------------------===//
// Blocks, functions, calls
//===----------------------------------------------------------------------===//

std::vector<Datum> Evaluator::runBlock(Block &block, std::vector<Datum> args) {
  Operation *owner = block.getParentOp();
  if (!block.getParent()->hasOneBlock())
    fail(owner, "regions with several blocks are not supported");
  if (args.size() != block.getNumArguments())
    fail(owner, "its block takes " + llvm::Twine(block.getNumArguments()) +
                    " arguments, got " + llvm::Twine(args.size()));
  for (unsigned i = 0; i < args.size(); ++i)
    bind(block.getArgument(i), std::move(args[i]), owner,
         "block argument #" + llvm::Twine(i));
  if (block.empty() || !block.back().hasTrait<OpTrait::IsTerminator>())
    fail(owner, "its block has no terminator");
  for (Operation &op : block.without_terminator())
    evalOp(op);
  Operation *terminator = &block.back();
  std::vector<Datum> results;
  for (mlir::Value operand : terminator->getOperands())
    results.push_back(get(operand, terminator));
  return results;
}

std::vector<Datum> Evaluator::callFunction(func::FuncOp func,
                                           std::vector<Datum> args,
                                           Operation *caller) {
  Operation *blame = caller ? caller : func.getOperation();
  if (func.isExternal())
    fail(blame, "function @" + func.getSymName() + " has no body");
  if (args.size() != func.getNumArguments())
    fail(blame, "function @" + func.getSymName() + " takes " +
                    llvm::Twine(func.getNumArguments()) + " arguments, got " +
                    llvm::Twine(args.size()));
  for (unsigned i = 0; i < args.size(); ++i)
    checkType(args[i], func.getArgument(i).getType(), blame,
              "argument #" + llvm::Twine(i));
  std::vector<Datum> results = runBlock(func.front(), std::move(args));
  Operation *terminator = &func.front().back();
  llvm::ArrayRef<Type> resultTypes = func.getFunctionType().getResults();
  if (results.size() != resultTypes.size())
    fail(terminator, "returns " + llvm::Twine(results.size()) +
                         " values, the function has " +
                         llvm::Twine(resultTypes.size()) + " results");
  for (unsigned i = 0; i < results.size(); ++i)
    checkType(results[i], resultTypes[i], terminator,
              "returned value #" + llvm::Twine(i));
  return results;
}

void Evaluator::evalCall(Operation &op) {
  auto call = cast<func::CallOp>(op);
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      &op, call.getCalleeAttr());
  if (!callee)
    fail(&op, "no function @" + call.getCallee() + " to call");
  if (callDepth >= kMaxCallDepth)
    fail(&op, "calls nest deeper than " + llvm::Twine(kMaxCallDepth));
  std::vector<Datum> args;
  for (mlir::Value operand : call.getOperands())
    args.push_back(get(operand, &op));
  Evaluator calleeEvaluator(callDepth + 1);
  setResults(&op, calleeEvaluator.callFunction(callee, std::move(args), &op));
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

void Evaluator::evalOp(Operation &op) {
  try {
    dispatch(op);
  } catch (EvalError &error) {
    if (error.getOp() != &op)
      error.addContext(&op);
    throw;
  } catch (const std::exception &exception) {
    // lib/Reference reports bad shapes and attributes with exceptions.
    fail(&op, exception.what());
  }
}

void Evaluator::dispatch(Operation &op) {
  Dialect *dialect = op.getDialect();
  if (isa_and_nonnull<mlir::recur::RecurDialect>(dialect))
    return evalRecurOp(op);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return evalLinalgOp(linalgOp);
  if (isa_and_nonnull<tensor::TensorDialect>(dialect))
    return evalTensorOp(op);
  if (isa<func::CallOp>(op))
    return evalCall(op);
  if (isa<arith::ConstantOp>(op) && isa<ShapedType>(op.getResult(0).getType()))
    return evalDenseConstant(op);
  if (isa_and_nonnull<arith::ArithDialect, math::MathDialect,
                      complex::ComplexDialect>(dialect))
    return evalScalarOp(op);
  fail(&op, "is not supported by the float64 evaluator");
}

void Evaluator::evalScalarOp(Operation &op) {
  for (Type type : op.getOperandTypes())
    if (isa<ShapedType>(type))
      fail(&op, "only scalar arith, math and complex ops are supported "
                "outside linalg bodies");
  Block::iterator it(&op);
  ScalarProgram program(&op, {}, {it, std::next(it)}, op.getResults(),
                        [this](mlir::Value value, Operation *user) {
                          return getScalar(value, user);
                        });
  program.run();
  std::vector<Datum> results;
  for (unsigned i = 0; i < op.getNumResults(); ++i)
    results.push_back(program.output(i));
  setResults(&op, std::move(results));
}

void Evaluator::evalDenseConstant(Operation &op) {
  auto attr =
      dyn_cast<DenseElementsAttr>(cast<arith::ConstantOp>(op).getValue());
  auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
  if (!attr || !type || !type.hasStaticShape())
    fail(&op, "only dense constants of static tensor types are supported");
  Datum tensor = makeTensor(type.getElementType(),
                            std::vector<int64_t>(type.getShape()), &op);
  int64_t offset = 0;
  for (Attribute element : attr.getValues<Attribute>()) {
    std::optional<Scalar> value = constantValue(element);
    if (!value)
      fail(&op, "unsupported constant element");
    writeElement(tensor, offset++, *value);
  }
  setResult(&op, std::move(tensor));
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

namespace {

Datum toDatum(const OracleValue &value) {
  return std::visit(
      [](const auto &v) -> Datum {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return Scalar(v);
        else
          return v;
      },
      value);
}

OracleValue toValue(Datum datum, Operation *op) {
  if (auto *scalar = std::get_if<Scalar>(&datum)) {
    if (auto *index = std::get_if<int64_t>(scalar))
      return *index;
    fail(op, "returns " + describe(datum) +
                 ", which an oracle Value cannot hold (only index scalars)");
  }
  return withTensor(datum, op,
                    [](const auto &tensor) -> OracleValue { return tensor; });
}

} // namespace

namespace recur::oracle {

llvm::Expected<std::vector<Value>> evaluate(func::FuncOp func,
                                            llvm::ArrayRef<Value> args) {
  if (!func)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "evaluate: no function");
  // Unverified IR may break the invariants op accessors assert.
  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(func.getContext(), [&](Diagnostic &diag) {
      diagnostics += (diagnostics.empty() ? "" : "; ") + diag.str();
      return success();
    });
    if (failed(verify(func)))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     describeOp(func) +
                                         ": does not verify: " + diagnostics);
  }
  try {
    std::vector<Datum> inputs;
    for (const Value &arg : args)
      inputs.push_back(toDatum(arg));
    Evaluator evaluator;
    std::vector<Datum> results =
        evaluator.callFunction(func, std::move(inputs), nullptr);
    std::vector<Value> values;
    for (Datum &result : results)
      values.push_back(toValue(std::move(result), func));
    return values;
  } catch (const EvalError &error) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error.str());
  } catch (const std::exception &exception) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   describeOp(func) + ": " + exception.what());
  } catch (...) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   describeOp(func) + ": unknown exception");
  }
}

} // namespace recur::oracle
