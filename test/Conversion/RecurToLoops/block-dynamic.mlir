// RUN: recur-opt %s --convert-recur-to-loops --canonicalize | FileCheck %s --implicit-check-not=recur.

// A block_recurrence output with a dynamic size besides the axis (the batch
// of a layer) takes it from the first block: block 0 runs inside an scf.if
// on there being a block, the outputs are allocated with the sizes its
// outputs have, and the loop covers blocks 1 .. T/W - 1.

// CHECK-LABEL: func.func @block_output_dynamic_batch
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         %[[T:.*]] = tensor.dim %[[X]], %[[C1]]
// CHECK:         %[[NB:.*]] = arith.divui %[[T]], %[[C4]] : index
// CHECK:         %[[ANY:.*]] = arith.cmpi ugt, %[[NB]], %[[C0]] : index
// CHECK:         %[[PEEL:.*]] = scf.if %[[ANY]] -> (tensor<?x?xf32>) {
// CHECK:           %[[ROWS:.*]] = tensor.dim %[[X]], %[[C0]]
// CHECK:           %[[B0:.*]] = tensor.extract_slice %[[X]][0, 0] [%[[ROWS]], 4] [1, 1]
// CHECK:           %[[Y0:.*]] = linalg.generic {{.*}} ins(%[[B0]]
// CHECK:             arith.negf
// CHECK:           %[[OUT:.*]] = tensor.empty(%[[ROWS]], %[[T]]) : tensor<?x?xf32>
// CHECK:           %[[INS:.*]] = tensor.insert_slice %[[Y0]] into %[[OUT]][0, 0] [%[[ROWS]], 4] [1, 1]
// CHECK:           scf.yield %[[INS]] : tensor<?x?xf32>
// CHECK:         } else {
// CHECK:           %[[NONE:.*]] = tensor.empty(%[[T]]) : tensor<0x?xf32>
// CHECK:           %[[CAST:.*]] = tensor.cast %[[NONE]]
// CHECK:           scf.yield %[[CAST]] : tensor<?x?xf32>
// CHECK:         }
// CHECK:         %[[R:.*]] = scf.for %[[BLK:.*]] = %[[C1]] to %[[NB]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[PEEL]]) -> (tensor<?x?xf32>) {
// CHECK:           %[[OFF:.*]] = arith.muli %[[BLK]], %[[C4]]
// CHECK:           tensor.extract_slice %[[X]][0, %[[OFF]]]
// CHECK:           tensor.insert_slice %{{.*}} into %[[ACC]]
// CHECK:         }
// CHECK:         return %[[R]] : tensor<?x?xf32>
func.func @block_output_dynamic_batch(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %y = recur.block_recurrence (%x : tensor<?x?xf32>) block 4 along 1
      -> tensor<?x?xf32> {
  ^bb0(%xb: tensor<?x4xf32>):
    %c0 = arith.constant 0 : index
    %n = tensor.dim %xb, %c0 : tensor<?x4xf32>
    %e = tensor.empty(%n) : tensor<?x4xf32>
    %neg = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                            affine_map<(i, j) -> (i, j)>],
                           iterator_types = ["parallel", "parallel"]}
        ins(%xb : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.negf %in : f32
      linalg.yield %m : f32
    } -> tensor<?x4xf32>
    recur.yield %neg : tensor<?x4xf32>
  }
  return %y : tensor<?x?xf32>
}
