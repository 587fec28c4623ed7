// RUN: recur-opt %s --convert-recur-to-loops=gla-grad-products --split-input-file | FileCheck %s --implicit-check-not=recur.

// With gla-grad-products, each leading index of a gla backward with real
// decays first checks its decays against the product form's range
// [2^(-32 / chunk), 1] (2^(-32/3) for chunks of 3), in vectors, a NaN out
// (ordered comparisons); then takes the product form or the reverse sweep.
// The product form allocates its chunk tiles once per index, goes forward
// over the chunks (each chunk's K^T v as a contraction, the states stacked)
// and back (the B operands transposed into the tiles, the chunk's products
// as contractions from zero, the scores masked to the lower triangle).

// CHECK-LABEL: func.func @real_decays
// CHECK-SAME: %[[A:[^ ]+]]: tensor<2x7x4xf32>, %{{[^ ]+}}: tensor<2x7x3xf32>, %{{[^ ]+}}: tensor<2x4x3xf32>)
// CHECK: scf.for %[[N:[^ ]+]] = {{.+}} iter_args(
// CHECK:   %[[LOW:.+]] = arith.constant 6.15195837E-4 : f32
// CHECK:   %[[LOWS:.+]] = vector.broadcast %[[LOW]] : f32 to vector<8xf32>
// CHECK:   %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK:   %[[ONES:.+]] = vector.broadcast %[[ONE]] : f32 to vector<8xf32>
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       %[[ROW:.+]] = vector.transfer_read %[[A]][%[[N]], %{{.+}}, %{{.+}}], %{{.+}} : tensor<2x7x4xf32>, vector<8xf32>
// CHECK:       arith.cmpf oge, %[[ROW]], %[[LOWS]] : vector<8xf32>
// CHECK:       arith.cmpf ole, %[[ROW]], %[[ONES]] : vector<8xf32>
// CHECK:   %[[APPLY:.+]] = vector.reduction <and>, %{{.+}} : vector<8xi1> into i1
// CHECK:   scf.if %[[APPLY]] -> (tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>, tensor<2x7x4xf32>, tensor<2x4x3xf32>) {
// CHECK-COUNT-19: bufferization.alloc_tensor() : tensor<
// CHECK:     scf.for
// CHECK:       linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:    outs(%{{.+}} : tensor<4x3xf32>)
// CHECK:     scf.for
// CHECK-COUNT-4: linalg.transpose
// CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%{{.+}} : tensor<3x3xf32>)
// CHECK:       linalg.index 0
// CHECK:       linalg.index 1
// CHECK:       arith.cmpi ule
// CHECK:   } else {
// CHECK:     bufferization.alloc_tensor(%{{.+}}, %{{.+}}, %{{.+}}) : tensor<?x?x?xf32>
func.func @real_decays(%q: tensor<2x7x4xf32>, %k: tensor<2x7x4xf32>,
                       %v: tensor<2x7x3xf32>, %a: tensor<2x7x4xf32>,
                       %dy: tensor<2x7x3xf32>, %ds: tensor<2x4x3xf32>)
    -> (tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>,
        tensor<2x7x4xf32>, tensor<2x4x3xf32>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad
      %q, %k, %v, %a, %dy, %ds chunk 3
      : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>,
        tensor<2x7x4xf32>, tensor<2x4x3xf32>
  return %dq, %dk, %dv, %da, %di
      : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>,
        tensor<2x7x4xf32>, tensor<2x4x3xf32>
}

// -----

// Complex decays, and chunks longer than 64 steps, have no product form:
// the reverse sweep alone, with no check.

// CHECK-LABEL: func.func @complex_decays
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.
// CHECK: return
func.func @complex_decays(%q: tensor<1x5x2xf32>, %k: tensor<1x5x2xf32>,
                          %v: tensor<1x5x2xf32>,
                          %a: tensor<1x5x2xcomplex<f32>>,
                          %dy: tensor<1x5x2xf32>,
                          %ds: tensor<1x2x2xcomplex<f32>>)
    -> (tensor<1x5x2xf32>, tensor<1x5x2xcomplex<f32>>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad
      %q, %k, %v, %a, %dy, %ds chunk 4
      : tensor<1x5x2xf32>, tensor<1x5x2xf32>, tensor<1x5x2xf32>,
        tensor<1x5x2xcomplex<f32>>, tensor<1x2x2xcomplex<f32>>
  return %dq, %da : tensor<1x5x2xf32>, tensor<1x5x2xcomplex<f32>>
}

// -----

// CHECK-LABEL: func.func @long_chunks
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.
// CHECK: return
func.func @long_chunks(%q: tensor<1x5x2xf64>, %k: tensor<1x5x2xf64>,
                       %v: tensor<1x5x2xf64>, %a: tensor<1x5x2xf64>,
                       %dy: tensor<1x5x2xf64>, %ds: tensor<1x2x2xf64>)
    -> tensor<1x5x2xf64> {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad
      %q, %k, %v, %a, %dy, %ds chunk 65
      : tensor<1x5x2xf64>, tensor<1x5x2xf64>, tensor<1x5x2xf64>,
        tensor<1x5x2xf64>, tensor<1x2x2xf64>
  return %da : tensor<1x5x2xf64>
}
