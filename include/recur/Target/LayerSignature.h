//===- LayerSignature.h - a layer's interface as the runtime sees it -*- C++
//-*-===//
//
// Part of the Recur project.
//
// The tensors a compiled layer takes and returns, read from the attributes
// the front end puts on the layer's function (`recur.name`, `recur.role`,
// `recur.dims`, `recur.init`), plus what the runtime needs to run it: the
// runtime dimensions, the batch and time dimensions and the step length.
// recurc writes it into `<layer>.h`; recur-run builds the same runtime
// descriptor in memory.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TARGET_LAYERSIGNATURE_H
#define RECUR_TARGET_LAYERSIGNATURE_H

#include "recur/Runtime/recur_rt.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace func {
class FuncOp;
} // namespace func

namespace recur {

/// One argument or result of a layer's kernel.
struct TensorSignature {
  std::string name;
  recur_role role = RECUR_ROLE_INPUT;
  /// Position among the tensors of its role; for a next state, the index of
  /// its state.
  int32_t index = 0;
  recur_dtype dtype = RECUR_F32;
  /// A static size, or -1 - k for runtime dimension k.
  std::vector<int64_t> shape;
  std::vector<std::string> dimNames;
  recur_init_kind init = RECUR_INIT_NONE;
  double initValue = 0.0;
  int32_t initParam = -1;
  /// The init rule as the spec spells it ("zeros", "normal(0.02)",
  /// "param(c0)"), or "" when it has none; the descriptor's `init_rule`.
  std::string initSpelling;
};

struct LayerSignature {
  std::string name;
  std::vector<std::string> runtimeDims;
  int32_t batchDim = -1;
  int32_t timeDim = -1;
  int64_t stepLength = 1;
  int32_t numInputs = 0, numParams = 0, numStates = 0, numOutputs = 0;
  /// Per runtime dim, the fewest positions a call may have (0: any).
  std::vector<int64_t> runtimeDimMin;
  /// Kernel arguments (inputs, params, states in declaration order) and
  /// results (outputs, next states).
  std::vector<TensorSignature> args, results;
  /// A hash of everything above: saved states carry it.
  uint64_t id = 0;
  /// Whether the module has the layer's backward function
  /// (`recur_<layer>_backward_kernel`).
  bool hasBackward = false;
  /// Whether the kernel takes and returns device buffers (recurc
  /// --target=cuda): the descriptor says RECUR_DEVICE_CUDA (the runtime
  /// copies tensors to the device and back) and has no workspace bound.
  bool deviceKernel = false;

  /// Whether the forward kernel takes a destination buffer per output after
  /// its arguments (recur_layer_desc.output_destinations): the CPU
  /// pipeline's recur-destination-outputs adds them; the CUDA one does not.
  bool outputDestinations() const { return !deviceKernel; }
};

/// Reads the signature of the layer function `func` (as the front end
/// emits it, before lowering); fails with an error on `func` when an
/// attribute is missing or malformed, or a dtype has no runtime equivalent.
FailureOr<LayerSignature> getLayerSignature(func::FuncOp func);

/// `recur_dtype_name` for the compiler side ("f32", ...).
llvm::StringRef dtypeName(recur_dtype dtype);

/// A runtime descriptor of `signature` whose kernel is `kernel`, with the
/// storage its pointers point into. Keep it alive while it is used.
struct OwnedLayerDesc {
  recur_layer_desc desc{};
  std::vector<recur_arg_desc> args, results;
  std::vector<const char *> runtimeDimNames;
  std::vector<int64_t> runtimeDimMin;
};
std::unique_ptr<OwnedLayerDesc>
buildLayerDesc(const LayerSignature &signature, recur_kernel_fn kernel,
               recur_workspace_fn workspace,
               recur_kernel_fn backward = nullptr);

/// The C header `<layer>.h` of the layer's object: the runtime descriptor,
/// typed structs of its inputs, params and outputs, and inline wrappers of
/// the runtime calls. `source` names the spec in the header's comment.
std::string emitLayerHeader(const LayerSignature &signature,
                            llvm::StringRef source, llvm::StringRef target);

/// The kernel entry recurc generates for a layer: `recur_<layer>_kernel`.
std::string kernelSymbol(llvm::StringRef layer);

/// The backward kernel of a layer: `recur_<layer>_backward_kernel`.
std::string backwardSymbol(llvm::StringRef layer);

/// Its workspace bound (`recur_workspace_fn`): `recur_<layer>_workspace`.
std::string workspaceSymbol(llvm::StringRef layer);

} // namespace recur
} // namespace mlir

#endif // RECUR_TARGET_LAYERSIGNATURE_H
