// RUN: recur-opt %s --recur-derive-backward=keep-all-states --canonicalize | FileCheck %s
// RUN: recur-opt %s --recur-derive-backward --canonicalize | FileCheck %s --check-prefix=CHUNKS

// gated_linear_attention differentiates through its definition: the outer
// products k (x) v, a linear_scan of the matrix states (whose adjoint is the
// reverse scan) and the readout Re(sum_i q_i S_i).

// CHECK-LABEL: func.func @gla_backward
// CHECK-SAME:    (%[[Q:[^:]*]]: tensor<2x7x4xf32>, %[[K:[^:]*]]: tensor<2x7x4xf32>, %[[V:[^:]*]]: tensor<2x7x3xf32>, %[[A:[^:]*]]: tensor<2x7x4xcomplex<f32>>, %[[S0:[^:]*]]: tensor<2x4x3xcomplex<f32>>
// The forward op itself is dead in the backward (its results are not read).
// CHECK-NOT:     recur.gated_linear_attention
// CHECK:         %[[KV:.*]] = linalg.generic {{.*}} ins(%[[K]], %[[V]] :
// CHECK:         %[[S:.*]], %{{.*}} = recur.linear_scan %[[A]], %[[KV]] init(%[[S0]] : tensor<2x4x3xcomplex<f32>>) along 1 :
// CHECK:         recur.linear_scan {{.*}} along 1 reverse
// CHECK:         return

// By default the backward is the reverse sweep gated_linear_attention_grad
// (lowered by --convert-recur-to-loops: states kept at the boundaries of
// chunks of chunk_size 3, each chunk recomputed), given the cotangents of
// y and of the final state; its dinit is the initial state's.
// CHUNKS-LABEL: func.func @gla_backward
// CHUNKS-SAME:    (%[[Q:[^:]*]]: tensor<2x7x4xf32>, %[[K:[^:]*]]: tensor<2x7x4xf32>, %[[V:[^:]*]]: tensor<2x7x3xf32>, %[[A:[^:]*]]: tensor<2x7x4xcomplex<f32>>, %[[S0:[^:]*]]: tensor<2x4x3xcomplex<f32>>, %[[DY:[^:]*]]: tensor<2x7x3xf32> {recur.name = "d_", recur.role = "cotangent"}, %[[DS:[^:]*]]: tensor<2x4x3xcomplex<f32>> {recur.name = "d_", recur.role = "cotangent"})
// CHUNKS-NOT:     recur.gated_linear_attention %
// CHUNKS:         %[[DQ:[^,]*]], %[[DK:[^,]*]], %[[DV:[^,]*]], %[[DA:[^,]*]], %[[DI:[^ ]*]] = recur.gated_linear_attention_grad %[[Q]], %[[K]], %[[V]], %[[A]], %[[DY]], %[[DS]] init(%[[S0]] : tensor<2x4x3xcomplex<f32>>) chunk 3 :
// CHUNKS:         return %[[DQ]], %[[DK]], %[[DV]], %[[DA]], %[[DI]] :
func.func @gla(%q: tensor<2x7x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x3xf32>, %a: tensor<2x7x4xcomplex<f32>>, %s0: tensor<2x4x3xcomplex<f32>>) -> (tensor<2x7x3xf32>, tensor<2x4x3xcomplex<f32>>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<2x4x3xcomplex<f32>>) {algorithm = #recur.algorithm<chunked>, chunk_size = 3 : i64} : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>, tensor<2x7x4xcomplex<f32>>
  return %y, %s : tensor<2x7x3xf32>, tensor<2x4x3xcomplex<f32>>
}
