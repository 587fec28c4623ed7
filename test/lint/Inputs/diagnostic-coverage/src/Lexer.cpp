// Fixture for check-diagnostic-coverage.py: a lexer with a token-name table
// and one diagnostic.

llvm::StringRef tokenName(Tok kind) {
  switch (kind) {
  case Tok::Ident:
    return "identifier";
  case Tok::LBrace:
    return "'{'";
  }
  return "token";
}

void DiagnosticEngine::error(llvm::SMRange range, const llvm::Twine &message) {
  print(range, message); // a definition, not a diagnostic
}

Token Lexer::next() {
  diags.error(t.getRange(), "unterminated string");
  return t;
}
