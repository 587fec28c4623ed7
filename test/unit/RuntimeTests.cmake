# RecurRuntimeTests: GoogleTest tests of librecur_rt, with hand-written
# kernels that follow the generated kernels' ABI.
add_executable(RecurRuntimeTests RuntimeTest.cpp VectorMathTest.cpp)
# VectorMathTest calls the vector math entry points as AVX2 kernels do.
set_source_files_properties(VectorMathTest.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma")
target_link_libraries(RecurRuntimeTests PRIVATE recur_rt GTest::gtest
                      GTest::gtest_main)
set_target_properties(RecurRuntimeTests PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
