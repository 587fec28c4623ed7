//===- MLIRGen.cpp - check a Recur spec and emit recur IR -----------------===//
//
// Part of the Recur project.
//
// One walk per layer: names are resolved, shapes are checked symbolically
// (runtime dims by name, compile-time dims by value) and dtypes unified, and
// every expression that checks is emitted as recur ops plus linalg/arith/
// math/complex glue. Errors never stop the walk; they poison the value so
// that one mistake gives one message.
//
//===----------------------------------------------------------------------===//

#include "Gen.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/ProgramStack.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace mlir;
using namespace ::recur::frontend;

namespace recur::frontend {

void loadFrontendDialects(MLIRContext &context) {
  context.loadDialect<mlir::recur::RecurDialect, func::FuncDialect,
                      arith::ArithDialect, complex::ComplexDialect,
                      math::MathDialect, linalg::LinalgDialect,
                      tensor::TensorDialect>();
}

OwningOpRef<ModuleOp> emitModule(const Module &module, MLIRContext &context,
                            const CompileOptions &options,
                            ::recur::frontend::DiagnosticEngine &diags, llvm::StringRef fileName) {
  loadFrontendDialects(context);
  Generator gen(module, context, options, diags, fileName);
  return gen.run();
}

} // namespace recur::frontend

Generator::Generator(const Module &module, MLIRContext &context,
                     const CompileOptions &options, ::recur::frontend::DiagnosticEngine &diags,
                     llvm::StringRef fileName)
    : builder(&context), diags(diags), module(module), context(context),
      options(options), fileName(fileName.str()),
      stackBase(llvm::getStackPointer()),
      // Half the stack the process may grow, and never more than half of the
      // usual 8 MiB, so that the limit is the same under `ulimit -s
      // unlimited`: thousands of levels in a release build, about two
      // hundred calls deep under ASan.
      stackBudget(std::min<uint64_t>(llvm::getDefaultStackSize(),
                                     uint64_t(8) << 20) /
                  2) {}

Location Generator::loc(llvm::SMRange range) {
  if (!range.Start.isValid())
    return builder.getUnknownLoc();
  auto [line, col] =
      diags.getSourceMgr().getLineAndColumn(range.Start);
  return FileLineColLoc::get(&context, fileName, line, col);
}

//===----------------------------------------------------------------------===//
// Module and layers
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Generator::run() {
  for (const FnDecl &fn : module.fns) {
    auto [it, inserted] = fns.try_emplace(fn.name, &fn);
    if (!inserted) {
      error(fn.range, "function '" + fn.name + "' is defined twice");
      note(it->second->range, "first definition is here");
    }
  }
  OwningOpRef<ModuleOp> out = ModuleOp::create(builder.getUnknownLoc());
  // options.layer: empty (every layer), a name, or a comma-separated list.
  llvm::SmallVector<llvm::StringRef> wanted;
  if (!options.layer.empty())
    llvm::StringRef(options.layer).split(wanted, ',');
  llvm::StringSet<> found;
  llvm::StringMap<llvm::SMRange> seen;
  for (const LayerDecl &layer : module.layers) {
    auto [it, inserted] = seen.try_emplace(layer.name, layer.range);
    if (!inserted) {
      error(layer.range, "layer '" + layer.name + "' is defined twice");
      note(it->second, "first definition is here");
      continue;
    }
    if (!wanted.empty() && !llvm::is_contained(wanted, layer.name))
      continue;
    found.insert(layer.name);
    genLayer(layer, *out);
  }
  bool missing = false;
  for (llvm::StringRef name : wanted) {
    if (found.contains(name))
      continue;
    missing = true;
    std::string names;
    for (const LayerDecl &layer : module.layers)
      names += (names.empty() ? "" : ", ") + layer.name;
    error(llvm::SMRange(), "no layer named '" + name.str() + "' in the spec" +
                               (names.empty() ? "" : "; it defines " + names));
  }
  // A -D that no compiled layer declares is a typo, not a no-op.
  if (!missing && (wanted.empty() || !found.empty()))
    for (const auto &define : options.defines)
      if (!usedDefines.count(define.first))
        error(
            llvm::SMRange(),
            "-D " + define.first + ": " +
                (wanted.empty() ? "no layer in the spec has a dimension named '"
                 : wanted.size() == 1
                     ? "layer '" + options.layer + "' has no dimension named '"
                     : "none of the layers " + options.layer +
                           " has a dimension named '") +
                define.first + "'");
  bool none = !wanted.empty() && found.empty();
  if (none && module.layers.empty())
    return nullptr;
  if (module.layers.empty() && !diags.hadError())
    error(llvm::SMRange(), "the spec defines no layer");
  if (diags.hadError())
    return nullptr;
  if (failed(mlir::verify(*out))) {
    // untestable: only a front-end bug gets here (recur-fuzz traps on it).
    error(llvm::SMRange(), "internal error: the emitted IR does not verify");
    return nullptr;
  }
  return out;
}

std::optional<Dim> Generator::evalDim(const DimExpr &expr) {
  switch (expr.kind) {
  case DimExpr::Kind::Int:
    if (expr.value <= 0 || expr.value > (int64_t(1) << 40)) {
      error(expr.range, "a dimension must be a positive integer below 2^40");
      return std::nullopt;
    }
    return Dim::constant(expr.value);
  case DimExpr::Kind::Name: {
    auto it = dims.find(expr.name);
    if (it == dims.end()) {
      error(expr.range, "unknown dimension '" + expr.name + "'");
      return std::nullopt;
    }
    return it->second;
  }
  case DimExpr::Kind::Binary: {
    std::optional<Dim> lhs = evalDim(*expr.lhs), rhs = evalDim(*expr.rhs);
    if (!lhs || !rhs)
      return std::nullopt;
    if (lhs->isRuntime() || rhs->isRuntime()) {
      error(expr.range, "arithmetic on the runtime dimension '" +
                            (lhs->isRuntime() ? lhs->symbol : rhs->symbol) +
                            "'; only compile-time dims can be combined");
      return std::nullopt;
    }
    int64_t a = lhs->size, b = rhs->size, r = 0;
    switch (expr.op) {
    case '+':
      r = a + b;
      break;
    case '-':
      r = a - b;
      break;
    case '*':
      // Both sides are at most 2^40: the product may overflow int64.
      if (llvm::MulOverflow(a, b, r))
        r = std::numeric_limits<int64_t>::max();
      break;
    case '/':
      if (a % b != 0) {
        error(expr.range, llvm::Twine(a) + " / " + llvm::Twine(b) +
                              " is not a whole number");
        return std::nullopt;
      }
      r = a / b;
      break;
    }
    if (r > (int64_t(1) << 40)) {
      error(expr.range, "dimension evaluates to more than 2^40");
      return std::nullopt;
    }
    if (r <= 0) {
      error(expr.range, "dimension evaluates to " + llvm::Twine(r) +
                            "; it must be positive");
      return std::nullopt;
    }
    return Dim::constant(r);
  }
  }
  return std::nullopt;
}

std::optional<SpecType> Generator::resolveType(const TypeExpr &type) {
  std::vector<Dim> shape;
  bool ok = true;
  for (const auto &dim : type.dims) {
    std::optional<Dim> d = evalDim(*dim);
    ok &= d.has_value();
    if (d)
      shape.push_back(*d);
  }
  if (!ok)
    return std::nullopt;
  return SpecType::tensor(promoted(type.dtype), std::move(shape));
}

DType Generator::promoted(DType dtype) const {
  if (!options.promoteToF64)
    return dtype;
  if (isComplex(dtype))
    return DType::C128;
  return dtype == DType::Bool ? dtype : DType::F64;
}

namespace {
/// The `recur.dims` attribute of a layer argument or result: each
/// dimension's name as the spec wrote it (a runtime dim's symbol, a
/// compile-time dim's name), or its size when it has no name. The runtime
/// header and its error messages speak in these names.
ArrayAttr dimNames(Builder &b, const SpecType &type) {
  SmallVector<Attribute> names;
  for (const Dim &dim : type.shape)
    names.push_back(b.getStringAttr(dim.isRuntime()      ? dim.symbol
                                    : !dim.name.empty() ? dim.name
                                                        : std::to_string(dim.size)));
  return b.getArrayAttr(names);
}

/// The shortest spelling of `v` that reads back as `v` (0.044, 1e-06, -1.5),
/// so that init arguments reach `recur.init` unrounded.
std::string spellNumber(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

/// Checks an init rule's name and arity; returns its spelling for the
/// `recur.init` argument attribute.
std::optional<std::string> initSpelling(Generator &gen, const InitRule &rule,
                                        Role role,
                                        const llvm::StringMap<const TensorDecl *>
                                            &decls) {
  struct Known {
    const char *name;
    unsigned arity;
    const char *meaning;
  };
  static const Known known[] = {
      {"zeros", 0, "all zeros"},
      {"ones", 0, "all ones"},
      {"const", 1, "const(value)"},
      {"normal", 1, "normal(std), mean 0"},
      {"truncnormal", 1, "truncnormal(std), cut at 2 std"},
      {"uniform", 2, "uniform(low, high)"},
  };
  for (const Known &k : known) {
    if (rule.name != k.name)
      continue;
    if (rule.args.size() != k.arity) {
      gen.error(rule.range, "init rule '" + rule.name + "' takes " +
                                llvm::Twine(k.arity) + " argument" +
                                (k.arity == 1 ? "" : "s") + ": " + k.meaning);
      return std::nullopt;
    }
    std::string s = rule.name;
    if (k.arity) {
      s += "(";
      for (size_t i = 0; i < rule.args.size(); ++i) {
        std::optional<double> v = gen.constNumber(*rule.args[i], "an init "
                                                                 "argument");
        if (!v)
          return std::nullopt;
        s += (i ? ", " : "") + spellNumber(*v);
      }
      s += ")";
    }
    return s;
  }
  // A state may reset to a learned parameter (the Block-Recurrent initial
  // state, MemBART's v_b).
  if (role == Role::State) {
    auto it = decls.find(rule.name);
    if (it != decls.end() && it->second->role == Role::Param &&
        rule.args.empty())
      return "param(" + rule.name + ")";
  }
  gen.error(rule.range,
            "unknown init rule '" + rule.name +
                "'; expected zeros, ones, const(v), normal(std), "
                "truncnormal(std), uniform(lo, hi)" +
                (role == Role::State ? " or the name of a param" : ""));
  return std::nullopt;
}
} // namespace

bool Generator::genLayer(const LayerDecl &layer, ModuleOp out) {
  dims.clear();
  runtimeDimValues.clear();
  runtimeDimMinimum.clear();
  stackReported = false;
  tensorDecls.clear();
  nextStates.clear();
  outputs.clear();
  declTypes.clear();
  scopes.clear();
  scopes.emplace_back();
  unsigned errorsBefore = diags.getNumErrors();

  // Dims, in order; -D overrides a default or fixes a runtime dim.
  llvm::StringMap<llvm::SMRange> dimRanges;
  for (const DimDecl &decl : layer.dims) {
    auto [it, inserted] = dimRanges.try_emplace(decl.name, decl.range);
    if (!inserted) {
      error(decl.range, "dimension '" + decl.name + "' is declared twice");
      note(it->second, "previous declaration is here");
      continue;
    }
    auto define = options.defines.find(decl.name);
    if (define != options.defines.end()) {
      if (define->second <= 0 || define->second > (int64_t(1) << 40))
        error(decl.range, "-D " + decl.name + "=" +
                              llvm::Twine(define->second) +
                              ": a dimension must be a positive integer "
                              "below 2^40");
      dims[decl.name] = Dim::constant(define->second);
      dims[decl.name].name = decl.name;
    } else if (decl.value) {
      std::optional<Dim> d = evalDim(*decl.value);
      dims[decl.name] = d ? Dim::constant(d->size) : Dim::constant(1);
      dims[decl.name].name = decl.name;
    } else {
      dims[decl.name] = Dim::runtime(decl.name);
    }
  }
  for (const auto &define : options.defines)
    if (dimRanges.count(define.first))
      usedDefines.insert(define.first);

  // Tensor declarations.
  std::vector<std::pair<const TensorDecl *, SpecType>> declared;
  for (const TensorDecl &decl : layer.tensors) {
    auto [it, inserted] = tensorDecls.try_emplace(decl.name, &decl);
    if (!inserted) {
      error(decl.range, "'" + decl.name + "' is declared twice");
      note(it->second->range, "previous declaration is here");
      continue;
    }
    if (dims.count(decl.name)) {
      error(decl.range, "'" + decl.name + "' is already a dimension");
      continue;
    }
    std::optional<SpecType> type = resolveType(decl.type);
    if (!type)
      continue;
    if (type->dtype == DType::Bool && decl.role != Role::Input) {
      error(decl.type.range, "only inputs can be bool (masks for "
                             "key_padding= and active=)");
      continue;
    }
    if (decl.init && (decl.role == Role::Input || decl.role == Role::Output))
      error(decl.init->range, "an " + roleName(decl.role) +
                                  " has no init rule; only params and states "
                                  "do");
    declared.emplace_back(&decl, *type);
    declTypes[decl.name] = *type;
  }

  // The function: inputs, params, states in; outputs, next states out.
  SmallVector<mlir::Type> argTypes, resultTypes;
  SmallVector<std::pair<const TensorDecl *, SpecType>> args, results, states;
  for (Role role : {Role::Input, Role::Param, Role::State})
    for (auto &[decl, type] : declared)
      if (decl->role == role)
        args.emplace_back(decl, type);
  for (Role role : {Role::Output, Role::State})
    for (auto &[decl, type] : declared)
      if (decl->role == role)
        results.emplace_back(decl, type);
  for (auto &[decl, type] : args)
    argTypes.push_back(mlirType(type));
  for (auto &[decl, type] : results)
    resultTypes.push_back(mlirType(type));
  // Counted among the declarations as written: one whose type failed was
  // still declared.
  if (llvm::none_of(layer.tensors, [](const TensorDecl &t) {
        return t.role == Role::Output;
      }))
    error(layer.range, "layer '" + layer.name + "' declares no output");

  builder.setInsertionPointToEnd(out.getBody());
  auto func = func::FuncOp::create(builder, loc(layer.range), layer.name,
                                   builder.getFunctionType(argTypes,
                                                           resultTypes));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  for (auto [i, arg] : llvm::enumerate(args)) {
    auto [decl, type] = arg;
    func.setArgAttr(i, "recur.name", builder.getStringAttr(decl->name));
    func.setArgAttr(i, "recur.role",
                    builder.getStringAttr(roleName(decl->role)));
    func.setArgAttr(i, "recur.dims", dimNames(builder, type));
    if (decl->role == Role::Param || decl->role == Role::State) {
      std::string init = "zeros";
      if (decl->init)
        if (std::optional<std::string> s =
                initSpelling(*this, *decl->init, decl->role, tensorDecls))
          init = *s;
      func.setArgAttr(i, "recur.init", builder.getStringAttr(init));
    }
    TV tv;
    tv.type = type;
    tv.value = entry->getArgument(i);
    bind(decl->name, tv, decl->range);
    // A runtime dim's size comes from the first argument that has it.
    for (auto [d, dim] : llvm::enumerate(type.shape))
      if (dim.isRuntime() && !runtimeDimValues.count(dim.symbol))
        runtimeDimValues[dim.symbol] =
            tensor::DimOp::create(builder, loc(decl->range), tv.value, d);
  }
  for (auto [i, result] : llvm::enumerate(results)) {
    func.setResultAttr(i, "recur.name",
                       builder.getStringAttr(result.first->name));
    func.setResultAttr(i, "recur.dims", dimNames(builder, result.second));
    func.setResultAttr(i, "recur.role",
                       builder.getStringAttr(result.first->role == Role::State
                                                 ? "next_state"
                                                 : "output"));
  }
  for (const DimDecl &decl : layer.dims) {
    auto it = dims.find(decl.name);
    if (it != dims.end() && it->second.isRuntime() &&
        !runtimeDimValues.count(decl.name))
      error(decl.range, "runtime dimension '" + decl.name +
                            "' appears in no input, param or state, so its "
                            "size is unknown when the layer runs; give it a "
                            "value ('dim " +
                            decl.name + " = ...') or use it in an input");
  }

  for (const StmtPtr &stmt : layer.stmts)
    genStmt(*stmt, &layer);

  SmallVector<Value> returned;
  bool complete = true;
  for (auto &[decl, type] : results) {
    const llvm::StringMap<TV> &map =
        decl->role == Role::State ? nextStates : outputs;
    auto it = map.find(decl->name);
    if (it == map.end()) {
      complete = false;
      if (decl->role == Role::State)
        error(decl->range, "state '" + decl->name +
                               "' is never updated; write 'next " +
                               decl->name + " = ...'");
      else
        error(decl->range, "output '" + decl->name + "' is never assigned");
      continue;
    }
    if (!it->second.value)
      complete = false;
    returned.push_back(it->second.value);
  }
  if (complete && diags.getNumErrors() == errorsBefore) {
    func::ReturnOp::create(builder, loc(layer.range), returned);
    if (!runtimeDimMinimum.empty()) {
      SmallVector<NamedAttribute> mins;
      for (const auto &entry : runtimeDimMinimum)
        mins.push_back(builder.getNamedAttr(
            entry.getKey(), builder.getI64IntegerAttr(entry.getValue())));
      func->setAttr("recur.min_sizes", builder.getDictionaryAttr(mins));
    }
  } else {
    func.erase();
  }
  return diags.getNumErrors() == errorsBefore;
}

//===----------------------------------------------------------------------===//
// Scopes and statements
//===----------------------------------------------------------------------===//

const TV *Generator::lookup(llvm::StringRef name, llvm::SMRange *where) {
  for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope) {
    auto it = scope->find(name);
    if (it != scope->end()) {
      if (where)
        *where = it->second.second;
      return &it->second.first;
    }
  }
  return nullptr;
}

bool Generator::bind(llvm::StringRef name, TV value, llvm::SMRange range) {
  llvm::SMRange previous;
  if (lookup(name, &previous)) {
    error(range, "'" + name + "' is already defined; names are bound once");
    note(previous, "previous definition is here");
    return false;
  }
  if (dims.count(name)) {
    error(range, "'" + name + "' is a dimension and cannot be rebound");
    return false;
  }
  scopes.back()[name] = {std::move(value), range};
  return true;
}

void Generator::genStmt(const Stmt &stmt, const LayerDecl *layer) {
  switch (stmt.kind) {
  case Stmt::Kind::Return:
    error(stmt.range, "'return' ends a function or 'do' body, not a layer; "
                      "assign the layer's outputs instead");
    return;
  case Stmt::Kind::Next: {
    auto [name, range] = stmt.targets.front();
    TV value = gen(*stmt.values.front());
    auto it = tensorDecls.find(name);
    if (!layer || it == tensorDecls.end() ||
        it->second->role != Role::State) {
      error(range, "'next' updates a state, and '" + name + "' is not one");
      return;
    }
    if (nextStates.count(name)) {
      error(stmt.range, "state '" + name + "' is updated twice");
      return;
    }
    if (!value.ok()) {
      nextStates[name] = TV();
      return;
    }
    const TV *current = lookup(name);
    if (!current || !declTypes.count(name)) {
      nextStates[name] = TV(); // its declaration failed and was reported
      return;
    }
    value = coerce(value, current->type.dtype);
    if (value.literal) {
      // A number has no tensor to return (it would drop the layer).
      error(stmt.values.front()->getRange(),
            "the next value of state '" + name +
                "' must be a tensor, not a number");
      nextStates[name] = TV();
      return;
    }
    if (value.type.kind != SpecType::Kind::Tensor ||
        value.type.dtype != current->type.dtype ||
        !value.type.sameShape(current->type)) {
      error(stmt.values.front()->getRange(),
            "state '" + name + "' is " + current->type.str() +
                " but its next value is " + value.type.str());
      nextStates[name] = TV();
      return;
    }
    nextStates[name] = value;
    return;
  }
  case Stmt::Kind::Assign: {
    TV value = gen(*stmt.values.front());
    size_t n = stmt.targets.size();
    std::vector<TV> parts;
    if (!value.ok()) {
      parts.assign(n, TV());
    } else if (value.type.kind == SpecType::Kind::Tuple) {
      if (value.type.elements.size() != n) {
        error(stmt.range, "the right-hand side gives " +
                              llvm::Twine(value.type.elements.size()) +
                              " values but " + llvm::Twine(n) +
                              (n == 1 ? " name is" : " names are") +
                              " assigned");
        parts.assign(n, TV());
      } else {
        parts = value.parts;
      }
    } else if (n != 1) {
      error(stmt.range, "the right-hand side gives one value but " +
                            llvm::Twine(n) + " names are assigned");
      parts.assign(n, TV());
    } else {
      parts.push_back(value);
    }
    for (size_t i = 0; i < n; ++i) {
      auto [name, range] = stmt.targets[i];
      auto decl = layer ? tensorDecls.find(name) : tensorDecls.end();
      if (layer && decl != tensorDecls.end()) {
        const TensorDecl *d = decl->second;
        if (d->role != Role::Output) {
          error(range, "cannot assign to " + roleName(d->role) + " '" + name +
                           "'" +
                           (d->role == Role::State
                                ? "; update a state with 'next " + name +
                                      " = ...'"
                                : std::string()));
          continue;
        }
        if (outputs.count(name)) {
          error(range, "output '" + name + "' is assigned twice");
          continue;
        }
        TV part = parts[i];
        auto declaredType = declTypes.find(name);
        if (declaredType == declTypes.end())
          part = TV(); // its declaration failed and was reported
        if (part.ok()) {
          const SpecType &declared = declaredType->second;
          part = coerce(part, declared.dtype);
          if (part.type.kind != SpecType::Kind::Tensor ||
              part.type.dtype != declared.dtype ||
              !part.type.sameShape(declared)) {
            error(stmt.values.front()->getRange(),
                  "output '" + name + "' is declared " + declared.str() +
                      " but assigned " + part.type.str());
            part = TV();
          } else if (part.literal) {
            error(stmt.values.front()->getRange(),
                  "output '" + name + "' must be a tensor, not a number");
            part = TV();
          }
        }
        outputs[name] = part;
        bind(name, part, range);
        continue;
      }
      bind(name, parts[i], range);
    }
    return;
  }
  }
}

std::optional<std::vector<TV>>
Generator::genBody(const Body &body, llvm::ArrayRef<TV> params,
                   llvm::SMRange callRange, llvm::StringRef what,
                   bool isolated) {
  if (params.size() != body.params.size()) {
    error(callRange, what + " takes " + llvm::Twine(body.params.size()) +
                         " parameter" + (body.params.size() == 1 ? "" : "s") +
                         " but is given " + llvm::Twine(params.size()));
    note(body.range, "parameters declared here");
    return std::nullopt;
  }
  // Only function bodies count: nested 'do' bodies are not calls (the stack
  // check in gen() bounds them).
  bool isFn = llvm::any_of(module.fns,
                           [&](const FnDecl &fn) { return &fn.body == &body; });
  if (isFn && inlineDepth > 64) {
    error(callRange, "functions call each other more than 64 deep "
                     "(recursion is not supported)");
    return std::nullopt;
  }
  // Each call inlines the body again, so a recursive function would expand
  // without end (or, with two calls per body, exponentially).
  if (isolated && llvm::is_contained(activeFnBodies, &body)) {
    error(callRange, what + " calls itself (directly or through other "
                            "functions); recursion is not supported");
    return std::nullopt;
  }
  // Non-recursive functions can still expand exponentially (each calling
  // the previous one twice); bound the total work instead of hanging.
  if (isFn && ++inlinedCalls > kMaxInlinedCalls) {
    if (inlinedCalls == kMaxInlinedCalls + 1)
      error(callRange, "more than " + llvm::Twine(kMaxInlinedCalls) +
                           " function calls once inlined; the spec expands "
                           "too much");
    return std::nullopt;
  }
  if (isolated)
    activeFnBodies.push_back(&body);
  inlineDepth += isFn;
  // Functions are lexically scoped: the caller's names are out of sight.
  std::vector<llvm::StringMap<std::pair<TV, llvm::SMRange>>> callerScopes;
  if (isolated)
    std::swap(callerScopes, scopes);
  scopes.emplace_back();
  unsigned errorsBefore = diags.getNumErrors();
  for (auto [param, value] : llvm::zip_equal(body.params, params))
    bind(param.first, value, param.second);
  std::optional<std::vector<TV>> result;
  for (const StmtPtr &stmt : body.stmts) {
    if (stmt->kind == Stmt::Kind::Return) {
      if (result) {
        error(stmt->range, "a body returns once, at its end");
        break;
      }
      std::vector<TV> values;
      for (const ExprPtr &e : stmt->values)
        values.push_back(gen(*e));
      result = std::move(values);
      continue;
    }
    if (result) {
      error(stmt->range, "statement after 'return'");
      break;
    }
    if (stmt->kind == Stmt::Kind::Next) {
      error(stmt->range, "'next' updates a layer's state and is not allowed "
                         "in a body");
      continue;
    }
    genStmt(*stmt, nullptr);
  }
  scopes.pop_back();
  if (isolated) {
    std::swap(callerScopes, scopes);
    activeFnBodies.pop_back();
  }
  inlineDepth -= isFn;
  if (!result && diags.getNumErrors() == errorsBefore) {
    error(body.range, what + " must end with 'return'");
    return std::nullopt;
  }
  if (diags.getNumErrors() != errorsBefore)
    return std::nullopt;
  for (const TV &v : *result)
    if (!v.ok())
      return std::nullopt;
  return result;
}

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

mlir::Type Generator::mlirElementType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return builder.getF16Type();
  case DType::BF16:
    return builder.getBF16Type();
  case DType::F32:
    return builder.getF32Type();
  case DType::F64:
    return builder.getF64Type();
  case DType::C64:
    return ComplexType::get(builder.getF32Type());
  case DType::C128:
    return ComplexType::get(builder.getF64Type());
  case DType::Bool:
    return builder.getI1Type();
  }
  return builder.getF32Type();
}

RankedTensorType Generator::mlirType(const SpecType &type) {
  SmallVector<int64_t> shape;
  for (const Dim &d : type.shape)
    shape.push_back(d.isRuntime() ? ShapedType::kDynamic : d.size);
  return RankedTensorType::get(shape, mlirElementType(type.dtype));
}

SmallVector<Value> Generator::dynamicSizes(const SpecType &type) {
  SmallVector<Value> sizes;
  for (const Dim &d : type.shape)
    if (d.isRuntime())
      sizes.push_back(runtimeDimValues.lookup(d.symbol));
  return sizes;
}

Value Generator::emptyTensor(const SpecType &type) {
  RankedTensorType t = mlirType(type);
  return tensor::EmptyOp::create(builder, builder.getUnknownLoc(),
                                 t.getShape(), t.getElementType(),
                                 dynamicSizes(type));
}

Value Generator::scalarConstant(double value, DType dtype) {
  Location l = builder.getUnknownLoc();
  if (isComplex(dtype)) {
    mlir::Type part = mlirElementType(realPart(dtype));
    auto re = FloatAttr::get(part, value), im = FloatAttr::get(part, 0.0);
    return complex::ConstantOp::create(builder, l,
                                       mlirElementType(dtype),
                                       builder.getArrayAttr({re, im}));
  }
  return arith::ConstantOp::create(
      builder, l, FloatAttr::get(mlirElementType(dtype), value));
}

Value Generator::zeroTensor(const SpecType &type) {
  Value empty = emptyTensor(type);
  Value zero = scalarConstant(0.0, type.dtype);
  return linalg::FillOp::create(builder, builder.getUnknownLoc(),
                                ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

TV Generator::coerce(const TV &v, DType dtype) {
  if (!v.ok() || v.type.kind != SpecType::Kind::Tensor || v.type.dtype == dtype)
    return v;
  if (v.literal) {
    TV out = v;
    out.type.dtype = dtype;
    return out;
  }
  // Only a real value may be promoted, to the complex of its precision.
  if (!isComplex(dtype) || isComplex(v.type.dtype) ||
      complexOf(v.type.dtype) != dtype)
    return v;
  SpecType target = SpecType::tensor(dtype, v.type.shape);
  mlir::Type complexType = mlirElementType(dtype);
  DType real = v.type.dtype;
  return elementwise({v}, target, [&, complexType, real](OpBuilder &b,
                                                         Location l,
                                                         ValueRange x) {
    Value zero = arith::ConstantOp::create(
        b, l, FloatAttr::get(mlirElementType(real), 0.0));
    return complex::CreateOp::create(b, l, complexType, x[0], zero)
        .getResult();
  });
}

std::optional<DType> Generator::unifyDTypes(const TV &a, const TV &b,
                                            llvm::SMRange at,
                                            llvm::StringRef what) {
  if (a.literal && b.literal)
    return a.type.dtype;
  if (a.literal)
    return b.type.dtype;
  if (b.literal)
    return a.type.dtype;
  DType x = a.type.dtype, y = b.type.dtype;
  if (x == y)
    return x;
  if (complexOf(x) == y && !isComplex(x))
    return y;
  if (complexOf(y) == x && !isComplex(y))
    return x;
  error(at, "mismatched element types " + dtypeName(x) + " and " +
                dtypeName(y) + " in " + what);
  return std::nullopt;
}

std::optional<std::vector<Dim>>
Generator::broadcastShapes(const SpecType &a, const SpecType &b, llvm::SMRange at,
                           llvm::StringRef what) {
  size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim *x = i < a.shape.size() ? &a.shape[a.shape.size() - 1 - i]
                                      : nullptr;
    const Dim *y = i < b.shape.size() ? &b.shape[b.shape.size() - 1 - i]
                                      : nullptr;
    Dim &r = out[rank - 1 - i];
    if (!x || (!x->isRuntime() && x->size == 1 && y))
      r = *y;
    else if (!y || (!y->isRuntime() && y->size == 1))
      r = *x;
    else if (*x == *y)
      r = *x;
    else {
      error(at, "cannot broadcast " + a.str() + " with " + b.str() + " in " +
                    what + ": dimension " + x->str() + " vs " + y->str());
      return std::nullopt;
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Emitters
//===----------------------------------------------------------------------===//

TV Generator::elementwise(llvm::ArrayRef<TV> operands, const SpecType &resultType,
                          const ScalarFn &fn) {
  TV result;
  result.type = resultType;
  bool allScalar = llvm::all_of(operands, [](const TV &v) {
    return v.scalar || v.literal;
  });
  if (allScalar) {
    // Inside a combine body: plain scalar arithmetic.
    SmallVector<Value> xs;
    for (const TV &v : operands)
      xs.push_back(v.literal ? scalarConstant(*v.literal, v.type.dtype)
                             : v.value);
    result.scalar = true;
    result.value = fn(builder, builder.getUnknownLoc(), xs);
    return result;
  }
  int64_t rank = resultType.rank();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (const TV &v : operands) {
    if (v.literal)
      continue;
    int64_t r = v.type.rank();
    SmallVector<AffineExpr> exprs;
    for (int64_t j = 0; j < r; ++j) {
      int64_t d = rank - r + j;
      const Dim &dim = v.type.shape[j];
      bool broadcast = !dim.isRuntime() && dim.size == 1 &&
                       resultType.shape[d] != Dim::constant(1);
      exprs.push_back(broadcast ? builder.getAffineConstantExpr(0)
                                : builder.getAffineDimExpr(d));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, &context));
    inputs.push_back(v.value);
  }
  maps.push_back(builder.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = emptyTensor(resultType);
  auto generic = linalg::GenericOp::create(
      builder, builder.getUnknownLoc(), TypeRange{init.getType()}, inputs,
      ValueRange{init}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        SmallVector<Value> xs;
        size_t next = 0;
        for (const TV &v : operands) {
          if (v.literal) {
            OpBuilder::InsertionGuard guard(builder);
            builder.setInsertionPoint(b.getInsertionBlock(),
                                      b.getInsertionPoint());
            xs.push_back(scalarConstant(*v.literal, v.type.dtype));
          } else {
            xs.push_back(args[next++]);
          }
        }
        linalg::YieldOp::create(b, l, fn(b, l, xs));
      });
  result.value = generic.getResult(0);
  return result;
}

Value Generator::mappedElementwise(llvm::ArrayRef<Value> operands,
                                   llvm::ArrayRef<AffineMap> maps,
                                   const SpecType &resultType, const ScalarFn &fn) {
  int64_t rank = resultType.rank();
  SmallVector<AffineMap> allMaps(maps);
  allMaps.push_back(builder.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = emptyTensor(resultType);
  auto generic = linalg::GenericOp::create(
      builder, builder.getUnknownLoc(), TypeRange{init.getType()}, operands,
      ValueRange{init}, allMaps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, fn(b, l, args.drop_back()));
      });
  return generic.getResult(0);
}

TV Generator::reduce(const TV &x, int64_t axis, llvm::StringRef kind) {
  std::vector<Dim> shape = x.type.shape;
  shape.erase(shape.begin() + axis);
  TV result;
  result.type = SpecType::tensor(x.type.dtype, shape);
  int64_t rank = x.type.rank();
  SmallVector<AffineExpr> outExprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      outExprs.push_back(builder.getAffineDimExpr(d));
  SmallVector<AffineMap> maps{builder.getMultiDimIdentityMap(rank),
                              AffineMap::get(rank, 0, outExprs, &context)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[axis] = utils::IteratorType::reduction;
  bool isMax = kind == "max";
  Value init = emptyTensor(result.type);
  Value start =
      isMax ? scalarConstant(-std::numeric_limits<double>::infinity(),
                             x.type.dtype)
            : scalarConstant(0.0, x.type.dtype);
  init = linalg::FillOp::create(builder, builder.getUnknownLoc(),
                                ValueRange{start}, ValueRange{init})
             .getResult(0);
  bool complexSum = isComplex(x.type.dtype);
  auto generic = linalg::GenericOp::create(
      builder, builder.getUnknownLoc(), TypeRange{init.getType()},
      ValueRange{x.value}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value r;
        if (isMax)
          r = arith::MaximumFOp::create(b, l, args[0], args[1]);
        else if (complexSum)
          r = complex::AddOp::create(b, l, args[0], args[1]);
        else
          r = arith::AddFOp::create(b, l, args[0], args[1]);
        linalg::YieldOp::create(b, l, r);
      });
  result.value = generic.getResult(0);
  return result;
}

TV Generator::einsum(llvm::StringRef spec, llvm::ArrayRef<TV> operands,
                     llvm::SMRange at, llvm::ArrayRef<llvm::SMRange> ranges) {
  auto arrow = spec.find("->");
  if (arrow == llvm::StringRef::npos) {
    error(at, "einsum spec '" + spec + "' needs '->' and the output labels");
    return TV();
  }
  SmallVector<llvm::StringRef> inputs;
  spec.take_front(arrow).split(inputs, ',');
  llvm::StringRef output = spec.drop_front(arrow + 2).trim();
  if (inputs.size() != operands.size()) {
    error(at, "einsum spec '" + spec + "' names " +
                  llvm::Twine(inputs.size()) + " operands but " +
                  llvm::Twine(operands.size()) + " are given");
    return TV();
  }
  // Labels in order: output labels, then reduced ones as they appear.
  std::string labels;
  llvm::DenseMap<char, Dim> sizes;
  for (char c : output) {
    if (!std::isalpha(static_cast<unsigned char>(c)) ||
        labels.find(c) != std::string::npos) {
      error(at, "einsum output labels must be distinct letters, got '" +
                    output + "'");
      return TV();
    }
    labels.push_back(c);
  }
  DType dtype = operands.front().type.dtype;
  for (auto [i, in] : llvm::enumerate(inputs)) {
    in = in.trim();
    const TV &v = operands[i];
    if (v.type.dtype != dtype) {
      error(ranges[i], "einsum operands must share one element type, got " +
                           dtypeName(dtype) + " and " +
                           dtypeName(v.type.dtype));
      return TV();
    }
    if (static_cast<int64_t>(in.size()) != v.type.rank()) {
      error(ranges[i], "einsum labels '" + in + "' name " +
                           llvm::Twine(in.size()) + " dims but operand " +
                           llvm::Twine(i) + " is " + v.type.str());
      return TV();
    }
    for (auto [j, c] : llvm::enumerate(in)) {
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        error(at, "einsum labels must be letters, got '" + in + "'");
        return TV();
      }
      const Dim &d = v.type.shape[j];
      auto [it, inserted] = sizes.try_emplace(c, d);
      if (!inserted && it->second != d) {
        error(ranges[i], llvm::Twine("einsum label '") + llvm::Twine(c) +
                             "' is " + it->second.str() + " in one operand "
                             "and " + d.str() + " in another");
        return TV();
      }
      if (labels.find(c) == std::string::npos)
        labels.push_back(c);
    }
  }
  std::vector<Dim> outShape;
  for (char c : output) {
    auto it = sizes.find(c);
    if (it == sizes.end()) {
      error(at, llvm::Twine("einsum output label '") + llvm::Twine(c) +
                    "' appears in no operand");
      return TV();
    }
    outShape.push_back(it->second);
  }
  TV result;
  result.type = SpecType::tensor(dtype, outShape);
  int64_t numLoops = labels.size();
  auto mapOf = [&](llvm::StringRef ls) {
    SmallVector<AffineExpr> exprs;
    for (char c : ls)
      exprs.push_back(builder.getAffineDimExpr(labels.find(c)));
    return AffineMap::get(numLoops, 0, exprs, &context);
  };
  SmallVector<AffineMap> maps;
  SmallVector<Value> values;
  for (auto [i, in] : llvm::enumerate(inputs)) {
    maps.push_back(mapOf(in.trim()));
    values.push_back(operands[i].value);
  }
  maps.push_back(mapOf(output));
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < numLoops; ++d)
    iterators.push_back(d < static_cast<int64_t>(output.size())
                            ? utils::IteratorType::parallel
                            : utils::IteratorType::reduction);
  Value init = zeroTensor(result.type);
  bool cplx = isComplex(dtype);
  auto generic = linalg::GenericOp::create(
      builder, loc(at), TypeRange{init.getType()}, values, ValueRange{init},
      maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value acc = args.back();
        Value prod = args[0];
        for (Value x : args.drop_front().drop_back())
          prod = cplx ? complex::MulOp::create(b, l, prod, x).getResult()
                      : arith::MulFOp::create(b, l, prod, x).getResult();
        Value sum = cplx ? complex::AddOp::create(b, l, acc, prod).getResult()
                         : arith::AddFOp::create(b, l, acc, prod).getResult();
        linalg::YieldOp::create(b, l, sum);
      });
  result.value = generic.getResult(0);
  return result;
}

bool Generator::verifyBuilt(Operation *op, llvm::SMRange at,
                            llvm::StringRef callee) {
  std::string message;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    if (succeeded(mlir::verify(op)))
      return true;
  }
  error(at, "invalid arguments to '" + callee + "': " + message);
  return false;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

namespace {
/// The closest name among `candidates`, for "did you mean" hints.
std::string closest(llvm::StringRef name,
                    const std::vector<std::string> &candidates) {
  std::string best;
  // Short names get no guesses: 'W' is one edit away from every 1-letter
  // name.
  unsigned bestDistance = std::min<unsigned>(3, name.size() / 3 + 1);
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}
} // namespace

std::optional<int64_t> Generator::constInt(const Expr &arg,
                                           llvm::StringRef what) {
  if (auto *num = llvm::dyn_cast<NumberExpr>(&arg)) {
    if (num->isInteger && num->value <= 9.0e15)
      return static_cast<int64_t>(num->value);
  } else if (auto *neg = llvm::dyn_cast<UnaryExpr>(&arg)) {
    if (std::optional<int64_t> v = constInt(*neg->operand, what))
      return -*v;
    return std::nullopt;
  } else if (auto *name = llvm::dyn_cast<NameExpr>(&arg)) {
    auto it = dims.find(name->name);
    if (it != dims.end() && !it->second.isRuntime())
      return it->second.size;
  }
  error(arg.getRange(), what + " must be a compile-time integer (a number "
                               "or a compile-time dim)");
  return std::nullopt;
}

std::optional<double> Generator::constNumber(const Expr &arg,
                                             llvm::StringRef what) {
  if (auto *num = llvm::dyn_cast<NumberExpr>(&arg))
    return num->value;
  if (auto *neg = llvm::dyn_cast<UnaryExpr>(&arg)) {
    if (std::optional<double> v = constNumber(*neg->operand, what))
      return -*v;
    return std::nullopt;
  }
  if (auto *name = llvm::dyn_cast<NameExpr>(&arg)) {
    auto it = dims.find(name->name);
    if (it != dims.end() && !it->second.isRuntime())
      return static_cast<double>(it->second.size);
  }
  // Arithmetic and builtins of numbers fold to a number (`scale=rsqrt(dh)`,
  // `1 / D`); generating anything else would leave IR behind.
  std::function<bool(const Expr &)> isNumeric = [&](const Expr &e) {
    if (llvm::isa<NumberExpr>(e))
      return true;
    if (auto *n = llvm::dyn_cast<NameExpr>(&e)) {
      auto it = dims.find(n->name);
      return !lookup(n->name) && it != dims.end() && !it->second.isRuntime();
    }
    if (auto *u = llvm::dyn_cast<UnaryExpr>(&e))
      return isNumeric(*u->operand);
    if (auto *b = llvm::dyn_cast<BinaryExpr>(&e))
      return b->op != '@' && isNumeric(*b->lhs) && isNumeric(*b->rhs);
    if (auto *c = llvm::dyn_cast<CallExpr>(&e))
      return c->kwargs.empty() && !c->body && !fns.count(c->callee) &&
             llvm::all_of(c->args,
                          [&](const ExprPtr &a) { return isNumeric(*a); });
    return false;
  };
  if (isNumeric(arg)) {
    TV v = gen(arg);
    if (!v.ok())
      return std::nullopt;
    if (v.literal)
      return *v.literal;
  }
  error(arg.getRange(), what + " must be a number");
  return std::nullopt;
}

std::optional<int64_t> Generator::resolveAxis(const Expr &arg,
                                              const SpecType &type) {
  if (auto *name = llvm::dyn_cast<NameExpr>(&arg)) {
    auto it = dims.find(name->name);
    if (it == dims.end()) {
      error(arg.getRange(), "unknown dimension '" + name->name +
                                "' given as an axis");
      return std::nullopt;
    }
    // Match by name first; a compile-time dim may share its size with
    // another, and only then does the size decide.
    bool byName = llvm::any_of(type.shape, [&](const Dim &d) {
      return d.symbol == name->name || d.name == name->name;
    });
    std::optional<int64_t> found;
    for (auto [i, d] : llvm::enumerate(type.shape)) {
      // Without a name match, only an unnamed (literal) size may match: a
      // dim named S is never axis W, even when both are 64.
      bool match = byName ? d.symbol == name->name || d.name == name->name
                          : d.name.empty() && d == it->second;
      if (!match)
        continue;
      if (found) {
        error(arg.getRange(), "axis '" + name->name + "' is ambiguous: " +
                                  type.str() +
                                  " has it more than once; give its index");
        return std::nullopt;
      }
      found = i;
    }
    if (!found)
      error(arg.getRange(), "axis '" + name->name + "' is not a dimension of " +
                                type.str());
    return found;
  }
  std::optional<int64_t> index = constInt(arg, "an axis");
  if (!index)
    return std::nullopt;
  int64_t axis = *index < 0 ? *index + type.rank() : *index;
  if (axis < 0 || axis >= type.rank()) {
    error(arg.getRange(), "axis " + llvm::Twine(*index) +
                              " is out of range for " + type.str());
    return std::nullopt;
  }
  return axis;
}

TV Generator::gen(const Expr &expr) {
  bool allowIndices = std::exchange(readingIndices, false);
  // The parser bounds the nesting of one body, but inlined functions and
  // 'do' bodies stack their nestings on each other, and a level costs tens
  // of kilobytes of stack under ASan. Stop before the stack runs out (and
  // say so once per layer).
  if (stackBase - llvm::getStackPointer() > stackBudget) {
    if (!stackReported)
      error(expr.getRange(), "expression nested too deeply once functions "
                             "and bodies are inlined");
    stackReported = true;
    return TV();
  }
  switch (expr.getKind()) {
  case Expr::Kind::Number: {
    TV tv;
    tv.type = SpecType::tensor(DType::F32, {});
    tv.type.weak = true;
    tv.literal = llvm::cast<NumberExpr>(expr).value;
    return tv;
  }
  case Expr::Kind::String: {
    TV tv;
    tv.type = SpecType::string();
    return tv;
  }
  case Expr::Kind::Name: {
    const auto &name = llvm::cast<NameExpr>(expr).name;
    if (const TV *v = lookup(name)) {
      // Typed as the gates' shape in the language but i32 in the IR: any
      // other use would build invalid IR.
      if (v->indices && !allowIndices) {
        error(expr.getRange(), "'" + name + "' holds the expert indices "
                                            "of 'route_topk'; only 'moe' "
                                            "can use them");
        return TV();
      }
      return *v;
    }
    auto dim = dims.find(name);
    if (dim != dims.end()) {
      if (dim->second.isRuntime()) {
        error(expr.getRange(), "runtime dimension '" + name +
                                   "' has no value at compile time");
        return TV();
      }
      TV tv;
      tv.type = SpecType::tensor(DType::F32, {});
      tv.type.weak = true;
      tv.literal = static_cast<double>(dim->second.size);
      return tv;
    }
    auto decl = tensorDecls.find(name);
    if (decl != tensorDecls.end() && decl->second->role == Role::Output) {
      error(expr.getRange(), "output '" + name + "' is read before it is "
                                                 "assigned");
      return TV();
    }
    // A declaration whose type failed was reported; its uses say no more.
    if (decl != tensorDecls.end() && !declTypes.count(name))
      return TV();
    std::vector<std::string> candidates;
    for (auto &scope : scopes)
      for (auto &entry : scope)
        candidates.push_back(entry.getKey().str());
    for (auto &entry : dims)
      candidates.push_back(entry.getKey().str());
    error(expr.getRange(), "unknown name '" + name + "'");
    std::string hint = closest(name, candidates);
    if (!hint.empty())
      note(expr.getRange(), "did you mean '" + hint + "'?");
    return TV();
  }
  case Expr::Kind::Tuple: {
    std::vector<TV> parts;
    bool ok = true;
    for (const ExprPtr &e : llvm::cast<TupleExpr>(expr).elements) {
      parts.push_back(gen(*e));
      ok &= parts.back().ok();
    }
    return ok ? TV::tuple(std::move(parts)) : TV();
  }
  case Expr::Kind::Unary: {
    const auto &unary = llvm::cast<UnaryExpr>(expr);
    TV x = gen(*unary.operand);
    if (!x.ok())
      return x;
    if (x.type.kind != SpecType::Kind::Tensor || x.type.dtype == DType::Bool) {
      error(expr.getRange(), "cannot negate " + x.type.str());
      return TV();
    }
    if (x.literal) {
      x.literal = -*x.literal;
      return x;
    }
    bool cplx = isComplex(x.type.dtype);
    return elementwise({x}, x.type, [cplx](OpBuilder &b, Location l,
                                           ValueRange v) -> Value {
      if (cplx)
        return complex::NegOp::create(b, l, v[0]);
      return arith::NegFOp::create(b, l, v[0]);
    });
  }
  case Expr::Kind::Binary: {
    const auto &bin = llvm::cast<BinaryExpr>(expr);
    TV lhs = gen(*bin.lhs), rhs = gen(*bin.rhs);
    if (!lhs.ok() || !rhs.ok())
      return TV();
    for (const TV *v : {&lhs, &rhs})
      if (v->type.kind != SpecType::Kind::Tensor ||
          v->type.dtype == DType::Bool) {
        error(bin.opRange, llvm::Twine("operator '") + llvm::Twine(bin.op) +
                               "' takes numeric tensors, got " + v->type.str());
        return TV();
      }
    if (bin.op == '@') {
      if (lhs.literal || rhs.literal || lhs.type.rank() < 1 ||
          rhs.type.rank() < 2) {
        error(bin.opRange, "'@' multiplies a tensor [..., n] by a matrix "
                           "[n, m] (or batches [..., p, n] @ [..., n, m]); "
                           "got " + lhs.type.str() + " @ " + rhs.type.str());
        return TV();
      }
      // Build an einsum: x[..., n] @ W[n, m], or batched matrices.
      std::string letters = "abcdefghijklmnopqrstuvw";
      int64_t lr = lhs.type.rank(), rr = rhs.type.rank();
      if (lr > 20 || rr > 20) {
        error(bin.opRange, "'@' operands of rank above 20");
        return TV();
      }
      std::string l, r, o;
      if (rr == 2) {
        l = letters.substr(0, lr - 1) + "y";
        r = "yz";
        o = letters.substr(0, lr - 1) + "z";
      } else {
        if (lr != rr) {
          error(bin.opRange, "batched '@' needs operands of one rank, got " +
                                 lhs.type.str() + " @ " + rhs.type.str());
          return TV();
        }
        std::string batch = letters.substr(0, lr - 2);
        l = batch + "xy";
        r = batch + "yz";
        o = batch + "xz";
      }
      std::optional<DType> dtype =
          unifyDTypes(lhs, rhs, bin.opRange, "'@'");
      if (!dtype)
        return TV();
      // Name the contracted sizes in the message, not einsum labels, and
      // the operands as written (before a real one is promoted).
      const Dim &n = lhs.type.shape.back();
      const Dim &m = rhs.type.shape[rr - 2];
      if (n != m) {
        error(bin.opRange, "'@' contracts " + lhs.type.str() + " with " +
                               rhs.type.str() + ": inner dimensions " +
                               n.str() + " and " + m.str() + " differ");
        return TV();
      }
      lhs = coerce(lhs, *dtype);
      rhs = coerce(rhs, *dtype);
      return einsum(l + "," + r + "->" + o, {lhs, rhs}, bin.opRange,
                    {bin.lhs->getRange(), bin.rhs->getRange()});
    }
    std::string what = (llvm::Twine("'") + llvm::Twine(bin.op) + "'").str();
    std::optional<DType> dtype = unifyDTypes(lhs, rhs, bin.opRange, what);
    if (!dtype)
      return TV();
    if (lhs.literal && rhs.literal) {
      double a = *lhs.literal, b = *rhs.literal, r = 0;
      switch (bin.op) {
      case '+':
        r = a + b;
        break;
      case '-':
        r = a - b;
        break;
      case '*':
        r = a * b;
        break;
      case '/':
        r = a / b;
        break;
      }
      TV out = lhs;
      out.literal = r;
      return out;
    }
    std::optional<std::vector<Dim>> shape =
        broadcastShapes(lhs.type, rhs.type, bin.opRange, what);
    if (!shape)
      return TV();
    lhs = coerce(lhs, *dtype);
    rhs = coerce(rhs, *dtype);
    bool cplx = isComplex(*dtype);
    char op = bin.op;
    return elementwise(
        {lhs, rhs}, SpecType::tensor(*dtype, *shape),
        [cplx, op](OpBuilder &b, Location l, ValueRange v) -> Value {
          switch (op) {
          case '+':
            return cplx ? complex::AddOp::create(b, l, v[0], v[1]).getResult()
                        : arith::AddFOp::create(b, l, v[0], v[1]).getResult();
          case '-':
            return cplx ? complex::SubOp::create(b, l, v[0], v[1]).getResult()
                        : arith::SubFOp::create(b, l, v[0], v[1]).getResult();
          case '*':
            return cplx ? complex::MulOp::create(b, l, v[0], v[1]).getResult()
                        : arith::MulFOp::create(b, l, v[0], v[1]).getResult();
          default:
            return cplx ? complex::DivOp::create(b, l, v[0], v[1]).getResult()
                        : arith::DivFOp::create(b, l, v[0], v[1]).getResult();
          }
        });
  }
  case Expr::Kind::Call:
    return genCall(llvm::cast<CallExpr>(expr));
  }
  return TV();
}

bool Generator::checkCall(const CallExpr &call, size_t minPositional,
                          size_t maxPositional,
                          llvm::ArrayRef<llvm::StringRef> keywords,
                          bool body) {
  bool ok = true;
  size_t n = call.args.size();
  if (n < minPositional || n > maxPositional) {
    // `scan` and `blocks` take any number: no "1 to 2^64-1".
    std::string expected =
        minPositional == maxPositional
            ? std::to_string(minPositional)
            : maxPositional == SIZE_MAX
                  ? "at least " + std::to_string(minPositional)
                  : std::to_string(minPositional) + " to " +
                        std::to_string(maxPositional);
    error(call.getRange(), "'" + call.callee + "' takes " + expected +
                               " positional argument" +
                               (expected == "1" ? "" : "s") + ", got " +
                               llvm::Twine(n));
    ok = false;
  }
  for (const KeywordArg &kw : call.kwargs) {
    if (llvm::is_contained(keywords, kw.name))
      continue;
    std::string known;
    for (llvm::StringRef k : keywords)
      known += (known.empty() ? "" : ", ") + k.str();
    error(kw.nameRange, "'" + call.callee + "' has no argument '" + kw.name +
                            "'" +
                            (known.empty() ? std::string()
                                           : "; it takes " + known));
    ok = false;
  }
  if (call.body && !body) {
    error(call.body->range, "'" + call.callee + "' takes no 'do' body");
    ok = false;
  } else if (!call.body && body) {
    error(call.getRange(),
          "'" + call.callee + "' needs a 'do (...) { ... }' body");
    ok = false;
  }
  return ok;
}

TV Generator::genCall(const CallExpr &call) {
  auto fn = fns.find(call.callee);
  if (fn != fns.end()) {
    if (!call.kwargs.empty()) {
      error(call.kwargs.front().nameRange,
            "function '" + call.callee + "' takes no keyword arguments");
      return TV();
    }
    if (call.body) {
      error(call.body->range, "function '" + call.callee +
                                  "' takes no 'do' body");
      return TV();
    }
    std::vector<TV> args;
    for (const ExprPtr &a : call.args) {
      args.push_back(gen(*a));
      if (!args.back().ok())
        return TV();
    }
    std::optional<std::vector<TV>> results =
        genBody(fn->second->body, args, call.getRange(),
                "function '" + call.callee + "'", /*isolated=*/true);
    if (!results)
      return TV();
    if (results->size() == 1)
      return results->front();
    return TV::tuple(std::move(*results));
  }
  bool handled = false;
  TV result = genBuiltin(call, handled);
  if (handled)
    return result;
  std::vector<std::string> candidates;
  for (auto &entry : fns)
    candidates.push_back(entry.getKey().str());
  for (const char *builtin : builtinNames())
    candidates.push_back(builtin);
  error(call.calleeRange, "unknown function '" + call.callee + "'");
  std::string hint = closest(call.callee, candidates);
  if (!hint.empty())
    note(call.calleeRange, "did you mean '" + hint + "'?");
  return TV();
}
