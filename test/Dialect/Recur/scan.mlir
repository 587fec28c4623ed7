// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.linear_scan, recur.scan and recur.yield.

// A vector state: 'a' and 'b' of one shape, no init.
// CHECK-LABEL: func.func @linear_scan_vector_state(
// CHECK-SAME: [[A:%.+]]: tensor<4x16x8xf32>, [[B:%.+]]: tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: [[H:%.+]], [[LAST:%.+]] = recur.linear_scan [[A]], [[B]] along 1 : tensor<4x16x8xf32>, tensor<4x16x8xf32>
// CHECK-NEXT: return [[H]], [[LAST]] : tensor<4x16x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: }
func.func @linear_scan_vector_state(%a: tensor<4x16x8xf32>, %b: tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x8xf32>) {
  %h, %last = recur.linear_scan %a, %b along 1 : tensor<4x16x8xf32>, tensor<4x16x8xf32>
  return %h, %last : tensor<4x16x8xf32>, tensor<4x8xf32>
}

// GateLoop: complex state and complex decay, carried in through 'init'.
// CHECK-LABEL: func.func @linear_scan_complex_init(
// CHECK-SAME: [[A:%.+]]: tensor<2x128x64xcomplex<f32>>, [[KV:%.+]]: tensor<2x128x64xcomplex<f32>>, [[H0:%.+]]: tensor<2x64xcomplex<f32>>) -> (tensor<2x128x64xcomplex<f32>>, tensor<2x64xcomplex<f32>>) {
// CHECK-NEXT: [[H:%.+]], [[LAST:%.+]] = recur.linear_scan [[A]], [[KV]] init([[H0]] : tensor<2x64xcomplex<f32>>) along 1 : tensor<2x128x64xcomplex<f32>>, tensor<2x128x64xcomplex<f32>>
// CHECK-NEXT: return [[H]], [[LAST]] : tensor<2x128x64xcomplex<f32>>, tensor<2x64xcomplex<f32>>
// CHECK-NEXT: }
func.func @linear_scan_complex_init(%a: tensor<2x128x64xcomplex<f32>>, %kv: tensor<2x128x64xcomplex<f32>>, %h0: tensor<2x64xcomplex<f32>>) -> (tensor<2x128x64xcomplex<f32>>, tensor<2x64xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %kv init(%h0 : tensor<2x64xcomplex<f32>>) along 1 : tensor<2x128x64xcomplex<f32>>, tensor<2x128x64xcomplex<f32>>
  return %h, %last : tensor<2x128x64xcomplex<f32>>, tensor<2x64xcomplex<f32>>
}

// A real decay of a complex outer-product matrix state: 'a' is [B, T, dk],
// broadcast over dv of 'b' [B, T, dk, dv].
// CHECK-LABEL: func.func @linear_scan_real_decay_matrix_state(
// CHECK-SAME: [[A:%.+]]: tensor<2x32x16xf32>, [[KV:%.+]]: tensor<2x32x16x8xcomplex<f32>>) -> (tensor<2x32x16x8xcomplex<f32>>, tensor<2x16x8xcomplex<f32>>) {
// CHECK-NEXT: [[H:%.+]], [[LAST:%.+]] = recur.linear_scan [[A]], [[KV]] along 1 : tensor<2x32x16xf32>, tensor<2x32x16x8xcomplex<f32>>
// CHECK-NEXT: return [[H]], [[LAST]] : tensor<2x32x16x8xcomplex<f32>>, tensor<2x16x8xcomplex<f32>>
// CHECK-NEXT: }
func.func @linear_scan_real_decay_matrix_state(%a: tensor<2x32x16xf32>, %kv: tensor<2x32x16x8xcomplex<f32>>) -> (tensor<2x32x16x8xcomplex<f32>>, tensor<2x16x8xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %kv along 1 : tensor<2x32x16xf32>, tensor<2x32x16x8xcomplex<f32>>
  return %h, %last : tensor<2x32x16x8xcomplex<f32>>, tensor<2x16x8xcomplex<f32>>
}

// Backward direction with an init and dynamic dimensions.
// CHECK-LABEL: func.func @linear_scan_reverse_init_dynamic(
// CHECK-SAME: [[A:%.+]]: tensor<?x?xf64>, [[B:%.+]]: tensor<?x?x4xf64>, [[H0:%.+]]: tensor<?x4xf64>) -> (tensor<?x?x4xf64>, tensor<?x4xf64>) {
// CHECK-NEXT: [[H:%.+]], [[LAST:%.+]] = recur.linear_scan [[A]], [[B]] init([[H0]] : tensor<?x4xf64>) along 1 reverse : tensor<?x?xf64>, tensor<?x?x4xf64>
// CHECK-NEXT: return [[H]], [[LAST]] : tensor<?x?x4xf64>, tensor<?x4xf64>
// CHECK-NEXT: }
func.func @linear_scan_reverse_init_dynamic(%a: tensor<?x?xf64>, %b: tensor<?x?x4xf64>, %h0: tensor<?x4xf64>) -> (tensor<?x?x4xf64>, tensor<?x4xf64>) {
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<?x4xf64>) along 1 reverse : tensor<?x?xf64>, tensor<?x?x4xf64>
  return %h, %last : tensor<?x?x4xf64>, tensor<?x4xf64>
}

// A rank-1 scan along axis 0 has a scalar final state.
// CHECK-LABEL: func.func @linear_scan_axis0_reverse_f16(
// CHECK-SAME: [[A:%.+]]: tensor<128xf16>, [[B:%.+]]: tensor<128xf16>) -> (tensor<128xf16>, tensor<f16>) {
// CHECK-NEXT: [[H:%.+]], [[LAST:%.+]] = recur.linear_scan [[A]], [[B]] along 0 reverse : tensor<128xf16>, tensor<128xf16>
// CHECK-NEXT: return [[H]], [[LAST]] : tensor<128xf16>, tensor<f16>
// CHECK-NEXT: }
func.func @linear_scan_axis0_reverse_f16(%a: tensor<128xf16>, %b: tensor<128xf16>) -> (tensor<128xf16>, tensor<f16>) {
  %h, %last = recur.linear_scan %a, %b along 0 reverse : tensor<128xf16>, tensor<128xf16>
  return %h, %last : tensor<128xf16>, tensor<f16>
}

// GateLoop's operator (p1, p2) . (q1, q2) = (p1 q1, q1 p2 + q2).
// CHECK-LABEL: func.func @scan_gateloop(
// CHECK-SAME: [[A:%.+]]: tensor<4x16xf32>, [[KV:%.+]]: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
// CHECK-NEXT: [[PROD_H:%.+]]:2 = recur.scan([[A]], [[KV]]) along 1 {associative} : tensor<4x16xf32>, tensor<4x16xf32> {
// CHECK-NEXT: ^bb0([[P1:%.+]]: f32, [[P2:%.+]]: f32, [[Q1:%.+]]: f32, [[Q2:%.+]]: f32):
// CHECK-NEXT: [[M:%.+]] = arith.mulf [[P1]], [[Q1]] : f32
// CHECK-NEXT: [[T:%.+]] = arith.mulf [[Q1]], [[P2]] : f32
// CHECK-NEXT: [[S:%.+]] = arith.addf [[T]], [[Q2]] : f32
// CHECK-NEXT: recur.yield [[M]], [[S]] : f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: return [[PROD_H]]#0, [[PROD_H]]#1 : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-NEXT: }
func.func @scan_gateloop(%a: tensor<4x16xf32>, %kv: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %prod, %h = recur.scan (%a, %kv) along 1 {associative} : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p1: f32, %p2: f32, %q1: f32, %q2: f32):
    %m = arith.mulf %p1, %q1 : f32
    %t = arith.mulf %q1, %p2 : f32
    %s = arith.addf %t, %q2 : f32
    recur.yield %m, %s : f32, f32
  }
  return %prod, %h : tensor<4x16xf32>, tensor<4x16xf32>
}

// A complex sum run backward from a carried value, with its identity.
// CHECK-LABEL: func.func @scan_complex_init_reverse_identity(
// CHECK-SAME: [[X:%.+]]: tensor<4x16xcomplex<f32>>, [[C0:%.+]]: tensor<4xcomplex<f32>>) -> tensor<4x16xcomplex<f32>> {
// CHECK-NEXT: [[R:%.+]] = recur.scan([[X]]) init([[C0]] : tensor<4xcomplex<f32>>) along 1 reverse {associative, identity = [#complex.number<:f32 0.000000e+00, 0.000000e+00> : complex<f32>]} : tensor<4x16xcomplex<f32>> {
// CHECK-NEXT: ^bb0([[P:%.+]]: complex<f32>, [[Q:%.+]]: complex<f32>):
// CHECK-NEXT: [[S:%.+]] = complex.add [[P]], [[Q]] : complex<f32>
// CHECK-NEXT: recur.yield [[S]] : complex<f32>
// CHECK-NEXT: }
// CHECK-NEXT: return [[R]] : tensor<4x16xcomplex<f32>>
// CHECK-NEXT: }
func.func @scan_complex_init_reverse_identity(%x: tensor<4x16xcomplex<f32>>, %c0: tensor<4xcomplex<f32>>) -> tensor<4x16xcomplex<f32>> {
  %r = recur.scan (%x) init(%c0 : tensor<4xcomplex<f32>>) along 1 reverse {associative, identity = [#complex.number<:f32 0.0, 0.0>]} : tensor<4x16xcomplex<f32>> {
  ^bb0(%p: complex<f32>, %q: complex<f32>):
    %s = complex.add %p, %q : complex<f32>
    recur.yield %s : complex<f32>
  }
  return %r : tensor<4x16xcomplex<f32>>
}

// Inputs of different float types, dynamic dimensions, one init per input.
// CHECK-LABEL: func.func @scan_mixed_types_dynamic(
// CHECK-SAME: [[X:%.+]]: tensor<?x8xf32>, [[Y:%.+]]: tensor<?x8xf64>, [[CX:%.+]]: tensor<8xf32>, [[CY:%.+]]: tensor<8xf64>) -> (tensor<?x8xf32>, tensor<?x8xf64>) {
// CHECK-NEXT: [[RX_RY:%.+]]:2 = recur.scan([[X]], [[Y]]) init([[CX]], [[CY]] : tensor<8xf32>, tensor<8xf64>) along 0 {associative, identity = [0xFF800000 : f32, 0.000000e+00]} : tensor<?x8xf32>, tensor<?x8xf64> {
// CHECK-NEXT: ^bb0([[P:%.+]]: f32, [[PW:%.+]]: f64, [[Q:%.+]]: f32, [[QW:%.+]]: f64):
// CHECK-NEXT: [[M:%.+]] = arith.maximumf [[P]], [[Q]] : f32
// CHECK-NEXT: [[W:%.+]] = arith.addf [[PW]], [[QW]] : f64
// CHECK-NEXT: recur.yield [[M]], [[W]] : f32, f64
// CHECK-NEXT: }
// CHECK-NEXT: return [[RX_RY]]#0, [[RX_RY]]#1 : tensor<?x8xf32>, tensor<?x8xf64>
// CHECK-NEXT: }
func.func @scan_mixed_types_dynamic(%x: tensor<?x8xf32>, %y: tensor<?x8xf64>, %cx: tensor<8xf32>, %cy: tensor<8xf64>) -> (tensor<?x8xf32>, tensor<?x8xf64>) {
  %rx, %ry = recur.scan (%x, %y) init(%cx, %cy : tensor<8xf32>, tensor<8xf64>) along 0 {associative, identity = [0xFF800000 : f32, 0.0 : f64]} : tensor<?x8xf32>, tensor<?x8xf64> {
  ^bb0(%p: f32, %pw: f64, %q: f32, %qw: f64):
    %m = arith.maximumf %p, %q : f32
    %w = arith.addf %pw, %qw : f64
    recur.yield %m, %w : f32, f64
  }
  return %rx, %ry : tensor<?x8xf32>, tensor<?x8xf64>
}

// Without 'associative' only the sequential order is legal: x_t - c_{t-1}.
// CHECK-LABEL: func.func @scan_sequential_bf16(
// CHECK-SAME: [[X:%.+]]: tensor<32xbf16>) -> tensor<32xbf16> {
// CHECK-NEXT: [[R:%.+]] = recur.scan([[X]]) along 0 : tensor<32xbf16> {
// CHECK-NEXT: ^bb0([[P:%.+]]: bf16, [[Q:%.+]]: bf16):
// CHECK-NEXT: [[D:%.+]] = arith.subf [[Q]], [[P]] : bf16
// CHECK-NEXT: recur.yield [[D]] : bf16
// CHECK-NEXT: }
// CHECK-NEXT: return [[R]] : tensor<32xbf16>
// CHECK-NEXT: }
func.func @scan_sequential_bf16(%x: tensor<32xbf16>) -> tensor<32xbf16> {
  %r = recur.scan (%x) along 0 : tensor<32xbf16> {
  ^bb0(%p: bf16, %q: bf16):
    %d = arith.subf %q, %p : bf16
    recur.yield %d : bf16
  }
  return %r : tensor<32xbf16>
}
