//===- Internal.h - shared helpers of librecur_rt ---------------*- C++ -*-===//
//
// Part of the Recur project.
//
// What the runtime's source files share: error reporting, the tracked
// allocator behind the kernels' buffers, the device error of generated host
// code, strided element copies, layer descriptor checks and the definition
// of `recur_state`. Nothing here is part of the public API
// (include/recur/Runtime/recur_rt.h).
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_RUNTIME_INTERNAL_H
#define RECUR_LIB_RUNTIME_INTERNAL_H

#include "recur/Runtime/recur_rt.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

namespace recur {
namespace rt {

//===----------------------------------------------------------------------===//
// Errors (Error.cpp)
//===----------------------------------------------------------------------===//

/// Records `format` as this thread's last error and returns `status`.
recur_status setError(recur_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// The API function and layer a message is about: every message starts with
/// "function(layer): ".
class Context {
public:
  Context(const char *function, const recur_layer_desc *layer)
      : function(function), layer(layer) {}

  /// Records "function(layer): <format>" and returns `status`.
  recur_status fail(recur_status status, const char *format, ...) const
      __attribute__((format(printf, 3, 4)));

private:
  const char *function;
  const recur_layer_desc *layer;
};

/// Runs `body` (which returns a recur_status) and turns an exception that
/// would escape it (only std::bad_alloc of the bookkeeping containers in
/// practice) into a status: nothing the runtime calls may unwind into C.
template <typename Body>
recur_status guarded(const char *function, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return setError(RECUR_ERROR_OUT_OF_MEMORY, "%s: out of memory", function);
  } catch (...) {
    return setError(RECUR_ERROR_INTERNAL, "%s: unexpected C++ exception",
                    function);
  }
}

/// The value of an enum field a caller filled in, read as an integer: a
/// value outside the enum (a damaged descriptor, a dtype of a newer header)
/// is then an error to report rather than undefined behavior.
template <typename Enum> int64_t rawValue(const Enum &e) {
  static_assert(std::is_enum<Enum>::value, "rawValue reads enums");
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &e, sizeof(value));
  return static_cast<int64_t>(value);
}

/// A tensor or layer name for messages ("?" when NULL).
inline const char *nameOr(const char *name) { return name ? name : "?"; }

//===----------------------------------------------------------------------===//
// Memory (Memory.cpp)
//===----------------------------------------------------------------------===//

/// The alignment of every buffer the runtime hands out.
constexpr size_t kAlignment = 64;

/// Allocates `bytes` (at least one byte) aligned to max(alignment,
/// kAlignment), records it in the registry and the memory stats; NULL when
/// the memory is not there. Thread-safe.
void *trackedAlloc(size_t alignment, size_t bytes);
/// Frees a pointer trackedAlloc returned; any other pointer (NULL, a
/// pointer freed already, a pointer of someone else) is left alone.
void trackedFree(void *ptr);
/// Whether `ptr` is a live buffer of trackedAlloc.
bool isTracked(const void *ptr);

/// The megabytes the environment variable `name` gives, in bytes:
/// `defaultMb` when it is unset, empty or not a whole number (the limits of
/// the host and device buffer caches).
size_t megabytesFromEnv(const char *name, size_t defaultMb);

/// Tracked buffers that are freed when the list goes out of scope, unless
/// released first.
class BufferList {
public:
  BufferList() = default;
  BufferList(const BufferList &) = delete;
  BufferList &operator=(const BufferList &) = delete;
  ~BufferList();

  /// Adds `ptr` unless it is NULL or listed already.
  void add(void *ptr);
  bool contains(const void *ptr) const;
  /// Drops `ptr` from the list without freeing it.
  void release(const void *ptr);

private:
  std::vector<void *> buffers;
};

//===----------------------------------------------------------------------===//
// CUDA devices (Cuda.cpp)
//===----------------------------------------------------------------------===//

/// Returns and clears the first failure of the generated host code's mgpu*
/// calls on this thread (RECUR_OK when there was none), its message in
/// `message` (unless NULL). recur_cuda_take_error is this for C callers.
recur_status takeDeviceError(std::string *message);

//===----------------------------------------------------------------------===//
// Tensors and elements (Tensor.cpp)
//===----------------------------------------------------------------------===//

/// recur_dtype_size and recur_dtype_name of a dtype value.
size_t dtypeSize(int64_t dtype);
const char *dtypeName(int64_t dtype);
inline bool isKnownDtype(const recur_dtype &dtype) {
  return dtypeSize(rawValue(dtype)) != 0;
}

/// A strided view for copies; strides count elements.
struct View {
  char *data;
  recur_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  const int64_t *strides;
};

/// The element count of `shape`; false when it is negative or overflows.
bool elementCount(int32_t rank, const int64_t *shape, int64_t &count);
/// The byte size of `count` elements of `dtype`; false on overflow.
bool byteCount(int64_t count, recur_dtype dtype, size_t &bytes);
/// Fills `strides` with the row-major strides of `shape`.
void rowMajorStrides(int32_t rank, const int64_t *shape, int64_t *strides);
/// Whether a view of `shape` with `strides` is row-major contiguous (the
/// strides of size-1 dimensions do not matter; an empty view always is).
bool isRowMajor(int32_t rank, const int64_t *shape, const int64_t *strides);
/// Copies `src` into `dst` (same shape), converting each element when the
/// dtypes differ.
void copyView(const View &src, const View &dst);
/// Sets `count` elements at `data` to `value` (complex: {value, 0}).
void fillElements(recur_dtype dtype, void *data, int64_t count, double value);
/// Appends the memref descriptor of a row-major buffer of `shape` (the
/// kernel's argument words) to `words`.
void pushMemRef(std::vector<int64_t> &words, void *allocated, void *aligned,
                int32_t rank, const int64_t *shape);
/// "[2, 5, 128]".
std::string formatShape(int32_t rank, const int64_t *shape);

//===----------------------------------------------------------------------===//
// Layer descriptors (Layer.cpp)
//===----------------------------------------------------------------------===//

/// A checked layer descriptor with its tensors sorted by role and index.
struct LayerInfo {
  const recur_layer_desc *desc = nullptr;
  std::vector<const recur_arg_desc *> inputs, params, states, outputs;
  /// Per state: its next_state result, or NULL when the kernel keeps it.
  std::vector<const recur_arg_desc *> nextStates;
};

/// Checks `layer` (ABI version, counts, roles, indices, dtypes, ranks and
/// shapes of every argument and result) and fills `info`.
recur_status analyzeLayer(const Context &ctx, const recur_layer_desc *layer,
                          LayerInfo &info);

/// The values of a layer's runtime dimensions as the tensors of a call bind
/// them, with the tensor that bound each (for messages).
struct DimBinding {
  explicit DimBinding(int32_t count)
      : values(static_cast<size_t>(count), -1),
        sources(static_cast<size_t>(count)) {}
  bool isBound(int32_t dim) const { return values[dim] >= 0; }
  /// Sets runtime dimension `dim` to `value`, as `source` says.
  void bind(int32_t dim, int64_t value, std::string source) {
    values[dim] = value;
    sources[dim] = std::move(source);
  }

  std::vector<int64_t> values;
  /// "'x'" or "the state": what set each dimension.
  std::vector<std::string> sources;
};

/// Checks user tensor `t` against `desc` (rank, dtype, static sizes, data)
/// and binds or checks its runtime dimensions. `role` names the kind of
/// tensor in messages ("input", "param", "output").
recur_status bindTensor(const Context &ctx, const LayerInfo &info,
                        const char *role, const recur_arg_desc &desc,
                        const recur_tensor &t, DimBinding &dims);

/// Whether every runtime dimension `desc` uses is bound; else reports it.
recur_status requireBound(const Context &ctx, const LayerInfo &info,
                          const recur_arg_desc &desc, const DimBinding &dims);

/// The shape of `desc` once its runtime dimensions are bound.
void resolveShape(const recur_arg_desc &desc, const DimBinding &dims,
                  int64_t *shape);

/// The name of dimension `pos` of `desc` for messages.
const char *dimName(const LayerInfo &info, const recur_arg_desc &desc,
                    int32_t pos);

/// "[B, T, D = 256]": the shape `desc` asks for.
std::string formatExpected(const LayerInfo &info, const recur_arg_desc &desc);

/// Whether two descriptors of tensors have the same dtype, rank and shape.
bool sameSignature(const recur_arg_desc &a, const recur_arg_desc &b);

//===----------------------------------------------------------------------===//
// States (State.cpp)
//===----------------------------------------------------------------------===//

/// One tensor of a state: a contiguous buffer the state owns.
struct StateTensor {
  const recur_arg_desc *desc = nullptr;
  int64_t shape[RECUR_MAX_RANK] = {};
  int64_t numel = 0;
  size_t bytes = 0;
  /// What trackedFree releases (NULL for an empty tensor).
  void *allocated = nullptr;
  /// The first element: `allocated`, or inside it for an adopted result.
  char *data = nullptr;
};

} // namespace rt
} // namespace recur

/// The state a layer carries between calls. It keeps a pointer to its layer
/// descriptor (for the init rules), which must outlive it; recurc's
/// descriptors are static.
struct recur_state {
  recur_state() = default;
  recur_state(const recur_state &) = delete;
  recur_state &operator=(const recur_state &) = delete;
  ~recur_state();

  recur::rt::LayerInfo info;
  int64_t batch = 0;
  std::vector<recur::rt::StateTensor> tensors;
};

namespace recur {
namespace rt {

using StatePtr = std::unique_ptr<recur_state>;

/// Makes a state of `batch` rows for the layer of `info` set to its init
/// rules (params as for recur_state_create).
recur_status createState(const Context &ctx, const LayerInfo &info,
                         int64_t batch, const recur_tensor *params,
                         StatePtr &out);

/// Whether `state` was made for the layer of `info`: the same descriptor,
/// or one with the same id and the same state tensors.
recur_status checkStateFits(const Context &ctx, const LayerInfo &info,
                            const recur_state &state);

} // namespace rt
} // namespace recur

#endif // RECUR_LIB_RUNTIME_INTERNAL_H
