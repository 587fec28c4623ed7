//===- Scalar.cpp - scalar arith, math and complex ops in float64 ---------===//
//
// Part of the Recur project.
//
// Compiles the scalar ops of a region body (or one scalar op outside any
// body) into a list of steps over numbered slots, so that a linalg body is
// looked at once and then run per element without touching the IR. Every
// float is evaluated in double: arith.truncf and arith.extf keep the value,
// which is what makes this a float64 oracle. Integers follow arith's
// two's-complement rules at their bit width; a result arith leaves undefined
// (division by zero, signed overflow of a division, a shift by the width or
// more, a float-to-int conversion out of range) is an error.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace ::recur::oracle;
using namespace ::recur::oracle::detail;

namespace {

//===----------------------------------------------------------------------===//
// Op semantics
//===----------------------------------------------------------------------===//

using RealUnaryFn = double (*)(double);
using RealBinaryFn = double (*)(double, double);
using ComplexUnaryFn = Complex (*)(Complex);
using ComplexBinaryFn = Complex (*)(Complex, Complex);
using ComplexToRealFn = double (*)(Complex);
using RealTestFn = bool (*)(double);
/// An integer op at `width` bits on canonical (zero-extended) operands;
/// nullopt where arith leaves the result undefined.
using IntBinaryFn = std::optional<int64_t> (*)(int64_t, int64_t, unsigned);
using IntUnaryFn = int64_t (*)(int64_t, unsigned);

/// arith.maximumf: NaN if either operand is; +0 above -0.
double maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/// arith.minimumf: NaN if either operand is; -0 below +0.
double minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// exp(z) - 1 without cancellation for small |z|.
Complex complexExpm1(Complex z) {
  double x = z.real(), y = z.imag(), s = std::sin(y / 2);
  return {std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y)};
}

/// log(1 + z) without cancellation for small |z|.
Complex complexLog1p(Complex z) {
  double x = z.real(), y = z.imag();
  return {0.5 * std::log1p(x * (2 + x) + y * y), std::atan2(y, 1 + x)};
}

Complex complexSign(Complex z) {
  double r = std::abs(z);
  return r == 0 ? Complex(0) : z / r;
}

const llvm::DenseMap<TypeID, RealUnaryFn> &realUnaryOps() {
  static const llvm::DenseMap<TypeID, RealUnaryFn> table = {
      {TypeID::get<arith::NegFOp>(), [](double x) { return -x; }},
      // The oracle keeps every float in double.
      {TypeID::get<arith::ExtFOp>(), [](double x) { return x; }},
      {TypeID::get<arith::TruncFOp>(), [](double x) { return x; }},
      {TypeID::get<math::AbsFOp>(), [](double x) { return std::fabs(x); }},
      {TypeID::get<math::AcosOp>(), [](double x) { return std::acos(x); }},
      {TypeID::get<math::AcoshOp>(), [](double x) { return std::acosh(x); }},
      {TypeID::get<math::AsinOp>(), [](double x) { return std::asin(x); }},
      {TypeID::get<math::AsinhOp>(), [](double x) { return std::asinh(x); }},
      {TypeID::get<math::AtanOp>(), [](double x) { return std::atan(x); }},
      {TypeID::get<math::AtanhOp>(), [](double x) { return std::atanh(x); }},
      {TypeID::get<math::CbrtOp>(), [](double x) { return std::cbrt(x); }},
      {TypeID::get<math::CeilOp>(), [](double x) { return std::ceil(x); }},
      {TypeID::get<math::CosOp>(), [](double x) { return std::cos(x); }},
      {TypeID::get<math::CoshOp>(), [](double x) { return std::cosh(x); }},
      {TypeID::get<math::ErfOp>(), [](double x) { return std::erf(x); }},
      {TypeID::get<math::ErfcOp>(), [](double x) { return std::erfc(x); }},
      {TypeID::get<math::ExpOp>(), [](double x) { return std::exp(x); }},
      {TypeID::get<math::Exp2Op>(), [](double x) { return std::exp2(x); }},
      {TypeID::get<math::ExpM1Op>(), [](double x) { return std::expm1(x); }},
      {TypeID::get<math::FloorOp>(), [](double x) { return std::floor(x); }},
      {TypeID::get<math::LogOp>(), [](double x) { return std::log(x); }},
      {TypeID::get<math::Log10Op>(), [](double x) { return std::log10(x); }},
      {TypeID::get<math::Log1pOp>(), [](double x) { return std::log1p(x); }},
      {TypeID::get<math::Log2Op>(), [](double x) { return std::log2(x); }},
      {TypeID::get<math::RoundOp>(), [](double x) { return std::round(x); }},
      // The default rounding mode rounds half to even.
      {TypeID::get<math::RoundEvenOp>(),
       [](double x) { return std::nearbyint(x); }},
      {TypeID::get<math::RsqrtOp>(), [](double x) { return 1 / std::sqrt(x); }},
      {TypeID::get<math::SinOp>(), [](double x) { return std::sin(x); }},
      {TypeID::get<math::SinhOp>(), [](double x) { return std::sinh(x); }},
      {TypeID::get<math::SqrtOp>(), [](double x) { return std::sqrt(x); }},
      {TypeID::get<math::TanOp>(), [](double x) { return std::tan(x); }},
      {TypeID::get<math::TanhOp>(), [](double x) { return std::tanh(x); }},
      {TypeID::get<math::TruncOp>(), [](double x) { return std::trunc(x); }},
  };
  return table;
}

const llvm::DenseMap<TypeID, RealBinaryFn> &realBinaryOps() {
  static const llvm::DenseMap<TypeID, RealBinaryFn> table = {
      {TypeID::get<arith::AddFOp>(), [](double a, double b) { return a + b; }},
      {TypeID::get<arith::SubFOp>(), [](double a, double b) { return a - b; }},
      {TypeID::get<arith::MulFOp>(), [](double a, double b) { return a * b; }},
      {TypeID::get<arith::DivFOp>(), [](double a, double b) { return a / b; }},
      {TypeID::get<arith::RemFOp>(),
       [](double a, double b) { return std::fmod(a, b); }},
      {TypeID::get<arith::MaximumFOp>(), maximumF},
      {TypeID::get<arith::MinimumFOp>(), minimumF},
      {TypeID::get<arith::MaxNumFOp>(),
       [](double a, double b) { return std::fmax(a, b); }},
      {TypeID::get<arith::MinNumFOp>(),
       [](double a, double b) { return std::fmin(a, b); }},
      {TypeID::get<math::Atan2Op>(),
       [](double a, double b) { return std::atan2(a, b); }},
      {TypeID::get<math::CopySignOp>(),
       [](double a, double b) { return std::copysign(a, b); }},
      {TypeID::get<math::PowFOp>(),
       [](double a, double b) { return std::pow(a, b); }},
  };
  return table;
}

const llvm::DenseMap<TypeID, RealTestFn> &realTestOps() {
  static const llvm::DenseMap<TypeID, RealTestFn> table = {
      {TypeID::get<math::IsNaNOp>(), [](double x) { return std::isnan(x); }},
      {TypeID::get<math::IsInfOp>(), [](double x) { return std::isinf(x); }},
      {TypeID::get<math::IsFiniteOp>(),
       [](double x) { return std::isfinite(x); }},
      {TypeID::get<math::IsNormalOp>(),
       [](double x) { return std::isnormal(x); }},
  };
  return table;
}

const llvm::DenseMap<TypeID, ComplexUnaryFn> &complexUnaryOps() {
  static const llvm::DenseMap<TypeID, ComplexUnaryFn> table = {
      {TypeID::get<complex::ConjOp>(), [](Complex z) { return std::conj(z); }},
      {TypeID::get<complex::CosOp>(), [](Complex z) { return std::cos(z); }},
      {TypeID::get<complex::ExpOp>(), [](Complex z) { return std::exp(z); }},
      {TypeID::get<complex::Expm1Op>(), complexExpm1},
      {TypeID::get<complex::LogOp>(), [](Complex z) { return std::log(z); }},
      {TypeID::get<complex::Log1pOp>(), complexLog1p},
      {TypeID::get<complex::NegOp>(), [](Complex z) { return -z; }},
      {TypeID::get<complex::RsqrtOp>(),
       [](Complex z) { return Complex(1) / std::sqrt(z); }},
      {TypeID::get<complex::SignOp>(), complexSign},
      {TypeID::get<complex::SinOp>(), [](Complex z) { return std::sin(z); }},
      {TypeID::get<complex::SqrtOp>(), [](Complex z) { return std::sqrt(z); }},
      {TypeID::get<complex::TanOp>(), [](Complex z) { return std::tan(z); }},
      {TypeID::get<complex::TanhOp>(), [](Complex z) { return std::tanh(z); }},
  };
  return table;
}

const llvm::DenseMap<TypeID, ComplexBinaryFn> &complexBinaryOps() {
  static const llvm::DenseMap<TypeID, ComplexBinaryFn> table = {
      {TypeID::get<complex::AddOp>(),
       [](Complex a, Complex b) { return a + b; }},
      {TypeID::get<complex::SubOp>(),
       [](Complex a, Complex b) { return a - b; }},
      {TypeID::get<complex::MulOp>(),
       [](Complex a, Complex b) { return a * b; }},
      {TypeID::get<complex::DivOp>(),
       [](Complex a, Complex b) { return a / b; }},
      {TypeID::get<complex::PowOp>(),
       [](Complex a, Complex b) { return std::pow(a, b); }},
  };
  return table;
}

const llvm::DenseMap<TypeID, ComplexToRealFn> &complexToRealOps() {
  static const llvm::DenseMap<TypeID, ComplexToRealFn> table = {
      {TypeID::get<complex::ReOp>(), [](Complex z) { return z.real(); }},
      {TypeID::get<complex::ImOp>(), [](Complex z) { return z.imag(); }},
      {TypeID::get<complex::AbsOp>(), [](Complex z) { return std::abs(z); }},
      {TypeID::get<complex::AngleOp>(), [](Complex z) { return std::arg(z); }},
  };
  return table;
}

/// Wraps `value` to `width` bits.
std::optional<int64_t> wrap(uint64_t value, unsigned width) {
  return truncBits(value, width);
}

/// The signed quotient and remainder are undefined for a zero divisor and
/// for INT_MIN / -1.
bool badSignedDivision(int64_t a, int64_t b, unsigned width) {
  if (b == 0)
    return true;
  int64_t min = signExtend(int64_t(uint64_t(1) << (width - 1)), width);
  return b == -1 && a == min;
}

std::optional<int64_t> floorDivSigned(int64_t a, int64_t b, unsigned w) {
  a = signExtend(a, w), b = signExtend(b, w);
  if (badSignedDivision(a, b, w))
    return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return wrap(q, w);
}

std::optional<int64_t> ceilDivSigned(int64_t a, int64_t b, unsigned w) {
  a = signExtend(a, w), b = signExtend(b, w);
  if (badSignedDivision(a, b, w))
    return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0)))
    ++q;
  return wrap(q, w);
}

const llvm::DenseMap<TypeID, IntBinaryFn> &intBinaryOps() {
  using R = std::optional<int64_t>;
  static const llvm::DenseMap<TypeID, IntBinaryFn> table = {
      {TypeID::get<arith::AddIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         return wrap(uint64_t(a) + uint64_t(b), w);
       }},
      {TypeID::get<arith::SubIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         return wrap(uint64_t(a) - uint64_t(b), w);
       }},
      {TypeID::get<arith::MulIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         return wrap(uint64_t(a) * uint64_t(b), w);
       }},
      {TypeID::get<arith::DivSIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         a = signExtend(a, w), b = signExtend(b, w);
         if (badSignedDivision(a, b, w))
           return std::nullopt;
         return wrap(a / b, w);
       }},
      {TypeID::get<arith::RemSIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         a = signExtend(a, w), b = signExtend(b, w);
         if (badSignedDivision(a, b, w))
           return std::nullopt;
         return wrap(a % b, w);
       }},
      {TypeID::get<arith::DivUIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         if (b == 0)
           return std::nullopt;
         return wrap(uint64_t(a) / uint64_t(b), w);
       }},
      {TypeID::get<arith::RemUIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         if (b == 0)
           return std::nullopt;
         return wrap(uint64_t(a) % uint64_t(b), w);
       }},
      {TypeID::get<arith::CeilDivUIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         if (b == 0)
           return std::nullopt;
         uint64_t ua = a, ub = b;
         return wrap(ua / ub + (ua % ub != 0), w);
       }},
      {TypeID::get<arith::FloorDivSIOp>(), floorDivSigned},
      {TypeID::get<arith::CeilDivSIOp>(), ceilDivSigned},
      {TypeID::get<arith::MaxSIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         return signExtend(a, w) >= signExtend(b, w) ? a : b;
       }},
      {TypeID::get<arith::MinSIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         return signExtend(a, w) <= signExtend(b, w) ? a : b;
       }},
      {TypeID::get<arith::MaxUIOp>(),
       [](int64_t a, int64_t b, unsigned) -> R {
         return uint64_t(a) >= uint64_t(b) ? a : b;
       }},
      {TypeID::get<arith::MinUIOp>(),
       [](int64_t a, int64_t b, unsigned) -> R {
         return uint64_t(a) <= uint64_t(b) ? a : b;
       }},
      {TypeID::get<arith::AndIOp>(),
       [](int64_t a, int64_t b, unsigned) -> R { return a & b; }},
      {TypeID::get<arith::OrIOp>(),
       [](int64_t a, int64_t b, unsigned) -> R { return a | b; }},
      {TypeID::get<arith::XOrIOp>(),
       [](int64_t a, int64_t b, unsigned) -> R { return a ^ b; }},
      {TypeID::get<arith::ShLIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         if (uint64_t(b) >= w)
           return std::nullopt;
         return wrap(uint64_t(a) << b, w);
       }},
      {TypeID::get<arith::ShRUIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         if (uint64_t(b) >= w)
           return std::nullopt;
         return wrap(uint64_t(a) >> b, w);
       }},
      {TypeID::get<arith::ShRSIOp>(),
       [](int64_t a, int64_t b, unsigned w) -> R {
         if (uint64_t(b) >= w)
           return std::nullopt;
         return wrap(uint64_t(signExtend(a, w) >> b), w);
       }},
  };
  return table;
}

const llvm::DenseMap<TypeID, IntUnaryFn> &intUnaryOps() {
  static const llvm::DenseMap<TypeID, IntUnaryFn> table = {
      {TypeID::get<math::AbsIOp>(),
       [](int64_t a, unsigned w) {
         int64_t s = signExtend(a, w);
         return truncBits(uint64_t(s < 0 ? -uint64_t(s) : s), w);
       }},
      {TypeID::get<math::CtPopOp>(),
       [](int64_t a, unsigned) {
         return int64_t(__builtin_popcountll(uint64_t(a)));
       }},
      {TypeID::get<math::CountLeadingZerosOp>(),
       [](int64_t a, unsigned w) {
         int64_t n = 0;
         for (int64_t bit = int64_t(w) - 1; bit >= 0 && !((a >> bit) & 1);
              --bit)
           ++n;
         return n;
       }},
      {TypeID::get<math::CountTrailingZerosOp>(),
       [](int64_t a, unsigned w) {
         int64_t n = 0;
         while (n < int64_t(w) && !((a >> n) & 1))
           ++n;
         return n;
       }},
  };
  return table;
}

bool compareFloat(arith::CmpFPredicate predicate, double a, double b) {
  using P = arith::CmpFPredicate;
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
  case P::AlwaysFalse:
    return false;
  case P::AlwaysTrue:
    return true;
  case P::ORD:
    return !unordered;
  case P::UNO:
    return unordered;
  case P::OEQ:
    return !unordered && a == b;
  case P::OGT:
    return !unordered && a > b;
  case P::OGE:
    return !unordered && a >= b;
  case P::OLT:
    return !unordered && a < b;
  case P::OLE:
    return !unordered && a <= b;
  case P::ONE:
    return !unordered && a != b;
  case P::UEQ:
    return unordered || a == b;
  case P::UGT:
    return unordered || a > b;
  case P::UGE:
    return unordered || a >= b;
  case P::ULT:
    return unordered || a < b;
  case P::ULE:
    return unordered || a <= b;
  case P::UNE:
    return unordered || a != b;
  }
  return false;
}

bool compareInt(arith::CmpIPredicate predicate, int64_t a, int64_t b,
                unsigned w) {
  using P = arith::CmpIPredicate;
  int64_t sa = signExtend(a, w), sb = signExtend(b, w);
  uint64_t ua = a, ub = b;
  switch (predicate) {
  case P::eq:
    return a == b;
  case P::ne:
    return a != b;
  case P::slt:
    return sa < sb;
  case P::sle:
    return sa <= sb;
  case P::sgt:
    return sa > sb;
  case P::sge:
    return sa >= sb;
  case P::ult:
    return ua < ub;
  case P::ule:
    return ua <= ub;
  case P::ugt:
    return ua > ub;
  case P::uge:
    return ua >= ub;
  }
  return false;
}

/// `x` converted to an integer of `width` bits, rounding toward zero;
/// nullopt when it does not fit (arith makes that poison).
std::optional<int64_t> floatToInt(double x, unsigned width, bool isSigned) {
  double t = std::trunc(x);
  if (std::isnan(t))
    return std::nullopt;
  if (isSigned) {
    double lo = -std::ldexp(1.0, int(width) - 1);
    if (t < lo || t >= -lo)
      return std::nullopt;
    return truncBits(uint64_t(int64_t(t)), width);
  }
  if (t < 0 || t >= std::ldexp(1.0, int(width)))
    return std::nullopt;
  return truncBits(uint64_t(t), width);
}

} // namespace

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

std::optional<Scalar> recur::oracle::detail::constantValue(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return Scalar(f.getValueAsDouble());
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    const llvm::APInt &value = i.getValue();
    if (value.getBitWidth() > 64)
      return std::nullopt;
    return Scalar(truncBits(value.getZExtValue(), value.getBitWidth()));
  }
  if (auto pair = dyn_cast<ArrayAttr>(attr)) {
    if (pair.size() != 2)
      return std::nullopt;
    auto re = dyn_cast<FloatAttr>(pair[0]), im = dyn_cast<FloatAttr>(pair[1]);
    if (!re || !im)
      return std::nullopt;
    return Scalar(Complex(re.getValueAsDouble(), im.getValueAsDouble()));
  }
  return std::nullopt;
}

ScalarProgram::ScalarProgram(Operation *owner, ValueRange inputs,
                             llvm::iterator_range<Block::iterator> ops,
                             ValueRange outputs, CaptureFn capture,
                             unsigned numLoops)
    : capture(capture), numLoops(numLoops) {
  for (mlir::Value input : inputs)
    newSlot(input, scalarKindOf(input.getType(), owner));
  numInputs = inputs.size();
  for (Operation &op : ops)
    compile(op);
  for (mlir::Value output : outputs) {
    auto it = slotOf.find(output);
    if (it != slotOf.end()) {
      outputSlots.push_back(it->second);
      continue;
    }
    // A value from outside the compiled ops, yielded as is.
    Scalar value = capture(output, owner);
    unsigned slot = newSlot(output, kindOf(value));
    slots[slot] = value;
    outputSlots.push_back(slot);
  }
}

unsigned ScalarProgram::newSlot(mlir::Value value, ScalarKind kind) {
  unsigned slot = slots.size();
  switch (kind) {
  case ScalarKind::Real:
    slots.emplace_back(0.0);
    break;
  case ScalarKind::Complex:
    slots.emplace_back(Complex());
    break;
  case ScalarKind::Int:
    slots.emplace_back(int64_t(0));
    break;
  }
  kinds.push_back(kind);
  slotOf[value] = slot;
  return slot;
}

template <typename A>
unsigned ScalarProgram::operandSlot(Operation *op, unsigned i) {
  mlir::Value value = op->getOperand(i);
  auto it = slotOf.find(value);
  unsigned slot;
  if (it != slotOf.end()) {
    slot = it->second;
  } else {
    Scalar captured = capture(value, op);
    slot = newSlot(value, kindOf(captured));
    slots[slot] = captured;
  }
  if (kinds[slot] != scalarKindOf<A>())
    fail(op, "operand #" + llvm::Twine(i) + " is " + kindName(kinds[slot]) +
                 ", expected " + kindName(scalarKindOf<A>()));
  return slot;
}

template <typename R>
unsigned ScalarProgram::resultSlot(Operation *op, unsigned i) {
  mlir::Value result = op->getResult(i);
  ScalarKind kind = scalarKindOf(result.getType(), op);
  if (kind != scalarKindOf<R>())
    fail(op, "result #" + llvm::Twine(i) + " is " + kindName(kind) +
                 ", expected " + kindName(scalarKindOf<R>()));
  return newSlot(result, kind);
}

template <typename R, typename A, typename Fn>
void ScalarProgram::emitUnary(Operation *op, Fn fn) {
  unsigned a = operandSlot<A>(op, 0), r = resultSlot<R>(op, 0);
  steps.push_back(
      [=](Scalar *s, const int64_t *) { s[r] = R(fn(std::get<A>(s[a]))); });
}

template <typename R, typename A, typename B, typename Fn>
void ScalarProgram::emitBinary(Operation *op, Fn fn) {
  unsigned a = operandSlot<A>(op, 0), b = operandSlot<B>(op, 1);
  unsigned r = resultSlot<R>(op, 0);
  steps.push_back([=](Scalar *s, const int64_t *) {
    s[r] = R(fn(std::get<A>(s[a]), std::get<B>(s[b])));
  });
}

void ScalarProgram::emitConstant(Operation *op, Scalar value) {
  unsigned slot = newSlot(op->getResult(0), kindOf(value));
  if (scalarKindOf(op->getResult(0).getType(), op) != kindOf(value))
    fail(op, "the constant does not match its type");
  slots[slot] = value;
}

void ScalarProgram::compile(Operation &op) {
  if (op.getNumRegions() != 0)
    fail(&op, "ops with regions are not supported in a scalar body");
  if (op.getNumResults() != 1)
    fail(&op, "is not supported by the float64 evaluator");
  if (compileTable(op))
    return;
  llvm::TypeSwitch<Operation *, void>(&op)
      .Case<arith::ConstantOp, complex::ConstantOp>([&](auto constant) {
        std::optional<Scalar> value = constantValue(constant.getValue());
        if (!value)
          fail(&op, "unsupported constant");
        emitConstant(&op, *value);
      })
      .Case<arith::CmpFOp>([&](arith::CmpFOp cmp) {
        arith::CmpFPredicate predicate = cmp.getPredicate();
        emitBinary<int64_t, double, double>(&op, [=](double a, double b) {
          return int64_t(compareFloat(predicate, a, b));
        });
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) {
        arith::CmpIPredicate predicate = cmp.getPredicate();
        unsigned w = intWidth(cmp.getLhs().getType());
        emitBinary<int64_t, int64_t, int64_t>(&op, [=](int64_t a, int64_t b) {
          return int64_t(compareInt(predicate, a, b, w));
        });
      })
      .Case<complex::EqualOp, complex::NotEqualOp>([&](auto cmp) {
        bool equal = isa<complex::EqualOp>(&op);
        emitBinary<int64_t, Complex, Complex>(&op, [=](Complex a, Complex b) {
          return int64_t((a == b) == equal);
        });
      })
      .Case<arith::SelectOp>([&](arith::SelectOp select) {
        if (!select.getCondition().getType().isInteger(1))
          fail(&op, "only a scalar i1 condition is supported");
        unsigned c = operandSlot<int64_t>(&op, 0);
        mlir::Value trueValue = select.getTrueValue();
        ScalarKind kind = scalarKindOf(trueValue.getType(), &op);
        auto slotOfKind = [&](unsigned i) {
          switch (kind) {
          case ScalarKind::Real:
            return operandSlot<double>(&op, i);
          case ScalarKind::Complex:
            return operandSlot<Complex>(&op, i);
          case ScalarKind::Int:
            break;
          }
          return operandSlot<int64_t>(&op, i);
        };
        unsigned t = slotOfKind(1), f = slotOfKind(2);
        unsigned r = newSlot(op.getResult(0), kind);
        steps.push_back([=](Scalar *s, const int64_t *) {
          s[r] = std::get<int64_t>(s[c]) ? s[t] : s[f];
        });
      })
      .Case<math::FmaOp>([&](math::FmaOp) {
        unsigned a = operandSlot<double>(&op, 0);
        unsigned b = operandSlot<double>(&op, 1);
        unsigned c = operandSlot<double>(&op, 2);
        unsigned r = resultSlot<double>(&op, 0);
        steps.push_back([=](Scalar *s, const int64_t *) {
          s[r] = std::fma(std::get<double>(s[a]), std::get<double>(s[b]),
                          std::get<double>(s[c]));
        });
      })
      .Case<math::ClampFOp>([&](math::ClampFOp) {
        unsigned x = operandSlot<double>(&op, 0);
        unsigned lo = operandSlot<double>(&op, 1);
        unsigned hi = operandSlot<double>(&op, 2);
        unsigned r = resultSlot<double>(&op, 0);
        steps.push_back([=](Scalar *s, const int64_t *) {
          s[r] = minimumF(
              maximumF(std::get<double>(s[x]), std::get<double>(s[lo])),
              std::get<double>(s[hi]));
        });
      })
      .Case<complex::CreateOp>([&](complex::CreateOp) {
        emitBinary<Complex, double, double>(
            &op, [](double re, double im) { return Complex(re, im); });
      })
      .Case<math::FPowIOp>([&](math::FPowIOp pow) {
        unsigned w = intWidth(pow.getRhs().getType());
        emitBinary<double, double, int64_t>(&op, [=](double x, int64_t n) {
          return std::pow(x, double(signExtend(n, w)));
        });
      })
      .Case<complex::PowiOp>([&](complex::PowiOp pow) {
        unsigned w = intWidth(pow.getRhs().getType());
        emitBinary<Complex, Complex, int64_t>(&op, [=](Complex z, int64_t n) {
          return std::pow(z, Complex(double(signExtend(n, w))));
        });
      })
      .Case<linalg::IndexOp>([&](linalg::IndexOp index) {
        uint64_t dim = index.getDim();
        if (dim >= numLoops)
          fail(&op,
               "loop dimension " + llvm::Twine(dim) + " is not available here");
        unsigned r = resultSlot<int64_t>(&op, 0);
        steps.push_back([=](Scalar *s, const int64_t *loopIndex) {
          s[r] = loopIndex[dim];
        });
      })
      .Default([&](Operation *) { compileCast(op); });
}

/// The ops whose semantics is one entry of the tables above.
bool ScalarProgram::compileTable(Operation &op) {
  TypeID id = op.getName().getTypeID();
  Operation *o = &op;
  if (auto it = realUnaryOps().find(id); it != realUnaryOps().end()) {
    emitUnary<double, double>(o, it->second);
  } else if (auto it = realBinaryOps().find(id); it != realBinaryOps().end()) {
    emitBinary<double, double, double>(o, it->second);
  } else if (auto it = realTestOps().find(id); it != realTestOps().end()) {
    RealTestFn fn = it->second;
    emitUnary<int64_t, double>(o, [fn](double x) { return int64_t(fn(x)); });
  } else if (auto it = complexUnaryOps().find(id);
             it != complexUnaryOps().end()) {
    emitUnary<Complex, Complex>(o, it->second);
  } else if (auto it = complexBinaryOps().find(id);
             it != complexBinaryOps().end()) {
    emitBinary<Complex, Complex, Complex>(o, it->second);
  } else if (auto it = complexToRealOps().find(id);
             it != complexToRealOps().end()) {
    emitUnary<double, Complex>(o, it->second);
  } else if (auto it = intUnaryOps().find(id); it != intUnaryOps().end()) {
    IntUnaryFn fn = it->second;
    unsigned w = intWidth(op.getResult(0).getType());
    emitUnary<int64_t, int64_t>(o, [=](int64_t a) { return fn(a, w); });
  } else if (auto it = intBinaryOps().find(id); it != intBinaryOps().end()) {
    IntBinaryFn fn = it->second;
    unsigned w = intWidth(op.getResult(0).getType());
    emitBinary<int64_t, int64_t, int64_t>(o, [=](int64_t a, int64_t b) {
      std::optional<int64_t> r = fn(a, b, w);
      if (!r)
        fail(o, "the result is undefined for these operands (" +
                    llvm::Twine(signExtend(a, w)) + ", " +
                    llvm::Twine(signExtend(b, w)) + ")");
      return *r;
    });
  } else {
    return false;
  }
  return true;
}

/// Conversions between integer widths and between integers and floats.
void ScalarProgram::compileCast(Operation &op) {
  if (op.getNumOperands() != 1 ||
      !isa<arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp,
           arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
           arith::ExtUIOp, arith::TruncIOp>(op))
    fail(&op, "is not supported by the float64 evaluator");
  unsigned from = intWidth(op.getOperand(0).getType());
  unsigned to = intWidth(op.getResult(0).getType());
  Operation *o = &op;
  if (isa<arith::SIToFPOp>(op))
    return emitUnary<double, int64_t>(
        o, [=](int64_t x) { return double(signExtend(x, from)); });
  if (isa<arith::UIToFPOp>(op))
    return emitUnary<double, int64_t>(
        o, [](int64_t x) { return double(uint64_t(x)); });
  if (isa<arith::FPToSIOp, arith::FPToUIOp>(op)) {
    bool isSigned = isa<arith::FPToSIOp>(op);
    return emitUnary<int64_t, double>(o, [=](double x) {
      std::optional<int64_t> r = floatToInt(x, to, isSigned);
      if (!r)
        fail(o, std::to_string(x) + " does not fit the result type");
      return *r;
    });
  }
  // Sign-extending casts (index_cast sign-extends or truncates); the others
  // zero-extend or truncate, which on canonical bit patterns is a mask.
  bool sext = isa<arith::ExtSIOp, arith::IndexCastOp>(op);
  emitUnary<int64_t, int64_t>(o, [=](int64_t x) {
    return truncBits(uint64_t(sext ? signExtend(x, from) : x), to);
  });
}
