//===- Lexer.h - tokens of the Recur language -------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_FRONTEND_LEXER_H
#define RECUR_FRONTEND_LEXER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

namespace recur::frontend {

class DiagnosticEngine;

enum class Tok {
  Eof,
  Error,
  Ident,
  Int,
  Float,
  String,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equal,
  Plus,
  Minus,
  Star,
  Slash,
  At,
  // Keywords.
  KwLayer,
  KwFn,
  KwDim,
  KwInput,
  KwParam,
  KwState,
  KwOutput,
  KwInit,
  KwNext,
  KwReturn,
  KwDo,
};

struct Token {
  Tok kind = Tok::Eof;
  llvm::StringRef text;
  /// True when a line break separates this token from the previous one;
  /// error recovery resynchronizes on line starts.
  bool startsLine = false;

  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(text.data());
  }
  llvm::SMRange getRange() const {
    return llvm::SMRange(getLoc(),
                         llvm::SMLoc::getFromPointer(text.data() + text.size()));
  }
  bool is(Tok k) const { return kind == k; }
};

/// Turns a buffer into tokens; `#` starts a comment to the end of the line.
/// Malformed input gives an Error token and a diagnostic, never a crash.
class Lexer {
public:
  Lexer(llvm::StringRef buffer, DiagnosticEngine &diags)
      : buffer(buffer), cur(buffer.begin()), diags(diags) {}

  Token next();

private:
  Token make(Tok kind, const char *start, bool startsLine);

  llvm::StringRef buffer;
  const char *cur;
  DiagnosticEngine &diags;
};

/// The spelling of a token kind for diagnostics ("'('", "identifier").
llvm::StringRef tokenName(Tok kind);

} // namespace recur::frontend

#endif // RECUR_FRONTEND_LEXER_H
