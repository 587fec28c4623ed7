// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// fixed: c * g + z * (1 - g) with g = sigmoid(b_g); the bias [d] is read with
// the trailing index only.

// CHECK-LABEL: func.func @gate_fixed_broadcast
// CHECK-SAME: (%[[C:[^ ]+]]: tensor<2x3x4xf32>, %[[Z:[^ ]+]]: tensor<2x3x4xf32>, %[[BG:[^ ]+]]: tensor<4xf32>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK: scf.for %[[J:[^ ]+]] =
// CHECK: scf.for %[[K:[^ ]+]] =
// CHECK:   %[[CV:[^ ]+]] = tensor.extract %[[C]][%[[I]], %[[J]], %[[K]]]
// CHECK:   %[[ZV:[^ ]+]] = tensor.extract %[[Z]][%[[I]], %[[J]], %[[K]]]
// CHECK:   %[[GP:[^ ]+]] = tensor.extract %[[BG]][%[[K]]] : tensor<4xf32>
// CHECK:   %[[ONE:[^ ]+]] = arith.constant 1.000000e+00 : f32
// CHECK:   %[[NEG:[^ ]+]] = arith.negf %[[GP]] : f32
// CHECK:   %[[E:[^ ]+]] = math.exp %[[NEG]] : f32
// CHECK:   %[[D:[^ ]+]] = arith.addf %{{.+}}, %[[E]] : f32
// CHECK:   %[[G:[^ ]+]] = arith.divf %{{.+}}, %[[D]] : f32
// CHECK:   %[[KEEP:[^ ]+]] = arith.mulf %[[CV]], %[[G]] : f32
// CHECK:   %[[REST:[^ ]+]] = arith.subf %[[ONE]], %[[G]] : f32
// CHECK:   %[[WRITE:[^ ]+]] = arith.mulf %[[ZV]], %[[REST]] : f32
// CHECK:   %[[NEW:[^ ]+]] = arith.addf %[[KEEP]], %[[WRITE]] : f32
// CHECK:   tensor.insert %[[NEW]]
func.func @gate_fixed_broadcast(%c: tensor<2x3x4xf32>, %z: tensor<2x3x4xf32>,
                                %bg: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %r = recur.gate <fixed> %c, %z, gates(%bg : tensor<4xf32>)
      : tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// lstm: the default input bias -1 is added to the input gate, an explicit
// forget_bias (here 2.5) to the forget gate; c * f + z * i.

// CHECK-LABEL: func.func @gate_lstm_biases
// CHECK-SAME: (%[[C:[^ ]+]]: tensor<5xf64>, %[[Z:[^ ]+]]: tensor<5xf64>, %[[I:[^ ]+]]: tensor<5xf64>, %[[F:[^ ]+]]: tensor<5xf64>)
// CHECK: %[[CV:[^ ]+]] = tensor.extract %[[C]]
// CHECK: %[[ZV:[^ ]+]] = tensor.extract %[[Z]]
// CHECK: %[[IP:[^ ]+]] = tensor.extract %[[I]]
// CHECK: %[[FP:[^ ]+]] = tensor.extract %[[F]]
// CHECK-DAG: %[[IB:[^ ]+]] = arith.constant -1.000000e+00 : f64
// CHECK-DAG: %[[FB:[^ ]+]] = arith.constant 2.500000e+00 : f64
// CHECK: arith.addf %[[IP]], %[[IB]] : f64
// CHECK: math.exp
// CHECK: %[[IG:[^ ]+]] = arith.divf
// CHECK: arith.addf %[[FP]], %[[FB]] : f64
// CHECK: math.exp
// CHECK: %[[FG:[^ ]+]] = arith.divf
// CHECK: %[[KEEP:[^ ]+]] = arith.mulf %[[CV]], %[[FG]] : f64
// CHECK: %[[WRITE:[^ ]+]] = arith.mulf %[[ZV]], %[[IG]] : f64
// CHECK: arith.addf %[[KEEP]], %[[WRITE]] : f64
func.func @gate_lstm_biases(%c: tensor<5xf64>, %z: tensor<5xf64>,
                            %i: tensor<5xf64>, %f: tensor<5xf64>)
    -> tensor<5xf64> {
  %r = recur.gate <lstm> %c, %z, gates(%i, %f : tensor<5xf64>, tensor<5xf64>)
      {forget_bias = 2.5 : f64} : tensor<5xf64>
  return %r : tensor<5xf64>
}

// -----

// update: u * z + (1 - u) * c with a gate [K, 1] of dynamic K broadcast over
// the width; its size-one dimension is read at index 0, its dynamic one
// checked at run time.

// CHECK-LABEL: func.func @gate_update_dynamic_broadcast
// CHECK-SAME: (%[[C:[^ ]+]]: tensor<?x8xf32>, %[[Z:[^ ]+]]: tensor<?x8xf32>, %[[P:[^ ]+]]: tensor<?x1xf32>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK: scf.for %[[J:[^ ]+]] =
// CHECK:   %[[CV:[^ ]+]] = tensor.extract %[[C]][%[[I]], %[[J]]]
// CHECK:   %[[ZV:[^ ]+]] = tensor.extract %[[Z]][%[[I]], %[[J]]]
// CHECK:   %[[ZERO:[^ ]+]] = arith.constant 0 : index
// CHECK:   %[[DIM:[^ ]+]] = tensor.dim %[[P]], %{{.+}} : tensor<?x1xf32>
// CHECK:   %[[ISONE:[^ ]+]] = arith.cmpi eq, %[[DIM]], %{{.+}} : index
// CHECK:   %[[ROW:[^ ]+]] = arith.select %[[ISONE]], %[[ZERO]], %[[I]] : index
// CHECK:   %[[PV:[^ ]+]] = tensor.extract %[[P]][%[[ROW]], %[[ZERO]]] : tensor<?x1xf32>
// CHECK:   %[[ONE:[^ ]+]] = arith.constant 1.000000e+00 : f32
// CHECK:   arith.negf %[[PV]]
// CHECK:   %[[U:[^ ]+]] = arith.divf
// CHECK:   %[[WRITE:[^ ]+]] = arith.mulf %[[U]], %[[ZV]] : f32
// CHECK:   %[[REST:[^ ]+]] = arith.subf %[[ONE]], %[[U]] : f32
// CHECK:   %[[KEEP:[^ ]+]] = arith.mulf %[[REST]], %[[CV]] : f32
// CHECK:   arith.addf %[[WRITE]], %[[KEEP]] : f32
func.func @gate_update_dynamic_broadcast(%c: tensor<?x8xf32>,
                                         %z: tensor<?x8xf32>,
                                         %p: tensor<?x1xf32>)
    -> tensor<?x8xf32> {
  %r = recur.gate <update> %c, %z, gates(%p : tensor<?x1xf32>)
      : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
