//===- Values.cpp - datums, element access and errors of the evaluator ----===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace ::recur::oracle;
using namespace ::recur::oracle::detail;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string recur::oracle::detail::describeOp(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "' at " << op->getLoc();
  return text;
}

std::string EvalError::str() const {
  std::string text = describeOp(op) + ": " + message;
  for (const std::string &parent : context)
    text += "\n  in a region of " + parent;
  return text;
}

void EvalError::addContext(Operation *parent) {
  context.push_back(describeOp(parent));
}

void recur::oracle::detail::fail(Operation *op, const llvm::Twine &message) {
  throw EvalError(op, message.str());
}

std::string recur::oracle::detail::operandName(Operation *user,
                                               mlir::Value value) {
  for (OpOperand &operand : user->getOpOperands())
    if (operand.get() == value)
      return "operand #" + std::to_string(operand.getOperandNumber());
  return "a value it uses";
}

//===----------------------------------------------------------------------===//
// Kinds
//===----------------------------------------------------------------------===//

llvm::StringRef recur::oracle::detail::kindName(ScalarKind kind) {
  switch (kind) {
  case ScalarKind::Real:
    return "f64";
  case ScalarKind::Complex:
    return "complex<f64>";
  case ScalarKind::Int:
    return "an integer";
  }
  return "?";
}

namespace {

template <typename T> std::string describeTensor(const Tensor<T> &tensor) {
  std::string dims;
  for (int64_t d : tensor.shape)
    dims += std::to_string(d) + "x";
  return "tensor<" + dims + elementName<T>().str() + ">";
}

std::string describeScalar(const Scalar &scalar) {
  switch (kindOf(scalar)) {
  case ScalarKind::Real:
    return "a scalar f64";
  case ScalarKind::Complex:
    return "a scalar complex<f64>";
  case ScalarKind::Int:
    break;
  }
  return "a scalar integer";
}

} // namespace

std::string recur::oracle::detail::describe(const Datum &datum) {
  return std::visit(
      [](const auto &value) -> std::string {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, Scalar>)
          return describeScalar(value);
        else
          return describeTensor(value);
      },
      datum);
}

namespace recur::oracle {

std::string describe(const Value &value) {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return "index";
        else
          return describeTensor(v);
      },
      value);
}

std::vector<int64_t> shapeOf(const Value &value) {
  return std::visit(
      [](const auto &v) -> std::vector<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return {};
        else
          return v.shape;
      },
      value);
}

} // namespace recur::oracle

ScalarKind recur::oracle::detail::scalarKindOf(Type type, Operation *op) {
  if (isa<FloatType>(type))
    return ScalarKind::Real;
  if (auto complex = dyn_cast<ComplexType>(type))
    if (isa<FloatType>(complex.getElementType()))
      return ScalarKind::Complex;
  if (isa<IntegerType, IndexType>(type))
    return ScalarKind::Int;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "values of type " << type << " are not supported";
  fail(op, text);
}

unsigned recur::oracle::detail::intWidth(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth();
  return 64;
}

int64_t recur::oracle::detail::truncBits(uint64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(value);
  return static_cast<int64_t>(value & ((uint64_t(1) << width) - 1));
}

int64_t recur::oracle::detail::signExtend(int64_t value, unsigned width) {
  if (width >= 64 || width == 0)
    return value;
  uint64_t bits = static_cast<uint64_t>(truncBits(value, width));
  uint64_t sign = uint64_t(1) << (width - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

Datum recur::oracle::detail::makeTensor(Type elementType,
                                        std::vector<int64_t> shape,
                                        Operation *op) {
  switch (scalarKindOf(elementType, op)) {
  case ScalarKind::Real:
    return Tensor<double>(std::move(shape));
  case ScalarKind::Complex:
    return Tensor<Complex>(std::move(shape));
  case ScalarKind::Int:
    break;
  }
  if (elementType.isInteger(1))
    return Tensor<bool>(std::move(shape));
  if (elementType.isInteger(32))
    return Tensor<int32_t>(std::move(shape));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "tensors of " << elementType
     << " are not supported (only float, complex, i1 and i32 elements)";
  fail(op, text);
}

const std::vector<int64_t> &recur::oracle::detail::shapeOf(const Datum &datum,
                                                           Operation *op) {
  switch (datum.index()) {
  case 0:
    return std::get<0>(datum).shape;
  case 1:
    return std::get<1>(datum).shape;
  case 2:
    return std::get<2>(datum).shape;
  case 3:
    return std::get<3>(datum).shape;
  default:
    fail(op, "expected a tensor, got " + describe(datum));
  }
}

Scalar recur::oracle::detail::readElement(const Datum &tensor, int64_t offset) {
  switch (tensor.index()) {
  case 0:
    return std::get<0>(tensor).data[offset];
  case 1:
    return std::get<1>(tensor).data[offset];
  case 2:
    return int64_t(std::get<2>(tensor).data[offset] ? 1 : 0);
  case 3:
    return truncBits(static_cast<uint32_t>(std::get<3>(tensor).data[offset]),
                     32);
  default:
    return std::get<Scalar>(tensor);
  }
}

void recur::oracle::detail::writeElement(Datum &tensor, int64_t offset,
                                         const Scalar &value) {
  switch (tensor.index()) {
  case 0:
    std::get<0>(tensor).data[offset] = std::get<double>(value);
    return;
  case 1:
    std::get<1>(tensor).data[offset] = std::get<Complex>(value);
    return;
  case 2:
    std::get<2>(tensor).data[offset] = std::get<int64_t>(value) != 0;
    return;
  case 3:
    std::get<3>(tensor).data[offset] =
        static_cast<int32_t>(static_cast<uint32_t>(std::get<int64_t>(value)));
    return;
  default:
    std::get<Scalar>(tensor) = value;
  }
}

void recur::oracle::detail::checkType(const Datum &datum, Type type,
                                      Operation *op, const llvm::Twine &what) {
  std::string typeText;
  llvm::raw_string_ostream os(typeText);
  os << type;
  auto mismatch = [&]() {
    fail(op,
         what + " holds " + describe(datum) + ", but its type is " + typeText);
  };
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType) {
    const Scalar *scalar = std::get_if<Scalar>(&datum);
    if (!scalar || kindOf(*scalar) != scalarKindOf(type, op))
      mismatch();
    return;
  }
  if (std::holds_alternative<Scalar>(datum))
    mismatch();
  Datum expected = makeTensor(tensorType.getElementType(), {}, op);
  const std::vector<int64_t> &shape = shapeOf(datum, op);
  if (expected.index() != datum.index() ||
      static_cast<int64_t>(shape.size()) != tensorType.getRank())
    mismatch();
  for (int64_t d = 0; d < tensorType.getRank(); ++d)
    if (!tensorType.isDynamicDim(d) && tensorType.getDimSize(d) != shape[d])
      mismatch();
}

void recur::oracle::detail::forEachIndex(
    const std::vector<int64_t> &shape,
    llvm::function_ref<void(const std::vector<int64_t> &)> fn) {
  for (int64_t size : shape)
    if (size == 0)
      return;
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    fn(index);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}
