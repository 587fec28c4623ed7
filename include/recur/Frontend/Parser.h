//===- Parser.h - parser of the Recur language ------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_FRONTEND_PARSER_H
#define RECUR_FRONTEND_PARSER_H

#include "recur/Frontend/AST.h"
#include "recur/Frontend/Diagnostics.h"
#include "recur/Frontend/Lexer.h"

namespace recur::frontend {

/// Recursive-descent parser. Reports every syntax error it can find in one
/// run (recovering at the next line that starts a statement) and returns the
/// module it could build; callers check the engine for errors.
class Parser {
public:
  Parser(llvm::StringRef buffer, DiagnosticEngine &diags)
      : lexer(buffer, diags), diags(diags) {
    tok = lexer.next();
  }

  Module parseModule();

private:
  // Declarations and statements.
  /// Both return false when the item's header is broken and the rest of it
  /// was not parsed.
  bool parseLayer(Module &module);
  bool parseFn(Module &module);
  bool parseBodyStmts(std::vector<StmtPtr> &stmts, LayerDecl *layer);
  bool parseDimDecl(LayerDecl &layer);
  bool parseTensorDecl(LayerDecl &layer, Role role);
  std::unique_ptr<DimExpr> parseDimExpr();
  std::unique_ptr<DimExpr> parseDimTerm();
  std::unique_ptr<DimExpr> parseDimAtom();
  bool parseType(TypeExpr &type);
  StmtPtr parseStmt();

  // Expressions.
  ExprPtr parseExpr();
  ExprPtr parseAdditive();
  ExprPtr parseMultiplicative();
  ExprPtr parseUnary();
  ExprPtr parsePrimary();
  ExprPtr parseCall(Token name);
  std::unique_ptr<Body> parseBody();

  // Token helpers.
  void consume() {
    prevEnd = tok.getRange().End;
    tok = lexer.next();
  }
  bool consumeIf(Tok kind) {
    if (!tok.is(kind))
      return false;
    consume();
    return true;
  }
  bool expect(Tok kind, llvm::StringRef context);
  /// Skips to the next token that starts a line or closes the current
  /// block, so one error does not cascade.
  void recover();
  llvm::SMRange rangeFrom(llvm::SMLoc start) const {
    return llvm::SMRange(start, prevEnd);
  }

  Lexer lexer;
  DiagnosticEngine &diags;
  Token tok;
  llvm::SMLoc prevEnd;
  unsigned depth = 0;
};

} // namespace recur::frontend

#endif // RECUR_FRONTEND_PARSER_H
