// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.route_topk and recur.moe.

// Top-2 of 8 experts with the default eps (1e-6, not printed): gates keep
// the element type of 'probs', indices are i32.
// CHECK-LABEL: func.func @route_topk(
// CHECK-SAME: [[PROBS:%.+]]: tensor<2x128x8xf32>) -> (tensor<2x128x2xf32>, tensor<2x128x2xi32>) {
// CHECK-NEXT: [[GATES:%.+]], [[IDX:%.+]] = recur.route_topk [[PROBS]] top 2 : tensor<2x128x8xf32>
// CHECK-NEXT: return [[GATES]], [[IDX]] : tensor<2x128x2xf32>, tensor<2x128x2xi32>
// CHECK-NEXT: }
func.func @route_topk(%probs: tensor<2x128x8xf32>) -> (tensor<2x128x2xf32>, tensor<2x128x2xi32>) {
  %gates, %idx = recur.route_topk %probs top 2 {eps = 1.0e-6 : f64} : tensor<2x128x8xf32>
  return %gates, %idx : tensor<2x128x2xf32>, tensor<2x128x2xi32>
}

// Every expert, eps 0, a single token vector.
// CHECK-LABEL: func.func @route_topk_all_eps0(
// CHECK-SAME: [[PROBS:%.+]]: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xi32>) {
// CHECK-NEXT: [[GATES:%.+]], [[IDX:%.+]] = recur.route_topk [[PROBS]] top 4 {eps = 0.000000e+00 : f64} : tensor<4xf64>
// CHECK-NEXT: return [[GATES]], [[IDX]] : tensor<4xf64>, tensor<4xi32>
// CHECK-NEXT: }
func.func @route_topk_all_eps0(%probs: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xi32>) {
  %gates, %idx = recur.route_topk %probs top 4 {eps = 0.000000e+00 : f64} : tensor<4xf64>
  return %gates, %idx : tensor<4xf64>, tensor<4xi32>
}

// Dynamic tokens and experts.
// CHECK-LABEL: func.func @route_topk_dynamic(
// CHECK-SAME: [[PROBS:%.+]]: tensor<?x?xbf16>) -> (tensor<?x1xbf16>, tensor<?x1xi32>) {
// CHECK-NEXT: [[GATES:%.+]], [[IDX:%.+]] = recur.route_topk [[PROBS]] top 1 {eps = 1.000000e-03 : f64} : tensor<?x?xbf16>
// CHECK-NEXT: return [[GATES]], [[IDX]] : tensor<?x1xbf16>, tensor<?x1xi32>
// CHECK-NEXT: }
func.func @route_topk_dynamic(%probs: tensor<?x?xbf16>) -> (tensor<?x1xbf16>, tensor<?x1xi32>) {
  %gates, %idx = recur.route_topk %probs top 1 {eps = 1.000000e-03 : f64} : tensor<?x?xbf16>
  return %gates, %idx : tensor<?x1xbf16>, tensor<?x1xi32>
}

// relu is the default activation and is not printed.
// CHECK-LABEL: func.func @moe_relu(
// CHECK-SAME: [[X:%.+]]: tensor<2x128x512xf32>, [[IDX:%.+]]: tensor<2x128x2xi32>, [[G:%.+]]: tensor<2x128x2xf32>, [[W1:%.+]]: tensor<8x512x1024xf32>, [[W2:%.+]]: tensor<8x1024x512xf32>) -> tensor<2x128x512xf32> {
// CHECK-NEXT: [[Y:%.+]] = recur.moe [[X]], [[IDX]], [[G]], [[W1]], [[W2]] : tensor<2x128x512xf32>, tensor<2x128x2xi32>, tensor<2x128x2xf32>, tensor<8x512x1024xf32>, tensor<8x1024x512xf32>
// CHECK-NEXT: return [[Y]] : tensor<2x128x512xf32>
// CHECK-NEXT: }
func.func @moe_relu(%x: tensor<2x128x512xf32>, %idx: tensor<2x128x2xi32>, %g: tensor<2x128x2xf32>, %w1: tensor<8x512x1024xf32>, %w2: tensor<8x1024x512xf32>) -> tensor<2x128x512xf32> {
  %y = recur.moe %x, %idx, %g, %w1, %w2 {activation = #recur.activation<relu>} : tensor<2x128x512xf32>, tensor<2x128x2xi32>, tensor<2x128x2xf32>, tensor<8x512x1024xf32>, tensor<8x1024x512xf32>
  return %y : tensor<2x128x512xf32>
}

// CHECK-LABEL: func.func @moe_gelu(
// CHECK-SAME: [[X:%.+]]: tensor<2x128x512xf32>, [[IDX:%.+]]: tensor<2x128x2xi32>, [[G:%.+]]: tensor<2x128x2xf32>, [[W1:%.+]]: tensor<8x512x1024xf32>, [[W2:%.+]]: tensor<8x1024x512xf32>) -> tensor<2x128x512xf32> {
// CHECK-NEXT: [[Y:%.+]] = recur.moe [[X]], [[IDX]], [[G]], [[W1]], [[W2]] {activation = #recur.activation<gelu>} : tensor<2x128x512xf32>, tensor<2x128x2xi32>, tensor<2x128x2xf32>, tensor<8x512x1024xf32>, tensor<8x1024x512xf32>
// CHECK-NEXT: return [[Y]] : tensor<2x128x512xf32>
// CHECK-NEXT: }
func.func @moe_gelu(%x: tensor<2x128x512xf32>, %idx: tensor<2x128x2xi32>, %g: tensor<2x128x2xf32>, %w1: tensor<8x512x1024xf32>, %w2: tensor<8x1024x512xf32>) -> tensor<2x128x512xf32> {
  %y = recur.moe %x, %idx, %g, %w1, %w2 {activation = #recur.activation<gelu>} : tensor<2x128x512xf32>, tensor<2x128x2xi32>, tensor<2x128x2xf32>, tensor<8x512x1024xf32>, tensor<8x1024x512xf32>
  return %y : tensor<2x128x512xf32>
}

// The Sparse Universal Transformer: halted tokens are not 'active'.
// CHECK-LABEL: func.func @moe_silu_active(
// CHECK-SAME: [[X:%.+]]: tensor<2x128x64xf16>, [[IDX:%.+]]: tensor<2x128x1xi32>, [[G:%.+]]: tensor<2x128x1xf16>, [[W1:%.+]]: tensor<4x64x256xf16>, [[W2:%.+]]: tensor<4x256x64xf16>, [[ACTIVE:%.+]]: tensor<2x128xi1>) -> tensor<2x128x64xf16> {
// CHECK-NEXT: [[Y:%.+]] = recur.moe [[X]], [[IDX]], [[G]], [[W1]], [[W2]] active([[ACTIVE]] : tensor<2x128xi1>) {activation = #recur.activation<silu>} : tensor<2x128x64xf16>, tensor<2x128x1xi32>, tensor<2x128x1xf16>, tensor<4x64x256xf16>, tensor<4x256x64xf16>
// CHECK-NEXT: return [[Y]] : tensor<2x128x64xf16>
// CHECK-NEXT: }
func.func @moe_silu_active(%x: tensor<2x128x64xf16>, %idx: tensor<2x128x1xi32>, %g: tensor<2x128x1xf16>, %w1: tensor<4x64x256xf16>, %w2: tensor<4x256x64xf16>, %active: tensor<2x128xi1>) -> tensor<2x128x64xf16> {
  %y = recur.moe %x, %idx, %g, %w1, %w2 active(%active : tensor<2x128xi1>) {activation = #recur.activation<silu>} : tensor<2x128x64xf16>, tensor<2x128x1xi32>, tensor<2x128x1xf16>, tensor<4x64x256xf16>, tensor<4x256x64xf16>
  return %y : tensor<2x128x64xf16>
}

// Dynamic tokens, experts and hidden width; a single token vector.
// CHECK-LABEL: func.func @moe_dynamic(
// CHECK-SAME: [[X:%.+]]: tensor<?x32xf64>, [[IDX:%.+]]: tensor<?x2xi32>, [[G:%.+]]: tensor<?x2xf64>, [[W1:%.+]]: tensor<?x32x?xf64>, [[W2:%.+]]: tensor<?x?x32xf64>, [[ACTIVE:%.+]]: tensor<?xi1>, [[T:%.+]]: tensor<32xf64>, [[TI:%.+]]: tensor<3xi32>, [[TG:%.+]]: tensor<3xf64>) -> (tensor<?x32xf64>, tensor<32xf64>) {
// CHECK-NEXT: [[Y:%.+]] = recur.moe [[X]], [[IDX]], [[G]], [[W1]], [[W2]] active([[ACTIVE]] : tensor<?xi1>) : tensor<?x32xf64>, tensor<?x2xi32>, tensor<?x2xf64>, tensor<?x32x?xf64>, tensor<?x?x32xf64>
// CHECK-NEXT: [[Z:%.+]] = recur.moe [[T]], [[TI]], [[TG]], [[W1]], [[W2]] {activation = #recur.activation<gelu>} : tensor<32xf64>, tensor<3xi32>, tensor<3xf64>, tensor<?x32x?xf64>, tensor<?x?x32xf64>
// CHECK-NEXT: return [[Y]], [[Z]] : tensor<?x32xf64>, tensor<32xf64>
// CHECK-NEXT: }
func.func @moe_dynamic(%x: tensor<?x32xf64>, %idx: tensor<?x2xi32>, %g: tensor<?x2xf64>, %w1: tensor<?x32x?xf64>, %w2: tensor<?x?x32xf64>, %active: tensor<?xi1>, %t: tensor<32xf64>, %ti: tensor<3xi32>, %tg: tensor<3xf64>) -> (tensor<?x32xf64>, tensor<32xf64>) {
  %y = recur.moe %x, %idx, %g, %w1, %w2 active(%active : tensor<?xi1>) : tensor<?x32xf64>, tensor<?x2xi32>, tensor<?x2xf64>, tensor<?x32x?xf64>, tensor<?x?x32xf64>
  %z = recur.moe %t, %ti, %tg, %w1, %w2 {activation = #recur.activation<gelu>} : tensor<32xf64>, tensor<3xi32>, tensor<3xf64>, tensor<?x32x?xf64>, tensor<?x?x32xf64>
  return %y, %z : tensor<?x32xf64>, tensor<32xf64>
}
