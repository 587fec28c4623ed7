//===- Diagnostics.h - clang-style front end diagnostics --------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_FRONTEND_DIAGNOSTICS_H
#define RECUR_FRONTEND_DIAGNOSTICS_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

namespace recur::frontend {

/// Reports `file:line:col: error: message`, the source line and a caret
/// under the culprit, through llvm::SourceMgr. Counts errors and stops
/// printing (but keeps counting) after a limit, so that one broken spec does
/// not bury the first, most useful message.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::SourceMgr &sourceMgr,
                            unsigned errorLimit = 20)
      : sourceMgr(sourceMgr), errorLimit(errorLimit) {}

  void error(llvm::SMRange range, const llvm::Twine &message);
  void error(llvm::SMLoc loc, const llvm::Twine &message) {
    error(llvm::SMRange(loc, loc), message);
  }
  /// A note attached to the previous error (a hint, or where a name was
  /// declared); dropped when that error was.
  void note(llvm::SMRange range, const llvm::Twine &message);
  void warning(llvm::SMRange range, const llvm::Twine &message);

  unsigned getNumErrors() const { return numErrors; }
  bool hadError() const { return numErrors != 0; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

private:
  void print(llvm::SMRange range, llvm::SourceMgr::DiagKind kind,
             const llvm::Twine &message);

  llvm::SourceMgr &sourceMgr;
  unsigned errorLimit;
  unsigned numErrors = 0;
  bool lastErrorPrinted = false;
};

} // namespace recur::frontend

#endif // RECUR_FRONTEND_DIAGNOSTICS_H
