// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// The recurrent algorithm (gla-chunked.mlir has the chunked one): per leading
// index the state starts at zero, then for every step t the output row y_t is
// cleared and, for every key index i (a state row), the inner loop over the
// columns j updates S[i, j] = a_t[i] S[i, j] + k_t[i] v_t[j] in the state
// result and adds q_t[i] S[i, j] to y_t[j] (so y_t[j] sums over i in order
// from zero), the rows four at a time and then one at a time. T is dynamic.

// CHECK-LABEL: func.func @gla_real_dynamic
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x?x3xf32>, %[[K:[^ ]+]]: tensor<2x?x3xf32>, %[[V:[^ ]+]]: tensor<2x?x4xf32>, %[[A:[^ ]+]]: tensor<2x?x3xf32>)
// CHECK: %[[T:[^ ]+]] = tensor.dim %[[Q]], %{{.+}} : tensor<2x?x3xf32>
// CHECK: %[[Y0:[^ ]+]] = tensor.empty(%{{.+}}) : tensor<2x?x4xf32>
// CHECK: %[[S0:[^ ]+]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK: scf.for %[[N:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[YS:[^ ]+]] = %[[Y0]], %[[SS:[^ ]+]] = %[[S0]])
// CHECK:   %[[ZS:[^ ]+]] = scf.for
// CHECK:     scf.for
// CHECK:       %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK:       tensor.insert %[[ZERO]]
// CHECK:   scf.for %[[TI:[^ ]+]] = %{{.+}} to %[[T]] step %{{.+}} iter_args(%[[YT:[^ ]+]] = %[[YS]], %[[ST:[^ ]+]] = %[[ZS]])
// CHECK:     %[[CLEARED:[^ ]+]] = scf.for %[[J0:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[YC:[^ ]+]] = %[[YT]])
// CHECK:       %[[YZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK:       tensor.insert %[[YZERO]] into %[[YC]][%[[N]], %[[TI]], %[[J0]]]
// The state rows go four at a time (y_t[j] read and written once per four
// rows, each row's term added in order), then one at a time for the rest:
// here dk = 3, so the blocked loop runs no iteration.
// CHECK:     %[[BLOCKS:[^ ]+]] = arith.divui %{{.+}}, %[[C4:[^ ]+]] : index
// CHECK:     %[[BLOCKED:[^ ]+]]:2 = scf.for %[[BI:[^ ]+]] = %{{.+}} to %[[BLOCKS]] step %{{.+}} iter_args(%{{.+}} = %[[CLEARED]], %{{.+}} = %[[ST]])
// CHECK:       %[[I0:[^ ]+]] = arith.muli %[[BI]], %[[C4]] : index
// CHECK:       %[[I1:[^ ]+]] = arith.addi %[[I0]], %{{.+}} : index
// CHECK:       %[[I2:[^ ]+]] = arith.addi %[[I0]], %{{.+}} : index
// CHECK:       %[[I3:[^ ]+]] = arith.addi %[[I0]], %{{.+}} : index
// CHECK:       scf.for %[[JB:[^ ]+]] = {{.*}} iter_args(%[[YB:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}})
// CHECK:         %[[YB0:[^ ]+]] = tensor.extract %[[YB]][%[[N]], %[[TI]], %[[JB]]]
// CHECK:         tensor.insert %{{.+}}[%[[N]], %[[I0]], %[[JB]]]
// CHECK:         %[[Y1:[^ ]+]] = arith.addf %[[YB0]], %{{.+}} : f32
// CHECK:         tensor.insert %{{.+}}[%[[N]], %[[I1]], %[[JB]]]
// CHECK:         %[[Y2:[^ ]+]] = arith.addf %[[Y1]], %{{.+}} : f32
// CHECK:         tensor.insert %{{.+}}[%[[N]], %[[I2]], %[[JB]]]
// CHECK:         %[[Y3:[^ ]+]] = arith.addf %[[Y2]], %{{.+}} : f32
// CHECK:         tensor.insert %{{.+}}[%[[N]], %[[I3]], %[[JB]]]
// CHECK:         %[[Y4:[^ ]+]] = arith.addf %[[Y3]], %{{.+}} : f32
// CHECK:         tensor.insert %[[Y4]] into %[[YB]][%[[N]], %[[TI]], %[[JB]]]
// CHECK:     %[[FULL:[^ ]+]] = arith.muli %[[BLOCKS]], %[[C4]] : index
// CHECK:     scf.for %[[I:[^ ]+]] = %[[FULL]] to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[BLOCKED]]#0, %{{.+}} = %[[BLOCKED]]#1)
// CHECK:       %[[AT:[^ ]+]] = tensor.extract %[[A]][%[[N]], %[[TI]], %[[I]]]
// CHECK:       %[[KT:[^ ]+]] = tensor.extract %[[K]][%[[N]], %[[TI]], %[[I]]]
// CHECK:       %[[QT:[^ ]+]] = tensor.extract %[[Q]][%[[N]], %[[TI]], %[[I]]]
// CHECK:       scf.for %[[J:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[YJ:[^ ]+]] = %{{.+}}, %[[S:[^ ]+]] = %{{.+}})
// CHECK:         %[[VT:[^ ]+]] = tensor.extract %[[V]][%[[N]], %[[TI]], %[[J]]]
// CHECK:         %[[ACC:[^ ]+]] = tensor.extract %[[YJ]][%[[N]], %[[TI]], %[[J]]]
// CHECK:         %[[KV:[^ ]+]] = arith.mulf %[[KT]], %[[VT]] : f32
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %[[S]][%[[N]], %[[I]], %[[J]]]
// CHECK:         %[[DEC:[^ ]+]] = arith.mulf %[[AT]], %[[OLD]] : f32
// CHECK:         %[[NEW:[^ ]+]] = arith.addf %[[DEC]], %[[KV]] : f32
// CHECK:         %[[SN:[^ ]+]] = tensor.insert %[[NEW]] into %[[S]][%[[N]], %[[I]], %[[J]]]
// CHECK:         %[[TERM:[^ ]+]] = arith.mulf %[[QT]], %[[NEW]] : f32
// CHECK:         %[[SUM:[^ ]+]] = arith.addf %[[ACC]], %[[TERM]] : f32
// CHECK:         %[[YN:[^ ]+]] = tensor.insert %[[SUM]] into %[[YJ]][%[[N]], %[[TI]], %[[J]]]
// CHECK:         scf.yield %[[YN]], %[[SN]]
func.func @gla_real_dynamic(%q: tensor<2x?x3xf32>, %k: tensor<2x?x3xf32>,
                            %v: tensor<2x?x4xf32>, %a: tensor<2x?x3xf32>)
    -> (tensor<2x?x4xf32>, tensor<2x3x4xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x4xf32>,
        tensor<2x?x3xf32>
  return %y, %s : tensor<2x?x4xf32>, tensor<2x3x4xf32>
}

// -----

// A complex decay (GateLoop): the state is complex and starts at `init`;
// k v is promoted to complex, and y takes the real part of the state.

// CHECK-LABEL: func.func @gla_complex_init
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<1x5x3xf64>, %[[K:[^ ]+]]: tensor<1x5x3xf64>, %[[V:[^ ]+]]: tensor<1x5x2xf64>, %[[A:[^ ]+]]: tensor<1x5x3xcomplex<f64>>, %[[S0:[^ ]+]]: tensor<1x3x2xcomplex<f64>>)
// CHECK: scf.for %[[N:[^ ]+]] =
// CHECK:   scf.for %[[I0:[^ ]+]] =
// CHECK:     scf.for %[[J0:[^ ]+]] =
// CHECK:       %[[INIT:[^ ]+]] = tensor.extract %[[S0]][%[[N]], %[[I0]], %[[J0]]]
// CHECK:       tensor.insert %[[INIT]] into %{{.+}}[%[[N]], %[[I0]], %[[J0]]]
// CHECK:   scf.for %[[TI:[^ ]+]] =
// The rows one at a time (dk = 3: none in blocks of four).
// CHECK:     scf.for %[[I:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}#0, %{{.+}} = %{{.+}}#1)
// CHECK:       %[[AT:[^ ]+]] = tensor.extract %[[A]][%[[N]], %[[TI]], %[[I]]] : tensor<1x5x3xcomplex<f64>>
// CHECK:       scf.for %[[J:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[YJ:[^ ]+]] = %{{.+}}, %[[S:[^ ]+]] = %{{.+}}) -> (tensor<1x5x2xf64>, tensor<1x3x2xcomplex<f64>>)
// CHECK:         %[[ACC:[^ ]+]] = tensor.extract %[[YJ]]
// CHECK:         %[[KV:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK:         %[[KVC:[^ ]+]] = complex.create %[[KV]], %{{.+}} : complex<f64>
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %[[S]][%[[N]], %[[I]], %[[J]]]
// CHECK:         %[[DEC:[^ ]+]] = complex.mul %[[AT]], %[[OLD]] : complex<f64>
// CHECK:         %[[NEW:[^ ]+]] = complex.add %[[DEC]], %[[KVC]] : complex<f64>
// CHECK:         tensor.insert %[[NEW]] into %[[S]][%[[N]], %[[I]], %[[J]]]
// CHECK:         %[[RE:[^ ]+]] = complex.re %[[NEW]] : complex<f64>
// CHECK:         %[[TERM:[^ ]+]] = arith.mulf %{{.+}}, %[[RE]] : f64
// CHECK:         arith.addf %[[ACC]], %[[TERM]] : f64
func.func @gla_complex_init(%q: tensor<1x5x3xf64>, %k: tensor<1x5x3xf64>,
                            %v: tensor<1x5x2xf64>,
                            %a: tensor<1x5x3xcomplex<f64>>,
                            %s0: tensor<1x3x2xcomplex<f64>>)
    -> (tensor<1x5x2xf64>, tensor<1x3x2xcomplex<f64>>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      init(%s0 : tensor<1x3x2xcomplex<f64>>)
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<1x5x3xf64>, tensor<1x5x3xf64>, tensor<1x5x2xf64>,
        tensor<1x5x3xcomplex<f64>>
  return %y, %s : tensor<1x5x2xf64>, tensor<1x3x2xcomplex<f64>>
}
