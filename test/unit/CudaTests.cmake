# The CUDA part of librecur_rt, tested without a GPU.
#
# fake_cuda (libfake_cuda.so): a CUDA driver with host memory behind device
# pointers and a few host kernels, loaded by the runtime through
# RECUR_CUDA_DRIVER. It includes lib/Runtime/CudaDriver.h, so its entry
# points have the signatures the runtime resolves.
add_library(fake_cuda SHARED FakeCudaDriver.cpp)
target_include_directories(fake_cuda PRIVATE ${PROJECT_SOURCE_DIR}/lib/Runtime)
set_target_properties(fake_cuda PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

# RecurCudaScenarios: one test suite per driver scenario, each needing a
# process of its own (the runtime sets up its driver once per process). Its
# name does not end in "Tests", so lit does not run it directly.
add_executable(RecurCudaScenarios CudaScenarios.cpp)
target_link_libraries(RecurCudaScenarios PRIVATE recur_rt GTest::gtest
                      GTest::gtest_main ${CMAKE_DL_LIBS})
set_target_properties(RecurCudaScenarios PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

# RecurCudaTests: run by lit; runs each scenario with its environment.
add_executable(RecurCudaTests CudaTest.cpp)
target_link_libraries(RecurCudaTests PRIVATE recur_rt GTest::gtest
                      GTest::gtest_main)
target_compile_definitions(RecurCudaTests PRIVATE
  RECUR_CUDA_SCENARIOS="$<TARGET_FILE:RecurCudaScenarios>"
  RECUR_FAKE_CUDA="$<TARGET_FILE:fake_cuda>")
add_dependencies(RecurCudaTests RecurCudaScenarios fake_cuda)
set_target_properties(RecurCudaTests PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
# check-recur builds the runtime's tests (test/CMakeLists.txt); these come
# with them.
add_dependencies(RecurRuntimeTests RecurCudaTests)

# RecurCudaHostCode: host code lowered by MLIR's own gpu-to-llvm from
# CudaHostCode.mlir, linked with librecur_rt alone, so that the mgpu*
# functions it calls are checked against what LLVM 22 emits.
set(RECUR_HOST_CODE ${CMAKE_CURRENT_BINARY_DIR}/CudaHostCode)
add_custom_command(
  OUTPUT ${RECUR_HOST_CODE}.o
  COMMAND ${LLVM_TOOLS_BINARY_DIR}/mlir-opt
          ${CMAKE_CURRENT_SOURCE_DIR}/CudaHostCode.mlir
          --gpu-to-llvm=use-bare-pointers-for-kernels=1
          --convert-arith-to-llvm --convert-func-to-llvm
          --finalize-memref-to-llvm --reconcile-unrealized-casts
          -o ${RECUR_HOST_CODE}.llvm.mlir
  COMMAND ${LLVM_TOOLS_BINARY_DIR}/mlir-translate --mlir-to-llvmir
          ${RECUR_HOST_CODE}.llvm.mlir -o ${RECUR_HOST_CODE}.ll
  COMMAND ${CMAKE_CXX_COMPILER} -c -fPIC -Wno-override-module
          ${RECUR_HOST_CODE}.ll -o ${RECUR_HOST_CODE}.o
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/CudaHostCode.mlir
  COMMENT "Lowering CudaHostCode.mlir with gpu-to-llvm"
  VERBATIM)
add_executable(RecurCudaHostCode CudaHostCode.cpp ${RECUR_HOST_CODE}.o)
target_link_libraries(RecurCudaHostCode PRIVATE recur_rt GTest::gtest
                      GTest::gtest_main ${CMAKE_DL_LIBS})
set_target_properties(RecurCudaHostCode PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
target_compile_definitions(RecurCudaTests PRIVATE
  RECUR_CUDA_HOST_CODE="$<TARGET_FILE:RecurCudaHostCode>")
add_dependencies(RecurCudaTests RecurCudaHostCode)
