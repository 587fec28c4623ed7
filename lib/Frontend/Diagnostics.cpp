//===- Diagnostics.cpp - clang-style front end diagnostics ----------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

using namespace recur::frontend;

void DiagnosticEngine::print(llvm::SMRange range,
                             llvm::SourceMgr::DiagKind kind,
                             const llvm::Twine &message) {
  // Errors about the spec as a whole (no layer of that name, a bad -D)
  // carry no location: name the file instead of printing "<unknown>:0".
  if (!range.Start.isValid()) {
    llvm::StringRef file =
        sourceMgr.getNumBuffers()
            ? sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
                  ->getBufferIdentifier()
            : "recurc";
    sourceMgr.PrintMessage(llvm::errs(),
                           llvm::SMDiagnostic(file, kind, message.str()));
    return;
  }
  // A zero-width range gets the caret alone; a wider one is underlined.
  llvm::SmallVector<llvm::SMRange, 1> ranges;
  if (range.Start.isValid() && range.End.isValid() &&
      range.End.getPointer() > range.Start.getPointer() + 1)
    ranges.push_back(range);
  sourceMgr.PrintMessage(llvm::errs(), range.Start, kind, message, ranges);
}

void DiagnosticEngine::error(llvm::SMRange range, const llvm::Twine &message) {
  ++numErrors;
  lastErrorPrinted = numErrors <= errorLimit;
  if (lastErrorPrinted)
    print(range, llvm::SourceMgr::DK_Error, message);
  else if (numErrors == errorLimit + 1)
    llvm::errs() << "error: too many errors emitted, stopping now\n";
}

void DiagnosticEngine::note(llvm::SMRange range, const llvm::Twine &message) {
  if (lastErrorPrinted)
    print(range, llvm::SourceMgr::DK_Note, message);
}

void DiagnosticEngine::warning(llvm::SMRange range,
                               const llvm::Twine &message) {
  print(range, llvm::SourceMgr::DK_Warning, message);
}
