//===- Cuda.cpp - CUDA devices: driver, memory, streams, kernels ----------===//
//
// Part of the Recur project.
//
// The runtime reaches CUDA devices through the driver API, opened at run
// time: the first call loads libcuda.so.1 (or RECUR_CUDA_DRIVER) with
// dlopen, resolves every entry point of CudaDriver.h with dlsym, initializes
// the driver and retains the primary context of one device (0, or
// RECUR_CUDA_DEVICE), once per process. So librecur_rt builds and links
// without CUDA, and a machine without a driver or a device gets an error
// from these calls, never from the loader.
//
// Two interfaces share that driver: the recur_cuda_* calls of recur_rt.h,
// which return a status, and the mgpu* functions that MLIR's gpu-to-llvm
// lowering makes host code call (the ABI of upstream's
// mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp, LLVM 22), which cannot:
// upstream's print and carry on, while these keep their thread's first
// failure for recur_cuda_take_error and skip the work that would build on
// it, so that compiled host code calls only this runtime and never aborts.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"
#include "Internal.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace recur::rt;
using namespace recur::cuda;

#define RECUR_EXPORT __attribute__((visibility("default")))

namespace {

/// The longest message kept (as Error.cpp's).
constexpr size_t kMessageSize = 1024;

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

/// The driver and the device, set up once per process.
struct Driver {
  DriverApi api;
  /// RECUR_OK once the device is ready; else the failure every call
  /// returns, with `message`.
  recur_status status = RECUR_ERROR_INTERNAL;
  char message[kMessageSize] = {};
  int32_t deviceCount = 0;
  int32_t ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
};

/// The device mgpuSetDefaultDevice asked for before the driver was set up,
/// and whether the choice has been made (after which it is fixed).
struct DeviceChoice {
  std::mutex mutex;
  bool made = false;
  int32_t requested = -1;
};

DeviceChoice &deviceChoice() {
  static DeviceChoice *instance = new DeviceChoice;
  return *instance;
}

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": a driver result as the
/// driver names and describes it.
struct ResultText {
  char text[256];
};

ResultText describe(const DriverApi &api, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (api.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  ResultText out;
  if (name)
    std::snprintf(out.text, sizeof(out.text), "%s (%s)", name,
                  text ? text : "no description");
  else
    std::snprintf(out.text, sizeof(out.text), "CUDA error %d", result);
  return out;
}

/// The status of a failed driver call.
recur_status statusOf(CUresult result) {
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return RECUR_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_DEVICE:
    return RECUR_ERROR_NO_DEVICE;
  default:
    return RECUR_ERROR_DEVICE;
  }
}

/// Records why the driver cannot be used.
void setupFailed(Driver &d, recur_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void setupFailed(Driver &d, recur_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(d.message, sizeof(d.message), format, args);
  va_end(args);
  d.status = status;
}

const char *dlerrorText() {
  const char *text = dlerror();
  return text ? text : "unknown error";
}

/// The ordinal of the device to use: mgpuSetDefaultDevice's, else
/// RECUR_CUDA_DEVICE's, else 0; false (with the failure recorded) when
/// RECUR_CUDA_DEVICE is not an ordinal.
bool chooseDevice(Driver &d, const char *&source) {
  DeviceChoice &choice = deviceChoice();
  {
    std::lock_guard<std::mutex> lock(choice.mutex);
    choice.made = true;
    if (choice.requested >= 0) {
      d.ordinal = choice.requested;
      source = "mgpuSetDefaultDevice";
      return true;
    }
  }
  const char *env = std::getenv("RECUR_CUDA_DEVICE");
  if (!env || !*env) {
    d.ordinal = 0;
    source = "the default";
    return true;
  }
  char *end = nullptr;
  long value = std::strtol(env, &end, 10);
  if (*end || value < 0 || value > std::numeric_limits<int32_t>::max()) {
    setupFailed(d, RECUR_ERROR_INVALID_ARGUMENT,
                "recur_cuda_init: RECUR_CUDA_DEVICE is '%s', not a device "
                "ordinal",
                env);
    return false;
  }
  d.ordinal = static_cast<int32_t>(value);
  source = "RECUR_CUDA_DEVICE";
  return true;
}

/// Loads the driver, initializes it and retains the device's primary
/// context; on failure, records why in `d`.
void setUp(Driver &d) {
  const char *env = std::getenv("RECUR_CUDA_DRIVER");
  const char *path = env && *env ? env : "libcuda.so.1";
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return setupFailed(d, RECUR_ERROR_NO_DEVICE,
                       "no CUDA device: cannot load %s: %s", path,
                       dlerrorText());
#define RECUR_CUDA_RESOLVE(name, params)                                       \
  if (void *symbol = dlsym(library, #name)) {                                  \
    d.api.name = reinterpret_cast<decltype(d.api.name)>(symbol);               \
  } else {                                                                     \
    setupFailed(d, RECUR_ERROR_NO_DEVICE,                                      \
                "no CUDA device: %s is not a CUDA driver: it has no %s (%s)",  \
                path, #name, dlerrorText());                                   \
    dlclose(library);                                                          \
    return;                                                                    \
  }
  RECUR_CUDA_DRIVER_FUNCTIONS(RECUR_CUDA_RESOLVE)
#undef RECUR_CUDA_RESOLVE

  // The library stays loaded for the life of the process: the handles it
  // gave out (and the generated code's module destructors) need it.
  const DriverApi &api = d.api;
  if (CUresult result = api.cuInit(0))
    return setupFailed(d, statusOf(result),
                       result == CUDA_ERROR_NO_DEVICE
                           ? "no CUDA device: cuInit: %s"
                           : "recur_cuda_init: cuInit: %s",
                       describe(api, result).text);
  int count = 0;
  if (CUresult result = api.cuDeviceGetCount(&count))
    return setupFailed(d, statusOf(result),
                       "recur_cuda_init: cuDeviceGetCount: %s",
                       describe(api, result).text);
  if (count <= 0)
    return setupFailed(d, RECUR_ERROR_NO_DEVICE,
                       "no CUDA device: the driver (%s) sees no device", path);
  d.deviceCount = count;

  const char *source = nullptr;
  if (!chooseDevice(d, source))
    return;
  if (d.ordinal >= count)
    return setupFailed(d, RECUR_ERROR_INVALID_ARGUMENT,
                       "recur_cuda_init: %s asks for device %d, but the "
                       "driver sees %d device(s)",
                       source, d.ordinal, count);
  if (CUresult result = api.cuDeviceGet(&d.device, d.ordinal))
    return setupFailed(d, statusOf(result), "recur_cuda_init: cuDeviceGet: %s",
                       describe(api, result).text);
  // Retained for the life of the process, like the library.
  if (CUresult result = api.cuDevicePrimaryCtxRetain(&d.context, d.device))
    return setupFailed(d, statusOf(result),
                       "recur_cuda_init: cuDevicePrimaryCtxRetain: %s",
                       describe(api, result).text);
  d.status = RECUR_OK;
}

/// The driver, set up by the first call. Never destroyed: module
/// destructors of generated code may still call it while the program exits.
const Driver &driver() {
  static Driver *instance = new Driver;
  static std::once_flag once;
  std::call_once(once, [] { setUp(*instance); });
  return *instance;
}

/// Records "function: <result> in <call>" (the call formatted from
/// `format`) and returns the status of `result`.
recur_status fail(const Driver &d, const char *function, CUresult result,
                  const char *format, ...)
    __attribute__((format(printf, 4, 5)));
recur_status fail(const Driver &d, const char *function, CUresult result,
                  const char *format, ...) {
  char call[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(call, sizeof(call), format, args);
  va_end(args);
  return setError(statusOf(result), "%s: %s in %s", function,
                  describe(d.api, result).text, call);
}

/// The driver with the device's context current on this thread, in `out`;
/// else the failure of setting up, recorded.
recur_status ready(const char *function, const Driver *&out) {
  const Driver &d = driver();
  if (d.status != RECUR_OK)
    return setError(d.status, "%s", d.message);
  CUcontext current = nullptr;
  if (d.api.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != d.context) {
    if (CUresult result = d.api.cuCtxSetCurrent(d.context))
      return fail(d, function, result, "cuCtxSetCurrent");
  }
  out = &d;
  return RECUR_OK;
}

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

/// A freed large device buffer kept for reuse.
struct CachedDeviceBuffer {
  CUdeviceptr ptr;
  size_t bytes;
};

/// A live device buffer: the bytes asked for, the bytes of its allocation
/// (more when it came from the cache), and whether it is managed memory.
struct LiveDeviceBuffer {
  size_t bytes;
  size_t capacity;
  bool managed;
};

/// The live device buffers of the runtime with their sizes, the counters of
/// recur_cuda_memory_stats_get, and the cache of freed large buffers.
struct DeviceMemory {
  std::mutex mutex;
  std::unordered_map<CUdeviceptr, LiveDeviceBuffer> sizes;
  size_t liveBytes = 0;
  size_t peakBytes = 0;
  uint64_t allocations = 0;
  std::vector<CachedDeviceBuffer> cache; // most recently freed last
  size_t cachedBytes = 0;
};

/// Device buffers at least this large are cached when freed.
constexpr size_t kDeviceCacheMinBytes = size_t(1) << 20;

/// The most bytes the device cache holds (RECUR_CUDA_ALLOC_CACHE_MB, read
/// once; default 4096, 0: none).
size_t deviceCacheLimit() {
  static const size_t limit =
      megabytesFromEnv("RECUR_CUDA_ALLOC_CACHE_MB", 4096);
  return limit;
}

/// Never destroyed, like the driver.
DeviceMemory &deviceMemory() {
  static DeviceMemory *instance = new DeviceMemory;
  return *instance;
}

/// Adds a new buffer of `bytes` (its allocation holds `capacity`); false
/// when the registry could not grow.
bool addBuffer(CUdeviceptr ptr, size_t bytes, size_t capacity, bool managed) {
  DeviceMemory &mem = deviceMemory();
  std::lock_guard<std::mutex> lock(mem.mutex);
  try {
    mem.sizes.emplace(ptr, LiveDeviceBuffer{bytes, capacity, managed});
  } catch (...) {
    return false;
  }
  mem.liveBytes += bytes;
  mem.peakBytes = std::max(mem.peakBytes, mem.liveBytes);
  ++mem.allocations;
  return true;
}

/// Removes a buffer and returns what it was; nullopt when it is not a live
/// one.
std::optional<LiveDeviceBuffer> removeBuffer(CUdeviceptr ptr) {
  DeviceMemory &mem = deviceMemory();
  std::lock_guard<std::mutex> lock(mem.mutex);
  auto it = mem.sizes.find(ptr);
  if (it == mem.sizes.end())
    return std::nullopt;
  LiveDeviceBuffer buffer = it->second;
  mem.liveBytes -= buffer.bytes;
  mem.sizes.erase(it);
  return buffer;
}

/// A cached buffer of at least `bytes` (and at most 5/4 of it), taken out of
/// the cache; a null one when there is none.
CachedDeviceBuffer takeCachedDevice(size_t bytes) {
  if (bytes < kDeviceCacheMinBytes)
    return {0, 0};
  DeviceMemory &mem = deviceMemory();
  std::lock_guard<std::mutex> lock(mem.mutex);
  for (size_t i = mem.cache.size(); i-- > 0;) {
    CachedDeviceBuffer c = mem.cache[i];
    if (c.bytes >= bytes && c.bytes - bytes <= bytes / 4) {
      mem.cache.erase(mem.cache.begin() + i);
      mem.cachedBytes -= c.bytes;
      return c;
    }
  }
  return {0, 0};
}

/// Frees every cached buffer; true when there was one.
bool dropDeviceCache(const Driver &d) {
  std::vector<CachedDeviceBuffer> dropped;
  {
    DeviceMemory &mem = deviceMemory();
    std::lock_guard<std::mutex> lock(mem.mutex);
    dropped.swap(mem.cache);
    mem.cachedBytes = 0;
  }
  for (CachedDeviceBuffer c : dropped)
    d.api.cuMemFree_v2(c.ptr);
  return !dropped.empty();
}

/// Keeps a freed device buffer of `capacity` bytes for reuse when it is
/// large and fits the cache (freeing the oldest cached ones to make room);
/// false when it does not, and the caller frees it. The device is
/// synchronized first, as cuMemFree would: no work queued before the free
/// still uses the buffer when it is handed out again.
bool keepCachedDevice(const Driver &d, CUdeviceptr ptr, size_t capacity) {
  size_t limit = deviceCacheLimit();
  if (capacity < kDeviceCacheMinBytes || capacity > limit ||
      d.api.cuCtxSynchronize() != CUDA_SUCCESS)
    return false;
  std::vector<CUdeviceptr> dropped;
  {
    DeviceMemory &mem = deviceMemory();
    std::lock_guard<std::mutex> lock(mem.mutex);
    try {
      mem.cache.push_back({ptr, capacity});
    } catch (...) {
      return false;
    }
    mem.cachedBytes += capacity;
    size_t oldest = 0;
    while (mem.cachedBytes > limit) {
      mem.cachedBytes -= mem.cache[oldest].bytes;
      dropped.push_back(mem.cache[oldest].ptr);
      ++oldest;
    }
    mem.cache.erase(mem.cache.begin(), mem.cache.begin() + oldest);
  }
  for (CUdeviceptr p : dropped)
    d.api.cuMemFree_v2(p);
  return true;
}

CUdeviceptr devicePointer(const void *ptr) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
}

CUstream driverStream(recur_cuda_stream *stream) {
  return reinterpret_cast<CUstream>(stream);
}

recur_status allocate(const char *function, size_t bytes, bool managed,
                      void **out) {
  *out = nullptr;
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (bytes == 0)
    return RECUR_OK;
  CUdeviceptr ptr = 0;
  size_t capacity = bytes;
  if (managed) {
    if (CUresult result =
            d->api.cuMemAllocManaged(&ptr, bytes, CU_MEM_ATTACH_GLOBAL))
      return fail(*d, function, result, "cuMemAllocManaged(%zu bytes)", bytes);
  } else if (CachedDeviceBuffer cached = takeCachedDevice(bytes); cached.ptr) {
    ptr = cached.ptr;
    capacity = cached.bytes;
  } else if (CUresult result = d->api.cuMemAlloc_v2(&ptr, bytes)) {
    // Memory held by the cache goes back to the driver before giving up.
    if (result != CUDA_ERROR_OUT_OF_MEMORY || !dropDeviceCache(*d) ||
        d->api.cuMemAlloc_v2(&ptr, bytes) != CUDA_SUCCESS)
      return fail(*d, function, result, "cuMemAlloc_v2(%zu bytes)", bytes);
  }
  if (!addBuffer(ptr, bytes, capacity, managed)) {
    d->api.cuMemFree_v2(ptr);
    return setError(RECUR_ERROR_OUT_OF_MEMORY, "%s: out of memory", function);
  }
  *out = reinterpret_cast<void *>(static_cast<uintptr_t>(ptr));
  return RECUR_OK;
}

recur_status release(const char *function, void *ptr) {
  if (!ptr)
    return RECUR_OK;
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  std::optional<LiveDeviceBuffer> buffer = removeBuffer(devicePointer(ptr));
  if (!buffer)
    return setError(RECUR_ERROR_INVALID_ARGUMENT,
                    "%s: %p is not a live device buffer of the runtime",
                    function, ptr);
  if (!buffer->managed &&
      keepCachedDevice(*d, devicePointer(ptr), buffer->capacity))
    return RECUR_OK;
  if (CUresult result = d->api.cuMemFree_v2(devicePointer(ptr)))
    return fail(*d, function, result, "cuMemFree_v2(%p)", ptr);
  return RECUR_OK;
}

/// Waits for the default stream when a call on it must return done.
recur_status finish(const Driver &d, const char *function, bool wait) {
  if (!wait)
    return RECUR_OK;
  if (CUresult result = d.api.cuStreamSynchronize(nullptr))
    return fail(d, function, result, "cuStreamSynchronize(default stream)");
  return RECUR_OK;
}

/// The ends of a copy the driver is told about; Unified lets it tell from
/// the addresses.
enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice, Unified };

/// Copies `bytes` on `stream`; with `wait`, returns when it is done.
recur_status copy(const char *function, CopyKind kind, void *dst,
                  const void *src, size_t bytes, CUstream stream, bool wait) {
  if (bytes > 0 && !dst)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: dst is NULL", function);
  if (bytes > 0 && !src)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: src is NULL", function);
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (bytes == 0)
    return RECUR_OK;
  const DriverApi &api = d->api;
  CUresult result = CUDA_SUCCESS;
  const char *call = "";
  switch (kind) {
  case CopyKind::HostToDevice:
    call = "cuMemcpyHtoDAsync_v2";
    result = api.cuMemcpyHtoDAsync_v2(devicePointer(dst), src, bytes, stream);
    break;
  case CopyKind::DeviceToHost:
    call = "cuMemcpyDtoHAsync_v2";
    result = api.cuMemcpyDtoHAsync_v2(dst, devicePointer(src), bytes, stream);
    break;
  case CopyKind::DeviceToDevice:
    call = "cuMemcpyDtoDAsync_v2";
    result = api.cuMemcpyDtoDAsync_v2(devicePointer(dst), devicePointer(src),
                                      bytes, stream);
    break;
  case CopyKind::Unified:
    call = "cuMemcpyAsync";
    result = api.cuMemcpyAsync(devicePointer(dst), devicePointer(src), bytes,
                               stream);
    break;
  }
  if (result)
    return fail(*d, function, result, "%s(%p <- %p, %zu bytes)", call, dst, src,
                bytes);
  return finish(*d, function, wait);
}

/// Sets `count` elements of `width` bytes (1, 2 or 4) at `dst` to `value`.
recur_status fill(const char *function, void *dst, unsigned width,
                  unsigned value, size_t count, CUstream stream, bool wait) {
  if (count > 0 && !dst)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: dst is NULL", function);
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (count == 0)
    return RECUR_OK;
  const DriverApi &api = d->api;
  CUdeviceptr ptr = devicePointer(dst);
  CUresult result =
      width == 1   ? api.cuMemsetD8Async(ptr, static_cast<unsigned char>(value),
                                         count, stream)
      : width == 2 ? api.cuMemsetD16Async(
                         ptr, static_cast<unsigned short>(value), count, stream)
                   : api.cuMemsetD32Async(ptr, value, count, stream);
  if (result)
    return fail(*d, function, result, "cuMemsetD%uAsync(%p, %zu elements)",
                width * 8, dst, count);
  return finish(*d, function, wait);
}

//===----------------------------------------------------------------------===//
// Streams, events, modules and launches
//===----------------------------------------------------------------------===//

recur_status createStream(const char *function, unsigned flags, CUstream *out) {
  *out = nullptr;
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (CUresult result = d->api.cuStreamCreate(out, flags))
    return fail(*d, function, result, "cuStreamCreate");
  return RECUR_OK;
}

recur_status destroyStream(const char *function, CUstream stream) {
  if (!stream)
    return RECUR_OK;
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (CUresult result = d->api.cuStreamDestroy_v2(stream))
    return fail(*d, function, result, "cuStreamDestroy_v2(%p)",
                static_cast<void *>(stream));
  return RECUR_OK;
}

/// The streams compiled host code has released (mgpuStreamDestroy), kept for
/// its next mgpuStreamCreate: gpu-to-llvm's host code creates a stream for
/// each launch and destroys it after the launch's synchronize, and a layer's
/// call makes a launch per parallel loop (hundreds in a Block-Recurrent
/// backward), each paying cuStreamCreate and cuStreamDestroy. At most
/// kIdleStreams are kept (more are destroyed); recur_cuda_empty_cache
/// destroys them. Never freed: compiled code may release a stream while the
/// process exits.
struct IdleStreams {
  std::mutex mutex;
  /// Kept for the next takeStream, at most kIdleStreams (reserved).
  std::vector<CUstream> streams;
  /// Handed out by takeStream and not given back yet: the only streams
  /// giveStream keeps (one of recur_cuda_stream_create, or a bad handle,
  /// is destroyed as before).
  std::unordered_set<CUstream> lent;
};

constexpr size_t kIdleStreams = 8;

IdleStreams &idleStreams() {
  static IdleStreams *instance = [] {
    auto *idle = new IdleStreams;
    idle->streams.reserve(kIdleStreams);
    return idle;
  }();
  return *instance;
}

/// A stream for compiled host code: an idle one, else a new non-blocking
/// one.
recur_status takeStream(const char *function, CUstream *out) {
  IdleStreams &idle = idleStreams();
  {
    std::lock_guard<std::mutex> lock(idle.mutex);
    if (!idle.streams.empty()) {
      *out = idle.streams.back();
      idle.streams.pop_back();
      idle.lent.insert(*out); // cannot throw: it was there before
      return RECUR_OK;
    }
  }
  if (recur_status status = createStream(function, CU_STREAM_NON_BLOCKING, out))
    return status;
  std::lock_guard<std::mutex> lock(idle.mutex);
  try {
    idle.lent.insert(*out);
  } catch (...) {
    // Not kept then: giveStream destroys it.
  }
  return RECUR_OK;
}

/// Keeps `stream`, a stream of takeStream that compiled host code
/// releases, for the next takeStream, or destroys it when kIdleStreams
/// are kept already (any other stream is destroyed). Work still queued on
/// it runs before any launched on it later.
recur_status giveStream(const char *function, CUstream stream) {
  if (!stream)
    return RECUR_OK;
  {
    IdleStreams &idle = idleStreams();
    std::lock_guard<std::mutex> lock(idle.mutex);
    if (std::find(idle.streams.begin(), idle.streams.end(), stream) !=
        idle.streams.end())
      return setError(RECUR_ERROR_INVALID_ARGUMENT,
                      "%s: the stream %p was released already", function,
                      static_cast<void *>(stream));
    // Within the reserved capacity, so the push cannot throw.
    if (idle.lent.erase(stream) && idle.streams.size() < kIdleStreams &&
        idle.streams.size() < idle.streams.capacity()) {
      idle.streams.push_back(stream);
      return RECUR_OK;
    }
  }
  return destroyStream(function, stream);
}

/// Destroys the idle streams; the first failure is returned (with its
/// message), the rest are still destroyed.
recur_status dropIdleStreams(const char *function) {
  std::vector<CUstream> streams;
  {
    IdleStreams &idle = idleStreams();
    std::lock_guard<std::mutex> lock(idle.mutex);
    streams.swap(idle.streams);
    try {
      idle.streams.reserve(kIdleStreams);
    } catch (...) {
      // None are kept then: giveStream destroys them.
    }
  }
  if (streams.empty())
    return RECUR_OK;
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  recur_status first = RECUR_OK;
  for (CUstream stream : streams)
    if (CUresult result = d->api.cuStreamDestroy_v2(stream); result && !first)
      first = fail(*d, function, result, "cuStreamDestroy_v2(%p)",
                   static_cast<void *>(stream));
  return first;
}

recur_status synchronizeStream(const char *function, CUstream stream) {
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (CUresult result = d->api.cuStreamSynchronize(stream))
    return fail(*d, function, result, "cuStreamSynchronize(%p)",
                static_cast<void *>(stream));
  return RECUR_OK;
}

/// Loads `image`; a JIT optimization level `optLevel` >= 0 is passed to the
/// driver. The driver's error log goes into the message.
recur_status loadModule(const char *function, const void *image, int optLevel,
                        CUmodule *out) {
  *out = nullptr;
  if (!image)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: image is NULL", function);
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  char log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log))),
                    reinterpret_cast<void *>(uintptr_t(optLevel))};
  unsigned numOptions = optLevel >= 0 ? 3 : 2;
  if (CUresult result =
          d->api.cuModuleLoadDataEx(out, image, numOptions, options, values)) {
    *out = nullptr;
    log[sizeof(log) - 1] = '\0';
    size_t length = std::strlen(log);
    while (length > 0 && (log[length - 1] == '\n' || log[length - 1] == ' '))
      log[--length] = '\0';
    return fail(*d, function, result, "cuModuleLoadDataEx%s%s",
                length ? ": " : "", log);
  }
  return RECUR_OK;
}

recur_status unloadModule(const char *function, CUmodule module) {
  if (!module)
    return RECUR_OK;
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  if (CUresult result = d->api.cuModuleUnload(module))
    return fail(*d, function, result, "cuModuleUnload(%p)",
                static_cast<void *>(module));
  return RECUR_OK;
}

recur_status getFunction(const char *function, CUmodule module,
                         const char *name, CUfunction *out) {
  *out = nullptr;
  if (!module)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: module is NULL", function);
  if (!name)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: name is NULL", function);
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  CUresult result = d->api.cuModuleGetFunction(out, module, name);
  if (result == CUDA_ERROR_NOT_FOUND)
    return setError(RECUR_ERROR_INVALID_ARGUMENT,
                    "%s: the module has no kernel '%s'", function, name);
  if (result)
    return fail(*d, function, result, "cuModuleGetFunction('%s')", name);
  return RECUR_OK;
}

/// Launches `kernel`; the grid and block dimensions (x, y, z) must be in
/// 1 .. 2^32 - 1.
recur_status launch(const char *function, CUfunction kernel,
                    const int64_t grid[3], const int64_t block[3],
                    int64_t sharedBytes, CUstream stream, void **params,
                    void **extra) {
  if (!kernel)
    return setError(RECUR_ERROR_NULL_POINTER, "%s: the kernel is NULL",
                    function);
  static const char axes[] = "xyz";
  constexpr int64_t kMaxDim = std::numeric_limits<uint32_t>::max();
  for (int i = 0; i < 3; ++i) {
    if (grid[i] < 1 || grid[i] > kMaxDim)
      return setError(RECUR_ERROR_INVALID_ARGUMENT,
                      "%s: grid dimension %c is %lld, not in 1 .. %lld",
                      function, axes[i], static_cast<long long>(grid[i]),
                      static_cast<long long>(kMaxDim));
    if (block[i] < 1 || block[i] > kMaxDim)
      return setError(RECUR_ERROR_INVALID_ARGUMENT,
                      "%s: block dimension %c is %lld, not in 1 .. %lld",
                      function, axes[i], static_cast<long long>(block[i]),
                      static_cast<long long>(kMaxDim));
  }
  if (sharedBytes < 0 || sharedBytes > std::numeric_limits<int32_t>::max())
    return setError(RECUR_ERROR_INVALID_ARGUMENT,
                    "%s: %lld bytes of dynamic shared memory", function,
                    static_cast<long long>(sharedBytes));
  const Driver *d = nullptr;
  if (recur_status status = ready(function, d))
    return status;
  // Beyond the default, a kernel must opt in to more shared memory.
  if (static_cast<size_t>(sharedBytes) > kDefaultSharedBytes) {
    if (CUresult result = d->api.cuFuncSetAttribute(
            kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            static_cast<int>(sharedBytes)))
      return fail(*d, function, result,
                  "cuFuncSetAttribute(max dynamic shared memory, %lld bytes)",
                  static_cast<long long>(sharedBytes));
  }
  auto dim = [](int64_t v) { return static_cast<unsigned>(v); };
  if (CUresult result = d->api.cuLaunchKernel(
          kernel, dim(grid[0]), dim(grid[1]), dim(grid[2]), dim(block[0]),
          dim(block[1]), dim(block[2]), static_cast<unsigned>(sharedBytes),
          stream, params, extra))
    return fail(
        *d, function, result,
        "cuLaunchKernel(grid %lld x %lld x %lld, block %lld x %lld x "
        "%lld, %lld shared bytes)",
        static_cast<long long>(grid[0]), static_cast<long long>(grid[1]),
        static_cast<long long>(grid[2]), static_cast<long long>(block[0]),
        static_cast<long long>(block[1]), static_cast<long long>(block[2]),
        static_cast<long long>(sharedBytes));
  return RECUR_OK;
}

//===----------------------------------------------------------------------===//
// The device error of generated host code
//===----------------------------------------------------------------------===//

/// The first failure of an mgpu* call on this thread, until taken.
struct PendingError {
  recur_status status = RECUR_OK;
  char message[kMessageSize];
};

thread_local PendingError pending;

bool errorPending() { return pending.status != RECUR_OK; }

/// Runs `body` (an mgpu* function's work, returning a status) and keeps its
/// failure unless one is kept already.
template <typename Body> void keepFailure(const char *function, Body &&body) {
  recur_status status = guarded(function, body);
  if (status == RECUR_OK || errorPending())
    return;
  pending.status = status;
  std::snprintf(pending.message, sizeof(pending.message), "%s",
                recur_last_error());
}

/// `value` as a launch dimension or size of an mgpu* call.
int64_t asInt64(intptr_t value) { return static_cast<int64_t>(value); }

} // namespace

recur_status recur::rt::takeDeviceError(std::string *message) {
  recur_status status = pending.status;
  // The message is copied before the error is cleared, so that an
  // allocation failure leaves it to be taken again.
  if (status != RECUR_OK && message)
    message->assign(pending.message);
  pending.status = RECUR_OK;
  return status;
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

extern "C" recur_status recur_cuda_init(void) {
  return guarded("recur_cuda_init", [] {
    const Driver *d = nullptr;
    return ready("recur_cuda_init", d);
  });
}

extern "C" recur_status recur_cuda_device_count(int32_t *count) {
  return guarded("recur_cuda_device_count", [&] {
    if (!count)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_device_count: count is NULL");
    *count = 0;
    const Driver *d = nullptr;
    if (recur_status status = ready("recur_cuda_device_count", d))
      return status;
    *count = d->deviceCount;
    return RECUR_OK;
  });
}

extern "C" recur_status recur_cuda_get_device(int32_t *ordinal) {
  return guarded("recur_cuda_get_device", [&] {
    if (!ordinal)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_get_device: ordinal is NULL");
    const Driver *d = nullptr;
    if (recur_status status = ready("recur_cuda_get_device", d))
      return status;
    *ordinal = d->ordinal;
    return RECUR_OK;
  });
}

extern "C" recur_status
recur_cuda_device_info_get(int32_t ordinal, recur_cuda_device_info *info) {
  const char *function = "recur_cuda_device_info_get";
  return guarded(function, [&] {
    if (!info)
      return setError(RECUR_ERROR_NULL_POINTER, "%s: info is NULL", function);
    const Driver *d = nullptr;
    if (recur_status status = ready(function, d))
      return status;
    if (ordinal < 0 || ordinal >= d->deviceCount)
      return setError(RECUR_ERROR_INVALID_ARGUMENT,
                      "%s: there is no device %d (the driver sees %d)",
                      function, ordinal, d->deviceCount);
    const DriverApi &api = d->api;
    recur_cuda_device_info result;
    std::memset(&result, 0, sizeof(result));
    result.ordinal = ordinal;
    CUdevice device = 0;
    if (CUresult r = api.cuDeviceGet(&device, ordinal))
      return fail(*d, function, r, "cuDeviceGet(%d)", ordinal);
    if (CUresult r = api.cuDeviceGetName(
            result.name, static_cast<int>(sizeof(result.name)), device))
      return fail(*d, function, r, "cuDeviceGetName");
    result.name[sizeof(result.name) - 1] = '\0';
    struct {
      CUdevice_attribute attribute;
      int32_t *value;
      const char *name;
    } attributes[] = {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                       &result.cc_major, "compute capability major"},
                      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                       &result.cc_minor, "compute capability minor"},
                      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                       &result.multiprocessors, "multiprocessor count"}};
    for (const auto &a : attributes) {
      int value = 0;
      if (CUresult r = api.cuDeviceGetAttribute(&value, a.attribute, device))
        return fail(*d, function, r, "cuDeviceGetAttribute(%s)", a.name);
      *a.value = value;
    }
    size_t bytes = 0;
    if (CUresult r = api.cuDeviceTotalMem_v2(&bytes, device))
      return fail(*d, function, r, "cuDeviceTotalMem_v2");
    result.total_bytes = bytes;
    int version = 0;
    if (CUresult r = api.cuDriverGetVersion(&version))
      return fail(*d, function, r, "cuDriverGetVersion");
    result.driver_version = version;
    *info = result;
    return RECUR_OK;
  });
}

extern "C" recur_status recur_cuda_malloc(size_t bytes, void **device_ptr) {
  return guarded("recur_cuda_malloc", [&] {
    if (!device_ptr)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_malloc: device_ptr is NULL");
    return allocate("recur_cuda_malloc", bytes, /*managed=*/false, device_ptr);
  });
}

extern "C" recur_status recur_cuda_free(void *device_ptr) {
  return guarded("recur_cuda_free",
                 [&] { return release("recur_cuda_free", device_ptr); });
}

extern "C" recur_status recur_cuda_memcpy_htod(void *dst, const void *src,
                                               size_t bytes,
                                               recur_cuda_stream *stream) {
  return guarded("recur_cuda_memcpy_htod", [&] {
    return copy("recur_cuda_memcpy_htod", CopyKind::HostToDevice, dst, src,
                bytes, driverStream(stream), !stream);
  });
}

extern "C" recur_status recur_cuda_memcpy_dtoh(void *dst, const void *src,
                                               size_t bytes,
                                               recur_cuda_stream *stream) {
  return guarded("recur_cuda_memcpy_dtoh", [&] {
    return copy("recur_cuda_memcpy_dtoh", CopyKind::DeviceToHost, dst, src,
                bytes, driverStream(stream), !stream);
  });
}

extern "C" recur_status recur_cuda_memcpy_dtod(void *dst, const void *src,
                                               size_t bytes,
                                               recur_cuda_stream *stream) {
  return guarded("recur_cuda_memcpy_dtod", [&] {
    return copy("recur_cuda_memcpy_dtod", CopyKind::DeviceToDevice, dst, src,
                bytes, driverStream(stream), !stream);
  });
}

extern "C" recur_status recur_cuda_memset(void *dst, int value, size_t bytes,
                                          recur_cuda_stream *stream) {
  return guarded("recur_cuda_memset", [&] {
    return fill("recur_cuda_memset", dst, 1, static_cast<unsigned char>(value),
                bytes, driverStream(stream), !stream);
  });
}

extern "C" void recur_cuda_memory_stats_get(recur_memory_stats *stats) {
  if (!stats)
    return;
  DeviceMemory &mem = deviceMemory();
  std::lock_guard<std::mutex> lock(mem.mutex);
  stats->live_bytes = mem.liveBytes;
  stats->peak_bytes = mem.peakBytes;
  stats->allocations = mem.allocations;
}

extern "C" recur_status recur_cuda_empty_cache(void) {
  return guarded("recur_cuda_empty_cache", [&] {
    const Driver *d = nullptr;
    if (recur_status status = ready("recur_cuda_empty_cache", d))
      return status;
    dropDeviceCache(*d);
    return dropIdleStreams("recur_cuda_empty_cache");
  });
}

extern "C" void recur_cuda_memory_stats_reset_peak(void) {
  DeviceMemory &mem = deviceMemory();
  std::lock_guard<std::mutex> lock(mem.mutex);
  mem.peakBytes = mem.liveBytes;
}

extern "C" recur_status recur_cuda_stream_create(recur_cuda_stream **stream) {
  return guarded("recur_cuda_stream_create", [&] {
    if (!stream)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_stream_create: stream is NULL");
    CUstream created = nullptr;
    recur_status status =
        createStream("recur_cuda_stream_create", CU_STREAM_DEFAULT, &created);
    *stream = reinterpret_cast<recur_cuda_stream *>(created);
    return status;
  });
}

extern "C" recur_status recur_cuda_stream_destroy(recur_cuda_stream *stream) {
  return guarded("recur_cuda_stream_destroy", [&] {
    return destroyStream("recur_cuda_stream_destroy", driverStream(stream));
  });
}

extern "C" recur_status
recur_cuda_stream_synchronize(recur_cuda_stream *stream) {
  return guarded("recur_cuda_stream_synchronize", [&] {
    return synchronizeStream("recur_cuda_stream_synchronize",
                             driverStream(stream));
  });
}

extern "C" recur_status recur_cuda_synchronize(void) {
  return guarded("recur_cuda_synchronize", [] {
    const Driver *d = nullptr;
    if (recur_status status = ready("recur_cuda_synchronize", d))
      return status;
    if (CUresult result = d->api.cuCtxSynchronize())
      return fail(*d, "recur_cuda_synchronize", result, "cuCtxSynchronize");
    return RECUR_OK;
  });
}

extern "C" recur_status recur_cuda_module_load(const void *image,
                                               recur_cuda_module **module) {
  return guarded("recur_cuda_module_load", [&] {
    if (!module)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_module_load: module is NULL");
    CUmodule loaded = nullptr;
    recur_status status =
        loadModule("recur_cuda_module_load", image, -1, &loaded);
    *module = reinterpret_cast<recur_cuda_module *>(loaded);
    return status;
  });
}

extern "C" recur_status recur_cuda_module_unload(recur_cuda_module *module) {
  return guarded("recur_cuda_module_unload", [&] {
    return unloadModule("recur_cuda_module_unload",
                        reinterpret_cast<CUmodule>(module));
  });
}

extern "C" recur_status
recur_cuda_module_function(recur_cuda_module *module, const char *name,
                           recur_cuda_function **function) {
  return guarded("recur_cuda_module_function", [&] {
    if (!function)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_module_function: function is NULL");
    CUfunction found = nullptr;
    recur_status status =
        getFunction("recur_cuda_module_function",
                    reinterpret_cast<CUmodule>(module), name, &found);
    *function = reinterpret_cast<recur_cuda_function *>(found);
    return status;
  });
}

extern "C" recur_status
recur_cuda_launch(recur_cuda_function *function, const uint32_t grid[3],
                  const uint32_t block[3], uint32_t shared_bytes,
                  recur_cuda_stream *stream, void **args) {
  return guarded("recur_cuda_launch", [&] {
    if (!grid)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_launch: grid is NULL");
    if (!block)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "recur_cuda_launch: block is NULL");
    int64_t grid64[3], block64[3];
    for (int i = 0; i < 3; ++i) {
      grid64[i] = grid[i];
      block64[i] = block[i];
    }
    return launch("recur_cuda_launch", reinterpret_cast<CUfunction>(function),
                  grid64, block64, shared_bytes, driverStream(stream), args,
                  nullptr);
  });
}

extern "C" recur_status recur_cuda_take_error(void) {
  return guarded("recur_cuda_take_error", [] {
    std::string message;
    recur_status status = takeDeviceError(&message);
    if (status == RECUR_OK)
      return RECUR_OK;
    return setError(status, "%s", message.c_str());
  });
}

//===----------------------------------------------------------------------===//
// The GPU runtime ABI of MLIR's gpu-to-llvm lowering
//===----------------------------------------------------------------------===//
//
// The signatures are those LLVM 22's lowering declares (mgpuLaunchKernel's
// dimensions are intptr_t, MLIR's index). Work that would build on an
// earlier failure of the thread (loads, lookups, launches, allocations,
// copies, memsets) is skipped while that failure is kept; releases and
// synchronizations always run.

extern "C" {

RECUR_EXPORT CUmodule mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  CUmodule module = nullptr;
  if (!errorPending())
    keepFailure("mgpuModuleLoad", [&] {
      return loadModule("mgpuModuleLoad", data, -1, &module);
    });
  return module;
}

RECUR_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  CUmodule module = nullptr;
  if (!errorPending())
    keepFailure("mgpuModuleLoadJIT", [&] {
      if (optLevel < 0)
        return setError(RECUR_ERROR_INVALID_ARGUMENT,
                        "mgpuModuleLoadJIT: optimization level %d", optLevel);
      return loadModule("mgpuModuleLoadJIT", data, optLevel, &module);
    });
  return module;
}

RECUR_EXPORT void mgpuModuleUnload(CUmodule module) {
  keepFailure("mgpuModuleUnload",
              [&] { return unloadModule("mgpuModuleUnload", module); });
}

RECUR_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module,
                                              const char *name) {
  CUfunction function = nullptr;
  if (!errorPending())
    keepFailure("mgpuModuleGetFunction", [&] {
      return getFunction("mgpuModuleGetFunction", module, name, &function);
    });
  return function;
}

RECUR_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                   intptr_t gridY, intptr_t gridZ,
                                   intptr_t blockX, intptr_t blockY,
                                   intptr_t blockZ, int32_t smem,
                                   CUstream stream, void **params, void **extra,
                                   size_t /*paramsCount*/) {
  if (errorPending())
    return;
  keepFailure("mgpuLaunchKernel", [&] {
    int64_t grid[3] = {asInt64(gridX), asInt64(gridY), asInt64(gridZ)};
    int64_t block[3] = {asInt64(blockX), asInt64(blockY), asInt64(blockZ)};
    return launch("mgpuLaunchKernel", function, grid, block, smem, stream,
                  params, extra);
  });
}

RECUR_EXPORT CUstream mgpuStreamCreate() {
  CUstream stream = nullptr;
  keepFailure("mgpuStreamCreate",
              [&] { return takeStream("mgpuStreamCreate", &stream); });
  return stream;
}

RECUR_EXPORT void mgpuStreamDestroy(CUstream stream) {
  keepFailure("mgpuStreamDestroy",
              [&] { return giveStream("mgpuStreamDestroy", stream); });
}

RECUR_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  keepFailure("mgpuStreamSynchronize", [&] {
    return synchronizeStream("mgpuStreamSynchronize", stream);
  });
}

RECUR_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  keepFailure("mgpuStreamWaitEvent", [&] {
    if (!event)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "mgpuStreamWaitEvent: the event is NULL");
    const Driver *d = nullptr;
    if (recur_status status = ready("mgpuStreamWaitEvent", d))
      return status;
    if (CUresult result = d->api.cuStreamWaitEvent(stream, event, 0))
      return fail(*d, "mgpuStreamWaitEvent", result, "cuStreamWaitEvent");
    return RECUR_OK;
  });
}

RECUR_EXPORT CUevent mgpuEventCreate() {
  CUevent event = nullptr;
  keepFailure("mgpuEventCreate", [&] {
    const Driver *d = nullptr;
    if (recur_status status = ready("mgpuEventCreate", d))
      return status;
    if (CUresult result =
            d->api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING)) {
      event = nullptr;
      return fail(*d, "mgpuEventCreate", result, "cuEventCreate");
    }
    return RECUR_OK;
  });
  return event;
}

RECUR_EXPORT void mgpuEventDestroy(CUevent event) {
  keepFailure("mgpuEventDestroy", [&] {
    if (!event)
      return RECUR_OK;
    const Driver *d = nullptr;
    if (recur_status status = ready("mgpuEventDestroy", d))
      return status;
    if (CUresult result = d->api.cuEventDestroy_v2(event))
      return fail(*d, "mgpuEventDestroy", result, "cuEventDestroy_v2");
    return RECUR_OK;
  });
}

RECUR_EXPORT void mgpuEventSynchronize(CUevent event) {
  keepFailure("mgpuEventSynchronize", [&] {
    if (!event)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "mgpuEventSynchronize: the event is NULL");
    const Driver *d = nullptr;
    if (recur_status status = ready("mgpuEventSynchronize", d))
      return status;
    if (CUresult result = d->api.cuEventSynchronize(event))
      return fail(*d, "mgpuEventSynchronize", result, "cuEventSynchronize");
    return RECUR_OK;
  });
}

RECUR_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  keepFailure("mgpuEventRecord", [&] {
    if (!event)
      return setError(RECUR_ERROR_NULL_POINTER,
                      "mgpuEventRecord: the event is NULL");
    const Driver *d = nullptr;
    if (recur_status status = ready("mgpuEventRecord", d))
      return status;
    if (CUresult result = d->api.cuEventRecord(event, stream))
      return fail(*d, "mgpuEventRecord", result, "cuEventRecord");
    return RECUR_OK;
  });
}

RECUR_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream /*stream*/,
                                bool isHostShared) {
  void *ptr = nullptr;
  if (!errorPending())
    keepFailure("mgpuMemAlloc", [&] {
      if (sizeBytes > std::numeric_limits<size_t>::max())
        return setError(RECUR_ERROR_OUT_OF_MEMORY, "mgpuMemAlloc: %llu bytes",
                        static_cast<unsigned long long>(sizeBytes));
      return allocate("mgpuMemAlloc", static_cast<size_t>(sizeBytes),
                      isHostShared, &ptr);
    });
  return ptr;
}

RECUR_EXPORT void mgpuMemFree(void *ptr, CUstream /*stream*/) {
  keepFailure("mgpuMemFree", [&] { return release("mgpuMemFree", ptr); });
}

// The allocation functions of the host code recurc --target=cuda emits
// (the memref lowering's generic allocation functions, renamed): device
// memory, failures kept like the mgpu* functions' (cuMemAlloc aligns to
// 256 bytes, more than any alignment the lowering asks for).
RECUR_EXPORT void *recur_cuda_memref_alloc(uint64_t sizeBytes) {
  return mgpuMemAlloc(sizeBytes, nullptr, /*isHostShared=*/false);
}

RECUR_EXPORT void *recur_cuda_memref_aligned_alloc(uint64_t alignment,
                                                   uint64_t sizeBytes) {
  if (alignment > 256) {
    if (!errorPending())
      keepFailure("recur_cuda_memref_aligned_alloc", [&] {
        return setError(RECUR_ERROR_UNSUPPORTED,
                        "recur_cuda_memref_aligned_alloc: alignment %llu "
                        "exceeds the device allocator's 256",
                        static_cast<unsigned long long>(alignment));
      });
    return nullptr;
  }
  return mgpuMemAlloc(sizeBytes, nullptr, /*isHostShared=*/false);
}

RECUR_EXPORT void recur_cuda_memref_free(void *ptr) {
  if (ptr)
    mgpuMemFree(ptr, nullptr);
}

RECUR_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                             CUstream stream) {
  if (errorPending())
    return;
  keepFailure("mgpuMemcpy", [&] {
    return copy("mgpuMemcpy", CopyKind::Unified, dst, src, sizeBytes, stream,
                /*wait=*/false);
  });
}

RECUR_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count,
                               CUstream stream) {
  if (errorPending())
    return;
  keepFailure("mgpuMemset32", [&] {
    return fill("mgpuMemset32", dst, 4, value, count, stream, /*wait=*/false);
  });
}

RECUR_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count,
                               CUstream stream) {
  if (errorPending())
    return;
  keepFailure("mgpuMemset16", [&] {
    return fill("mgpuMemset16", dst, 2, value, count, stream, /*wait=*/false);
  });
}

RECUR_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  keepFailure("mgpuSetDefaultDevice", [&] {
    if (device < 0)
      return setError(RECUR_ERROR_INVALID_ARGUMENT,
                      "mgpuSetDefaultDevice: device %d", device);
    {
      DeviceChoice &choice = deviceChoice();
      std::lock_guard<std::mutex> lock(choice.mutex);
      if (!choice.made) {
        choice.requested = device;
        return RECUR_OK;
      }
    }
    const Driver *d = nullptr;
    if (recur_status status = ready("mgpuSetDefaultDevice", d))
      return status;
    if (device != d->ordinal)
      return setError(RECUR_ERROR_UNSUPPORTED,
                      "mgpuSetDefaultDevice: device %d asked for, but the "
                      "runtime runs on device %d (one device per process)",
                      device, d->ordinal);
    return RECUR_OK;
  });
}

} // extern "C"
