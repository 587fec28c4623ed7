// RUN: recur-opt %s --recur-derive-backward --canonicalize | FileCheck %s

// recur.window_attention differentiates to the fused
// recur.window_attention_grad with the forward's operands and attributes and
// the output's cotangent: one cotangent per operand (the bias table and the
// K/V cache included), in operand order. The forward op is dead in the
// backward.

// CHECK-LABEL: func.func @t5_cache_backward(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x4x32x8xf32>, %[[K:[^:]+]]: tensor<2x4x32x8xf32>, %[[V:[^:]+]]: tensor<2x4x32x8xf32>, %[[T5:[^:]+]]: tensor<4x16xf32>, %[[KC:[^:]+]]: tensor<2x4x16x8xf32>, %[[VC:[^:]+]]: tensor<2x4x16x8xf32>, %[[DY:[^:]+]]: tensor<2x4x32x8xf32> {recur.name = "d_", recur.role = "cotangent"})
// CHECK-NOT:   recur.window_attention %
// CHECK:       %[[G:.+]]:6 = recur.window_attention_grad %[[Q]], %[[K]], %[[V]], %[[DY]] bias(%[[T5]] : tensor<4x16xf32>) cache(%[[KC]], %[[VC]] : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) window 16 {bias_kind = #recur.bias<t5>, block = 16 : i64, max_distance = 64 : i64, num_buckets = 16 : i64}
// CHECK-NEXT:  return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3, %[[G]]#4, %[[G]]#5
func.func @t5_cache(%q: tensor<2x4x32x8xf32>, %k: tensor<2x4x32x8xf32>, %v: tensor<2x4x32x8xf32>, %t5: tensor<4x16xf32>, %kc: tensor<2x4x16x8xf32>, %vc: tensor<2x4x16x8xf32>) -> tensor<2x4x32x8xf32> {
  %o = recur.window_attention %q, %k, %v bias(%t5 : tensor<4x16xf32>) cache(%kc, %vc : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) window 16 {bias_kind = #recur.bias<t5>, block = 16 : i64, num_buckets = 16 : i64, max_distance = 64 : i64} : tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>
  return %o : tensor<2x4x32x8xf32>
}

// The same keys and values: their cotangents add up.
// CHECK-LABEL: func.func @shared_kv_backward(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x7x4xf32>, %[[KV:[^:]+]]: tensor<2x7x4xf32>, %[[DY:[^:]+]]: tensor<2x7x4xf32>
// CHECK:       %[[G:.+]]:3 = recur.window_attention_grad %[[Q]], %[[KV]], %[[KV]], %[[DY]] window 3 {include_self, scale = 5.000000e-01 : f64}
// CHECK:       %[[SUM:.+]] = linalg.generic
// CHECK-SAME:    ins(%[[G]]#1, %[[G]]#2 :
// CHECK:         arith.addf
// CHECK:       return %[[G]]#0, %[[SUM]]
func.func @shared_kv(%q: tensor<2x7x4xf32>, %kv: tensor<2x7x4xf32>) -> tensor<2x7x4xf32> {
  %o = recur.window_attention %q, %kv, %kv window 3 {include_self, scale = 0.5 : f64} : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x4xf32>
  return %o : tensor<2x7x4xf32>
}
