//===- RuntimeTest.cpp - tests of librecur_rt -----------------------------===//
//
// Part of the Recur project.
//
// The kernels below are written by hand but follow the ABI of the kernels
// recurc generates: arguments and results are memref descriptors flattened
// to 64-bit words, and every buffer comes from _mlir_memref_to_llvm_*. Some
// return their arguments, a constant global or one buffer twice, to test the
// runtime's ownership rules.
//
//===----------------------------------------------------------------------===//

#include "recur/Runtime/recur_rt.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern "C" {
void *_mlir_memref_to_llvm_alloc(uint64_t size);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void *ptr);

/// The out-of-memory tests ask for more memory than there is: under ASan
/// that must fail with NULL, as it does without it.
const char *__asan_default_options() { return "allocator_may_return_null=1"; }
}

namespace {

#define ASSERT_OK(call)                                                        \
  do {                                                                         \
    recur_status status_ = (call);                                             \
    ASSERT_EQ(status_, RECUR_OK) << recur_last_error();                        \
  } while (0)

/// Expects `call` to fail with `status` and a message containing `text`.
#define EXPECT_RECUR_ERROR(call, status, text)                                 \
  do {                                                                         \
    recur_status status_ = (call);                                             \
    EXPECT_EQ(status_, status)                                                 \
        << recur_status_name(status_) << ": " << recur_last_error();           \
    EXPECT_NE(std::string(recur_last_error()).find(text), std::string::npos)   \
        << "message: " << recur_last_error();                                  \
  } while (0)

//===----------------------------------------------------------------------===//
// The kernel side of the ABI
//===----------------------------------------------------------------------===//

/// Arguments a kernel got that were not row-major with offset 0.
std::atomic<int> abiViolations{0};

/// A memref descriptor as a kernel sees it.
struct MemRef {
  void *allocated;
  char *aligned;
  int64_t offset;
  std::vector<int64_t> sizes, strides;

  template <typename T> T *data() const {
    return reinterpret_cast<T *>(aligned) + offset;
  }
};

std::vector<int64_t> rowMajor(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  return strides;
}

/// Reads an argument of `rank` and checks the runtime's promise that it is
/// row-major with offset 0.
MemRef takeArg(int64_t *&words, int rank) {
  MemRef ref;
  ref.allocated = reinterpret_cast<void *>(words[0]);
  ref.aligned = reinterpret_cast<char *>(words[1]);
  ref.offset = words[2];
  ref.sizes.assign(words + 3, words + 3 + rank);
  ref.strides.assign(words + 3 + rank, words + 3 + 2 * rank);
  words += 3 + 2 * rank;
  if (ref.offset != 0 || ref.strides != rowMajor(ref.sizes))
    ++abiViolations;
  return ref;
}

/// Writes a result descriptor (row-major unless `strides` are given).
void putResult(int64_t *&words, void *allocated, void *aligned, int64_t offset,
               const std::vector<int64_t> &sizes,
               std::vector<int64_t> strides = {}) {
  if (strides.empty())
    strides = rowMajor(sizes);
  *words++ = reinterpret_cast<int64_t>(allocated);
  *words++ = reinterpret_cast<int64_t>(aligned);
  *words++ = offset;
  for (int64_t size : sizes)
    *words++ = size;
  for (int64_t stride : strides)
    *words++ = stride;
}

/// Returns argument `ref` as a result, unchanged.
void passThrough(int64_t *&words, const MemRef &ref) {
  putResult(words, ref.allocated, ref.aligned, ref.offset, ref.sizes,
            ref.strides);
}

template <typename T> T *kernelAlloc(int64_t count) {
  return static_cast<T *>(_mlir_memref_to_llvm_aligned_alloc(
      64, static_cast<uint64_t>(count) * sizeof(T)));
}

/// h_t = a * h_{t-1} + x_t and y_t = h_t over x[B, T, D], a[D], h[B, D],
/// with `ExtraParams` params of rank `ExtraRank` between a and h (init
/// params the kernel does not read).
template <typename T, int ExtraParams = 0, int ExtraRank = 1>
void scanKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 3), a = takeArg(in, 1);
  for (int i = 0; i < ExtraParams; ++i)
    takeArg(in, ExtraRank);
  MemRef h = takeArg(in, 2);
  int64_t batch = x.sizes[0], time = x.sizes[1], width = x.sizes[2];
  T *y = kernelAlloc<T>(batch * time * width);
  T *next = kernelAlloc<T>(batch * width);
  T *carry = kernelAlloc<T>(width); // workspace, freed before returning
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t d = 0; d < width; ++d)
      carry[d] = h.data<T>()[b * width + d];
    for (int64_t t = 0; t < time; ++t)
      for (int64_t d = 0; d < width; ++d) {
        int64_t i = (b * time + t) * width + d;
        carry[d] = a.data<T>()[d] * carry[d] + x.data<T>()[i];
        y[i] = carry[d];
      }
    for (int64_t d = 0; d < width; ++d)
      next[b * width + d] = carry[d];
  }
  _mlir_memref_to_llvm_free(carry);
  putResult(out, y, y, 0, {batch, time, width});
  putResult(out, next, next, 0, {batch, width});
}

/// The backward of scanKernel<float>: arguments x, a, h, then the
/// cotangents dy and dlast; results dx, da, dh0. g_t = dy_t + a g_{t+1}
/// (g after the last step = dlast), dx = g, da = sum g_t h_{t-1},
/// dh0 = a g_0.
void scanBackwardKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 3), a = takeArg(in, 1), h = takeArg(in, 2),
         dy = takeArg(in, 3), dlast = takeArg(in, 2);
  int64_t batch = x.sizes[0], time = x.sizes[1], width = x.sizes[2];
  float *dx = kernelAlloc<float>(batch * time * width);
  float *da = kernelAlloc<float>(width);
  float *dh = kernelAlloc<float>(batch * width);
  std::vector<float> states(time + 1);
  for (int64_t d = 0; d < width; ++d)
    da[d] = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t d = 0; d < width; ++d) {
      float ad = a.data<float>()[d];
      states[0] = h.data<float>()[b * width + d];
      for (int64_t t = 0; t < time; ++t)
        states[t + 1] =
            ad * states[t] + x.data<float>()[(b * time + t) * width + d];
      float g = dlast.data<float>()[b * width + d];
      for (int64_t t = time - 1; t >= 0; --t) {
        int64_t i = (b * time + t) * width + d;
        g += dy.data<float>()[i];
        dx[i] = g;
        da[d] += g * states[t];
        g *= ad;
      }
      dh[b * width + d] = g;
    }
  putResult(out, dx, dx, 0, {batch, time, width});
  putResult(out, da, da, 0, {width});
  putResult(out, dh, dh, 0, {batch, width});
}

/// scanKernel's workspace bound: what it allocates, exactly.
int64_t scanWorkspace(int64_t *in, int64_t threads) {
  EXPECT_GE(threads, 1);
  MemRef x = takeArg(in, 3);
  int64_t batch = x.sizes[0], time = x.sizes[1], width = x.sizes[2];
  EXPECT_EQ(x.aligned, nullptr); // the bound reads only the sizes
  return static_cast<int64_t>(sizeof(float)) *
         (batch * time * width + batch * width + width);
}

/// Scan whose output has one time step too many (a broken kernel).
void badShapeKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 3);
  takeArg(in, 1);
  takeArg(in, 2);
  int64_t batch = x.sizes[0], time = x.sizes[1] + 1, width = x.sizes[2];
  float *y = kernelAlloc<float>(batch * time * width);
  float *next = kernelAlloc<float>(batch * width);
  putResult(out, y, y, 0, {batch, time, width});
  putResult(out, next, next, 0, {batch, width});
}

/// y = x + h (new), xs = x (passed through), next h = h (passed through).
void holdKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 2), h = takeArg(in, 2);
  int64_t count = x.sizes[0] * x.sizes[1];
  float *y = kernelAlloc<float>(count);
  for (int64_t i = 0; i < count; ++i)
    y[i] = x.data<float>()[i] + h.data<float>()[i];
  putResult(out, y, y, 0, x.sizes);
  passThrough(out, x);
  passThrough(out, h);
}

/// y = h (the state passed through as an output), next h = x (an input
/// passed through as the next state).
void latchKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 2), h = takeArg(in, 2);
  passThrough(out, h);
  passThrough(out, x);
}

/// next h1 = h2, next h2 = h1.
void swapKernel(int64_t *in, int64_t *out) {
  MemRef h1 = takeArg(in, 2), h2 = takeArg(in, 2);
  passThrough(out, h2);
  passThrough(out, h1);
}

/// The buffer twiceKernel returned last.
void *lastTwiceBuffer = nullptr;

/// z = x + h, returned both as the output y and as the next h.
void twiceKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 2), h = takeArg(in, 2);
  int64_t count = x.sizes[0] * x.sizes[1];
  float *z = kernelAlloc<float>(count);
  for (int64_t i = 0; i < count; ++i)
    z[i] = x.data<float>()[i] + h.data<float>()[i];
  lastTwiceBuffer = z;
  putResult(out, z, z, 0, x.sizes);
  putResult(out, z, z, 0, x.sizes);
}

/// A constant global, as a kernel returns a folded constant.
float constantGlobal[2] = {7, 8};

/// y = next h = constantGlobal.
void constKernel(int64_t *in, int64_t *out) {
  takeArg(in, 1);
  putResult(out, constantGlobal, constantGlobal, 0, {2});
  putResult(out, constantGlobal, constantGlobal, 0, {2});
}

/// The buffer offsetKernel returned last.
float *lastOffsetBuffer = nullptr;

/// One buffer holds both results after two unused floats: the next h =
/// h + x (row-major at offset 2) and y = 10 x (column-major after it).
void offsetKernel(int64_t *in, int64_t *out) {
  MemRef x = takeArg(in, 2), h = takeArg(in, 2);
  int64_t batch = x.sizes[0];
  float *base = kernelAlloc<float>(2 + 4 * batch);
  float *next = base + 2, *y = base + 2 + 2 * batch;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t d = 0; d < 2; ++d) {
      next[b * 2 + d] = h.data<float>()[b * 2 + d] + x.data<float>()[b * 2 + d];
      y[d * batch + b] = 10 * x.data<float>()[b * 2 + d];
    }
  lastOffsetBuffer = base;
  putResult(out, base, base, 2 + 2 * batch, {batch, 2}, {1, batch});
  putResult(out, base, base, 2, {batch, 2});
}

//===----------------------------------------------------------------------===//
// Layer descriptors
//===----------------------------------------------------------------------===//

/// A dimension of a descriptor: a static size or a runtime dimension, and
/// its name.
struct Dim {
  int64_t size;
  const char *name;
};
const Dim B{-1, "B"}, T{-2, "T"};

recur_arg_desc tensorDesc(const char *name, recur_role role, int32_t index,
                          recur_dtype dtype, std::initializer_list<Dim> dims,
                          recur_init_kind init = RECUR_INIT_NONE,
                          double initValue = 0, int32_t initParam = 0) {
  recur_arg_desc desc;
  std::memset(&desc, 0, sizeof(desc));
  desc.name = name;
  desc.role = role;
  desc.index = index;
  desc.dtype = dtype;
  desc.rank = static_cast<int32_t>(dims.size());
  int32_t d = 0;
  for (const Dim &dim : dims) {
    desc.shape[d] = dim.size;
    desc.dim_names[d++] = dim.name;
  }
  desc.init = init;
  desc.init_value = initValue;
  desc.init_param = initParam;
  desc.init_rule = "";
  return desc;
}

const char *const kRuntimeDimNames[] = {"B", "T"};

/// A layer descriptor with its own argument and result arrays.
struct Layer {
  Layer(const char *name, uint64_t id, std::vector<recur_arg_desc> args,
        std::vector<recur_arg_desc> results, recur_kernel_fn kernel,
        int32_t batchDim = 0, int32_t timeDim = 1)
      : args(std::move(args)), results(std::move(results)) {
    std::memset(&desc, 0, sizeof(desc));
    desc.abi_version = RECUR_ABI_VERSION;
    desc.name = name;
    desc.id = id;
    desc.num_runtime_dims = 2;
    desc.runtime_dim_names = kRuntimeDimNames;
    desc.batch_dim = batchDim;
    desc.time_dim = timeDim;
    desc.step_length = 1;
    for (const recur_arg_desc &arg : this->args) {
      int32_t &count = arg.role == RECUR_ROLE_INPUT   ? desc.num_inputs
                       : arg.role == RECUR_ROLE_PARAM ? desc.num_params
                                                      : desc.num_states;
      ++count;
    }
    for (const recur_arg_desc &result : this->results)
      desc.num_outputs += result.role == RECUR_ROLE_OUTPUT;
    desc.num_args = static_cast<int32_t>(this->args.size());
    desc.num_results = static_cast<int32_t>(this->results.size());
    desc.kernel = kernel;
    link();
  }
  Layer(const Layer &other)
      : args(other.args), results(other.results), desc(other.desc) {
    link();
  }
  Layer &operator=(const Layer &) = delete;

  void link() {
    desc.args = args.data();
    desc.results = results.data();
  }
  const recur_layer_desc *get() const { return &desc; }

  std::vector<recur_arg_desc> args, results;
  recur_layer_desc desc;
};

constexpr int64_t kWidth = 4;

/// x f32[B, T, D = 4], a f32[D], h f32[B, D] = 0; y f32[B, T, D].
std::vector<recur_arg_desc> scanArgs(recur_dtype dtype, int64_t width,
                                     recur_init_kind init, double value) {
  Dim D{width, "D"};
  return {tensorDesc("x", RECUR_ROLE_INPUT, 0, dtype, {B, T, D}),
          tensorDesc("a", RECUR_ROLE_PARAM, 0, dtype, {D}),
          tensorDesc("h", RECUR_ROLE_STATE, 0, dtype, {B, D}, init, value)};
}
std::vector<recur_arg_desc> scanResults(recur_dtype dtype, int64_t width) {
  Dim D{width, "D"};
  return {tensorDesc("y", RECUR_ROLE_OUTPUT, 0, dtype, {B, T, D}),
          tensorDesc("h", RECUR_ROLE_NEXT_STATE, 0, dtype, {B, D})};
}

const Layer &scanLayer() {
  static const Layer layer = [] {
    Layer scan("Scan", 0x5ca11,
               scanArgs(RECUR_F32, kWidth, RECUR_INIT_ZEROS, 0),
               scanResults(RECUR_F32, kWidth), scanKernel<float>);
    scan.desc.workspace = scanWorkspace;
    scan.desc.backward = scanBackwardKernel;
    return scan;
  }();
  return layer;
}

/// Scan with h = h0, a param of shape [D] (or [B, D] with `fullShape`).
Layer makeScanInit(bool fullShape) {
  std::vector<recur_arg_desc> args =
      scanArgs(RECUR_F32, kWidth, RECUR_INIT_PARAM, 0);
  args[2].init_param = 1;
  Dim D{kWidth, "D"};
  args.insert(args.begin() + 2,
              fullShape
                  ? tensorDesc("h0", RECUR_ROLE_PARAM, 1, RECUR_F32, {B, D})
                  : tensorDesc("h0", RECUR_ROLE_PARAM, 1, RECUR_F32, {D}));
  recur_kernel_fn kernel =
      fullShape ? &scanKernel<float, 1, 2> : &scanKernel<float, 1, 1>;
  return Layer(fullShape ? "ScanInitFull" : "ScanInit", fullShape ? 0x1f : 0x1e,
               args, scanResults(RECUR_F32, kWidth), kernel);
}

const Layer &scanInitLayer() {
  static const Layer layer = makeScanInit(false);
  return layer;
}

const Layer &scanInitFullLayer() {
  static const Layer layer = makeScanInit(true);
  return layer;
}

/// Scan over c64 with D = 2 and h = 1.5.
const Layer &complexScanLayer() {
  static const Layer layer(
      "ComplexScan", 0xc64, scanArgs(RECUR_C64, 2, RECUR_INIT_CONST, 1.5),
      scanResults(RECUR_C64, 2), scanKernel<std::complex<float>>);
  return layer;
}

/// x f32[B, C = 3], h f32[B, C]; results y, [xs,] next h.
std::vector<recur_arg_desc> rowArgs(int64_t width, recur_init_kind init) {
  Dim C{width, "C"};
  return {tensorDesc("x", RECUR_ROLE_INPUT, 0, RECUR_F32, {B, C}),
          tensorDesc("h", RECUR_ROLE_STATE, 0, RECUR_F32, {B, C}, init)};
}
recur_arg_desc rowResult(const char *name, recur_role role, int32_t index,
                         int64_t width) {
  return tensorDesc(name, role, index, RECUR_F32, {B, {width, "C"}});
}

const Layer &holdLayer() {
  static const Layer layer("Hold", 0x401d, rowArgs(3, RECUR_INIT_ONES),
                           {rowResult("y", RECUR_ROLE_OUTPUT, 0, 3),
                            rowResult("xs", RECUR_ROLE_OUTPUT, 1, 3),
                            rowResult("h", RECUR_ROLE_NEXT_STATE, 0, 3)},
                           holdKernel, 0, -1);
  return layer;
}

const Layer &latchLayer() {
  static const Layer layer("Latch", 0x1a7c, rowArgs(3, RECUR_INIT_ZEROS),
                           {rowResult("y", RECUR_ROLE_OUTPUT, 0, 3),
                            rowResult("h", RECUR_ROLE_NEXT_STATE, 0, 3)},
                           latchKernel, 0, -1);
  return layer;
}

const Layer &twiceLayer() {
  static const Layer layer("Twice", 0x2, rowArgs(2, RECUR_INIT_ZEROS),
                           {rowResult("y", RECUR_ROLE_OUTPUT, 0, 2),
                            rowResult("h", RECUR_ROLE_NEXT_STATE, 0, 2)},
                           twiceKernel, 0, -1);
  return layer;
}

const Layer &offsetLayer() {
  static const Layer layer("Offset", 0x0ff, rowArgs(2, RECUR_INIT_ZEROS),
                           {rowResult("y", RECUR_ROLE_OUTPUT, 0, 2),
                            rowResult("h", RECUR_ROLE_NEXT_STATE, 0, 2)},
                           offsetKernel, 0, -1);
  return layer;
}

const Layer &swapLayer() {
  Dim C{2, "C"};
  static const Layer layer(
      "Swap", 0x5a9,
      {tensorDesc("h1", RECUR_ROLE_STATE, 0, RECUR_F32, {B, C},
                  RECUR_INIT_CONST, 1),
       tensorDesc("h2", RECUR_ROLE_STATE, 1, RECUR_F32, {B, C},
                  RECUR_INIT_CONST, 2)},
      {tensorDesc("h1", RECUR_ROLE_NEXT_STATE, 0, RECUR_F32, {B, C}),
       tensorDesc("h2", RECUR_ROLE_NEXT_STATE, 1, RECUR_F32, {B, C})},
      swapKernel, 0, -1);
  return layer;
}

/// A layer without a batch dimension: h f32[2], y = next h = a constant.
const Layer &constLayer() {
  Dim C{2, "C"};
  static const Layer layer(
      "Const", 0xc0,
      {tensorDesc("h", RECUR_ROLE_STATE, 0, RECUR_F32, {C}, RECUR_INIT_ZEROS)},
      {tensorDesc("y", RECUR_ROLE_OUTPUT, 0, RECUR_F32, {C}),
       tensorDesc("h", RECUR_ROLE_NEXT_STATE, 0, RECUR_F32, {C})},
      constKernel, -1, -1);
  return layer;
}

const Layer &badShapeLayer() {
  static const Layer layer("BadShape", 0xbad,
                           scanArgs(RECUR_F32, kWidth, RECUR_INIT_ZEROS, 0),
                           scanResults(RECUR_F32, kWidth), badShapeKernel);
  return layer;
}

/// States of every dtype (no kernel: only states are made of it).
const Layer &dtypesLayer() {
  Dim K{6, "K"}, one{1, "1"};
  static const Layer layer(
      "Dtypes", 0xd7,
      {tensorDesc("p", RECUR_ROLE_PARAM, 0, RECUR_F64, {K}),
       tensorDesc("f16", RECUR_ROLE_STATE, 0, RECUR_F16, {B, K},
                  RECUR_INIT_PARAM, 0, 0),
       tensorDesc("bf16", RECUR_ROLE_STATE, 1, RECUR_BF16, {B, K},
                  RECUR_INIT_PARAM, 0, 0),
       tensorDesc("f16c", RECUR_ROLE_STATE, 2, RECUR_F16, {B, one},
                  RECUR_INIT_CONST, 0.1),
       tensorDesc("f32", RECUR_ROLE_STATE, 3, RECUR_F32, {B, one},
                  RECUR_INIT_CONST, 0.1),
       tensorDesc("f64", RECUR_ROLE_STATE, 4, RECUR_F64, {B, one},
                  RECUR_INIT_CONST, 0.1),
       tensorDesc("c64", RECUR_ROLE_STATE, 5, RECUR_C64, {B, one},
                  RECUR_INIT_CONST, -2.5),
       tensorDesc("c128", RECUR_ROLE_STATE, 6, RECUR_C128, {B, one},
                  RECUR_INIT_ONES),
       tensorDesc("bool", RECUR_ROLE_STATE, 7, RECUR_BOOL, {B, one},
                  RECUR_INIT_CONST, 2),
       tensorDesc("i32", RECUR_ROLE_STATE, 8, RECUR_I32, {B, one},
                  RECUR_INIT_CONST, -3.7),
       tensorDesc("q", RECUR_ROLE_PARAM, 1, RECUR_F16, {{4, "Q"}}),
       tensorDesc("fromF16", RECUR_ROLE_STATE, 9, RECUR_C64, {B, {4, "Q"}},
                  RECUR_INIT_PARAM, 0, 1)},
      {}, nullptr, 0, -1);
  return layer;
}

//===----------------------------------------------------------------------===//
// Host-side helpers
//===----------------------------------------------------------------------===//

using StateHandle = std::unique_ptr<recur_state, void (*)(recur_state *)>;

StateHandle makeState(const Layer &layer, int64_t batch,
                      const recur_tensor *params = nullptr) {
  recur_state *state = nullptr;
  recur_status status = recur_state_create(layer.get(), batch, params, &state);
  EXPECT_EQ(status, RECUR_OK) << recur_last_error();
  return StateHandle(state, recur_state_destroy);
}

recur_tensor tensor(void *data, recur_dtype dtype, std::vector<int64_t> shape) {
  return recur_tensor_contiguous(
      data, dtype, static_cast<int32_t>(shape.size()), shape.data());
}

recur_tensor strided(void *data, recur_dtype dtype, std::vector<int64_t> shape,
                     std::vector<int64_t> strides) {
  recur_tensor t = tensor(data, dtype, shape);
  for (size_t d = 0; d < strides.size(); ++d)
    t.strides[d] = strides[d];
  return t;
}

/// The elements of state tensor `index`.
template <typename E = float>
std::vector<E> stateData(const recur_state *state, int32_t index = 0) {
  recur_tensor view;
  EXPECT_EQ(recur_state_view(state, index, &view), RECUR_OK);
  const E *data = static_cast<const E *>(view.data);
  return std::vector<E>(data, data + recur_tensor_numel(&view));
}

/// Deterministic test values in [shift, shift + scale).
std::vector<float> values(size_t count, float scale, float shift) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = scale * static_cast<float>((i * 7 + 3) % 11) / 11 + shift;
  return v;
}

/// The scan in double: returns y and leaves the final state in `h`.
std::vector<double> referenceScan(const std::vector<float> &x,
                                  const std::vector<float> &a,
                                  std::vector<double> &h, int64_t batch,
                                  int64_t time, int64_t width) {
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t)
      for (int64_t d = 0; d < width; ++d) {
        double &carry = h[b * width + d];
        carry = a[d] * carry + x[(b * time + t) * width + d];
        y[(b * time + t) * width + d] = carry;
      }
  return y;
}

template <typename A, typename E>
void expectNear(const std::vector<A> &actual, const std::vector<E> &expected,
                double tolerance = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
}

size_t liveBytes() {
  recur_memory_stats stats;
  recur_memory_stats_get(&stats);
  return stats.live_bytes;
}

/// The Scan layer's tensors for one call: x[B, T, D], a[D], y[B, T, D].
struct ScanCall {
  ScanCall(int64_t batch, int64_t time)
      : batch(batch), time(time), x(values(batch * time * kWidth, 2, -1)),
        a(values(kWidth, 0.5f, 0.4f)), y(batch * time * kWidth, -99) {}

  recur_tensor input() { return tensor(x.data(), RECUR_F32, shapeX()); }
  recur_tensor param() { return tensor(a.data(), RECUR_F32, {kWidth}); }
  recur_tensor output() { return tensor(y.data(), RECUR_F32, shapeX()); }
  std::vector<int64_t> shapeX() const { return {batch, time, kWidth}; }

  recur_status forward(recur_state *state) {
    recur_tensor in = input(), p = param(), out = output();
    return recur_forward(scanLayer().get(), &in, &p, state, &out);
  }

  int64_t batch, time;
  std::vector<float> x, a, y;
};

//===----------------------------------------------------------------------===//
// Names, tensors, memory and threads
//===----------------------------------------------------------------------===//

TEST(RuntimeNames, StatusNames) {
  const std::pair<recur_status, const char *> names[] = {
      {RECUR_OK, "RECUR_OK"},
      {RECUR_ERROR_NULL_POINTER, "RECUR_ERROR_NULL_POINTER"},
      {RECUR_ERROR_INVALID_ARGUMENT, "RECUR_ERROR_INVALID_ARGUMENT"},
      {RECUR_ERROR_SHAPE, "RECUR_ERROR_SHAPE"},
      {RECUR_ERROR_DTYPE, "RECUR_ERROR_DTYPE"},
      {RECUR_ERROR_STATE, "RECUR_ERROR_STATE"},
      {RECUR_ERROR_OUT_OF_MEMORY, "RECUR_ERROR_OUT_OF_MEMORY"},
      {RECUR_ERROR_FORMAT, "RECUR_ERROR_FORMAT"},
      {RECUR_ERROR_ABI, "RECUR_ERROR_ABI"},
      {RECUR_ERROR_UNSUPPORTED, "RECUR_ERROR_UNSUPPORTED"},
      {RECUR_ERROR_INTERNAL, "RECUR_ERROR_INTERNAL"}};
  for (const auto &entry : names)
    EXPECT_STREQ(recur_status_name(entry.first), entry.second);
  EXPECT_STREQ(recur_status_name(static_cast<recur_status>(99)),
               "RECUR_STATUS_UNKNOWN");
}

TEST(RuntimeNames, DtypeSizesAndNames) {
  const struct {
    recur_dtype dtype;
    size_t size;
    const char *name;
  } dtypes[] = {{RECUR_F16, 2, "f16"},   {RECUR_BF16, 2, "bf16"},
                {RECUR_F32, 4, "f32"},   {RECUR_F64, 8, "f64"},
                {RECUR_C64, 8, "c64"},   {RECUR_C128, 16, "c128"},
                {RECUR_BOOL, 1, "bool"}, {RECUR_I32, 4, "i32"}};
  for (const auto &entry : dtypes) {
    EXPECT_EQ(recur_dtype_size(entry.dtype), entry.size);
    EXPECT_STREQ(recur_dtype_name(entry.dtype), entry.name);
  }
  EXPECT_EQ(recur_dtype_size(static_cast<recur_dtype>(0)), 0u);
  EXPECT_STREQ(recur_dtype_name(static_cast<recur_dtype>(42)), "?");
}

TEST(RuntimeTensor, ContiguousAndNumel) {
  float data[24];
  int64_t shape[] = {2, 3, 4};
  recur_tensor t = recur_tensor_contiguous(data, RECUR_F32, 3, shape);
  EXPECT_EQ(t.data, data);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.strides[0], 12);
  EXPECT_EQ(t.strides[1], 4);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_EQ(recur_tensor_numel(&t), 24);
  recur_tensor scalar = recur_tensor_contiguous(data, RECUR_F32, 0, nullptr);
  EXPECT_EQ(recur_tensor_numel(&scalar), 1);
  EXPECT_EQ(recur_tensor_numel(nullptr), 0);
  recur_tensor tooDeep =
      recur_tensor_contiguous(data, RECUR_F32, RECUR_MAX_RANK + 1, shape);
  EXPECT_EQ(tooDeep.rank, RECUR_MAX_RANK + 1);
  EXPECT_EQ(recur_tensor_numel(&tooDeep), 0);
}

TEST(RuntimeMemory, AlignmentAndStats) {
  void *user = recur_alloc(100);
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(user) % 64, 0u);
  recur_free(user);
  recur_free(nullptr);

  recur_memory_stats before, during, after;
  recur_memory_stats_get(&before);
  void *wide = _mlir_memref_to_llvm_aligned_alloc(4096, 1000);
  void *narrow = _mlir_memref_to_llvm_aligned_alloc(8, 24);
  void *plain = _mlir_memref_to_llvm_alloc(0);
  ASSERT_TRUE(wide && narrow && plain);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(wide) % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(narrow) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plain) % 64, 0u);
  recur_memory_stats_get(&during);
  EXPECT_EQ(during.live_bytes, before.live_bytes + 1024);
  EXPECT_EQ(during.allocations, before.allocations + 3);
  EXPECT_GE(during.peak_bytes, during.live_bytes);
  _mlir_memref_to_llvm_free(wide);
  _mlir_memref_to_llvm_free(narrow);
  _mlir_memref_to_llvm_free(plain);
  // Pointers the allocator did not hand out are left alone.
  int notOurs = 0;
  _mlir_memref_to_llvm_free(&notOurs);
  _mlir_memref_to_llvm_free(nullptr);
  recur_memory_stats_get(&after);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  recur_memory_stats_reset_peak();
  recur_memory_stats_get(&after);
  EXPECT_EQ(after.peak_bytes, after.live_bytes);
  recur_memory_stats_get(nullptr);
}

/// Whether the runtime keeps freed large buffers (not under a sanitizer).
bool cachesLargeBuffers() {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
  return false;
#endif
#endif
  return true;
}

TEST(RuntimeMemory, LargeBuffersAreReused) {
  // A kernel called again at the same sizes gets back the large buffers its
  // last call freed (their pages already mapped); the stats count only live
  // buffers, and an aligned request gets a buffer aligned as asked.
  size_t start = liveBytes();
  const size_t big = 3 << 20;
  void *first = _mlir_memref_to_llvm_aligned_alloc(4096, big);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, big);
  EXPECT_EQ(liveBytes(), start + big);
  _mlir_memref_to_llvm_free(first);
  EXPECT_EQ(liveBytes(), start);
  void *second = _mlir_memref_to_llvm_aligned_alloc(4096, big);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second) % 4096, 0u);
  EXPECT_EQ(liveBytes(), start + big);
  if (cachesLargeBuffers())
    EXPECT_EQ(second, first);
  // A much smaller request does not take the large buffer.
  _mlir_memref_to_llvm_free(second);
  void *small = _mlir_memref_to_llvm_alloc(big / 2);
  ASSERT_NE(small, nullptr);
  EXPECT_NE(small, second);
  EXPECT_EQ(liveBytes(), start + big / 2);
  _mlir_memref_to_llvm_free(small);
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeMemory, KernelAllocatorIsThreadSafe) {
  size_t start = liveBytes();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      std::vector<void *> buffers;
      for (int i = 0; i < 2000; ++i) {
        buffers.push_back(
            _mlir_memref_to_llvm_aligned_alloc(64, 16 + (i + t) % 64));
        if (i % 3 == 0) {
          _mlir_memref_to_llvm_free(buffers.front());
          buffers.erase(buffers.begin());
        }
      }
      for (void *buffer : buffers)
        _mlir_memref_to_llvm_free(buffer);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeThreads, SetAndRestore) {
  int original = recur_get_num_threads();
  EXPECT_GE(original, 1);
  recur_set_num_threads(3);
  EXPECT_EQ(recur_get_num_threads(), 3);
  recur_set_num_threads(1);
  EXPECT_EQ(recur_get_num_threads(), 1);
  recur_set_num_threads(0);
  EXPECT_EQ(recur_get_num_threads(), original);
  recur_set_num_threads(5);
  recur_set_num_threads(-2);
  EXPECT_EQ(recur_get_num_threads(), original);
}

//===----------------------------------------------------------------------===//
// recur_forward and recur_step
//===----------------------------------------------------------------------===//

TEST(RuntimeForward, ScanMatchesDirectLoop) {
  abiViolations = 0;
  ScanCall call(2, 5);
  StateHandle state = makeState(scanLayer(), 2);
  ASSERT_OK(call.forward(state.get()));
  std::vector<double> h(2 * kWidth, 0.0);
  std::vector<double> y = referenceScan(call.x, call.a, h, 2, 5, kWidth);
  expectNear(call.y, y);
  expectNear(stateData(state.get()), h);
  // The state carries over into the next call.
  ASSERT_OK(call.forward(state.get()));
  y = referenceScan(call.x, call.a, h, 2, 5, kWidth);
  expectNear(call.y, y);
  expectNear(stateData(state.get()), h);
  EXPECT_EQ(recur_state_batch(state.get()), 2);
  EXPECT_EQ(abiViolations, 0);
}

TEST(RuntimeForward, WithoutStateStartsFromInit) {
  size_t start = liveBytes();
  ScanCall withState(3, 4), without(3, 4);
  StateHandle state = makeState(scanLayer(), 3);
  ASSERT_OK(withState.forward(state.get()));
  state.reset();
  ASSERT_OK(without.forward(nullptr));
  EXPECT_EQ(withState.y, without.y);
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeForward, StridedInputsAndOutputs) {
  abiViolations = 0;
  const int64_t batch = 2, time = 3;
  ScanCall reference(batch, time);
  StateHandle plain = makeState(scanLayer(), batch);
  ASSERT_OK(reference.forward(plain.get()));

  // x stored time-major ([T, B, D]) and viewed as [B, T, D].
  std::vector<float> xt(batch * time * kWidth);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t)
      for (int64_t d = 0; d < kWidth; ++d)
        xt[(t * batch + b) * kWidth + d] =
            reference.x[(b * time + t) * kWidth + d];
  recur_tensor x = strided(xt.data(), RECUR_F32, {batch, time, kWidth},
                           {kWidth, batch * kWidth, 1});
  // a reversed and every other element: a[d] = buffer[6 - 2 d].
  std::vector<float> aBuffer(2 * kWidth, 0);
  for (int64_t d = 0; d < kWidth; ++d)
    aBuffer[6 - 2 * d] = reference.a[d];
  recur_tensor a = strided(aBuffer.data() + 6, RECUR_F32, {kWidth}, {-2});
  // y written to every other element.
  std::vector<float> yBuffer(2 * batch * time * kWidth, -7);
  recur_tensor y = strided(yBuffer.data(), RECUR_F32, {batch, time, kWidth},
                           {2 * time * kWidth, 2 * kWidth, 2});
  StateHandle state = makeState(scanLayer(), batch);
  ASSERT_OK(recur_forward(scanLayer().get(), &x, &a, state.get(), &y));
  for (size_t i = 0; i < reference.y.size(); ++i) {
    EXPECT_EQ(yBuffer[2 * i], reference.y[i]) << i;
    EXPECT_EQ(yBuffer[2 * i + 1], -7) << i;
  }
  EXPECT_EQ(stateData(state.get()), stateData(plain.get()));
  EXPECT_EQ(abiViolations, 0);
}

TEST(RuntimeForward, WholeEqualsStepsEqualsSplits) {
  const int64_t batch = 3, time = 7;
  ScanCall whole(batch, time);
  StateHandle wholeState = makeState(scanLayer(), batch);
  ASSERT_OK(whole.forward(wholeState.get()));

  // One position at a time: strided views of x and y ([B, 1, D] slices).
  ScanCall stepped(batch, time);
  StateHandle stepState = makeState(scanLayer(), batch);
  recur_tensor a = stepped.param();
  for (int64_t t = 0; t < time; ++t) {
    std::vector<int64_t> strides = {time * kWidth, kWidth, 1};
    recur_tensor x = strided(stepped.x.data() + t * kWidth, RECUR_F32,
                             {batch, 1, kWidth}, strides);
    recur_tensor y = strided(stepped.y.data() + t * kWidth, RECUR_F32,
                             {batch, 1, kWidth}, strides);
    ASSERT_OK(recur_step(scanLayer().get(), &x, &a, stepState.get(), &y));
  }
  EXPECT_EQ(stepped.y, whole.y);
  EXPECT_EQ(stateData(stepState.get()), stateData(wholeState.get()));

  // Split at arbitrary points.
  ScanCall split(batch, time);
  StateHandle splitState = makeState(scanLayer(), batch);
  const int64_t bounds[] = {0, 2, 3, 6, 7};
  for (size_t i = 0; i + 1 < std::size(bounds); ++i) {
    int64_t length = bounds[i + 1] - bounds[i];
    std::vector<int64_t> strides = {time * kWidth, kWidth, 1};
    recur_tensor x = strided(split.x.data() + bounds[i] * kWidth, RECUR_F32,
                             {batch, length, kWidth}, strides);
    recur_tensor y = strided(split.y.data() + bounds[i] * kWidth, RECUR_F32,
                             {batch, length, kWidth}, strides);
    ASSERT_OK(recur_forward(scanLayer().get(), &x, &a, splitState.get(), &y));
  }
  EXPECT_EQ(split.y, whole.y);
  EXPECT_EQ(stateData(splitState.get()), stateData(wholeState.get()));
}

TEST(RuntimeForward, ComplexState) {
  using C = std::complex<float>;
  const int64_t batch = 2, time = 3, width = 2;
  std::vector<C> x(batch * time * width), a = {{0.5f, 0.25f}, {-0.3f, 0.6f}};
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = {0.1f * static_cast<float>(i), 1.0f - 0.2f * static_cast<float>(i)};
  std::vector<C> y(x.size());
  StateHandle state = makeState(complexScanLayer(), batch);
  for (C value : stateData<C>(state.get()))
    EXPECT_EQ(value, C(1.5f, 0.0f));
  recur_tensor in = tensor(x.data(), RECUR_C64, {batch, time, width});
  recur_tensor p = tensor(a.data(), RECUR_C64, {width});
  recur_tensor out = tensor(y.data(), RECUR_C64, {batch, time, width});
  ASSERT_OK(
      recur_forward(complexScanLayer().get(), &in, &p, state.get(), &out));
  std::vector<std::complex<double>> h(batch * width, 1.5);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t)
      for (int64_t d = 0; d < width; ++d) {
        int64_t i = (b * time + t) * width + d;
        h[b * width + d] = std::complex<double>(a[d]) * h[b * width + d] +
                           std::complex<double>(x[i]);
        EXPECT_NEAR(std::abs(std::complex<double>(y[i]) - h[b * width + d]), 0,
                    1e-5);
      }
  std::vector<C> final = stateData<C>(state.get());
  for (size_t i = 0; i < final.size(); ++i)
    EXPECT_NEAR(std::abs(std::complex<double>(final[i]) - h[i]), 0, 1e-5);
}

TEST(RuntimeForward, ParamInitState) {
  const int64_t batch = 2, time = 4;
  std::vector<float> h0 = {1, -2, 3, -4};
  ScanCall call(batch, time);
  recur_tensor params[] = {call.param(),
                           tensor(h0.data(), RECUR_F32, {kWidth})};
  StateHandle state = makeState(scanInitLayer(), batch, params);
  EXPECT_EQ(stateData(state.get()),
            std::vector<float>({1, -2, 3, -4, 1, -2, 3, -4}));
  recur_tensor x = call.input(), y = call.output();
  ASSERT_OK(recur_forward(scanInitLayer().get(), &x, params, state.get(), &y));
  std::vector<double> h = {1, -2, 3, -4, 1, -2, 3, -4};
  expectNear(call.y, referenceScan(call.x, call.a, h, batch, time, kWidth));
  // Without a state the run starts from h0 as well.
  std::vector<float> yWithState = call.y;
  ASSERT_OK(recur_forward(scanInitLayer().get(), &x, params, nullptr, &y));
  EXPECT_EQ(call.y, yWithState);
  // Resetting row 1 copies h0 into it again, and only there.
  std::vector<float> before = stateData(state.get());
  ASSERT_OK(recur_state_reset(state.get(), 1, params));
  std::vector<float> after = stateData(state.get());
  for (int64_t d = 0; d < kWidth; ++d) {
    EXPECT_EQ(after[d], before[d]);
    EXPECT_EQ(after[kWidth + d], h0[d]);
  }
}

TEST(RuntimeForward, FullShapeParamInit) {
  // h0 f32[B, D]: row b of the state starts from row b of h0; h0 is read
  // through its strides (a transposed view).
  std::vector<float> h0t = {1, 5, 2, 6, 3, 7, 4, 8}; // [D, B] storage
  ScanCall call(2, 1);
  recur_tensor params[] = {call.param(),
                           strided(h0t.data(), RECUR_F32, {2, kWidth}, {1, 2})};
  StateHandle state = makeState(scanInitFullLayer(), 2, params);
  EXPECT_EQ(stateData(state.get()),
            std::vector<float>({1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_OK(recur_state_reset(state.get(), -1, params));
  h0t[1] = 50;
  ASSERT_OK(recur_state_reset(state.get(), 1, params));
  EXPECT_EQ(stateData(state.get()),
            std::vector<float>({1, 2, 3, 4, 50, 6, 7, 8}));
  // A param of another batch cannot initialize the state.
  recur_tensor wrong[] = {call.param(),
                          tensor(h0t.data(), RECUR_F32, {1, kWidth})};
  EXPECT_RECUR_ERROR(recur_state_reset(state.get(), 0, wrong),
                     RECUR_ERROR_SHAPE, "dimension B is 2 in the state but 1");
}

TEST(RuntimeForward, ManyThreadsWithTheirOwnStates) {
  size_t start = liveBytes();
  ScanCall reference(2, 6);
  StateHandle referenceState = makeState(scanLayer(), 2);
  for (int i = 0; i < 20; ++i)
    ASSERT_OK(reference.forward(referenceState.get()));
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&results, t] {
      ScanCall call(2, 6);
      recur_state *state = nullptr;
      if (recur_state_create(scanLayer().get(), 2, nullptr, &state))
        return;
      bool ok = true;
      for (int i = 0; i < 20; ++i)
        ok = ok && call.forward(state) == RECUR_OK;
      if (ok)
        results[t] = call.y;
      recur_state_destroy(state);
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::vector<float> &result : results)
    EXPECT_EQ(result, reference.y);
  referenceState.reset();
  EXPECT_EQ(liveBytes(), start);
}

//===----------------------------------------------------------------------===//
// Result ownership and aliasing
//===----------------------------------------------------------------------===//

TEST(RuntimeAlias, StateAndInputPassedThrough) {
  StateHandle state = makeState(holdLayer(), 2);
  recur_tensor view;
  ASSERT_OK(recur_state_view(state.get(), 0, &view));
  size_t start = liveBytes();
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(6), xs(6);
  recur_tensor in = tensor(x.data(), RECUR_F32, {2, 3});
  recur_tensor outs[] = {tensor(y.data(), RECUR_F32, {2, 3}),
                         tensor(xs.data(), RECUR_F32, {2, 3})};
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(
        recur_forward(holdLayer().get(), &in, nullptr, state.get(), outs));
  EXPECT_EQ(y, std::vector<float>({2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(xs, x);
  EXPECT_EQ(stateData(state.get()), std::vector<float>(6, 1));
  recur_tensor after;
  ASSERT_OK(recur_state_view(state.get(), 0, &after));
  EXPECT_EQ(after.data, view.data); // kept, not copied
  EXPECT_EQ(liveBytes(), start);
  // A strided input reaches the kernel as a copy, which it passes through.
  std::vector<float> wide = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0};
  recur_tensor stridedIn = strided(wide.data(), RECUR_F32, {2, 3}, {6, 2});
  ASSERT_OK(
      recur_forward(holdLayer().get(), &stridedIn, nullptr, nullptr, outs));
  EXPECT_EQ(xs, x);
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeAlias, InputBecomesStateWithoutAliasing) {
  size_t start = liveBytes();
  StateHandle state = makeState(latchLayer(), 2);
  std::vector<float> x1 = {1, 2, 3, 4, 5, 6}, y(6, -1);
  recur_tensor in = tensor(x1.data(), RECUR_F32, {2, 3});
  recur_tensor out = tensor(y.data(), RECUR_F32, {2, 3});
  ASSERT_OK(recur_forward(latchLayer().get(), &in, nullptr, state.get(), &out));
  EXPECT_EQ(y, std::vector<float>(6, 0));
  EXPECT_EQ(stateData(state.get()), x1);
  recur_tensor view;
  ASSERT_OK(recur_state_view(state.get(), 0, &view));
  EXPECT_NE(view.data, static_cast<void *>(x1.data()));
  x1.assign(6, 100); // the state keeps its own copy
  EXPECT_EQ(stateData(state.get()), std::vector<float>({1, 2, 3, 4, 5, 6}));
  // A strided input: the kernel passes through the runtime's contiguous
  // copy, which the call frees afterwards.
  std::vector<float> wide = {7, 0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0};
  recur_tensor stridedIn = strided(wide.data(), RECUR_F32, {2, 3}, {6, 2});
  ASSERT_OK(recur_forward(latchLayer().get(), &stridedIn, nullptr, state.get(),
                          &out));
  EXPECT_EQ(y, std::vector<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(stateData(state.get()), std::vector<float>({7, 8, 9, 10, 11, 12}));
  state.reset();
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeAlias, SwappedStates) {
  size_t start = liveBytes();
  StateHandle state = makeState(swapLayer(), 2);
  ASSERT_OK(
      recur_forward(swapLayer().get(), nullptr, nullptr, state.get(), nullptr));
  EXPECT_EQ(stateData(state.get(), 0), std::vector<float>(4, 2));
  EXPECT_EQ(stateData(state.get(), 1), std::vector<float>(4, 1));
  ASSERT_OK(
      recur_forward(swapLayer().get(), nullptr, nullptr, state.get(), nullptr));
  EXPECT_EQ(stateData(state.get(), 0), std::vector<float>(4, 1));
  EXPECT_EQ(stateData(state.get(), 1), std::vector<float>(4, 2));
  state.reset();
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeAlias, OneBufferReturnedTwice) {
  size_t start = liveBytes();
  StateHandle state = makeState(twiceLayer(), 2);
  std::vector<float> x = {1, 2, 3, 4}, y(4);
  recur_tensor in = tensor(x.data(), RECUR_F32, {2, 2});
  recur_tensor out = tensor(y.data(), RECUR_F32, {2, 2});
  for (int i = 1; i <= 3; ++i) {
    ASSERT_OK(
        recur_forward(twiceLayer().get(), &in, nullptr, state.get(), &out));
    EXPECT_EQ(y, std::vector<float>({1.f * i, 2.f * i, 3.f * i, 4.f * i}));
    recur_tensor view;
    ASSERT_OK(recur_state_view(state.get(), 0, &view));
    EXPECT_EQ(view.data, lastTwiceBuffer); // adopted without a copy
  }
  EXPECT_EQ(stateData(state.get()), std::vector<float>({3, 6, 9, 12}));
  ASSERT_OK(recur_forward(twiceLayer().get(), &in, nullptr, nullptr, &out));
  EXPECT_EQ(y, x);
  state.reset();
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeAlias, ConstantGlobalResult) {
  size_t start = liveBytes();
  StateHandle state = makeState(constLayer(), 1);
  std::vector<float> y(2);
  recur_tensor out = tensor(y.data(), RECUR_F32, {2});
  ASSERT_OK(
      recur_forward(constLayer().get(), nullptr, nullptr, state.get(), &out));
  EXPECT_EQ(y, std::vector<float>({7, 8}));
  EXPECT_EQ(stateData(state.get()), std::vector<float>({7, 8}));
  recur_tensor view;
  ASSERT_OK(recur_state_view(state.get(), 0, &view));
  EXPECT_NE(view.data, static_cast<void *>(constantGlobal));
  ASSERT_OK(recur_forward(constLayer().get(), nullptr, nullptr, nullptr, &out));
  ASSERT_OK(recur_state_reset(state.get(), 0, nullptr));
  EXPECT_EQ(stateData(state.get()), std::vector<float>({0, 0}));
  EXPECT_RECUR_ERROR(recur_state_reset(state.get(), 1, nullptr),
                     RECUR_ERROR_INVALID_ARGUMENT, "row 1 is out of range");
  recur_state *other = nullptr;
  EXPECT_RECUR_ERROR(recur_state_create(constLayer().get(), 2, nullptr, &other),
                     RECUR_ERROR_INVALID_ARGUMENT, "no batch dimension");
  EXPECT_EQ(constantGlobal[0], 7);
  state.reset();
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeAlias, ResultsAtOffsetsOfOneBuffer) {
  size_t start = liveBytes();
  StateHandle state = makeState(offsetLayer(), 3);
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(6);
  recur_tensor in = tensor(x.data(), RECUR_F32, {3, 2});
  recur_tensor out = tensor(y.data(), RECUR_F32, {3, 2});
  for (int i = 1; i <= 2; ++i) {
    ASSERT_OK(
        recur_forward(offsetLayer().get(), &in, nullptr, state.get(), &out));
    EXPECT_EQ(y, std::vector<float>({10, 20, 30, 40, 50, 60}));
    recur_tensor view;
    ASSERT_OK(recur_state_view(state.get(), 0, &view));
    EXPECT_EQ(view.data, static_cast<void *>(lastOffsetBuffer + 2));
  }
  EXPECT_EQ(stateData(state.get()), std::vector<float>({2, 4, 6, 8, 10, 12}));
  // An adopted buffer saves and loads like any other.
  size_t size = 0;
  ASSERT_OK(recur_state_save_size(state.get(), &size));
  std::vector<unsigned char> saved(size);
  ASSERT_OK(recur_state_save(state.get(), saved.data(), size));
  StateHandle copy = makeState(offsetLayer(), 3);
  ASSERT_OK(recur_state_load(copy.get(), saved.data(), size));
  EXPECT_EQ(stateData(copy.get()), stateData(state.get()));
  state.reset();
  copy.reset();
  EXPECT_EQ(liveBytes(), start);
}

//===----------------------------------------------------------------------===//
// States
//===----------------------------------------------------------------------===//

TEST(RuntimeState, ResetOneRow) {
  ScanCall call(3, 2);
  StateHandle state = makeState(scanLayer(), 3);
  ASSERT_OK(call.forward(state.get()));
  std::vector<float> before = stateData(state.get());
  ASSERT_OK(recur_state_reset(state.get(), 1, nullptr));
  std::vector<float> after = stateData(state.get());
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t d = 0; d < kWidth; ++d)
      EXPECT_EQ(after[b * kWidth + d], b == 1 ? 0 : before[b * kWidth + d]);
  ASSERT_OK(recur_state_reset(state.get(), -1, nullptr));
  EXPECT_EQ(stateData(state.get()), std::vector<float>(3 * kWidth, 0));
  EXPECT_RECUR_ERROR(recur_state_reset(state.get(), 3, nullptr),
                     RECUR_ERROR_INVALID_ARGUMENT,
                     "recur_state_reset(Scan): row 3 is out of range");
  EXPECT_RECUR_ERROR(recur_state_reset(nullptr, 0, nullptr),
                     RECUR_ERROR_NULL_POINTER, "state is NULL");
}

TEST(RuntimeState, ViewAndBatch) {
  StateHandle state = makeState(scanLayer(), 5);
  recur_tensor view;
  ASSERT_OK(recur_state_view(state.get(), 0, &view));
  EXPECT_EQ(view.dtype, RECUR_F32);
  EXPECT_EQ(view.rank, 2);
  EXPECT_EQ(view.shape[0], 5);
  EXPECT_EQ(view.shape[1], kWidth);
  EXPECT_EQ(view.strides[0], kWidth);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data) % 64, 0u);
  EXPECT_EQ(recur_state_batch(state.get()), 5);
  EXPECT_EQ(recur_state_batch(nullptr), -1);
  EXPECT_RECUR_ERROR(recur_state_view(state.get(), 1, &view),
                     RECUR_ERROR_INVALID_ARGUMENT, "state index 1");
  EXPECT_RECUR_ERROR(recur_state_view(state.get(), 0, nullptr),
                     RECUR_ERROR_NULL_POINTER, "NULL");
  // An empty batch is a state with no elements.
  StateHandle empty = makeState(scanLayer(), 0);
  ASSERT_OK(recur_state_view(empty.get(), 0, &view));
  EXPECT_EQ(recur_tensor_numel(&view), 0);
  ScanCall call(0, 3);
  ASSERT_OK(call.forward(empty.get()));
}

/// The bits of an f16 or bf16 element.
uint16_t bitsOf(const recur_state *state, int32_t index, size_t element) {
  return stateData<uint16_t>(state, index)[element];
}

TEST(RuntimeState, InitsOfEveryDtype) {
  std::vector<double> p = {1.0, 0.1, 65504.0, 65520.0, 6e-8, -0.0};
  // f16 1.0, -2.5, the smallest subnormal and infinity.
  std::vector<uint16_t> q = {0x3C00, 0xC100, 0x0001, 0x7C00};
  recur_tensor params[] = {tensor(p.data(), RECUR_F64, {6}),
                           tensor(q.data(), RECUR_F16, {4})};
  StateHandle state = makeState(dtypesLayer(), 2, params);
  // f16 from f64, rounded to nearest even: 65520 overflows to infinity and
  // 6e-8 becomes the smallest subnormal.
  const uint16_t f16[] = {0x3C00, 0x2E66, 0x7BFF, 0x7C00, 0x0001, 0x8000};
  // In bf16, 65504 and 65520 round up to 65536.
  const uint16_t bf16[] = {0x3F80, 0x3DCD, 0x4780, 0x4780, 0x3381, 0x8000};
  for (size_t row = 0; row < 2; ++row)
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(bitsOf(state.get(), 0, row * 6 + i), f16[i]) << i;
      EXPECT_EQ(bitsOf(state.get(), 1, row * 6 + i), bf16[i]) << i;
    }
  EXPECT_EQ(bitsOf(state.get(), 2, 0), 0x2E66);
  EXPECT_EQ(stateData<float>(state.get(), 3)[1], 0.1f);
  EXPECT_EQ(stateData<double>(state.get(), 4)[1], 0.1);
  EXPECT_EQ(stateData<std::complex<float>>(state.get(), 5)[0],
            std::complex<float>(-2.5f, 0));
  EXPECT_EQ(stateData<std::complex<double>>(state.get(), 6)[1],
            std::complex<double>(1, 0));
  EXPECT_EQ(stateData<uint8_t>(state.get(), 7)[0], 1);
  EXPECT_EQ(stateData<int32_t>(state.get(), 8)[1], -3);
  using C = std::complex<float>;
  EXPECT_EQ(stateData<C>(state.get(), 9),
            std::vector<C>({1, -2.5f, std::ldexp(1.0f, -24), INFINITY, 1, -2.5f,
                            std::ldexp(1.0f, -24), INFINITY}));
}

//===----------------------------------------------------------------------===//
// Save and load
//===----------------------------------------------------------------------===//

/// A Scan state of `batch` rows after one call, and its saved bytes.
struct SavedScan {
  explicit SavedScan(int64_t batch)
      : call(batch, 3), state(makeState(scanLayer(), batch)) {
    EXPECT_EQ(call.forward(state.get()), RECUR_OK);
    size_t size = 0;
    EXPECT_EQ(recur_state_save_size(state.get(), &size), RECUR_OK);
    bytes.resize(size);
    EXPECT_EQ(recur_state_save(state.get(), bytes.data(), size), RECUR_OK);
  }

  ScanCall call;
  StateHandle state;
  std::vector<unsigned char> bytes;
};

TEST(RuntimeSave, RoundTrip) {
  SavedScan saved(2);
  StateHandle loaded = makeState(scanLayer(), 2);
  ASSERT_OK(
      recur_state_load(loaded.get(), saved.bytes.data(), saved.bytes.size()));
  EXPECT_EQ(stateData(loaded.get()), stateData(saved.state.get()));
  EXPECT_EQ(std::memcmp(saved.bytes.data(), "RECURST", 8), 0);
  // Both continue the same way.
  ScanCall a(2, 4), b(2, 4);
  ASSERT_OK(a.forward(saved.state.get()));
  ASSERT_OK(b.forward(loaded.get()));
  EXPECT_EQ(a.y, b.y);
}

TEST(RuntimeSave, RefusesTruncatedData) {
  SavedScan saved(2);
  StateHandle target = makeState(scanLayer(), 2);
  std::vector<float> before = stateData(target.get());
  for (size_t size : {size_t(0), size_t(7), size_t(8), size_t(30),
                      saved.bytes.size() - 9, saved.bytes.size() - 1}) {
    EXPECT_RECUR_ERROR(recur_state_load(target.get(), saved.bytes.data(), size),
                       RECUR_ERROR_FORMAT, "truncated");
    EXPECT_EQ(stateData(target.get()), before);
  }
  std::vector<unsigned char> longer = saved.bytes;
  longer.push_back(0);
  EXPECT_RECUR_ERROR(
      recur_state_load(target.get(), longer.data(), longer.size()),
      RECUR_ERROR_FORMAT, "recur_state_load(Scan)");
  std::vector<unsigned char> foreign(saved.bytes.size(), 'x');
  EXPECT_RECUR_ERROR(
      recur_state_load(target.get(), foreign.data(), foreign.size()),
      RECUR_ERROR_FORMAT, "not a saved Recur state");
  EXPECT_EQ(stateData(target.get()), before);
}

TEST(RuntimeSave, RefusesEveryBitFlip) {
  SavedScan saved(2);
  StateHandle target = makeState(scanLayer(), 2);
  std::vector<float> before = stateData(target.get());
  for (size_t i = 0; i < saved.bytes.size(); ++i) {
    std::vector<unsigned char> corrupt = saved.bytes;
    corrupt[i] ^= static_cast<unsigned char>(1u << (i % 8));
    EXPECT_EQ(recur_state_load(target.get(), corrupt.data(), corrupt.size()),
              RECUR_ERROR_FORMAT)
        << "byte " << i;
    EXPECT_EQ(stateData(target.get()), before);
  }
}

TEST(RuntimeSave, RefusesOtherLayerAndBatch) {
  SavedScan saved(2);
  StateHandle otherBatch = makeState(scanLayer(), 3);
  std::vector<float> before = stateData(otherBatch.get());
  EXPECT_RECUR_ERROR(recur_state_load(otherBatch.get(), saved.bytes.data(),
                                      saved.bytes.size()),
                     RECUR_ERROR_STATE, "batch 2, but this state has batch 3");
  EXPECT_EQ(stateData(otherBatch.get()), before);
  StateHandle otherLayer = makeState(holdLayer(), 2);
  before = stateData(otherLayer.get());
  EXPECT_RECUR_ERROR(recur_state_load(otherLayer.get(), saved.bytes.data(),
                                      saved.bytes.size()),
                     RECUR_ERROR_STATE, "another layer");
  EXPECT_EQ(stateData(otherLayer.get()), before);
}

TEST(RuntimeSave, BufferChecks) {
  SavedScan saved(1);
  EXPECT_RECUR_ERROR(recur_state_save(saved.state.get(), saved.bytes.data(),
                                      saved.bytes.size() - 1),
                     RECUR_ERROR_INVALID_ARGUMENT, "recur_state_save_size");
  EXPECT_RECUR_ERROR(
      recur_state_save(saved.state.get(), nullptr, saved.bytes.size()),
      RECUR_ERROR_NULL_POINTER, "NULL");
  EXPECT_RECUR_ERROR(recur_state_save_size(saved.state.get(), nullptr),
                     RECUR_ERROR_NULL_POINTER, "NULL");
  EXPECT_RECUR_ERROR(recur_state_load(saved.state.get(), nullptr, 10),
                     RECUR_ERROR_NULL_POINTER, "NULL");
  EXPECT_RECUR_ERROR(recur_state_load(nullptr, saved.bytes.data(), 10),
                     RECUR_ERROR_NULL_POINTER, "NULL");
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(RuntimeErrors, NullPointers) {
  ScanCall call(2, 5);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  const recur_layer_desc *scan = scanLayer().get();
  EXPECT_RECUR_ERROR(recur_forward(nullptr, &x, &a, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_forward(?): layer is "
                     "NULL");
  EXPECT_RECUR_ERROR(recur_forward(scan, nullptr, &a, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_forward(Scan): inputs is NULL");
  EXPECT_RECUR_ERROR(recur_forward(scan, &x, nullptr, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER, "params is NULL");
  EXPECT_RECUR_ERROR(recur_forward(scan, &x, &a, nullptr, nullptr),
                     RECUR_ERROR_NULL_POINTER, "outputs is NULL");
  recur_tensor noData = x;
  noData.data = nullptr;
  EXPECT_RECUR_ERROR(recur_forward(scan, &noData, &a, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER,
                     "input 'x' has 40 elements but its data is NULL");
  EXPECT_RECUR_ERROR(recur_state_create(scan, 2, nullptr, nullptr),
                     RECUR_ERROR_NULL_POINTER, "out is NULL");
  Layer noKernel = scanLayer();
  noKernel.desc.kernel = nullptr;
  EXPECT_RECUR_ERROR(recur_forward(noKernel.get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER, "no kernel");
  recur_state_destroy(nullptr);
}

TEST(RuntimeErrors, WrongShapes) {
  ScanCall call(2, 5);
  recur_tensor a = call.param(), y = call.output();
  recur_tensor rank2 = tensor(call.x.data(), RECUR_F32, {2, 5});
  EXPECT_RECUR_ERROR(
      recur_forward(scanLayer().get(), &rank2, &a, nullptr, &y),
      RECUR_ERROR_SHAPE,
      "recur_forward(Scan): input 'x' has shape [2, 5], expected [B, T, D = "
      "4]");
  recur_tensor width3 = tensor(call.x.data(), RECUR_F32, {2, 5, 3});
  EXPECT_RECUR_ERROR(recur_forward(scanLayer().get(), &width3, &a, nullptr, &y),
                     RECUR_ERROR_SHAPE,
                     "input 'x' has shape [2, 5, 3], expected [B, T, D = 4]");
  recur_tensor x = call.input();
  recur_tensor shortParam = tensor(call.a.data(), RECUR_F32, {3});
  EXPECT_RECUR_ERROR(
      recur_forward(scanLayer().get(), &x, &shortParam, nullptr, &y),
      RECUR_ERROR_SHAPE, "param 'a' has shape [3], expected [D = 4]");
  recur_tensor negative = tensor(call.x.data(), RECUR_F32, {2, -5, 4});
  EXPECT_RECUR_ERROR(
      recur_forward(scanLayer().get(), &negative, &a, nullptr, &y),
      RECUR_ERROR_SHAPE, "has shape [2, -5, 4]");
  recur_tensor tooDeep = x;
  tooDeep.rank = RECUR_MAX_RANK + 1;
  EXPECT_RECUR_ERROR(
      recur_forward(scanLayer().get(), &tooDeep, &a, nullptr, &y),
      RECUR_ERROR_SHAPE, "input 'x' has rank 9");
}

TEST(RuntimeErrors, InconsistentRuntimeDims) {
  ScanCall call(2, 7);
  recur_tensor a = call.param(), y = call.output();
  recur_tensor x = tensor(call.x.data(), RECUR_F32, {2, 5, kWidth});
  EXPECT_RECUR_ERROR(recur_forward(scanLayer().get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_SHAPE,
                     "recur_forward(Scan): dimension T is 5 in 'x' but 7 in "
                     "'y'");
  recur_tensor x1 = tensor(call.x.data(), RECUR_F32, {1, 7, kWidth});
  EXPECT_RECUR_ERROR(recur_forward(scanLayer().get(), &x1, &a, nullptr, &y),
                     RECUR_ERROR_SHAPE, "dimension B is 1 in 'x' but 2 in 'y'");
}

TEST(RuntimeErrors, WrongDtypes) {
  ScanCall call(2, 5);
  std::vector<double> x64(call.x.begin(), call.x.end());
  recur_tensor x = tensor(x64.data(), RECUR_F64, call.shapeX());
  recur_tensor a = call.param(), y = call.output();
  EXPECT_RECUR_ERROR(recur_forward(scanLayer().get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_DTYPE,
                     "recur_forward(Scan): input 'x' has dtype f64, expected "
                     "f32");
  x = call.input();
  recur_tensor y32 = y;
  y32.dtype = RECUR_I32;
  EXPECT_RECUR_ERROR(recur_forward(scanLayer().get(), &x, &a, nullptr, &y32),
                     RECUR_ERROR_DTYPE,
                     "output 'y' has dtype i32, expected f32");
}

TEST(RuntimeErrors, StateOfAnotherLayerOrBatch) {
  ScanCall call(2, 5);
  StateHandle hold = makeState(holdLayer(), 2);
  EXPECT_RECUR_ERROR(call.forward(hold.get()), RECUR_ERROR_STATE,
                     "the state was made for layer 'Hold'");
  StateHandle three = makeState(scanLayer(), 3);
  std::vector<float> before = stateData(three.get());
  EXPECT_RECUR_ERROR(call.forward(three.get()), RECUR_ERROR_STATE,
                     "the state has batch 3, but B is 2 in 'x'");
  EXPECT_EQ(stateData(three.get()), before);
  // A copy of the descriptor (another header including the same layer) is
  // the same layer; one with another id is not.
  Layer copy = scanLayer();
  StateHandle state = makeState(scanLayer(), 2);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  ASSERT_OK(recur_forward(copy.get(), &x, &a, state.get(), &y));
  copy.desc.id = 0x5ca12;
  EXPECT_RECUR_ERROR(recur_forward(copy.get(), &x, &a, state.get(), &y),
                     RECUR_ERROR_STATE, "id 0x000000000005ca11");
}

TEST(RuntimeErrors, AbiVersion) {
  Layer future = scanLayer();
  future.desc.abi_version = RECUR_ABI_VERSION + 1;
  ScanCall call(2, 5);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  std::string version = "ABI version " + std::to_string(RECUR_ABI_VERSION + 1);
  EXPECT_RECUR_ERROR(recur_forward(future.get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_ABI, version.c_str());
  recur_state *state = nullptr;
  EXPECT_RECUR_ERROR(recur_state_create(future.get(), 2, nullptr, &state),
                     RECUR_ERROR_ABI, "recur_state_create(?)");
  EXPECT_EQ(state, nullptr);
}

TEST(RuntimeErrors, UnsupportedStates) {
  recur_state *state = nullptr;
  Layer random = scanLayer();
  random.args[2].init = RECUR_INIT_OTHER;
  EXPECT_RECUR_ERROR(recur_state_create(random.get(), 2, nullptr, &state),
                     RECUR_ERROR_UNSUPPORTED, "state 'h' has a random init");
  ScanCall call(2, 5);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  EXPECT_RECUR_ERROR(recur_forward(random.get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_UNSUPPORTED, "random init");
  Layer noInit = scanLayer();
  noInit.args[2].init = RECUR_INIT_NONE;
  EXPECT_RECUR_ERROR(recur_state_create(noInit.get(), 2, nullptr, &state),
                     RECUR_ERROR_UNSUPPORTED, "no init rule");
  Layer perTime = scanLayer();
  perTime.args[2].shape[1] = -2;
  perTime.args[2].dim_names[1] = "T";
  perTime.results[1].shape[1] = -2;
  EXPECT_RECUR_ERROR(recur_state_create(perTime.get(), 2, nullptr, &state),
                     RECUR_ERROR_UNSUPPORTED, "varies in dimension T");
  Layer deep = scanLayer();
  deep.args[0].rank = RECUR_MAX_RANK + 1;
  EXPECT_RECUR_ERROR(recur_forward(deep.get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_UNSUPPORTED, "RECUR_MAX_RANK");
  EXPECT_EQ(state, nullptr);
}

TEST(RuntimeErrors, InitParams) {
  recur_state *state = nullptr;
  EXPECT_RECUR_ERROR(
      recur_state_create(scanInitLayer().get(), 2, nullptr, &state),
      RECUR_ERROR_NULL_POINTER,
      "state 'h' is initialized from param 'h0', but params is NULL");
  ScanCall call(2, 5);
  std::vector<double> h0(kWidth);
  recur_tensor wrongType[] = {call.param(),
                              tensor(h0.data(), RECUR_F64, {kWidth})};
  EXPECT_RECUR_ERROR(
      recur_state_create(scanInitLayer().get(), 2, wrongType, &state),
      RECUR_ERROR_DTYPE, "param 'h0' has dtype f64, expected f32");
  Layer badIndex = scanInitLayer();
  badIndex.args[3].init_param = 5;
  EXPECT_RECUR_ERROR(recur_state_create(badIndex.get(), 2, wrongType, &state),
                     RECUR_ERROR_INVALID_ARGUMENT, "from param 5");
  EXPECT_RECUR_ERROR(recur_state_create(scanLayer().get(), -1, nullptr, &state),
                     RECUR_ERROR_INVALID_ARGUMENT, "batch -1 is negative");
  EXPECT_EQ(state, nullptr);
}

TEST(RuntimeErrors, OutOfMemory) {
  size_t start = liveBytes();
  recur_state *state = nullptr;
  EXPECT_RECUR_ERROR(
      recur_state_create(scanLayer().get(), int64_t(1) << 46, nullptr, &state),
      RECUR_ERROR_OUT_OF_MEMORY, "cannot allocate");
  EXPECT_RECUR_ERROR(
      recur_state_create(scanLayer().get(), INT64_MAX / 2, nullptr, &state),
      RECUR_ERROR_OUT_OF_MEMORY, "too large");
  EXPECT_EQ(state, nullptr);
  EXPECT_EQ(liveBytes(), start);
}

TEST(RuntimeErrors, StepChecks) {
  ScanCall call(2, 3);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  EXPECT_RECUR_ERROR(recur_step(scanLayer().get(), &x, &a, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_step(Scan): state is NULL");
  StateHandle state = makeState(scanLayer(), 2);
  EXPECT_RECUR_ERROR(recur_step(scanLayer().get(), &x, &a, state.get(), &y),
                     RECUR_ERROR_SHAPE,
                     "dimension T is 3 in 'x', but a step covers 1");
  EXPECT_EQ(stateData(state.get()), std::vector<float>(2 * kWidth, 0));
}

TEST(RuntimeErrors, MalformedDescriptors) {
  ScanCall call(2, 5);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  auto expectMalformed = [&](const Layer &layer, const char *text) {
    EXPECT_RECUR_ERROR(recur_forward(layer.get(), &x, &a, nullptr, &y),
                       RECUR_ERROR_INVALID_ARGUMENT, text);
  };
  Layer duplicate = scanLayer();
  duplicate.args[1].role = RECUR_ROLE_INPUT;
  duplicate.args[1].index = 0;
  expectMalformed(duplicate, "inputs 'x' and 'a' both have index 0");
  Layer role = scanLayer();
  role.args[1].role = RECUR_ROLE_OUTPUT;
  expectMalformed(role, "has role 3");
  Layer count = scanLayer();
  count.desc.num_args = 2;
  expectMalformed(count, "num_args is 2");
  Layer dim = scanLayer();
  dim.args[0].shape[0] = -5;
  expectMalformed(dim, "runtime dimension 4");
  Layer nextState = scanLayer();
  nextState.results[1].dtype = RECUR_F64;
  expectMalformed(nextState, "does not have the dtype and shape");
  Layer dtype = scanLayer();
  dtype.args[0].dtype = static_cast<recur_dtype>(77);
  expectMalformed(dtype, "has dtype 77");
}

TEST(RuntimeErrors, UnboundDimension) {
  // Swap has no tensor but its states that sets B: it needs a state.
  EXPECT_RECUR_ERROR(
      recur_forward(swapLayer().get(), nullptr, nullptr, nullptr, nullptr),
      RECUR_ERROR_INVALID_ARGUMENT, "dimension B of 'h1' is not set");
}

TEST(RuntimeErrors, KernelReturnsWrongShape) {
  size_t start = liveBytes();
  ScanCall call(2, 5);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  StateHandle state = makeState(badShapeLayer(), 2);
  EXPECT_RECUR_ERROR(
      recur_forward(badShapeLayer().get(), &x, &a, state.get(), &y),
      RECUR_ERROR_INTERNAL,
      "the kernel returned output 'y' of shape [2, 6, 4], expected [2, 5, "
      "4]");
  EXPECT_EQ(call.y, std::vector<float>(call.y.size(), -99));
  state.reset();
  EXPECT_EQ(liveBytes(), start);
}

/// What one forward call allocates at its peak, above what was live.
size_t peakOfCall(ScanCall &call, recur_state *state) {
  recur_memory_stats before, after;
  recur_memory_stats_get(&before);
  recur_memory_stats_reset_peak();
  EXPECT_EQ(call.forward(state), RECUR_OK) << recur_last_error();
  recur_memory_stats_get(&after);
  return after.peak_bytes - before.live_bytes;
}

TEST(RuntimeWorkspace, BoundsWhatACallAllocates) {
  for (int64_t time : {1, 7, 64}) {
    int64_t dims[] = {3, time};
    size_t bytes = 0;
    ASSERT_OK(recur_workspace_size(scanLayer().get(), dims, &bytes));
    // The kernel's bound, plus the state the runtime may hold beside it.
    size_t kernel = sizeof(float) * (3 * time * kWidth + 3 * kWidth + kWidth);
    EXPECT_EQ(bytes, kernel + sizeof(float) * 3 * kWidth);
    ScanCall call(3, time);
    StateHandle state = makeState(scanLayer(), 3);
    size_t withState = peakOfCall(call, state.get());
    size_t withoutState = peakOfCall(call, nullptr);
    EXPECT_LE(withState, bytes);
    EXPECT_LE(withoutState, bytes);
    EXPECT_GE(withState, kernel); // the bound is not loose here
  }
}

TEST(RuntimeBackward, GradientsFromAStateOrTheInitRules) {
  // B = 2 rows, T = 5, a direct float loop for the expected gradients.
  ScanCall call(2, 5);
  std::vector<float> dy = values(2 * 5 * kWidth, 0.3f, -0.2f),
                     dlast = values(2 * kWidth, -0.5f, 0.25f),
                     h0 = values(2 * kWidth, 1.5f, 0.5f);
  auto expected = [&](bool fromState, bool withDlast, std::vector<float> &dx,
                      std::vector<float> &da, std::vector<float> &dh) {
    dx.assign(2 * 5 * kWidth, 0);
    da.assign(kWidth, 0);
    dh.assign(2 * kWidth, 0);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t d = 0; d < kWidth; ++d) {
        float ad = call.a[d], st[6];
        st[0] = fromState ? h0[b * kWidth + d] : 0.0f;
        for (int64_t t = 0; t < 5; ++t)
          st[t + 1] = ad * st[t] + call.x[(b * 5 + t) * kWidth + d];
        float g = withDlast ? dlast[b * kWidth + d] : 0.0f;
        for (int64_t t = 4; t >= 0; --t) {
          g += dy[(b * 5 + t) * kWidth + d];
          dx[(b * 5 + t) * kWidth + d] = g;
          da[d] += g * st[t];
          g *= ad;
        }
        dh[b * kWidth + d] = g;
      }
  };
  StateHandle state = makeState(scanLayer(), 2);
  recur_tensor view;
  ASSERT_OK(recur_state_view(state.get(), 0, &view));
  std::memcpy(view.data, h0.data(), h0.size() * sizeof(float));

  recur_tensor x = call.input(), a = call.param();
  recur_tensor dyT = tensor(dy.data(), RECUR_F32, call.shapeX());
  recur_tensor dlastT = tensor(dlast.data(), RECUR_F32, {2, kWidth});
  std::vector<float> gx(dy.size(), -1), ga(kWidth, -1), gh(h0.size(), -1);
  recur_tensor gxT = tensor(gx.data(), RECUR_F32, call.shapeX()),
               gaT = tensor(ga.data(), RECUR_F32, {kWidth}),
               ghT = tensor(gh.data(), RECUR_F32, {2, kWidth});
  std::vector<float> ex, ea, eh;

  // From the state, with the final state's cotangent.
  ASSERT_OK(recur_backward(scanLayer().get(), &x, &a, state.get(), &dyT,
                           &dlastT, &gxT, &gaT, &ghT));
  expected(true, true, ex, ea, eh);
  EXPECT_EQ(gx, ex);
  EXPECT_EQ(ga, ea);
  EXPECT_EQ(gh, eh);
  // The state is read, not changed.
  EXPECT_EQ(stateData(state.get()), h0);

  // From the init rules (zeros), no final-state cotangent (NULL: zero),
  // only dx wanted (a NULL array, a tensor with NULL data).
  std::fill(gx.begin(), gx.end(), -1.0f);
  std::fill(ga.begin(), ga.end(), -1.0f);
  recur_tensor noA = gaT;
  noA.data = nullptr;
  ASSERT_OK(recur_backward(scanLayer().get(), &x, &a, nullptr, &dyT, nullptr,
                           &gxT, &noA, nullptr));
  expected(false, false, ex, ea, eh);
  EXPECT_EQ(gx, ex);
  EXPECT_EQ(ga, std::vector<float>(kWidth, -1.0f)); // not written
}

TEST(RuntimeBackward, Errors) {
  ScanCall call(2, 5);
  recur_tensor x = call.input(), a = call.param(), y = call.output();
  std::vector<float> g(2 * 5 * kWidth);
  recur_tensor gx = tensor(g.data(), RECUR_F32, call.shapeX());
  EXPECT_RECUR_ERROR(recur_backward(scanLayer().get(), &x, &a, nullptr, nullptr,
                                    nullptr, &gx, nullptr, nullptr),
                     RECUR_ERROR_NULL_POINTER, "d_outputs is NULL");
  std::vector<float> shortDy(2 * 4 * kWidth);
  recur_tensor dy = tensor(shortDy.data(), RECUR_F32, {2, 4, kWidth});
  EXPECT_RECUR_ERROR(recur_backward(scanLayer().get(), &x, &a, nullptr, &dy,
                                    nullptr, &gx, nullptr, nullptr),
                     RECUR_ERROR_SHAPE, "dimension T is 5 in 'x' but 4 in 'y'");
  recur_tensor badGrad = tensor(g.data(), RECUR_F64, call.shapeX());
  EXPECT_RECUR_ERROR(recur_backward(scanLayer().get(), &x, &a, nullptr, &y,
                                    nullptr, &badGrad, nullptr, nullptr),
                     RECUR_ERROR_DTYPE, "grad_input 'x' has dtype f64");
  EXPECT_RECUR_ERROR(recur_backward(badShapeLayer().get(), &x, &a, nullptr, &y,
                                    nullptr, &gx, nullptr, nullptr),
                     RECUR_ERROR_UNSUPPORTED, "has no backward kernel");
}

TEST(RuntimeWorkspace, Errors) {
  int64_t dims[] = {2, 5};
  size_t bytes = 7;
  EXPECT_RECUR_ERROR(recur_workspace_size(nullptr, dims, &bytes),
                     RECUR_ERROR_NULL_POINTER, "layer is NULL");
  EXPECT_RECUR_ERROR(recur_workspace_size(scanLayer().get(), nullptr, &bytes),
                     RECUR_ERROR_NULL_POINTER,
                     "dims is NULL, but the layer has 2 runtime dimension(s)");
  EXPECT_RECUR_ERROR(recur_workspace_size(scanLayer().get(), dims, nullptr),
                     RECUR_ERROR_NULL_POINTER, "bytes is NULL");
  int64_t negative[] = {2, -1};
  EXPECT_RECUR_ERROR(recur_workspace_size(scanLayer().get(), negative, &bytes),
                     RECUR_ERROR_SHAPE, "dimension T is -1, below 0");
  int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_RECUR_ERROR(recur_workspace_size(scanLayer().get(), huge, &bytes),
                     RECUR_ERROR_SHAPE, "'x' of shape");
  EXPECT_RECUR_ERROR(recur_workspace_size(badShapeLayer().get(), dims, &bytes),
                     RECUR_ERROR_UNSUPPORTED, "no workspace bound");
  EXPECT_EQ(bytes, 7u); // untouched by a failed call
  // A kernel the compiler could not bound says -1.
  Layer unknown = scanLayer();
  unknown.desc.workspace = [](int64_t *, int64_t) -> int64_t { return -1; };
  EXPECT_RECUR_ERROR(recur_workspace_size(unknown.get(), dims, &bytes),
                     RECUR_ERROR_UNSUPPORTED,
                     "could not bound this layer's workspace");
}

TEST(RuntimeMemory, NoLeakAfterManyCalls) {
  recur_memory_stats before, after;
  recur_memory_stats_get(&before);
  for (int i = 0; i < 25; ++i) {
    ScanCall call(2, 4);
    StateHandle state = makeState(scanLayer(), 2);
    ASSERT_OK(call.forward(state.get()));
    ASSERT_OK(call.forward(nullptr));
    recur_tensor x = strided(call.x.data(), RECUR_F32, {2, 2, kWidth},
                             {4 * kWidth, 2 * kWidth, 1});
    recur_tensor a = call.param();
    recur_tensor y = strided(call.y.data(), RECUR_F32, {2, 2, kWidth},
                             {4 * kWidth, 2 * kWidth, 1});
    ASSERT_OK(recur_forward(scanLayer().get(), &x, &a, state.get(), &y));
    ASSERT_OK(recur_state_reset(state.get(), i % 2, nullptr));
    // Error paths, before and after the kernel.
    recur_tensor bad = tensor(call.x.data(), RECUR_F64, call.shapeX());
    EXPECT_NE(recur_forward(scanLayer().get(), &bad, &a, state.get(), &y),
              RECUR_OK);
    StateHandle badState = makeState(badShapeLayer(), 2);
    EXPECT_NE(recur_forward(badShapeLayer().get(), &x, &a, badState.get(), &y),
              RECUR_OK);
    size_t size = 0;
    ASSERT_OK(recur_state_save_size(state.get(), &size));
    std::vector<unsigned char> bytes(size);
    ASSERT_OK(recur_state_save(state.get(), bytes.data(), size));
    ASSERT_OK(recur_state_load(state.get(), bytes.data(), size));
    EXPECT_NE(recur_state_load(state.get(), bytes.data(), size - 1), RECUR_OK);
    recur_state *none = nullptr;
    EXPECT_NE(
        recur_state_create(scanLayer().get(), int64_t(1) << 46, nullptr, &none),
        RECUR_OK);
  }
  recur_memory_stats_get(&after);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GT(after.allocations, before.allocations);
  EXPECT_GE(after.peak_bytes, after.live_bytes);
}

} // namespace
