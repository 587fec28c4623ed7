# TransformerXL invariant tests (invariants/TransformerXL.cpp): the layer of
# examples/transformer_xl.recur and the test-only layers of
# invariants/specs/transformer_xl_forms.recur, compiled in double precision
# at four (L, M) configurations, one executable each (a layer name can be
# linked only once per executable):
#   RecurTransformerXLInvariantTests              L = 4, M = 4  (M = L)
#   RecurTransformerXLShortMemoryInvariantTests   L = 4, M = 2  (M < L)
#   RecurTransformerXLLongMemoryInvariantTests    L = 3, M = 7  (M > L)
#   RecurTransformerXLIncrementalInvariantTests   L = 1, M = 5  (L = 1)
foreach(config IN ITEMS ":4:4" "ShortMemory:4:2" "LongMemory:3:7"
                        "Incremental:1:5")
  string(REPLACE ":" ";" parts "${config}")
  list(GET parts 0 suffix)
  list(GET parts 1 seg)
  list(GET parts 2 mem)
  set(defines L=${seg} M=${mem} D=8 H=2 F=12)
  recur_compile_layers(inv_txl${suffix} ../../examples/transformer_xl.recur
    LAYERS TransformerXL DEFINES ${defines} OPTIONS --f64)
  recur_compile_layers(inv_txl_forms${suffix}
    invariants/specs/transformer_xl_forms.recur
    LAYERS XLRelScores TransformerXLDetached DEFINES ${defines} OPTIONS --f64)
  recur_invariant_test(TransformerXL${suffix}
    SOURCES invariants/TransformerXL.cpp
    LAYERS inv_txl${suffix} inv_txl_forms${suffix})
  target_compile_definitions(RecurTransformerXL${suffix}InvariantTests
    PRIVATE XL_L=${seg} XL_M=${mem} XL_D=8 XL_H=2 XL_F=12)
endforeach()
