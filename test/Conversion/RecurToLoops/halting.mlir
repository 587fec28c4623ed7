// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// Per token: active while mass < threshold, compared in f64 (the attribute's
// type); a = p_hat (1 - mass), new_mass = mass + a, and per feature
// s = (1 - mass) h + acc, new_acc = acc + a h; a halted token gets a = 0 and
// exact copies (selects) of mass, s_prev and acc.

// CHECK-LABEL: func.func @halting_f32
// CHECK-SAME: (%[[P:[^ ]+]]: tensor<2x3xf32>, %[[H:[^ ]+]]: tensor<2x3x4xf32>, %[[M:[^ ]+]]: tensor<2x3xf32>, %[[ACC:[^ ]+]]: tensor<2x3x4xf32>, %[[SP:[^ ]+]]: tensor<2x3x4xf32>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK:   scf.for %[[J:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[AS:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}}, %[[MS:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}})
// CHECK:     %[[PV:[^ ]+]] = tensor.extract %[[P]][%[[I]], %[[J]]]
// CHECK:     %[[MV:[^ ]+]] = tensor.extract %[[M]][%[[I]], %[[J]]]
// CHECK:     %[[MW:[^ ]+]] = arith.extf %[[MV]] : f32 to f64
// CHECK:     %[[THR:[^ ]+]] = arith.constant 8.000000e-01 : f64
// CHECK:     %[[ACT:[^ ]+]] = arith.cmpf olt, %[[MW]], %[[THR]] : f64
// CHECK:     %[[ONE:[^ ]+]] = arith.constant 1.000000e+00 : f32
// CHECK:     %[[REST:[^ ]+]] = arith.subf %[[ONE]], %[[MV]] : f32
// CHECK:     %[[A:[^ ]+]] = arith.mulf %[[PV]], %[[REST]] : f32
// CHECK:     %[[NM:[^ ]+]] = arith.addf %[[MV]], %[[A]] : f32
// CHECK:     %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK:     %[[AOUT:[^ ]+]] = arith.select %[[ACT]], %[[A]], %[[ZERO]] : f32
// CHECK:     %[[MOUT:[^ ]+]] = arith.select %[[ACT]], %[[NM]], %[[MV]] : f32
// CHECK:     %[[ROWS:[^ ]+]]:2 = scf.for %[[E:[^ ]+]] =
// CHECK:       %[[HV:[^ ]+]] = tensor.extract %[[H]][%[[I]], %[[J]], %[[E]]]
// CHECK:       %[[CV:[^ ]+]] = tensor.extract %[[ACC]][%[[I]], %[[J]], %[[E]]]
// CHECK:       %[[SV:[^ ]+]] = tensor.extract %[[SP]][%[[I]], %[[J]], %[[E]]]
// CHECK:       %[[RH:[^ ]+]] = arith.mulf %[[REST]], %[[HV]] : f32
// CHECK:       %[[S:[^ ]+]] = arith.addf %[[RH]], %[[CV]] : f32
// CHECK:       %[[AH:[^ ]+]] = arith.mulf %[[A]], %[[HV]] : f32
// CHECK:       %[[NACC:[^ ]+]] = arith.addf %[[CV]], %[[AH]] : f32
// CHECK:       arith.select %[[ACT]], %[[S]], %[[SV]] : f32
// CHECK:       arith.select %[[ACT]], %[[NACC]], %[[CV]] : f32
// CHECK:     %[[A1:[^ ]+]] = tensor.insert %[[AOUT]] into %[[AS]][%[[I]], %[[J]]]
// CHECK:     %[[M1:[^ ]+]] = tensor.insert %[[MOUT]] into %[[MS]][%[[I]], %[[J]]]
// CHECK:     scf.yield %[[A1]], %[[ROWS]]#0, %[[M1]], %[[ROWS]]#1
func.func @halting_f32(%p: tensor<2x3xf32>, %h: tensor<2x3x4xf32>,
                       %m: tensor<2x3xf32>, %acc: tensor<2x3x4xf32>,
                       %s: tensor<2x3x4xf32>)
    -> (tensor<2x3xf32>, tensor<2x3x4xf32>, tensor<2x3xf32>,
        tensor<2x3x4xf32>) {
  %a, %s1, %m1, %acc1 = recur.halting %p, %h, %m, %acc, %s
      {threshold = 0.8 : f64} : tensor<2x3xf32>, tensor<2x3x4xf32>
  return %a, %s1, %m1, %acc1 : tensor<2x3xf32>, tensor<2x3x4xf32>,
                               tensor<2x3xf32>, tensor<2x3x4xf32>
}

// -----

// A single token of dynamic width in f64: no loops over tokens, no
// widening, the default threshold 0.999.

// CHECK-LABEL: func.func @halting_one_token
// CHECK-SAME: (%[[P:[^ ]+]]: tensor<f64>, %[[H:[^ ]+]]: tensor<?xf64>, %[[M:[^ ]+]]: tensor<f64>
// CHECK: %[[D:[^ ]+]] = tensor.dim %[[H]], %{{.+}} : tensor<?xf64>
// CHECK: %[[MV:[^ ]+]] = tensor.extract %[[M]][] : tensor<f64>
// CHECK-NOT: arith.extf
// CHECK: %[[THR:[^ ]+]] = arith.constant 0.99899999999999999 : f64
// CHECK: arith.cmpf olt, %[[MV]], %[[THR]] : f64
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[D]] step
func.func @halting_one_token(%p: tensor<f64>, %h: tensor<?xf64>,
                             %m: tensor<f64>, %acc: tensor<?xf64>,
                             %s: tensor<?xf64>)
    -> (tensor<f64>, tensor<?xf64>, tensor<f64>, tensor<?xf64>) {
  %a, %s1, %m1, %acc1 = recur.halting %p, %h, %m, %acc, %s
      : tensor<f64>, tensor<?xf64>
  return %a, %s1, %m1, %acc1 : tensor<f64>, tensor<?xf64>, tensor<f64>,
                               tensor<?xf64>
}
