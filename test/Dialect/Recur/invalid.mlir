// RUN: recur-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the recur dialect, named after the rule it
// breaks. Every message that RecurOps.cpp emits has a case here (checked by
// test/lint/verifier-coverage.test); the ODS-generated checks that matter
// (operand types, same-type constraints, required attributes, enum spelling,
// inferred result types) have one too. Cases the custom assembly cannot
// express are written in generic form.

//===----------------------------------------------------------------------===//
// recur.linear_scan
//===----------------------------------------------------------------------===//

func.func @linear_scan_axis_out_of_range(%a: tensor<2x7xf32>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'axis' 2 is out of range for 'b' of rank 2}}
  %h, %last = recur.linear_scan %a, %b along 2 : tensor<2x7xf32>, tensor<2x7xf32>
  return
}

// -----

func.func @linear_scan_axis_negative(%a: tensor<2x7xf32>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'axis' -1 is out of range for 'b' of rank 2}}
  %h, %last = recur.linear_scan %a, %b along -1 : tensor<2x7xf32>, tensor<2x7xf32>
  return
}

// -----

// In generic form the verifier runs first; a negative axis passes it and is
// caught when the result types are inferred.
func.func @linear_scan_axis_negative_generic(%a: tensor<2x7xf32>, %b: tensor<2x7xf32>) {
  // expected-error @+2 {{'axis' -1 is out of range for 'b' of rank 2}}
  // expected-error @+1 {{'recur.linear_scan' op failed to infer returned types}}
  %r:2 = "recur.linear_scan"(%a, %b) <{axis = -1 : i64}> : (tensor<2x7xf32>, tensor<2x7xf32>) -> (tensor<2x7xf32>, tensor<2xf32>)
  return
}

// -----

func.func @linear_scan_a_rank_does_not_include_axis(%a: tensor<2xf32>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op 'a' must have rank between axis + 1 (2) and the rank of 'b' (2), got 1}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<2xf32>, tensor<2x7xf32>
  return
}

// -----

func.func @linear_scan_a_rank_above_b(%a: tensor<2x7x4x3xf32>, %b: tensor<2x7x4xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op 'a' must have rank between axis + 1 (2) and the rank of 'b' (3), got 4}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<2x7x4x3xf32>, tensor<2x7x4xf32>
  return
}

// -----

func.func @linear_scan_a_not_leading_part_of_b(%a: tensor<2x7x5xf32>, %b: tensor<2x7x4xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op 'a' shape 2x7x5 is not a leading part of 'b' shape 2x7x4}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<2x7x5xf32>, tensor<2x7x4xf32>
  return
}

// -----

func.func @linear_scan_a_prefix_mismatch(%a: tensor<3x?xf32>, %b: tensor<2x7x4xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op 'a' shape 3x? is not a leading part of 'b' shape 2x7x4}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<3x?xf32>, tensor<2x7x4xf32>
  return
}

// -----

func.func @linear_scan_a_element_type_not_b(%a: tensor<2x7xf64>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op element type of 'a' ('f64') must be that of 'b' ('f32') or its real part}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<2x7xf64>, tensor<2x7xf32>
  return
}

// -----

func.func @linear_scan_a_element_type_not_real_part_of_b(%a: tensor<2x7xf32>, %b: tensor<2x7xcomplex<f64>>) {
  // expected-error @+1 {{'recur.linear_scan' op element type of 'a' ('f32') must be that of 'b' ('complex<f64>') or its real part}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<2x7xf32>, tensor<2x7xcomplex<f64>>
  return
}

// -----

// A complex decay of a real state is not allowed either.
func.func @linear_scan_complex_a_real_b(%a: tensor<2x7xcomplex<f32>>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op element type of 'a' ('complex<f32>') must be that of 'b' ('f32') or its real part}}
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<2x7xcomplex<f32>>, tensor<2x7xf32>
  return
}

// -----

func.func @linear_scan_init_shape_not_state(%a: tensor<2x7x4xf32>, %b: tensor<2x7x4xf32>, %h0: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op 'init' type 'tensor<2x7xf32>' does not match the state type 'tensor<2x4xf32>'}}
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<2x7xf32>) along 1 : tensor<2x7x4xf32>, tensor<2x7x4xf32>
  return
}

// -----

func.func @linear_scan_init_element_type_not_state(%a: tensor<2x7xf32>, %b: tensor<2x7xcomplex<f32>>, %h0: tensor<2xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op 'init' type 'tensor<2xf32>' does not match the state type 'tensor<2xcomplex<f32>>'}}
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<2xf32>) along 1 : tensor<2x7xf32>, tensor<2x7xcomplex<f32>>
  return
}

// -----

func.func @linear_scan_integer_operand(%a: tensor<2x7xi32>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op operand #0 must be ranked tensor of floating-point or complex type with floating-point elements values, but got 'tensor<2x7xi32>'}}
  %r:2 = "recur.linear_scan"(%a, %b) <{axis = 1 : i64}> : (tensor<2x7xi32>, tensor<2x7xf32>) -> (tensor<2x7xf32>, tensor<2xf32>)
  return
}

// -----

func.func @linear_scan_missing_axis(%a: tensor<2x7xf32>, %b: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.linear_scan' op requires attribute 'axis'}}
  %r:2 = "recur.linear_scan"(%a, %b) : (tensor<2x7xf32>, tensor<2x7xf32>) -> (tensor<2x7xf32>, tensor<2xf32>)
  return
}

// -----

func.func @linear_scan_result_type_not_inferred(%a: tensor<2x7xf32>, %b: tensor<2x7xf32>) {
  // expected-error @+2 {{'recur.linear_scan' op inferred type(s) 'tensor<2x7xf32>', 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2x7xf32>', 'tensor<7xf32>'}}
  // expected-error @+1 {{'recur.linear_scan' op failed to infer returned types}}
  %r:2 = "recur.linear_scan"(%a, %b) <{axis = 1 : i64}> : (tensor<2x7xf32>, tensor<2x7xf32>) -> (tensor<2x7xf32>, tensor<7xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.scan and its recur.yield
//===----------------------------------------------------------------------===//

func.func @scan_no_input() {
  // expected-error @+1 {{'recur.scan' op expects at least one input}}
  "recur.scan"() <{axis = 0 : i64, operandSegmentSizes = array<i32: 0, 0>}> ({
  ^bb0:
    recur.yield
  }) : () -> ()
  return
}

// -----

func.func @scan_axis_out_of_range(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op 'axis' 2 is out of range for inputs of rank 2}}
  %r = recur.scan (%x) along 2 : tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    recur.yield %p : f32
  }
  return
}

// -----

func.func @scan_axis_negative(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op 'axis' -1 is out of range for inputs of rank 2}}
  %r = recur.scan (%x) along -1 : tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    recur.yield %p : f32
  }
  return
}

// -----

func.func @scan_input_shape_not_first(%x: tensor<4x16xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.scan' op input #1 shape 4x8 does not match input #0 shape 4x16}}
  %r:2 = recur.scan (%x, %y) along 1 : tensor<4x16xf32>, tensor<4x8xf32> {
  ^bb0(%p: f32, %pp: f32, %q: f32, %qq: f32):
    recur.yield %p, %pp : f32, f32
  }
  return
}

// -----

func.func @scan_init_count_not_input_count(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'recur.scan' op expects no 'init' operands or one per input (2), got 1}}
  %r:2 = recur.scan (%x, %y) init(%c : tensor<4xf32>) along 1 : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p: f32, %pp: f32, %q: f32, %qq: f32):
    recur.yield %p, %pp : f32, f32
  }
  return
}

// -----

func.func @scan_init_type_not_carry(%x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{'recur.scan' op 'init' #0 type 'tensor<16xf32>' does not match the carry type 'tensor<4xf32>'}}
  %r = recur.scan (%x) init(%c : tensor<16xf32>) along 1 : tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    recur.yield %p : f32
  }
  return
}

// -----

func.func @scan_init_element_type_not_carry(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %c: tensor<4xf32>, %d: tensor<4xf64>) {
  // expected-error @+1 {{'recur.scan' op 'init' #1 type 'tensor<4xf64>' does not match the carry type 'tensor<4xf32>'}}
  %r:2 = recur.scan (%x, %y) init(%c, %d : tensor<4xf32>, tensor<4xf64>) along 1 : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p: f32, %pp: f32, %q: f32, %qq: f32):
    recur.yield %p, %pp : f32, f32
  }
  return
}

// -----

func.func @scan_identity_count_not_input_count(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op 'identity' must hold one element per input (2), got 1}}
  %r:2 = recur.scan (%x, %y) along 1 {identity = [0.0 : f32]} : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p: f32, %pp: f32, %q: f32, %qq: f32):
    recur.yield %p, %pp : f32, f32
  }
  return
}

// -----

func.func @scan_identity_element_wrong_type(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op 'identity' element #1 must be a constant of type 'f32'}}
  %r:2 = recur.scan (%x, %y) along 1 {identity = [0.0 : f32, 1.0 : f64]} : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p: f32, %pp: f32, %q: f32, %qq: f32):
    recur.yield %p, %pp : f32, f32
  }
  return
}

// -----

func.func @scan_identity_element_not_typed(%x: tensor<4x16xcomplex<f32>>) {
  // expected-error @+1 {{'recur.scan' op 'identity' element #0 must be a constant of type 'complex<f32>'}}
  %r = recur.scan (%x) along 1 {identity = [[0.0 : f32, 0.0 : f32]]} : tensor<4x16xcomplex<f32>> {
  ^bb0(%p: complex<f32>, %q: complex<f32>):
    recur.yield %p : complex<f32>
  }
  return
}

// -----

func.func @scan_identity_not_array(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op attribute 'identity' failed to satisfy constraint: array attribute}}
  %r = recur.scan (%x) along 1 {identity = 0.0 : f32} : tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    recur.yield %p : f32
  }
  return
}

// -----

func.func @scan_combine_argument_count(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op combine region must take 2 scalar arguments (earlier then later elements), got 1}}
  %r = recur.scan (%x) along 1 : tensor<4x16xf32> {
  ^bb0(%p: f32):
    recur.yield %p : f32
  }
  return
}

// -----

func.func @scan_combine_argument_type(%x: tensor<4x16xf32>, %y: tensor<4x16xf64>) {
  // expected-error @+1 {{'recur.scan' op combine region argument #3 has type 'f32', expected 'f64'}}
  %r:2 = recur.scan (%x, %y) along 1 : tensor<4x16xf32>, tensor<4x16xf64> {
  ^bb0(%p: f32, %pp: f64, %q: f32, %qq: f32):
    recur.yield %p, %pp : f32, f64
  }
  return
}

// -----

// The combine region takes scalars, not tensors.
func.func @scan_combine_argument_tensor(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op combine region argument #0 has type 'tensor<f32>', expected 'f32'}}
  %r = recur.scan (%x) along 1 : tensor<4x16xf32> {
  ^bb0(%p: tensor<f32>, %q: f32):
    recur.yield %q : f32
  }
  return
}

// -----

func.func @scan_combine_not_ended_by_yield(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op combine region must end with 'recur.yield', got 'llvm.unreachable'}}
  %r = recur.scan (%x) along 1 : tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    llvm.unreachable
  }
  return
}

// -----

func.func @scan_combine_yield_count(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op combine region must yield 2 values, got 1}}
  %r:2 = recur.scan (%x, %y) along 1 : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p: f32, %pp: f32, %q: f32, %qq: f32):
    recur.yield %p : f32
  }
  return
}

// -----

func.func @scan_combine_yield_type(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op combine region yield #0 has type 'f64', expected 'f32'}}
  %r = recur.scan (%x) along 1 : tensor<4x16xf32> {
  ^bb0(%p: f32, %q: f32):
    %e = arith.extf %p : f32 to f64
    recur.yield %e : f64
  }
  return
}

// -----

func.func @scan_combine_two_blocks(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'recur.scan' op region #0 ('combine') failed to verify constraint: region with 1 blocks}}
  %r = "recur.scan"(%x) <{axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%p: f32, %q: f32):
    cf.br ^bb1
  ^bb1:
    recur.yield %p : f32
  }) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @scan_result_type_not_inferred(%x: tensor<4x16xf32>) {
  // expected-error @+2 {{'recur.scan' op inferred type(s) 'tensor<4x16xf32>' are incompatible with return type(s) of operation 'tensor<4x16xf64>'}}
  // expected-error @+1 {{'recur.scan' op failed to infer returned types}}
  %r = "recur.scan"(%x) <{axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%p: f32, %q: f32):
    recur.yield %p : f32
  }) : (tensor<4x16xf32>) -> tensor<4x16xf64>
  return
}

// -----

func.func @yield_outside_recur_region(%x: f32) {
  // expected-error @+1 {{'recur.yield' op expects parent op to be one of 'recur.scan, recur.block_recurrence, recur.depth_loop'}}
  recur.yield %x : f32
}

// -----

//===----------------------------------------------------------------------===//
// recur.gated_linear_attention
//===----------------------------------------------------------------------===//

func.func @gla_q_rank_below_2(%q: tensor<16xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+1 {{'q' and 'v' must have rank >= 2 ([..., T, d])}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q : tensor<16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf32>
  return
}

// -----

func.func @gla_v_rank_below_2(%q: tensor<16x8xf32>, %v: tensor<16xf32>) {
  // expected-error @+1 {{'q' and 'v' must have rank >= 2 ([..., T, d])}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16x8xf32>
  return
}

// -----

// In generic form the verifier runs first and the rank is caught when the
// result types are inferred.
func.func @gla_rank_below_2_generic(%x: tensor<16xf32>) {
  // expected-error @+2 {{'q' and 'v' must have rank >= 2 ([..., T, d])}}
  // expected-error @+1 {{'recur.gated_linear_attention' op failed to infer returned types}}
  %r:2 = "recur.gated_linear_attention"(%x, %x, %x, %x) : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16x16xf32>)
  return
}

// -----

func.func @gla_q_shape_not_k(%q: tensor<2x16x8xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'q' shape 2x16x8 does not match 'k' shape 2x16x4}}
  %y, %s = recur.gated_linear_attention %q, %k, %v, %k : tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>
  return
}

// -----

func.func @gla_a_shape_not_k(%q: tensor<2x16x8xf32>, %v: tensor<2x16x4xf32>, %a: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'a' shape 2x16 does not match 'k' shape 2x16x8}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %a : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16xf32>
  return
}

// -----

func.func @gla_v_time_not_k(%q: tensor<2x16x8xf32>, %v: tensor<2x12x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'v' shape 2x12x4 must match 'k' shape 2x16x8 in all but the last dimension}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x12x4xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @gla_v_rank_not_k(%q: tensor<2x16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'v' shape 16x4 must match 'k' shape 2x16x8 in all but the last dimension}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<16x4xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @gla_qkv_element_types_differ(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x4xf16>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'q', 'k' and 'v' must share one element type, got 'f32', 'f32', 'f16'}}
  %y, %s = recur.gated_linear_attention %q, %k, %v, %q : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf16>, tensor<16x8xf32>
  return
}

// -----

func.func @gla_a_element_type_not_q(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>, %a: tensor<16x8xf64>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op element type of 'a' ('f64') must be that of 'q' ('f32') or complex of it}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %a : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf64>
  return
}

// -----

func.func @gla_a_complex_of_other_type(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>, %a: tensor<16x8xcomplex<f64>>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op element type of 'a' ('complex<f64>') must be that of 'q' ('f32') or complex of it}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %a : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xcomplex<f64>>
  return
}

// -----

func.func @gla_q_complex(%q: tensor<16x8xcomplex<f32>>, %v: tensor<16x4xf32>, %a: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<16x8xcomplex<f32>>'}}
  %r:2 = "recur.gated_linear_attention"(%q, %q, %v, %a) : (tensor<16x8xcomplex<f32>>, tensor<16x8xcomplex<f32>>, tensor<16x4xf32>, tensor<16x8xf32>) -> (tensor<16x4xf32>, tensor<8x4xf32>)
  return
}

// -----

func.func @gla_init_shape_not_state(%q: tensor<2x16x8xf32>, %v: tensor<2x16x4xf32>, %s0: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'init' type 'tensor<2x4x8xf32>' does not match the state type 'tensor<2x8x4xf32>'}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q init(%s0 : tensor<2x4x8xf32>) : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x8xf32>
  return
}

// -----

// With complex decays the state, and so 'init', is complex.
func.func @gla_init_real_for_complex_state(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>, %a: tensor<16x8xcomplex<f32>>, %s0: tensor<8x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'init' type 'tensor<8x4xf32>' does not match the state type 'tensor<8x4xcomplex<f32>>'}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %a init(%s0 : tensor<8x4xf32>) : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xcomplex<f32>>
  return
}

// -----

// gated_linear_attention_grad: the forward's operands and the state type.
func.func @gla_grad_shapes(%q: tensor<16x8xf32>, %a: tensor<15x8xf32>, %v: tensor<16x4xf32>, %ds: tensor<8x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention_grad' op 'q', 'k' and 'a' must share one shape [..., T, dk]}}
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %q, %v, %a, %v, %ds chunk 64 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<15x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @gla_grad_state_type(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>, %ds: tensor<8x5xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention_grad' op 'dstate' (and 'init') must have the state type (8x4 of 'f32'), got 'tensor<8x5xf32>'}}
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %q, %v, %q, %v, %ds chunk 64 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>, tensor<8x5xf32>
  return
}

// -----

func.func @gla_grad_chunk_size(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>, %ds: tensor<8x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention_grad' op 'chunk_size' must be positive, got 0}}
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %q, %v, %q, %v, %ds chunk 0 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @gla_chunk_size_zero(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'chunk_size' must be positive, got 0}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q {algorithm = #recur.algorithm<chunked>, chunk_size = 0 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @gla_chunk_size_negative(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'chunk_size' must be positive, got -16}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q {chunk_size = -16 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @gla_chunk_size_with_recurrent(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+1 {{'recur.gated_linear_attention' op 'chunk_size' has no meaning for the recurrent algorithm}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q {algorithm = #recur.algorithm<recurrent>, chunk_size = 16 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @gla_unknown_algorithm(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+2 {{expected ::mlir::recur::ScanAlgorithm to be one of: auto, recurrent, chunked}}
  // expected-error @+1 {{failed to parse Recur_ScanAlgorithmAttr parameter 'value' which is to be a `::mlir::recur::ScanAlgorithm`}}
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q {algorithm = #recur.algorithm<parallel>} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @gla_result_type_not_inferred(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+2 {{'recur.gated_linear_attention' op inferred type(s) 'tensor<16x4xf32>', 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<16x4xf32>', 'tensor<4x8xf32>'}}
  // expected-error @+1 {{'recur.gated_linear_attention' op failed to infer returned types}}
  %r:2 = "recur.gated_linear_attention"(%q, %q, %v, %q) : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x8xf32>) -> (tensor<16x4xf32>, tensor<4x8xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.gate
//===----------------------------------------------------------------------===//

func.func @gate_fixed_two_gate_operands(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op 'fixed' gate expects 1 gate operand, got 2}}
  %r = recur.gate <fixed> %c, %c, gates(%g, %g : tensor<8xf32>, tensor<8xf32>) : tensor<4x8xf32>
  return
}

// -----

func.func @gate_lstm_one_gate_operand(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op 'lstm' gate expects 2 gate operands, got 1}}
  %r = recur.gate <lstm> %c, %c, gates(%g : tensor<8xf32>) : tensor<4x8xf32>
  return
}

// -----

func.func @gate_update_no_gate_operand(%c: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.gate' op 'update' gate expects 1 gate operand, got 0}}
  %r = "recur.gate"(%c, %c) <{kind = #recur.gate_kind<update>}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gate_fixed_input_bias(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op 'input_bias' and 'forget_bias' apply only to the lstm gate}}
  %r = recur.gate <fixed> %c, %c, gates(%g : tensor<8xf32>) {input_bias = 0.0 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @gate_update_forget_bias(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op 'input_bias' and 'forget_bias' apply only to the lstm gate}}
  %r = recur.gate <update> %c, %c, gates(%g : tensor<8xf32>) {forget_bias = 1.0 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @gate_bias_not_f64(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op attribute 'forget_bias' failed to satisfy constraint: 64-bit float attribute}}
  %r = recur.gate <lstm> %c, %c, gates(%g, %g : tensor<8xf32>, tensor<8xf32>) {forget_bias = 1.0 : f32} : tensor<4x8xf32>
  return
}

// -----

func.func @gate_operand_element_type_not_state(%c: tensor<4x8xf32>, %i: tensor<8xf32>, %f: tensor<8xf16>) {
  // expected-error @+1 {{'recur.gate' op gate operand #1 element type 'f16' does not match the state's 'f32'}}
  %r = recur.gate <lstm> %c, %c, gates(%i, %f : tensor<8xf32>, tensor<8xf16>) : tensor<4x8xf32>
  return
}

// -----

func.func @gate_operand_does_not_broadcast(%c: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'recur.gate' op gate operand #0 shape 4 does not broadcast to the state shape 4x8}}
  %r = recur.gate <fixed> %c, %c, gates(%g : tensor<4xf32>) : tensor<4x8xf32>
  return
}

// -----

func.func @gate_operand_rank_above_state(%c: tensor<4x8xf32>, %g: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'recur.gate' op gate operand #0 shape 1x4x8 does not broadcast to the state shape 4x8}}
  %r = recur.gate <update> %c, %c, gates(%g : tensor<1x4x8xf32>) : tensor<4x8xf32>
  return
}

// -----

func.func @gate_candidate_type_not_state(%c: tensor<4x8xf32>, %z: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op failed to verify that all of {state, candidate, result} have same type}}
  %r = "recur.gate"(%c, %z, %g) <{kind = #recur.gate_kind<fixed>}> : (tensor<4x8xf32>, tensor<4x8xf16>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gate_result_type_not_state(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op failed to verify that all of {state, candidate, result} have same type}}
  %r = "recur.gate"(%c, %c, %g) <{kind = #recur.gate_kind<fixed>}> : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @gate_missing_kind(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'recur.gate' op requires attribute 'kind'}}
  %r = "recur.gate"(%c, %c, %g) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gate_unknown_kind(%c: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{expected ::mlir::recur::GateKind to be one of: fixed, lstm, update}}
  // expected-error @+1 {{failed to parse Recur_GateKindAttr parameter 'value' which is to be a `::mlir::recur::GateKind`}}
  %r = recur.gate <gru> %c, %c, gates(%g : tensor<8xf32>) : tensor<4x8xf32>
  return
}

// -----

func.func @gate_integer_state(%c: tensor<4x8xi32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{'recur.gate' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<4x8xi32>'}}
  %r = recur.gate <fixed> %c, %c, gates(%g : tensor<8xi32>) : tensor<4x8xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.window_attention
//===----------------------------------------------------------------------===//

func.func @window_attention_qkv_rank_below_2(%q: tensor<16xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'q', 'k' and 'v' must have one rank, at least 2}}
  %o = recur.window_attention %q, %q, %q window 4 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @window_attention_qkv_ranks_differ(%q: tensor<2x16x8xf32>, %k: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'q', 'k' and 'v' must have one rank, at least 2}}
  %o = recur.window_attention %q, %k, %q window 4 : tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_k_head_dim_not_q(%q: tensor<16x8xf32>, %k: tensor<16x4xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k' shape 16x4 must match 'q' shape 16x8 in all but the time dimension}}
  %o = recur.window_attention %q, %k, %k window 4 : tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>
  return
}

// -----

func.func @window_attention_v_time_not_k(%q: tensor<16x8xf32>, %v: tensor<12x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'v' shape 12x8 must match 'k' shape 16x8 in all but the last dimension}}
  %o = recur.window_attention %q, %q, %v window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<12x8xf32>
  return
}

// -----

func.func @window_attention_qkv_element_types_differ(%q: tensor<16x8xf32>, %k: tensor<16x8xf16>) {
  // expected-error @+1 {{'recur.window_attention' op 'q', 'k' and 'v' must share one element type}}
  %o = recur.window_attention %q, %k, %q window 4 : tensor<16x8xf32>, tensor<16x8xf16>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_k_time_not_q(%q: tensor<16x8xf32>, %k: tensor<24x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k' must cover the same 16 positions as 'q'; earlier keys go in the cache}}
  %o = recur.window_attention %q, %k, %k window 4 : tensor<16x8xf32>, tensor<24x8xf32>, tensor<24x8xf32>
  return
}

// -----

func.func @window_attention_window_zero(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'window' must be at least 1, got 0}}
  %o = recur.window_attention %q, %q, %q window 0 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_block_negative(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'block' must be non-negative, got -4}}
  %o = recur.window_attention %q, %q, %q window 8 {block = -4 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_window_not_multiple_of_block(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'window' (12) must be a multiple of 'block' (8)}}
  %o = recur.window_attention %q, %q, %q window 12 {block = 8 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_scale_zero(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'scale' must be positive and finite, got 0}}
  %o = recur.window_attention %q, %q, %q window 4 {scale = 0.0 : f64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_bias_without_kind(%q: tensor<2x16x8xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'recur.window_attention' op a 'bias' operand needs 'bias_kind' t5 or alibi}}
  %o = recur.window_attention %q, %q, %q bias(%s : tensor<2xf32>) window 4 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_t5_without_bias(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'bias_kind' t5 needs a 'bias' operand}}
  %o = recur.window_attention %q, %q, %q window 4 {bias_kind = #recur.bias<t5>} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_alibi_without_bias(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'bias_kind' alibi needs a 'bias' operand}}
  %o = recur.window_attention %q, %q, %q window 4 {bias_kind = #recur.bias<alibi>} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_num_buckets_with_alibi(%q: tensor<2x16x8xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'num_buckets' and 'max_distance' apply only to the t5 bias}}
  %o = recur.window_attention %q, %q, %q bias(%s : tensor<2xf32>) window 4 {bias_kind = #recur.bias<alibi>, num_buckets = 32 : i64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_max_distance_without_bias(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'num_buckets' and 'max_distance' apply only to the t5 bias}}
  %o = recur.window_attention %q, %q, %q window 4 {max_distance = 128 : i64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_bias_without_heads(%q: tensor<16x8xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'recur.window_attention' op a position bias needs a heads dimension: 'q' must have rank >= 3}}
  %o = recur.window_attention %q, %q, %q bias(%s : tensor<1xf32>) window 4 {bias_kind = #recur.bias<alibi>} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_bias_element_type_not_q(%q: tensor<2x16x8xf32>, %t5: tensor<2x32xf16>) {
  // expected-error @+1 {{'recur.window_attention' op 'bias' element type 'f16' does not match 'q' ('f32')}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x32xf16>) window 4 {bias_kind = #recur.bias<t5>} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_num_buckets_odd(%q: tensor<2x16x8xf32>, %t5: tensor<2x7xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'num_buckets' must be even and at least 2, got 7}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x7xf32>) window 4 {bias_kind = #recur.bias<t5>, num_buckets = 7 : i64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_num_buckets_zero(%q: tensor<2x16x8xf32>, %t5: tensor<2x0xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'num_buckets' must be even and at least 2, got 0}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x0xf32>) window 4 {bias_kind = #recur.bias<t5>, num_buckets = 0 : i64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_max_distance_within_exact_buckets(%q: tensor<2x16x8xf32>, %t5: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'max_distance' (8) must exceed the 8 exact buckets}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x16xf32>) window 4 {bias_kind = #recur.bias<t5>, max_distance = 8 : i64, num_buckets = 16 : i64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

// The default 32 buckets have 16 exact ones.
func.func @window_attention_max_distance_within_default_buckets(%q: tensor<2x16x8xf32>, %t5: tensor<2x32xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'max_distance' (16) must exceed the 16 exact buckets}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x32xf32>) window 4 {bias_kind = #recur.bias<t5>, max_distance = 16 : i64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_t5_table_not_default_buckets(%q: tensor<2x16x8xf32>, %t5: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'bias' shape 2x16 does not match [heads, num_buckets] = 2x32}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x16xf32>) window 4 {bias_kind = #recur.bias<t5>} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @window_attention_t5_table_heads(%q: tensor<2x4x16x8xf32>, %t5: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'bias' shape 2x16 does not match [heads, num_buckets] = 4x16}}
  %o = recur.window_attention %q, %q, %q bias(%t5 : tensor<2x16xf32>) window 4 {bias_kind = #recur.bias<t5>, num_buckets = 16 : i64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @window_attention_alibi_slopes_shape(%q: tensor<2x4x16x8xf32>, %s: tensor<4x1xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'bias' shape 4x1 does not match [heads] = 4}}
  %o = recur.window_attention %q, %q, %q bias(%s : tensor<4x1xf32>) window 4 {bias_kind = #recur.bias<alibi>} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @window_attention_k_cache_without_v_cache(%q: tensor<16x8xf32>, %kc: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k_cache' and 'v_cache' must be given together}}
  %o = "recur.window_attention"(%q, %q, %q, %kc) <{window = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0>}> : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_v_cache_without_k_cache(%q: tensor<16x8xf32>, %vc: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k_cache' and 'v_cache' must be given together}}
  %o = "recur.window_attention"(%q, %q, %q, %vc) <{window = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>}> : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_k_cache_head_dim_not_k(%q: tensor<16x8xf32>, %kc: tensor<4x6xf32>, %vc: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k_cache' shape 4x6 must match 'k' shape 16x8 in all but the time dimension}}
  %o = recur.window_attention %q, %q, %q cache(%kc, %vc : tensor<4x6xf32>, tensor<4x8xf32>) window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_k_cache_rank_not_k(%q: tensor<16x8xf32>, %kc: tensor<1x4x8xf32>, %vc: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k_cache' shape 1x4x8 must match 'k' shape 16x8 in all but the time dimension}}
  %o = recur.window_attention %q, %q, %q cache(%kc, %vc : tensor<1x4x8xf32>, tensor<4x8xf32>) window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_v_cache_shape_not_v(%q: tensor<2x16x8xf32>, %v: tensor<2x16x4xf32>, %kc: tensor<2x4x8xf32>, %vc: tensor<3x4x4xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'v_cache' shape 3x4x4 must match 'v' shape 2x16x4 in all but the time dimension}}
  %o = recur.window_attention %q, %q, %v cache(%kc, %vc : tensor<2x4x8xf32>, tensor<3x4x4xf32>) window 4 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x4xf32>
  return
}

// -----

func.func @window_attention_cache_lengths_differ(%q: tensor<16x8xf32>, %kc: tensor<4x8xf32>, %vc: tensor<6x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op 'k_cache' and 'v_cache' must hold the same number of positions}}
  %o = recur.window_attention %q, %q, %q cache(%kc, %vc : tensor<4x8xf32>, tensor<6x8xf32>) window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_cache_element_type_not_q(%q: tensor<16x8xf32>, %kc: tensor<4x8xf32>, %vc: tensor<4x8xf64>) {
  // expected-error @+1 {{'recur.window_attention' op the cache must have the element type of 'q' ('f32')}}
  %o = recur.window_attention %q, %q, %q cache(%kc, %vc : tensor<4x8xf32>, tensor<4x8xf64>) window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_result_type_not_v(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op failed to verify that all of {v, result} have same type}}
  %o = "recur.window_attention"(%q, %q, %q) <{window = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @window_attention_missing_window(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention' op requires attribute 'window'}}
  %o = "recur.window_attention"(%q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_unknown_bias_kind(%q: tensor<2x16x8xf32>, %s: tensor<2xf32>) {
  // expected-error @+2 {{expected ::mlir::recur::BiasKind to be one of: none, t5, alibi}}
  // expected-error @+1 {{failed to parse Recur_BiasKindAttr parameter 'value' which is to be a `::mlir::recur::BiasKind`}}
  %o = recur.window_attention %q, %q, %q bias(%s : tensor<2xf32>) window 4 {bias_kind = #recur.bias<rope>} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

// recur.window_attention_grad: the forward's checks, then one cotangent per
// operand, each of its operand's type.

func.func @window_attention_grad_forward_checked(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.window_attention_grad' op 'window' must be at least 1, got 0}}
  %dq, %dk, %dv = recur.window_attention_grad %q, %q, %q, %q window 0 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_grad_missing_cache_grads(%q: tensor<16x8xf32>, %kc: tensor<4x8xf32>) {
  // expected-error @+1 {{'recur.window_attention_grad' op expects 5 results (dq, dk, dv, then dbias with a bias and dk_cache, dv_cache with a cache), got 3}}
  %dq, %dk, %dv = recur.window_attention_grad %q, %q, %q, %q cache(%kc, %kc : tensor<4x8xf32>, tensor<4x8xf32>) window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @window_attention_grad_wrong_type(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+1 {{'recur.window_attention_grad' op result #2 must have the type of its operand ('tensor<16x4xf32>'), got 'tensor<16x8xf32>'}}
  %dq, %dk, %dv = recur.window_attention_grad %q, %q, %v, %v window 4 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32> -> tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.attention
//===----------------------------------------------------------------------===//

func.func @attention_q_rank_below_2(%q: tensor<8xf32>, %k: tensor<16x8xf32>) {
  // expected-error @+1 {{'q' and 'v' must have rank >= 2 ([..., T, d])}}
  %o = recur.attention %q, %k, %k : tensor<8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

// In generic form the shared layout check comes first.
func.func @attention_qkv_rank_below_2_generic(%q: tensor<8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'q', 'k' and 'v' must have one rank, at least 2}}
  %o = "recur.attention"(%q, %q, %q) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @attention_k_rank_not_q(%q: tensor<2x16x8xf32>, %k: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'q', 'k' and 'v' must have one rank, at least 2}}
  %o = recur.attention %q, %k, %q : tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @attention_k_batch_not_q(%q: tensor<2x16x8xf32>, %k: tensor<3x16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'k' shape 3x16x8 must match 'q' shape 2x16x8 in all but the time dimension}}
  %o = recur.attention %q, %k, %k : tensor<2x16x8xf32>, tensor<3x16x8xf32>, tensor<3x16x8xf32>
  return
}

// -----

func.func @attention_v_time_not_k(%q: tensor<16x8xf32>, %k: tensor<20x8xf32>, %v: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'v' shape 16x8 must match 'k' shape 20x8 in all but the last dimension}}
  %o = recur.attention %q, %k, %v : tensor<16x8xf32>, tensor<20x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_qkv_element_types_differ(%q: tensor<16x8xf32>, %v: tensor<16x8xbf16>) {
  // expected-error @+1 {{'recur.attention' op 'q', 'k' and 'v' must share one element type}}
  %o = recur.attention %q, %q, %v : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xbf16>
  return
}

// -----

func.func @attention_scale_negative(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'scale' must be positive and finite, got -1}}
  %o = recur.attention %q, %q, %q {scale = -1.0 : f64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_memory_slots_without_memory_mask(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'memory_slots' applies only to the memory mask}}
  %o = recur.attention %q, %q, %q {mask = #recur.mask<causal>, memory_slots = 4 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_causal_fewer_keys_than_queries(%q: tensor<16x8xf32>, %k: tensor<12x8xf32>) {
  // expected-error @+1 {{'recur.attention' op causal mask needs at least as many keys as queries, got 12 keys for 16 queries}}
  %o = recur.attention %q, %k, %k {mask = #recur.mask<causal>} : tensor<16x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>
  return
}

// -----

func.func @attention_memory_mask_without_slots(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op memory mask needs 'memory_slots'}}
  %o = recur.attention %q, %q, %q {mask = #recur.mask<memory>} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_memory_mask_queries_not_keys(%q: tensor<16x8xf32>, %k: tensor<20x8xf32>) {
  // expected-error @+1 {{'recur.attention' op memory mask needs as many queries as keys, got 16 queries and 20 keys}}
  %o = recur.attention %q, %k, %k {mask = #recur.mask<memory>, memory_slots = 4 : i64} : tensor<16x8xf32>, tensor<20x8xf32>, tensor<20x8xf32>
  return
}

// -----

func.func @attention_memory_slots_zero(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'memory_slots' (0) must be in [1, 16]}}
  %o = recur.attention %q, %q, %q {mask = #recur.mask<memory>, memory_slots = 0 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_memory_slots_above_length(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{'recur.attention' op 'memory_slots' (17) must be in [1, 16]}}
  %o = recur.attention %q, %q, %q {mask = #recur.mask<memory>, memory_slots = 17 : i64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_key_padding_shape(%q: tensor<2x16x8xf32>, %pad: tensor<2x8xi1>) {
  // expected-error @+1 {{'recur.attention' op 'key_padding' shape 2x8 does not match [..., Tk] = 2x16}}
  %o = recur.attention %q, %q, %q key_padding(%pad : tensor<2x8xi1>) : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @attention_key_padding_not_i1(%q: tensor<2x16x8xf32>, %pad: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.attention' op operand #3 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2x16xf32>'}}
  %o = "recur.attention"(%q, %q, %q, %pad) : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16xf32>) -> tensor<2x16x8xf32>
  return
}

// -----

func.func @attention_unknown_mask(%q: tensor<16x8xf32>) {
  // expected-error @+2 {{expected ::mlir::recur::MaskKind to be one of: none, causal, memory}}
  // expected-error @+1 {{failed to parse Recur_MaskKindAttr parameter 'value' which is to be a `::mlir::recur::MaskKind`}}
  %o = recur.attention %q, %q, %q {mask = #recur.mask<sliding>} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @attention_result_type_not_inferred(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+2 {{'recur.attention' op inferred type(s) 'tensor<16x4xf32>' are incompatible with return type(s) of operation 'tensor<16x8xf32>'}}
  // expected-error @+1 {{'recur.attention' op failed to infer returned types}}
  %o = "recur.attention"(%q, %q, %v) : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<16x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.rel_attention
//===----------------------------------------------------------------------===//

func.func @rel_attention_q_rank_below_3(%q: tensor<16x8xf32>, %r: tensor<16x8xf32>, %u: tensor<8xf32>) {
  // expected-error @+1 {{'q' and 'v' must have rank >= 3 ([..., H, T, d])}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %u : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rel_attention_v_rank_not_q(%q: tensor<2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'q', 'k' and 'v' must have one rank, at least 3}}
  %o = recur.rel_attention %q, %q, %v, %r, %u, %u : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_k_heads_not_q(%q: tensor<2x16x8xf32>, %k: tensor<4x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'k' shape 4x16x8 must match 'q' shape 2x16x8 in all but the time dimension}}
  %o = recur.rel_attention %q, %k, %k, %r, %u, %u : tensor<2x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_v_keys_not_k(%q: tensor<2x16x8xf32>, %k: tensor<2x24x8xf32>, %v: tensor<2x16x8xf32>, %r: tensor<2x24x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'v' shape 2x16x8 must match 'k' shape 2x24x8 in all but the last dimension}}
  %o = recur.rel_attention %q, %k, %v, %r, %u, %u : tensor<2x16x8xf32>, tensor<2x24x8xf32>, tensor<2x16x8xf32>, tensor<2x24x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_qkv_element_types_differ(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf64>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'q', 'k' and 'v' must share one element type}}
  %o = recur.rel_attention %q, %k, %k, %r, %u, %u : tensor<2x16x8xf32>, tensor<2x16x8xf64>, tensor<2x16x8xf64>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_scale_infinite(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'scale' must be positive and finite, got INF}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %u {scale = 0x7FF0000000000000 : f64} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_fewer_keys_than_segment(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %r: tensor<2x12x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op the 12 keys must cover the 16 segment positions (memory first)}}
  %o = recur.rel_attention %q, %k, %k, %r, %u, %u : tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_r_shape(%q: tensor<2x16x8xf32>, %k: tensor<2x24x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'r' shape 2x16x8 does not match [heads, keys, head_dim] = 2x24x8}}
  %o = recur.rel_attention %q, %k, %k, %r, %u, %u : tensor<2x16x8xf32>, tensor<2x24x8xf32>, tensor<2x24x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_r_element_type(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf16>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'r' must have the element type of 'q' ('f32')}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %u : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf16>, tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_u_shape(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<8xf32>, %pb: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'u' shape 8 does not match [heads, head_dim] = 2x8}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %pb : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_u_element_type(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf64>, %pb: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'u' must have the element type of 'q' ('f32')}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %pb : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf64>, tensor<2x8xf32>
  return
}

// -----

func.func @rel_attention_pos_bias_shape(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>, %pb: tensor<2x4xf32>) {
  // expected-error @+1 {{'recur.rel_attention' op 'pos_bias' shape 2x4 does not match [heads, head_dim] = 2x8}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %pb : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_pos_bias_element_type(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>, %pb: tensor<2x8xbf16>) {
  // expected-error @+1 {{'recur.rel_attention' op 'pos_bias' must have the element type of 'q' ('f32')}}
  %o = recur.rel_attention %q, %q, %q, %r, %u, %pb : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xbf16>
  return
}

// -----

func.func @rel_attention_result_type_not_inferred(%q: tensor<2x16x8xf32>, %r: tensor<2x16x8xf32>, %u: tensor<2x8xf32>) {
  // expected-error @+2 {{'recur.rel_attention' op inferred type(s) 'tensor<2x16x8xf32>' are incompatible with return type(s) of operation 'tensor<2x16x8xf64>'}}
  // expected-error @+1 {{'recur.rel_attention' op failed to infer returned types}}
  %o = "recur.rel_attention"(%q, %q, %q, %r, %u, %u) : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16x8xf64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.block_recurrence and its recur.yield
//===----------------------------------------------------------------------===//

func.func @block_recurrence_no_input(%c0: tensor<4xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op expects at least one input}}
  %c = "recur.block_recurrence"(%c0) <{axis = 0 : i64, block_size = 4 : i64, operandSegmentSizes = array<i32: 0, 1>}> ({
  ^bb0(%cb: tensor<4xf32>):
    recur.yield %cb : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @block_recurrence_block_size_zero(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op 'block_size' must be at least 1, got 0}}
  %y = recur.block_recurrence (%x : tensor<2x16xf32>) block 0 along 1 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x0xf32>):
    recur.yield %xb : tensor<2x0xf32>
  }
  return
}

// -----

func.func @block_recurrence_axis_out_of_range(%x: tensor<2x16xf32>, %y: tensor<2x16x4xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op 'axis' 2 is out of range for input #0 of rank 2}}
  %r = recur.block_recurrence (%x, %y : tensor<2x16xf32>, tensor<2x16x4xf32>) block 4 along 2 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x16xf32>, %yb: tensor<2x16x4xf32>):
    recur.yield %xb : tensor<2x16xf32>
  }
  return
}

// -----

func.func @block_recurrence_axis_negative(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op 'axis' -1 is out of range for input #0 of rank 2}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along -1 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x16xf32>):
    recur.yield %xb : tensor<2x16xf32>
  }
  return
}

// -----

func.func @block_recurrence_input_lengths_differ(%x: tensor<2x16xf32>, %m: tensor<2x?xi1>, %y: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op input #2 has 8 positions along 'axis', but the inputs before it have 16}}
  %r = recur.block_recurrence (%x, %m, %y : tensor<2x16xf32>, tensor<2x?xi1>, tensor<2x8xf32>) block 4 along 1 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x4xf32>, %mb: tensor<2x4xi1>, %yb: tensor<2x4xf32>):
    recur.yield %xb : tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_length_not_multiple_of_block(%x: tensor<2x18xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op sequence length 18 is not a multiple of 'block_size' (4)}}
  %r = recur.block_recurrence (%x : tensor<2x18xf32>) block 4 along 1 -> tensor<2x18xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    recur.yield %xb : tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_fewer_results_than_inits(%x: tensor<2x16xf32>, %c0: f32, %n0: index) {
  // expected-error @+1 {{'recur.block_recurrence' op expects at least 2 results (the final carried values), got 1}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) init(%c0, %n0 : f32, index) block 4 along 1 -> f32 {
  ^bb0(%xb: tensor<2x4xf32>, %cb: f32, %nb: index):
    recur.yield %cb, %nb : f32, index
  }
  return
}

// -----

func.func @block_recurrence_output_not_tensor(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op output #0 must be a tensor with the 16 input positions along 'axis', got 'f32'}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> f32 {
  ^bb0(%xb: tensor<2x4xf32>):
    %c = arith.constant 0.0 : f32
    recur.yield %c : f32
  }
  return
}

// -----

func.func @block_recurrence_output_rank_without_axis(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op output #0 must be a tensor with the 16 input positions along 'axis', got 'tensor<2xf32>'}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> tensor<2xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    %e = tensor.empty() : tensor<2xf32>
    recur.yield %e : tensor<2xf32>
  }
  return
}

// -----

func.func @block_recurrence_output_length_not_input(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op output #1 must be a tensor with the 16 input positions along 'axis', got 'tensor<2x12xf32>'}}
  %r:2 = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> tensor<2x16xf32>, tensor<2x12xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    recur.yield %xb, %xb : tensor<2x4xf32>, tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_output_unranked(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op output #0 must be a tensor with the 16 input positions along 'axis', got 'tensor<*xf32>'}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> tensor<*xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    %u = tensor.cast %xb : tensor<2x4xf32> to tensor<*xf32>
    recur.yield %u : tensor<*xf32>
  }
  return
}

// -----

func.func @block_recurrence_final_state_type_not_init(%x: tensor<2x16xf32>, %c0: tensor<2x4xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op final state #0 has type 'tensor<2x4xf64>', but its 'init' has type 'tensor<2x4xf32>'}}
  %r:2 = recur.block_recurrence (%x : tensor<2x16xf32>) init(%c0 : tensor<2x4xf32>) block 4 along 1 -> tensor<2x16xf32>, tensor<2x4xf64> {
  ^bb0(%xb: tensor<2x4xf32>, %cb: tensor<2x4xf32>):
    recur.yield %xb, %cb : tensor<2x4xf32>, tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_input_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op operand #0 must be variadic of ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %r = recur.block_recurrence (%x : tensor<*xf32>) block 4 along 1 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    recur.yield %xb : tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_body_argument_count(%x: tensor<2x16xf32>, %c0: f32) {
  // expected-error @+1 {{'recur.block_recurrence' op body must take 2 arguments (one block of each input, then the carried values), got 1}}
  %r:2 = recur.block_recurrence (%x : tensor<2x16xf32>) init(%c0 : f32) block 4 along 1 -> tensor<2x16xf32>, f32 {
  ^bb0(%xb: tensor<2x4xf32>):
    recur.yield %xb, %c0 : tensor<2x4xf32>, f32
  }
  return
}

// -----

func.func @block_recurrence_body_argument_not_block(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op body argument #0 has type 'tensor<2x16xf32>', expected 'tensor<2x4xf32>'}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x16xf32>):
    %e = tensor.empty() : tensor<2x4xf32>
    recur.yield %e : tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_body_carried_argument_type(%x: tensor<2x16xf32>, %c0: f32) {
  // expected-error @+1 {{'recur.block_recurrence' op body argument #1 has type 'f64', expected 'f32'}}
  %r:2 = recur.block_recurrence (%x : tensor<2x16xf32>) init(%c0 : f32) block 4 along 1 -> tensor<2x16xf32>, f32 {
  ^bb0(%xb: tensor<2x4xf32>, %cb: f64):
    recur.yield %xb, %c0 : tensor<2x4xf32>, f32
  }
  return
}

// -----

func.func @block_recurrence_body_not_ended_by_yield(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op body must end with 'recur.yield', got 'llvm.unreachable'}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> tensor<2x16xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    llvm.unreachable
  }
  return
}

// -----

func.func @block_recurrence_body_yield_count(%x: tensor<2x16xf32>, %c0: f32) {
  // expected-error @+1 {{'recur.block_recurrence' op body must yield 2 values (one block of each output, then the carried values), got 1}}
  %r:2 = recur.block_recurrence (%x : tensor<2x16xf32>) init(%c0 : f32) block 4 along 1 -> tensor<2x16xf32>, f32 {
  ^bb0(%xb: tensor<2x4xf32>, %cb: f32):
    recur.yield %xb : tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_body_yield_not_output_block(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op body yield #0 has type 'tensor<2x4xf32>', expected 'tensor<2x4xf64>'}}
  %r = recur.block_recurrence (%x : tensor<2x16xf32>) block 4 along 1 -> tensor<2x16xf64> {
  ^bb0(%xb: tensor<2x4xf32>):
    recur.yield %xb : tensor<2x4xf32>
  }
  return
}

// -----

func.func @block_recurrence_body_yield_carried_type(%x: tensor<2x16xf32>, %n0: index) {
  // expected-error @+1 {{'recur.block_recurrence' op body yield #1 has type 'i64', expected 'index'}}
  %r:2 = recur.block_recurrence (%x : tensor<2x16xf32>) init(%n0 : index) block 4 along 1 -> tensor<2x16xf32>, index {
  ^bb0(%xb: tensor<2x4xf32>, %nb: index):
    %i = arith.index_cast %nb : index to i64
    recur.yield %xb, %i : tensor<2x4xf32>, i64
  }
  return
}

// -----

func.func @block_recurrence_missing_block_size(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'recur.block_recurrence' op requires attribute 'block_size'}}
  %r = "recur.block_recurrence"(%x) <{axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%xb: tensor<2x4xf32>):
    recur.yield %xb : tensor<2x4xf32>
  }) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.memory_update and recur.stop_gradient
//===----------------------------------------------------------------------===//

func.func @memory_update_axis_out_of_range(%m: tensor<2x8xf32>, %n: tensor<2x4xf32>) {
  // expected-error @+1 {{'axis' 2 is out of range for 'memory' of rank 2}}
  %r = recur.memory_update %m, %n along 2 keep 4 : tensor<2x8xf32>, tensor<2x4xf32>
  return
}

// -----

// In generic form the verifier runs before the result types are inferred and
// checks the axis itself.
func.func @memory_update_axis_out_of_range_generic(%m: tensor<2x8xf32>, %n: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.memory_update' op 'axis' 5 is out of range for 'memory' of rank 2}}
  %r = "recur.memory_update"(%m, %n) <{axis = 5 : i64, size = 2 : i64}> : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @memory_update_axis_negative_generic(%m: tensor<2x8xf32>, %n: tensor<2x4xf32>) {
  // expected-error @+1 {{'recur.memory_update' op 'axis' -1 is out of range for 'memory' of rank 2}}
  %r = "recur.memory_update"(%m, %n) <{axis = -1 : i64, size = 2 : i64}> : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @memory_update_size_negative(%m: tensor<2x8xf32>, %n: tensor<2x4xf32>) {
  // expected-error @+1 {{'size' must be non-negative, got -1}}
  %r = recur.memory_update %m, %n along 1 keep -1 : tensor<2x8xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @memory_update_size_negative_generic(%m: tensor<2x8xf32>, %n: tensor<2x4xf32>) {
  // expected-error @+2 {{'size' must be non-negative, got -3}}
  // expected-error @+1 {{'recur.memory_update' op failed to infer returned types}}
  %r = "recur.memory_update"(%m, %n) <{axis = 1 : i64, size = -3 : i64}> : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @memory_update_new_states_shape(%m: tensor<2x8xf32>, %n: tensor<3x4xf32>) {
  // expected-error @+1 {{'recur.memory_update' op 'new_states' shape 3x4 must match 'memory' shape 2x8 in all but dimension 1}}
  %r = recur.memory_update %m, %n along 1 keep 4 : tensor<2x8xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @memory_update_new_states_rank(%m: tensor<2x8xf32>, %n: tensor<4xf32>) {
  // expected-error @+1 {{'recur.memory_update' op 'new_states' shape 4 must match 'memory' shape 2x8 in all but dimension 1}}
  %r = recur.memory_update %m, %n along 1 keep 4 : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @memory_update_new_states_element_type(%m: tensor<2x8xf32>, %n: tensor<2x4xf16>) {
  // expected-error @+1 {{'recur.memory_update' op 'new_states' element type 'f16' does not match 'memory' ('f32')}}
  %r = recur.memory_update %m, %n along 1 keep 4 : tensor<2x8xf32>, tensor<2x4xf16>
  return
}

// -----

func.func @memory_update_size_above_positions(%m: tensor<2x8xf32>, %n: tensor<2x4xf32>) {
  // expected-error @+1 {{'recur.memory_update' op 'size' (13) exceeds the 12 positions of memory and new states}}
  %r = recur.memory_update %m, %n along 1 keep 13 : tensor<2x8xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @memory_update_result_type_not_inferred(%m: tensor<2x8xf32>, %n: tensor<2x4xf32>) {
  // expected-error @+2 {{'recur.memory_update' op inferred type(s) 'tensor<2x6xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error @+1 {{'recur.memory_update' op failed to infer returned types}}
  %r = "recur.memory_update"(%m, %n) <{axis = 1 : i64, size = 6 : i64}> : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @stop_gradient_result_type_not_input(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'recur.stop_gradient' op inferred type(s) 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x?xf32>'}}
  // expected-error @+1 {{'recur.stop_gradient' op failed to infer returned types}}
  %r = "recur.stop_gradient"(%x) : (tensor<2x8xf32>) -> tensor<2x?xf32>
  return
}

// -----

func.func @stop_gradient_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'recur.stop_gradient' op operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %r = "recur.stop_gradient"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.halting
//===----------------------------------------------------------------------===//

func.func @halting_h_without_feature_dimension(%p: tensor<2x8xf32>, %h: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.halting' op 'h' shape 2x8 must be the 'p_hat' shape 2x8 plus a feature dimension}}
  %a, %s, %m, %acc = recur.halting %p, %h, %p, %h, %h : tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @halting_h_tokens_not_p_hat(%p: tensor<2x8xf32>, %h: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'recur.halting' op 'h' shape 2x4x16 must be the 'p_hat' shape 2x8 plus a feature dimension}}
  %a, %s, %m, %acc = recur.halting %p, %h, %p, %h, %h : tensor<2x8xf32>, tensor<2x4x16xf32>
  return
}

// -----

func.func @halting_h_element_type_not_p_hat(%p: tensor<2x8xf32>, %h: tensor<2x8x16xf16>) {
  // expected-error @+1 {{'recur.halting' op 'h' element type 'f16' does not match 'p_hat' ('f32')}}
  %a, %s, %m, %acc = recur.halting %p, %h, %p, %h, %h : tensor<2x8xf32>, tensor<2x8x16xf16>
  return
}

// -----

func.func @halting_threshold_zero(%p: tensor<2x8xf32>, %h: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'recur.halting' op 'threshold' must be in (0, 1], got 0}}
  %a, %s, %m, %acc = recur.halting %p, %h, %p, %h, %h {threshold = 0.0 : f64} : tensor<2x8xf32>, tensor<2x8x16xf32>
  return
}

// -----

func.func @halting_threshold_above_one(%p: tensor<2x8xf32>, %h: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'recur.halting' op 'threshold' must be in (0, 1], got 1.5}}
  %a, %s, %m, %acc = recur.halting %p, %h, %p, %h, %h {threshold = 1.5 : f64} : tensor<2x8xf32>, tensor<2x8x16xf32>
  return
}

// -----

func.func @halting_mass_type_not_p_hat(%p: tensor<2x8xf32>, %mass: tensor<2x8xf64>, %h: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'recur.halting' op failed to verify that all of {p_hat, mass, a, new_mass} have same type}}
  %r:4 = "recur.halting"(%p, %h, %mass, %h, %h) : (tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x8xf64>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>)
  return
}

// -----

func.func @halting_s_prev_type_not_h(%p: tensor<2x8xf32>, %h: tensor<2x8x16xf32>, %s0: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'recur.halting' op failed to verify that all of {h, acc, s_prev, s, new_acc} have same type}}
  %r:4 = "recur.halting"(%p, %h, %p, %h, %s0) : (tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x8x4xf32>) -> (tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.depth_loop and its recur.yield
//===----------------------------------------------------------------------===//

func.func @depth_loop_no_carried_value() {
  // expected-error @+1 {{'recur.depth_loop' op expects at least one carried value}}
  "recur.depth_loop"() <{max_depth = 2 : i64}> ({
  ^bb0(%l: index):
    recur.yield
  }) : () -> ()
  return
}

// -----

func.func @depth_loop_max_depth_zero(%x: f32) {
  // expected-error @+1 {{'recur.depth_loop' op 'max_depth' must be at least 1, got 0}}
  %r = recur.depth_loop max_depth 0 init(%x : f32) {
  ^bb0(%l: index, %xl: f32):
    recur.yield %xl : f32
  }
  return
}

// -----

func.func @depth_loop_body_without_step_index(%x: f32) {
  // expected-error @+1 {{'recur.depth_loop' op body must take 2 arguments (the step index, then the carried values), got 1}}
  %r = recur.depth_loop max_depth 2 init(%x : f32) {
  ^bb0(%xl: f32):
    recur.yield %xl : f32
  }
  return
}

// -----

func.func @depth_loop_step_index_not_index(%x: f32) {
  // expected-error @+1 {{'recur.depth_loop' op body's first argument must be the step index (index), got 'i64'}}
  %r = recur.depth_loop max_depth 2 init(%x : f32) {
  ^bb0(%l: i64, %xl: f32):
    recur.yield %xl : f32
  }
  return
}

// -----

func.func @depth_loop_body_argument_type(%x: f32, %t: tensor<4xf32>) {
  // expected-error @+1 {{'recur.depth_loop' op body argument #2 has type 'tensor<?xf32>', expected 'tensor<4xf32>'}}
  %r:2 = recur.depth_loop max_depth 2 init(%x, %t : f32, tensor<4xf32>) {
  ^bb0(%l: index, %xl: f32, %tl: tensor<?xf32>):
    recur.yield %xl, %t : f32, tensor<4xf32>
  }
  return
}

// -----

func.func @depth_loop_body_not_ended_by_yield(%x: f32) {
  // expected-error @+1 {{'recur.depth_loop' op body must end with 'recur.yield', got 'llvm.unreachable'}}
  %r = recur.depth_loop max_depth 2 init(%x : f32) {
  ^bb0(%l: index, %xl: f32):
    llvm.unreachable
  }
  return
}

// -----

func.func @depth_loop_body_yield_count(%x: f32, %n: index) {
  // expected-error @+1 {{'recur.depth_loop' op body must yield 2 carried values, got 1}}
  %r:2 = recur.depth_loop max_depth 2 init(%x, %n : f32, index) {
  ^bb0(%l: index, %xl: f32, %nl: index):
    recur.yield %xl : f32
  }
  return
}

// -----

func.func @depth_loop_body_yield_type(%x: f32) {
  // expected-error @+1 {{'recur.depth_loop' op body yield #0 has type 'f64', expected 'f32'}}
  %r = recur.depth_loop max_depth 2 init(%x : f32) {
  ^bb0(%l: index, %xl: f32):
    %e = arith.extf %xl : f32 to f64
    recur.yield %e : f64
  }
  return
}

// -----

func.func @depth_loop_result_type_not_inferred(%x: f32) {
  // expected-error @+2 {{'recur.depth_loop' op inferred type(s) 'f32' are incompatible with return type(s) of operation 'f64'}}
  // expected-error @+1 {{'recur.depth_loop' op failed to infer returned types}}
  %r = "recur.depth_loop"(%x) <{max_depth = 2 : i64}> ({
  ^bb0(%l: index, %xl: f32):
    recur.yield %xl : f32
  }) : (f32) -> f64
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.route_topk
//===----------------------------------------------------------------------===//

func.func @route_topk_probs_without_experts(%p: tensor<f32>) {
  // expected-error @+1 {{'probs' must have an experts dimension}}
  %g, %i = recur.route_topk %p top 1 : tensor<f32>
  return
}

// -----

// In generic form the verifier checks the rank itself, before the result
// types are inferred.
func.func @route_topk_probs_without_experts_generic(%p: tensor<f32>) {
  // expected-error @+1 {{'recur.route_topk' op 'probs' must have an experts dimension}}
  %r:2 = "recur.route_topk"(%p) <{k = 1 : i64}> : (tensor<f32>) -> (tensor<1xf32>, tensor<1xi32>)
  return
}

// -----

func.func @route_topk_k_zero(%p: tensor<2x8xf32>) {
  // expected-error @+1 {{'k' (0) must be in [1, 8] for 8 experts}}
  %g, %i = recur.route_topk %p top 0 : tensor<2x8xf32>
  return
}

// -----

// A negative 'k' is rejected before it would make a result type.
func.func @route_topk_k_negative(%p: tensor<2x?xf32>) {
  // expected-error @+1 {{'k' (-1) must be in [1, ?] for ? experts}}
  %g, %i = recur.route_topk %p top -1 : tensor<2x?xf32>
  return
}

// -----

func.func @route_topk_k_zero_generic(%p: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.route_topk' op 'k' (0) must be in [1, 8] for 8 experts}}
  %r:2 = "recur.route_topk"(%p) <{k = 0 : i64}> : (tensor<2x8xf32>) -> (tensor<2x0xf32>, tensor<2x0xi32>)
  return
}

// -----

func.func @route_topk_k_above_experts(%p: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.route_topk' op 'k' (9) must be in [1, 8] for 8 experts}}
  %g, %i = recur.route_topk %p top 9 : tensor<2x8xf32>
  return
}

// -----

func.func @route_topk_eps_negative(%p: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.route_topk' op 'eps' must be non-negative, got -1.000000e-03}}
  %g, %i = recur.route_topk %p top 2 {eps = -1.0e-3 : f64} : tensor<2x8xf32>
  return
}

// -----

func.func @route_topk_eps_nan(%p: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.route_topk' op 'eps' must be non-negative, got nan}}
  %g, %i = recur.route_topk %p top 2 {eps = 0x7FF8000000000000 : f64} : tensor<2x8xf32>
  return
}

// -----

func.func @route_topk_indices_not_i32(%p: tensor<2x8xf32>) {
  // expected-error @+1 {{'recur.route_topk' op result #1 must be ranked tensor of 32-bit signless integer values, but got 'tensor<2x2xi64>'}}
  %r:2 = "recur.route_topk"(%p) <{k = 2 : i64}> : (tensor<2x8xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  return
}

// -----

func.func @route_topk_result_type_not_inferred(%p: tensor<2x8xf32>) {
  // expected-error @+2 {{'recur.route_topk' op inferred type(s) 'tensor<2x2xf32>', 'tensor<2x2xi32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>', 'tensor<2x8xi32>'}}
  // expected-error @+1 {{'recur.route_topk' op failed to infer returned types}}
  %r:2 = "recur.route_topk"(%p) <{k = 2 : i64}> : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.moe
//===----------------------------------------------------------------------===//

func.func @moe_x_without_feature_dimension(%x: tensor<f32>, %i: tensor<i32>, %g: tensor<f32>, %w1: tensor<4x1x8xf32>, %w2: tensor<4x8x1xf32>) {
  // expected-error @+1 {{'recur.moe' op 'x' must have a feature dimension}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<f32>, tensor<i32>, tensor<f32>, tensor<4x1x8xf32>, tensor<4x8x1xf32>
  return
}

// -----

func.func @moe_indices_rank_not_x(%x: tensor<2x16xf32>, %i: tensor<2xi32>, %g: tensor<2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op 'indices' shape 2 must be the token shape 2 plus the k dimension}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2xi32>, tensor<2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_indices_tokens_not_x(%x: tensor<2x8x16xf32>, %i: tensor<2x4x2xi32>, %g: tensor<2x4x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op 'indices' shape 2x4x2 must be the token shape 2x8 plus the k dimension}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x8x16xf32>, tensor<2x4x2xi32>, tensor<2x4x2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_gates_shape_not_indices(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x1xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op 'gates' shape 2x1 does not match 'indices' shape 2x2}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x1xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_gates_element_type_not_x(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf16>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op 'gates', 'w_in' and 'w_out' must have the element type of 'x' ('f32')}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf16>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_w_out_element_type_not_x(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xbf16>) {
  // expected-error @+1 {{'recur.moe' op 'gates', 'w_in' and 'w_out' must have the element type of 'x' ('f32')}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xbf16>
  return
}

// -----

func.func @moe_w_in_rank_not_3(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op 'w_in' must be [experts, d, hidden], got shape 16x32}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_w_in_width_not_x(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<4x8x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op 'w_in' model width 8 does not match the width of 'x' (16)}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<4x8x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_w_out_shape(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x16x32xf32>) {
  // expected-error @+1 {{'recur.moe' op 'w_out' shape 4x16x32 does not match [experts, hidden, d] = 4x32x16}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<4x16x32xf32>, tensor<4x16x32xf32>
  return
}

// -----

func.func @moe_w_out_width_not_x_dynamic_experts(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<?x16x32xf32>, %w2: tensor<4x32x8xf32>) {
  // expected-error @+1 {{'recur.moe' op 'w_out' shape 4x32x8 does not match [experts, hidden, d] = ?x32x16}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<?x16x32xf32>, tensor<4x32x8xf32>
  return
}

// -----

func.func @moe_k_above_experts(%x: tensor<2x16xf32>, %i: tensor<2x5xi32>, %g: tensor<2x5xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op selects 5 experts per token but there are only 4}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x5xi32>, tensor<2x5xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_active_shape_not_tokens(%x: tensor<2x8x16xf32>, %i: tensor<2x8x2xi32>, %g: tensor<2x8x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>, %active: tensor<2x8x1xi1>) {
  // expected-error @+1 {{'recur.moe' op 'active' shape 2x8x1 does not match the token shape 2x8}}
  %y = recur.moe %x, %i, %g, %w1, %w2 active(%active : tensor<2x8x1xi1>) : tensor<2x8x16xf32>, tensor<2x8x2xi32>, tensor<2x8x2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_indices_not_i32(%x: tensor<2x16xf32>, %i: tensor<2x2xi64>, %g: tensor<2x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op operand #1 must be ranked tensor of 32-bit signless integer values, but got 'tensor<2x2xi64>'}}
  %y = recur.moe %x, %i, %g, %w1, %w2 : tensor<2x16xf32>, tensor<2x2xi64>, tensor<2x2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @moe_result_type_not_x(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'recur.moe' op failed to verify that all of {x, result} have same type}}
  %y = "recur.moe"(%x, %i, %g, %w1, %w2) : (tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>) -> tensor<2x32xf32>
  return
}

// -----

func.func @moe_unknown_activation(%x: tensor<2x16xf32>, %i: tensor<2x2xi32>, %g: tensor<2x2xf32>, %w1: tensor<4x16x32xf32>, %w2: tensor<4x32x16xf32>) {
  // expected-error @+2 {{expected ::mlir::recur::Activation to be one of: relu, gelu, silu}}
  // expected-error @+1 {{failed to parse Recur_ActivationAttr parameter 'value' which is to be a `::mlir::recur::Activation`}}
  %y = recur.moe %x, %i, %g, %w1, %w2 {activation = #recur.activation<tanh>} : tensor<2x16xf32>, tensor<2x2xi32>, tensor<2x2xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// recur.view_as_real, recur.view_as_complex
//===----------------------------------------------------------------------===//

func.func @view_as_real_tensor_to_buffer(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{must view a tensor as a tensor or a buffer as a buffer}}
  %r = recur.view_as_real %x : tensor<4xcomplex<f32>> to memref<8xf32>
  return
}

// -----

func.func @view_as_real_rank_0(%x: tensor<complex<f32>>) {
  // expected-error @+1 {{must view a source of rank 1 or more}}
  %r = recur.view_as_real %x : tensor<complex<f32>> to tensor<2xf32>
  return
}

// -----

func.func @view_as_real_of_reals(%x: tensor<4xf32>) {
  // expected-error @+1 {{must view complex elements of a float type, not 'f32'}}
  %r = recur.view_as_real %x : tensor<4xf32> to tensor<8xf32>
  return
}

// -----

func.func @view_as_complex_of_complex(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{must view float elements, not 'complex<f32>'}}
  %c = recur.view_as_complex %x : tensor<4xcomplex<f32>> to tensor<2xcomplex<f32>>
  return
}

// -----

func.func @view_as_real_strided_last(%x: memref<4xcomplex<f32>, strided<[2]>>) {
  // expected-error @+1 {{must view a buffer whose last dimension has a static stride of 1}}
  %r = recur.view_as_real %x : memref<4xcomplex<f32>, strided<[2]>> to memref<8xf32>
  return
}

// -----

func.func @view_as_complex_dynamic_last_stride(%x: memref<8xf32, strided<[?]>>) {
  // expected-error @+1 {{must view a buffer whose last dimension has a static stride of 1}}
  %c = recur.view_as_complex %x : memref<8xf32, strided<[?]>> to memref<4xcomplex<f32>>
  return
}

// -----

func.func @view_as_complex_odd_size(%x: tensor<2x7xf32>) {
  // expected-error @+1 {{cannot halve the odd last dimension, offset or strides of 'tensor<2x7xf32>'}}
  %c = recur.view_as_complex %x : tensor<2x7xf32> to tensor<2x3xcomplex<f32>>
  return
}

// -----

func.func @view_as_complex_odd_offset(%x: memref<8xf32, strided<[1], offset: 3>>) {
  // expected-error @+1 {{cannot halve the odd last dimension, offset or strides of 'memref<8xf32, strided<[1], offset: 3>>'}}
  %c = recur.view_as_complex %x : memref<8xf32, strided<[1], offset: 3>> to memref<4xcomplex<f32>, strided<[1], offset: 1>>
  return
}

// -----

func.func @view_as_real_wrong_result(%x: tensor<4x3xcomplex<f64>>) {
  // expected-error @+1 {{result type 'tensor<4x3xf64>' is not the view of 'tensor<4x3xcomplex<f64>>', 'tensor<4x6xf64>'}}
  %r = recur.view_as_real %x : tensor<4x3xcomplex<f64>> to tensor<4x3xf64>
  return
}

// -----

func.func @view_as_complex_wrong_strides(%x: memref<2x8xf32, strided<[16, 1]>>) {
  // expected-error @+1 {{result type 'memref<2x4xcomplex<f32>>' is not the view of 'memref<2x8xf32, strided<[16, 1]>>', 'memref<2x4xcomplex<f32>, strided<[8, 1]>>'}}
  %c = recur.view_as_complex %x : memref<2x8xf32, strided<[16, 1]>> to memref<2x4xcomplex<f32>>
  return
}

// -----

func.func @view_as_real_encoding(%x: tensor<4xcomplex<f32>, "enc">) {
  // expected-error @+1 {{must view a tensor without an encoding}}
  %r = recur.view_as_real %x : tensor<4xcomplex<f32>, "enc"> to tensor<8xf32>
  return
}
