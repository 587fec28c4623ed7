# MemBART invariant tests (written by its own brief; see InvariantTests.cmake)
#
# examples/membart.recur's layer and the test-only forms of it in
# invariants/specs/membart_forms.recur (a probe returning M^, HM and z, a
# detached-memory form and a T-turns-at-once form), all in double precision
# with K=3 slots, N=4 tokens, D=8, NH=2 heads, F=12.
set(membart_dims K=3 N=4 D=8 NH=2 F=12)
recur_compile_layers(inv_membart ../../examples/membart.recur
  LAYERS MemBART DEFINES ${membart_dims} OPTIONS --f64)
recur_compile_layers(inv_membart_forms invariants/specs/membart_forms.recur
  LAYERS MemBARTDetached MemBARTUnrolled
  DEFINES ${membart_dims} OPTIONS --f64)
# The probe is run forward only (--no-backward).
recur_compile_layers(inv_membart_probe invariants/specs/membart_forms.recur
  LAYERS MemBARTProbe DEFINES ${membart_dims} OPTIONS --f64 --no-backward)
recur_invariant_test(MemBART SOURCES invariants/MemBART.cpp
  LAYERS inv_membart inv_membart_forms inv_membart_probe)
