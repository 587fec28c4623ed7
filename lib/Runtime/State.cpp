//===- State.cpp - recurrent state: init rules, reset, save and load ------===//
//
// Part of the Recur project.
//
// A recur_state holds one contiguous buffer per state tensor of its layer.
// When the layer has a batch dimension every state tensor starts with it, so
// a row of the batch is a contiguous slice that reset can re-initialize on
// its own.
//
// Saved format (host byte order), followed by an FNV-1a 64 checksum of all
// the bytes before it:
//   "RECURST\0"  u32 format version  u32 state count  u64 layer id  i64 batch
//   per state:   u32 dtype  u32 rank  i64 shape[rank]
//   per state:   its elements, row-major
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstring>

using namespace recur::rt;

recur_state::~recur_state() {
  for (StateTensor &tensor : tensors)
    trackedFree(tensor.allocated);
}

namespace {

/// Whether the layer's states have a leading batch dimension.
bool isBatched(const LayerInfo &info) { return info.desc->batch_dim >= 0; }

/// The rows reset can address: the batch, or 1 without a batch dimension.
int64_t rowCount(const recur_state &state) {
  return isBatched(state.info) ? state.batch : 1;
}

/// Fills in the shape of state tensor `desc` for `batch` rows. Its runtime
/// dimensions must all be the batch dimension, in front.
recur_status shapeState(const Context &ctx, const LayerInfo &info,
                        const recur_arg_desc &desc, int64_t batch,
                        StateTensor &tensor) {
  const char *name = nameOr(desc.name);
  int32_t batchDim = info.desc->batch_dim;
  tensor.desc = &desc;
  for (int32_t d = 0; d < desc.rank; ++d) {
    int64_t entry = desc.shape[d];
    if (entry >= 0) {
      tensor.shape[d] = entry;
      continue;
    }
    if (-1 - entry != batchDim || d != 0)
      return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                      "state '%s' varies in dimension %s; a state may only "
                      "vary in the batch dimension, which must come first",
                      name, dimName(info, desc, d));
    tensor.shape[d] = batch;
  }
  if (batchDim >= 0 && (desc.rank == 0 || desc.shape[0] != -1 - batchDim))
    return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                    "state '%s' of shape %s does not start with the batch "
                    "dimension",
                    name, formatExpected(info, desc).c_str());
  if (!elementCount(desc.rank, tensor.shape, tensor.numel) ||
      !byteCount(tensor.numel, desc.dtype, tensor.bytes))
    return ctx.fail(RECUR_ERROR_OUT_OF_MEMORY,
                    "state '%s' for batch %lld is too large", name,
                    static_cast<long long>(batch));
  return RECUR_OK;
}

/// Where a state tensor's init values come from: for RECUR_INIT_PARAM, the
/// param, either one row (`perRow`) or the whole state.
struct InitSource {
  const recur_tensor *param = nullptr;
  bool perRow = false;
};

/// Checks the param of a RECUR_INIT_PARAM state tensor.
recur_status checkInitParam(const Context &ctx, const recur_state &state,
                            const StateTensor &tensor,
                            const recur_tensor *params, InitSource &source) {
  const LayerInfo &info = state.info;
  const recur_arg_desc &desc = *tensor.desc;
  const char *name = nameOr(desc.name);
  int32_t index = desc.init_param;
  if (index < 0 || static_cast<size_t>(index) >= info.params.size())
    return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                    "state '%s' is initialized from param %d, but the layer "
                    "has %zu params",
                    name, index, info.params.size());
  const recur_arg_desc &paramDesc = *info.params[index];
  if (!params)
    return ctx.fail(RECUR_ERROR_NULL_POINTER,
                    "state '%s' is initialized from param '%s', but params "
                    "is NULL",
                    name, nameOr(paramDesc.name));
  const recur_tensor &param = params[index];
  DimBinding dims(info.desc->num_runtime_dims);
  if (isBatched(info))
    dims.bind(info.desc->batch_dim, state.batch, "the state");
  if (recur_status status =
          bindTensor(ctx, info, "param", paramDesc, param, dims))
    return status;
  int32_t rank = desc.rank;
  size_t shapeBytes = sizeof(int64_t);
  if (param.rank == rank &&
      !std::memcmp(param.shape, tensor.shape, rank * shapeBytes)) {
    source = {&param, false};
  } else if (isBatched(info) && param.rank == rank - 1 &&
             !std::memcmp(param.shape, tensor.shape + 1,
                          (rank - 1) * shapeBytes)) {
    source = {&param, true};
  } else {
    return ctx.fail(RECUR_ERROR_SHAPE,
                    "param '%s' of shape %s cannot initialize state '%s' of "
                    "shape %s",
                    nameOr(paramDesc.name),
                    formatShape(param.rank, param.shape).c_str(), name,
                    formatShape(rank, tensor.shape).c_str());
  }
  return RECUR_OK;
}

/// Checks that the init rule of `tensor` can be applied with `params`.
recur_status checkInit(const Context &ctx, const recur_state &state,
                       const StateTensor &tensor, const recur_tensor *params,
                       InitSource &source) {
  const char *name = nameOr(tensor.desc->name);
  switch (rawValue(tensor.desc->init)) {
  case RECUR_INIT_ZEROS:
  case RECUR_INIT_ONES:
  case RECUR_INIT_CONST:
    return RECUR_OK;
  case RECUR_INIT_PARAM:
    return checkInitParam(ctx, state, tensor, params, source);
  case RECUR_INIT_NONE:
    return ctx.fail(RECUR_ERROR_UNSUPPORTED, "state '%s' has no init rule",
                    name);
  case RECUR_INIT_OTHER:
    return ctx.fail(RECUR_ERROR_UNSUPPORTED,
                    "state '%s' has a random init, which the runtime cannot "
                    "make; set the state with recur_state_load",
                    name);
  }
  return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT, "state '%s' has init kind %d",
                  name, static_cast<int>(rawValue(tensor.desc->init)));
}

/// Checks the init rules of all the tensors of `state`.
recur_status checkInits(const Context &ctx, const recur_state &state,
                        const recur_tensor *params,
                        std::vector<InitSource> &sources) {
  sources.assign(state.tensors.size(), InitSource());
  for (size_t i = 0; i < state.tensors.size(); ++i)
    if (recur_status status =
            checkInit(ctx, state, state.tensors[i], params, sources[i]))
      return status;
  return RECUR_OK;
}

/// Copies the init param of `tensor` into rows [begin, end).
void copyParamRows(const recur_state &state, const StateTensor &tensor,
                   const InitSource &source, int64_t begin, int64_t end) {
  const recur_arg_desc &desc = *tensor.desc;
  bool batched = isBatched(state.info);
  int32_t rowRank = batched ? desc.rank - 1 : desc.rank;
  const int64_t *rowShape = batched ? tensor.shape + 1 : tensor.shape;
  int64_t rowStrides[RECUR_MAX_RANK];
  rowMajorStrides(rowRank, rowShape, rowStrides);
  int64_t rowBytes = tensor.numel / rowCount(state) *
                     static_cast<int64_t>(recur_dtype_size(desc.dtype));
  const recur_tensor &param = *source.param;
  int64_t paramSize = static_cast<int64_t>(recur_dtype_size(param.dtype));
  for (int64_t row = begin; row < end; ++row) {
    View dst{tensor.data + row * rowBytes, desc.dtype, rowRank, rowShape,
             rowStrides};
    View src{static_cast<char *>(param.data), param.dtype, param.rank,
             param.shape, param.strides};
    if (batched && !source.perRow)
      src = {src.data + row * param.strides[0] * paramSize, param.dtype,
             param.rank - 1, param.shape + 1, param.strides + 1};
    copyView(src, dst);
  }
}

/// Applies the init rules of `state` to rows [begin, end); checkInits
/// filled `sources`.
void applyInits(recur_state &state, const std::vector<InitSource> &sources,
                int64_t begin, int64_t end) {
  int64_t rows = rowCount(state);
  if (rows == 0)
    return;
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    const StateTensor &tensor = state.tensors[i];
    const recur_arg_desc &desc = *tensor.desc;
    int64_t rowElements = tensor.numel / rows;
    char *first =
        tensor.data + begin * rowElements *
                          static_cast<int64_t>(recur_dtype_size(desc.dtype));
    int64_t count = (end - begin) * rowElements;
    switch (desc.init) {
    case RECUR_INIT_ONES:
      fillElements(desc.dtype, first, count, 1.0);
      break;
    case RECUR_INIT_CONST:
      fillElements(desc.dtype, first, count, desc.init_value);
      break;
    case RECUR_INIT_PARAM:
      copyParamRows(state, tensor, sources[i], begin, end);
      break;
    default:
      fillElements(desc.dtype, first, count, 0.0);
    }
  }
}

//===----------------------------------------------------------------------===//
// Serialization
//===----------------------------------------------------------------------===//

constexpr char kMagic[8] = {'R', 'E', 'C', 'U', 'R', 'S', 'T', '\0'};
/// The version of the saved format: 4, the ABI version it was introduced
/// with, and unchanged since (ABI version 5 changed only the descriptor).
constexpr uint32_t kStateFormatVersion = 4;

/// FNV-1a 64 of `size` bytes.
uint64_t fnv1a(const unsigned char *data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

/// Writes values one after the other.
class Writer {
public:
  explicit Writer(unsigned char *out) : out(out) {}
  void bytes(const void *data, size_t size) {
    if (size)
      std::memcpy(out, data, size);
    out += size;
  }
  template <typename T> void value(const T &v) { bytes(&v, sizeof(T)); }

private:
  unsigned char *out;
};

/// Reads values one after the other, failing at the end of the buffer.
class Reader {
public:
  Reader(const unsigned char *data, size_t size)
      : start(data), pos(data), end(data + size) {}
  template <typename T> bool value(T &v) {
    if (static_cast<size_t>(end - pos) < sizeof(T))
      return false;
    std::memcpy(&v, pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }
  size_t offset() const { return static_cast<size_t>(pos - start); }

private:
  const unsigned char *start, *pos, *end;
};

/// The header of a saved state.
struct SavedTensor {
  uint32_t dtype = 0;
  uint32_t rank = 0;
  int64_t shape[RECUR_MAX_RANK] = {};
};
struct SavedHeader {
  uint32_t version = 0;
  uint32_t count = 0;
  uint64_t id = 0;
  int64_t batch = 0;
  std::vector<SavedTensor> tensors;
  size_t headerBytes = 0;
  size_t dataBytes = 0;
};

size_t savedSize(const recur_state &state) {
  size_t size = sizeof(kMagic) + 2 * sizeof(uint32_t) + sizeof(uint64_t) +
                sizeof(int64_t) + sizeof(uint64_t);
  for (const StateTensor &tensor : state.tensors)
    size += 2 * sizeof(uint32_t) + tensor.desc->rank * sizeof(int64_t) +
            tensor.bytes;
  return size;
}

/// Reads the description of one saved tensor and adds its size to
/// `header.dataBytes`; false when it is cut off or impossible.
bool readSavedTensor(Reader &reader, SavedHeader &header) {
  SavedTensor saved;
  if (!reader.value(saved.dtype) || !reader.value(saved.rank) ||
      saved.rank > RECUR_MAX_RANK || dtypeSize(saved.dtype) == 0)
    return false;
  for (uint32_t d = 0; d < saved.rank; ++d)
    if (!reader.value(saved.shape[d]))
      return false;
  int64_t count;
  size_t bytes;
  if (!elementCount(static_cast<int32_t>(saved.rank), saved.shape, count) ||
      !byteCount(count, static_cast<recur_dtype>(saved.dtype), bytes) ||
      __builtin_add_overflow(header.dataBytes, bytes, &header.dataBytes))
    return false;
  header.tensors.push_back(saved);
  return true;
}

/// Parses and checks the framing of a saved state: magic, version, sizes
/// and checksum. What it describes is checked against the state later.
recur_status parseSaved(const Context &ctx, const unsigned char *buffer,
                        size_t bytes, SavedHeader &header) {
  Reader reader(buffer, bytes);
  char magic[sizeof(kMagic)];
  if (!reader.value(magic))
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the saved state is truncated (%zu bytes)", bytes);
  if (std::memcmp(magic, kMagic, sizeof(kMagic)))
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the buffer is not a saved Recur state (bad magic)");
  if (!reader.value(header.version))
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the saved state is truncated (%zu bytes)", bytes);
  if (header.version != kStateFormatVersion)
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the state was saved in format version %u; this runtime "
                    "reads version %u",
                    header.version, kStateFormatVersion);
  bool complete = reader.value(header.count) && reader.value(header.id) &&
                  reader.value(header.batch);
  for (uint32_t i = 0; complete && i < header.count; ++i)
    complete = readSavedTensor(reader, header);
  header.headerBytes = reader.offset();
  size_t total = 0;
  if (!complete ||
      __builtin_add_overflow(header.headerBytes, header.dataBytes, &total) ||
      __builtin_add_overflow(total, sizeof(uint64_t), &total))
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the saved state is truncated or corrupt (its header "
                    "does not fit in its %zu bytes)",
                    bytes);
  if (bytes != total)
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the saved state is %zu bytes, but its header describes "
                    "%zu; it is truncated or corrupt",
                    bytes, total);
  uint64_t checksum;
  std::memcpy(&checksum, buffer + total - sizeof(uint64_t), sizeof(checksum));
  if (checksum != fnv1a(buffer, total - sizeof(uint64_t)))
    return ctx.fail(RECUR_ERROR_FORMAT,
                    "the saved state is corrupt (checksum mismatch)");
  return RECUR_OK;
}

/// Checks that a well-formed saved state is one of `state`'s layer and
/// batch, with the same tensors.
recur_status matchSaved(const Context &ctx, const SavedHeader &header,
                        const recur_state &state) {
  const recur_layer_desc &layer = *state.info.desc;
  if (header.id != layer.id)
    return ctx.fail(RECUR_ERROR_STATE,
                    "the saved state belongs to another layer (id 0x%016llx, "
                    "this layer's is 0x%016llx)",
                    static_cast<unsigned long long>(header.id),
                    static_cast<unsigned long long>(layer.id));
  if (header.batch != state.batch)
    return ctx.fail(RECUR_ERROR_STATE,
                    "the saved state has batch %lld, but this state has "
                    "batch %lld",
                    static_cast<long long>(header.batch),
                    static_cast<long long>(state.batch));
  if (header.tensors.size() != state.tensors.size())
    return ctx.fail(RECUR_ERROR_STATE,
                    "the saved state has %zu tensors, but this state has %zu",
                    header.tensors.size(), state.tensors.size());
  for (size_t i = 0; i < header.tensors.size(); ++i) {
    const SavedTensor &saved = header.tensors[i];
    const StateTensor &tensor = state.tensors[i];
    const recur_arg_desc &desc = *tensor.desc;
    int32_t rank = static_cast<int32_t>(saved.rank);
    if (saved.dtype != static_cast<uint32_t>(desc.dtype) || rank != desc.rank ||
        std::memcmp(saved.shape, tensor.shape, rank * sizeof(int64_t)))
      return ctx.fail(
          RECUR_ERROR_STATE, "saved tensor %zu is %s%s, but state '%s' is %s%s",
          i, dtypeName(saved.dtype), formatShape(rank, saved.shape).c_str(),
          nameOr(desc.name), recur_dtype_name(desc.dtype),
          formatShape(desc.rank, tensor.shape).c_str());
  }
  return RECUR_OK;
}

} // namespace

recur_status recur::rt::createState(const Context &ctx, const LayerInfo &info,
                                    int64_t batch, const recur_tensor *params,
                                    StatePtr &out) {
  if (batch < 0)
    return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT, "batch %lld is negative",
                    static_cast<long long>(batch));
  if (!isBatched(info) && batch != 1)
    return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                    "the layer has no batch dimension, so its states have "
                    "batch 1, not %lld",
                    static_cast<long long>(batch));
  StatePtr state(new recur_state);
  state->info = info;
  state->batch = batch;
  state->tensors.resize(info.states.size());
  for (size_t i = 0; i < info.states.size(); ++i)
    if (recur_status status =
            shapeState(ctx, info, *info.states[i], batch, state->tensors[i]))
      return status;
  std::vector<InitSource> sources;
  if (recur_status status = checkInits(ctx, *state, params, sources))
    return status;
  for (StateTensor &tensor : state->tensors) {
    if (tensor.numel == 0)
      continue;
    tensor.allocated = trackedAlloc(kAlignment, tensor.bytes);
    if (!tensor.allocated)
      return ctx.fail(RECUR_ERROR_OUT_OF_MEMORY,
                      "cannot allocate %zu bytes for state '%s'", tensor.bytes,
                      nameOr(tensor.desc->name));
    tensor.data = static_cast<char *>(tensor.allocated);
  }
  applyInits(*state, sources, 0, rowCount(*state));
  out = std::move(state);
  return RECUR_OK;
}

recur_status recur::rt::checkStateFits(const Context &ctx,
                                       const LayerInfo &info,
                                       const recur_state &state) {
  const recur_layer_desc &made = *state.info.desc;
  if (&made == info.desc)
    return RECUR_OK;
  bool fits =
      made.id == info.desc->id && state.tensors.size() == info.states.size();
  for (size_t i = 0; fits && i < info.states.size(); ++i)
    fits = sameSignature(*state.tensors[i].desc, *info.states[i]);
  if (!fits)
    return ctx.fail(RECUR_ERROR_STATE,
                    "the state was made for layer '%s' (id 0x%016llx), not "
                    "for this one (id 0x%016llx)",
                    nameOr(made.name), static_cast<unsigned long long>(made.id),
                    static_cast<unsigned long long>(info.desc->id));
  return RECUR_OK;
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

extern "C" recur_status recur_state_create(const recur_layer_desc *layer,
                                           int64_t batch,
                                           const recur_tensor *params,
                                           recur_state **out) {
  return guarded("recur_state_create", [&] {
    Context ctx("recur_state_create", layer);
    if (!out)
      return ctx.fail(RECUR_ERROR_NULL_POINTER, "out is NULL");
    *out = nullptr;
    LayerInfo info;
    if (recur_status status = analyzeLayer(ctx, layer, info))
      return status;
    StatePtr state;
    if (recur_status status = createState(ctx, info, batch, params, state))
      return status;
    *out = state.release();
    return RECUR_OK;
  });
}

extern "C" void recur_state_destroy(recur_state *state) { delete state; }

extern "C" recur_status recur_state_reset(recur_state *state, int64_t row,
                                          const recur_tensor *params) {
  return guarded("recur_state_reset", [&] {
    Context ctx("recur_state_reset", state ? state->info.desc : nullptr);
    if (!state)
      return ctx.fail(RECUR_ERROR_NULL_POINTER, "state is NULL");
    int64_t rows = rowCount(*state);
    if (row >= rows)
      return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                      "row %lld is out of range for a state of %lld rows",
                      static_cast<long long>(row),
                      static_cast<long long>(rows));
    std::vector<InitSource> sources;
    if (recur_status status = checkInits(ctx, *state, params, sources))
      return status;
    if (row < 0)
      applyInits(*state, sources, 0, rows);
    else
      applyInits(*state, sources, row, row + 1);
    return RECUR_OK;
  });
}

extern "C" recur_status recur_state_view(const recur_state *state,
                                         int32_t index, recur_tensor *view) {
  Context ctx("recur_state_view", state ? state->info.desc : nullptr);
  if (!state || !view)
    return ctx.fail(RECUR_ERROR_NULL_POINTER, "state or view is NULL");
  if (index < 0 || static_cast<size_t>(index) >= state->tensors.size())
    return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                    "state index %d is out of range: the layer has %zu "
                    "states",
                    index, state->tensors.size());
  const StateTensor &tensor = state->tensors[index];
  *view = recur_tensor_contiguous(tensor.data, tensor.desc->dtype,
                                  tensor.desc->rank, tensor.shape);
  return RECUR_OK;
}

extern "C" int64_t recur_state_batch(const recur_state *state) {
  if (!state) {
    setError(RECUR_ERROR_NULL_POINTER, "recur_state_batch: state is NULL");
    return -1;
  }
  return state->batch;
}

extern "C" recur_status recur_state_save_size(const recur_state *state,
                                              size_t *bytes) {
  Context ctx("recur_state_save_size", state ? state->info.desc : nullptr);
  if (!state || !bytes)
    return ctx.fail(RECUR_ERROR_NULL_POINTER, "state or bytes is NULL");
  *bytes = savedSize(*state);
  return RECUR_OK;
}

extern "C" recur_status recur_state_save(const recur_state *state, void *buffer,
                                         size_t bytes) {
  Context ctx("recur_state_save", state ? state->info.desc : nullptr);
  if (!state || !buffer)
    return ctx.fail(RECUR_ERROR_NULL_POINTER, "state or buffer is NULL");
  size_t size = savedSize(*state);
  if (bytes < size)
    return ctx.fail(RECUR_ERROR_INVALID_ARGUMENT,
                    "the buffer has %zu bytes, but the saved state needs %zu "
                    "(recur_state_save_size)",
                    bytes, size);
  auto *out = static_cast<unsigned char *>(buffer);
  Writer writer(out);
  writer.bytes(kMagic, sizeof(kMagic));
  writer.value(kStateFormatVersion);
  writer.value(static_cast<uint32_t>(state->tensors.size()));
  writer.value(static_cast<uint64_t>(state->info.desc->id));
  writer.value(static_cast<int64_t>(state->batch));
  for (const StateTensor &tensor : state->tensors) {
    writer.value(static_cast<uint32_t>(tensor.desc->dtype));
    writer.value(static_cast<uint32_t>(tensor.desc->rank));
    writer.bytes(tensor.shape, tensor.desc->rank * sizeof(int64_t));
  }
  for (const StateTensor &tensor : state->tensors)
    writer.bytes(tensor.data, tensor.bytes);
  writer.value(fnv1a(out, size - sizeof(uint64_t)));
  return RECUR_OK;
}

extern "C" recur_status recur_state_load(recur_state *state, const void *buffer,
                                         size_t bytes) {
  return guarded("recur_state_load", [&] {
    Context ctx("recur_state_load", state ? state->info.desc : nullptr);
    if (!state || !buffer)
      return ctx.fail(RECUR_ERROR_NULL_POINTER, "state or buffer is NULL");
    const auto *in = static_cast<const unsigned char *>(buffer);
    SavedHeader header;
    if (recur_status status = parseSaved(ctx, in, bytes, header))
      return status;
    if (recur_status status = matchSaved(ctx, header, *state))
      return status;
    const unsigned char *data = in + header.headerBytes;
    for (StateTensor &tensor : state->tensors) {
      if (tensor.bytes)
        std::memcpy(tensor.data, data, tensor.bytes);
      data += tensor.bytes;
    }
    return RECUR_OK;
  });
}
