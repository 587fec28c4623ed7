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

/// lowerToLLVMIR's first half: the CPU pipeline, run on `module` in place.
LogicalResult runCpuLoweringPipeline(ModuleOp module,
                                     const CpuPipelineOptions &options);

/// lowerToLLVMIR's second half: `module`, after the pipeline, translated to
/// LLVM IR with the entries of `layers` (its layer functions, as
/// layerFunctionNames gave them before the pipeline) exported.
FailureOr<std::unique_ptr<llvm::Module>>
translateLayersToLLVMIR(ModuleOp module, ArrayRef<std::string> layers,
                        llvm::LLVMContext &context);

/// A kernel of a layer lowered for the CPU (a function recur-outline-parallel
/// made around an OpenMP region) copied into a module of its own, with the
/// declarations and definitions it refers to.
struct CpuKernel {
  /// The kernel's function in the layer's module.
  std::string function;
  /// `__recur_kernel_<hash>`, the kernel's name in `module`: a hash of its
  /// code and of the target it is compiled for, so that equal names mean
  /// equal kernels (whatever layer or spec they come from).
  std::string symbol;
  OwningOpRef<ModuleOp> module;
};

/// The kernels of `module` (after the CPU pipeline), each copied into a
/// module of its own; `salt` names the target they are compiled for.
/// `module` is unchanged. recurc compiles the kernels that several layers
/// share once each, apart from the layers (compileCpuKernel), and each
/// layer's object carries a copy of their code.
SmallVector<CpuKernel> copyCpuKernels(ModuleOp module, StringRef salt);

/// Replaces each of `kernels` (from copyCpuKernels on `module`) in `module`
/// by a hidden declaration of its symbol, and its calls by calls of that.
void declareCpuKernels(ModuleOp module, ArrayRef<const CpuKernel *> kernels);

/// Compiles `kernel` at `optLevel` for `machine` into assembly text that a
/// layer's object takes as module-level assembly (after declareCpuKernels):
/// the kernel a weak hidden definition (the calls of a program that links
/// several layer objects carrying it go to one of them), its other symbols
/// and labels its own.
llvm::Expected<std::string> compileCpuKernel(const CpuKernel &kernel,
                                             llvm::TargetMachine &machine,
                                             unsigned optLevel);

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
