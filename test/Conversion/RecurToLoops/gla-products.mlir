// RUN: recur-opt %s --convert-recur-to-loops=gla-products --split-input-file | FileCheck %s --implicit-check-not=recur.gated_linear_attention

// With gla-products, each leading index of a gla backward with real
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
// CHECK-SAME:    outs(%{{.+}} : tensor<3x3xf32>) attrs = {recur.lower_triangular_result}
// CHECK:       linalg.index 0
// CHECK:       linalg.index 1
// CHECK:       arith.cmpi ule
// The masked dy v^T, then the three products that read a masked tile: dq
// (A[i, k]), dk and dv (A[k, i]).
// CHECK:       outs(%{{.+}} : tensor<3x3xf32>) attrs = {recur.lower_triangular_result}
// CHECK:       ins(%[[DA:.+]], %{{.+}} : tensor<3x3xf32>, tensor<3x4xf32>) outs(%{{.+}} : tensor<3x4xf32>) attrs = {recur.lower_triangular_input = 0 : i64}
// CHECK:       ins(%[[DA]], %{{.+}} : tensor<3x3xf32>, tensor<3x4xf32>) outs(%{{.+}} : tensor<3x4xf32>) attrs = {recur.lower_triangular_input = 0 : i64}
// CHECK:       ins(%{{.+}}, %{{.+}} : tensor<3x3xf32>, tensor<3x3xf32>) outs(%{{.+}} : tensor<3x3xf32>) attrs = {recur.lower_triangular_input = 0 : i64}
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

// -----

// The forward: a chunked gla with real decays checks each leading index's
// decays against [2^(-32 / chunk), 1] (2^(-32/5) for chunks of 5), then
// takes the product form (its tiles allocated once per index, the state
// entering each chunk in a tile of its own; per chunk the B operand K~
// transposed, the scores Q~ K~^T from zero masked to the lower triangle,
// the outputs scores v then + Q~ S, the increment K^^T v, all
// contractions) or the chunks' loops (their f64 log prefixes).

// CHECK-LABEL: func.func @forward_chunked
// CHECK-SAME: %{{[^ ]+}}: tensor<2x9x4xf32>, %{{[^ ]+}}: tensor<2x9x4xf32>, %{{[^ ]+}}: tensor<2x9x3xf32>, %[[A:[^ ]+]]: tensor<2x9x4xf32>)
// CHECK: scf.for %[[N:[^ ]+]] = {{.+}} iter_args(
// CHECK:   %[[LOW:.+]] = arith.constant 0.0118415356 : f32
// CHECK:   vector.broadcast %[[LOW]] : f32 to vector<8xf32>
// CHECK:   vector.transfer_read %[[A]][%[[N]], %{{.+}}, %{{.+}}], %{{.+}} : tensor<2x9x4xf32>, vector<8xf32>
// CHECK:   %[[APPLY:.+]] = vector.reduction <and>, %{{.+}} : vector<8xi1> into i1
// CHECK:   scf.if %[[APPLY]] -> (tensor<2x9x3xf32>, tensor<2x4x3xf32>) {
// CHECK-COUNT-11: bufferization.alloc_tensor() : tensor<
// CHECK:     scf.for
// CHECK:       linalg.transpose
// CHECK:       %[[S:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%{{.+}} : tensor<5x5xf32>) attrs = {recur.lower_triangular_result}
// CHECK:       arith.cmpi ule
// CHECK:       %[[SV:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%{{.+}} : tensor<5x3xf32>) attrs = {recur.lower_triangular_input = 0 : i64}
// CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%[[SV]] : tensor<5x3xf32>)
// CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%{{.+}} : tensor<4x3xf32>)
// CHECK:   } else {
// CHECK:     math.log
// CHECK:   }
func.func @forward_chunked(%q: tensor<2x9x4xf32>, %k: tensor<2x9x4xf32>,
                           %v: tensor<2x9x3xf32>, %a: tensor<2x9x4xf32>)
    -> (tensor<2x9x3xf32>, tensor<2x4x3xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<chunked>, chunk_size = 5 : i64}
      : tensor<2x9x4xf32>, tensor<2x9x4xf32>, tensor<2x9x3xf32>,
        tensor<2x9x4xf32>
  return %y, %s : tensor<2x9x3xf32>, tensor<2x4x3xf32>
}

// -----

// `auto` takes the product form, in chunks of 32 (decays from 2^(-1)) or
// of the op's chunk_size, when a leading index's state is 32 KiB (a core's
// L1 data cache) or more, with the recurrence step by step (no log) for
// indices out of range; a smaller state, one of dynamic size, or
// `recurrent`, keeps the recurrence alone.

// CHECK-LABEL: func.func @forward_auto_large
// CHECK:   arith.constant 5.000000e-01 : f32
// CHECK:   scf.if %{{.+}} -> (tensor<1x40x96xf32>, tensor<1x96x96xf32>) {
// CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%{{.+}} : tensor<32x32xf32>)
// CHECK:   } else {
// CHECK-NOT: math.log
// CHECK:     arith.mulf
// CHECK-NOT: math.log
// CHECK: return
func.func @forward_auto_large(%q: tensor<1x40x96xf32>, %k: tensor<1x40x96xf32>,
                              %v: tensor<1x40x96xf32>, %a: tensor<1x40x96xf32>)
    -> (tensor<1x40x96xf32>, tensor<1x96x96xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      : tensor<1x40x96xf32>, tensor<1x40x96xf32>, tensor<1x40x96xf32>,
        tensor<1x40x96xf32>
  return %y, %s : tensor<1x40x96xf32>, tensor<1x96x96xf32>
}

// 64 x 64 of f64: 32 KiB, and chunks of 16 (decays from 2^(-2)).
// CHECK-LABEL: func.func @forward_auto_l1_f64
// CHECK:   arith.constant 2.500000e-01 : f64
// CHECK:   scf.if %{{.+}} -> (tensor<1x40x64xf64>, tensor<1x64x64xf64>) {
// CHECK:       linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:    outs(%{{.+}} : tensor<16x16xf64>)
// CHECK:   } else {
// CHECK-NOT: math.log
// CHECK: return
func.func @forward_auto_l1_f64(%q: tensor<1x40x64xf64>, %k: tensor<1x40x64xf64>,
                               %v: tensor<1x40x64xf64>, %a: tensor<1x40x64xf64>)
    -> (tensor<1x40x64xf64>, tensor<1x64x64xf64>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a {chunk_size = 16 : i64}
      : tensor<1x40x64xf64>, tensor<1x40x64xf64>, tensor<1x40x64xf64>,
        tensor<1x40x64xf64>
  return %y, %s : tensor<1x40x64xf64>, tensor<1x64x64xf64>
}

// 64 x 96 of f32: 24 KiB.
// CHECK-LABEL: func.func @forward_auto_small
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_auto_small(%q: tensor<1x40x64xf32>, %k: tensor<1x40x64xf32>,
                              %v: tensor<1x40x96xf32>, %a: tensor<1x40x64xf32>)
    -> (tensor<1x40x96xf32>, tensor<1x64x96xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      : tensor<1x40x64xf32>, tensor<1x40x64xf32>, tensor<1x40x96xf32>,
        tensor<1x40x64xf32>
  return %y, %s : tensor<1x40x96xf32>, tensor<1x64x96xf32>
}

// CHECK-LABEL: func.func @forward_auto_dynamic
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_auto_dynamic(%q: tensor<1x40x?xf32>, %k: tensor<1x40x?xf32>,
                                %v: tensor<1x40x?xf32>, %a: tensor<1x40x?xf32>)
    -> (tensor<1x40x?xf32>, tensor<1x?x?xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      : tensor<1x40x?xf32>, tensor<1x40x?xf32>, tensor<1x40x?xf32>,
        tensor<1x40x?xf32>
  return %y, %s : tensor<1x40x?xf32>, tensor<1x?x?xf32>
}

// CHECK-LABEL: func.func @forward_recurrent_large
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_recurrent_large(%q: tensor<1x40x96xf32>,
                                   %k: tensor<1x40x96xf32>,
                                   %v: tensor<1x40x96xf32>,
                                   %a: tensor<1x40x96xf32>)
    -> (tensor<1x40x96xf32>, tensor<1x96x96xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<1x40x96xf32>, tensor<1x40x96xf32>, tensor<1x40x96xf32>,
        tensor<1x40x96xf32>
  return %y, %s : tensor<1x40x96xf32>, tensor<1x96x96xf32>
}

// -----

// A chunked gla with complex decays has no product form: the chunks' loops
// alone, with no check.

// CHECK-LABEL: func.func @forward_complex
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.
// CHECK: return
func.func @forward_complex(%q: tensor<1x5x3xf32>, %k: tensor<1x5x3xf32>,
                           %v: tensor<1x5x2xf32>,
                           %a: tensor<1x5x3xcomplex<f32>>)
    -> (tensor<1x5x2xf32>, tensor<1x3x2xcomplex<f32>>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<chunked>}
      : tensor<1x5x3xf32>, tensor<1x5x3xf32>, tensor<1x5x2xf32>,
        tensor<1x5x3xcomplex<f32>>
  return %y, %s : tensor<1x5x2xf32>, tensor<1x3x2xcomplex<f32>>
}
