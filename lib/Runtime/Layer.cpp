//===- Layer.cpp - layer descriptor checks and runtime dimensions ---------===//
//
// Part of the Recur project.
//
// A layer descriptor comes from a header recurc wrote, but it is still
// checked on every call: a descriptor of another ABI version or a damaged
// one must give an error, not a crash. The user's tensors are then checked
// against it, binding the layer's runtime dimensions (B, T, ...) as they go.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

using namespace recur::rt;

namespace {

constexpr recur_status kMalformed = RECUR_ERROR_INVALID_ARGUMENT;

/// More runtime dimensions than any layer has: a damaged descriptor.
constexpr int32_t kMaxRuntimeDims = 1024;

/// The runtime dimension `entry` of a descriptor shape names, or -1 for a
/// static size.
int32_t runtimeDim(int64_t entry) {
  return entry < 0 ? static_cast<int32_t>(-1 - entry) : -1;
}

/// Checks the dtype, rank and shape entries of `desc`, the `pos`-th of the
/// descriptor's `list` ("argument" or "result").
recur_status checkTensorDesc(const Context &ctx, const recur_layer_desc &layer,
                             const recur_arg_desc &desc, const char *list,
                             int32_t pos) {
  const char *name = nameOr(desc.name);
  if (!isKnownDtype(desc.dtype))
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: %s %d ('%s') has dtype %d",
                    list, pos, name, static_cast<int>(rawValue(desc.dtype)));
  if (desc.rank < 0)
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: %s %d ('%s') has rank %d",
                    list, pos, name, desc.rank);
  if (desc.rank > RECUR_MAX_RANK)
    return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                    "%s '%s' has rank %d; the runtime supports at most "
                    "RECUR_MAX_RANK = %d dimensions",
                    list, name, desc.rank, RECUR_MAX_RANK);
  for (int32_t d = 0; d < desc.rank; ++d) {
    int64_t entry = desc.shape[d];
    if (entry < 0 && -1 - entry >= layer.num_runtime_dims)
      return ctx.fail(kMalformed,
                      "malformed layer descriptor: dimension %d of %s '%s' "
                      "is runtime dimension %lld, but the layer has %d",
                      d, list, name, static_cast<long long>(-1 - entry),
                      layer.num_runtime_dims);
  }
  return RECUR_OK;
}

/// Puts `desc` into `slots` at its index; `role` names the slots.
recur_status place(const Context &ctx, const recur_arg_desc &desc,
                   const char *role,
                   std::vector<const recur_arg_desc *> &slots) {
  if (desc.index < 0 || static_cast<size_t>(desc.index) >= slots.size())
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: %s '%s' has index %d, but "
                    "the layer has %zu",
                    role, nameOr(desc.name), desc.index, slots.size());
  if (const recur_arg_desc *other = slots[desc.index])
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: %ss '%s' and '%s' both "
                    "have index %d",
                    role, nameOr(other->name), nameOr(desc.name), desc.index);
  slots[desc.index] = &desc;
  return RECUR_OK;
}

/// Checks the counts, arrays and dimension indices of `layer`.
recur_status checkCounts(const Context &ctx, const recur_layer_desc &layer) {
  if (layer.num_runtime_dims < 0 || layer.num_inputs < 0 ||
      layer.num_params < 0 || layer.num_states < 0 || layer.num_outputs < 0 ||
      layer.num_args < 0 || layer.num_results < 0)
    return ctx.fail(kMalformed, "malformed layer descriptor: a count is "
                                "negative");
  if (layer.num_runtime_dims > kMaxRuntimeDims)
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: %d runtime dimensions",
                    layer.num_runtime_dims);
  int64_t roles = static_cast<int64_t>(layer.num_inputs) + layer.num_params +
                  layer.num_states;
  if (layer.num_args != roles)
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: num_args is %d, but the "
                    "layer has %lld inputs, params and states",
                    layer.num_args, static_cast<long long>(roles));
  if (layer.num_results < layer.num_outputs ||
      layer.num_results > layer.num_outputs + layer.num_states)
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: num_results is %d, for %d "
                    "outputs and %d states",
                    layer.num_results, layer.num_outputs, layer.num_states);
  if ((layer.num_args > 0 && !layer.args) ||
      (layer.num_results > 0 && !layer.results))
    return ctx.fail(RECUR_ERROR_NULL_POINTER,
                    "the layer descriptor's args or results array is NULL");
  if (layer.batch_dim < -1 || layer.batch_dim >= layer.num_runtime_dims ||
      layer.time_dim < -1 || layer.time_dim >= layer.num_runtime_dims)
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: batch_dim %d or time_dim %d "
                    "is not one of its %d runtime dimensions",
                    layer.batch_dim, layer.time_dim, layer.num_runtime_dims);
  if (layer.time_dim >= 0 && layer.step_length < 1)
    return ctx.fail(kMalformed,
                    "malformed layer descriptor: step_length is %lld",
                    static_cast<long long>(layer.step_length));
  return RECUR_OK;
}

/// Sorts the kernel arguments of `layer` into the input, param and state
/// slots of `info`.
recur_status sortArgs(const Context &ctx, const recur_layer_desc &layer,
                      LayerInfo &info) {
  info.inputs.assign(layer.num_inputs, nullptr);
  info.params.assign(layer.num_params, nullptr);
  info.states.assign(layer.num_states, nullptr);
  for (int32_t i = 0; i < layer.num_args; ++i) {
    const recur_arg_desc &arg = layer.args[i];
    if (recur_status status = checkTensorDesc(ctx, layer, arg, "argument", i))
      return status;
    recur_status status;
    switch (rawValue(arg.role)) {
    case RECUR_ROLE_INPUT:
      status = place(ctx, arg, "input", info.inputs);
      break;
    case RECUR_ROLE_PARAM:
      status = place(ctx, arg, "param", info.params);
      break;
    case RECUR_ROLE_STATE:
      status = place(ctx, arg, "state", info.states);
      break;
    default:
      status =
          ctx.fail(kMalformed,
                   "malformed layer descriptor: argument %d ('%s') has "
                   "role %d; arguments are inputs, params and states",
                   i, nameOr(arg.name), static_cast<int>(rawValue(arg.role)));
    }
    if (status)
      return status;
  }
  return RECUR_OK;
}

/// Sorts the kernel results of `layer` into the output and next-state slots
/// of `info`; a next state must look exactly like its state.
recur_status sortResults(const Context &ctx, const recur_layer_desc &layer,
                         LayerInfo &info) {
  info.outputs.assign(layer.num_outputs, nullptr);
  info.nextStates.assign(layer.num_states, nullptr);
  for (int32_t i = 0; i < layer.num_results; ++i) {
    const recur_arg_desc &result = layer.results[i];
    if (recur_status status = checkTensorDesc(ctx, layer, result, "result", i))
      return status;
    recur_status status;
    switch (rawValue(result.role)) {
    case RECUR_ROLE_OUTPUT:
      status = place(ctx, result, "output", info.outputs);
      break;
    case RECUR_ROLE_NEXT_STATE:
      status = place(ctx, result, "next state", info.nextStates);
      if (!status && !sameSignature(result, *info.states[result.index]))
        status = ctx.fail(kMalformed,
                          "malformed layer descriptor: next state '%s' does "
                          "not have the dtype and shape of state '%s'",
                          nameOr(result.name),
                          nameOr(info.states[result.index]->name));
      break;
    default:
      status = ctx.fail(kMalformed,
                        "malformed layer descriptor: result %d ('%s') has "
                        "role %d; results are outputs and next states",
                        i, nameOr(result.name),
                        static_cast<int>(rawValue(result.role)));
    }
    if (status)
      return status;
  }
  for (size_t i = 0; i < info.outputs.size(); ++i)
    if (!info.outputs[i])
      return ctx.fail(kMalformed,
                      "malformed layer descriptor: no result is output %zu", i);
  return RECUR_OK;
}

/// Whether `t` has the rank and static sizes `desc` asks for.
bool matchesStaticShape(const recur_arg_desc &desc, const recur_tensor &t) {
  if (t.rank != desc.rank)
    return false;
  for (int32_t d = 0; d < t.rank; ++d)
    if (t.shape[d] < 0 || (desc.shape[d] >= 0 && t.shape[d] != desc.shape[d]))
      return false;
  return true;
}

} // namespace

bool recur::rt::sameSignature(const recur_arg_desc &a,
                              const recur_arg_desc &b) {
  if (a.dtype != b.dtype || a.rank != b.rank)
    return false;
  for (int32_t d = 0; d < a.rank; ++d)
    if (a.shape[d] != b.shape[d])
      return false;
  return true;
}

recur_status recur::rt::analyzeLayer(const Context &ctx,
                                     const recur_layer_desc *layer,
                                     LayerInfo &info) {
  if (!layer)
    return ctx.fail(RECUR_ERROR_NULL_POINTER, "layer is NULL");
  if (layer->abi_version != RECUR_ABI_VERSION)
    return ctx.fail(RECUR_ERROR_ABI,
                    "the layer descriptor has ABI version %u, but this "
                    "runtime implements version %d; rebuild the layer with a "
                    "matching recurc",
                    layer->abi_version, RECUR_ABI_VERSION);
  int64_t device = rawValue(layer->device);
  if (device != RECUR_DEVICE_CPU && device != RECUR_DEVICE_CUDA)
    return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                    "the layer descriptor names device %lld, not "
                    "RECUR_DEVICE_CPU (0) or RECUR_DEVICE_CUDA (1)",
                    static_cast<long long>(device));
  info.desc = layer;
  if (recur_status status = checkCounts(ctx, *layer))
    return status;
  if (recur_status status = sortArgs(ctx, *layer, info))
    return status;
  return sortResults(ctx, *layer, info);
}

const char *recur::rt::dimName(const LayerInfo &info,
                               const recur_arg_desc &desc, int32_t pos) {
  if (desc.dim_names[pos])
    return desc.dim_names[pos];
  int32_t dim = runtimeDim(desc.shape[pos]);
  if (dim >= 0 && info.desc->runtime_dim_names &&
      info.desc->runtime_dim_names[dim])
    return info.desc->runtime_dim_names[dim];
  return "?";
}

std::string recur::rt::formatExpected(const LayerInfo &info,
                                      const recur_arg_desc &desc) {
  std::string text = "[";
  for (int32_t d = 0; d < desc.rank; ++d) {
    if (d)
      text += ", ";
    if (runtimeDim(desc.shape[d]) >= 0) {
      text += dimName(info, desc, d);
      continue;
    }
    std::string size = std::to_string(desc.shape[d]);
    const char *name = desc.dim_names[d];
    if (name && size != name)
      text += std::string(name) + " = ";
    text += size;
  }
  return text + "]";
}

recur_status recur::rt::bindTensor(const Context &ctx, const LayerInfo &info,
                                   const char *role, const recur_arg_desc &desc,
                                   const recur_tensor &t, DimBinding &dims) {
  const char *name = nameOr(desc.name);
  if (t.rank < 0 || t.rank > RECUR_MAX_RANK)
    return ctx.fail(RECUR_ERROR_SHAPE,
                    "%s '%s' has rank %d; a tensor has 0 to RECUR_MAX_RANK = "
                    "%d dimensions",
                    role, name, t.rank, RECUR_MAX_RANK);
  if (!matchesStaticShape(desc, t))
    return ctx.fail(RECUR_ERROR_SHAPE, "%s '%s' has shape %s, expected %s",
                    role, name, formatShape(t.rank, t.shape).c_str(),
                    formatExpected(info, desc).c_str());
  if (rawValue(t.dtype) != rawValue(desc.dtype))
    return ctx.fail(RECUR_ERROR_DTYPE, "%s '%s' has dtype %s, expected %s",
                    role, name, dtypeName(rawValue(t.dtype)),
                    recur_dtype_name(desc.dtype));
  for (int32_t d = 0; d < t.rank; ++d) {
    int32_t dim = runtimeDim(desc.shape[d]);
    if (dim < 0)
      continue;
    if (!dims.isBound(dim)) {
      dims.bind(dim, t.shape[d], "'" + std::string(name) + "'");
    } else if (dims.values[dim] != t.shape[d]) {
      return ctx.fail(
          RECUR_ERROR_SHAPE,
          "dimension %s is %lld in %s but %lld "
          "in '%s'",
          dimName(info, desc, d), static_cast<long long>(dims.values[dim]),
          dims.sources[dim].c_str(), static_cast<long long>(t.shape[d]), name);
    }
  }
  int64_t count;
  size_t bytes;
  if (!elementCount(t.rank, t.shape, count) ||
      !byteCount(count, t.dtype, bytes))
    return ctx.fail(RECUR_ERROR_SHAPE, "%s '%s' of shape %s is too large", role,
                    name, formatShape(t.rank, t.shape).c_str());
  if (count > 0 && !t.data)
    return ctx.fail(RECUR_ERROR_NULL_POINTER,
                    "%s '%s' has %lld elements but its data is NULL", role,
                    name, static_cast<long long>(count));
  return RECUR_OK;
}

recur_status recur::rt::requireBound(const Context &ctx, const LayerInfo &info,
                                     const recur_arg_desc &desc,
                                     const DimBinding &dims) {
  for (int32_t d = 0; d < desc.rank; ++d) {
    int32_t dim = runtimeDim(desc.shape[d]);
    if (dim >= 0 && !dims.isBound(dim))
      return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                      "dimension %s of '%s' is not set by any input, param, "
                      "output or state",
                      dimName(info, desc, d), nameOr(desc.name));
  }
  return RECUR_OK;
}

void recur::rt::resolveShape(const recur_arg_desc &desc, const DimBinding &dims,
                             int64_t *shape) {
  for (int32_t d = 0; d < desc.rank; ++d) {
    int32_t dim = runtimeDim(desc.shape[d]);
    shape[d] = dim < 0 ? desc.shape[d] : dims.values[dim];
  }
}
