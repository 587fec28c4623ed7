//===- CudaDriver.h - the CUDA driver API as librecur_rt loads it -*- C++
//-*-===//
//
// Part of the Recur project.
//
// The few types and entry points of the CUDA driver API (cuda.h) that the
// runtime uses, declared here so that nothing includes cuda.h or links
// libcuda: Cuda.cpp opens the driver with dlopen and resolves every name of
// RECUR_CUDA_DRIVER_FUNCTIONS with dlsym. The names are the symbols libcuda
// exports, which for some entry points are not the names cuda.h's callers
// write: cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on with macros, and
// the unsuffixed symbols are the old 32-bit ABI. The test driver
// (test/unit/FakeCudaDriver.cpp) defines the same list, so its signatures
// are checked against these.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_RUNTIME_CUDADRIVER_H
#define RECUR_LIB_RUNTIME_CUDADRIVER_H

#include <cstddef>

namespace recur {
namespace cuda {

// The driver's types, with cuda.h's names and representations (64-bit
// host).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUjit_option = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

// The values of cuda.h's enums that the runtime passes or tests.
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;

constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES =
    8;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr CUjit_option CU_JIT_OPTIMIZATION_LEVEL = 7;
constexpr unsigned int CU_STREAM_DEFAULT = 0x0;
constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned int CU_EVENT_DISABLE_TIMING = 0x2;
constexpr unsigned int CU_MEM_ATTACH_GLOBAL = 0x1;

/// The dynamic shared memory a kernel may use without opting in with
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// X(symbol, parameters): every driver entry point the runtime calls, by the
// symbol libcuda exports; each returns CUresult.
#define RECUR_CUDA_DRIVER_FUNCTIONS(X)                                         \
  X(cuGetErrorName, (CUresult error, const char **name))                       \
  X(cuGetErrorString, (CUresult error, const char **text))                     \
  X(cuInit, (unsigned int flags))                                              \
  X(cuDriverGetVersion, (int *version))                                        \
  X(cuDeviceGetCount, (int *count))                                            \
  X(cuDeviceGet, (CUdevice * device, int ordinal))                             \
  X(cuDeviceGetName, (char *name, int length, CUdevice device))                \
  X(cuDeviceGetAttribute,                                                      \
    (int *value, CUdevice_attribute attribute, CUdevice device))               \
  X(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice device))                     \
  X(cuDevicePrimaryCtxRetain, (CUcontext * context, CUdevice device))          \
  X(cuCtxGetCurrent, (CUcontext * context))                                    \
  X(cuCtxSetCurrent, (CUcontext context))                                      \
  X(cuCtxSynchronize, ())                                                      \
  X(cuMemAlloc_v2, (CUdeviceptr * ptr, size_t bytes))                          \
  X(cuMemAllocManaged, (CUdeviceptr * ptr, size_t bytes, unsigned int flags))  \
  X(cuMemFree_v2, (CUdeviceptr ptr))                                           \
  X(cuMemcpyHtoDAsync_v2,                                                      \
    (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))         \
  X(cuMemcpyDtoHAsync_v2,                                                      \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))               \
  X(cuMemcpyDtoDAsync_v2,                                                      \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemcpyAsync,                                                             \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemsetD8Async,                                                           \
    (CUdeviceptr dst, unsigned char value, size_t count, CUstream stream))     \
  X(cuMemsetD16Async,                                                          \
    (CUdeviceptr dst, unsigned short value, size_t count, CUstream stream))    \
  X(cuMemsetD32Async,                                                          \
    (CUdeviceptr dst, unsigned int value, size_t count, CUstream stream))      \
  X(cuStreamCreate, (CUstream * stream, unsigned int flags))                   \
  X(cuStreamDestroy_v2, (CUstream stream))                                     \
  X(cuStreamSynchronize, (CUstream stream))                                    \
  X(cuStreamWaitEvent, (CUstream stream, CUevent event, unsigned int flags))   \
  X(cuEventCreate, (CUevent * event, unsigned int flags))                      \
  X(cuEventDestroy_v2, (CUevent event))                                        \
  X(cuEventRecord, (CUevent event, CUstream stream))                           \
  X(cuEventSynchronize, (CUevent event))                                       \
  X(cuModuleLoadDataEx,                                                        \
    (CUmodule * module, const void *image, unsigned int numOptions,            \
     CUjit_option *options, void **optionValues))                              \
  X(cuModuleUnload, (CUmodule module))                                         \
  X(cuModuleGetFunction,                                                       \
    (CUfunction * function, CUmodule module, const char *name))                \
  X(cuFuncSetAttribute,                                                        \
    (CUfunction function, CUfunction_attribute attribute, int value))          \
  X(cuLaunchKernel,                                                            \
    (CUfunction function, unsigned int gridX, unsigned int gridY,              \
     unsigned int gridZ, unsigned int blockX, unsigned int blockY,             \
     unsigned int blockZ, unsigned int sharedBytes, CUstream stream,           \
     void **params, void **extra))

/// The driver's entry points, one pointer per RECUR_CUDA_DRIVER_FUNCTIONS
/// entry with its symbol's name.
struct DriverApi {
#define RECUR_CUDA_DRIVER_POINTER(name, params)                                \
  CUresult(*name) params = nullptr;
  RECUR_CUDA_DRIVER_FUNCTIONS(RECUR_CUDA_DRIVER_POINTER)
#undef RECUR_CUDA_DRIVER_POINTER
};

} // namespace cuda
} // namespace recur

#endif // RECUR_LIB_RUNTIME_CUDADRIVER_H
