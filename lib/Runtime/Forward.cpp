//===- Forward.cpp - recur_forward, recur_step and recur_backward ---------===//
//
// Part of the Recur project.
//
// A call checks the user's tensors against the layer, packs the kernel's
// arguments as flattened memref descriptors (contiguous copies of strided
// tensors, the state's own buffers), runs the kernel and unpacks its
// results: outputs are copied into the user's tensors, next states adopted
// (a fresh buffer of the kernel's) or copied into buffers of the state.
// A kernel with output destinations (recurc's CPU kernels) is also given,
// after its arguments, the buffer to write each output into: the user's
// tensor itself when it is row-major and shares no memory with anything
// the kernel reads or another output, so the output is written once and
// never copied.
//
// The kernel may return any pointer as a result: a buffer it allocated, one
// of its arguments passed through, a constant global, the same buffer twice.
// Only the buffers it allocated for this call (tracked and not an argument)
// are the runtime's to free or adopt, each exactly once.
//
// A CUDA layer's kernel takes and returns device buffers: the call copies
// each argument to device memory, runs the kernel on the copies, and
// copies each result back into a buffer of the runtime's, so that the rest
// of the call is the same for both devices.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cstring>
#include <string>

using namespace recur::rt;

namespace {

/// A memref descriptor: one kernel argument or result.
struct MemRef {
  void *allocated = nullptr;
  char *aligned = nullptr;
  int64_t offset = 0;
  int32_t rank = 0;
  int64_t sizes[RECUR_MAX_RANK] = {};
  int64_t strides[RECUR_MAX_RANK] = {};

  /// The first element, for elements of `dtype`.
  char *first(recur_dtype dtype) const {
    return aligned + offset * static_cast<int64_t>(recur_dtype_size(dtype));
  }
};

/// Copies kernel result `ref` (of `desc`) into the user's tensor `out`,
/// unless the kernel wrote it there (the tensor was its destination).
void copyResult(const recur_arg_desc &desc, const MemRef &ref,
                const recur_tensor &out) {
  if (ref.first(desc.dtype) == out.data &&
      isRowMajor(ref.rank, ref.sizes, ref.strides) &&
      isRowMajor(out.rank, out.shape, out.strides))
    return;
  copyView(
      {ref.first(desc.dtype), desc.dtype, ref.rank, ref.sizes, ref.strides},
      {static_cast<char *>(out.data), out.dtype, out.rank, out.shape,
       out.strides});
}

/// Writes `ref` as descriptor words at `words`, advancing it.
void putMemRef(int64_t *&words, const MemRef &ref) {
  words[0] = static_cast<int64_t>(reinterpret_cast<intptr_t>(ref.allocated));
  words[1] = static_cast<int64_t>(reinterpret_cast<intptr_t>(ref.aligned));
  words[2] = ref.offset;
  std::memcpy(words + 3, ref.sizes, ref.rank * sizeof(int64_t));
  std::memcpy(words + 3 + ref.rank, ref.strides, ref.rank * sizeof(int64_t));
  words += 3 + 2 * ref.rank;
}

/// The elements from `ref.aligned` to the last element of `ref` (0 when it
/// has none): what a copy of its buffer must cover.
int64_t elementSpan(const MemRef &ref) {
  int64_t last = ref.offset;
  for (int32_t d = 0; d < ref.rank; ++d) {
    if (ref.sizes[d] == 0)
      return 0;
    last += (ref.sizes[d] - 1) * ref.strides[d];
  }
  return last + 1;
}

/// A copy of this thread's last error message, to quote in a new one (which
/// overwrites the buffer recur_last_error() points to).
std::string lastError() { return recur_last_error(); }

/// Device buffers freed when this goes out of scope.
struct DeviceBuffers {
  std::vector<void *> buffers;
  DeviceBuffers() = default;
  DeviceBuffers(const DeviceBuffers &) = delete;
  DeviceBuffers &operator=(const DeviceBuffers &) = delete;
  ~DeviceBuffers() {
    for (void *buffer : buffers)
      recur_cuda_free(buffer);
  }
  bool contains(const void *ptr) const {
    for (void *buffer : buffers)
      if (buffer == ptr)
        return true;
    return false;
  }
};

/// Reads a descriptor of `rank` from `words`, advancing it.
MemRef popMemRef(const int64_t *&words, int32_t rank) {
  MemRef ref;
  ref.allocated = reinterpret_cast<void *>(static_cast<intptr_t>(words[0]));
  ref.aligned = reinterpret_cast<char *>(static_cast<intptr_t>(words[1]));
  ref.offset = words[2];
  ref.rank = rank;
  std::memcpy(ref.sizes, words + 3, rank * sizeof(int64_t));
  std::memcpy(ref.strides, words + 3 + rank, rank * sizeof(int64_t));
  words += 3 + 2 * rank;
  return ref;
}

/// The bytes a view spans, from its lowest to past its highest element
/// (empty when it has no elements).
struct Span {
  const char *lo = nullptr, *hi = nullptr;
  bool overlaps(const Span &other) const {
    return lo < other.hi && other.lo < hi;
  }
};

Span viewSpan(const void *data, recur_dtype dtype, int32_t rank,
              const int64_t *shape, const int64_t *strides) {
  int64_t lo = 0, hi = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (shape[d] == 0)
      return {};
    int64_t extent = (shape[d] - 1) * strides[d];
    (extent < 0 ? lo : hi) += extent;
  }
  auto elem = static_cast<int64_t>(recur_dtype_size(dtype));
  const char *base = static_cast<const char *>(data);
  return {base + lo * elem, base + (hi + 1) * elem};
}

Span tensorSpan(const recur_tensor &t) {
  return viewSpan(t.data, t.dtype, t.rank, t.shape, t.strides);
}

/// The words of the descriptors of `descs`.
size_t wordCount(const recur_arg_desc *descs, int32_t count) {
  size_t words = 0;
  for (int32_t i = 0; i < count; ++i)
    words += 3 + 2 * static_cast<size_t>(descs[i].rank);
  return words;
}

/// A new buffer of state tensor `index`, to be committed to the state.
struct NextBuffer {
  size_t index;
  void *allocated;
  char *data;
};

/// The tensors of a recur_backward call beyond those of a forward one.
struct BackwardArrays {
  const recur_tensor *dOutputs = nullptr, *dStates = nullptr;
  const recur_tensor *gradInputs = nullptr, *gradParams = nullptr,
                     *gradStates = nullptr;
};

/// One recur_forward, recur_step or recur_backward call.
class Call {
public:
  Call(const char *function, const recur_layer_desc *layer,
       const recur_tensor *inputs, const recur_tensor *params,
       recur_state *state, const recur_tensor *outputs, bool isStep,
       const BackwardArrays *backward = nullptr)
      : ctx(function, layer), layer(layer), inputs(inputs), params(params),
        state(state), outputs(outputs), isStep(isStep), backward(backward),
        dims(0) {}

  recur_status run();

private:
  recur_status checkArrays() const;
  recur_status bindAll();
  recur_status bindState();
  recur_status checkSizes() const;
  recur_status checkBound() const;
  recur_status packArgument(const recur_arg_desc &arg, const recur_state &st,
                            std::vector<int64_t> &words);
  recur_status packTensor(const recur_arg_desc &desc, const recur_tensor &t,
                          std::vector<int64_t> &words);
  std::vector<Span> readSpans(const recur_state &st) const;
  recur_status packDestination(const recur_arg_desc &desc,
                               const recur_tensor *wanted,
                               std::vector<Span> &taken,
                               std::vector<int64_t> &words);
  recur_status packOutputDestinations(const recur_state &st,
                                      std::vector<int64_t> &words);
  recur_status packGradDestinations(const recur_state &st,
                                    std::vector<int64_t> &words);
  const recur_tensor *gradTensor(const recur_arg_desc &desc) const;
  recur_status bindBackward();
  recur_status packCotangents(std::vector<int64_t> &words);
  recur_status unpackGrads(const std::vector<int64_t> &words);
  void copyGrads() const;
  recur_status unpackResults(const std::vector<int64_t> &words);
  recur_status checkResult(const recur_arg_desc &desc, const MemRef &ref) const;
  bool isArgument(const void *ptr) const;
  bool adoptable(size_t result) const;
  recur_status prepareNextState(size_t result, std::vector<NextBuffer> &next,
                                BufferList &fresh) const;
  void copyOutputs() const;
  recur_status runOnDevice(recur_kernel_fn kernel,
                           const std::vector<const recur_arg_desc *> &ins,
                           const std::vector<const recur_arg_desc *> &outs,
                           std::vector<int64_t> &in, std::vector<int64_t> &out,
                           BufferList &hostResults);
  void commit(const std::vector<NextBuffer> &next, BufferList &fresh);

  Context ctx;
  const recur_layer_desc *layer;
  const recur_tensor *inputs, *params;
  recur_state *state;
  const recur_tensor *outputs;
  bool isStep;
  /// Set for recur_backward.
  const BackwardArrays *backward;

  LayerInfo info;
  DimBinding dims;
  /// The allocated pointers of the kernel's arguments.
  std::vector<const void *> argumentBuffers;
  /// Contiguous copies of strided user tensors.
  BufferList copies;
  /// The buffers passed for the outputs (output destinations), in order.
  std::vector<MemRef> destinations;
  /// The kernel's results (with the outputs' destinations in their place),
  /// and the buffers it made for them.
  std::vector<MemRef> results;
  BufferList owned;
};

recur_status Call::checkArrays() const {
  struct Array {
    const recur_tensor *tensors;
    int32_t count;
    const char *name;
  };
  const recur_tensor *outs = backward ? backward->dOutputs : outputs;
  for (const Array &array :
       {Array{inputs, layer->num_inputs, "inputs"},
        Array{params, layer->num_params, "params"},
        Array{outs, layer->num_outputs, backward ? "d_outputs" : "outputs"}})
    if (array.count > 0 && !array.tensors)
      return ctx.fail(RECUR_ERROR_NULL_POINTER,
                      "%s is NULL, but the layer has %d %s", array.name,
                      array.count, array.name);
  return RECUR_OK;
}

/// Checks the inputs, params, state and outputs in that order; the first
/// tensor that uses a runtime dimension sets it.
recur_status Call::bindAll() {
  for (size_t i = 0; i < info.inputs.size(); ++i)
    if (recur_status status =
            bindTensor(ctx, info, "input", *info.inputs[i], inputs[i], dims))
      return status;
  for (size_t i = 0; i < info.params.size(); ++i)
    if (recur_status status =
            bindTensor(ctx, info, "param", *info.params[i], params[i], dims))
      return status;
  if (recur_status status = bindState())
    return status;
  if (backward)
    return bindBackward();
  for (size_t i = 0; i < info.outputs.size(); ++i)
    if (recur_status status =
            bindTensor(ctx, info, "output", *info.outputs[i], outputs[i], dims))
      return status;
  return RECUR_OK;
}

recur_status Call::bindState() {
  if (!state)
    return RECUR_OK;
  if (recur_status status = checkStateFits(ctx, info, *state))
    return status;
  int32_t batchDim = layer->batch_dim;
  if (batchDim < 0)
    return RECUR_OK;
  if (!dims.isBound(batchDim)) {
    dims.bind(batchDim, state->batch, "the state");
    return RECUR_OK;
  }
  if (dims.values[batchDim] != state->batch) {
    const char *name =
        nameOr(layer->runtime_dim_names ? layer->runtime_dim_names[batchDim]
                                        : nullptr);
    return ctx.fail(RECUR_ERROR_STATE,
                    "the state has batch %lld, but %s is %lld in %s",
                    static_cast<long long>(state->batch), name,
                    static_cast<long long>(dims.values[batchDim]),
                    dims.sources[batchDim].c_str());
  }
  return RECUR_OK;
}

/// Every runtime size at least the layer's minimum, and a step's time
/// dimension exactly one step.
recur_status Call::checkSizes() const {
  for (int32_t d = 0; layer->runtime_dim_min && d < layer->num_runtime_dims;
       ++d)
    if (dims.isBound(d) && dims.values[d] < layer->runtime_dim_min[d])
      return ctx.fail(
          RECUR_ERROR_SHAPE,
          "dimension %s is %lld in %s, but the layer reads at least %lld "
          "positions of it per call (it slices them)",
          nameOr(layer->runtime_dim_names ? layer->runtime_dim_names[d]
                                          : nullptr),
          static_cast<long long>(dims.values[d]), dims.sources[d].c_str(),
          static_cast<long long>(layer->runtime_dim_min[d]));
  int32_t timeDim = layer->time_dim;
  if (!isStep || timeDim < 0 || !dims.isBound(timeDim) ||
      dims.values[timeDim] == layer->step_length)
    return RECUR_OK;
  const char *name = nameOr(
      layer->runtime_dim_names ? layer->runtime_dim_names[timeDim] : nullptr);
  return ctx.fail(RECUR_ERROR_SHAPE,
                  "dimension %s is %lld in %s, but a step covers %lld "
                  "position(s)",
                  name, static_cast<long long>(dims.values[timeDim]),
                  dims.sources[timeDim].c_str(),
                  static_cast<long long>(layer->step_length));
}

recur_status Call::checkBound() const {
  auto check = [&](const recur_arg_desc *descs, int32_t count) {
    for (int32_t i = 0; i < count; ++i)
      if (recur_status status = requireBound(ctx, info, descs[i], dims))
        return status;
    return RECUR_OK;
  };
  if (recur_status status = check(layer->args, layer->num_args))
    return status;
  return check(layer->results, layer->num_results);
}

/// Appends the descriptor of kernel argument `arg` to `words`: a user tensor
/// as is when it is row-major, else a contiguous copy; a state's buffer.
recur_status Call::packArgument(const recur_arg_desc &arg,
                                const recur_state &st,
                                std::vector<int64_t> &words) {
  if (arg.role == RECUR_ROLE_STATE) {
    const StateTensor &tensor = st.tensors[arg.index];
    argumentBuffers.push_back(tensor.allocated);
    pushMemRef(words, tensor.allocated, tensor.data, arg.rank, tensor.shape);
    return RECUR_OK;
  }
  const recur_tensor &t =
      arg.role == RECUR_ROLE_INPUT ? inputs[arg.index] : params[arg.index];
  return packTensor(arg, t, words);
}

/// Appends the descriptor of user tensor `t` (checked against `desc`): as
/// is when it is row-major, else a contiguous copy.
recur_status Call::packTensor(const recur_arg_desc &desc, const recur_tensor &t,
                              std::vector<int64_t> &words) {
  void *data = t.data;
  if (!isRowMajor(t.rank, t.shape, t.strides)) {
    int64_t count = recur_tensor_numel(&t);
    size_t bytes = static_cast<size_t>(count) * recur_dtype_size(t.dtype);
    data = trackedAlloc(kAlignment, bytes);
    if (!data)
      return ctx.fail(RECUR_ERROR_OUT_OF_MEMORY,
                      "cannot allocate %zu bytes for a contiguous copy of "
                      "'%s'",
                      bytes, nameOr(desc.name));
    copies.add(data);
    int64_t strides[RECUR_MAX_RANK];
    rowMajorStrides(t.rank, t.shape, strides);
    copyView({static_cast<char *>(t.data), t.dtype, t.rank, t.shape, t.strides},
             {static_cast<char *>(data), t.dtype, t.rank, t.shape, strides});
  }
  if (recur_tensor_numel(&t) == 0)
    data = nullptr;
  argumentBuffers.push_back(data);
  pushMemRef(words, data, data, t.rank, t.shape);
  return RECUR_OK;
}

/// The memory the kernel reads: the user's inputs and params, the state's
/// tensors and, for a backward call, the cotangents.
std::vector<Span> Call::readSpans(const recur_state &st) const {
  std::vector<Span> spans;
  for (int32_t i = 0; i < layer->num_inputs; ++i)
    spans.push_back(tensorSpan(inputs[i]));
  for (int32_t i = 0; i < layer->num_params; ++i)
    spans.push_back(tensorSpan(params[i]));
  for (const StateTensor &tensor : st.tensors)
    spans.push_back({tensor.data, tensor.data + tensor.bytes});
  if (backward) {
    for (int32_t i = 0; i < layer->num_outputs; ++i)
      spans.push_back(tensorSpan(backward->dOutputs[i]));
    for (int32_t i = 0; backward->dStates && i < layer->num_states; ++i)
      if (backward->dStates[i].data)
        spans.push_back(tensorSpan(backward->dStates[i]));
  }
  return spans;
}

/// Appends the destination of the kernel result `desc` (an output, or for
/// a backward call a gradient): the user's tensor `wanted` when it is
/// row-major and overlaps nothing in `taken`, else a contiguous buffer of
/// the call's (copied out afterwards; for a gradient nobody wants, just
/// written). `taken` gains the tensor's memory.
recur_status Call::packDestination(const recur_arg_desc &desc,
                                   const recur_tensor *wanted,
                                   std::vector<Span> &taken,
                                   std::vector<int64_t> &words) {
  int64_t shape[RECUR_MAX_RANK];
  resolveShape(desc, dims, shape);
  int64_t count;
  elementCount(desc.rank, shape, count);
  void *data = nullptr;
  if (wanted && count > 0) {
    Span span = tensorSpan(*wanted);
    if (isRowMajor(wanted->rank, wanted->shape, wanted->strides) &&
        std::none_of(taken.begin(), taken.end(),
                     [&](const Span &other) { return span.overlaps(other); }))
      data = wanted->data;
    taken.push_back(span);
  }
  if (count > 0 && !data) {
    size_t bytes = static_cast<size_t>(count) * recur_dtype_size(desc.dtype);
    data = trackedAlloc(kAlignment, bytes);
    if (!data)
      return ctx.fail(
          RECUR_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s '%s'",
          bytes, backward ? "the gradient of" : "output", nameOr(desc.name));
    copies.add(data);
  }
  argumentBuffers.push_back(data);
  MemRef ref;
  ref.allocated = data;
  ref.aligned = static_cast<char *>(data);
  ref.rank = desc.rank;
  std::copy(shape, shape + desc.rank, ref.sizes);
  rowMajorStrides(desc.rank, shape, ref.strides);
  destinations.push_back(ref);
  pushMemRef(words, data, data, desc.rank, shape);
  return RECUR_OK;
}

/// Appends one destination per output of a forward or step call.
recur_status Call::packOutputDestinations(const recur_state &st,
                                          std::vector<int64_t> &words) {
  std::vector<Span> taken = readSpans(st);
  for (int32_t r = 0; r < layer->num_results; ++r) {
    const recur_arg_desc &desc = layer->results[r];
    if (desc.role == RECUR_ROLE_OUTPUT)
      if (recur_status status =
              packDestination(desc, &outputs[desc.index], taken, words))
        return status;
  }
  return RECUR_OK;
}

/// Appends one destination per kernel argument of a backward call, its
/// gradient: the tensor the caller wants it in, if any.
recur_status Call::packGradDestinations(const recur_state &st,
                                        std::vector<int64_t> &words) {
  std::vector<Span> taken = readSpans(st);
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &desc = layer->args[i];
    const recur_tensor *wanted = gradTensor(desc);
    if (recur_status status = packDestination(desc, wanted, taken, words))
      return status;
  }
  return RECUR_OK;
}

/// The tensor the caller of a backward call wants the gradient of kernel
/// argument `desc` in, or NULL.
const recur_tensor *Call::gradTensor(const recur_arg_desc &desc) const {
  const recur_tensor *array =
      desc.role == RECUR_ROLE_INPUT   ? backward->gradInputs
      : desc.role == RECUR_ROLE_PARAM ? backward->gradParams
                                      : backward->gradStates;
  if (!array || !array[desc.index].data)
    return nullptr;
  return &array[desc.index];
}

bool Call::isArgument(const void *ptr) const {
  for (const void *arg : argumentBuffers)
    if (arg == ptr)
      return true;
  return false;
}

/// Checks that a result has the shape its descriptor and the call's
/// dimensions give.
recur_status Call::checkResult(const recur_arg_desc &desc,
                               const MemRef &ref) const {
  int64_t expected[RECUR_MAX_RANK];
  resolveShape(desc, dims, expected);
  if (std::memcmp(expected, ref.sizes, desc.rank * sizeof(int64_t)))
    return ctx.fail(RECUR_ERROR_INTERNAL,
                    "the kernel returned %s '%s' of shape %s, expected %s",
                    desc.role == RECUR_ROLE_OUTPUT ? "output" : "next state",
                    nameOr(desc.name),
                    formatShape(desc.rank, ref.sizes).c_str(),
                    formatShape(desc.rank, expected).c_str());
  int64_t count;
  elementCount(desc.rank, expected, count);
  if (count > 0 && !ref.aligned)
    return ctx.fail(RECUR_ERROR_INTERNAL,
                    "the kernel returned a NULL buffer for '%s'",
                    nameOr(desc.name));
  return RECUR_OK;
}

/// Reads the results and takes the buffers the kernel made for them (each
/// once); then checks their shapes.
recur_status Call::unpackResults(const std::vector<int64_t> &words) {
  const int64_t *cursor = words.data();
  size_t destination = 0;
  for (int32_t i = 0; i < layer->num_results; ++i) {
    // An output written into its destination is not among the words.
    if (layer->results[i].role == RECUR_ROLE_OUTPUT &&
        destination < destinations.size()) {
      results.push_back(destinations[destination++]);
      continue;
    }
    results.push_back(popMemRef(cursor, layer->results[i].rank));
    void *allocated = results.back().allocated;
    if (!isArgument(allocated) && isTracked(allocated))
      owned.add(allocated);
  }
  for (int32_t i = 0; i < layer->num_results; ++i)
    if (recur_status status = checkResult(layer->results[i], results[i]))
      return status;
  return RECUR_OK;
}

/// Whether next-state result `result` can become the state's buffer as is:
/// a row-major buffer the kernel made that no other next state uses.
bool Call::adoptable(size_t result) const {
  const MemRef &ref = results[result];
  if (!owned.contains(ref.allocated) ||
      !isRowMajor(ref.rank, ref.sizes, ref.strides))
    return false;
  for (size_t i = 0; i < results.size(); ++i)
    if (i != result && layer->results[i].role == RECUR_ROLE_NEXT_STATE &&
        results[i].allocated == ref.allocated)
      return false;
  return true;
}

/// Decides where next-state result `result` goes: nowhere when it is the
/// state's own buffer, the result's buffer when adoptable, else a fresh copy
/// (never into a state buffer in place: another result may still read it).
recur_status Call::prepareNextState(size_t result,
                                    std::vector<NextBuffer> &next,
                                    BufferList &fresh) const {
  const recur_arg_desc &desc = layer->results[result];
  const MemRef &ref = results[result];
  const StateTensor &tensor = state->tensors[desc.index];
  char *first = ref.first(desc.dtype);
  if (tensor.numel == 0 ||
      (first == tensor.data && isRowMajor(ref.rank, ref.sizes, ref.strides)))
    return RECUR_OK;
  if (adoptable(result)) {
    next.push_back({static_cast<size_t>(desc.index), ref.allocated, first});
    return RECUR_OK;
  }
  void *copy = trackedAlloc(kAlignment, tensor.bytes);
  if (!copy)
    return ctx.fail(RECUR_ERROR_OUT_OF_MEMORY,
                    "cannot allocate %zu bytes for state '%s'", tensor.bytes,
                    nameOr(desc.name));
  fresh.add(copy);
  int64_t strides[RECUR_MAX_RANK];
  rowMajorStrides(desc.rank, tensor.shape, strides);
  copyView({first, desc.dtype, ref.rank, ref.sizes, ref.strides},
           {static_cast<char *>(copy), desc.dtype, desc.rank, tensor.shape,
            strides});
  next.push_back(
      {static_cast<size_t>(desc.index), copy, static_cast<char *>(copy)});
  return RECUR_OK;
}

/// Runs CUDA kernel `kernel` on device copies of the arguments packed in
/// `in` (row-major buffers: user tensors or their contiguous copies, state
/// buffers, described in order by `ins`); leaves in `out` the results
/// (described by `outs`) copied back into tracked host buffers (in
/// `hostResults` until the call takes them), with their strides and
/// offsets. Results that share a device buffer share its host copy. A
/// forward kernel takes the layer's arguments and returns its results; a
/// backward kernel takes the arguments and a cotangent per result, and
/// returns a gradient per argument.
recur_status Call::runOnDevice(recur_kernel_fn kernel,
                               const std::vector<const recur_arg_desc *> &ins,
                               const std::vector<const recur_arg_desc *> &outs,
                               std::vector<int64_t> &in,
                               std::vector<int64_t> &out,
                               BufferList &hostResults) {
  DeviceBuffers arguments, made;
  std::vector<int64_t> deviceIn(in.size());
  const int64_t *cursor = in.data();
  int64_t *write = deviceIn.data();
  for (const recur_arg_desc *arg : ins) {
    const recur_arg_desc &desc = *arg;
    MemRef ref = popMemRef(cursor, desc.rank);
    size_t bytes =
        static_cast<size_t>(elementSpan(ref)) * recur_dtype_size(desc.dtype);
    void *device = nullptr;
    if (bytes > 0) {
      if (recur_status status = recur_cuda_malloc(bytes, &device))
        return ctx.fail(status, "cannot put '%s' on the device: %s",
                        nameOr(desc.name), lastError().c_str());
      arguments.buffers.push_back(device);
      if (recur_status status =
              recur_cuda_memcpy_htod(device, ref.aligned, bytes, nullptr))
        return ctx.fail(status, "cannot copy '%s' to the device: %s",
                        nameOr(desc.name), lastError().c_str());
    }
    ref.allocated = device;
    ref.aligned = static_cast<char *>(device);
    putMemRef(write, ref);
  }
  kernel(deviceIn.data(), out.data());
  // What the kernel allocated is freed with the arguments, whatever
  // happened.
  std::vector<MemRef> refs;
  cursor = out.data();
  for (const recur_arg_desc *result : outs) {
    refs.push_back(popMemRef(cursor, result->rank));
    void *buffer = refs.back().allocated;
    if (buffer && !arguments.contains(buffer) && !made.contains(buffer))
      made.buffers.push_back(buffer);
  }
  if (recur_status status = recur_cuda_take_error()) {
    return ctx.fail(status, "the CUDA kernel failed: %s", lastError().c_str());
  }
  // One host copy per device buffer, covering every result in it.
  struct Copy {
    char *device;
    int64_t bytes;
    char *host;
  };
  std::vector<Copy> copies;
  for (size_t i = 0; i < outs.size(); ++i) {
    const MemRef &ref = refs[i];
    int64_t bytes = elementSpan(ref) *
                    static_cast<int64_t>(recur_dtype_size(outs[i]->dtype));
    if (bytes == 0 || !ref.aligned)
      continue;
    auto it = std::find_if(copies.begin(), copies.end(), [&](const Copy &c) {
      return c.device == ref.aligned;
    });
    if (it == copies.end())
      copies.push_back({ref.aligned, bytes, nullptr});
    else
      it->bytes = std::max(it->bytes, bytes);
  }
  for (Copy &copy : copies) {
    copy.host = static_cast<char *>(
        trackedAlloc(kAlignment, static_cast<size_t>(copy.bytes)));
    if (!copy.host)
      return ctx.fail(RECUR_ERROR_OUT_OF_MEMORY,
                      "cannot allocate %lld bytes for a result",
                      static_cast<long long>(copy.bytes));
    hostResults.add(copy.host);
    if (recur_status status = recur_cuda_memcpy_dtoh(
            copy.host, copy.device, static_cast<size_t>(copy.bytes), nullptr))
      return ctx.fail(status, "cannot copy a result from the device: %s",
                      lastError().c_str());
  }
  int64_t *put = out.data();
  for (MemRef &ref : refs) {
    auto it = std::find_if(copies.begin(), copies.end(), [&](const Copy &c) {
      return c.device == ref.aligned;
    });
    ref.aligned = it == copies.end() ? nullptr : it->host;
    ref.allocated = ref.aligned;
    putMemRef(put, ref);
  }
  return RECUR_OK;
}

void Call::copyOutputs() const {
  for (size_t i = 0; i < results.size(); ++i) {
    const recur_arg_desc &desc = layer->results[i];
    if (desc.role != RECUR_ROLE_OUTPUT)
      continue;
    copyResult(desc, results[i], outputs[desc.index]);
  }
}

/// Gives the state its new buffers and frees the old ones.
void Call::commit(const std::vector<NextBuffer> &next, BufferList &fresh) {
  for (const NextBuffer &buffer : next) {
    StateTensor &tensor = state->tensors[buffer.index];
    trackedFree(tensor.allocated);
    tensor.allocated = buffer.allocated;
    tensor.data = buffer.data;
    fresh.release(buffer.allocated);
    owned.release(buffer.allocated);
  }
}

/// Checks the tensors of a backward call: the cotangents of the outputs and
/// of the final states (optional), and the gradients wanted (a NULL array,
/// or a tensor with NULL data, is not wanted).
recur_status Call::bindBackward() {
  for (size_t i = 0; i < info.outputs.size(); ++i)
    if (recur_status status =
            bindTensor(ctx, info, "d_output", *info.outputs[i],
                       backward->dOutputs[i], dims))
      return status;
  struct Wanted {
    const recur_tensor *tensors;
    const std::vector<const recur_arg_desc *> &descs;
    const char *role;
  };
  for (const Wanted &w :
       {Wanted{backward->dStates, info.states, "d_state"},
        Wanted{backward->gradInputs, info.inputs, "grad_input"},
        Wanted{backward->gradParams, info.params, "grad_param"},
        Wanted{backward->gradStates, info.states, "grad_state"}}) {
    if (!w.tensors)
      continue;
    for (size_t i = 0; i < w.descs.size(); ++i)
      if (w.tensors[i].data)
        if (recur_status status =
                bindTensor(ctx, info, w.role, *w.descs[i], w.tensors[i], dims))
          return status;
  }
  return RECUR_OK;
}

/// Appends the backward kernel's cotangent arguments, one per result of the
/// forward kernel: the user's d_outputs, and d_states or zeros.
recur_status Call::packCotangents(std::vector<int64_t> &words) {
  for (int32_t i = 0; i < layer->num_results; ++i) {
    const recur_arg_desc &r = layer->results[i];
    if (r.role == RECUR_ROLE_OUTPUT) {
      if (recur_status status =
              packTensor(r, backward->dOutputs[r.index], words))
        return status;
      continue;
    }
    const recur_tensor *t =
        backward->dStates ? &backward->dStates[r.index] : nullptr;
    if (t && t->data) {
      if (recur_status status = packTensor(r, *t, words))
        return status;
      continue;
    }
    int64_t shape[RECUR_MAX_RANK], count;
    size_t bytes;
    resolveShape(r, dims, shape);
    if (!elementCount(r.rank, shape, count) ||
        !byteCount(count, r.dtype, bytes))
      return ctx.fail(RECUR_ERROR_SHAPE, "state '%s' is too large",
                      nameOr(r.name));
    void *zeros = trackedAlloc(kAlignment, bytes);
    if (!zeros)
      return ctx.fail(RECUR_ERROR_OUT_OF_MEMORY,
                      "cannot allocate %zu bytes for the zero cotangent of "
                      "'%s'",
                      bytes, nameOr(r.name));
    std::memset(zeros, 0, bytes);
    copies.add(zeros);
    argumentBuffers.push_back(zeros);
    pushMemRef(words, zeros, zeros, r.rank, shape);
  }
  return RECUR_OK;
}

/// Reads the backward kernel's results: one gradient per forward argument.
recur_status Call::unpackGrads(const std::vector<int64_t> &words) {
  const int64_t *cursor = words.data();
  for (int32_t i = 0; i < layer->num_args; ++i) {
    // A gradient written into its destination is not among the words.
    if (static_cast<size_t>(i) < destinations.size()) {
      results.push_back(destinations[i]);
      continue;
    }
    results.push_back(popMemRef(cursor, layer->args[i].rank));
    void *allocated = results.back().allocated;
    if (!isArgument(allocated) && isTracked(allocated))
      owned.add(allocated);
  }
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &desc = layer->args[i];
    int64_t expected[RECUR_MAX_RANK], count;
    resolveShape(desc, dims, expected);
    if (std::memcmp(expected, results[i].sizes, desc.rank * sizeof(int64_t)))
      return ctx.fail(RECUR_ERROR_INTERNAL,
                      "the backward kernel returned the gradient of '%s' of "
                      "shape %s, expected %s",
                      nameOr(desc.name),
                      formatShape(desc.rank, results[i].sizes).c_str(),
                      formatShape(desc.rank, expected).c_str());
    elementCount(desc.rank, expected, count);
    if (count > 0 && !results[i].aligned)
      return ctx.fail(RECUR_ERROR_INTERNAL,
                      "the backward kernel returned a NULL gradient for '%s'",
                      nameOr(desc.name));
  }
  return RECUR_OK;
}

/// Copies each gradient the caller wants into its tensor.
void Call::copyGrads() const {
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &desc = layer->args[i];
    if (const recur_tensor *wanted = gradTensor(desc))
      copyResult(desc, results[i], *wanted);
  }
}

recur_status Call::run() {
  if (recur_status status = analyzeLayer(ctx, layer, info))
    return status;
  dims = DimBinding(layer->num_runtime_dims);
  recur_kernel_fn kernel = backward ? layer->backward : layer->kernel;
  if (!kernel && backward)
    return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                    "the layer has no backward kernel (recurc could not "
                    "derive one, and said why, or it compiled the layer with "
                    "--no-backward)");
  if (!kernel)
    return ctx.fail(RECUR_ERROR_NULL_POINTER, "the layer has no kernel");
  if (isStep && !state)
    return ctx.fail(RECUR_ERROR_NULL_POINTER,
                    "state is NULL; a step needs a state");
  if (recur_status status = checkArrays())
    return status;
  if (recur_status status = bindAll())
    return status;
  if (recur_status status = checkSizes())
    return status;
  if (recur_status status = checkBound())
    return status;

  // Without a state, the run starts from the init rules of a temporary one.
  StatePtr temporary;
  if (!state) {
    int64_t batch = layer->batch_dim >= 0 ? dims.values[layer->batch_dim] : 1;
    if (recur_status status = createState(ctx, info, batch, params, temporary))
      return status;
  }
  const recur_state &st = state ? *state : *temporary;

  std::vector<int64_t> in;
  in.reserve(wordCount(layer->args, layer->num_args));
  for (int32_t i = 0; i < layer->num_args; ++i)
    if (recur_status status = packArgument(layer->args[i], st, in))
      return status;
  // The descriptions of what a CUDA kernel reads and returns (its
  // arguments, then for a backward kernel a cotangent per result).
  auto descs = [](const recur_arg_desc *first, int32_t count,
                  std::vector<const recur_arg_desc *> &out) {
    for (int32_t i = 0; i < count; ++i)
      out.push_back(&first[i]);
  };
  if (backward) {
    if (recur_status status = packCotangents(in))
      return status;
    if (layer->output_destinations && layer->device == RECUR_DEVICE_CPU)
      if (recur_status status = packGradDestinations(st, in))
        return status;
    std::vector<int64_t> out(wordCount(layer->args, layer->num_args), 0);
    BufferList hostGrads;
    if (layer->device == RECUR_DEVICE_CUDA) {
      std::vector<const recur_arg_desc *> args;
      descs(layer->args, layer->num_args, args);
      std::vector<const recur_arg_desc *> ins = args;
      descs(layer->results, layer->num_results, ins);
      if (recur_status status =
              runOnDevice(kernel, ins, args, in, out, hostGrads))
        return status;
    } else {
      kernel(in.data(), out.data());
    }
    if (recur_status status = unpackGrads(out))
      return status;
    // The host copies of a CUDA kernel's gradients are the call's now.
    for (const MemRef &grad : results)
      hostGrads.release(grad.allocated);
    copyGrads();
    return RECUR_OK;
  }
  if (layer->output_destinations && layer->device == RECUR_DEVICE_CPU)
    if (recur_status status = packOutputDestinations(st, in))
      return status;
  std::vector<int64_t> out(wordCount(layer->results, layer->num_results), 0);
  BufferList hostResults;
  if (layer->device == RECUR_DEVICE_CUDA) {
    std::vector<const recur_arg_desc *> args, resultDescs;
    descs(layer->args, layer->num_args, args);
    descs(layer->results, layer->num_results, resultDescs);
    if (recur_status status =
            runOnDevice(kernel, args, resultDescs, in, out, hostResults))
      return status;
  } else {
    kernel(in.data(), out.data());
  }

  if (recur_status status = unpackResults(out))
    return status;
  // The host copies of a CUDA kernel's results are the call's now.
  for (size_t i = 0; i < results.size(); ++i)
    hostResults.release(results[i].allocated);
  std::vector<NextBuffer> next;
  BufferList fresh;
  for (size_t i = 0; state && i < results.size(); ++i)
    if (layer->results[i].role == RECUR_ROLE_NEXT_STATE)
      if (recur_status status = prepareNextState(i, next, fresh))
        return status;
  copyOutputs();
  if (state)
    commit(next, fresh);
  return RECUR_OK;
}

} // namespace

extern "C" recur_status recur_forward(const recur_layer_desc *layer,
                                      const recur_tensor *inputs,
                                      const recur_tensor *params,
                                      recur_state *state,
                                      const recur_tensor *outputs) {
  return guarded("recur_forward", [&] {
    return Call("recur_forward", layer, inputs, params, state, outputs,
                /*isStep=*/false)
        .run();
  });
}

extern "C" recur_status recur_step(const recur_layer_desc *layer,
                                   const recur_tensor *inputs,
                                   const recur_tensor *params,
                                   recur_state *state,
                                   const recur_tensor *outputs) {
  return guarded("recur_step", [&] {
    return Call("recur_step", layer, inputs, params, state, outputs,
                /*isStep=*/true)
        .run();
  });
}

extern "C" recur_status
recur_backward(const recur_layer_desc *layer, const recur_tensor *inputs,
               const recur_tensor *params, const recur_state *state,
               const recur_tensor *d_outputs, const recur_tensor *d_states,
               const recur_tensor *grad_inputs, const recur_tensor *grad_params,
               const recur_tensor *grad_states) {
  return guarded("recur_backward", [&] {
    BackwardArrays arrays{d_outputs, d_states, grad_inputs, grad_params,
                          grad_states};
    // The state is only read: the call starts from it and leaves it as it
    // was.
    return Call("recur_backward", layer, inputs, params,
                const_cast<recur_state *>(state), nullptr, /*isStep=*/false,
                &arrays)
        .run();
  });
}
