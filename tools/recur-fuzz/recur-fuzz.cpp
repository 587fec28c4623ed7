//===- recur-fuzz.cpp - libFuzzer target of the Recur front end -----------===//
//
// Part of the Recur project.
//
// Each input is a spec: it is parsed and, when it parses, checked and
// emitted as recur IR with a fresh MLIRContext, exactly as recurc does, and
// the IR is printed. Diagnostics go nowhere. Any crash, sanitizer report,
// leak or hang is a front-end bug, and so is IR that fails to verify: the
// front end reports that as an "internal error", which this target turns
// into a trap so that libFuzzer keeps the input.
//
// Built only with -DRECUR_BUILD_FUZZER=ON; scripts/fuzz-frontend.sh runs it.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/MLIRGen.h"
#include "recur/Frontend/Parser.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <limits>

using namespace recur::frontend;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.recur");
  llvm::StringRef text = buffer->getBuffer();
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());

  // Every diagnostic is formatted (with its source line and caret) but not
  // printed; the internal error is remembered.
  bool internalError = false;
  sourceMgr.setDiagHandler(
      [](const llvm::SMDiagnostic &diag, void *context) {
        std::string formatted;
        llvm::raw_string_ostream os(formatted);
        diag.print("recur-fuzz", os, /*ShowColors=*/false);
        if (diag.getMessage().starts_with("internal error"))
          *static_cast<bool *>(context) = true;
      },
      &internalError);
  // No cap on errors: the "too many errors" line would go to stderr.
  DiagnosticEngine diags(sourceMgr, std::numeric_limits<unsigned>::max());

  Parser parser(text, diags);
  Module module = parser.parseModule();
  if (diags.hadError())
    return 0;

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });
  CompileOptions options;
  mlir::OwningOpRef<mlir::ModuleOp> ir =
      emitModule(module, context, options, diags, "fuzz.recur");
  if (ir) {
    std::string printed;
    llvm::raw_string_ostream os(printed);
    ir->print(os);
  }
  if (internalError)
    __builtin_trap();
  return 0;
}
