// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.gate, one function per gate kind and bias form.

// fixed: one input-independent gate, broadcast over the leading dimensions.
// CHECK-LABEL: func.func @gate_fixed(
// CHECK-SAME: [[C:%.+]]: tensor<2x512x64xf32>, [[Z:%.+]]: tensor<2x512x64xf32>, [[BG:%.+]]: tensor<64xf32>) -> tensor<2x512x64xf32> {
// CHECK-NEXT: [[R:%.+]] = recur.gate <fixed> [[C]], [[Z]], gates([[BG]] : tensor<64xf32>) : tensor<2x512x64xf32>
// CHECK-NEXT: return [[R]] : tensor<2x512x64xf32>
// CHECK-NEXT: }
func.func @gate_fixed(%c: tensor<2x512x64xf32>, %z: tensor<2x512x64xf32>, %bg: tensor<64xf32>) -> tensor<2x512x64xf32> {
  %r = recur.gate <fixed> %c, %z, gates(%bg : tensor<64xf32>) : tensor<2x512x64xf32>
  return %r : tensor<2x512x64xf32>
}

// lstm with the default biases (-1 and +1, not printed).
// CHECK-LABEL: func.func @gate_lstm(
// CHECK-SAME: [[C:%.+]]: tensor<2x512x64xf32>, [[Z:%.+]]: tensor<2x512x64xf32>, [[I:%.+]]: tensor<2x512x64xf32>, [[F:%.+]]: tensor<2x512x64xf32>) -> tensor<2x512x64xf32> {
// CHECK-NEXT: [[R:%.+]] = recur.gate <lstm> [[C]], [[Z]], gates([[I]], [[F]] : tensor<2x512x64xf32>, tensor<2x512x64xf32>) : tensor<2x512x64xf32>
// CHECK-NEXT: return [[R]] : tensor<2x512x64xf32>
// CHECK-NEXT: }
func.func @gate_lstm(%c: tensor<2x512x64xf32>, %z: tensor<2x512x64xf32>, %i: tensor<2x512x64xf32>, %f: tensor<2x512x64xf32>) -> tensor<2x512x64xf32> {
  %r = recur.gate <lstm> %c, %z, gates(%i, %f : tensor<2x512x64xf32>, tensor<2x512x64xf32>) : tensor<2x512x64xf32>
  return %r : tensor<2x512x64xf32>
}

// lstm with both biases given and gates that broadcast with size-1
// dimensions.
// CHECK-LABEL: func.func @gate_lstm_biases(
// CHECK-SAME: [[C:%.+]]: tensor<2x16x64xf64>, [[Z:%.+]]: tensor<2x16x64xf64>, [[I:%.+]]: tensor<16x1xf64>, [[F:%.+]]: tensor<1x1x64xf64>) -> tensor<2x16x64xf64> {
// CHECK-NEXT: [[R:%.+]] = recur.gate <lstm> [[C]], [[Z]], gates([[I]], [[F]] : tensor<16x1xf64>, tensor<1x1x64xf64>) {forget_bias = 2.000000e+00 : f64, input_bias = -5.000000e-01 : f64} : tensor<2x16x64xf64>
// CHECK-NEXT: return [[R]] : tensor<2x16x64xf64>
// CHECK-NEXT: }
func.func @gate_lstm_biases(%c: tensor<2x16x64xf64>, %z: tensor<2x16x64xf64>, %i: tensor<16x1xf64>, %f: tensor<1x1x64xf64>) -> tensor<2x16x64xf64> {
  %r = recur.gate <lstm> %c, %z, gates(%i, %f : tensor<16x1xf64>, tensor<1x1x64xf64>) {forget_bias = 2.000000e+00 : f64, input_bias = -5.000000e-01 : f64} : tensor<2x16x64xf64>
  return %r : tensor<2x16x64xf64>
}

// lstm with only the forget bias.
// CHECK-LABEL: func.func @gate_lstm_forget_bias(
// CHECK-SAME: [[C:%.+]]: tensor<8x4xf16>, [[Z:%.+]]: tensor<8x4xf16>, [[I:%.+]]: tensor<8x4xf16>, [[F:%.+]]: tensor<8x4xf16>) -> tensor<8x4xf16> {
// CHECK-NEXT: [[R:%.+]] = recur.gate <lstm> [[C]], [[Z]], gates([[I]], [[F]] : tensor<8x4xf16>, tensor<8x4xf16>) {forget_bias = 3.000000e+00 : f64} : tensor<8x4xf16>
// CHECK-NEXT: return [[R]] : tensor<8x4xf16>
// CHECK-NEXT: }
func.func @gate_lstm_forget_bias(%c: tensor<8x4xf16>, %z: tensor<8x4xf16>, %i: tensor<8x4xf16>, %f: tensor<8x4xf16>) -> tensor<8x4xf16> {
  %r = recur.gate <lstm> %c, %z, gates(%i, %f : tensor<8x4xf16>, tensor<8x4xf16>) {forget_bias = 3.000000e+00 : f64} : tensor<8x4xf16>
  return %r : tensor<8x4xf16>
}

// update (GRU/MemBART) with dynamic dimensions and a scalar gate.
// CHECK-LABEL: func.func @gate_update_dynamic(
// CHECK-SAME: [[C:%.+]]: tensor<?x?x32xbf16>, [[Z:%.+]]: tensor<?x?x32xbf16>, [[P:%.+]]: tensor<?x32xbf16>) -> tensor<?x?x32xbf16> {
// CHECK-NEXT: [[R:%.+]] = recur.gate <update> [[C]], [[Z]], gates([[P]] : tensor<?x32xbf16>) : tensor<?x?x32xbf16>
// CHECK-NEXT: return [[R]] : tensor<?x?x32xbf16>
// CHECK-NEXT: }
func.func @gate_update_dynamic(%c: tensor<?x?x32xbf16>, %z: tensor<?x?x32xbf16>, %p: tensor<?x32xbf16>) -> tensor<?x?x32xbf16> {
  %r = recur.gate <update> %c, %z, gates(%p : tensor<?x32xbf16>) : tensor<?x?x32xbf16>
  return %r : tensor<?x?x32xbf16>
}

// A rank-0 gate broadcasts to any state.
// CHECK-LABEL: func.func @gate_update_scalar_gate(
// CHECK-SAME: [[C:%.+]]: tensor<3x5xf32>, [[Z:%.+]]: tensor<3x5xf32>, [[P:%.+]]: tensor<f32>) -> tensor<3x5xf32> {
// CHECK-NEXT: [[R:%.+]] = recur.gate <update> [[C]], [[Z]], gates([[P]] : tensor<f32>) : tensor<3x5xf32>
// CHECK-NEXT: return [[R]] : tensor<3x5xf32>
// CHECK-NEXT: }
func.func @gate_update_scalar_gate(%c: tensor<3x5xf32>, %z: tensor<3x5xf32>, %p: tensor<f32>) -> tensor<3x5xf32> {
  %r = recur.gate <update> %c, %z, gates(%p : tensor<f32>) : tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
