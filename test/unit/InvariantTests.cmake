# The invariant tests (docs/invariants.md): one GoogleTest executable per
# paper, Recur<Paper>InvariantTests, each test named after a line under
# "What tests must show" in ../shared/reference/<paper>.md. They call
# kernels recurc compiles here from the example specs (in double precision,
# --f64, at small sizes, so that equalities hold to ~1e-12) through
# librecur_rt, as a user's program does.

include(RecurLayers)

add_library(RecurInvariantHarness STATIC invariants/Harness.cpp)
target_include_directories(RecurInvariantHarness PUBLIC
  ${CMAKE_CURRENT_SOURCE_DIR}/invariants ${PROJECT_SOURCE_DIR}/examples/train)
target_link_libraries(RecurInvariantHarness PUBLIC RecurTrainLM GTest::gtest)

# recur_invariant_test(NAME SOURCES <file>... LAYERS <var>...): the
# executable Recur<NAME>InvariantTests from SOURCES and the layers compiled
# by recur_compile_layers calls whose NAME each <var> is.
function(recur_invariant_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LAYERS" ${ARGN})
  set(objects)
  set(dirs)
  foreach(layers IN LISTS ARG_LAYERS)
    list(APPEND objects ${${layers}_OBJECTS})
    list(APPEND dirs ${${layers}_DIR})
  endforeach()
  set(target Recur${name}InvariantTests)
  add_executable(${target} ${ARG_SOURCES} ${objects})
  target_include_directories(${target} PRIVATE ${dirs})
  target_link_libraries(${target} PRIVATE RecurInvariantHarness
                        GTest::gtest_main)
  set_target_properties(${target} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  # check-recur builds every one (test/CMakeLists.txt).
  set_property(GLOBAL APPEND PROPERTY RECUR_INVARIANT_TESTS ${target})
endfunction()

recur_compile_layers(inv_brt ../../examples/block_recurrent.recur
  LAYERS BlockRecurrentSkipFixed BlockRecurrentSkipLSTM
         BlockRecurrentSingleFixed BlockRecurrentSingleLSTM
         BlockRecurrentDualFixed BlockRecurrentDualLSTM BlockRecurrentFeedback
         SlidingWindow
  DEFINES D=16 H=2 W=4 S=3 F=24 OPTIONS --f64)
# Forms compared by their forwards only: no backward (--no-backward; a
# backward call on one would fail with RECUR_ERROR_UNSUPPORTED).
recur_compile_layers(inv_brt_forms invariants/specs/block_recurrent_forms.recur
  LAYERS BandTiled BandDense T5Probe T5ProbeSelf
         BlockRecurrentSkipFixedTwoPhase
  DEFINES D=16 H=2 W=4 S=3 F=24 OPTIONS --f64 --no-backward)
recur_invariant_test(BlockRecurrent SOURCES invariants/BlockRecurrent.cpp
  LAYERS inv_brt inv_brt_forms)
include(${CMAKE_CURRENT_SOURCE_DIR}/invariants/GateLoop.cmake)
include(${CMAKE_CURRENT_SOURCE_DIR}/invariants/TransformerXL.cmake)
include(${CMAKE_CURRENT_SOURCE_DIR}/invariants/MemBART.cmake)
include(${CMAKE_CURRENT_SOURCE_DIR}/invariants/SparseUniversal.cmake)
