// RUN: recur-opt %s --recur-derive-backward --canonicalize | FileCheck %s

// recur.attention differentiates through its definition: scores, the causal
// mask by index (hidden keys at -inf), the row max as a stop-gradient shift,
// exp, the row sum (a zero row when no key is seen), the probabilities and
// p v. The forward attention op is dead in the backward.

// CHECK-LABEL: func.func @causal_backward
// CHECK-NOT:     recur.attention
// CHECK:         linalg.generic
// CHECK:           arith.cmpi sle
// CHECK:           arith.select
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           arith.maximumf
// CHECK:         recur.stop_gradient %[[MAX]]
// CHECK:           math.exp
// CHECK:         return
func.func @causal(%q: tensor<2x5x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  %o = recur.attention %q, %k, %v {mask = #recur.mask<causal>} : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x3xf32>
  return %o : tensor<2x5x3xf32>
}
