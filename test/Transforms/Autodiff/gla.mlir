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

// By default the states are kept only at chunk boundaries (chunk_size 3:
// ceil(7 / 3) = 3 chunks, the last of one step): a forward loop stacks
// them, a reverse loop recomputes each chunk from its state and
// differentiates it, writing the chunk's cotangents into the sequence's.
// CHUNKS-LABEL: func.func @gla_backward
// CHUNKS:         %[[STACK:.*]] = tensor.empty() : tensor<3x2x4x3xcomplex<f32>>
// CHUNKS:         %[[FWD:.*]]:2 = scf.for %{{.*}} = %c0 to %c3 {{.*}} iter_args(%{{.*}} = %arg4, %{{.*}} = %[[STACK]])
// CHUNKS:           affine.min
// CHUNKS:           recur.gated_linear_attention {{.*}} init(
// CHUNKS:         %[[REV:.*]]:5 = scf.for %{{.*}} = %c0 to %c3 {{.*}} iter_args(%{{.*}} = %arg6,
// CHUNKS:           tensor.extract_slice %[[FWD]]#1
// CHUNKS:           recur.linear_scan {{.*}} : tensor<2x?x4xcomplex<f32>>, tensor<2x?x4x3xcomplex<f32>>
// CHUNKS:           recur.linear_scan {{.*}} along 1 reverse
// CHUNKS:         return %[[REV]]#1, %[[REV]]#2, %[[REV]]#3, %[[REV]]#4, %[[REV]]#0
func.func @gla(%q: tensor<2x7x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x3xf32>, %a: tensor<2x7x4xcomplex<f32>>, %s0: tensor<2x4x3xcomplex<f32>>) -> (tensor<2x7x3xf32>, tensor<2x4x3xcomplex<f32>>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<2x4x3xcomplex<f32>>) {algorithm = #recur.algorithm<chunked>, chunk_size = 3 : i64} : tensor<2x7x4xf32>, tensor<2x7x4xf32>, tensor<2x7x3xf32>, tensor<2x7x4xcomplex<f32>>
  return %y, %s : tensor<2x7x3xf32>, tensor<2x4x3xcomplex<f32>>
}
