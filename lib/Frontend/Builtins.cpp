//===- Builtins.cpp - the Recur language's builtin functions --------------===//
//
// Part of the Recur project.
//
// Each builtin checks its arguments' kinds, dtypes and symbolic shapes,
// reports mistakes at the argument at fault, and emits glue (linalg, arith,
// math, complex) or a recur op. docs/language.md lists them all.
//
//===----------------------------------------------------------------------===//

#include "Gen.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace ::recur::frontend;

namespace {

/// Argument access with arity and keyword checking for one call.
class Args {
public:
  Args(Generator &gen, const CallExpr &call) : gen(gen), call(call) {}

  /// Checks the positional count, the keywords and the body.
  bool check(size_t minPositional, size_t maxPositional,
             std::initializer_list<llvm::StringRef> keywords = {},
             bool body = false) {
    return gen.checkCall(call, minPositional, maxPositional, keywords, body);
  }

  size_t size() const { return call.args.size(); }
  const Expr &expr(size_t i) const { return *call.args[i]; }
  const Expr *kw(llvm::StringRef name) const {
    const KeywordArg *k = call.getKeyword(name);
    return k ? k->value.get() : nullptr;
  }

  /// Positional argument `i` as a tensor (a number literal is allowed when
  /// `allowLiteral`).
  TV tensor(size_t i, bool allowLiteral = false) {
    return asTensor(gen.gen(*call.args[i]), call.args[i]->getRange(),
                    allowLiteral);
  }
  TV kwTensor(llvm::StringRef name, bool allowLiteral = false) {
    const KeywordArg *k = call.getKeyword(name);
    return asTensor(gen.gen(*k->value), k->value->getRange(), allowLiteral);
  }
  TV asTensor(TV v, llvm::SMRange range, bool allowLiteral) {
    if (!v.ok())
      return v;
    if (v.type.kind != SpecType::Kind::Tensor) {
      gen.error(range, "'" + call.callee + "' expects a tensor here, got " +
                           v.type.str());
      return TV();
    }
    if (v.type.dtype == DType::Bool) {
      gen.error(range, "'" + call.callee + "' takes numbers, not the bool "
                                           "mask " + v.type.str());
      return TV();
    }
    if (v.literal && !allowLiteral) {
      gen.error(range, "'" + call.callee + "' expects a tensor here, not a "
                                           "number");
      return TV();
    }
    return v;
  }

  std::optional<bool> kwBool(llvm::StringRef name, bool fallback) {
    const Expr *e = kw(name);
    if (!e)
      return fallback;
    if (auto *n = llvm::dyn_cast<NameExpr>(e)) {
      if (n->name == "true")
        return true;
      if (n->name == "false")
        return false;
    }
    gen.error(e->getRange(), "'" + name + "' must be true or false");
    return std::nullopt;
  }

  std::optional<std::string> kwString(llvm::StringRef name,
                                      llvm::StringRef fallback) {
    const Expr *e = kw(name);
    if (!e)
      return fallback.str();
    if (auto *s = llvm::dyn_cast<StringExpr>(e))
      return s->value;
    gen.error(e->getRange(), "'" + name + "' must be a string");
    return std::nullopt;
  }

  llvm::SMRange range(size_t i) const { return call.args[i]->getRange(); }
  llvm::SMRange kwRange(llvm::StringRef name) const {
    return call.getKeyword(name)->value->getRange();
  }

private:
  Generator &gen;
  const CallExpr &call;
};

SpecType withDtype(const SpecType &t, DType d) {
  return SpecType::tensor(d, t.shape);
}

} // namespace

llvm::ArrayRef<const char *> Generator::builtinNames() {
  static const char *const names[] = {
      "exp", "log", "tanh", "sigmoid", "softplus", "relu", "gelu", "silu",
      "sqrt", "rsqrt", "sin", "cos", "abs", "maximum", "minimum", "complex",
      "polar", "real", "imag", "conj", "sum", "mean", "max", "softmax",
      "rmsnorm", "layernorm", "l2norm", "einsum", "heads", "merge_heads",
      "concat", "slice", "arange", "linear_scan", "scan", "gla",
      "gate_fixed", "gate_lstm",
      "gate_update", "stop_gradient", "memory_update", "window_attention",
      "attention", "rel_attention", "route_topk", "moe", "halting", "blocks",
      "depth"};
  return names;
}

TV Generator::genBuiltin(const CallExpr &call, bool &handled) {
  handled = true;
  Args args(*this, call);
  llvm::StringRef name = call.callee;
  llvm::SMRange at = call.getRange();
  Location l = loc(at);

  //===--------------------------------------------------------------------===//
  // Elementwise math.
  //===--------------------------------------------------------------------===//
  static const char *const unaryNames[] = {
      "exp",  "log",  "tanh", "sigmoid", "softplus", "relu", "gelu",
      "silu", "sqrt", "rsqrt", "sin",    "cos",      "abs"};
  if (llvm::is_contained(unaryNames, name)) {
    if (!args.check(1, 1))
      return TV();
    TV x = args.tensor(0, /*allowLiteral=*/true);
    if (!x.ok())
      return x;
    bool cplx = isComplex(x.type.dtype);
    if (cplx && name != "exp" && name != "abs") {
      error(args.range(0), "'" + name + "' is defined for real tensors; got " +
                               x.type.str());
      return TV();
    }
    if (x.literal) {
      // Fold literal arguments so `rsqrt(64)` stays a compile-time number.
      double v = *x.literal, r = v;
      r = llvm::StringSwitch<double>(name)
              .Case("exp", std::exp(v))
              .Case("log", std::log(v))
              .Case("tanh", std::tanh(v))
              .Case("sigmoid", 1.0 / (1.0 + std::exp(-v)))
              .Case("softplus", std::log1p(std::exp(v)))
              .Case("relu", v > 0 ? v : 0.0)
              .Case("gelu", 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))))
              .Case("silu", v / (1.0 + std::exp(-v)))
              .Case("sqrt", std::sqrt(v))
              .Case("rsqrt", 1.0 / std::sqrt(v))
              .Case("sin", std::sin(v))
              .Case("cos", std::cos(v))
              .Default(std::fabs(v));
      x.literal = r;
      return x;
    }
    SpecType resultType = x.type;
    if (cplx && name == "abs")
      resultType.dtype = realPart(x.type.dtype);
    std::string fn = name.str();
    return elementwise({x}, resultType, [fn, cplx](
                                            OpBuilder &b, Location loc,
                                            ValueRange v) -> Value {
      Value x = v[0];
      mlir::Type t = x.getType();
      auto c = [&](double value) -> Value {
        return arith::ConstantOp::create(b, loc, FloatAttr::get(t, value));
      };
      if (fn == "exp")
        return cplx ? complex::ExpOp::create(b, loc, x).getResult()
                    : math::ExpOp::create(b, loc, x).getResult();
      if (fn == "abs")
        return cplx ? complex::AbsOp::create(b, loc, x).getResult()
                    : math::AbsFOp::create(b, loc, x).getResult();
      if (fn == "log")
        return math::LogOp::create(b, loc, x);
      if (fn == "tanh")
        return math::TanhOp::create(b, loc, x);
      if (fn == "sqrt")
        return math::SqrtOp::create(b, loc, x);
      if (fn == "rsqrt")
        return math::RsqrtOp::create(b, loc, x);
      if (fn == "sin")
        return math::SinOp::create(b, loc, x);
      if (fn == "cos")
        return math::CosOp::create(b, loc, x);
      if (fn == "relu")
        return arith::MaximumFOp::create(b, loc, x, c(0.0));
      if (fn == "sigmoid" || fn == "silu") {
        // e = exp(-|x|), r = 1 / (1 + e): sigmoid is r for x >= 0 and e r
        // for x < 0. exp never overflows, so neither the value nor its
        // derivative (which 1 / (1 + exp(-x)) turns into 0 * inf = NaN once
        // exp(-x) overflows: x below about -88 in f32, -709 in f64) can be
        // NaN.
        Value e = math::ExpOp::create(
            b, loc,
            arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x)));
        Value r = arith::DivFOp::create(
            b, loc, c(1.0), arith::AddFOp::create(b, loc, c(1.0), e));
        Value nonneg = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OGE, x, c(0.0));
        Value sig = arith::SelectOp::create(
            b, loc, nonneg, r, arith::MulFOp::create(b, loc, e, r));
        return fn == "sigmoid" ? sig
                               : arith::MulFOp::create(b, loc, x, sig)
                                     .getResult();
      }
      if (fn == "softplus")
        // max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|.
        return arith::AddFOp::create(
            b, loc, arith::MaximumFOp::create(b, loc, x, c(0.0)),
            math::Log1pOp::create(
                b, loc,
                math::ExpOp::create(
                    b, loc,
                    arith::NegFOp::create(b, loc,
                                          math::AbsFOp::create(b, loc, x)))));
      // gelu, exact: 0.5 x (1 + erf(x / sqrt 2)).
      Value erf = math::ErfOp::create(
          b, loc, arith::MulFOp::create(b, loc, x, c(M_SQRT1_2)));
      return arith::MulFOp::create(
          b, loc, arith::MulFOp::create(b, loc, c(0.5), x),
          arith::AddFOp::create(b, loc, c(1.0), erf));
    });
  }

  if (name == "maximum" || name == "minimum" || name == "complex" ||
      name == "polar") {
    if (!args.check(2, 2))
      return TV();
    TV a = args.tensor(0, true), b = args.tensor(1, true);
    if (!a.ok() || !b.ok())
      return TV();
    if (a.literal && b.literal) {
      error(at, "'" + name + "' needs at least one tensor argument");
      return TV();
    }
    std::optional<DType> dtype = unifyDTypes(a, b, at, "'" + name.str() + "'");
    if (!dtype)
      return TV();
    if (isComplex(*dtype)) {
      error(at, "'" + name + "' takes real tensors");
      return TV();
    }
    std::optional<std::vector<Dim>> shape =
        broadcastShapes(a.type, b.type, at, "'" + name.str() + "'");
    if (!shape)
      return TV();
    a = coerce(a, *dtype);
    b = coerce(b, *dtype);
    if (name == "maximum" || name == "minimum") {
      bool isMax = name == "maximum";
      return elementwise({a, b}, SpecType::tensor(*dtype, *shape),
                         [isMax](OpBuilder &b, Location l,
                                 ValueRange v) -> Value {
                           if (isMax)
                             return arith::MaximumFOp::create(b, l, v[0], v[1]);
                           return arith::MinimumFOp::create(b, l, v[0], v[1]);
                         });
    }
    std::optional<DType> cdtype = complexOf(*dtype);
    if (!cdtype) {
      error(at, "'" + name + "' needs f32 or f64 parts, got " +
                    dtypeName(*dtype));
      return TV();
    }
    mlir::Type ct = mlirElementType(*cdtype);
    bool isPolar = name == "polar";
    return elementwise({a, b}, SpecType::tensor(*cdtype, *shape),
                       [ct, isPolar](OpBuilder &b, Location l,
                                     ValueRange v) -> Value {
                         if (!isPolar)
                           return complex::CreateOp::create(b, l, ct, v[0],
                                                            v[1]);
                         Value re = arith::MulFOp::create(
                             b, l, v[0], math::CosOp::create(b, l, v[1]));
                         Value im = arith::MulFOp::create(
                             b, l, v[0], math::SinOp::create(b, l, v[1]));
                         return complex::CreateOp::create(b, l, ct, re, im);
                       });
  }

  if (name == "real" || name == "imag" || name == "conj") {
    if (!args.check(1, 1))
      return TV();
    TV z = args.tensor(0);
    if (!z.ok())
      return z;
    if (!isComplex(z.type.dtype)) {
      error(args.range(0), "'" + name + "' takes a complex tensor, got " +
                               z.type.str());
      return TV();
    }
    SpecType t = name == "conj" ? z.type
                            : withDtype(z.type, realPart(z.type.dtype));
    std::string fn = name.str();
    return elementwise({z}, t, [fn](OpBuilder &b, Location l,
                                    ValueRange v) -> Value {
      if (fn == "real")
        return complex::ReOp::create(b, l, v[0]);
      if (fn == "imag")
        return complex::ImOp::create(b, l, v[0]);
      return complex::ConjOp::create(b, l, v[0]);
    });
  }

  //===--------------------------------------------------------------------===//
  // Reductions, softmax, norms, shapes.
  //===--------------------------------------------------------------------===//
  if (name == "sum" || name == "mean" || name == "max" ||
      name == "softmax") {
    if (!args.check(1, 1, {"axis"}))
      return TV();
    TV x = args.tensor(0);
    if (!x.ok() || x.scalar)
      return x.scalar ? (error(at, "'" + name + "' needs a tensor"), TV()) : x;
    if (x.type.rank() == 0) {
      error(args.range(0), "'" + name + "' needs a tensor of rank >= 1");
      return TV();
    }
    int64_t axis = x.type.rank() - 1;
    if (const Expr *a = args.kw("axis")) {
      std::optional<int64_t> r = resolveAxis(*a, x.type);
      if (!r)
        return TV();
      axis = *r;
    }
    if ((name == "max" || name == "softmax") && isComplex(x.type.dtype)) {
      error(args.range(0), "'" + name + "' needs a real tensor");
      return TV();
    }
    if (name == "sum" || name == "max")
      return reduce(x, axis, name == "max" ? "max" : "sum");
    if (name == "mean") {
      TV s = reduce(x, axis, "sum");
      const Dim &d = x.type.shape[axis];
      if (d.isRuntime()) {
        Value n = runtimeDimValues.lookup(d.symbol);
        mlir::Type ft = mlirElementType(realPart(x.type.dtype));
        Value i = arith::IndexCastOp::create(builder, l,
                                             builder.getI64Type(), n);
        Value f = arith::SIToFPOp::create(builder, l, ft, i);
        TV nv;
        nv.type = SpecType::tensor(realPart(x.type.dtype), {});
        nv.value = tensor::FromElementsOp::create(
            builder, l, RankedTensorType::get({}, ft), ValueRange{f});
        nv = coerce(nv, x.type.dtype);
        return elementwise({s, nv}, s.type,
                           [&](OpBuilder &b, Location loc, ValueRange v) {
                             return isComplex(x.type.dtype)
                                        ? complex::DivOp::create(b, loc, v[0],
                                                                 v[1])
                                              .getResult()
                                        : arith::DivFOp::create(b, loc, v[0],
                                                                v[1])
                                              .getResult();
                           });
      }
      TV n;
      n.type = SpecType::tensor(x.type.dtype, {});
      n.literal = static_cast<double>(d.size);
      bool cplx = isComplex(x.type.dtype);
      return elementwise({s, n}, s.type,
                         [cplx](OpBuilder &b, Location loc, ValueRange v) {
                           return cplx ? complex::DivOp::create(b, loc, v[0],
                                                                v[1])
                                             .getResult()
                                       : arith::DivFOp::create(b, loc, v[0],
                                                               v[1])
                                             .getResult();
                         });
    }
    // softmax: exp(x - max) / sum, with the reduced tensors broadcast back
    // over `axis` through their indexing maps.
    TV m = reduce(x, axis, "max");
    int64_t rank = x.type.rank();
    SmallVector<AffineExpr> reduced;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        reduced.push_back(builder.getAffineDimExpr(d));
    AffineMap id = builder.getMultiDimIdentityMap(rank);
    AffineMap drop = AffineMap::get(rank, 0, reduced, &context);
    TV e;
    e.type = x.type;
    e.value = mappedElementwise(
        {x.value, m.value}, {id, drop}, x.type,
        [](OpBuilder &b, Location loc, ValueRange v) -> Value {
          return math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, v[0], v[1]));
        });
    TV s = reduce(e, axis, "sum");
    TV out;
    out.type = x.type;
    out.value = mappedElementwise(
        {e.value, s.value}, {id, drop}, x.type,
        [](OpBuilder &b, Location loc, ValueRange v) -> Value {
          return arith::DivFOp::create(b, loc, v[0], v[1]);
        });
    return out;
  }

  if (name == "rmsnorm" || name == "layernorm" || name == "l2norm") {
    size_t positional = name == "l2norm" ? 1 : name == "rmsnorm" ? 2 : 3;
    if (!args.check(name == "layernorm" ? 2 : positional, positional,
                    {"eps"}))
      return TV();
    TV x = args.tensor(0);
    if (!x.ok())
      return x;
    if (x.type.rank() == 0 || isComplex(x.type.dtype)) {
      error(args.range(0), "'" + name + "' normalizes the last dimension of "
                                        "a real tensor, got " +
                               x.type.str());
      return TV();
    }
    double eps = name == "layernorm" ? 1e-5 : 1e-6;
    if (const Expr *e = args.kw("eps")) {
      std::optional<double> v = constNumber(*e, "'eps'");
      if (!v)
        return TV();
      eps = *v;
    }
    SpecType vecType = SpecType::tensor(x.type.dtype, {x.type.shape.back()});
    std::vector<TV> affine;
    for (size_t i = 1; i < args.size(); ++i) {
      TV p = args.tensor(i);
      if (!p.ok())
        return p;
      if (p.type.dtype != x.type.dtype || !p.type.sameShape(vecType)) {
        error(args.range(i), "'" + name + "' " +
                                 (i == 1 ? "scale" : "bias") + " must be " +
                                 vecType.str() + ", got " + p.type.str());
        return TV();
      }
      affine.push_back(p);
    }
    int64_t rank = x.type.rank(), axis = rank - 1;
    DType dtype = x.type.dtype;
    AffineMap id = builder.getMultiDimIdentityMap(rank);
    SmallVector<AffineExpr> reducedExprs;
    for (int64_t d = 0; d < axis; ++d)
      reducedExprs.push_back(builder.getAffineDimExpr(d));
    AffineMap drop = AffineMap::get(rank, 0, reducedExprs, &context);
    AffineMap last =
        AffineMap::get(rank, 0, {builder.getAffineDimExpr(axis)}, &context);
    const Dim &width = x.type.shape.back();
    double inv = width.isRuntime() ? 0.0 : 1.0 / static_cast<double>(width.size);
    TV centered = x;
    if (name == "layernorm") {
      TV mean = reduce(x, axis, "sum");
      centered.value = mappedElementwise(
          {x.value, mean.value}, {id, drop}, x.type,
          [inv](OpBuilder &b, Location loc, ValueRange v) -> Value {
            Value c = arith::ConstantOp::create(
                b, loc, FloatAttr::get(v[0].getType(), inv));
            return arith::SubFOp::create(
                b, loc, v[0], arith::MulFOp::create(b, loc, v[1], c));
          });
    }
    TV sq;
    sq.type = x.type;
    sq.value = mappedElementwise(
        {centered.value}, {id}, x.type,
        [](OpBuilder &b, Location loc, ValueRange v) -> Value {
          return arith::MulFOp::create(b, loc, v[0], v[0]);
        });
    TV ss = reduce(sq, axis, "sum");
    bool meanSquare = name != "l2norm";
    if (meanSquare && width.isRuntime()) {
      error(args.range(0), "'" + name + "' needs a compile-time last "
                                        "dimension, got " +
                               x.type.str());
      return TV();
    }
    SmallVector<Value> operands{centered.value, ss.value};
    SmallVector<AffineMap> maps{id, drop};
    for (const TV &p : affine) {
      operands.push_back(p.value);
      maps.push_back(last);
    }
    size_t numAffine = affine.size();
    TV out;
    out.type = x.type;
    out.value = mappedElementwise(
        operands, maps, x.type,
        [eps, inv, meanSquare, numAffine](OpBuilder &b, Location loc,
                                          ValueRange v) -> Value {
          mlir::Type t = v[0].getType();
          Value denom = v[1];
          if (meanSquare)
            denom = arith::MulFOp::create(
                b, loc, denom,
                arith::ConstantOp::create(b, loc, FloatAttr::get(t, inv)));
          denom = arith::AddFOp::create(
              b, loc, denom,
              arith::ConstantOp::create(b, loc, FloatAttr::get(t, eps)));
          Value y = arith::MulFOp::create(b, loc, v[0],
                                          math::RsqrtOp::create(b, loc, denom));
          if (numAffine >= 1)
            y = arith::MulFOp::create(b, loc, y, v[2]);
          if (numAffine >= 2)
            y = arith::AddFOp::create(b, loc, y, v[3]);
          return y;
        });
    (void)dtype;
    return out;
  }

  if (name == "einsum") {
    if (!args.check(2, SIZE_MAX))
      return TV();
    auto *spec = llvm::dyn_cast<StringExpr>(&args.expr(0));
    if (!spec) {
      error(args.range(0), "einsum's first argument is its spec, a string "
                           "such as \"btd,de->bte\"");
      return TV();
    }
    std::vector<TV> operands;
    std::vector<llvm::SMRange> ranges;
    for (size_t i = 1; i < args.size(); ++i) {
      operands.push_back(args.tensor(i));
      ranges.push_back(args.range(i));
      if (!operands.back().ok())
        return TV();
    }
    return einsum(spec->value, operands, args.range(0), ranges);
  }

  if (name == "heads" || name == "merge_heads") {
    bool split = name == "heads";
    if (!args.check(split ? 2 : 1, split ? 2 : 1))
      return TV();
    TV x = args.tensor(0);
    if (!x.ok())
      return x;
    int64_t rank = x.type.rank();
    if (rank < (split ? 2 : 3)) {
      error(args.range(0), split ? "'heads' splits [..., T, D] into "
                                   "[..., H, T, D/H]; got " +
                                       x.type.str()
                                 : "'merge_heads' merges [..., H, T, dh] "
                                   "into [..., T, H*dh]; got " +
                                       x.type.str());
      return TV();
    }
    std::vector<Dim> shape = x.type.shape;
    SmallVector<AffineExpr> in;
    SpecType resultType;
    if (split) {
      std::optional<int64_t> h = constInt(args.expr(1), "the number of heads");
      if (!h)
        return TV();
      const Dim &d = shape.back();
      if (d.isRuntime() || *h <= 0 || d.size % *h != 0) {
        error(args.range(1), "'heads' needs a compile-time width divisible "
                             "by the number of heads; " +
                                 d.str() + " / " + llvm::Twine(*h));
        return TV();
      }
      int64_t dh = d.size / *h;
      shape.pop_back();
      shape.insert(shape.end() - 1, Dim::constant(*h));
      shape.push_back(Dim::constant(dh));
      // out[..., h, t, e] = x[..., t, h * dh + e]
      for (int64_t i = 0; i < rank - 2; ++i)
        in.push_back(builder.getAffineDimExpr(i));
      in.push_back(builder.getAffineDimExpr(rank - 1));
      in.push_back(builder.getAffineDimExpr(rank - 2) * dh +
                   builder.getAffineDimExpr(rank));
      resultType = SpecType::tensor(x.type.dtype, shape);
      TV out;
      out.type = resultType;
      out.value = mappedElementwise(
          {x.value}, {AffineMap::get(rank + 1, 0, in, &context)}, resultType,
          [](OpBuilder &, Location, ValueRange v) { return v[0]; });
      return out;
    }
    Dim h = shape[rank - 3], dh = shape[rank - 1];
    if (h.isRuntime() || dh.isRuntime()) {
      error(args.range(0), "'merge_heads' needs compile-time heads and head "
                           "width; got " +
                               x.type.str());
      return TV();
    }
    Dim t = shape[rank - 2];
    shape.erase(shape.end() - 3, shape.end());
    shape.push_back(t);
    shape.push_back(Dim::constant(h.size * dh.size));
    // out[..., t, c] = x[..., c floordiv dh, t, c mod dh]
    for (int64_t i = 0; i < rank - 3; ++i)
      in.push_back(builder.getAffineDimExpr(i));
    AffineExpr c = builder.getAffineDimExpr(rank - 2);
    in.push_back(c.floorDiv(dh.size));
    in.push_back(builder.getAffineDimExpr(rank - 3));
    in.push_back(c % dh.size);
    resultType = SpecType::tensor(x.type.dtype, shape);
    TV out;
    out.type = resultType;
    out.value = mappedElementwise(
        {x.value}, {AffineMap::get(rank - 1, 0, in, &context)}, resultType,
        [](OpBuilder &, Location, ValueRange v) { return v[0]; });
    return out;
  }

  if (name == "concat") {
    if (!args.check(2, SIZE_MAX, {"axis"}))
      return TV();
    std::vector<TV> parts;
    for (size_t i = 0; i < args.size(); ++i) {
      parts.push_back(args.tensor(i));
      if (!parts.back().ok())
        return TV();
    }
    const SpecType &first = parts.front().type;
    if (!args.kw("axis")) {
      error(at, "'concat' needs 'axis=' (the dimension to join along)");
      return TV();
    }
    std::optional<int64_t> axis = resolveAxis(*args.kw("axis"), first);
    if (!axis)
      return TV();
    // The joined dimension is compile-time unless exactly one part has a
    // runtime size there and every other part is compile-time.
    int64_t total = 0;
    std::optional<Dim> runtime;
    for (auto [i, p] : llvm::enumerate(parts)) {
      bool same = p.type.rank() == first.rank() && p.type.dtype == first.dtype;
      for (int64_t d = 0; same && d < first.rank(); ++d)
        same = d == *axis || p.type.shape[d] == first.shape[d];
      if (!same) {
        error(args.range(i), "'concat' parts must agree in all but the axis: " +
                                 p.type.str() + " vs " + first.str());
        return TV();
      }
      const Dim &d = p.type.shape[*axis];
      if (d.isRuntime()) {
        if (runtime) {
          error(args.range(i), "'concat' can join at most one part of runtime "
                               "size along the axis");
          return TV();
        }
        runtime = d;
      } else {
        total += d.size;
      }
    }
    if (runtime && total != 0) {
      error(at, "'concat' of a runtime-sized part with other parts would "
                "have a size the language cannot name; give the runtime dim "
                "a value with -D or 'dim ... = ...'");
      return TV();
    }
    std::vector<Dim> shape = first.shape;
    shape[*axis] = runtime ? *runtime : Dim::constant(total);
    SpecType resultType = SpecType::tensor(first.dtype, shape);
    Value acc = emptyTensor(resultType);
    int64_t offset = 0;
    for (const TV &p : parts) {
      int64_t r = p.type.rank();
      SmallVector<OpFoldResult> offsets(r, builder.getIndexAttr(0)), sizes,
          strides(r, builder.getIndexAttr(1));
      offsets[*axis] = builder.getIndexAttr(offset);
      for (int64_t d = 0; d < r; ++d) {
        const Dim &dim = p.type.shape[d];
        sizes.push_back(dim.isRuntime()
                            ? OpFoldResult(runtimeDimValues.lookup(dim.symbol))
                            : OpFoldResult(builder.getIndexAttr(dim.size)));
      }
      acc = tensor::InsertSliceOp::create(builder, l, p.value, acc, offsets,
                                          sizes, strides);
      offset += p.type.shape[*axis].isRuntime() ? 0 : p.type.shape[*axis].size;
    }
    TV out;
    out.type = resultType;
    out.value = acc;
    return out;
  }

  // slice(x, axis=A, start=s, size=n): positions [s, s + n) of axis A (a
  // negative start counts from the end, so start=-1 is the last position).
  if (name == "slice") {
    if (!args.check(1, 1, {"axis", "start", "size"}))
      return TV();
    TV x = args.tensor(0);
    if (!x.ok())
      return x;
    if (x.scalar || x.type.rank() == 0) {
      error(args.range(0), "'slice' needs a tensor of rank >= 1, got " +
                               x.type.str());
      return TV();
    }
    if (!args.kw("axis") || !args.kw("size")) {
      error(at, "'slice' needs 'axis=' and 'size=' (and 'start=', default "
                "0)");
      return TV();
    }
    std::optional<int64_t> axis = resolveAxis(*args.kw("axis"), x.type);
    std::optional<int64_t> size = constInt(*args.kw("size"), "'size'");
    std::optional<int64_t> start = 0;
    if (const Expr *e = args.kw("start"))
      start = constInt(*e, "'start'");
    if (!axis || !size || !start)
      return TV();
    if (*size <= 0) {
      error(args.kwRange("size"), "'slice' size must be positive, got " +
                                      llvm::Twine(*size));
      return TV();
    }
    const Dim &d = x.type.shape[*axis];
    llvm::SMRange startAt =
        args.kw("start") ? args.kwRange("start") : args.kwRange("size");
    if (!d.isRuntime()) {
      int64_t s = *start < 0 ? *start + d.size : *start;
      if (s < 0 || s + *size > d.size) {
        error(startAt, "'slice' of " + llvm::Twine(*size) +
                           " positions from start " + llvm::Twine(*start) +
                           " does not fit in dimension " + d.str() + " of " +
                           x.type.str());
        return TV();
      }
      start = s;
    } else if (*start < 0 && *size > -*start) {
      error(args.kwRange("size"), "'slice' from start " +
                                      llvm::Twine(*start) +
                                      " runs past the end; take at most " +
                                      llvm::Twine(-*start) +
                                      (*start == -1 ? " position"
                                                    : " positions"));
      return TV();
    } else {
      // The runtime size must hold the slice: the runtime checks it.
      int64_t &least = runtimeDimMinimum[d.symbol];
      least = std::max(least, *start < 0 ? -*start : *start + *size);
    }
    int64_t rank = x.type.rank();
    SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0)), sizes,
        strides(rank, builder.getIndexAttr(1));
    for (int64_t i = 0; i < rank; ++i) {
      const Dim &dim = x.type.shape[i];
      sizes.push_back(dim.isRuntime()
                          ? OpFoldResult(runtimeDimValues.lookup(dim.symbol))
                          : OpFoldResult(builder.getIndexAttr(dim.size)));
    }
    sizes[*axis] = builder.getIndexAttr(*size);
    if (d.isRuntime() && *start < 0)
      offsets[*axis] = OpFoldResult(arith::AddIOp::create(
          builder, l, runtimeDimValues.lookup(d.symbol),
          arith::ConstantIndexOp::create(builder, l, *start)));
    else
      offsets[*axis] = builder.getIndexAttr(*start);
    std::vector<Dim> shape = x.type.shape;
    shape[*axis] = Dim::constant(*size);
    TV out;
    out.type = SpecType::tensor(x.type.dtype, shape);
    out.value = tensor::ExtractSliceOp::create(builder, l, mlirType(out.type),
                                               x.value, offsets, sizes,
                                               strides);
    return out;
  }

  // arange(n, dtype="f32"): the vector 0, 1, ..., n - 1 (n compile-time).
  if (name == "arange") {
    if (!args.check(1, 1, {"dtype"}))
      return TV();
    std::optional<int64_t> n = constInt(args.expr(0), "'arange''s length");
    std::optional<std::string> dtypeName = args.kwString("dtype", "f32");
    if (!n || !dtypeName)
      return TV();
    std::optional<DType> dtype = parseDType(*dtypeName);
    if (dtype)
      dtype = promoted(*dtype);
    if (!dtype || isComplex(*dtype)) {
      error(args.kwRange("dtype"), "'dtype' must be \"f16\", \"bf16\", "
                                   "\"f32\" or \"f64\"");
      return TV();
    }
    if (*n <= 0) {
      error(args.range(0), "'arange' needs a positive length, got " +
                               llvm::Twine(*n));
      return TV();
    }
    TV out;
    out.type = SpecType::tensor(*dtype, {Dim::constant(*n)});
    mlir::Type ft = mlirElementType(*dtype);
    out.value = mappedElementwise(
        {}, {}, out.type, [ft](OpBuilder &b, Location loc, ValueRange) {
          Value i = arith::IndexCastOp::create(
              b, loc, b.getI64Type(), linalg::IndexOp::create(b, loc, 0));
          return arith::SIToFPOp::create(b, loc, ft, i).getResult();
        });
    return out;
  }

  bool recurHandled = false;
  TV r = genRecurBuiltin(call, recurHandled);
  handled = recurHandled;
  return r;
}
