// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.block_recurrence and its recur.yield.

// The Block-Recurrent Transformer's cell loop: one input, one carried state.
// CHECK-LABEL: func.func @block_recurrence_carried_state(
// CHECK-SAME: [[X:%.+]]: tensor<2x1024x64xf32>, [[C0:%.+]]: tensor<2x16x64xf32>) -> (tensor<2x1024x64xf32>, tensor<2x16x64xf32>) {
// CHECK-NEXT: [[Y_C:%.+]]:2 = recur.block_recurrence([[X]] : tensor<2x1024x64xf32>) init([[C0]] : tensor<2x16x64xf32>) block 512 along 1 -> tensor<2x1024x64xf32>, tensor<2x16x64xf32> {
// CHECK-NEXT: ^bb0([[XB:%.+]]: tensor<2x512x64xf32>, [[CB:%.+]]: tensor<2x16x64xf32>):
// CHECK-NEXT: [[N:%.+]] = arith.addf [[CB]], [[CB]] : tensor<2x16x64xf32>
// CHECK-NEXT: recur.yield [[XB]], [[N]] : tensor<2x512x64xf32>, tensor<2x16x64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return [[Y_C]]#0, [[Y_C]]#1 : tensor<2x1024x64xf32>, tensor<2x16x64xf32>
// CHECK-NEXT: }
func.func @block_recurrence_carried_state(%x: tensor<2x1024x64xf32>, %c0: tensor<2x16x64xf32>) -> (tensor<2x1024x64xf32>, tensor<2x16x64xf32>) {
  %y, %c = recur.block_recurrence (%x : tensor<2x1024x64xf32>) init(%c0 : tensor<2x16x64xf32>) block 512 along 1 -> tensor<2x1024x64xf32>, tensor<2x16x64xf32> {
  ^bb0(%xb: tensor<2x512x64xf32>, %cb: tensor<2x16x64xf32>):
    %n = arith.addf %cb, %cb : tensor<2x16x64xf32>
    recur.yield %xb, %n : tensor<2x512x64xf32>, tensor<2x16x64xf32>
  }
  return %y, %c : tensor<2x1024x64xf32>, tensor<2x16x64xf32>
}

// No carried values; two inputs of a dynamic length and an output of another
// shape and element type.
// CHECK-LABEL: func.func @block_recurrence_no_init_dynamic(
// CHECK-SAME: [[X:%.+]]: tensor<?x?x8xf32>, [[M:%.+]]: tensor<?x?xi1>) -> tensor<?x?x4xf64> {
// CHECK-NEXT: [[Y:%.+]] = recur.block_recurrence([[X]], [[M]] : tensor<?x?x8xf32>, tensor<?x?xi1>) block 16 along 1 -> tensor<?x?x4xf64> {
// CHECK-NEXT: ^bb0([[XB:%.+]]: tensor<?x16x8xf32>, [[MB:%.+]]: tensor<?x16xi1>):
// CHECK-NEXT: [[C0:%.+]] = arith.constant 0 : index
// CHECK-NEXT: [[B:%.+]] = tensor.dim [[XB]], [[C0]] : tensor<?x16x8xf32>
// CHECK-NEXT: [[E:%.+]] = tensor.empty([[B]]) : tensor<?x16x4xf64>
// CHECK-NEXT: recur.yield [[E]] : tensor<?x16x4xf64>
// CHECK-NEXT: }
// CHECK-NEXT: return [[Y]] : tensor<?x?x4xf64>
// CHECK-NEXT: }
func.func @block_recurrence_no_init_dynamic(%x: tensor<?x?x8xf32>, %m: tensor<?x?xi1>) -> tensor<?x?x4xf64> {
  %y = recur.block_recurrence (%x, %m : tensor<?x?x8xf32>, tensor<?x?xi1>) block 16 along 1 -> tensor<?x?x4xf64> {
  ^bb0(%xb: tensor<?x16x8xf32>, %mb: tensor<?x16xi1>):
    %c0 = arith.constant 0 : index
    %b = tensor.dim %xb, %c0 : tensor<?x16x8xf32>
    %e = tensor.empty(%b) : tensor<?x16x4xf64>
    recur.yield %e : tensor<?x16x4xf64>
  }
  return %y : tensor<?x?x4xf64>
}

// MemBART's turn loop along axis 0 with carried values that are not tensors
// and no outputs at all.
// CHECK-LABEL: func.func @block_recurrence_scalar_carries(
// CHECK-SAME: [[X:%.+]]: tensor<96x32xf16>, [[N0:%.+]]: index, [[S0:%.+]]: f32) -> (index, f32) {
// CHECK-NEXT: [[N_S:%.+]]:2 = recur.block_recurrence([[X]] : tensor<96x32xf16>) init([[N0]], [[S0]] : index, f32) block 32 along 0 -> index, f32 {
// CHECK-NEXT: ^bb0([[XB:%.+]]: tensor<32x32xf16>, [[NB:%.+]]: index, [[SB:%.+]]: f32):
// CHECK-NEXT: [[ONE:%.+]] = arith.constant 1 : index
// CHECK-NEXT: [[NEXT:%.+]] = arith.addi [[NB]], [[ONE]] : index
// CHECK-NEXT: recur.yield [[NEXT]], [[SB]] : index, f32
// CHECK-NEXT: }
// CHECK-NEXT: return [[N_S]]#0, [[N_S]]#1 : index, f32
// CHECK-NEXT: }
func.func @block_recurrence_scalar_carries(%x: tensor<96x32xf16>, %n0: index, %s0: f32) -> (index, f32) {
  %n, %s = recur.block_recurrence (%x : tensor<96x32xf16>) init(%n0, %s0 : index, f32) block 32 along 0 -> index, f32 {
  ^bb0(%xb: tensor<32x32xf16>, %nb: index, %sb: f32):
    %one = arith.constant 1 : index
    %next = arith.addi %nb, %one : index
    recur.yield %next, %sb : index, f32
  }
  return %n, %s : index, f32
}

// The block covers the whole sequence, the output keeps a static length over
// a dynamic input.
// CHECK-LABEL: func.func @block_recurrence_single_block(
// CHECK-SAME: [[X:%.+]]: tensor<4x?xbf16>) -> tensor<4x8xbf16> {
// CHECK-NEXT: [[Y:%.+]] = recur.block_recurrence([[X]] : tensor<4x?xbf16>) block 8 along 1 -> tensor<4x8xbf16> {
// CHECK-NEXT: ^bb0([[XB:%.+]]: tensor<4x8xbf16>):
// CHECK-NEXT: recur.yield [[XB]] : tensor<4x8xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: return [[Y]] : tensor<4x8xbf16>
// CHECK-NEXT: }
func.func @block_recurrence_single_block(%x: tensor<4x?xbf16>) -> tensor<4x8xbf16> {
  %y = recur.block_recurrence (%x : tensor<4x?xbf16>) block 8 along 1 -> tensor<4x8xbf16> {
  ^bb0(%xb: tensor<4x8xbf16>):
    recur.yield %xb : tensor<4x8xbf16>
  }
  return %y : tensor<4x8xbf16>
}
