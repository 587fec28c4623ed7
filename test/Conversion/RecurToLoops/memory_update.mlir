// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// keep 4 of [memory (5); new (3)]: the last max(4 - 3, 0) = 1 memory
// position, then all 3 new ones, as two slices into an empty result.

// CHECK-LABEL: func.func @memory_update_static
// CHECK-SAME: (%[[M:[^ ]+]]: tensor<2x5x3xf32>, %[[N:[^ ]+]]: tensor<2x3x3xf32>)
// CHECK: %[[E:[^ ]+]] = tensor.empty() : tensor<2x4x3xf32>
// CHECK: %[[MS:[^ ]+]] = tensor.extract_slice %[[M]][0, 4, 0] [2, 1, 3] [1, 1, 1] : tensor<2x5x3xf32> to tensor<2x1x3xf32>
// CHECK: %[[R1:[^ ]+]] = tensor.insert_slice %[[MS]] into %[[E]][0, 0, 0] [2, 1, 3] [1, 1, 1]
// CHECK: %[[NS:[^ ]+]] = tensor.extract_slice %[[N]][0, 0, 0] [2, 3, 3] [1, 1, 1] : tensor<2x3x3xf32> to tensor<2x3x3xf32>
// CHECK: %[[R2:[^ ]+]] = tensor.insert_slice %[[NS]] into %[[R1]][0, 1, 0] [2, 3, 3] [1, 1, 1]
// CHECK: return %[[R2]] : tensor<2x4x3xf32>
func.func @memory_update_static(%m: tensor<2x5x3xf32>, %n: tensor<2x3x3xf32>)
    -> tensor<2x4x3xf32> {
  %r = recur.memory_update %m, %n along 1 keep 4
      : tensor<2x5x3xf32>, tensor<2x3x3xf32>
  return %r : tensor<2x4x3xf32>
}

// -----

// keep 2 < L = 3: nothing of the memory, the last 2 new positions.

// CHECK-LABEL: func.func @memory_update_only_new
// CHECK-SAME: (%[[M:[^ ]+]]: tensor<5x2xf32>, %[[N:[^ ]+]]: tensor<3x2xf32>)
// CHECK-NOT: tensor.extract_slice %[[M]]
// CHECK: %[[NS:[^ ]+]] = tensor.extract_slice %[[N]][1, 0] [2, 2] [1, 1] : tensor<3x2xf32> to tensor<2x2xf32>
// CHECK: tensor.insert_slice %[[NS]] into %{{.+}}[0, 0] [2, 2] [1, 1]
func.func @memory_update_only_new(%m: tensor<5x2xf32>, %n: tensor<3x2xf32>)
    -> tensor<2x2xf32> {
  %r = recur.memory_update %m, %n along 0 keep 2
      : tensor<5x2xf32>, tensor<3x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// Dynamic M and L: the split is computed at run time.

// CHECK-LABEL: func.func @memory_update_dynamic
// CHECK-SAME: (%[[M:[^ ]+]]: tensor<?x4xf64>, %[[N:[^ ]+]]: tensor<?x4xf64>)
// CHECK: %[[ML:[^ ]+]] = tensor.dim %[[M]], %{{.+}} : tensor<?x4xf64>
// CHECK: %[[NL:[^ ]+]] = tensor.dim %[[N]], %{{.+}} : tensor<?x4xf64>
// CHECK: %[[SIZE:[^ ]+]] = arith.constant 6 : index
// CHECK: %[[D:[^ ]+]] = arith.subi %[[SIZE]], %[[NL]] : index
// CHECK: %[[FROMM:[^ ]+]] = arith.maxsi %[[D]], %{{.+}} : index
// CHECK: %[[FROMN:[^ ]+]] = arith.subi %{{.+}}, %[[FROMM]] : index
// CHECK: %[[MSTART:[^ ]+]] = arith.subi %[[ML]], %[[FROMM]] : index
// CHECK: %[[NSTART:[^ ]+]] = arith.subi %[[NL]], %[[FROMN]] : index
// CHECK: %[[E:[^ ]+]] = tensor.empty() : tensor<6x4xf64>
// CHECK: %[[MS:[^ ]+]] = tensor.extract_slice %[[M]][%[[MSTART]], 0] [%[[FROMM]], 4] [1, 1]
// CHECK: %[[R1:[^ ]+]] = tensor.insert_slice %[[MS]] into %[[E]][0, 0] [%[[FROMM]], 4] [1, 1]
// CHECK: %[[NS:[^ ]+]] = tensor.extract_slice %[[N]][%[[NSTART]], 0] [%[[FROMN]], 4] [1, 1]
// CHECK: tensor.insert_slice %[[NS]] into %[[R1]][%[[FROMM]], 0] [%[[FROMN]], 4] [1, 1]
func.func @memory_update_dynamic(%m: tensor<?x4xf64>, %n: tensor<?x4xf64>)
    -> tensor<6x4xf64> {
  %r = recur.memory_update %m, %n along 0 keep 6
      : tensor<?x4xf64>, tensor<?x4xf64>
  return %r : tensor<6x4xf64>
}
