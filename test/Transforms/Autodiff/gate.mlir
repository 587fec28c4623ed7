// RUN: recur-opt %s --split-input-file --recur-derive-backward --canonicalize | FileCheck %s

// recur.gate differentiates as the generic that computes the same formula
// (sigmoid gates, numpy broadcast): the broadcast bias's cotangent sums over
// the dimensions it does not have.

// CHECK-LABEL: func.func @fixed_backward
// CHECK-SAME:    (%[[C:[^:]*]]: tensor<2x8x4xf32>, %[[Z:[^:]*]]: tensor<2x8x4xf32>, %[[BG:[^:]*]]: tensor<4xf32>, %[[DR:[^:]*]]: tensor<2x8x4xf32>
// CHECK:         %[[DC:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[C]], %[[Z]], %[[BG]], %[[DR]] :
// CHECK:         %[[DZ:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[C]], %[[Z]], %[[BG]], %[[DR]] :
// CHECK:         %[[DBG:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[C]], %[[Z]], %[[BG]], %[[DR]] :
// CHECK:           math.exp
// CHECK:         return %[[DC]], %[[DZ]], %[[DBG]]
func.func @fixed(%c: tensor<2x8x4xf32>, %z: tensor<2x8x4xf32>, %bg: tensor<4xf32>) -> tensor<2x8x4xf32> {
  %r = recur.gate <fixed> %c, %z, gates(%bg : tensor<4xf32>) : tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// -----

// memory_update is stop-gradient by definition: nothing reaches the memory
// or the new states.

// CHECK-LABEL: func.func @memory_backward
// CHECK:         %[[Z1:.*]] = linalg.fill
// CHECK:         %[[Z2:.*]] = linalg.fill
// CHECK:         return %[[Z1]], %[[Z2]]
func.func @memory(%m: tensor<2x4x8xf32>, %h: tensor<2x3x8xf32>) -> tensor<2x4x8xf32> {
  %r = recur.memory_update %m, %h along 1 keep 4 : tensor<2x4x8xf32>, tensor<2x3x8xf32>
  return %r : tensor<2x4x8xf32>
}
