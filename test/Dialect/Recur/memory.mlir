// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.memory_update and recur.stop_gradient.

// Transformer-XL's memory: keep the last 384 of 384 + 128 positions.
// CHECK-LABEL: func.func @memory_update(
// CHECK-SAME: [[M0:%.+]]: tensor<2x384x512xf32>, [[H:%.+]]: tensor<2x128x512xf32>) -> tensor<2x384x512xf32> {
// CHECK-NEXT: [[M1:%.+]] = recur.memory_update [[M0]], [[H]] along 1 keep 384 : tensor<2x384x512xf32>, tensor<2x128x512xf32>
// CHECK-NEXT: return [[M1]] : tensor<2x384x512xf32>
// CHECK-NEXT: }
func.func @memory_update(%m0: tensor<2x384x512xf32>, %h: tensor<2x128x512xf32>) -> tensor<2x384x512xf32> {
  %m1 = recur.memory_update %m0, %h along 1 keep 384 : tensor<2x384x512xf32>, tensor<2x128x512xf32>
  return %m1 : tensor<2x384x512xf32>
}

// Keeping nothing, every position, along the last axis, and with dynamic
// sizes; the result has 'size' positions along 'axis' whatever the inputs.
// CHECK-LABEL: func.func @memory_update_edges(
// CHECK-SAME: [[M0:%.+]]: tensor<4x?xf64>, [[H:%.+]]: tensor<?x8xf64>, [[A:%.+]]: tensor<3x5xf16>, [[B:%.+]]: tensor<3x7xf16>) -> (tensor<4x0xf64>, tensor<4x16xf64>, tensor<3x12xf16>) {
// CHECK-NEXT: [[NONE:%.+]] = recur.memory_update [[M0]], [[H]] along 1 keep 0 : tensor<4x?xf64>, tensor<?x8xf64>
// CHECK-NEXT: [[SOME:%.+]] = recur.memory_update [[M0]], [[H]] along 1 keep 16 : tensor<4x?xf64>, tensor<?x8xf64>
// CHECK-NEXT: [[ALL:%.+]] = recur.memory_update [[A]], [[B]] along 1 keep 12 : tensor<3x5xf16>, tensor<3x7xf16>
// CHECK-NEXT: return [[NONE]], [[SOME]], [[ALL]] : tensor<4x0xf64>, tensor<4x16xf64>, tensor<3x12xf16>
// CHECK-NEXT: }
func.func @memory_update_edges(%m0: tensor<4x?xf64>, %h: tensor<?x8xf64>, %a: tensor<3x5xf16>, %b: tensor<3x7xf16>) -> (tensor<4x0xf64>, tensor<4x16xf64>, tensor<3x12xf16>) {
  %none = recur.memory_update %m0, %h along 1 keep 0 : tensor<4x?xf64>, tensor<?x8xf64>
  %some = recur.memory_update %m0, %h along 1 keep 16 : tensor<4x?xf64>, tensor<?x8xf64>
  %all = recur.memory_update %a, %b along 1 keep 12 : tensor<3x5xf16>, tensor<3x7xf16>
  return %none, %some, %all : tensor<4x0xf64>, tensor<4x16xf64>, tensor<3x12xf16>
}

// Along the leading axis, bf16.
// CHECK-LABEL: func.func @memory_update_axis0(
// CHECK-SAME: [[M0:%.+]]: tensor<16x64xbf16>, [[H:%.+]]: tensor<4x64xbf16>) -> tensor<8x64xbf16> {
// CHECK-NEXT: [[M1:%.+]] = recur.memory_update [[M0]], [[H]] along 0 keep 8 : tensor<16x64xbf16>, tensor<4x64xbf16>
// CHECK-NEXT: return [[M1]] : tensor<8x64xbf16>
// CHECK-NEXT: }
func.func @memory_update_axis0(%m0: tensor<16x64xbf16>, %h: tensor<4x64xbf16>) -> tensor<8x64xbf16> {
  %m1 = recur.memory_update %m0, %h along 0 keep 8 : tensor<16x64xbf16>, tensor<4x64xbf16>
  return %m1 : tensor<8x64xbf16>
}

// stop_gradient takes any ranked tensor.
// CHECK-LABEL: func.func @stop_gradient(
// CHECK-SAME: [[MEM:%.+]]: tensor<2x384x512xf32>, [[I:%.+]]: tensor<?x3xi32>, [[C:%.+]]: tensor<complex<f64>>) -> (tensor<2x384x512xf32>, tensor<?x3xi32>, tensor<complex<f64>>) {
// CHECK-NEXT: [[M:%.+]] = recur.stop_gradient [[MEM]] : tensor<2x384x512xf32>
// CHECK-NEXT: [[J:%.+]] = recur.stop_gradient [[I]] : tensor<?x3xi32>
// CHECK-NEXT: [[D:%.+]] = recur.stop_gradient [[C]] : tensor<complex<f64>>
// CHECK-NEXT: return [[M]], [[J]], [[D]] : tensor<2x384x512xf32>, tensor<?x3xi32>, tensor<complex<f64>>
// CHECK-NEXT: }
func.func @stop_gradient(%mem: tensor<2x384x512xf32>, %i: tensor<?x3xi32>, %c: tensor<complex<f64>>) -> (tensor<2x384x512xf32>, tensor<?x3xi32>, tensor<complex<f64>>) {
  %m = recur.stop_gradient %mem : tensor<2x384x512xf32>
  %j = recur.stop_gradient %i : tensor<?x3xi32>
  %d = recur.stop_gradient %c : tensor<complex<f64>>
  return %m, %j, %d : tensor<2x384x512xf32>, tensor<?x3xi32>, tensor<complex<f64>>
}
