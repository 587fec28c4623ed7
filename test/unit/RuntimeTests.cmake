# RecurRuntimeTests: GoogleTest tests of librecur_rt, with hand-written
# kernels that follow the generated kernels' ABI.
add_executable(RecurRuntimeTests RuntimeTest.cpp)
target_link_libraries(RecurRuntimeTests PRIVATE recur_rt GTest::gtest
                      GTest::gtest_main)
set_target_properties(RecurRuntimeTests PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
