//===- MLIRGen.h - Recur specs to recur IR ----------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_FRONTEND_MLIRGEN_H
#define RECUR_FRONTEND_MLIRGEN_H

#include "recur/Frontend/AST.h"
#include "recur/Frontend/Diagnostics.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace recur::frontend {

struct CompileOptions {
  /// The layer to compile; empty compiles every layer in the file.
  std::string layer;
  /// `-D NAME=VALUE` overrides of compile-time dims, with where they came
  /// from for diagnostics.
  std::map<std::string, int64_t> defines;
  /// Compile every float tensor as f64 and every complex one as c128 (bool
  /// stays): the same layer in double precision, for testing.
  bool promoteToF64 = false;
  /// Overrides of every gla's `algorithm` ("auto", "recurrent", "chunked")
  /// and `chunk` (when > 0), to compare the algorithms on one spec.
  std::string glaAlgorithm;
  int64_t glaChunk = 0;
};

/// Checks `module` (names, symbolic shapes, dtypes, state and parameter use)
/// and emits one `func.func` per layer in recur IR. Checking and emission are
/// one walk, so that functions, which are generic over shapes, are checked
/// at each call with its argument types. Returns null after reporting every
/// error it found; otherwise the returned module verifies.
mlir::OwningOpRef<mlir::ModuleOp> emitModule(const Module &module,
                                             mlir::MLIRContext &context,
                                             const CompileOptions &options,
                                             DiagnosticEngine &diags,
                                             llvm::StringRef fileName);

/// Registers the dialects the emitted IR uses.
void loadFrontendDialects(mlir::MLIRContext &context);

/// Sets the gla overrides of `options` from `--gla-algorithm` and
/// `--gla-chunk` (empty and 0: none); returns the message of a bad value.
std::optional<std::string> setGlaOverrides(CompileOptions &options,
                                           llvm::StringRef algorithm,
                                           int64_t chunk);

/// Adds `-D NAME=VALUE` (`text` is NAME=VALUE) to `options`; returns the
/// error message when it is malformed.
std::optional<std::string> addDefine(CompileOptions &options,
                                     llvm::StringRef text);

/// Reads the spec at `path` ("-": standard input), parses and compiles it.
/// Spec errors are reported to stderr (file:line:col: error: with the line
/// and a caret, then "N errors generated."); a file that cannot be read
/// sets `ioError`. Returns null on any error.
mlir::OwningOpRef<mlir::ModuleOp>
compileSpecFile(llvm::StringRef path, mlir::MLIRContext &context,
                const CompileOptions &options, std::string &ioError);

} // namespace recur::frontend

#endif // RECUR_FRONTEND_MLIRGEN_H
