//===- Driver.cpp - a spec file to recur IR, for the tools
//------------------===//
//
// Part of the Recur project.
//
// What recurc and recur-run both do before their own work: -D parsing, and
// reading, parsing and compiling a spec file with clang-style diagnostics.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/MLIRGen.h"
#include "recur/Frontend/Parser.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace recur::frontend;

std::optional<std::string> recur::frontend::addDefine(CompileOptions &options,
                                                      llvm::StringRef text) {
  auto [name, value] = text.split('=');
  int64_t v = 0;
  if (name.empty() || !text.contains('=') || value.getAsInteger(10, v))
    return "-D expects NAME=VALUE with an integer VALUE, got '" + text.str() +
           "'";
  options.defines[name.str()] = v;
  return std::nullopt;
}

std::optional<std::string>
recur::frontend::setGlaOverrides(CompileOptions &options,
                                 llvm::StringRef algorithm, int64_t chunk) {
  if (!algorithm.empty() && algorithm != "auto" && algorithm != "recurrent" &&
      algorithm != "chunked")
    return "--gla-algorithm=" + algorithm.str() +
           ": expected auto, recurrent or chunked";
  if (chunk < 0)
    return "--gla-chunk=" + std::to_string(chunk) +
           ": a chunk has at least one step";
  if (chunk > 0 && algorithm == "recurrent")
    return "--gla-chunk has no meaning with --gla-algorithm=recurrent";
  options.glaAlgorithm = algorithm.str();
  options.glaChunk = chunk;
  return std::nullopt;
}

mlir::OwningOpRef<mlir::ModuleOp> recur::frontend::compileSpecFile(
    llvm::StringRef path, mlir::MLIRContext &context,
    const CompileOptions &options, std::string &ioError) {
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      mlir::openInputFile(path, &ioError);
  if (!buffer)
    return nullptr;
  llvm::SourceMgr sourceMgr;
  llvm::StringRef text = buffer->getBuffer();
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  DiagnosticEngine diags(sourceMgr);
  Parser parser(text, diags);
  Module module = parser.parseModule();
  mlir::OwningOpRef<mlir::ModuleOp> ir;
  if (!diags.hadError())
    ir = emitModule(module, context, options, diags,
                    path == "-" ? std::string("<stdin>") : path.str());
  if (diags.hadError() || !ir) {
    if (diags.getNumErrors() > 1)
      llvm::errs() << diags.getNumErrors() << " errors generated.\n";
    return nullptr;
  }
  return ir;
}
