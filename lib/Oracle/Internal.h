//===- Internal.h - the evaluator's shared internals ------------*- C++ -*-===//
//
// Part of the Recur project.
//
// What the files of lib/Oracle share: the values an SSA value can hold while
// a function is evaluated (tensors and scalars), the error every failure
// becomes, the compiled scalar programs that run linalg, scan-combine and
// top-level scalar ops, and the Evaluator, whose op handlers are spread over
// Evaluator.cpp (blocks, calls, scalars), TensorOps.cpp (tensor glue),
// Linalg.cpp (structured ops) and RecurOps.cpp (recur ops).
//
// Failures are thrown as EvalError inside the library (they must cross
// lib/Reference's region callbacks) and caught by `evaluate`, which turns
// them into llvm::Error; nothing escapes it.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_ORACLE_INTERNAL_H
#define RECUR_LIB_ORACLE_INTERNAL_H

#include "recur/Oracle/Evaluator.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlir::linalg {
class LinalgOp;
} // namespace mlir::linalg

namespace recur::oracle::detail {

namespace reference = ::recur::reference;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// One scalar: every float as double, complex as Complex, and every integer
/// (i1, i32, i64, index) as its bit pattern zero-extended to 64 bits.
using Scalar = std::variant<double, Complex, int64_t>;

/// What an SSA value holds during evaluation: a tensor or a scalar.
using Datum = std::variant<Tensor<double>, Tensor<Complex>, Tensor<bool>,
                           Tensor<int32_t>, Scalar>;

enum class ScalarKind { Real, Complex, Int };

template <typename T> constexpr ScalarKind scalarKindOf();
template <> constexpr ScalarKind scalarKindOf<double>() {
  return ScalarKind::Real;
}
template <> constexpr ScalarKind scalarKindOf<Complex>() {
  return ScalarKind::Complex;
}
template <> constexpr ScalarKind scalarKindOf<int64_t>() {
  return ScalarKind::Int;
}

/// The kind of `scalar` (the enumerators follow the alternatives of Scalar).
inline ScalarKind kindOf(const Scalar &scalar) {
  return static_cast<ScalarKind>(scalar.index());
}

llvm::StringRef kindName(ScalarKind kind);

/// What `datum` holds: `tensor<2x3xf64>`, `a scalar f64`, `a scalar
/// complex<f64>` or `a scalar integer`.
std::string describe(const Datum &datum);

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Why `op` could not be evaluated. Thrown inside the library only.
class EvalError {
public:
  EvalError(mlir::Operation *op, std::string message)
      : op(op), message(std::move(message)) {}

  mlir::Operation *getOp() const { return op; }
  /// `'name' at LOC: message`, then the regions it was evaluated in.
  std::string str() const;
  /// Records that the failing op ran in a region of `parent`.
  void addContext(mlir::Operation *parent);

private:
  mlir::Operation *op;
  std::string message;
  std::vector<std::string> context;
};

/// Throws an EvalError for `op`.
[[noreturn]] void fail(mlir::Operation *op, const llvm::Twine &message);

/// `'name' at LOC`.
std::string describeOp(mlir::Operation *op);

//===----------------------------------------------------------------------===//
// Types and elements
//===----------------------------------------------------------------------===//

/// The kind of a float, complex, integer or index type; fails on `op` for
/// any other type.
ScalarKind scalarKindOf(mlir::Type type, mlir::Operation *op);

/// The bit width of an integer type; 64 for `index`.
unsigned intWidth(mlir::Type type);

/// The low `width` bits of `value`, zero-extended (the canonical form of an
/// integer Scalar).
int64_t truncBits(uint64_t value, unsigned width);

/// The low `width` bits of `value`, sign-extended.
int64_t signExtend(int64_t value, unsigned width);

/// A zero-filled tensor of `shape` holding `elementType`s (float, complex,
/// i1 or i32); fails on `op` for other element types.
Datum makeTensor(mlir::Type elementType, std::vector<int64_t> shape,
                 mlir::Operation *op);

/// The shape of a tensor datum; fails on `op` for a scalar.
const std::vector<int64_t> &shapeOf(const Datum &datum, mlir::Operation *op);

/// The element at row-major `offset`, as a Scalar.
Scalar readElement(const Datum &tensor, int64_t offset);

/// Stores `value` (a Scalar of the tensor's kind) at row-major `offset`.
void writeElement(Datum &tensor, int64_t offset, const Scalar &value);

/// Fails on `op` unless `datum` fits `type`: the same kind of tensor (or
/// scalar), the same rank, and the type's static sizes. `what` names the
/// value in the message.
void checkType(const Datum &datum, mlir::Type type, mlir::Operation *op,
               const llvm::Twine &what);

/// The value of a float, integer or complex (`[re, im]`) constant
/// attribute; nullopt for any other attribute.
std::optional<Scalar> constantValue(mlir::Attribute attr);

/// The element type of a (possibly const, referenced) Tensor type.
template <typename TensorT> struct ElementOfImpl;
template <typename T> struct ElementOfImpl<Tensor<T>> {
  using type = T;
};
template <typename TensorT>
using ElementOf = typename ElementOfImpl<std::decay_t<TensorT>>::type;

/// Applies `fn` to the tensor `datum` holds, whatever its element type, and
/// returns what `fn` returns; fails on `op` for a scalar.
template <typename Fn>
auto withTensor(const Datum &datum, mlir::Operation *op, Fn fn) {
  using Result = decltype(fn(std::declval<const Tensor<double> &>()));
  return std::visit(
      [&](const auto &value) -> Result {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, Scalar>)
          fail(op, "expected a tensor, got " + describe(datum));
        else
          return fn(value);
      },
      datum);
}

/// Calls `fn` on every multi-index of `shape` in row-major order.
void forEachIndex(const std::vector<int64_t> &shape,
                  llvm::function_ref<void(const std::vector<int64_t> &)> fn);

//===----------------------------------------------------------------------===//
// Scalar programs
//===----------------------------------------------------------------------===//

/// A straight-line program of scalar arith, math, complex and linalg.index
/// ops, compiled once and run per element (linalg bodies), per combine (scan
/// regions) or once (a scalar op outside any body).
class ScalarProgram {
public:
  /// Resolves a value the program uses but does not define (an op result
  /// outside the compiled ops): fails unless it is a scalar.
  using CaptureFn =
      llvm::function_ref<Scalar(mlir::Value value, mlir::Operation *user)>;

  /// Compiles `ops` in order. `inputs` take the first slots (set them with
  /// `input` before each run); `outputs` are read with `output` after it.
  /// `owner` (the op whose body this is, or the op itself) is blamed for
  /// bad inputs and outputs; linalg.index may read loops 0 .. numLoops - 1.
  ScalarProgram(mlir::Operation *owner, mlir::ValueRange inputs,
                llvm::iterator_range<mlir::Block::iterator> ops,
                mlir::ValueRange outputs, CaptureFn capture,
                unsigned numLoops = 0);

  unsigned getNumInputs() const { return numInputs; }
  ScalarKind inputKind(unsigned i) const { return kinds[i]; }
  Scalar &input(unsigned i) { return slots[i]; }
  const Scalar &output(unsigned i) const { return slots[outputSlots[i]]; }

  /// Runs the program once; `loopIndex` holds the iteration indices that
  /// linalg.index reads (null outside a linalg body).
  void run(const int64_t *loopIndex = nullptr) {
    for (const Step &step : steps)
      step(slots.data(), loopIndex);
  }

private:
  using Step = std::function<void(Scalar *slots, const int64_t *loopIndex)>;

  void compile(mlir::Operation &op);
  unsigned newSlot(mlir::Value value, ScalarKind kind);
  /// The slot of operand `i` of `op`, which must hold an `A`.
  template <typename A> unsigned operandSlot(mlir::Operation *op, unsigned i);
  /// A new slot for result `i` of `op`, which must be an `R`.
  template <typename R> unsigned resultSlot(mlir::Operation *op, unsigned i);
  template <typename R, typename A, typename Fn>
  void emitUnary(mlir::Operation *op, Fn fn);
  template <typename R, typename A, typename B, typename Fn>
  void emitBinary(mlir::Operation *op, Fn fn);
  void emitConstant(mlir::Operation *op, Scalar value);
  bool compileTable(mlir::Operation &op);
  void compileCast(mlir::Operation &op);

  std::vector<Scalar> slots;
  std::vector<ScalarKind> kinds;
  std::vector<Step> steps;
  std::vector<unsigned> outputSlots;
  llvm::DenseMap<mlir::Value, unsigned> slotOf;
  /// Only used while compiling.
  CaptureFn capture;
  unsigned numLoops;
  unsigned numInputs = 0;
};

//===----------------------------------------------------------------------===//
// The evaluator
//===----------------------------------------------------------------------===//

/// Evaluates one function: an environment from SSA values to Datums, filled
/// op by op. Region bodies bind their arguments in the same environment
/// (values are immutable once bound; a body's values are rebound on every
/// run of the body).
class Evaluator {
public:
  explicit Evaluator(unsigned callDepth = 0) : callDepth(callDepth) {}

  /// Evaluates `func` on `args`, checked against its argument types;
  /// `caller` (null at the top) is the op blamed for a bad argument list.
  std::vector<Datum> callFunction(mlir::func::FuncOp func,
                                  std::vector<Datum> args,
                                  mlir::Operation *caller);

  /// Binds `block`'s arguments to `args`, evaluates its ops in order and
  /// returns the values of its terminator's operands.
  std::vector<Datum> runBlock(mlir::Block &block, std::vector<Datum> args);

  /// The value bound to `value`; `user` is blamed when there is none.
  const Datum &get(mlir::Value value, mlir::Operation *user) const;
  /// A tensor of elements `T`; fails on `user` for another kind.
  template <typename T>
  const Tensor<T> &getTensor(mlir::Value value, mlir::Operation *user) const;
  /// `getTensor` of an optional operand; nullopt for a null `value`.
  template <typename T>
  std::optional<Tensor<T>> getOptional(mlir::Value value,
                                       mlir::Operation *user) const;
  Scalar getScalar(mlir::Value value, mlir::Operation *user) const;
  int64_t getIndex(mlir::Value value, mlir::Operation *user) const;

  /// Binds the results of `op`, each checked against its result type.
  void setResults(mlir::Operation *op, std::vector<Datum> results);
  void setResult(mlir::Operation *op, Datum result) {
    std::vector<Datum> results;
    results.push_back(std::move(result));
    setResults(op, std::move(results));
  }

private:
  /// Shared and heap-allocated so that a reference `get` returned stays
  /// valid while region bodies bind more values (a rehash moves the map's
  /// entries, never the datums).
  using Slot = std::shared_ptr<const Datum>;

  void bind(mlir::Value value, Datum datum, mlir::Operation *op,
            const llvm::Twine &what);
  void evalOp(mlir::Operation &op);
  void dispatch(mlir::Operation &op);
  void evalScalarOp(mlir::Operation &op);
  void evalDenseConstant(mlir::Operation &op);
  void evalCall(mlir::Operation &op);
  /// Every tensor dialect op (TensorOps.cpp); fails for unknown ones.
  void evalTensorOp(mlir::Operation &op);
  /// Every structured linalg op on tensors (Linalg.cpp).
  void evalLinalgOp(mlir::linalg::LinalgOp op);
  /// Every recur op (RecurOps.cpp); fails for unknown ones.
  void evalRecurOp(mlir::Operation &op);

  llvm::DenseMap<mlir::Value, Slot> env;
  unsigned callDepth;
};

//===----------------------------------------------------------------------===//
// Template definitions
//===----------------------------------------------------------------------===//

/// How a type spells the element kind `T` of the evaluator.
template <typename T> llvm::StringRef elementName();
template <> inline llvm::StringRef elementName<double>() { return "f64"; }
template <> inline llvm::StringRef elementName<Complex>() {
  return "complex<f64>";
}
template <> inline llvm::StringRef elementName<bool>() { return "i1"; }
template <> inline llvm::StringRef elementName<int32_t>() { return "i32"; }

/// `operand #N` for the operand of `user` that is `value` (`a value it
/// uses` when none is).
std::string operandName(mlir::Operation *user, mlir::Value value);

template <typename T>
const Tensor<T> &Evaluator::getTensor(mlir::Value value,
                                      mlir::Operation *user) const {
  const Datum &datum = get(value, user);
  if (const auto *tensor = std::get_if<Tensor<T>>(&datum))
    return *tensor;
  fail(user, operandName(user, value) + " holds " + describe(datum) +
                 ", expected a tensor of " + elementName<T>());
}

template <typename T>
std::optional<Tensor<T>> Evaluator::getOptional(mlir::Value value,
                                                mlir::Operation *user) const {
  if (!value)
    return std::nullopt;
  return getTensor<T>(value, user);
}

} // namespace recur::oracle::detail

#endif // RECUR_LIB_ORACLE_INTERNAL_H
