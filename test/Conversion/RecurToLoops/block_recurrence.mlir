// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// One scf.for over the T / 4 blocks of a dynamic T, carrying the output and
// the state: block t of the input is an extract_slice at offset 4t, the body
// (a linear_scan and a gate) is inlined and lowered in place, and its output
// block goes back with insert_slice at the same offset.

// CHECK-LABEL: func.func @block_recurrence_scan_gate
// CHECK-SAME: (%[[X:[^ ]+]]: tensor<2x?x3xf32>, %[[C0:[^ ]+]]: tensor<2x3xf32>, %[[G:[^ ]+]]: tensor<3xf32>)
// CHECK: %[[T:[^ ]+]] = tensor.dim %[[X]], %{{.+}} : tensor<2x?x3xf32>
// CHECK: %[[B:[^ ]+]] = arith.constant 4 : index
// CHECK: %[[NB:[^ ]+]] = arith.divui %[[T]], %[[B]] : index
// CHECK: %[[Y0:[^ ]+]] = tensor.empty(%[[T]]) : tensor<2x?x3xf32>
// CHECK: %[[R:[^ ]+]]:2 = scf.for %[[BLK:[^ ]+]] = %{{.+}} to %[[NB]] step %{{.+}} iter_args(%[[Y:[^ ]+]] = %[[Y0]], %[[C:[^ ]+]] = %[[C0]])
// CHECK:   %[[OFF:[^ ]+]] = arith.muli %[[BLK]], %[[B]] : index
// CHECK:   %[[XB:[^ ]+]] = tensor.extract_slice %[[X]][0, %[[OFF]], 0] [2, 4, 3] [1, 1, 1] : tensor<2x?x3xf32> to tensor<2x4x3xf32>
// CHECK:   %[[SCAN:[^ ]+]]:2 = scf.for
// CHECK:     tensor.extract %[[C]]
// CHECK:       tensor.extract %[[XB]]
// CHECK:       arith.mulf
// CHECK:       arith.addf
// CHECK:   %[[GATE0:[^ ]+]] = tensor.empty() : tensor<2x3xf32>
// CHECK:   %[[NEXT:[^ ]+]] = scf.for {{.*}} iter_args(%{{[^ ]+}} = %[[GATE0]])
// CHECK:       tensor.extract %[[SCAN]]#1
// CHECK:       tensor.extract %[[C]]
// CHECK:       tensor.extract %[[G]]
// CHECK:       math.exp
// CHECK:   %[[YN:[^ ]+]] = tensor.insert_slice %[[SCAN]]#0 into %[[Y]][0, %[[OFF]], 0] [2, 4, 3] [1, 1, 1] : tensor<2x4x3xf32> into tensor<2x?x3xf32>
// CHECK:   scf.yield %[[YN]], %[[NEXT]] : tensor<2x?x3xf32>, tensor<2x3xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @block_recurrence_scan_gate(%x: tensor<2x?x3xf32>,
                                      %c0: tensor<2x3xf32>,
                                      %g: tensor<3xf32>)
    -> (tensor<2x?x3xf32>, tensor<2x3xf32>) {
  %y, %c = recur.block_recurrence (%x : tensor<2x?x3xf32>)
      init(%c0 : tensor<2x3xf32>) block 4 along 1
      -> tensor<2x?x3xf32>, tensor<2x3xf32> {
  ^bb0(%xb: tensor<2x4x3xf32>, %cb: tensor<2x3xf32>):
    %h, %last = recur.linear_scan %xb, %xb init(%cb : tensor<2x3xf32>)
        along 1 : tensor<2x4x3xf32>, tensor<2x4x3xf32>
    %n = recur.gate <fixed> %last, %cb, gates(%g : tensor<3xf32>)
        : tensor<2x3xf32>
    recur.yield %h, %n : tensor<2x4x3xf32>, tensor<2x3xf32>
  }
  return %y, %c : tensor<2x?x3xf32>, tensor<2x3xf32>
}

// -----

// Two inputs cut along the leading axis, a scalar carried value and a value
// from above used in the body; no outputs besides the carried one.

// CHECK-LABEL: func.func @block_recurrence_scalar_carry
// CHECK-SAME: (%[[A:[^ ]+]]: tensor<6x2xf64>, %[[B:[^ ]+]]: tensor<6x2xf64>, %[[S0:[^ ]+]]: f64, %[[W:[^ ]+]]: f64)
// CHECK: %[[R:[^ ]+]] = scf.for %[[BLK:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:[^ ]+]] = %[[S0]]) -> (f64)
// CHECK:   %[[OFF:[^ ]+]] = arith.muli %[[BLK]], %{{.+}} : index
// CHECK:   %[[AB:[^ ]+]] = tensor.extract_slice %[[A]][%[[OFF]], 0] [3, 2] [1, 1] : tensor<6x2xf64> to tensor<3x2xf64>
// CHECK:   %[[BB:[^ ]+]] = tensor.extract_slice %[[B]][%[[OFF]], 0] [3, 2] [1, 1] : tensor<6x2xf64> to tensor<3x2xf64>
// CHECK:   %[[E:[^ ]+]] = tensor.extract %[[AB]]
// CHECK:   %[[F:[^ ]+]] = tensor.extract %[[BB]]
// CHECK:   %[[P:[^ ]+]] = arith.mulf %[[E]], %[[F]] : f64
// CHECK:   %[[Q:[^ ]+]] = arith.mulf %[[S]], %[[W]] : f64
// CHECK:   %[[N:[^ ]+]] = arith.addf %[[Q]], %[[P]] : f64
// CHECK:   scf.yield %[[N]] : f64
// CHECK: return %[[R]] : f64
func.func @block_recurrence_scalar_carry(%a: tensor<6x2xf64>,
                                         %b: tensor<6x2xf64>, %s0: f64,
                                         %w: f64) -> f64 {
  %s = recur.block_recurrence (%a, %b : tensor<6x2xf64>, tensor<6x2xf64>)
      init(%s0 : f64) block 3 along 0 -> f64 {
  ^bb0(%ab: tensor<3x2xf64>, %bb: tensor<3x2xf64>, %sb: f64):
    %c0 = arith.constant 0 : index
    %e = tensor.extract %ab[%c0, %c0] : tensor<3x2xf64>
    %f = tensor.extract %bb[%c0, %c0] : tensor<3x2xf64>
    %p = arith.mulf %e, %f : f64
    %q = arith.mulf %sb, %w : f64
    %n = arith.addf %q, %p : f64
    recur.yield %n : f64
  }
  return %s : f64
}
