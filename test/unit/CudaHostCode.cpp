//===- CudaHostCode.cpp - MLIR-lowered host code on librecur_rt -----------===//
//
// Part of the Recur project.
//
// Runs @fill_on_device of CudaHostCode.mlir, lowered by MLIR's gpu-to-llvm:
// its module constructor and its body call the mgpu* functions of
// librecur_rt and nothing else. RecurCudaTests (CudaTest.cpp) runs the
// suites here in processes of their own: GeneratedHostCode with the fake
// driver, GeneratedHostCodeWithoutDevice with the default driver.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cstdint>

/// The lowered function: a memref<16xf32> as its descriptor's words (the
/// allocated and aligned pointers, offset, size, stride), then the value.
extern "C" void fill_on_device(float *allocated, float *aligned, int64_t offset,
                               int64_t size, int64_t stride, float value);

namespace {

using namespace recur_test;

constexpr int kSize = 16;
/// The elements the launch covers (n in CudaHostCode.mlir).
constexpr int kFilled = 12;

TEST(GeneratedHostCode, FillsOnTheDevice) {
  // The module constructor ran before main and loaded its image.
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  EXPECT_EQ(fakeCount("modules"), 1);
  recur_memory_stats before;
  recur_cuda_memory_stats_get(&before);

  float out[kSize];
  for (float &v : out)
    v = -1.0f;
  fill_on_device(out, out, 0, kSize, 1, 4.5f);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  for (int i = 0; i < kSize; ++i)
    EXPECT_EQ(out[i], i < kFilled ? 4.5f : 0.0f) << "element " << i;

  recur_memory_stats after;
  recur_cuda_memory_stats_get(&after);
  EXPECT_EQ(after.allocations, before.allocations + 1);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GE(after.peak_bytes, before.live_bytes + kSize * sizeof(float));
  EXPECT_EQ(fakeCount("allocations"), 0);
  EXPECT_EQ(fakeCount("launches"), 1);
  // The stream the host code created and destroyed is kept for the next
  // call's launch, which takes it instead of creating one, until the cache
  // is emptied.
  EXPECT_EQ(fakeCount("streams"), 1);
  EXPECT_EQ(fakeCount("streams_created"), 1);
  fill_on_device(out, out, 0, kSize, 1, 2.5f);
  ASSERT_EQ(recur_cuda_take_error(), RECUR_OK) << recur_last_error();
  EXPECT_EQ(out[0], 2.5f);
  EXPECT_EQ(fakeCount("launches"), 2);
  EXPECT_EQ(fakeCount("streams"), 1);
  EXPECT_EQ(fakeCount("streams_created"), 1);
  ASSERT_EQ(recur_cuda_empty_cache(), RECUR_OK) << recur_last_error();
  EXPECT_EQ(fakeCount("streams"), 0);
}

TEST(GeneratedHostCodeWithoutDevice, FailsWithoutHarm) {
  if (libcudaLoads())
    GTEST_SKIP() << "libcuda.so.1 is installed here";
  float out[kSize];
  for (float &v : out)
    v = -1.0f;
  fill_on_device(out, out, 0, kSize, 1, 4.5f);
  // The first failure is the module constructor's, before main; the rest
  // was skipped or failed quietly after it.
  EXPECT_EQ(recur_cuda_take_error(), RECUR_ERROR_NO_DEVICE);
  EXPECT_TRUE(messageStartsWith("no CUDA device: cannot load libcuda.so.1"));
  EXPECT_EQ(recur_cuda_take_error(), RECUR_OK);
  for (float v : out)
    EXPECT_EQ(v, -1.0f);
}

} // namespace
