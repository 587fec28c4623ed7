//===- RecurBuiltins.cpp - builtins that emit recur ops -------------------===//
//
// Part of the Recur project.
//
// Scans, gated linear attention, gates, attention, memory, block recurrence,
// halting, depth loops and experts. Each builtin checks symbolic shapes (so
// that runtime dims are told apart by name, which the IR cannot do), builds
// the op, and verifies it, turning any remaining verifier complaint into a
// diagnostic at the call.
//
//===----------------------------------------------------------------------===//

#include "Gen.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace ::recur::frontend;

namespace {

struct Call {
  Generator &gen;
  const CallExpr &call;

  const Expr *kw(llvm::StringRef name) const {
    const KeywordArg *k = call.getKeyword(name);
    return k ? k->value.get() : nullptr;
  }

  bool check(size_t minPositional, size_t maxPositional,
             std::initializer_list<llvm::StringRef> keywords,
             bool body = false) {
    return gen.checkCall(call, minPositional, maxPositional, keywords, body);
  }

  TV tensor(const Expr &e, llvm::StringRef what, bool mask = false) {
    TV v = gen.gen(e);
    if (!v.ok())
      return v;
    if (v.type.kind == SpecType::Kind::Tensor &&
        (v.type.dtype == DType::Bool) != mask) {
      gen.error(e.getRange(), "'" + call.callee + "' expects " +
                                  (mask ? "a bool mask" : "a numeric tensor") +
                                  " for " + what + ", got " + v.type.str());
      return TV();
    }
    if (v.type.kind != SpecType::Kind::Tensor || v.literal || v.scalar) {
      gen.error(e.getRange(),
                "'" + call.callee + "' expects a tensor for " + what +
                    ", got " +
                    (v.literal ? std::string("a number") : v.type.str()));
      return TV();
    }
    return v;
  }
  TV arg(size_t i, llvm::StringRef what) { return tensor(*call.args[i], what); }
  TV kwTensor(llvm::StringRef name) {
    return tensor(*kw(name), "'" + name.str() + "'");
  }

  /// A tuple of tensors, written `(a, b)` or as a single tensor.
  std::optional<std::vector<TV>> tensors(const Expr &e, llvm::StringRef what) {
    if (auto *t = llvm::dyn_cast<TupleExpr>(&e)) {
      std::vector<TV> out;
      for (const ExprPtr &x : t->elements) {
        out.push_back(tensor(*x, what));
        if (!out.back().ok())
          return std::nullopt;
      }
      return out;
    }
    TV v = tensor(e, what);
    if (!v.ok())
      return std::nullopt;
    return std::vector<TV>{v};
  }

  std::optional<bool> flag(llvm::StringRef name, bool fallback) {
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

  llvm::SMRange range(size_t i) const { return call.args[i]->getRange(); }
  llvm::SMRange kwRange(llvm::StringRef name) const {
    return call.getKeyword(name)->value->getRange();
  }

  /// Requires `v`'s type to equal `expected`; names `what` in the error.
  bool expectType(const TV &v, const SpecType &expected, llvm::SMRange at,
                  llvm::StringRef what) {
    if (v.type.dtype == expected.dtype && v.type.sameShape(expected))
      return true;
    gen.error(at, "'" + call.callee + "': " + what + " must be " +
                      expected.str() + ", got " + v.type.str());
    return false;
  }
};

/// Builds `opName` generically, verifies it, and returns its results.
std::optional<SmallVector<Value>>
build(Generator &gen, llvm::StringRef opName, llvm::SMRange at,
      llvm::StringRef callee, ValueRange operands,
      llvm::ArrayRef<mlir::Type> results, llvm::ArrayRef<NamedAttribute> attrs,
      std::unique_ptr<Region> region = nullptr) {
  OperationState state(gen.loc(at), opName);
  state.addOperands(operands);
  state.addTypes(results);
  state.addAttributes(attrs);
  if (region)
    state.addRegion(std::move(region));
  Operation *op = gen.builder.create(state);
  if (!gen.verifyBuilt(op, at, callee)) {
    op->erase();
    return std::nullopt;
  }
  return SmallVector<Value>(op->getResults());
}

TV tensorTV(const SpecType &type, Value v) {
  TV tv;
  tv.type = type;
  tv.value = v;
  return tv;
}

SpecType dropDim(const SpecType &t, int64_t axis) {
  std::vector<Dim> shape = t.shape;
  shape.erase(shape.begin() + axis);
  return SpecType::tensor(t.dtype, shape);
}

SpecType replaceLast(const SpecType &t, Dim d) {
  std::vector<Dim> shape = t.shape;
  shape.back() = d;
  return SpecType::tensor(t.dtype, shape);
}

} // namespace

TV Generator::genRecurBuiltin(const CallExpr &callExpr, bool &handled) {
  handled = true;
  Call c{*this, callExpr};
  llvm::StringRef name = callExpr.callee;
  llvm::SMRange at = callExpr.getRange();
  MLIRContext *ctx = builder.getContext();
  auto i64 = [&](int64_t v) { return builder.getI64IntegerAttr(v); };
  auto named = [&](llvm::StringRef n, Attribute a) {
    return builder.getNamedAttr(n, a);
  };

  //===--------------------------------------------------------------------===//
  if (name == "linear_scan") {
    if (!c.check(2, 2, {"init", "axis", "reverse"}))
      return TV();
    TV a = c.arg(0, "the transition 'a'"), b = c.arg(1, "the input 'b'");
    if (!a.ok() || !b.ok())
      return TV();
    if (!c.kw("axis")) {
      error(at, "'linear_scan' needs 'axis=' (the time dimension, e.g. "
                "axis=T)");
      return TV();
    }
    std::optional<int64_t> axis = resolveAxis(*c.kw("axis"), b.type);
    std::optional<bool> reverse = c.flag("reverse", false);
    if (!axis || !reverse)
      return TV();
    // `a` covers a leading part of `b`'s dims and broadcasts over the rest.
    bool leading = a.type.rank() > *axis && a.type.rank() <= b.type.rank();
    for (int64_t i = 0; leading && i < a.type.rank(); ++i)
      leading = a.type.shape[i] == b.type.shape[i];
    if (!leading) {
      error(c.range(0), "'linear_scan': 'a' " + a.type.str() +
                            " must match the leading dims of 'b' " +
                            b.type.str() + " through the scan axis");
      return TV();
    }
    if (a.type.dtype != b.type.dtype &&
        !(isComplex(b.type.dtype) && realPart(b.type.dtype) == a.type.dtype)) {
      error(c.range(0), "'linear_scan': 'a' is " + dtypeName(a.type.dtype) +
                            " but 'b' is " + dtypeName(b.type.dtype) +
                            "; 'a' must have b's dtype or its real part");
      return TV();
    }
    SpecType stateType = dropDim(b.type, *axis);
    SmallVector<Value> operands{a.value, b.value};
    if (c.kw("init")) {
      TV init = c.kwTensor("init");
      if (!init.ok() || !c.expectType(init, stateType, c.kwRange("init"),
                                      "'init' (the state)"))
        return TV();
      operands.push_back(init.value);
    }
    SmallVector<NamedAttribute> attrs{named("axis", i64(*axis))};
    if (*reverse)
      attrs.push_back(named("reverse", builder.getUnitAttr()));
    auto results =
        build(*this, mlir::recur::LinearScanOp::getOperationName(), at, name,
              operands, {mlirType(b.type), mlirType(stateType)}, attrs);
    if (!results)
      return TV();
    return TV::tuple(
        {tensorTV(b.type, (*results)[0]), tensorTV(stateType, (*results)[1])});
  }

  //===--------------------------------------------------------------------===//
  if (name == "scan") {
    if (!c.check(1, SIZE_MAX, {"init", "axis", "reverse", "combine"},
                 // With combine= a body is still let through, to get the
                 // message that says to pick one.
                 /*body=*/!c.kw("combine") || callExpr.body))
      return TV();
    std::vector<TV> inputs;
    for (size_t i = 0; i < callExpr.args.size(); ++i) {
      inputs.push_back(c.arg(i, "a scanned input"));
      if (!inputs.back().ok())
        return TV();
      if (!inputs.back().type.sameShape(inputs.front().type)) {
        error(c.range(i), "'scan' inputs must share one shape: " +
                              inputs.back().type.str() + " vs " +
                              inputs.front().type.str());
        return TV();
      }
    }
    if (!c.kw("axis")) {
      error(at, "'scan' needs 'axis=' (the dimension to scan along)");
      return TV();
    }
    std::optional<int64_t> axis = resolveAxis(*c.kw("axis"), inputs[0].type);
    std::optional<bool> reverse = c.flag("reverse", false);
    if (!axis || !reverse)
      return TV();
    std::vector<TV> inits;
    if (const Expr *e = c.kw("init")) {
      std::optional<std::vector<TV>> v = c.tensors(*e, "'init'");
      if (!v)
        return TV();
      inits = *v;
      if (inits.size() != inputs.size()) {
        error(e->getRange(), "'scan' needs one init per input (" +
                                 llvm::Twine(inputs.size()) + "), got " +
                                 llvm::Twine(inits.size()));
        return TV();
      }
      for (auto [init, input] : llvm::zip_equal(inits, inputs))
        if (!c.expectType(init, dropDim(input.type, *axis), e->getRange(),
                          "each 'init'"))
          return TV();
    }
    const Body *body = callExpr.body.get();
    std::string what = "the combine body of 'scan'";
    if (const Expr *e = c.kw("combine")) {
      auto *fnName = llvm::dyn_cast<NameExpr>(e);
      auto fn = fnName ? fns.find(fnName->name) : fns.end();
      if (fn == fns.end()) {
        error(e->getRange(), "'combine' must name a function defined with "
                             "'fn'");
        return TV();
      }
      if (callExpr.body) {
        error(callExpr.body->range,
              "'scan' takes a 'combine=' function or a 'do' body, not both");
        return TV();
      }
      body = &fn->second->body;
      what = "combine function '" + fnName->name + "'";
    }
    // The combine body runs on scalars: the accumulated elements, then the
    // new ones.
    size_t n = inputs.size();
    auto region = std::make_unique<Region>();
    Block *block = new Block();
    region->push_back(block);
    std::vector<TV> params;
    for (size_t k = 0; k < 2 * n; ++k) {
      const TV &input = inputs[k % n];
      TV p;
      p.type = SpecType::tensor(input.type.dtype, {});
      p.scalar = true;
      p.value = block->addArgument(mlirElementType(input.type.dtype), loc(at));
      params.push_back(p);
    }
    std::optional<std::vector<TV>> results;
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(block);
      // Combine bodies work on elements, so the tensors around the call are
      // out of sight there, as in a function.
      results = genBody(*body, params, at, what, /*isolated=*/true);
      if (!results)
        return TV();
      if (results->size() != n) {
        error(body->range, what + " must return " + llvm::Twine(n) + " value" +
                               (n == 1 ? "" : "s") +
                               " (one per input), returns " +
                               llvm::Twine(results->size()));
        return TV();
      }
      SmallVector<Value> yields;
      for (size_t k = 0; k < n; ++k) {
        TV r = coerce((*results)[k], inputs[k].type.dtype);
        if (r.literal)
          r.value = scalarConstant(*r.literal, inputs[k].type.dtype);
        if (!r.scalar && !r.literal) {
          error(body->range, what +
                                 " must return scalars (it works on "
                                 "elements), returns " +
                                 r.type.str());
          return TV();
        }
        if (r.type.dtype != inputs[k].type.dtype) {
          error(body->range, what + " returns " + dtypeName(r.type.dtype) +
                                 " for input " + llvm::Twine(k) + " of " +
                                 dtypeName(inputs[k].type.dtype));
          return TV();
        }
        yields.push_back(r.value);
      }
      mlir::recur::YieldOp::create(builder, loc(body->range), yields);
    }
    SmallVector<Value> operands;
    SmallVector<mlir::Type> types;
    for (const TV &v : inputs) {
      operands.push_back(v.value);
      types.push_back(mlirType(v.type));
    }
    for (const TV &v : inits)
      operands.push_back(v.value);
    SmallVector<NamedAttribute> attrs{
        named("axis", i64(*axis)),
        named("operandSegmentSizes",
              builder.getDenseI32ArrayAttr(
                  {static_cast<int32_t>(n),
                   static_cast<int32_t>(inits.size())}))};
    if (*reverse)
      attrs.push_back(named("reverse", builder.getUnitAttr()));
    auto built = build(*this, mlir::recur::ScanOp::getOperationName(), at, name,
                       operands, types, attrs, std::move(region));
    if (!built)
      return TV();
    std::vector<TV> outs;
    for (size_t k = 0; k < n; ++k)
      outs.push_back(tensorTV(inputs[k].type, (*built)[k]));
    return n == 1 ? outs.front() : TV::tuple(std::move(outs));
  }

  //===--------------------------------------------------------------------===//
  if (name == "gla") {
    if (!c.check(4, 4, {"init", "algorithm", "chunk"}))
      return TV();
    TV q = c.arg(0, "'q'"), k = c.arg(1, "'k'"), v = c.arg(2, "'v'"),
       a = c.arg(3, "the decay 'a'");
    if (!q.ok() || !k.ok() || !v.ok() || !a.ok())
      return TV();
    if (q.type.rank() < 2 || v.type.rank() < 2 || !q.type.sameShape(k.type)) {
      error(at, "'gla' takes q, k [..., T, dk] and v [..., T, dv]; got q " +
                    q.type.str() + ", k " + k.type.str());
      return TV();
    }
    if (!a.type.sameShape(k.type)) {
      error(c.range(3), "'gla': the decay must have k's shape " + k.type.str() +
                            ", got " + a.type.str());
      return TV();
    }
    std::vector<Dim> vlead(v.type.shape.begin(), v.type.shape.end() - 1);
    std::vector<Dim> klead(k.type.shape.begin(), k.type.shape.end() - 1);
    if (vlead != klead) {
      error(c.range(2), "'gla': v " + v.type.str() + " must match k " +
                            k.type.str() + " in all but the last dimension");
      return TV();
    }
    std::vector<Dim> sshape(q.type.shape.begin(), q.type.shape.end() - 2);
    sshape.push_back(k.type.shape.back());
    sshape.push_back(v.type.shape.back());
    SpecType stateType = SpecType::tensor(a.type.dtype, sshape);
    SmallVector<Value> operands{q.value, k.value, v.value, a.value};
    if (c.kw("init")) {
      TV init = c.kwTensor("init");
      if (!init.ok() ||
          !c.expectType(init, stateType, c.kwRange("init"), "'init'"))
        return TV();
      operands.push_back(init.value);
    }
    SmallVector<NamedAttribute> attrs;
    std::optional<mlir::recur::ScanAlgorithm> algorithm;
    if (const Expr *e = c.kw("algorithm")) {
      auto *s = llvm::dyn_cast<StringExpr>(e);
      algorithm =
          s ? mlir::recur::symbolizeScanAlgorithm(s->value) : std::nullopt;
      if (!algorithm) {
        error(e->getRange(), "'algorithm' must be \"auto\", \"recurrent\" or "
                             "\"chunked\"");
        return TV();
      }
    }
    std::optional<int64_t> chunk;
    if (const Expr *e = c.kw("chunk")) {
      chunk = constInt(*e, "'chunk'");
      if (!chunk)
        return TV();
    }
    // The compiler's overrides (the driver checked their spelling).
    if (!options.glaAlgorithm.empty()) {
      algorithm = mlir::recur::symbolizeScanAlgorithm(options.glaAlgorithm);
      if (algorithm == mlir::recur::ScanAlgorithm::Recurrent)
        chunk.reset(); // the spec's chunk is for the algorithm overridden
    }
    // A recurrent gla has no chunk to set (the op refuses one): the
    // override leaves it alone.
    if (options.glaChunk > 0 &&
        algorithm != mlir::recur::ScanAlgorithm::Recurrent)
      chunk = options.glaChunk;
    if (algorithm)
      attrs.push_back(named(
          "algorithm", mlir::recur::ScanAlgorithmAttr::get(ctx, *algorithm)));
    if (chunk)
      attrs.push_back(named("chunk_size", i64(*chunk)));
    auto results = build(
        *this, mlir::recur::GatedLinearAttentionOp::getOperationName(), at,
        name, operands, {mlirType(v.type), mlirType(stateType)}, attrs);
    if (!results)
      return TV();
    return TV::tuple(
        {tensorTV(v.type, (*results)[0]), tensorTV(stateType, (*results)[1])});
  }

  //===--------------------------------------------------------------------===//
  if (name == "gate_fixed" || name == "gate_lstm" || name == "gate_update") {
    bool lstm = name == "gate_lstm";
    if (!c.check(lstm ? 4 : 3, lstm ? 4 : 3,
                 lstm ? std::initializer_list<llvm::StringRef>{"input_bias",
                                                               "forget_bias"}
                      : std::initializer_list<llvm::StringRef>{}))
      return TV();
    TV state = c.arg(0, "the state"), cand = c.arg(1, "the candidate");
    if (!state.ok() || !cand.ok())
      return TV();
    if (isComplex(state.type.dtype) ||
        !c.expectType(cand, state.type, c.range(1), "the candidate"))
      return isComplex(state.type.dtype)
                 ? (error(c.range(0), "gates work on real states"), TV())
                 : TV();
    SmallVector<Value> operands{state.value, cand.value};
    for (size_t i = 2; i < callExpr.args.size(); ++i) {
      TV g = c.arg(i, "a gate pre-activation");
      if (!g.ok())
        return TV();
      if (g.type.dtype != state.type.dtype) {
        error(c.range(i), "'" + name + "': gate is " + g.type.str() +
                              " but the state is " + state.type.str());
        return TV();
      }
      std::optional<std::vector<Dim>> shape = broadcastShapes(
          g.type, state.type, c.range(i), "'" + name.str() + "'");
      if (!shape)
        return TV();
      if (g.type.rank() > state.type.rank() || *shape != state.type.shape) {
        error(c.range(i), "'" + name + "': gate " + g.type.str() +
                              " must broadcast to the state " +
                              state.type.str());
        return TV();
      }
      operands.push_back(g.value);
    }
    mlir::recur::GateKind kind = lstm ? mlir::recur::GateKind::Lstm
                                 : name == "gate_fixed"
                                     ? mlir::recur::GateKind::Fixed
                                     : mlir::recur::GateKind::Update;
    SmallVector<NamedAttribute> attrs{
        named("kind", mlir::recur::GateKindAttr::get(ctx, kind))};
    for (llvm::StringRef bias : {"input_bias", "forget_bias"})
      if (const Expr *e = c.kw(bias)) {
        std::optional<double> v = constNumber(*e, "'" + bias.str() + "'");
        if (!v)
          return TV();
        attrs.push_back(named(bias, builder.getF64FloatAttr(*v)));
      }
    auto results = build(*this, mlir::recur::GateOp::getOperationName(), at,
                         name, operands, {mlirType(state.type)}, attrs);
    if (!results)
      return TV();
    return tensorTV(state.type, (*results)[0]);
  }

  //===--------------------------------------------------------------------===//
  if (name == "stop_gradient") {
    if (!c.check(1, 1, {}))
      return TV();
    TV x = c.arg(0, "its argument");
    if (!x.ok())
      return x;
    auto results = build(*this, mlir::recur::StopGradientOp::getOperationName(),
                         at, name, {x.value}, {mlirType(x.type)}, {});
    return results ? tensorTV(x.type, (*results)[0]) : TV();
  }

  //===--------------------------------------------------------------------===//
  if (name == "memory_update") {
    if (!c.check(2, 2, {"keep", "axis"}))
      return TV();
    TV mem = c.arg(0, "the memory"), h = c.arg(1, "the new states");
    if (!mem.ok() || !h.ok())
      return TV();
    if (!c.kw("keep") || !c.kw("axis")) {
      error(at, "'memory_update' needs 'keep=' (positions kept) and 'axis='");
      return TV();
    }
    std::optional<int64_t> keep = constInt(*c.kw("keep"), "'keep'");
    std::optional<int64_t> axis = resolveAxis(*c.kw("axis"), h.type);
    if (!keep || !axis)
      return TV();
    bool same =
        mem.type.rank() == h.type.rank() && mem.type.dtype == h.type.dtype;
    for (int64_t i = 0; same && i < h.type.rank(); ++i)
      same = i == *axis || mem.type.shape[i] == h.type.shape[i];
    if (!same) {
      error(at, "'memory_update': memory " + mem.type.str() +
                    " and new states " + h.type.str() +
                    " must agree in all but the axis");
      return TV();
    }
    std::vector<Dim> shape = mem.type.shape;
    shape[*axis] = Dim::constant(*keep);
    SpecType out = SpecType::tensor(mem.type.dtype, shape);
    auto results =
        build(*this, mlir::recur::MemoryUpdateOp::getOperationName(), at, name,
              {mem.value, h.value}, {mlirType(out)},
              {named("axis", i64(*axis)), named("size", i64(*keep))});
    return results ? tensorTV(out, (*results)[0]) : TV();
  }

  //===--------------------------------------------------------------------===//
  if (name == "window_attention" || name == "attention" ||
      name == "rel_attention") {
    bool window = name == "window_attention", rel = name == "rel_attention";
    size_t positional = rel ? 6 : 3;
    std::initializer_list<llvm::StringRef> windowKw = {
        "window", "block",       "include_self", "scale", "t5",
        "alibi",  "num_buckets", "max_distance", "cache"};
    std::initializer_list<llvm::StringRef> denseKw = {"mask", "memory_slots",
                                                      "key_padding", "scale"};
    std::initializer_list<llvm::StringRef> relKw = {"scale"};
    if (!c.check(positional, positional,
                 window ? windowKw
                 : rel  ? relKw
                        : denseKw))
      return TV();
    std::vector<TV> xs;
    static const char *const names[] = {"'q'", "'k'", "'v'",
                                        "'r'", "'u'", "'pos_bias'"};
    for (size_t i = 0; i < positional; ++i) {
      xs.push_back(c.arg(i, names[i]));
      if (!xs.back().ok())
        return TV();
    }
    const TV &q = xs[0], &k = xs[1], &v = xs[2];
    int64_t minRank = rel ? 3 : 2;
    if (q.type.rank() < minRank || k.type.rank() != q.type.rank() ||
        v.type.rank() != q.type.rank()) {
      error(at, "'" + name + "' takes q, k, v of one rank >= " +
                    llvm::Twine(minRank) + " ([..., T, d]); got " +
                    q.type.str() + ", " + k.type.str() + ", " + v.type.str());
      return TV();
    }
    int64_t r = q.type.rank();
    for (int64_t i = 0; i < r; ++i) {
      if (i != r - 2 && k.type.shape[i] != q.type.shape[i]) {
        error(c.range(1), "'" + name + "': k " + k.type.str() +
                              " must match q " + q.type.str() +
                              " in all but the time dimension");
        return TV();
      }
      if (i != r - 1 && v.type.shape[i] != k.type.shape[i]) {
        error(c.range(2), "'" + name + "': v " + v.type.str() +
                              " must match k " + k.type.str() +
                              " in all but the last dimension");
        return TV();
      }
    }
    if (window && q.type.shape[r - 2] != k.type.shape[r - 2]) {
      error(c.range(1), "'window_attention': k covers the same positions as "
                        "q (" +
                            q.type.shape[r - 2].str() +
                            "); earlier keys go in 'cache='");
      return TV();
    }
    SpecType out = replaceLast(q.type, v.type.shape.back());
    SmallVector<Value> operands;
    for (const TV &x : xs)
      operands.push_back(x.value);
    SmallVector<NamedAttribute> attrs;
    if (const Expr *e = c.kw("scale")) {
      std::optional<double> s = constNumber(*e, "'scale'");
      if (!s)
        return TV();
      attrs.push_back(named("scale", builder.getF64FloatAttr(*s)));
    }
    llvm::StringRef opName;
    if (window) {
      opName = mlir::recur::WindowAttentionOp::getOperationName();
      if (!c.kw("window")) {
        error(at, "'window_attention' needs 'window=' (how many keys each "
                  "query sees)");
        return TV();
      }
      std::optional<int64_t> w = constInt(*c.kw("window"), "'window'");
      if (!w)
        return TV();
      attrs.push_back(named("window", i64(*w)));
      if (const Expr *e = c.kw("block")) {
        std::optional<int64_t> blk = constInt(*e, "'block'");
        if (!blk)
          return TV();
        attrs.push_back(named("block", i64(*blk)));
      }
      std::optional<bool> self = c.flag("include_self", false);
      if (!self)
        return TV();
      if (*self)
        attrs.push_back(named("include_self", builder.getUnitAttr()));
      int32_t numBias = 0, numCache = 0;
      if (c.kw("t5") && c.kw("alibi")) {
        error(c.kwRange("alibi"), "'window_attention' takes one position "
                                  "bias: 't5=' or 'alibi='");
        return TV();
      }
      for (llvm::StringRef kind : {"t5", "alibi"})
        if (c.kw(kind)) {
          TV bias = c.kwTensor(kind);
          if (!bias.ok())
            return TV();
          operands.push_back(bias.value);
          numBias = 1;
          attrs.push_back(
              named("bias_kind",
                    mlir::recur::BiasKindAttr::get(
                        ctx, kind == "t5" ? mlir::recur::BiasKind::T5
                                          : mlir::recur::BiasKind::Alibi)));
        }
      for (llvm::StringRef key : {"num_buckets", "max_distance"})
        if (const Expr *e = c.kw(key)) {
          std::optional<int64_t> val = constInt(*e, "'" + key.str() + "'");
          if (!val)
            return TV();
          attrs.push_back(named(key, i64(*val)));
        }
      if (const Expr *e = c.kw("cache")) {
        std::optional<std::vector<TV>> cache = c.tensors(*e, "'cache'");
        if (!cache)
          return TV();
        if (cache->size() != 2) {
          error(e->getRange(), "'cache' is a pair (k_cache, v_cache)");
          return TV();
        }
        for (const TV &x : *cache)
          operands.push_back(x.value);
        numCache = 2;
      }
      attrs.push_back(
          named("operandSegmentSizes",
                builder.getDenseI32ArrayAttr(
                    {1, 1, 1, numBias, numCache / 2, numCache / 2})));
    } else if (rel) {
      opName = mlir::recur::RelAttentionOp::getOperationName();
    } else {
      opName = mlir::recur::AttentionOp::getOperationName();
      if (const Expr *e = c.kw("mask")) {
        auto *s = llvm::dyn_cast<StringExpr>(e);
        std::optional<mlir::recur::MaskKind> mask =
            s ? mlir::recur::symbolizeMaskKind(s->value) : std::nullopt;
        if (!mask) {
          error(e->getRange(), "'mask' must be \"none\", \"causal\" or "
                               "\"memory\"");
          return TV();
        }
        attrs.push_back(
            named("mask", mlir::recur::MaskKindAttr::get(ctx, *mask)));
      }
      if (const Expr *e = c.kw("memory_slots")) {
        std::optional<int64_t> slots = constInt(*e, "'memory_slots'");
        if (!slots)
          return TV();
        attrs.push_back(named("memory_slots", i64(*slots)));
      }
      if (const Expr *e = c.kw("key_padding")) {
        TV pad = c.tensor(*e, "'key_padding'", /*mask=*/true);
        if (!pad.ok())
          return TV();
        std::vector<Dim> expected(k.type.shape.begin(), k.type.shape.end() - 1);
        if (pad.type.shape != expected) {
          error(e->getRange(),
                "'attention': key_padding must be " +
                    SpecType::tensor(DType::Bool, expected).str() +
                    " (true hides a key), got " + pad.type.str());
          return TV();
        }
        operands.push_back(pad.value);
      }
    }
    auto results =
        build(*this, opName, at, name, operands, {mlirType(out)}, attrs);
    return results ? tensorTV(out, (*results)[0]) : TV();
  }

  //===--------------------------------------------------------------------===//
  if (name == "route_topk") {
    if (!c.check(1, 1, {"k"}))
      return TV();
    TV probs = c.arg(0, "the router probabilities");
    if (!probs.ok())
      return TV();
    if (!c.kw("k")) {
      error(at, "'route_topk' needs 'k=' (experts per token)");
      return TV();
    }
    std::optional<int64_t> k = constInt(*c.kw("k"), "'k'");
    if (!k)
      return TV();
    if (probs.type.rank() < 1) {
      error(c.range(0), "'route_topk' needs probabilities [..., E]");
      return TV();
    }
    SpecType gates = replaceLast(probs.type, Dim::constant(*k));
    RankedTensorType idxType =
        RankedTensorType::get(mlirType(gates).getShape(), builder.getI32Type());
    auto results =
        build(*this, mlir::recur::RouteTopKOp::getOperationName(), at, name,
              {probs.value}, {mlirType(gates), idxType}, {named("k", i64(*k))});
    if (!results)
      return TV();
    // Indices are i32 in the IR; the language sees them as an opaque
    // tensor of the gates' shape, usable only by 'moe'.
    TV idx = tensorTV(gates, (*results)[1]);
    idx.indices = true;
    return TV::tuple({tensorTV(gates, (*results)[0]), idx});
  }

  if (name == "moe") {
    if (!c.check(5, 5, {"active", "activation"}))
      return TV();
    std::vector<TV> xs;
    static const char *const names[] = {"'x'", "the expert indices",
                                        "the gates", "'w_in'", "'w_out'"};
    for (size_t i = 0; i < 5; ++i) {
      readingIndices = i == 1;
      xs.push_back(c.arg(i, names[i]));
      readingIndices = false;
      if (!xs.back().ok())
        return TV();
    }
    if (!cast<RankedTensorType>(xs[1].value.getType())
             .getElementType()
             .isInteger(32)) {
      error(c.range(1), "'moe' takes the indices returned by 'route_topk'");
      return TV();
    }
    SmallVector<Value> operands{xs[0].value, xs[1].value, xs[2].value,
                                xs[3].value, xs[4].value};
    SmallVector<NamedAttribute> attrs;
    if (const Expr *e = c.kw("active")) {
      TV active = c.tensor(*e, "'active'", /*mask=*/true);
      if (!active.ok())
        return TV();
      std::vector<Dim> tokens(xs[0].type.shape.begin(),
                              xs[0].type.shape.end() - 1);
      if (active.type.shape != tokens) {
        error(e->getRange(), "'moe': active must be " +
                                 SpecType::tensor(DType::Bool, tokens).str() +
                                 " (one flag per token), got " +
                                 active.type.str());
        return TV();
      }
      operands.push_back(active.value);
    }
    if (const Expr *e = c.kw("activation")) {
      auto *s = llvm::dyn_cast<StringExpr>(e);
      std::optional<mlir::recur::Activation> act =
          s ? mlir::recur::symbolizeActivation(s->value) : std::nullopt;
      if (!act) {
        error(e->getRange(), "'activation' must be \"relu\", \"gelu\" or "
                             "\"silu\"");
        return TV();
      }
      attrs.push_back(
          named("activation", mlir::recur::ActivationAttr::get(ctx, *act)));
    }
    auto results = build(*this, mlir::recur::MoEOp::getOperationName(), at,
                         name, operands, {mlirType(xs[0].type)}, attrs);
    return results ? tensorTV(xs[0].type, (*results)[0]) : TV();
  }

  if (name == "halting") {
    if (!c.check(5, 5, {"threshold"}))
      return TV();
    std::vector<TV> xs;
    static const char *const names[] = {"'p_hat'", "'h'", "'mass'", "'acc'",
                                        "'s_prev'"};
    for (size_t i = 0; i < 5; ++i) {
      xs.push_back(c.arg(i, names[i]));
      if (!xs.back().ok())
        return TV();
    }
    for (size_t i : {2})
      if (!c.expectType(xs[i], xs[0].type, c.range(i), names[i]))
        return TV();
    for (size_t i : {3, 4})
      if (!c.expectType(xs[i], xs[1].type, c.range(i), names[i]))
        return TV();
    SmallVector<NamedAttribute> attrs;
    if (const Expr *e = c.kw("threshold")) {
      std::optional<double> t = constNumber(*e, "'threshold'");
      if (!t)
        return TV();
      attrs.push_back(named("threshold", builder.getF64FloatAttr(*t)));
    }
    SmallVector<Value> operands;
    for (const TV &x : xs)
      operands.push_back(x.value);
    auto results = build(*this, mlir::recur::HaltingOp::getOperationName(), at,
                         name, operands,
                         {mlirType(xs[0].type), mlirType(xs[1].type),
                          mlirType(xs[0].type), mlirType(xs[1].type)},
                         attrs);
    if (!results)
      return TV();
    return TV::tuple({tensorTV(xs[0].type, (*results)[0]),
                      tensorTV(xs[1].type, (*results)[1]),
                      tensorTV(xs[0].type, (*results)[2]),
                      tensorTV(xs[1].type, (*results)[3])});
  }

  //===--------------------------------------------------------------------===//
  if (name == "blocks" || name == "depth") {
    bool blocks = name == "blocks";
    if (!c.check(blocks ? 1 : 0, blocks ? SIZE_MAX : 0,
                 blocks ? std::initializer_list<llvm::StringRef>{"size", "axis",
                                                                 "init"}
                        : std::initializer_list<llvm::StringRef>{"max", "init"},
                 /*body=*/true))
      return TV();
    std::vector<TV> inputs, inits;
    for (size_t i = 0; i < callExpr.args.size(); ++i) {
      inputs.push_back(c.arg(i, "a blocked input"));
      if (!inputs.back().ok())
        return TV();
    }
    if (const Expr *e = c.kw("init")) {
      std::optional<std::vector<TV>> v = c.tensors(*e, "'init'");
      if (!v)
        return TV();
      inits = *v;
    }
    int64_t size = 0, axis = 0;
    std::vector<SpecType> argTypes;
    if (blocks) {
      if (!c.kw("size") || !c.kw("axis")) {
        error(at, "'blocks' needs 'size=' (the block length) and 'axis='");
        return TV();
      }
      std::optional<int64_t> s = constInt(*c.kw("size"), "'size'");
      std::optional<int64_t> a = resolveAxis(*c.kw("axis"), inputs[0].type);
      if (!s || !a)
        return TV();
      size = *s;
      axis = *a;
      for (auto [i, in] : llvm::enumerate(inputs)) {
        if (in.type.rank() <= axis ||
            in.type.shape[axis] != inputs[0].type.shape[axis]) {
          error(c.range(i), "'blocks' inputs must share the blocked "
                            "dimension " +
                                inputs[0].type.shape[axis].str() + ", got " +
                                in.type.str());
          return TV();
        }
        std::vector<Dim> shape = in.type.shape;
        shape[axis] = Dim::constant(size);
        argTypes.push_back(SpecType::tensor(in.type.dtype, shape));
      }
    } else {
      if (!c.kw("max")) {
        error(at, "'depth' needs 'max=' (the most steps)");
        return TV();
      }
      std::optional<int64_t> m = constInt(*c.kw("max"), "'max'");
      if (!m)
        return TV();
      size = *m;
      if (inits.empty()) {
        error(at, "'depth' needs 'init=' (the values carried across "
                  "steps)");
        return TV();
      }
    }
    auto region = std::make_unique<Region>();
    Block *block = new Block();
    region->push_back(block);
    std::vector<TV> params;
    if (!blocks) {
      // The step index, seen by the body as a scalar of the carried dtype.
      Value index = block->addArgument(builder.getIndexType(), loc(at));
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(block);
      DType dtype = isComplex(inits[0].type.dtype)
                        ? realPart(inits[0].type.dtype)
                        : inits[0].type.dtype;
      mlir::Type ft = mlirElementType(dtype);
      Value i = arith::IndexCastOp::create(builder, loc(at),
                                           builder.getI64Type(), index);
      Value f = arith::SIToFPOp::create(builder, loc(at), ft, i);
      TV step;
      step.type = SpecType::tensor(dtype, {});
      step.value = tensor::FromElementsOp::create(
          builder, loc(at), RankedTensorType::get({}, ft), ValueRange{f});
      params.push_back(step);
    }
    for (const SpecType &t : argTypes) {
      TV p;
      p.type = t;
      p.value = block->addArgument(mlirType(t), loc(at));
      params.push_back(p);
    }
    for (const TV &init : inits) {
      TV p;
      p.type = init.type;
      p.value = block->addArgument(mlirType(init.type), loc(at));
      params.push_back(p);
    }
    std::string what = "the body of '" + name.str() + "'";
    std::vector<TV> outs;
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToEnd(block);
      std::optional<std::vector<TV>> results =
          genBody(*callExpr.body, params, at, what);
      if (!results)
        return TV();
      if (results->size() < inits.size() ||
          (!blocks && results->size() != inits.size())) {
        error(callExpr.body->range,
              what + " returns " + llvm::Twine(results->size()) +
                  " values; it must return " +
                  (blocks ? "its output blocks, then " : "") + "the " +
                  llvm::Twine(inits.size()) + " carried value" +
                  (inits.size() == 1 ? "" : "s"));
        return TV();
      }
      size_t numOutputs = results->size() - inits.size();
      SmallVector<Value> yields;
      for (size_t i = 0; i < results->size(); ++i) {
        TV r = (*results)[i];
        if (r.literal || r.type.kind != SpecType::Kind::Tensor) {
          error(callExpr.body->range, what + " must return tensors");
          return TV();
        }
        if (i >= numOutputs) {
          const TV &init = inits[i - numOutputs];
          if (!c.expectType(r, init.type, callExpr.body->range,
                            "each carried value returned"))
            return TV();
          outs.push_back(tensorTV(init.type, Value()));
        } else {
          if (r.type.rank() <= axis ||
              r.type.shape[axis] != Dim::constant(size)) {
            error(callExpr.body->range,
                  what + " must return output blocks of " + llvm::Twine(size) +
                      " along the blocked axis; got " + r.type.str());
            return TV();
          }
          std::vector<Dim> shape = r.type.shape;
          shape[axis] = inputs[0].type.shape[axis];
          outs.push_back(
              tensorTV(SpecType::tensor(r.type.dtype, shape), Value()));
        }
        yields.push_back(r.value);
      }
      mlir::recur::YieldOp::create(builder, loc(callExpr.body->range), yields);
    }
    SmallVector<Value> operands;
    SmallVector<mlir::Type> types;
    for (const TV &in : inputs)
      operands.push_back(in.value);
    for (const TV &init : inits)
      operands.push_back(init.value);
    for (const TV &o : outs)
      types.push_back(mlirType(o.type));
    SmallVector<NamedAttribute> attrs;
    llvm::StringRef opName;
    if (blocks) {
      opName = mlir::recur::BlockRecurrenceOp::getOperationName();
      attrs = {named("block_size", i64(size)), named("axis", i64(axis)),
               named("operandSegmentSizes",
                     builder.getDenseI32ArrayAttr(
                         {static_cast<int32_t>(inputs.size()),
                          static_cast<int32_t>(inits.size())}))};
    } else {
      opName = mlir::recur::DepthLoopOp::getOperationName();
      attrs = {named("max_depth", i64(size))};
    }
    auto built = build(*this, opName, at, name, operands, types, attrs,
                       std::move(region));
    if (!built)
      return TV();
    for (size_t i = 0; i < outs.size(); ++i)
      outs[i].value = (*built)[i];
    return outs.size() == 1 ? outs.front() : TV::tuple(std::move(outs));
  }

  handled = false;
  return TV();
}
