//===- CudaTest.cpp - librecur_rt's CUDA calls under each driver ----------===//
//
// Part of the Recur project.
//
// The runtime sets up the CUDA driver once per process, so every driver
// scenario runs in a process of its own: each test here runs one suite of
// RecurCudaScenarios (CudaScenarios.cpp) or RecurCudaHostCode
// (CudaHostCode.cpp) with the environment that picks the driver
// (RECUR_CUDA_DRIVER: the default libcuda.so.1, the fake driver of
// FakeCudaDriver.cpp, a library that is not a driver) and makes it
// misbehave (FAKE_CUDA_*), and passes when every test of that suite does.
//
//===----------------------------------------------------------------------===//

#include "recur/Runtime/recur_rt.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern char **environ;

namespace {

using Environment = std::vector<std::pair<std::string, std::string>>;

/// This process's environment without the variables that choose or
/// configure a driver, and without GoogleTest's (lit's sharding and JSON
/// output are for this process, not the child), plus `extra`.
std::vector<std::string> childEnvironment(const Environment &extra) {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("GTEST_", 0) == 0 || entry.rfind("RECUR_CUDA_", 0) == 0 ||
        entry.rfind("FAKE_CUDA_", 0) == 0)
      continue;
    env.push_back(entry);
  }
  for (const auto &[name, value] : extra)
    env.push_back(name + "=" + value);
  return env;
}

/// Runs the tests of `suite` in `program` (a GoogleTest program) with
/// `extra` in its environment; fails with the child's output unless they
/// all ran and passed.
void runSuite(const char *program, const std::string &suite,
              const Environment &extra) {
  std::vector<std::string> args = {program, "--gtest_filter=" + suite + ".*"};
  std::vector<std::string> env = childEnvironment(extra);
  std::vector<char *> argv, envp;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string &e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipeFds[2];
  ASSERT_EQ(pipe2(pipeFds, O_CLOEXEC), 0) << std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDERR_FILENO);
  pid_t pid = 0;
  int spawned =
      posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  std::string output;
  if (spawned == 0) {
    char buffer[4096];
    ssize_t n;
    while ((n = read(pipeFds[0], buffer, sizeof(buffer))) > 0 ||
           (n < 0 && errno == EINTR))
      if (n > 0)
        output.append(buffer, static_cast<size_t>(n));
  }
  close(pipeFds[0]);
  ASSERT_EQ(spawned, 0) << "cannot run " << argv[0] << ": "
                        << std::strerror(spawned);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string environment;
  for (const auto &[name, value] : extra)
    environment += name + "=" + value + " ";
  std::string command = environment + args[0] + " " + args[1];
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << command << " failed:\n"
      << output;
  EXPECT_NE(output.find("[  PASSED  ]"), std::string::npos)
      << command << " passed no test:\n"
      << output;
  EXPECT_EQ(output.find("[  PASSED  ] 0 tests"), std::string::npos)
      << command << " ran no test:\n"
      << output;
}

/// Runs `suite` of RecurCudaScenarios.
void runScenario(const std::string &suite, const Environment &extra) {
  runSuite(RECUR_CUDA_SCENARIOS, suite, extra);
}

TEST(CudaStatus, TheDeviceCodesHaveNames) {
  EXPECT_STREQ(recur_status_name(RECUR_ERROR_NO_DEVICE),
               "RECUR_ERROR_NO_DEVICE");
  EXPECT_STREQ(recur_status_name(RECUR_ERROR_DEVICE), "RECUR_ERROR_DEVICE");
  EXPECT_EQ(static_cast<int>(RECUR_ERROR_NO_DEVICE), 11);
  EXPECT_EQ(static_cast<int>(RECUR_ERROR_DEVICE), 12);
}

// No RECUR_CUDA_DRIVER: libcuda.so.1, which a machine without CUDA lacks
// ("no CUDA device"); with a device, PTX runs on it.
TEST(CudaDriverScenario, DefaultDriver) { runScenario("DefaultDriver", {}); }

TEST(CudaDriverScenario, FakeDriver) {
  runScenario("FakeDriver", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA}});
}

TEST(CudaDriverScenario, FakeWithoutDevices) {
  runScenario("FakeNoDevice", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                               {"FAKE_CUDA_DEVICES", "0"}});
}

TEST(CudaDriverScenario, FakeInitializedWithoutDevices) {
  runScenario("FakeEmpty", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                            {"FAKE_CUDA_INIT_WITHOUT_DEVICES", "1"}});
}

TEST(CudaDriverScenario, FakeOutOfMemory) {
  runScenario("FakeAllocFails", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                                 {"FAKE_CUDA_FAIL_ALLOC", "1"}});
}

TEST(CudaDriverScenario, LibraryWithoutDriverSymbols) {
  runScenario("NotADriver", {{"RECUR_CUDA_DRIVER", "libm.so.6"}});
}

TEST(CudaDriverScenario, MissingLibrary) {
  runScenario("MissingDriver",
              {{"RECUR_CUDA_DRIVER", "/nonexistent/libcuda.so.1"}});
}

TEST(CudaDriverScenario, SecondDevice) {
  runScenario("SecondDevice", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                               {"FAKE_CUDA_DEVICES", "2"},
                               {"RECUR_CUDA_DEVICE", "1"}});
}

TEST(CudaDriverScenario, DeviceOutOfRange) {
  runScenario("DeviceOutOfRange", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                                   {"FAKE_CUDA_DEVICES", "2"},
                                   {"RECUR_CUDA_DEVICE", "2"}});
}

TEST(CudaDriverScenario, DeviceNotANumber) {
  runScenario("DeviceNotANumber", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                                   {"RECUR_CUDA_DEVICE", "gpu1"}});
}

TEST(CudaDriverScenario, DefaultDeviceFromMgpu) {
  runScenario("DefaultDeviceFromMgpu", {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA},
                                        {"FAKE_CUDA_DEVICES", "2"}});
}

// Host code lowered by MLIR's gpu-to-llvm (CudaHostCode.mlir).
TEST(CudaDriverScenario, GeneratedHostCode) {
  runSuite(RECUR_CUDA_HOST_CODE, "GeneratedHostCode",
           {{"RECUR_CUDA_DRIVER", RECUR_FAKE_CUDA}});
}

TEST(CudaDriverScenario, GeneratedHostCodeWithoutDevice) {
  runSuite(RECUR_CUDA_HOST_CODE, "GeneratedHostCodeWithoutDevice", {});
}

} // namespace
