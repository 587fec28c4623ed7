// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// Without an init, step 0 takes x_0 as it is (scf.if on t == 0) and later
// steps inline the combine region on (carry, x).

// CHECK-LABEL: func.func @scan_gateloop_operator
// CHECK-SAME: (%[[A:[^ ]+]]: tensor<4x16xf32>, %[[KV:[^ ]+]]: tensor<4x16xf32>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK:   scf.for %[[T:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[O0:[^ ]+]] = %{{.+}}, %[[O1:[^ ]+]] = %{{.+}}, %[[P1:[^ ]+]] = %{{.+}}, %[[P2:[^ ]+]] = %{{.+}})
// CHECK:     %[[Q1:[^ ]+]] = tensor.extract %[[A]][%[[I]], %[[T]]]
// CHECK:     %[[Q2:[^ ]+]] = tensor.extract %[[KV]][%[[I]], %[[T]]]
// CHECK:     %[[FIRST:[^ ]+]] = arith.cmpi eq, %[[T]], %{{.+}} : index
// CHECK:     %[[NEXT:[^ ]+]]:2 = scf.if %[[FIRST]] -> (f32, f32) {
// CHECK:       scf.yield %[[Q1]], %[[Q2]] : f32, f32
// CHECK:     } else {
// CHECK:       %[[M:[^ ]+]] = arith.mulf %[[P1]], %[[Q1]] : f32
// CHECK:       %[[X:[^ ]+]] = arith.mulf %[[Q1]], %[[P2]] : f32
// CHECK:       %[[S:[^ ]+]] = arith.addf %[[X]], %[[Q2]] : f32
// CHECK:       scf.yield %[[M]], %[[S]] : f32, f32
// CHECK:     }
// CHECK:     %[[R0:[^ ]+]] = tensor.insert %[[NEXT]]#0 into %[[O0]][%[[I]], %[[T]]]
// CHECK:     %[[R1:[^ ]+]] = tensor.insert %[[NEXT]]#1 into %[[O1]][%[[I]], %[[T]]]
// CHECK:     scf.yield %[[R0]], %[[R1]], %[[NEXT]]#0, %[[NEXT]]#1
func.func @scan_gateloop_operator(%a: tensor<4x16xf32>, %kv: tensor<4x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %A, %H = recur.scan (%a, %kv) along 1 {associative}
      : tensor<4x16xf32>, tensor<4x16xf32> {
  ^bb0(%p1: f32, %p2: f32, %q1: f32, %q2: f32):
    %m = arith.mulf %p1, %q1 : f32
    %t = arith.mulf %q1, %p2 : f32
    %s = arith.addf %t, %q2 : f32
    recur.yield %m, %s : f32, f32
  }
  return %A, %H : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// With an init the carry starts at init and every step combines; no scf.if.

// CHECK-LABEL: func.func @scan_init_reverse
// CHECK-SAME: (%[[X:[^ ]+]]: tensor<7xf64>, %[[C0:[^ ]+]]: tensor<f64>)
// CHECK: %[[START:[^ ]+]] = tensor.extract %[[C0]][] : tensor<f64>
// CHECK: scf.for %[[T:[^ ]+]] = %{{.+}} to %[[LEN:[^ ]+]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[C:[^ ]+]] = %[[START]])
// CHECK:   %[[POS:[^ ]+]] = arith.subi %{{.+}}, %[[T]] : index
// CHECK:   %[[XT:[^ ]+]] = tensor.extract %[[X]][%[[POS]]]
// CHECK-NOT: scf.if
// CHECK:   arith.maximumf %[[C]], %[[XT]] : f64
func.func @scan_init_reverse(%x: tensor<7xf64>, %c0: tensor<f64>)
    -> tensor<7xf64> {
  %r = recur.scan (%x) init(%c0 : tensor<f64>) along 0 reverse
      : tensor<7xf64> {
  ^bb0(%p: f64, %q: f64):
    %m = arith.maximumf %p, %q : f64
    recur.yield %m : f64
  }
  return %r : tensor<7xf64>
}
