//===- CudaTarget.h - layer functions to CUDA host and device code -*- C++
//-*-===//
//
// Part of the Recur project.
//
// The CUDA backend after the MLIR pipeline: the kernels' PTX assembled by the
// toolkit's ptxas for each chip and packed with fatbinary into one fat
// binary per GPU module, embedded in host LLVM IR that launches them through
// librecur_rt (the mgpu* functions) and allocates device memory through it,
// with the same packed entry per layer as the CPU backend.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TARGET_CUDATARGET_H
#define RECUR_TARGET_CUDATARGET_H

#include "recur/Target/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace mlir {
class DialectRegistry;

namespace recur {

struct CudaTargetOptions {
  /// The chips to compile for ("sm_80", "sm_90", ...): a cubin each, and
  /// the PTX of the last for the driver to compile on newer GPUs.
  std::vector<std::string> chips = {"sm_90"};
  /// 0 to 3, for the NVPTX backend and ptxas.
  unsigned optLevel = 3;
  /// As CudaPipelineOptions.
  int64_t blockThreads = kDefaultCudaBlockThreads;
  int64_t scanUnrollBytes = kDefaultCudaScanUnrollBytes;
  int64_t scanSpread = kDefaultCudaScanSpread;
  bool scanWarps = false;
  int64_t scanBlocks = 0;
  bool windowOnePass = true;
  int64_t glaColumnChunk = kDefaultCudaGlaColumnChunk;
  bool glaTiles = false;
  bool windowWarpTiles = false;
  int64_t splitReductions = kDefaultCudaSplitReductions;
  /// The CUDA toolkit (bin/ptxas, bin/fatbinary, nvvm/libdevice); empty:
  /// findCudaToolkit().
  std::string toolkit;
};

/// The CUDA toolkit: $CUDA_PATH, else the directory above the ptxas found
/// on PATH, else /usr/local/cuda.
std::string findCudaToolkit();

/// Parses a target "cuda" or "cuda:sm_80,sm_90" into `options.chips`;
/// returns an error message for a malformed one.
std::optional<std::string> parseCudaTarget(StringRef target,
                                           CudaTargetOptions &options);

/// What the CPU backend registers, and the GPU and NVVM translations.
void registerCudaTranslations(DialectRegistry &registry);

/// A module compiled for CUDA.
struct CudaLowering {
  /// Host code: a `recur_F_kernel` entry per layer taking device buffers.
  std::unique_ptr<llvm::Module> host;
  /// The PTX of every GPU module for every chip, each headed by a comment
  /// naming its module and chip.
  std::string ptx;
};

/// The CUDA pipeline's options for `options` (its toolkit, where it names
/// one, as given: lowerToCuda finds one otherwise).
CudaPipelineOptions cudaPipelineOptions(const CudaTargetOptions &options);

/// Lowers `module` (layer functions as the front end emits them) in place
/// with the CUDA pipeline. With `assemble`, runs ptxas and fatbinary and
/// translates the host code to LLVM IR; without, stops at the PTX. Errors
/// are reported through the context's diagnostics.
FailureOr<CudaLowering> lowerToCuda(ModuleOp module, llvm::LLVMContext &context,
                                    const CudaTargetOptions &options,
                                    bool assemble);

} // namespace recur
} // namespace mlir

#endif // RECUR_TARGET_CUDATARGET_H
