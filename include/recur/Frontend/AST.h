//===- AST.h - syntax tree of the Recur language ----------------*- C++ -*-===//
//
// Part of the Recur project.
//
// The parser builds this tree; MLIRGen (lib/Frontend/MLIRGen.cpp) checks it
// and emits recur IR in one walk.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_FRONTEND_AST_H
#define RECUR_FRONTEND_AST_H

#include "recur/Frontend/Types.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/SMLoc.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace recur::frontend {

//===----------------------------------------------------------------------===//
// Declarations' pieces
//===----------------------------------------------------------------------===//

/// A dimension expression in a declaration: `64`, `D`, `D / H`, `2 * W`.
struct DimExpr {
  enum class Kind { Int, Name, Binary };
  Kind kind;
  llvm::SMRange range;
  int64_t value = 0;              // Int
  std::string name;               // Name
  char op = 0;                    // Binary: + - * /
  std::unique_ptr<DimExpr> lhs, rhs;
};

/// `f32[B, T, D]`, or a scalar `f32`.
struct TypeExpr {
  DType dtype = DType::F32;
  llvm::SMRange range;
  std::vector<std::unique_ptr<DimExpr>> dims;
};

class Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// `init normal(0.02)`, `init zeros`, `init c0` (a state reset to a param).
struct InitRule {
  std::string name;
  llvm::SMRange range;
  std::vector<ExprPtr> args;
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind { Number, String, Name, Unary, Binary, Call, Tuple };

  Expr(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;

  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }
  llvm::SMLoc getLoc() const { return range.Start; }

private:
  Kind kind;
  llvm::SMRange range;
};

class NumberExpr : public Expr {
public:
  NumberExpr(llvm::SMRange range, double value, bool isInteger)
      : Expr(Kind::Number, range), value(value), isInteger(isInteger) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Number; }
  double value;
  bool isInteger;
};

class StringExpr : public Expr {
public:
  StringExpr(llvm::SMRange range, std::string value)
      : Expr(Kind::String, range), value(std::move(value)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::String; }
  std::string value;
};

class NameExpr : public Expr {
public:
  NameExpr(llvm::SMRange range, std::string name)
      : Expr(Kind::Name, range), name(std::move(name)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }
  std::string name;
};

class UnaryExpr : public Expr {
public:
  UnaryExpr(llvm::SMRange range, char op, ExprPtr operand)
      : Expr(Kind::Unary, range), op(op), operand(std::move(operand)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Unary; }
  char op;
  ExprPtr operand;
};

class BinaryExpr : public Expr {
public:
  BinaryExpr(llvm::SMRange range, llvm::SMRange opRange, char op, ExprPtr lhs,
             ExprPtr rhs)
      : Expr(Kind::Binary, range), opRange(opRange), op(op),
        lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }
  llvm::SMRange opRange;
  char op; // + - * / @
  ExprPtr lhs, rhs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

/// A keyword argument `name=value`.
struct KeywordArg {
  std::string name;
  llvm::SMRange nameRange;
  ExprPtr value;
};

/// The trailing body of a call: `do (p1, p2) { stmts; return e1, e2 }`.
struct Body {
  llvm::SMRange range;
  std::vector<std::pair<std::string, llvm::SMRange>> params;
  std::vector<StmtPtr> stmts;
};

class CallExpr : public Expr {
public:
  CallExpr(llvm::SMRange range, std::string callee, llvm::SMRange calleeRange)
      : Expr(Kind::Call, range), callee(std::move(callee)),
        calleeRange(calleeRange) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }
  std::string callee;
  llvm::SMRange calleeRange;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;
  std::unique_ptr<Body> body;

  /// The keyword argument `name`, or null.
  const KeywordArg *getKeyword(llvm::StringRef name) const {
    for (const KeywordArg &kw : kwargs)
      if (kw.name == name)
        return &kw;
    return nullptr;
  }
};

/// `(a, b)`: several values, e.g. the inputs of a scan.
class TupleExpr : public Expr {
public:
  TupleExpr(llvm::SMRange range) : Expr(Kind::Tuple, range) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Tuple; }
  std::vector<ExprPtr> elements;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

struct Stmt {
  enum class Kind { Assign, Next, Return };
  Kind kind;
  llvm::SMRange range;
  /// Assign: the names bound (one per result); Next: the state updated.
  std::vector<std::pair<std::string, llvm::SMRange>> targets;
  /// Assign and Next: one expression; Return: one per returned value.
  std::vector<ExprPtr> values;
};

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

/// `dim D = 64` (compile-time, overridable with -D) or `dim T` (runtime).
struct DimDecl {
  std::string name;
  llvm::SMRange range;
  std::unique_ptr<DimExpr> value;
};

enum class Role { Input, Param, State, Output };

/// `input x: f32[B, T, D]`, `param W: f32[D, D] init normal(0.02)`, ...
struct TensorDecl {
  Role role;
  std::string name;
  llvm::SMRange range;
  TypeExpr type;
  std::optional<InitRule> init;
};

struct LayerDecl {
  std::string name;
  llvm::SMRange range;
  std::vector<DimDecl> dims;
  std::vector<TensorDecl> tensors;
  std::vector<StmtPtr> stmts;
};

/// `fn name(p1, p2) { ...; return e }`: inlined at every call.
struct FnDecl {
  std::string name;
  llvm::SMRange range;
  Body body;
};

struct Module {
  std::vector<LayerDecl> layers;
  std::vector<FnDecl> fns;
};

llvm::StringRef roleName(Role role);

} // namespace recur::frontend

#endif // RECUR_FRONTEND_AST_H
