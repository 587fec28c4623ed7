//===- CudaTestSupport.h - helpers of the CUDA runtime tests ----*- C++ -*-===//
//
// Part of the Recur project.
//
// What the programs of the CUDA scenarios (CudaScenarios.cpp,
// CudaHostCode.cpp) share: status checks, and questions to the driver the
// process runs with.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TEST_UNIT_CUDATESTSUPPORT_H
#define RECUR_TEST_UNIT_CUDATESTSUPPORT_H

#include "recur/Runtime/recur_rt.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>

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

namespace recur_test {

/// Whether the last error starts with `prefix`.
inline ::testing::AssertionResult messageStartsWith(const std::string &prefix) {
  std::string message = recur_last_error();
  if (message.rfind(prefix, 0) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "message '" << message << "' does not start with '" << prefix
         << "'";
}

/// What the fake driver holds (fake_cuda_count in FakeCudaDriver.cpp);
/// -2 when the process does not run with it.
inline int64_t fakeCount(const char *what) {
  const char *path = std::getenv("RECUR_CUDA_DRIVER");
  void *library = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (!library)
    return -2;
  auto count = reinterpret_cast<int64_t (*)(const char *)>(
      dlsym(library, "fake_cuda_count"));
  int64_t result = count ? count(what) : -2;
  dlclose(library);
  return result;
}

/// Whether the real driver is installed.
inline bool libcudaLoads() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library)
    dlclose(library);
  return library != nullptr;
}

} // namespace recur_test

#endif // RECUR_TEST_UNIT_CUDATESTSUPPORT_H
