# RecurOracleTests: GoogleTest tests of the float64 IR evaluator.
add_executable(RecurOracleTests
  OracleTest.cpp
)
target_link_libraries(RecurOracleTests PRIVATE RecurOracle RecurFrontend
                      GTest::gtest GTest::gtest_main ${RECUR_MLIR_LIBS})
target_compile_definitions(RecurOracleTests PRIVATE
  RECUR_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
set_target_properties(RecurOracleTests PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
