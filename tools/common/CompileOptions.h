//===- CompileOptions.h - options recurc and recur-run share ----*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//
//
// How a layer is compiled, as both tools spell it on their command lines:
// the gla overrides, the backward's form, the CPU's streaming stores, double
// precision and the CUDA kernels' shape. One definition, so that a layer
// recur-run checks is compiled as recurc compiles it.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TOOLS_COMPILEOPTIONS_H
#define RECUR_TOOLS_COMPILEOPTIONS_H

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::recur {
struct CudaTargetOptions;
} // namespace mlir::recur

namespace recur::tools {

/// The shared options, registered in `category` when constructed (once per
/// program, before cl::ParseCommandLineOptions).
struct CompileOptions {
  explicit CompileOptions(llvm::cl::OptionCategory &category);

  llvm::cl::opt<std::string> glaAlgorithm;
  llvm::cl::opt<int64_t> glaChunk;
  llvm::cl::opt<bool> backwardKeepStates;
  llvm::cl::opt<uint64_t> streamStoreBytes;
  llvm::cl::opt<bool> promoteF64;
  llvm::cl::opt<int64_t> cudaBlockThreads;
  llvm::cl::opt<int64_t> cudaScanUnrollBytes;
  llvm::cl::opt<int64_t> cudaScanSpread;
  llvm::cl::opt<bool> cudaScanWarps;
  llvm::cl::opt<int64_t> cudaScanBlocks;
  llvm::cl::opt<bool> cudaWindowOnePass;
  llvm::cl::opt<int64_t> cudaGlaColumnChunk;
  llvm::cl::opt<bool> cudaGlaTiles;
  llvm::cl::opt<bool> cudaWindowWarpTiles;
  llvm::cl::opt<int64_t> cudaSplitReductions;

  /// --stream-store-bytes as the pipelines take it.
  int64_t streamStoreBytesValue() const;

  /// Checks the CUDA options' ranges and sets them in `cuda`, or, with no
  /// CUDA target (`cuda` null), checks that none was given. Returns the
  /// error message of the first that fails.
  std::optional<std::string>
  applyCuda(mlir::recur::CudaTargetOptions *cuda) const;
};

} // namespace recur::tools

#endif // RECUR_TOOLS_COMPILEOPTIONS_H
