//===- Workspace.cpp - recur_workspace_size -------------------------------===//
//
// Part of the Recur project.
//
// The bound on what one call allocates: the kernel's own bound (generated
// by recurc beside the kernel, from the argument shapes and the thread
// count) plus the runtime's buffers for states (a temporary state when the
// call has none, or the copies of next states that cannot be adopted).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <limits>

using namespace recur::rt;

namespace {

/// Adds `more` to `total`; false on overflow.
bool addBytes(size_t &total, size_t more) {
  if (more > std::numeric_limits<size_t>::max() - total)
    return false;
  total += more;
  return true;
}

recur_status workspaceSize(const Context &ctx, const recur_layer_desc *layer,
                           const int64_t *dimValues, size_t *bytes) {
  LayerInfo info;
  if (recur_status status = analyzeLayer(ctx, layer, info))
    return status;
  if (!bytes)
    return ctx.fail(RECUR_ERROR_NULL_POINTER, "bytes is NULL");
  if (layer->num_runtime_dims > 0 && !dimValues)
    return ctx.fail(RECUR_ERROR_NULL_POINTER,
                    "dims is NULL, but the layer has %d runtime dimension(s)",
                    layer->num_runtime_dims);
  if (!layer->workspace)
    return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                    "the layer descriptor has no workspace bound");

  DimBinding dims(layer->num_runtime_dims);
  for (int32_t d = 0; d < layer->num_runtime_dims; ++d) {
    const char *name = nameOr(
        layer->runtime_dim_names ? layer->runtime_dim_names[d] : nullptr);
    if (dimValues[d] < 0)
      return ctx.fail(RECUR_ERROR_SHAPE, "dimension %s is %lld, below 0", name,
                      static_cast<long long>(dimValues[d]));
    dims.bind(d, dimValues[d], "dims");
  }

  // The kernel's arguments with their shapes and no data: its bound reads
  // only the sizes.
  std::vector<int64_t> words;
  size_t stateBytes = 0;
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &arg = layer->args[i];
    int64_t shape[RECUR_MAX_RANK];
    resolveShape(arg, dims, shape);
    int64_t count;
    size_t argBytes;
    if (!elementCount(arg.rank, shape, count) ||
        !byteCount(count, arg.dtype, argBytes))
      return ctx.fail(RECUR_ERROR_SHAPE, "'%s' of shape %s is too large",
                      nameOr(arg.name), formatShape(arg.rank, shape).c_str());
    if (arg.role == RECUR_ROLE_STATE && !addBytes(stateBytes, argBytes))
      return ctx.fail(RECUR_ERROR_SHAPE, "the state is too large");
    pushMemRef(words, nullptr, nullptr, arg.rank, shape);
  }
  // The destinations of the outputs (the caller's tensors), likewise.
  for (int32_t i = 0; layer->output_destinations && i < layer->num_results;
       ++i) {
    const recur_arg_desc &result = layer->results[i];
    if (result.role != RECUR_ROLE_OUTPUT)
      continue;
    int64_t shape[RECUR_MAX_RANK];
    resolveShape(result, dims, shape);
    pushMemRef(words, nullptr, nullptr, result.rank, shape);
  }
  int64_t kernelBytes = layer->workspace(words.data(), recur_get_num_threads());
  if (kernelBytes == -1)
    return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                    "the compiler could not bound this layer's workspace");
  if (kernelBytes < 0)
    return ctx.fail(RECUR_ERROR_INTERNAL,
                    "the workspace bound is negative (%lld): the sizes "
                    "overflow",
                    static_cast<long long>(kernelBytes));
  size_t total = static_cast<size_t>(kernelBytes);
  if (!addBytes(total, stateBytes))
    return ctx.fail(RECUR_ERROR_SHAPE, "the workspace is too large");
  *bytes = total;
  return RECUR_OK;
}

} // namespace

extern "C" recur_status recur_workspace_size(const recur_layer_desc *layer,
                                             const int64_t *dims,
                                             size_t *bytes) {
  return guarded("recur_workspace_size", [&] {
    return workspaceSize(Context("recur_workspace_size", layer), layer, dims,
                         bytes);
  });
}
