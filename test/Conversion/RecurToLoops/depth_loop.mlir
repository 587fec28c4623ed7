// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// max_depth iterations of an scf.for whose induction variable is the body's
// step index; the body is inlined with the carried values as iter_args.

// CHECK-LABEL: func.func @depth_loop_step_index
// CHECK-SAME: (%[[H0:[^ ]+]]: tensor<4xf64>, %[[X:[^ ]+]]: tensor<6x4xf64>)
// CHECK: %[[ZERO:[^ ]+]] = arith.constant 0 : index
// CHECK: %[[DEPTH:[^ ]+]] = arith.constant 6 : index
// CHECK: %[[R:[^ ]+]] = scf.for %[[L:[^ ]+]] = %[[ZERO]] to %[[DEPTH]] step %{{.+}} iter_args(%[[H:[^ ]+]] = %[[H0]]) -> (tensor<4xf64>)
// CHECK:   %[[ROW:[^ ]+]] = tensor.extract_slice %[[X]][%[[L]], 0] [1, 4] [1, 1]
// CHECK:   %[[N:[^ ]+]] = arith.addf %[[H]], %[[ROW]] : tensor<4xf64>
// CHECK:   scf.yield %[[N]] : tensor<4xf64>
// CHECK: return %[[R]] : tensor<4xf64>
func.func @depth_loop_step_index(%h0: tensor<4xf64>, %x: tensor<6x4xf64>)
    -> tensor<4xf64> {
  %h = recur.depth_loop max_depth 6 init(%h0 : tensor<4xf64>) {
  ^bb0(%l: index, %hh: tensor<4xf64>):
    %row = tensor.extract_slice %x[%l, 0] [1, 4] [1, 1]
        : tensor<6x4xf64> to tensor<4xf64>
    %n = arith.addf %hh, %row : tensor<4xf64>
    recur.yield %n : tensor<4xf64>
  }
  return %h : tensor<4xf64>
}

// -----

// Halting inside the depth loop: the nested recur.halting is lowered in the
// inlined body, and the loop carries state, mass, accumulator and output.

// CHECK-LABEL: func.func @depth_loop_halting
// CHECK-SAME: (%[[P:[^ ]+]]: tensor<3xf32>, %[[H:[^ ]+]]: tensor<3x2xf32>, %[[M0:[^ ]+]]: tensor<3xf32>, %[[A0:[^ ]+]]: tensor<3x2xf32>, %[[S0:[^ ]+]]: tensor<3x2xf32>)
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:[^ ]+]] = %[[M0]], %[[A:[^ ]+]] = %[[A0]], %[[S:[^ ]+]] = %[[S0]]) -> (tensor<3xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
// CHECK:   %[[HALT:[^ ]+]]:4 = scf.for %[[T:[^ ]+]] =
// CHECK:     tensor.extract %[[M]][%[[T]]]
// CHECK:     arith.cmpf olt
// CHECK:     scf.for
// CHECK:       tensor.extract %[[A]]
// CHECK:       tensor.extract %[[S]]
// CHECK:   scf.yield %[[HALT]]#2, %[[HALT]]#3, %[[HALT]]#1
func.func @depth_loop_halting(%p: tensor<3xf32>, %h: tensor<3x2xf32>,
                              %m0: tensor<3xf32>, %acc0: tensor<3x2xf32>,
                              %s0: tensor<3x2xf32>)
    -> (tensor<3xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %m, %acc, %s = recur.depth_loop max_depth 3
      init(%m0, %acc0, %s0 : tensor<3xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  ^bb0(%l: index, %mm: tensor<3xf32>, %aa: tensor<3x2xf32>,
       %ss: tensor<3x2xf32>):
    %a, %s1, %m1, %acc1 = recur.halting %p, %h, %mm, %aa, %ss
        : tensor<3xf32>, tensor<3x2xf32>
    recur.yield %m1, %acc1, %s1 : tensor<3xf32>, tensor<3x2xf32>,
                                  tensor<3x2xf32>
  }
  return %m, %acc, %s : tensor<3xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
