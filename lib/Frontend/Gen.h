//===- Gen.h - the checker/emitter shared by MLIRGen files ------*- C++ -*-===//
//
// Part of the Recur project.
//
// Private to lib/Frontend: the Generator walks a layer once, checking names,
// symbolic shapes and dtypes, and emitting recur IR for what checks.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_FRONTEND_GEN_H
#define RECUR_LIB_FRONTEND_GEN_H

#include "recur/Frontend/AST.h"
#include "recur/Frontend/Diagnostics.h"
#include "recur/Frontend/MLIRGen.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <optional>

namespace recur::frontend {

/// A checked value: its language type and, once emitted, its SSA value. A
/// number literal stays unmaterialized (`literal`) until it meets a dtype.
/// Inside a scan's combine body values are scalars (`scalar`).
struct TV {
  SpecType type;
  mlir::Value value;
  std::optional<double> literal;
  bool scalar = false;
  /// The i32 expert indices of 'route_topk': only 'moe' may read them.
  bool indices = false;
  /// The values of a tuple (type.kind == Tuple).
  std::vector<TV> parts;

  bool ok() const { return type.isValid(); }
  static TV invalid() { return TV(); }
  static TV tuple(std::vector<TV> parts) {
    TV tv;
    std::vector<SpecType> types;
    for (const TV &p : parts)
      types.push_back(p.type);
    tv.type = SpecType::tuple(std::move(types));
    tv.parts = std::move(parts);
    return tv;
  }
};

using ScalarFn =
    std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                              mlir::ValueRange)>;

class Generator {
public:
  Generator(const Module &module, mlir::MLIRContext &context,
            const CompileOptions &options, DiagnosticEngine &diags,
            llvm::StringRef fileName);

  mlir::OwningOpRef<mlir::ModuleOp> run();

  // --- Shared with Builtins.cpp --------------------------------------------
  TV gen(const Expr &expr);
  TV genCall(const CallExpr &call);
  TV genBuiltin(const CallExpr &call, bool &handled);
  TV genRecurBuiltin(const CallExpr &call, bool &handled);
  /// Checks a builtin call's shape: `minPositional..maxPositional`
  /// positional arguments (SIZE_MAX: no limit), keywords among `keywords`,
  /// and a `do` body exactly when `body`. Reports every mismatch.
  bool checkCall(const CallExpr &call, size_t minPositional,
                 size_t maxPositional, llvm::ArrayRef<llvm::StringRef> keywords,
                 bool body);
  /// Every builtin's name, for "did you mean" hints.
  static llvm::ArrayRef<const char *> builtinNames();
  /// Runs a statement list in a new scope that sees `params`; returns the
  /// values of its closing `return`, or nothing after an error.
  /// A function body (`isolated`) sees only its parameters and the layer's
  /// dims; a `do` body also sees the names bound around it.
  std::optional<std::vector<TV>>
  genBody(const Body &body, llvm::ArrayRef<TV> params, llvm::SMRange callRange,
          llvm::StringRef what, bool isolated = false);

  mlir::Type mlirElementType(DType dtype);
  mlir::RankedTensorType mlirType(const SpecType &type);
  /// The dynamic sizes of `type` (one index value per runtime dim).
  llvm::SmallVector<mlir::Value> dynamicSizes(const SpecType &type);
  mlir::Value emptyTensor(const SpecType &type);
  mlir::Value zeroTensor(const SpecType &type);
  /// Materializes a literal or scalar as an SSA scalar of `dtype`.
  mlir::Value scalarConstant(double value, DType dtype);

  /// Broadcasting elementwise op: `operands` align on trailing dims (numpy
  /// rules), literal operands are created inside the body.
  TV elementwise(llvm::ArrayRef<TV> operands, const SpecType &resultType,
                 const ScalarFn &fn);
  /// Elementwise op whose operands are indexed by explicit maps over the
  /// result's dims (tensor operands only).
  mlir::Value mappedElementwise(llvm::ArrayRef<mlir::Value> operands,
                                llvm::ArrayRef<mlir::AffineMap> maps,
                                const SpecType &resultType, const ScalarFn &fn);
  /// Reduces `x` over `axis` with `kind` ("sum" or "max").
  TV reduce(const TV &x, int64_t axis, llvm::StringRef kind);
  /// An einsum contraction; checks labels and sizes, reports at `at`.
  TV einsum(llvm::StringRef spec, llvm::ArrayRef<TV> operands,
            llvm::SMRange at, llvm::ArrayRef<llvm::SMRange> operandRanges);

  /// Checks `a` and `b` broadcast; reports at `at` and returns the shape.
  std::optional<std::vector<Dim>> broadcastShapes(const SpecType &a,
                                                  const SpecType &b,
                                                  llvm::SMRange at,
                                                  llvm::StringRef what);
  /// Unifies dtypes for arithmetic (real with complex of the same precision
  /// promotes); reports at `at`.
  std::optional<DType> unifyDTypes(const TV &a, const TV &b, llvm::SMRange at,
                                   llvm::StringRef what);
  /// Converts a literal or a real value to `dtype` (promoting to complex).
  TV coerce(const TV &v, DType dtype);

  /// Resolves an axis argument (a dim name or an integer, negative counts
  /// from the end) against `type`; reports at the argument.
  std::optional<int64_t> resolveAxis(const Expr &arg, const SpecType &type);
  /// A compile-time integer argument (a literal or a compile-time dim).
  std::optional<int64_t> constInt(const Expr &arg, llvm::StringRef what);
  std::optional<double> constNumber(const Expr &arg, llvm::StringRef what);

  void error(llvm::SMRange range, const llvm::Twine &message) {
    diags.error(range, message);
  }
  void note(llvm::SMRange range, const llvm::Twine &message) {
    diags.note(range, message);
  }

  mlir::OpBuilder builder;
  mlir::Location loc(llvm::SMRange range);
  DiagnosticEngine &diags;

  /// Verifies a freshly built op; a failure becomes a front end error at
  /// `at` (the checks above catch the common cases with better names).
  bool verifyBuilt(mlir::Operation *op, llvm::SMRange at,
                   llvm::StringRef callee);

  /// The scope stack of bound names.
  std::vector<llvm::StringMap<std::pair<TV, llvm::SMRange>>> scopes;
  const TV *lookup(llvm::StringRef name, llvm::SMRange *where = nullptr);
  bool bind(llvm::StringRef name, TV value, llvm::SMRange range);

  /// Compile-time and runtime dims of the current layer.
  llvm::StringMap<Dim> dims;
  llvm::StringMap<mlir::Value> runtimeDimValues;
  /// The fewest positions of each runtime dim the layer's slices read (a
  /// call with fewer would read outside its tensors): the function's
  /// `recur.min_sizes`, checked by the runtime.
  llvm::StringMap<int64_t> runtimeDimMinimum;
  llvm::StringMap<const FnDecl *> fns;

private:
  bool genLayer(const LayerDecl &layer, mlir::ModuleOp module);
  std::optional<Dim> evalDim(const DimExpr &expr);
  std::optional<SpecType> resolveType(const TypeExpr &type);
  void genStmt(const Stmt &stmt, const LayerDecl *layer);

  const Module &module;
  mlir::MLIRContext &context;
  /// `dtype` as the layer computes it: every float and complex type widened
  /// to f64 / c128 under CompileOptions::promoteToF64.
  DType promoted(DType dtype) const;

  const CompileOptions &options;
  std::string fileName;

  // Per layer: declarations by name, and what statements did with them.
  llvm::StringMap<const TensorDecl *> tensorDecls;
  llvm::StringMap<TV> nextStates;
  llvm::StringMap<TV> outputs;
  /// The types of the declarations that resolved (not those with errors).
  llvm::StringMap<SpecType> declTypes;
  /// The -D names some compiled layer declares.
  llvm::StringSet<> usedDefines;
  unsigned inlineDepth = 0;
  /// Function calls inlined so far in this spec, against a budget.
  unsigned inlinedCalls = 0;
  static constexpr unsigned kMaxInlinedCalls = 20000;

public:
  /// Set by 'moe' just before it generates its indices argument; gen()
  /// clears it, so only a name read directly there sees the indices.
  bool readingIndices = false;

private:
  /// The stack pointer when generation began and how much of the stack
  /// gen() may use below it (see gen()).
  uintptr_t stackBase;
  uint64_t stackBudget;
  bool stackReported = false;
  /// The function bodies being inlined, innermost last (to catch recursion).
  std::vector<const Body *> activeFnBodies;
};

} // namespace recur::frontend

#endif // RECUR_LIB_FRONTEND_GEN_H
