//===- CpuTarget.h - layer functions to CPU object code ----------*- C++
//-*-===//
//
// Part of the Recur project.
//
// The CPU backend after the MLIR pipeline: LLVM IR with one packed entry per
// layer (the kernel ABI of recur/Runtime/recur_rt.h), optimized for a CPU,
// emitted as an object file (recurc) or JIT-compiled (recur-run).
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TARGET_CPUTARGET_H
#define RECUR_TARGET_CPUTARGET_H

#include "recur/Target/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace mlir {
class DialectRegistry;

namespace recur {

struct CpuTargetOptions {
  /// An LLVM CPU name; "native" is the machine compiling. The default runs
  /// on any x86-64 with AVX2 and FMA.
  std::string cpu = "x86-64-v3";
  /// 0 to 3, as clang's -O.
  unsigned optLevel = 3;
};

/// Registers what the CPU backend needs in `registry`: the dialects its
/// pipeline goes through with their interface models (bufferization,
/// conversion to LLVM) and the LLVM IR translations (builtin, LLVM, OpenMP).
void registerCpuTranslations(DialectRegistry &registry);

/// Lowers `module` (layer functions as the front end emits them) in place
/// with the CPU pipeline and translates it to LLVM IR. For every layer
/// function F it adds the packed entry `recur_F_kernel(int64_t *in,
/// int64_t *out)` and gives F itself internal linkage. Errors are reported
/// through the context's diagnostics.
FailureOr<std::unique_ptr<llvm::Module>>
lowerToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
              const CpuPipelineOptions &options = {});

/// The layer functions of `module` (its defined func.func ops).
SmallVector<std::string> layerFunctionNames(ModuleOp module);

/// For every layer F of `layers` in `llvmModule` (translated from `module`,
/// which receives the errors): adds the packed entry `recur_F_kernel` and,
/// with `withWorkspace`, `recur_F_workspace` around `F_workspace`; then
/// gives every other definition internal linkage.
LogicalResult exportLayerEntries(ModuleOp module, llvm::Module &llvmModule,
                                 ArrayRef<std::string> layers,
                                 bool withWorkspace);

/// A target machine for `options` on the host's target triple.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createCpuTargetMachine(const CpuTargetOptions &options);

/// Sets the module's triple and data layout for `machine` and runs LLVM's
/// default pipeline at `optLevel` (loop and SLP vectorization included).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    unsigned optLevel);

/// Writes `module` as an object file for `machine`.
llvm::Error emitObjectFile(llvm::Module &module, llvm::TargetMachine &machine,
                           llvm::raw_pwrite_stream &os);

} // namespace recur
} // namespace mlir

#endif // RECUR_TARGET_CPUTARGET_H
