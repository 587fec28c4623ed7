// RUN: recur-opt %s --convert-recur-to-loops | FileCheck %s --implicit-check-not=recur.

// The forward value of stop_gradient is its operand.

// CHECK-LABEL: func.func @stop_gradient_forward
// CHECK-SAME: (%[[M:.+]]: tensor<2x4xf32>)
// CHECK-NEXT: return %[[M]] : tensor<2x4xf32>
func.func @stop_gradient_forward(%m: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = recur.stop_gradient %m : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
