//===- FakeCudaDriver.cpp - a CUDA driver on the host, for tests ----------===//
//
// Part of the Recur project.
//
// libfake_cuda.so exports the driver entry points librecur_rt resolves
// (lib/Runtime/CudaDriver.h, whose list declares them here, so a signature
// that drifts does not compile), so that the runtime's CUDA code runs in
// tests on machines without a GPU: RECUR_CUDA_DRIVER=<path of this library>.
//
// Device memory is host memory, and every copy, memset and launch runs when
// it is issued. It checks what a driver checks: a current context for the
// calls that need one, device ranges of copies and kernel arguments, live
// handles, launch dimensions, shared memory. A module image is text:
// "//fake-cuda: fill_f32 saxpy" names the kernels it holds, from the host
// kernels below; anything else is CUDA_ERROR_INVALID_IMAGE with a JIT log.
//
// Environment variables make it misbehave, read by cuInit:
//   FAKE_CUDA_DEVICES=N             N devices (default 1); 0: cuInit fails
//                                   with CUDA_ERROR_NO_DEVICE
//   FAKE_CUDA_INIT_WITHOUT_DEVICES=1  cuInit succeeds, but there are none
//   FAKE_CUDA_FAIL_ALLOC=1          cuMemAlloc and cuMemAllocManaged fail
//                                   with CUDA_ERROR_OUT_OF_MEMORY
//
// fake_cuda_count(what) tells tests what the fake holds (live allocations,
// streams, events, modules; launches; streams ever created; the last JIT
// optimization level).
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using namespace recur::cuda;

extern "C" {
#define FAKE_CUDA_DECLARE(name, params)                                        \
  __attribute__((visibility("default"))) CUresult name params;
RECUR_CUDA_DRIVER_FUNCTIONS(FAKE_CUDA_DECLARE)
#undef FAKE_CUDA_DECLARE
__attribute__((visibility("default")))
int64_t fake_cuda_count(const char *what);
}

namespace {

/// A kernel of the fake: runs threads 0 .. threads - 1 of a launch (counted
/// across the whole grid) on its parameters, with the fake's state locked.
struct Kernel {
  const char *name;
  CUresult (*run)(void **params, uint64_t threads);
};

} // namespace

namespace recur {
namespace cuda {
struct CUctx_st {
  int device;
};
struct CUfunc_st {
  const Kernel *kernel;
  CUmod_st *module;
  int maxSharedBytes;
};
struct CUmod_st {
  std::vector<std::unique_ptr<CUfunc_st>> functions;
};
struct CUstream_st {
  unsigned flags;
};
struct CUevent_st {
  unsigned flags;
};
} // namespace cuda
} // namespace recur

namespace {

constexpr int kMaxDevices = 8;
/// The most dynamic shared memory a kernel may opt in to (an H100's).
constexpr int kMaxOptInSharedBytes = 227 * 1024;

struct State {
  std::mutex mutex;
  bool initialized = false;
  int devices = 0;
  bool failAlloc = false;
  CUctx_st contexts[kMaxDevices];
  std::map<uintptr_t, size_t> allocations; // start -> bytes
  std::set<CUmodule> modules;
  std::set<CUfunction> functions;
  std::set<CUstream> streams;
  int64_t streamsCreated = 0; // by cuStreamCreate, ever
  std::set<CUevent> events;
  int64_t launches = 0;
  int64_t lastOptLevel = -1;
};

State &state() {
  static State *instance = new State;
  return *instance;
}

thread_local CUcontext current = nullptr;

/// Whether [ptr, ptr + bytes) lies in one live allocation (state locked).
bool inDeviceMemory(const State &s, CUdeviceptr ptr, size_t bytes) {
  auto it = s.allocations.upper_bound(static_cast<uintptr_t>(ptr));
  if (it == s.allocations.begin())
    return false;
  --it;
  uintptr_t offset = static_cast<uintptr_t>(ptr) - it->first;
  return offset <= it->second && bytes <= it->second - offset;
}

/// Whether `ptr` points into a live allocation (state locked).
bool isDevicePointer(const State &s, CUdeviceptr ptr) {
  auto it = s.allocations.upper_bound(static_cast<uintptr_t>(ptr));
  if (it == s.allocations.begin())
    return false;
  --it;
  return static_cast<uintptr_t>(ptr) - it->first < it->second;
}

template <typename T> T *hostPointer(CUdeviceptr ptr) {
  return reinterpret_cast<T *>(static_cast<uintptr_t>(ptr));
}

template <typename T> T param(void **params, int i) {
  T value;
  std::memcpy(&value, params[i], sizeof(T));
  return value;
}

/// The number of elements a kernel of `n` elements touches in `threads`.
uint64_t touched(uint32_t n, uint64_t threads) {
  return std::min<uint64_t>(n, threads);
}

/// fill_f32(float *ptr, float value, uint32_t n): ptr[i] = value.
CUresult fillF32(void **params, uint64_t threads) {
  CUdeviceptr ptr = param<CUdeviceptr>(params, 0);
  float value = param<float>(params, 1);
  uint64_t count = touched(param<uint32_t>(params, 2), threads);
  if (count && !inDeviceMemory(state(), ptr, count * sizeof(float)))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  std::fill_n(hostPointer<float>(ptr), count, value);
  return CUDA_SUCCESS;
}

/// saxpy(uint32_t n, float a, const float *x, float *y): y[i] += a * x[i].
CUresult saxpy(void **params, uint64_t threads) {
  uint64_t count = touched(param<uint32_t>(params, 0), threads);
  float a = param<float>(params, 1);
  CUdeviceptr x = param<CUdeviceptr>(params, 2);
  CUdeviceptr y = param<CUdeviceptr>(params, 3);
  if (count && (!inDeviceMemory(state(), x, count * sizeof(float)) ||
                !inDeviceMemory(state(), y, count * sizeof(float))))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  const float *xs = hostPointer<float>(x);
  float *ys = hostPointer<float>(y);
  for (uint64_t i = 0; i < count; ++i)
    ys[i] = a * xs[i] + ys[i];
  return CUDA_SUCCESS;
}

const Kernel kKernels[] = {{"fill_f32", fillF32}, {"saxpy", saxpy}};

const Kernel *findKernel(const std::string &name) {
  for (const Kernel &k : kKernels)
    if (name == k.name)
      return &k;
  return nullptr;
}

/// The checks before a call that needs an initialized driver and a current
/// context.
CUresult needContext(const State &s) {
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

bool validStream(const State &s, CUstream stream) {
  return !stream || s.streams.count(stream);
}

bool envIs(const char *name, const char *value) {
  const char *env = std::getenv(name);
  return env && std::strcmp(env, value) == 0;
}

struct ErrorText {
  CUresult result;
  const char *name, *text;
};

const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
};

const ErrorText *findError(CUresult result) {
  for (const ErrorText &e : kErrors)
    if (e.result == result)
      return &e;
  return nullptr;
}

/// Copies `bytes` after checking the device ends (state locked).
CUresult copyChecked(State &s, void *dst, bool dstOnDevice, const void *src,
                     bool srcOnDevice, size_t bytes, CUstream stream) {
  if (CUresult r = needContext(s))
    return r;
  if (!validStream(s, stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (bytes == 0)
    return CUDA_SUCCESS;
  if (!dst || !src)
    return CUDA_ERROR_INVALID_VALUE;
  if (dstOnDevice &&
      !inDeviceMemory(s, reinterpret_cast<uintptr_t>(dst), bytes))
    return CUDA_ERROR_INVALID_VALUE;
  if (srcOnDevice &&
      !inDeviceMemory(s, reinterpret_cast<uintptr_t>(src), bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memmove(dst, src, bytes);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult memsetChecked(CUdeviceptr dst, T value, size_t count,
                       CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!validStream(s, stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (count == 0)
    return CUDA_SUCCESS;
  if (dst % sizeof(T) != 0 || !inDeviceMemory(s, dst, count * sizeof(T)))
    return CUDA_ERROR_INVALID_VALUE;
  std::fill_n(hostPointer<T>(dst), count, value);
  return CUDA_SUCCESS;
}

CUresult allocate(CUdeviceptr *ptr, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!ptr || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (s.failAlloc)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *memory = std::malloc(bytes);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  s.allocations.emplace(reinterpret_cast<uintptr_t>(memory), bytes);
  *ptr = reinterpret_cast<uintptr_t>(memory);
  return CUDA_SUCCESS;
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors, initialization, devices, contexts
//===----------------------------------------------------------------------===//

CUresult cuGetErrorName(CUresult error, const char **name) {
  const ErrorText *e = findError(error);
  if (!name || !e) {
    if (name)
      *name = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *name = e->name;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  const ErrorText *e = findError(error);
  if (!text || !e) {
    if (text)
      *text = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *text = e->text;
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int devices = 1;
  if (const char *env = std::getenv("FAKE_CUDA_DEVICES"))
    devices = std::max(0, std::min(kMaxDevices, std::atoi(env)));
  if (devices == 0)
    return CUDA_ERROR_NO_DEVICE;
  if (envIs("FAKE_CUDA_INIT_WITHOUT_DEVICES", "1"))
    devices = 0;
  s.devices = devices;
  s.failAlloc = envIs("FAKE_CUDA_FAIL_ALLOC", "1");
  for (int d = 0; d < kMaxDevices; ++d)
    s.contexts[d].device = d;
  s.initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = s.devices;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= s.devices)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

/// The checks of a call about `device`.
static CUresult checkDevice(CUdevice device) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= s.devices)
    return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  if (!name || length <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(length), "Fake CUDA Device %d",
                device);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  if (!context)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *context = &s.contexts[device];
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!context)
    return CUDA_ERROR_INVALID_VALUE;
  *context = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (context && (context < s.contexts || context >= s.contexts + s.devices))
    return CUDA_ERROR_INVALID_CONTEXT;
  current = context;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return needContext(s);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  return allocate(ptr, bytes);
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != 0x2 /*CU_MEM_ATTACH_HOST*/)
    return CUDA_ERROR_INVALID_VALUE;
  return allocate(ptr, bytes);
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  auto it = s.allocations.find(static_cast<uintptr_t>(ptr));
  if (it == s.allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  std::free(hostPointer<void>(ptr));
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return copyChecked(s, hostPointer<void>(dst), true, src, false, bytes,
                     stream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes,
                              CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return copyChecked(s, dst, false, hostPointer<void>(src), true, bytes,
                     stream);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                              CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return copyChecked(s, hostPointer<void>(dst), true, hostPointer<void>(src),
                     true, bytes, stream);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream stream) {
  // Unified addressing: each end is device memory if it points into an
  // allocation, host memory otherwise.
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return copyChecked(s, hostPointer<void>(dst), isDevicePointer(s, dst),
                     hostPointer<void>(src), isDevicePointer(s, src), bytes,
                     stream);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count,
                         CUstream stream) {
  return memsetChecked(dst, value, count, stream);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          CUstream stream) {
  return memsetChecked(dst, value, count, stream);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                          CUstream stream) {
  return memsetChecked(dst, value, count, stream);
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!stream ||
      (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  *stream = new CUstream_st{flags};
  s.streams.insert(*stream);
  ++s.streamsCreated;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!s.streams.erase(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  return validStream(s, stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!validStream(s, stream) || !s.events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuEventCreate(CUevent *event, unsigned int flags) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!event)
    return CUDA_ERROR_INVALID_VALUE;
  *event = new CUevent_st{flags};
  s.events.insert(*event);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!s.events.erase(event))
    return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!s.events.count(event) || !validStream(s, stream))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  return s.events.count(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

//===----------------------------------------------------------------------===//
// Modules and launches
//===----------------------------------------------------------------------===//

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned int numOptions, CUjit_option *options,
                            void **optionValues) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!module || !image || (numOptions && (!options || !optionValues)))
    return CUDA_ERROR_INVALID_VALUE;
  char *log = nullptr;
  size_t logSize = 0;
  int64_t optLevel = -1;
  for (unsigned i = 0; i < numOptions; ++i) {
    uintptr_t value = reinterpret_cast<uintptr_t>(optionValues[i]);
    switch (options[i]) {
    case CU_JIT_ERROR_LOG_BUFFER:
      log = static_cast<char *>(optionValues[i]);
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      logSize = value;
      break;
    case CU_JIT_OPTIMIZATION_LEVEL:
      if (value > 4)
        return CUDA_ERROR_INVALID_VALUE;
      optLevel = static_cast<int64_t>(value);
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  auto invalid = [&](const std::string &why) {
    if (log && logSize)
      std::snprintf(log, logSize, "fake-cuda: %s\n", why.c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  };
  static const char kPrefix[] = "//fake-cuda:";
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, kPrefix, sizeof(kPrefix) - 1) != 0)
    return invalid("the image does not start with //fake-cuda:");
  auto loaded = std::make_unique<CUmod_st>();
  const char *p = text + sizeof(kPrefix) - 1;
  while (*p) {
    while (*p == ' ' || *p == '\n' || *p == '\t')
      ++p;
    const char *start = p;
    while (*p && *p != ' ' && *p != '\n' && *p != '\t')
      ++p;
    if (p == start)
      continue;
    std::string name(start, p);
    const Kernel *kernel = findKernel(name);
    if (!kernel)
      return invalid("no kernel '" + name + "' in the fake");
    loaded->functions.push_back(std::make_unique<CUfunc_st>(CUfunc_st{
        kernel, loaded.get(), static_cast<int>(kDefaultSharedBytes)}));
  }
  for (const auto &f : loaded->functions)
    s.functions.insert(f.get());
  s.lastOptLevel = optLevel;
  *module = loaded.release();
  s.modules.insert(*module);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!s.modules.erase(module))
    return CUDA_ERROR_INVALID_HANDLE;
  for (const auto &f : module->functions)
    s.functions.erase(f.get());
  delete module;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!function || !name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  for (const auto &f : module->functions)
    if (std::strcmp(f->kernel->name, name) == 0) {
      *function = f.get();
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute,
                            int value) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!s.functions.count(function))
    return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
      value < 0 || value > kMaxOptInSharedBytes)
    return CUDA_ERROR_INVALID_VALUE;
  function->maxSharedBytes = value;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedBytes,
                        CUstream stream, void **params, void **extra) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (CUresult r = needContext(s))
    return r;
  if (!s.functions.count(function) || !validStream(s, stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!gridX || !gridY || !gridZ || !blockX || !blockY || !blockZ ||
      uint64_t(blockX) * blockY * blockZ > 1024 || !params || extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (sharedBytes > static_cast<unsigned>(function->maxSharedBytes))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t threads = uint64_t(gridX) * gridY * gridZ * blockX * blockY * blockZ;
  ++s.launches;
  return function->kernel->run(params, threads);
}

int64_t fake_cuda_count(const char *what) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::string name = what ? what : "";
  if (name == "allocations")
    return static_cast<int64_t>(s.allocations.size());
  if (name == "streams")
    return static_cast<int64_t>(s.streams.size());
  if (name == "streams_created")
    return s.streamsCreated;
  if (name == "events")
    return static_cast<int64_t>(s.events.size());
  if (name == "modules")
    return static_cast<int64_t>(s.modules.size());
  if (name == "launches")
    return s.launches;
  if (name == "opt_level")
    return s.lastOptLevel;
  return -1;
}
