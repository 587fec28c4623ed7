// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// The reverse sweep of a gla with real decays, chunks of 3 over T = 7: per
// leading index, the states entering each of ceil(7 / 3) chunks are stacked
// going forward, then the chunks run in reverse, each recomputing its states
// into a stack of chunk + 1 rows and sweeping its steps backwards, the state
// rows over consecutive columns, four rows at a time (then one at a time:
// none are left at dk = 4). The row sums (dq, dk, da) are reassociable so
// that they vectorize; dv sums over the rows in order, read and written
// once per block; products fuse with the sums they feed (contract).

// CHECK-LABEL: func.func @gla_grad_real
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x7x4xf32>, %[[K:[^ ]+]]: tensor<2x7x4xf32>, %[[V:[^ ]+]]: tensor<2x7x3xf32>, %[[A:[^ ]+]]: tensor<2x7x4xf32>, %[[DY:[^ ]+]]: tensor<2x7x3xf32>, %[[DS:[^ ]+]]: tensor<2x4x3xf32>)
// CHECK: %[[CHUNKS:[^ ]+]] = affine.apply #{{.+}}()[%{{.+}}]
// CHECK: scf.for %[[N:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK:   bufferization.alloc_tensor(%[[CHUNKS]], %{{.+}}, %{{.+}}) : tensor<?x?x?xf32>
// CHECK:   %[[C4:[^ ]+]] = arith.constant 4 : index
// CHECK:   bufferization.alloc_tensor(%[[C4]], %{{.+}}, %{{.+}}) : tensor<?x?x?xf32>
// CHECK:   bufferization.alloc_tensor(%{{.+}}, %{{.+}}, %{{.+}}) : tensor<?x?x?xf32>
// CHECK:   tensor.extract %[[DS]][%[[N]], %{{.+}}, %{{.+}}]
// CHECK:   scf.for %{{.+}} = %{{.+}} to %[[CHUNKS]] step %{{.+}} iter_args(
// CHECK:     scf.for
// CHECK:       scf.for
// CHECK:         tensor.extract
// CHECK:     scf.for
// CHECK:       scf.for %[[I:[^ ]+]] =
// CHECK:         scf.for %[[J:[^ ]+]] =
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:           tensor.insert
// CHECK:     scf.for
// CHECK:       scf.for
// CHECK:         tensor.insert %{{.+}} : tensor<2x7x3xf32>
// CHECK:       %[[BLOCKS:[^ ]+]] = arith.divui %{{.+}}, %[[C4R:[^ ]+]] : index
// CHECK:       scf.for %[[B:[^ ]+]] = %{{.+}} to %[[BLOCKS]] step
// CHECK:         %[[R0:[^ ]+]] = arith.muli %[[B]], %[[C4R]]
// CHECK:         %[[QI:[^ ]+]] = tensor.extract %[[Q]][%[[N]], %[[T:[^ ]+]], %[[R0]]]
// CHECK:         %[[KI:[^ ]+]] = tensor.extract %[[K]][%[[N]], %[[T]], %[[R0]]]
// CHECK:         %[[AI:[^ ]+]] = tensor.extract %[[A]][%[[N]], %[[T]], %[[R0]]]
// CHECK-COUNT-3: tensor.extract %[[Q]][%[[N]], %[[T]], %{{.+}}]
// CHECK:         scf.for %[[RJ:[^ ]+]] = {{.+}} -> (tensor<2x7x3xf32>, tensor<?x?x?xf32>, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:           %[[DYJ:[^ ]+]] = tensor.extract %[[DY]][%[[N]], %[[T]], %[[RJ]]]
// CHECK:           %[[VJ:[^ ]+]] = tensor.extract %[[V]][%[[N]], %[[T]], %[[RJ]]]
// CHECK:           %[[DVOLD:[^ ]+]] = tensor.extract %{{.+}}[%[[N]], %[[T]], %[[RJ]]] : tensor<2x7x3xf32>
// CHECK:           %[[H:[^ ]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[R0]], %[[RJ]]]
// CHECK:           %[[QDY:[^ ]+]] = arith.mulf %[[QI]], %[[DYJ]] fastmath<contract> : f32
// CHECK:           %[[G:[^ ]+]] = arith.addf %[[QDY]], %[[H]] fastmath<contract> : f32
// CHECK:           %[[S:[^ ]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[R0]], %[[RJ]]]
// CHECK:           %[[SP:[^ ]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[R0]], %[[RJ]]]
// CHECK:           %[[GK:[^ ]+]] = arith.mulf %[[G]], %[[KI]] fastmath<contract> : f32
// CHECK:           %[[DV1:[^ ]+]] = arith.addf %[[DVOLD]], %[[GK]] fastmath<contract> : f32
// CHECK:           %[[SDY:[^ ]+]] = arith.mulf %[[S]], %[[DYJ]] fastmath<reassoc,contract> : f32
// CHECK:           arith.addf %{{.+}}, %[[SDY]] fastmath<reassoc,contract> : f32
// CHECK:           %[[GV:[^ ]+]] = arith.mulf %[[G]], %[[VJ]] fastmath<reassoc,contract> : f32
// CHECK:           arith.addf %{{.+}}, %[[GV]] fastmath<reassoc,contract> : f32
// CHECK:           %[[GS:[^ ]+]] = arith.mulf %[[G]], %[[SP]] fastmath<reassoc,contract> : f32
// CHECK:           arith.addf %{{.+}}, %[[GS]] fastmath<reassoc,contract> : f32
// CHECK:           %[[HNEW:[^ ]+]] = arith.mulf %[[AI]], %[[G]] : f32
// CHECK:           tensor.insert %[[HNEW]]
// CHECK:           %[[G1:[^ ]+]] = arith.addf %{{.+}}, %{{.+}} fastmath<contract> : f32
// CHECK:           %[[GK1:[^ ]+]] = arith.mulf %[[G1]], %{{.+}} fastmath<contract> : f32
// CHECK:           arith.addf %[[DV1]], %[[GK1]] fastmath<contract> : f32
// CHECK:           tensor.insert %{{.+}} : tensor<2x7x3xf32>
// CHECK:       scf.for %{{.+}} = %{{.+}} to %{{.+}} step
// CHECK:         scf.for {{.+}} -> (tensor<2x7x3xf32>, tensor<?x?x?xf32>, f32, f32, f32)
func.func @gla_grad_real(%q: tensor<2x7x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x3xf32>, %a: tensor<2x7x4xf32>, %dy: tensor<2x7x3xf32>, %ds: tensor<2x4x3xf32>) -> (tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>, tensor<2x4x3xf32>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds chunk 3 : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>, tensor<2x4x3xf32>
  return %dq, %dk, %dv, %da, %di : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>, tensor<2x4x3xf32>
}

// -----

// Complex decays (GateLoop) with an initial state: the forward steps start
// from `init`; G is complex, the cotangent flowing back is conj(a) G, da
// sums G conj(S_{t-1}) (complex, not reassociated), and dq, dk, dv read
// real parts. At dk = 3 the blocks of four rows run no iteration (their
// loop, with four rows' sums, is there) and the rows go one at a time.

// CHECK-LABEL: func.func @gla_grad_complex
// CHECK-SAME: %[[S0:[^ ]+]]: tensor<1x3x2xcomplex<f64>>)
// CHECK: tensor.extract %[[S0]]
// CHECK: scf.for {{.+}} -> (tensor<1x5x2xf64>, tensor<?x?x?xcomplex<f64>>, f64, f64, complex<f64>, f64, f64, complex<f64>,
// CHECK: tensor.extract %{{.+}} : tensor<1x5x3xcomplex<f64>>
// CHECK-NEXT: %[[CA:[^ ]+]] = complex.conj %{{.+}} : complex<f64>
// CHECK-NOT: complex.conj
// CHECK: scf.for {{.+}} -> (tensor<1x5x2xf64>, tensor<?x?x?xcomplex<f64>>, f64, f64, complex<f64>)
// CHECK:   %[[QDY:[^ ]+]] = complex.create %{{.+}}, %{{.+}} : complex<f64>
// CHECK:   %[[G:[^ ]+]] = complex.add %[[QDY]], %{{.+}} : complex<f64>
// CHECK:   %[[S:[^ ]+]] = tensor.extract %{{.+}} : tensor<?x?x?xcomplex<f64>>
// CHECK:   %[[SP:[^ ]+]] = tensor.extract %{{.+}} : tensor<?x?x?xcomplex<f64>>
// CHECK:   complex.re %[[G]] : complex<f64>
// CHECK:   %[[CSP:[^ ]+]] = complex.conj %[[SP]] : complex<f64>
// CHECK:   %[[GS:[^ ]+]] = complex.mul %[[G]], %[[CSP]] : complex<f64>
// CHECK:   complex.add %{{.+}}, %[[GS]] : complex<f64>
// CHECK:   complex.mul %[[CA]], %[[G]] : complex<f64>
func.func @gla_grad_complex(%q: tensor<1x5x3xf64>, %k: tensor<1x5x3xf64>, %v: tensor<1x5x2xf64>, %a: tensor<1x5x3xcomplex<f64>>, %dy: tensor<1x5x2xf64>, %ds: tensor<1x3x2xcomplex<f64>>, %s0: tensor<1x3x2xcomplex<f64>>) -> (tensor<1x5x3xf64>, tensor<1x5x3xf64>, tensor<1x5x2xf64>, tensor<1x5x3xcomplex<f64>>, tensor<1x3x2xcomplex<f64>>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds init(%s0 : tensor<1x3x2xcomplex<f64>>) chunk 2 : tensor<1x5x3xf64>, tensor<1x5x3xf64>, tensor<1x5x2xf64>, tensor<1x5x3xcomplex<f64>>, tensor<1x3x2xcomplex<f64>>
  return %dq, %dk, %dv, %da, %di : tensor<1x5x3xf64>, tensor<1x5x3xf64>, tensor<1x5x2xf64>, tensor<1x5x3xcomplex<f64>>, tensor<1x3x2xcomplex<f64>>
}
