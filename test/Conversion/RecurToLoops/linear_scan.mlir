// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// A vector-state scan: one loop over the batch, a sequential loop over time
// carrying the state, and the final state written after the time loop.

// CHECK-LABEL: func.func @linear_scan_vector
// CHECK-SAME: (%[[A:[^ ]+]]: tensor<3x5xf32>, %[[B:[^ ]+]]: tensor<3x5xf32>)
// CHECK: %[[H0:[^ ]+]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[L0:[^ ]+]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[OUT:[^ ]+]]:2 = scf.for %[[I:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[HS:[^ ]+]] = %[[H0]], %[[LS:[^ ]+]] = %[[L0]])
// CHECK:   %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[T:[^ ]+]]:2 = scf.for %[[S:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[H:[^ ]+]] = %[[HS]], %[[C:[^ ]+]] = %[[ZERO]])
// CHECK:     %[[AT:[^ ]+]] = tensor.extract %[[A]][%[[I]], %[[S]]]
// CHECK:     %[[BT:[^ ]+]] = tensor.extract %[[B]][%[[I]], %[[S]]]
// CHECK:     %[[M:[^ ]+]] = arith.mulf %[[AT]], %[[C]] : f32
// CHECK:     %[[N:[^ ]+]] = arith.addf %[[M]], %[[BT]] : f32
// CHECK:     %[[HN:[^ ]+]] = tensor.insert %[[N]] into %[[H]][%[[I]], %[[S]]]
// CHECK:     scf.yield %[[HN]], %[[N]]
// CHECK:   %[[LN:[^ ]+]] = tensor.insert %[[T]]#1 into %[[LS]][%[[I]]]
// CHECK:   scf.yield %[[T]]#0, %[[LN]]
// CHECK: return %[[OUT]]#0, %[[OUT]]#1
func.func @linear_scan_vector(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>)
    -> (tensor<3x5xf32>, tensor<3xf32>) {
  %h, %last = recur.linear_scan %a, %b along 1
      : tensor<3x5xf32>, tensor<3x5xf32>
  return %h, %last : tensor<3x5xf32>, tensor<3xf32>
}

// -----

// A real decay of a complex state, run in reverse from a carried state over
// a dynamic length: the decay is promoted to complex, the position counts down
// from T-1, and the carry starts at `init`.

// CHECK-LABEL: func.func @linear_scan_complex_reverse_init
// CHECK-SAME: (%[[A:[^ ]+]]: tensor<2x?xf64>, %[[B:[^ ]+]]: tensor<2x?xcomplex<f64>>, %[[H0:[^ ]+]]: tensor<2xcomplex<f64>>)
// CHECK: %[[LEN:[^ ]+]] = tensor.dim %[[B]], %{{.+}} : tensor<2x?xcomplex<f64>>
// CHECK: tensor.empty(%[[LEN]]) : tensor<2x?xcomplex<f64>>
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK:   %[[INIT:[^ ]+]] = tensor.extract %[[H0]][%[[I]]]
// CHECK:   scf.for %[[S:[^ ]+]] = %{{.+}} to %[[LEN]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[C:[^ ]+]] = %[[INIT]])
// CHECK:     %[[LASTPOS:[^ ]+]] = arith.subi %[[LEN]], %{{.+}} : index
// CHECK:     %[[POS:[^ ]+]] = arith.subi %[[LASTPOS]], %[[S]] : index
// CHECK:     %[[AT:[^ ]+]] = tensor.extract %[[A]][%[[I]], %[[POS]]]
// CHECK:     %[[AC:[^ ]+]] = complex.create %[[AT]], %{{.+}} : complex<f64>
// CHECK:     %[[BT:[^ ]+]] = tensor.extract %[[B]][%[[I]], %[[POS]]]
// CHECK:     %[[M:[^ ]+]] = complex.mul %[[AC]], %[[C]] : complex<f64>
// CHECK:     complex.add %[[M]], %[[BT]] : complex<f64>
func.func @linear_scan_complex_reverse_init(
    %a: tensor<2x?xf64>, %b: tensor<2x?xcomplex<f64>>,
    %h0: tensor<2xcomplex<f64>>)
    -> (tensor<2x?xcomplex<f64>>, tensor<2xcomplex<f64>>) {
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<2xcomplex<f64>>)
      along 1 reverse : tensor<2x?xf64>, tensor<2x?xcomplex<f64>>
  return %h, %last : tensor<2x?xcomplex<f64>>, tensor<2xcomplex<f64>>
}

// -----

// An outer-product matrix state: `a` covers [batch, time, dk] and is read
// with the leading indices only, broadcast over dv. Scanning along a
// dimension other than the last, the channels of the last one (dv) go by
// groups of up to 128: per group, a scratch row of carries (allocated in
// the group's iteration), a time loop sweeping the group's channels at each
// step, and the carries written to the final state at the end.

// CHECK-LABEL: func.func @linear_scan_matrix_state
// CHECK-SAME: (%[[A:[^ ]+]]: tensor<2x6x4xf32>, %[[B:[^ ]+]]: tensor<2x6x4x3xf32>)
// CHECK: %[[GROUPS:[^ ]+]] = arith.ceildivui %{{.+}}, %{{.+}} : index
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK:   scf.for %[[K:[^ ]+]] =
// CHECK:     scf.for %[[G:[^ ]+]] = %{{.+}} to %[[GROUPS]]
// CHECK:       %[[FIRST:[^ ]+]] = arith.muli %[[G]], %{{.+}} : index
// CHECK:       %[[N:[^ ]+]] = arith.minui
// CHECK:       %[[ROW:[^ ]+]] = bufferization.alloc_tensor() : tensor<128xf32>
// CHECK:       %[[CARRY0:[^ ]+]] = scf.for {{.*}} to %[[N]] {{.*}} iter_args(%{{[^ ]+}} = %[[ROW]])
// CHECK:       %[[TIME:[^ ]+]]:2 = scf.for %[[S:[^ ]+]] = {{.*}} iter_args(%{{[^ ]+}} = %{{[^ ]+}}, %{{[^ ]+}} = %[[CARRY0]])
// CHECK:         scf.for %[[J:[^ ]+]] = %{{.+}} to %[[N]]
// CHECK:           %[[V:[^ ]+]] = arith.addi %[[FIRST]], %[[J]] : index
// CHECK:           tensor.extract %[[A]][%[[I]], %[[S]], %[[K]]] : tensor<2x6x4xf32>
// CHECK:           tensor.extract %[[B]][%[[I]], %[[S]], %[[K]], %[[V]]] : tensor<2x6x4x3xf32>
// CHECK:       scf.for {{.*}} to %[[N]]
// CHECK:         tensor.extract %[[TIME]]#1
func.func @linear_scan_matrix_state(%a: tensor<2x6x4xf32>,
                                    %b: tensor<2x6x4x3xf32>)
    -> tensor<2x6x4x3xf32> {
  %h, %last = recur.linear_scan %a, %b along 1
      : tensor<2x6x4xf32>, tensor<2x6x4x3xf32>
  return %h : tensor<2x6x4x3xf32>
}
