//===- CudaScenarios.cpp - librecur_rt's CUDA calls, one driver each ------===//
//
// Part of the Recur project.
//
// The runtime sets up the CUDA driver once per process, so each test suite
// here is one scenario that needs its own process and environment: the
// driver the runtime finds by default, the fake driver
// (test/unit/FakeCudaDriver.cpp) as it is and misbehaving, a library that is
// no driver, and the device choices. RecurCudaTests (CudaTest.cpp) runs this
// program once per suite with the environment the suite's comment names;
// run by hand it needs the same, e.g.
//
//   RECUR_CUDA_DRIVER=build/test/unit/libfake_cuda.so \
//     build/test/unit/RecurCudaScenarios --gtest_filter='FakeDriver.*'
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

// The GPU runtime ABI of MLIR's gpu-to-llvm lowering (LLVM 22), which
// librecur_rt defines; handles are the driver's, opaque here.
extern "C" {
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
void mgpuSetDefaultDevice(int32_t device);
}

namespace {

using namespace recur_test;

/// The fake driver's image of a module holding both of its kernels.
const char kFakeImage[] = "//fake-cuda: fill_f32 saxpy";

/// A launch configuration of `blocks` x `threads` along x.
struct Dims {
  uint32_t grid[3], block[3];
};
Dims linear(uint32_t blocks, uint32_t threads) {
  return {{blocks, 1, 1}, {threads, 1, 1}};
}

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

/// Runs saxpy (y = a * x + y over n elements) through the public API on
/// `stream` and checks every element; `image` holds a kernel "saxpy" with
/// the parameters (uint32 n, float a, float *x, float *y).
void checkSaxpy(const void *image, recur_cuda_stream *stream) {
  const uint32_t n = 1000;
  const float a = 2.5f;
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = static_cast<float>(1000 - i);
  }
  recur_cuda_module *module = nullptr;
  ASSERT_OK(recur_cuda_module_load(image, &module));
  recur_cuda_function *saxpy = nullptr;
  ASSERT_OK(recur_cuda_module_function(module, "saxpy", &saxpy));
  void *dx = nullptr, *dy = nullptr;
  ASSERT_OK(recur_cuda_malloc(n * sizeof(float), &dx));
  ASSERT_OK(recur_cuda_malloc(n * sizeof(float), &dy));
  ASSERT_OK(recur_cuda_memcpy_htod(dx, x.data(), n * sizeof(float), stream));
  ASSERT_OK(recur_cuda_memcpy_htod(dy, y.data(), n * sizeof(float), stream));
  uint32_t count = n;
  float scale = a;
  void *args[] = {&count, &scale, &dx, &dy};
  Dims dims = linear((n + 127) / 128, 128);
  ASSERT_OK(recur_cuda_launch(saxpy, dims.grid, dims.block, 0, stream, args));
  ASSERT_OK(recur_cuda_memcpy_dtoh(out.data(), dy, n * sizeof(float), stream));
  ASSERT_OK(recur_cuda_stream_synchronize(stream));
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], a * x[i] + y[i]) << "element " << i;
  ASSERT_OK(recur_cuda_free(dx));
  ASSERT_OK(recur_cuda_free(dy));
  ASSERT_OK(recur_cuda_module_unload(module));
}

//===----------------------------------------------------------------------===//
// DefaultDriver: RECUR_CUDA_DRIVER unset (libcuda.so.1)
//===----------------------------------------------------------------------===//

TEST(DefaultDriver, WithoutLibcudaEveryCallSaysNoDevice) {
  if (libcudaLoads())
    GTEST_SKIP() << "libcuda.so.1 is installed here";
  const std::string why = "no CUDA device: cannot load libcuda.so.1: ";
  EXPECT_EQ(recur_cuda_init(), RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith(why));
  // The outcome is kept: the same failure again, with its message.
  recur_status again = recur_cuda_init();
  EXPECT_EQ(again, RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith(why));

  int32_t count = 7;
  EXPECT_EQ(recur_cuda_device_count(&count), RECUR_ERROR_NO_DEVICE);
  EXPECT_EQ(count, 0);
  void *ptr = &count;
  EXPECT_EQ(recur_cuda_malloc(64, &ptr), RECUR_ERROR_NO_DEVICE);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_TRUE(messageStartsWith(why));
  recur_cuda_stream *stream = nullptr;
  EXPECT_EQ(recur_cuda_stream_create(&stream), RECUR_ERROR_NO_DEVICE);
  recur_cuda_module *module = nullptr;
  EXPECT_EQ(recur_cuda_module_load(kFakeImage, &module), RECUR_ERROR_NO_DEVICE);
  EXPECT_EQ(recur_cuda_synchronize(), RECUR_ERROR_NO_DEVICE);
  recur_cuda_device_info info;
  EXPECT_EQ(recur_cuda_device_info_get(0, &info), RECUR_ERROR_NO_DEVICE);

  // Pointer checks come first; releasing nothing needs no device.
  EXPECT_RECUR_ERROR(recur_cuda_malloc(64, nullptr), RECUR_ERROR_NULL_POINTER,
                     "recur_cuda_malloc: device_ptr is NULL");
  EXPECT_EQ(recur_cuda_free(nullptr), RECUR_OK);
  EXPECT_EQ(recur_cuda_stream_destroy(nullptr), RECUR_OK);
  EXPECT_EQ(recur_cuda_module_unload(nullptr), RECUR_OK);

  // Generated host code: its module constructor fails, and the error waits
  // for the runtime to take it, once.
  EXPECT_EQ(mgpuModuleLoad(const_cast<char *>(kFakeImage), sizeof(kFakeImage)),
            nullptr);
  EXPECT_EQ(mgpuMemAlloc(64, nullptr, false), nullptr);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith(why));
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK);
}

/// A PTX saxpy with the fake's parameters (checked with ptxas for sm_75
/// and sm_90).
const char kSaxpyPtx[] = R"(.version 7.0
.target sm_50
.address_size 64

.visible .entry saxpy(.param .u32 n, .param .f32 a, .param .u64 x,
                      .param .u64 y)
{
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<6>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r2, %r2, %r3, %r4;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra done;
  ld.param.f32 %f1, [a];
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f2, [%rd4];
  ld.global.f32 %f3, [%rd5];
  fma.rn.f32 %f4, %f1, %f2, %f3;
  st.global.f32 [%rd5], %f4;
done:
  ret;
}
)";

TEST(DefaultDriver, ARealDeviceRunsPtx) {
  if (recur_cuda_init() != RECUR_OK)
    GTEST_SKIP() << "no CUDA device here: " << recur_last_error();
  checkSaxpy(kSaxpyPtx, nullptr);
  recur_cuda_stream *stream = nullptr;
  ASSERT_OK(recur_cuda_stream_create(&stream));
  checkSaxpy(kSaxpyPtx, stream);
  ASSERT_OK(recur_cuda_stream_destroy(stream));
  recur_cuda_module *module = nullptr;
  EXPECT_RECUR_ERROR(recur_cuda_module_load(".version 7.0\nnot ptx", &module),
                     RECUR_ERROR_DEVICE, "recur_cuda_module_load: CUDA_ERROR_");
  EXPECT_EQ(module, nullptr);
}

//===----------------------------------------------------------------------===//
// FakeDriver: RECUR_CUDA_DRIVER=libfake_cuda.so
//===----------------------------------------------------------------------===//

TEST(FakeDriver, DescribesTheDevice) {
  ASSERT_OK(recur_cuda_init());
  int32_t count = 0, ordinal = -1;
  ASSERT_OK(recur_cuda_device_count(&count));
  EXPECT_EQ(count, 1);
  ASSERT_OK(recur_cuda_get_device(&ordinal));
  EXPECT_EQ(ordinal, 0);
  recur_cuda_device_info info;
  ASSERT_OK(recur_cuda_device_info_get(0, &info));
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_STREQ(info.name, "Fake CUDA Device 0");
  EXPECT_EQ(info.cc_major, 9);
  EXPECT_EQ(info.cc_minor, 0);
  EXPECT_EQ(info.multiprocessors, 132);
  EXPECT_EQ(info.total_bytes, uint64_t(80) << 30);
  EXPECT_EQ(info.driver_version, 13000);
  EXPECT_RECUR_ERROR(recur_cuda_device_info_get(1, &info),
                     RECUR_ERROR_INVALID_ARGUMENT,
                     "recur_cuda_device_info_get: there is no device 1 (the "
                     "driver sees 1)");
  EXPECT_RECUR_ERROR(recur_cuda_device_info_get(0, nullptr),
                     RECUR_ERROR_NULL_POINTER, "info is NULL");
  EXPECT_RECUR_ERROR(recur_cuda_device_count(nullptr), RECUR_ERROR_NULL_POINTER,
                     "count is NULL");
}

TEST(FakeDriver, CopiesRoundTripThroughDeviceMemory) {
  const size_t n = 1000, bytes = n * sizeof(float);
  std::vector<float> host(n), back(n, 0.0f);
  for (size_t i = 0; i < n; ++i)
    host[i] = 0.25f * static_cast<float>(i) - 7.0f;
  recur_memory_stats before;
  recur_cuda_memory_stats_get(&before);

  void *a = nullptr, *b = nullptr;
  ASSERT_OK(recur_cuda_malloc(bytes, &a));
  ASSERT_OK(recur_cuda_malloc(bytes, &b));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a, b);
  ASSERT_OK(recur_cuda_memcpy_htod(a, host.data(), bytes, nullptr));
  ASSERT_OK(recur_cuda_memcpy_dtod(b, a, bytes, nullptr));
  ASSERT_OK(recur_cuda_memcpy_dtoh(back.data(), b, bytes, nullptr));
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(back[i], host[i]) << "element " << i;

  std::vector<unsigned char> raw(bytes, 0);
  ASSERT_OK(recur_cuda_memset(a, 0x1AB, bytes, nullptr));
  ASSERT_OK(recur_cuda_memcpy_dtoh(raw.data(), a, bytes, nullptr));
  for (size_t i = 0; i < bytes; ++i)
    ASSERT_EQ(raw[i], 0xAB) << "byte " << i;

  recur_memory_stats during;
  recur_cuda_memory_stats_get(&during);
  EXPECT_EQ(during.live_bytes, before.live_bytes + 2 * bytes);
  EXPECT_EQ(during.allocations, before.allocations + 2);
  EXPECT_GE(during.peak_bytes, during.live_bytes);
  EXPECT_EQ(fakeCount("allocations"), 2);

  ASSERT_OK(recur_cuda_free(a));
  ASSERT_OK(recur_cuda_free(b));
  recur_memory_stats after;
  recur_cuda_memory_stats_get(&after);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GE(after.peak_bytes, before.live_bytes + 2 * bytes);
  recur_cuda_memory_stats_reset_peak();
  recur_cuda_memory_stats_get(&after);
  EXPECT_EQ(after.peak_bytes, after.live_bytes);
  EXPECT_EQ(fakeCount("allocations"), 0);
}

TEST(FakeDriver, LargeFreedBuffersAreReused) {
  const size_t mib = size_t(1) << 20;
  recur_memory_stats before;
  recur_cuda_memory_stats_get(&before);
  void *a = nullptr, *b = nullptr, *c = nullptr, *small = nullptr;
  ASSERT_OK(recur_cuda_malloc(4 * mib, &a));
  ASSERT_OK(recur_cuda_free(a));
  // Kept: the driver still holds it, and the stats count it no more.
  EXPECT_EQ(fakeCount("allocations"), 1);
  recur_memory_stats freed;
  recur_cuda_memory_stats_get(&freed);
  EXPECT_EQ(freed.live_bytes, before.live_bytes);
  // 3.5 MiB takes it (it holds at most 5/4 of that); 2 MiB would waste
  // half of it and gets a new buffer, as does a second 3.5 MiB.
  ASSERT_OK(recur_cuda_malloc(7 * mib / 2, &b));
  EXPECT_EQ(b, a);
  EXPECT_EQ(fakeCount("allocations"), 1);
  ASSERT_OK(recur_cuda_free(b));
  ASSERT_OK(recur_cuda_malloc(2 * mib, &c));
  EXPECT_NE(c, a);
  EXPECT_EQ(fakeCount("allocations"), 2);
  recur_memory_stats during;
  recur_cuda_memory_stats_get(&during);
  EXPECT_EQ(during.live_bytes, before.live_bytes + 2 * mib);
  // Small buffers go back to the driver when freed.
  ASSERT_OK(recur_cuda_malloc(mib - 1, &small));
  EXPECT_EQ(fakeCount("allocations"), 3);
  ASSERT_OK(recur_cuda_free(small));
  EXPECT_EQ(fakeCount("allocations"), 2);
  // A cached buffer is not live: freeing it again is an error.
  EXPECT_RECUR_ERROR(recur_cuda_free(a), RECUR_ERROR_INVALID_ARGUMENT,
                     "is not a live device buffer of the runtime");
  ASSERT_OK(recur_cuda_free(c));
  EXPECT_EQ(fakeCount("allocations"), 2);
  ASSERT_OK(recur_cuda_empty_cache());
  EXPECT_EQ(fakeCount("allocations"), 0);
  recur_memory_stats after;
  recur_cuda_memory_stats_get(&after);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
}

TEST(FakeDriver, MemoryErrors) {
  void *ptr = &ptr;
  ASSERT_OK(recur_cuda_malloc(0, &ptr));
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(recur_cuda_free(nullptr), RECUR_OK);

  float host[4] = {1, 2, 3, 4};
  EXPECT_RECUR_ERROR(recur_cuda_free(host), RECUR_ERROR_INVALID_ARGUMENT,
                     "is not a live device buffer of the runtime");
  void *device = nullptr;
  ASSERT_OK(recur_cuda_malloc(sizeof(host), &device));
  ASSERT_OK(recur_cuda_free(device));
  EXPECT_RECUR_ERROR(recur_cuda_free(device), RECUR_ERROR_INVALID_ARGUMENT,
                     "recur_cuda_free: ");

  // The driver's checks come back with its error name and text.
  EXPECT_RECUR_ERROR(
      recur_cuda_memcpy_htod(host, host, sizeof(host), nullptr),
      RECUR_ERROR_DEVICE,
      "recur_cuda_memcpy_htod: CUDA_ERROR_INVALID_VALUE (invalid argument) in "
      "cuMemcpyHtoDAsync_v2(");
  ASSERT_OK(recur_cuda_malloc(sizeof(host), &device));
  EXPECT_RECUR_ERROR(
      recur_cuda_memcpy_dtoh(host, device, 2 * sizeof(host), nullptr),
      RECUR_ERROR_DEVICE, "CUDA_ERROR_INVALID_VALUE");
  EXPECT_RECUR_ERROR(recur_cuda_memcpy_htod(nullptr, host, 4, nullptr),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_cuda_memcpy_htod: dst is NULL");
  EXPECT_RECUR_ERROR(recur_cuda_memcpy_dtod(device, nullptr, 4, nullptr),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_cuda_memcpy_dtod: src is NULL");
  EXPECT_RECUR_ERROR(recur_cuda_memset(nullptr, 0, 4, nullptr),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_cuda_memset: dst is NULL");
  EXPECT_EQ(recur_cuda_memcpy_htod(nullptr, nullptr, 0, nullptr), RECUR_OK);
  EXPECT_RECUR_ERROR(recur_cuda_malloc(8, nullptr), RECUR_ERROR_NULL_POINTER,
                     "device_ptr is NULL");
  ASSERT_OK(recur_cuda_free(device));
  EXPECT_EQ(fakeCount("allocations"), 0);
}

TEST(FakeDriver, KernelsRunOnStreams) {
  checkSaxpy(kFakeImage, nullptr);
  recur_cuda_stream *stream = nullptr;
  ASSERT_OK(recur_cuda_stream_create(&stream));
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(fakeCount("streams"), 1);
  checkSaxpy(kFakeImage, stream);
  ASSERT_OK(recur_cuda_synchronize());
  ASSERT_OK(recur_cuda_stream_synchronize(nullptr));
  ASSERT_OK(recur_cuda_stream_destroy(stream));
  EXPECT_EQ(fakeCount("streams"), 0);
  EXPECT_RECUR_ERROR(recur_cuda_stream_destroy(stream), RECUR_ERROR_DEVICE,
                     "recur_cuda_stream_destroy: CUDA_ERROR_INVALID_HANDLE "
                     "(invalid resource handle) in cuStreamDestroy_v2");
  EXPECT_RECUR_ERROR(recur_cuda_stream_create(nullptr),
                     RECUR_ERROR_NULL_POINTER, "stream is NULL");
  EXPECT_EQ(fakeCount("modules"), 0);
  EXPECT_EQ(fakeCount("allocations"), 0);
}

TEST(FakeDriver, ALaunchCoversItsGridOnly) {
  recur_cuda_module *module = nullptr;
  ASSERT_OK(recur_cuda_module_load(kFakeImage, &module));
  recur_cuda_function *fill = nullptr;
  ASSERT_OK(recur_cuda_module_function(module, "fill_f32", &fill));
  const uint32_t n = 20;
  void *data = nullptr;
  ASSERT_OK(recur_cuda_malloc(n * sizeof(float), &data));
  ASSERT_OK(recur_cuda_memset(data, 0, n * sizeof(float), nullptr));
  float value = 3.5f;
  uint32_t count = n;
  void *args[] = {&data, &value, &count};
  // 3 blocks of 4 threads: the first 12 elements.
  Dims dims = linear(3, 4);
  ASSERT_OK(recur_cuda_launch(fill, dims.grid, dims.block, 0, nullptr, args));
  std::vector<float> out(n, -1.0f);
  ASSERT_OK(
      recur_cuda_memcpy_dtoh(out.data(), data, n * sizeof(float), nullptr));
  for (uint32_t i = 0; i < n; ++i)
    EXPECT_EQ(out[i], i < 12 ? 3.5f : 0.0f) << "element " << i;
  ASSERT_OK(recur_cuda_free(data));
  ASSERT_OK(recur_cuda_module_unload(module));
}

TEST(FakeDriver, ModuleAndLaunchErrors) {
  recur_cuda_module *module = nullptr;
  EXPECT_RECUR_ERROR(
      recur_cuda_module_load("not an image", &module), RECUR_ERROR_DEVICE,
      "recur_cuda_module_load: CUDA_ERROR_INVALID_IMAGE (device kernel image "
      "is invalid) in cuModuleLoadDataEx: fake-cuda: the image does not start "
      "with //fake-cuda:");
  EXPECT_EQ(module, nullptr);
  EXPECT_RECUR_ERROR(recur_cuda_module_load(nullptr, &module),
                     RECUR_ERROR_NULL_POINTER, "image is NULL");
  EXPECT_RECUR_ERROR(recur_cuda_module_load(kFakeImage, nullptr),
                     RECUR_ERROR_NULL_POINTER, "module is NULL");

  ASSERT_OK(recur_cuda_module_load(kFakeImage, &module));
  recur_cuda_function *function = nullptr;
  EXPECT_RECUR_ERROR(recur_cuda_module_function(module, "gemm", &function),
                     RECUR_ERROR_INVALID_ARGUMENT,
                     "recur_cuda_module_function: the module has no kernel "
                     "'gemm'");
  EXPECT_EQ(function, nullptr);
  EXPECT_RECUR_ERROR(recur_cuda_module_function(nullptr, "saxpy", &function),
                     RECUR_ERROR_NULL_POINTER, "module is NULL");
  EXPECT_RECUR_ERROR(recur_cuda_module_function(module, nullptr, &function),
                     RECUR_ERROR_NULL_POINTER, "name is NULL");
  ASSERT_OK(recur_cuda_module_function(module, "fill_f32", &function));

  void *data = nullptr;
  ASSERT_OK(recur_cuda_malloc(16 * sizeof(float), &data));
  float value = 1.0f;
  uint32_t count = 16;
  void *args[] = {&data, &value, &count};
  Dims dims = linear(1, 16);
  uint32_t flat[3] = {4, 0, 1};
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(function, flat, dims.block, 0, nullptr, args),
      RECUR_ERROR_INVALID_ARGUMENT,
      "recur_cuda_launch: grid dimension y is 0, not in 1 .. 4294967295");
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(function, dims.grid, flat, 0, nullptr, args),
      RECUR_ERROR_INVALID_ARGUMENT, "block dimension y is 0");
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(function, nullptr, dims.block, 0, nullptr, args),
      RECUR_ERROR_NULL_POINTER, "recur_cuda_launch: grid is NULL");
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(function, dims.grid, nullptr, 0, nullptr, args),
      RECUR_ERROR_NULL_POINTER, "recur_cuda_launch: block is NULL");
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(nullptr, dims.grid, dims.block, 0, nullptr, args),
      RECUR_ERROR_NULL_POINTER, "recur_cuda_launch: the kernel is NULL");

  // More than 48 KiB of shared memory is opted in to, up to what the
  // device has.
  ASSERT_OK(recur_cuda_launch(function, dims.grid, dims.block, 64 * 1024,
                              nullptr, args));
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(function, dims.grid, dims.block, 300 * 1024, nullptr,
                        args),
      RECUR_ERROR_DEVICE,
      "recur_cuda_launch: CUDA_ERROR_INVALID_VALUE (invalid argument) in "
      "cuFuncSetAttribute(max dynamic shared memory, 307200 bytes)");
  // A kernel that writes past its buffer.
  count = 17;
  dims = linear(1, 32);
  EXPECT_RECUR_ERROR(
      recur_cuda_launch(function, dims.grid, dims.block, 0, nullptr, args),
      RECUR_ERROR_DEVICE,
      "recur_cuda_launch: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access "
      "was encountered) in cuLaunchKernel(grid 1 x 1 x 1, block 32 x 1 x 1, 0 "
      "shared bytes)");

  ASSERT_OK(recur_cuda_free(data));
  ASSERT_OK(recur_cuda_module_unload(module));
  EXPECT_RECUR_ERROR(recur_cuda_module_unload(module), RECUR_ERROR_DEVICE,
                     "CUDA_ERROR_INVALID_HANDLE");
}

TEST(FakeDriver, EveryThreadGetsTheContext) {
  // The fake refuses calls on a thread without a current context, as the
  // driver does: the runtime makes its context current on each thread.
  std::vector<float> out(64, 0.0f);
  recur_status status = RECUR_ERROR_INTERNAL;
  std::string message;
  std::thread worker([&] {
    void *data = nullptr;
    status = recur_cuda_malloc(out.size() * sizeof(float), &data);
    recur_cuda_module *module = nullptr;
    recur_cuda_function *fill = nullptr;
    if (!status)
      status = recur_cuda_module_load(kFakeImage, &module);
    if (!status)
      status = recur_cuda_module_function(module, "fill_f32", &fill);
    float value = -2.0f;
    uint32_t count = static_cast<uint32_t>(out.size());
    void *args[] = {&data, &value, &count};
    Dims dims = linear(2, 32);
    if (!status)
      status = recur_cuda_launch(fill, dims.grid, dims.block, 0, nullptr, args);
    if (!status)
      status = recur_cuda_memcpy_dtoh(out.data(), data,
                                      out.size() * sizeof(float), nullptr);
    message = recur_last_error();
    recur_cuda_free(data);
    recur_cuda_module_unload(module);
  });
  worker.join();
  ASSERT_EQ(status, RECUR_OK) << message;
  for (float v : out)
    EXPECT_EQ(v, -2.0f);
}

TEST(FakeDriver, GeneratedHostCodeRunsThroughMgpu) {
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK);
  recur_memory_stats before;
  recur_cuda_memory_stats_get(&before);
  int64_t launches = fakeCount("launches");

  // As gpu-to-llvm's output does it: the module from a global constructor,
  // then a stream, buffers, copies, a memset, a launch and an event.
  void *module =
      mgpuModuleLoad(const_cast<char *>(kFakeImage), sizeof(kFakeImage));
  ASSERT_NE(module, nullptr);
  void *saxpy = mgpuModuleGetFunction(module, "saxpy");
  ASSERT_NE(saxpy, nullptr);
  void *stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr);

  const uint32_t n = 300;
  const size_t bytes = n * sizeof(float);
  std::vector<float> x(n), out(n, 0.0f);
  for (uint32_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i) - 100.0f;
  void *dx = mgpuMemAlloc(bytes, stream, false);
  void *dy = mgpuMemAlloc(bytes, stream, /*isHostShared=*/true);
  ASSERT_NE(dx, nullptr);
  ASSERT_NE(dy, nullptr);
  recur_memory_stats during;
  recur_cuda_memory_stats_get(&during);
  EXPECT_EQ(during.live_bytes, before.live_bytes + 2 * bytes);

  mgpuMemcpy(dx, x.data(), bytes, stream);
  mgpuMemset32(dy, floatBits(1.0f), n, stream);
  uint32_t count = n;
  float a = -0.5f;
  void *params[] = {&count, &a, &dx, &dy};
  mgpuLaunchKernel(saxpy, 3, 1, 1, 128, 1, 1, 0, stream, params, nullptr, 4);
  void *event = mgpuEventCreate();
  ASSERT_NE(event, nullptr);
  mgpuEventRecord(event, stream);
  void *other = mgpuStreamCreate();
  mgpuStreamWaitEvent(other, event);
  mgpuEventSynchronize(event);
  mgpuMemcpy(out.data(), dy, bytes, other);
  mgpuStreamSynchronize(other);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], a * x[i] + 1.0f) << "element " << i;
  EXPECT_EQ(fakeCount("launches"), launches + 1);

  std::vector<uint16_t> halves(8, 0);
  mgpuMemset16(dx, 0x3C00, halves.size(), stream);
  mgpuMemcpy(halves.data(), dx, halves.size() * sizeof(uint16_t), stream);
  mgpuStreamSynchronize(stream);
  for (uint16_t h : halves)
    EXPECT_EQ(h, 0x3C00);

  mgpuEventDestroy(event);
  mgpuStreamDestroy(other);
  mgpuStreamDestroy(stream);
  mgpuMemFree(dx, nullptr);
  mgpuMemFree(dy, nullptr);
  mgpuModuleUnload(module);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  recur_memory_stats after;
  recur_cuda_memory_stats_get(&after);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(fakeCount("allocations"), 0);
  EXPECT_EQ(fakeCount("events"), 0);
  EXPECT_EQ(fakeCount("modules"), 0);
  // The two streams are kept for generated code's next launches, until the
  // cache is emptied.
  EXPECT_EQ(fakeCount("streams"), 2);
  ASSERT_OK(recur_cuda_empty_cache());
  EXPECT_EQ(fakeCount("streams"), 0);

  // Releasing nothing is nothing; a zero-byte buffer is NULL.
  mgpuMemFree(nullptr, nullptr);
  mgpuModuleUnload(nullptr);
  mgpuStreamDestroy(nullptr);
  mgpuEventDestroy(nullptr);
  EXPECT_EQ(mgpuMemAlloc(0, nullptr, false), nullptr);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
}

// Generated code's streams: up to 8 released ones are kept (the rest
// destroyed), taken again by any thread; a stream released twice is
// refused, and one the generated code did not create is destroyed.
TEST(FakeDriver, GeneratedCodeKeepsAFewIdleStreams) {
  ASSERT_OK(recur_cuda_empty_cache());
  int64_t created = fakeCount("streams_created");
  std::vector<void *> streams;
  for (int i = 0; i < 10; ++i)
    streams.push_back(mgpuStreamCreate());
  EXPECT_EQ(fakeCount("streams_created"), created + 10);
  for (void *stream : streams)
    mgpuStreamDestroy(stream);
  EXPECT_EQ(fakeCount("streams"), 8);

  void *other = nullptr;
  std::thread([&] { other = mgpuStreamCreate(); }).join();
  EXPECT_EQ(fakeCount("streams_created"), created + 10);
  EXPECT_NE(std::find(streams.begin(), streams.end(), other), streams.end());
  mgpuStreamDestroy(other);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  mgpuStreamDestroy(other);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_INVALID_ARGUMENT,
                     "mgpuStreamDestroy: the stream ");
  EXPECT_NE(std::string(recur_last_error()).find("was released already"),
            std::string::npos);
  EXPECT_EQ(fakeCount("streams"), 8);

  recur_cuda_stream *own = nullptr;
  ASSERT_OK(recur_cuda_stream_create(&own));
  EXPECT_EQ(fakeCount("streams"), 9);
  mgpuStreamDestroy(own);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  EXPECT_EQ(fakeCount("streams"), 8);

  ASSERT_OK(recur_cuda_empty_cache());
  EXPECT_EQ(fakeCount("streams"), 0);
}

TEST(FakeDriver, PtxGoesThroughTheJit) {
  void *module = mgpuModuleLoadJIT(const_cast<char *>(kFakeImage), 3);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(fakeCount("opt_level"), 3);
  EXPECT_NE(mgpuModuleGetFunction(module, "fill_f32"), nullptr);
  mgpuModuleUnload(module);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();

  // The JIT's log comes with the error.
  EXPECT_EQ(mgpuModuleLoadJIT(const_cast<char *>("//fake-cuda: gemm"), 2),
            nullptr);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_DEVICE,
                     "mgpuModuleLoadJIT: CUDA_ERROR_INVALID_IMAGE (device "
                     "kernel image is invalid) in cuModuleLoadDataEx: "
                     "fake-cuda: no kernel 'gemm' in the fake");
}

TEST(FakeDriver, AFailedMgpuCallIsKeptUntilTaken) {
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK);
  // A kernel and a buffer from before the failure.
  void *good =
      mgpuModuleLoad(const_cast<char *>(kFakeImage), sizeof(kFakeImage));
  void *fill = mgpuModuleGetFunction(good, "fill_f32");
  float *buffer =
      static_cast<float *>(mgpuMemAlloc(4 * sizeof(float), nullptr, false));
  ASSERT_NE(buffer, nullptr);
  mgpuMemset32(buffer, 0, 4, nullptr);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  int64_t launches = fakeCount("launches");
  int64_t allocations = fakeCount("allocations");

  void *module = mgpuModuleLoad(const_cast<char *>("cubin?"), 6);
  EXPECT_EQ(module, nullptr);
  // What would build on the failure is skipped: lookups, allocations,
  // memsets, launches and copies, even those that would work, and their
  // own failures (a NULL module) are not what the thread reports.
  EXPECT_EQ(mgpuModuleGetFunction(module, "saxpy"), nullptr);
  EXPECT_EQ(mgpuModuleGetFunction(good, "saxpy"), nullptr);
  EXPECT_EQ(mgpuMemAlloc(256, nullptr, false), nullptr);
  mgpuMemset32(buffer, floatBits(5.0f), 4, nullptr);
  float value = 9.0f;
  uint32_t count = 4;
  void *params[] = {&buffer, &value, &count};
  mgpuLaunchKernel(fill, 1, 1, 1, 4, 1, 1, 0, nullptr, params, nullptr, 3);
  float host[4] = {-1.0f, -1.0f, -1.0f, -1.0f};
  mgpuMemcpy(host, buffer, sizeof(host), nullptr);
  EXPECT_EQ(fakeCount("launches"), launches);
  EXPECT_EQ(fakeCount("allocations"), allocations);
  for (float h : host)
    EXPECT_EQ(h, -1.0f);
  // Releases still run: the stream is kept for the next launch.
  void *stream = mgpuStreamCreate();
  EXPECT_NE(stream, nullptr);
  mgpuStreamDestroy(stream);
  EXPECT_EQ(fakeCount("streams"), 1);

  EXPECT_EQ(recur_cuda_take_error(), RECUR_ERROR_DEVICE);
  EXPECT_TRUE(messageStartsWith(
      "mgpuModuleLoad: CUDA_ERROR_INVALID_IMAGE (device kernel image is "
      "invalid) in cuModuleLoadDataEx: fake-cuda: the image does not start "
      "with //fake-cuda:"));
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK);

  // Once taken, the thread works again: the buffer is still zeros.
  mgpuMemcpy(host, buffer, sizeof(host), nullptr);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  for (float h : host)
    EXPECT_EQ(h, 0.0f);
  mgpuLaunchKernel(fill, 1, 1, 1, 4, 1, 1, 0, nullptr, params, nullptr, 3);
  mgpuMemcpy(host, buffer, sizeof(host), nullptr);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  for (float h : host)
    EXPECT_EQ(h, 9.0f);

  // Failures of their own.
  mgpuLaunchKernel(nullptr, 1, 1, 1, 4, 1, 1, 0, nullptr, params, nullptr, 3);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_NULL_POINTER,
                     "mgpuLaunchKernel: the kernel is NULL");
  mgpuLaunchKernel(fill, 1, 0, 1, 4, 1, 1, 0, nullptr, params, nullptr, 3);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_INVALID_ARGUMENT,
                     "mgpuLaunchKernel: grid dimension y is 0");
  mgpuModuleGetFunction(good, "gemm");
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_INVALID_ARGUMENT,
                     "mgpuModuleGetFunction: the module has no kernel 'gemm'");
  mgpuMemFree(&count, nullptr);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_INVALID_ARGUMENT,
                     "mgpuMemFree: ");
  mgpuMemFree(buffer, nullptr);
  mgpuModuleUnload(good);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  EXPECT_EQ(fakeCount("allocations"), 0);
  EXPECT_EQ(fakeCount("modules"), 0);
  ASSERT_OK(recur_cuda_empty_cache());
  EXPECT_EQ(fakeCount("streams"), 0);
}

TEST(FakeDriver, EachThreadKeepsItsOwnError) {
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK);
  EXPECT_EQ(mgpuModuleLoad(const_cast<char *>("bad"), 4), nullptr);
  recur_status other = RECUR_ERROR_INTERNAL;
  void *module = nullptr;
  std::thread worker([&] {
    other = recur_cuda_take_error();
    // This thread has no failure to skip for.
    module = mgpuModuleLoad(const_cast<char *>(kFakeImage), sizeof(kFakeImage));
    mgpuModuleUnload(module);
  });
  worker.join();
  EXPECT_EQ(other, RECUR_OK);
  EXPECT_NE(module, nullptr);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_ERROR_DEVICE);
}

TEST(FakeDriver, TheDeviceIsFixedOnceChosen) {
  ASSERT_OK(recur_cuda_init());
  mgpuSetDefaultDevice(0);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  mgpuSetDefaultDevice(1);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_UNSUPPORTED,
                     "mgpuSetDefaultDevice: device 1 asked for, but the "
                     "runtime runs on device 0 (one device per process)");
}

//===----------------------------------------------------------------------===//
// Misbehaving drivers and device choices
//===----------------------------------------------------------------------===//

// FAKE_CUDA_DEVICES=0: cuInit finds no device.
TEST(FakeNoDevice, CuInitSaysNoDevice) {
  EXPECT_EQ(recur_cuda_init(), RECUR_ERROR_NO_DEVICE);
  EXPECT_STREQ(recur_last_error(), "no CUDA device: cuInit: "
                                   "CUDA_ERROR_NO_DEVICE (no CUDA-capable "
                                   "device is detected)");
  int32_t count = 5;
  EXPECT_EQ(recur_cuda_device_count(&count), RECUR_ERROR_NO_DEVICE);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(mgpuMemAlloc(16, nullptr, false), nullptr);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_NO_DEVICE,
                     "no CUDA device: cuInit");
}

// FAKE_CUDA_INIT_WITHOUT_DEVICES=1: cuInit succeeds, with no device.
TEST(FakeEmpty, NoDeviceToUse) {
  EXPECT_EQ(recur_cuda_init(), RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith("no CUDA device: the driver ("));
  EXPECT_NE(std::string(recur_last_error()).find(") sees no device"),
            std::string::npos)
      << recur_last_error();
}

// FAKE_CUDA_FAIL_ALLOC=1: every allocation runs out of memory.
TEST(FakeAllocFails, OutOfDeviceMemory) {
  recur_memory_stats before;
  recur_cuda_memory_stats_get(&before);
  void *ptr = &ptr;
  EXPECT_EQ(recur_cuda_malloc(4096, &ptr), RECUR_ERROR_OUT_OF_MEMORY);
  EXPECT_STREQ(recur_last_error(),
               "recur_cuda_malloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) in "
               "cuMemAlloc_v2(4096 bytes)");
  EXPECT_EQ(ptr, nullptr);
  recur_memory_stats after;
  recur_cuda_memory_stats_get(&after);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.allocations, before.allocations);

  // Generated code: the allocation fails, the copy into it is skipped, and
  // the release of the stream still runs.
  void *stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr);
  void *buffer = mgpuMemAlloc(64, stream, false);
  EXPECT_EQ(buffer, nullptr);
  float host[16] = {};
  mgpuMemcpy(buffer, host, sizeof(host), stream);
  mgpuMemset32(buffer, 0, 16, stream);
  mgpuStreamDestroy(stream);
  EXPECT_EQ(fakeCount("streams"), 1);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_ERROR_OUT_OF_MEMORY);
  EXPECT_STREQ(recur_last_error(),
               "mgpuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) in "
               "cuMemAlloc_v2(64 bytes)");
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK);
  ASSERT_OK(recur_cuda_empty_cache());
  EXPECT_EQ(fakeCount("streams"), 0);
}

// RECUR_CUDA_DRIVER=libm.so.6: a library that is not a driver.
TEST(NotADriver, NamesTheMissingSymbol) {
  EXPECT_EQ(recur_cuda_init(), RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith(
      "no CUDA device: libm.so.6 is not a CUDA driver: it has no "
      "cuGetErrorName ("));
}

// RECUR_CUDA_DRIVER=/nonexistent/libcuda.so.1.
TEST(MissingDriver, NamesTheLibrary) {
  void *ptr = nullptr;
  EXPECT_EQ(recur_cuda_malloc(8, &ptr), RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith(
      "no CUDA device: cannot load /nonexistent/libcuda.so.1: "));
}

// FAKE_CUDA_DEVICES=2 RECUR_CUDA_DEVICE=1.
TEST(SecondDevice, RunsOnTheDeviceAskedFor) {
  int32_t count = 0, ordinal = -1;
  ASSERT_OK(recur_cuda_device_count(&count));
  EXPECT_EQ(count, 2);
  ASSERT_OK(recur_cuda_get_device(&ordinal));
  EXPECT_EQ(ordinal, 1);
  recur_cuda_device_info info;
  ASSERT_OK(recur_cuda_device_info_get(1, &info));
  EXPECT_STREQ(info.name, "Fake CUDA Device 1");
  checkSaxpy(kFakeImage, nullptr);
}

// FAKE_CUDA_DEVICES=2 RECUR_CUDA_DEVICE=2.
TEST(DeviceOutOfRange, IsRefused) {
  EXPECT_RECUR_ERROR(recur_cuda_init(), RECUR_ERROR_INVALID_ARGUMENT,
                     "recur_cuda_init: RECUR_CUDA_DEVICE asks for device 2, "
                     "but the driver sees 2 device(s)");
}

// RECUR_CUDA_DEVICE=gpu1.
TEST(DeviceNotANumber, IsRefused) {
  EXPECT_RECUR_ERROR(recur_cuda_init(), RECUR_ERROR_INVALID_ARGUMENT,
                     "recur_cuda_init: RECUR_CUDA_DEVICE is 'gpu1', not a "
                     "device ordinal");
}

// FAKE_CUDA_DEVICES=2: generated code picks device 1 before the first call.
TEST(DefaultDeviceFromMgpu, IsUsed) {
  mgpuSetDefaultDevice(1);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  int32_t ordinal = -1;
  ASSERT_OK(recur_cuda_get_device(&ordinal));
  EXPECT_EQ(ordinal, 1);
  mgpuSetDefaultDevice(-1);
  EXPECT_RECUR_ERROR(recur_cuda_take_error(), RECUR_ERROR_INVALID_ARGUMENT,
                     "mgpuSetDefaultDevice: device -1");
}

//===----------------------------------------------------------------------===//
// recur_forward on a CUDA layer: a hand-written descriptor whose kernel is a
// host function standing in for compiled host code (the fake driver's
// device memory is host memory, so it can read and write its buffers).
//===----------------------------------------------------------------------===//

extern "C" void *recur_cuda_memref_alloc(uint64_t sizeBytes);

/// The user's input buffer of the last call, which the kernel must not see.
const void *userInput = nullptr;
/// The device buffer the kernel made for its last result.
const void *kernelResult = nullptr;

/// y = 2 x on a device layer: checks that its argument is device memory
/// (not the user's buffer, and counted by the runtime), allocates the
/// result through the runtime as compiled host code does.
void doubleKernel(int64_t *in, int64_t *out) {
  auto *x = reinterpret_cast<const float *>(static_cast<intptr_t>(in[1]));
  int64_t n = in[3];
  recur_memory_stats stats;
  recur_cuda_memory_stats_get(&stats);
  if (x == userInput || stats.live_bytes < static_cast<size_t>(n) * 4)
    n = 0; // the test sees an output of zeros
  auto *y = static_cast<float *>(recur_cuda_memref_alloc(n * 4 + 4));
  for (int64_t i = 0; i < n; ++i)
    y[i] = 2 * x[in[2] + i * in[4]];
  kernelResult = y;
  int64_t words[] = {static_cast<int64_t>(reinterpret_cast<intptr_t>(y)),
                     static_cast<int64_t>(reinterpret_cast<intptr_t>(y)), 0,
                     in[3], 1};
  std::memcpy(out, words, sizeof(words));
}

/// The user's cotangent buffer of the last backward call.
const void *userCotangent = nullptr;

/// The backward of doubleKernel, dx = 2 dy: its arguments are x, then the
/// cotangent dy, both device memory (not the user's buffers, and counted
/// by the runtime); it allocates dx through the runtime.
void doubleBackwardKernel(int64_t *in, int64_t *out) {
  auto *x = reinterpret_cast<const float *>(static_cast<intptr_t>(in[1]));
  auto *dy = reinterpret_cast<const float *>(static_cast<intptr_t>(in[6]));
  int64_t n = in[8];
  recur_memory_stats stats;
  recur_cuda_memory_stats_get(&stats);
  if (x == userInput || dy == userCotangent ||
      stats.live_bytes < static_cast<size_t>(2 * n) * 4)
    n = 0; // the test sees a gradient of zeros
  auto *dx = static_cast<float *>(recur_cuda_memref_alloc(in[3] * 4 + 4));
  for (int64_t i = 0; i < in[3]; ++i)
    dx[i] = i < n ? 2 * dy[in[7] + i * in[9]] : 0.0f;
  kernelResult = dx;
  int64_t words[] = {static_cast<int64_t>(reinterpret_cast<intptr_t>(dx)),
                     static_cast<int64_t>(reinterpret_cast<intptr_t>(dx)), 0,
                     in[3], 1};
  std::memcpy(out, words, sizeof(words));
}

/// A kernel whose launch fails, as compiled code whose module did not load.
void failingKernel(int64_t *in, int64_t *out) {
  doubleKernel(in, out);
  mgpuModuleGetFunction(nullptr, "missing");
}

const char *const kDeviceDims[] = {"N"};

/// The descriptor of a CUDA layer y = f(x), x and y f32[N].
struct DeviceLayer {
  recur_arg_desc x, y;
  recur_layer_desc desc;
  explicit DeviceLayer(recur_kernel_fn kernel) {
    std::memset(&x, 0, sizeof(x));
    x.name = "x";
    x.role = RECUR_ROLE_INPUT;
    x.dtype = RECUR_F32;
    x.rank = 1;
    x.shape[0] = -1;
    x.dim_names[0] = "N";
    x.init_rule = "";
    y = x;
    y.name = "y";
    y.role = RECUR_ROLE_OUTPUT;
    std::memset(&desc, 0, sizeof(desc));
    desc.abi_version = RECUR_ABI_VERSION;
    desc.name = "Double";
    desc.id = 42;
    desc.num_runtime_dims = 1;
    desc.runtime_dim_names = kDeviceDims;
    desc.batch_dim = -1;
    desc.time_dim = -1;
    desc.step_length = 1;
    desc.num_inputs = 1;
    desc.num_outputs = 1;
    desc.num_args = 1;
    desc.args = &x;
    desc.num_results = 1;
    desc.results = &y;
    desc.kernel = kernel;
    desc.device = RECUR_DEVICE_CUDA;
  }
};

/// After a call on a device layer: no device buffer is live, the host holds
/// what it held before the call (`host0`), and the device buffer the kernel
/// made for its result was freed (freeing it again is refused).
void expectNothingLeftBehind(const recur_memory_stats &host0) {
  recur_memory_stats device, host;
  recur_cuda_memory_stats_get(&device);
  recur_memory_stats_get(&host);
  EXPECT_EQ(device.live_bytes, 0u);
  EXPECT_EQ(host.live_bytes, host0.live_bytes);
  EXPECT_NE(recur_cuda_free(const_cast<void *>(kernelResult)), RECUR_OK);
}

} // namespace

// FakeDriver: a strided input goes to the device as a contiguous copy, the
// kernel runs on device buffers, its result comes back into the user's
// strided output, and no device or host buffer is left behind.
TEST(FakeDriver, ForwardRunsADeviceLayer) {
  DeviceLayer layer(doubleKernel);
  constexpr int64_t n = 7;
  float xs[2 * n], ys[3 * n];
  for (int64_t i = 0; i < 2 * n; ++i)
    xs[i] = static_cast<float>(i) + 0.5f;
  std::memset(ys, 0, sizeof(ys));
  int64_t shape[] = {n}, xStride[] = {2}, yStride[] = {3};
  recur_tensor x = recur_tensor_contiguous(xs, RECUR_F32, 1, shape);
  std::memcpy(x.strides, xStride, sizeof(xStride));
  recur_tensor y = recur_tensor_contiguous(ys, RECUR_F32, 1, shape);
  std::memcpy(y.strides, yStride, sizeof(yStride));
  userInput = xs;
  recur_memory_stats host0;
  recur_memory_stats_get(&host0);
  ASSERT_OK(recur_forward(&layer.desc, &x, nullptr, nullptr, &y));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(ys[3 * i], 2 * xs[2 * i]) << "element " << i;
    EXPECT_EQ(ys[3 * i + 1], 0.0f);
  }
  expectNothingLeftBehind(host0);
}

// FakeDriver: recur_backward on a device layer puts the input and the
// cotangent on the device, runs the backward kernel there and copies the
// gradient back into the user's strided tensor, leaving nothing behind.
TEST(FakeDriver, BackwardRunsADeviceLayer) {
  DeviceLayer layer(doubleKernel);
  layer.desc.backward = doubleBackwardKernel;
  constexpr int64_t n = 5;
  float xs[n], dys[2 * n], dxs[2 * n];
  for (int64_t i = 0; i < n; ++i)
    xs[i] = static_cast<float>(i);
  for (int64_t i = 0; i < 2 * n; ++i)
    dys[i] = static_cast<float>(i) + 0.25f;
  std::memset(dxs, 0, sizeof(dxs));
  int64_t shape[] = {n}, stride2[] = {2};
  recur_tensor x = recur_tensor_contiguous(xs, RECUR_F32, 1, shape);
  recur_tensor dy = recur_tensor_contiguous(dys, RECUR_F32, 1, shape);
  std::memcpy(dy.strides, stride2, sizeof(stride2));
  recur_tensor dx = recur_tensor_contiguous(dxs, RECUR_F32, 1, shape);
  std::memcpy(dx.strides, stride2, sizeof(stride2));
  userInput = xs;
  userCotangent = dys;
  recur_memory_stats host0;
  recur_memory_stats_get(&host0);
  ASSERT_OK(recur_backward(&layer.desc, &x, nullptr, nullptr, &dy, nullptr, &dx,
                           nullptr, nullptr));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(dxs[2 * i], 2 * dys[2 * i]) << "element " << i;
    EXPECT_EQ(dxs[2 * i + 1], 0.0f);
  }
  expectNothingLeftBehind(host0);
}

// FakeDriver: a device failure inside the kernel is the call's error, and
// the buffers are still freed.
TEST(FakeDriver, ForwardReportsAFailedKernel) {
  DeviceLayer layer(failingKernel);
  float xs[3] = {1, 2, 3}, ys[3] = {};
  int64_t shape[] = {3};
  recur_tensor x = recur_tensor_contiguous(xs, RECUR_F32, 1, shape);
  recur_tensor y = recur_tensor_contiguous(ys, RECUR_F32, 1, shape);
  EXPECT_RECUR_ERROR(recur_forward(&layer.desc, &x, nullptr, nullptr, &y),
                     RECUR_ERROR_NULL_POINTER,
                     "recur_forward(Double): the CUDA kernel failed: "
                     "mgpuModuleGetFunction");
  recur_memory_stats device;
  recur_cuda_memory_stats_get(&device);
  EXPECT_EQ(device.live_bytes, 0u);
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK);
}

// DefaultDriver: without a driver, recur_forward on a CUDA layer says so
// and leaves the output alone.
TEST(DefaultDriver, ForwardOfADeviceLayerSaysNoDevice) {
  DeviceLayer layer(doubleKernel);
  float xs[2] = {1, 2}, ys[2] = {5, 5};
  int64_t shape[] = {2};
  recur_tensor x = recur_tensor_contiguous(xs, RECUR_F32, 1, shape);
  recur_tensor y = recur_tensor_contiguous(ys, RECUR_F32, 1, shape);
  EXPECT_RECUR_ERROR(recur_forward(&layer.desc, &x, nullptr, nullptr, &y),
                     RECUR_ERROR_NO_DEVICE,
                     "recur_forward(Double): cannot put 'x' on the device: "
                     "no CUDA device");
  EXPECT_EQ(ys[0], 5.0f);
}

// DefaultDriver: without a driver, recur_backward on a CUDA layer says so
// and leaves the gradient alone.
TEST(DefaultDriver, BackwardOfADeviceLayerSaysNoDevice) {
  DeviceLayer layer(doubleKernel);
  layer.desc.backward = doubleBackwardKernel;
  float xs[2] = {1, 2}, dys[2] = {3, 4}, dxs[2] = {5, 5};
  int64_t shape[] = {2};
  recur_tensor x = recur_tensor_contiguous(xs, RECUR_F32, 1, shape);
  recur_tensor dy = recur_tensor_contiguous(dys, RECUR_F32, 1, shape);
  recur_tensor dx = recur_tensor_contiguous(dxs, RECUR_F32, 1, shape);
  EXPECT_RECUR_ERROR(recur_backward(&layer.desc, &x, nullptr, nullptr, &dy,
                                    nullptr, &dx, nullptr, nullptr),
                     RECUR_ERROR_NO_DEVICE,
                     "recur_backward(Double): cannot put 'x' on the device: "
                     "no CUDA device");
  EXPECT_EQ(dxs[0], 5.0f);
}
