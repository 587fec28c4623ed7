# GateLoop invariant tests (test/unit/invariants/GateLoop.cpp, one test per
# line under "What tests must show" in ../shared/reference/gateloop.md).
#
# RecurGateLoopInvariantTests: everything in double precision (--f64), small
# dims. The example layers (GateLoop with d_k = 3 != d_v = 4, the max-headed
# GateLoopMaxHeaded and the user-combine GateLoopScan, RetNet's Retention and
# RetentionRot, LRU) and the test-only layers of specs/gateloop_modes.recur
# (the same recurrence on raw q, k, v, |a|, arg a in every mode).
recur_compile_layers(inv_gateloop ../../examples/gateloop.recur
  LAYERS GateLoop GateLoopMaxHeaded DEFINES D=8 H=2 dk=3 OPTIONS --f64)
recur_compile_layers(inv_gateloop_attention ../../examples/gateloop.recur
  LAYERS GateLoopAttention DEFINES D=8 H=2 dk=3 T=37 OPTIONS --f64)
recur_compile_layers(inv_gateloop_scan ../../examples/custom_scan.recur
  LAYERS GateLoopScan DEFINES D=8 OPTIONS --f64)
recur_compile_layers(inv_gateloop_retnet ../../examples/retnet.recur
  LAYERS Retention RetentionRot DEFINES D=8 H=2 OPTIONS --f64)
recur_compile_layers(inv_gateloop_lru ../../examples/lru.recur
  LAYERS LRU DEFINES D=4 N=3 OPTIONS --f64)
# The modes whose backward the tests call, and those compared by their
# forwards only (compiled with --no-backward: a backward call on one would
# fail with RECUR_ERROR_UNSUPPORTED).
set(inv_gateloop_mode_layers GLRecurrent GLChunked1 GLChunked3 GLChunked16
  GLChunked64 GLLinearScan GLUserScan)
set(inv_gateloop_forward_mode_layers GLUserScanSwapped GLAttention17
  GLAttention64 GLRealDecay GLOpScan GLOpScanSwapped)
recur_compile_layers(inv_gateloop_modes invariants/specs/gateloop_modes.recur
  LAYERS ${inv_gateloop_mode_layers} OPTIONS --f64)
recur_compile_layers(inv_gateloop_fmodes invariants/specs/gateloop_modes.recur
  LAYERS ${inv_gateloop_forward_mode_layers} OPTIONS --f64 --no-backward)
recur_invariant_test(GateLoop SOURCES invariants/GateLoop.cpp
  LAYERS inv_gateloop inv_gateloop_attention inv_gateloop_scan
         inv_gateloop_retnet inv_gateloop_lru inv_gateloop_modes
         inv_gateloop_fmodes)

# RecurGateLoopDk1InvariantTests: the test-only layers at d_k = d_v = 1 with
# four heads (the paper's max-headed case), the same source with
# RECUR_GATELOOP_DK1 (the tests on raw inputs run again at this config).
recur_compile_layers(inv_gateloop_modes_dk1
  invariants/specs/gateloop_modes.recur LAYERS ${inv_gateloop_mode_layers}
  DEFINES H=4 K=1 V=1 OPTIONS --f64)
recur_compile_layers(inv_gateloop_fmodes_dk1
  invariants/specs/gateloop_modes.recur
  LAYERS ${inv_gateloop_forward_mode_layers}
  DEFINES H=4 K=1 V=1 OPTIONS --f64 --no-backward)
recur_invariant_test(GateLoopDk1 SOURCES invariants/GateLoop.cpp
  LAYERS inv_gateloop inv_gateloop_attention inv_gateloop_scan
         inv_gateloop_retnet inv_gateloop_lru inv_gateloop_modes_dk1
         inv_gateloop_fmodes_dk1)
target_compile_definitions(RecurGateLoopDk1InvariantTests PRIVATE
  RECUR_GATELOOP_DK1=1)

# RecurGateLoopF32InvariantTests: the float32 line (l >= 1000, sigmoid
# magnitudes), the same layers compiled without --f64 and compared with a
# float64 oracle written in the test.
recur_compile_layers(inv_gateloop_f32 ../../examples/gateloop.recur
  LAYERS GateLoop GateLoopMaxHeaded DEFINES D=8 H=2 dk=3)
recur_compile_layers(inv_gateloop_scan_f32 ../../examples/custom_scan.recur
  LAYERS GateLoopScan DEFINES D=8)
recur_compile_layers(inv_gateloop_modes_f32
  invariants/specs/gateloop_modes.recur LAYERS ${inv_gateloop_mode_layers})
recur_compile_layers(inv_gateloop_fmodes_f32
  invariants/specs/gateloop_modes.recur
  LAYERS ${inv_gateloop_forward_mode_layers} OPTIONS --no-backward)
recur_invariant_test(GateLoopF32 SOURCES invariants/GateLoop.cpp
  LAYERS inv_gateloop_f32 inv_gateloop_scan_f32 inv_gateloop_modes_f32
         inv_gateloop_fmodes_f32)
target_compile_definitions(RecurGateLoopF32InvariantTests PRIVATE
  RECUR_GATELOOP_F32=1)
