# The Sparse Universal Transformer's invariant tests (SparseUniversal.cpp):
# examples/sparse_universal.recur's layer in double precision at small sizes,
# with the test-only layers of specs/sparse_universal_*.recur. A second
# executable runs the example at E = 1, k = 1 (the same layer name cannot be
# linked twice into one executable) against a dense block.
set(sut_dims D=8 H=2 E=4 K=2 F=6 L=3)
recur_compile_layers(inv_sut ../../examples/sparse_universal.recur
  LAYERS SparseUniversal DEFINES ${sut_dims} OPTIONS --f64)
# Traced and variant forms, compared by their forwards only (--no-backward).
recur_compile_layers(inv_sut_layers invariants/specs/sparse_universal_layers.recur
  LAYERS SUTTrace SUTTraceCausal SUTSkip SUTDenseUT
  DEFINES ${sut_dims} OPTIONS --f64 --no-backward)
recur_compile_layers(inv_sut_ops invariants/specs/sparse_universal_ops.recur
  LAYERS SUTHaltSteps SUTRouteProbe SUTMoE SUTMim OPTIONS --f64)
recur_invariant_test(SparseUniversal SOURCES invariants/SparseUniversal.cpp
  LAYERS inv_sut inv_sut_layers inv_sut_ops)

recur_compile_layers(inv_sut_e1 ../../examples/sparse_universal.recur
  LAYERS SparseUniversal DEFINES D=8 H=2 E=1 K=1 F=6 L=3 OPTIONS --f64)
recur_compile_layers(inv_sut_std invariants/specs/sparse_universal_std.recur
  LAYERS SUTStdBlock DEFINES D=8 H=2 F=6 L=3 OPTIONS --f64)
recur_invariant_test(SparseUniversalE1K1
  SOURCES invariants/SparseUniversal.cpp LAYERS inv_sut_e1 inv_sut_std)
target_compile_definitions(RecurSparseUniversalE1K1InvariantTests PRIVATE
  SUT_E1K1=1)
