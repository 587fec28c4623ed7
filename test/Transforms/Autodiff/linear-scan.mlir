// RUN: recur-opt %s --split-input-file --recur-derive-backward --canonicalize | FileCheck %s

// h_t = a_t h_{t-1} + b_t: the cotangent of h runs back as a reverse scan
// over the decays shifted one step (1 after the last), starting from the
// cotangent of `last`; db is that scan; da sums g_t h_{t-1}, with h_{-1}
// the init; dinit = a_0 g_0.

// CHECK-LABEL: func.func @scan_backward
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<2x5x3xf32>, %[[B:[^:]*]]: tensor<2x5x3xf32>, %[[H0:[^:]*]]: tensor<2x3xf32>,
// CHECK-SAME:     %[[DH:[^:]*]]: tensor<2x5x3xf32> {{{.*}}recur.role = "cotangent"}, %[[DLAST:[^:]*]]: tensor<2x3xf32>
// CHECK:         %[[H:.*]], %{{.*}} = recur.linear_scan %[[A]], %[[B]] init(%[[H0]] : tensor<2x3xf32>) along 1 :
// CHECK:         %[[NEXT:.*]] = tensor.extract_slice %[[A]][0, 1, 0] [2, 4, 3]
// CHECK:         %[[SHIFT:.*]] = tensor.insert_slice %[[NEXT]] into %{{.*}}[0, 0, 0] [2, 4, 3]
// CHECK:         %[[SHIFTED:.*]] = tensor.insert_slice %{{.*}} into %[[SHIFT]][0, 4, 0] [2, 1, 3]
// CHECK:         %[[CAST:.*]] = tensor.cast %[[SHIFTED]]
// CHECK:         %[[G:.*]], %[[G0:.*]] = recur.linear_scan %[[CAST]], %[[DH]] init(%[[DLAST]] : tensor<2x3xf32>) along 1 reverse
// CHECK:         %[[PREV0:.*]] = tensor.insert_slice %[[H0]] into %{{.*}}[0, 0, 0] [2, 1, 3]
// CHECK:         %[[HEAD:.*]] = tensor.extract_slice %[[H]][0, 0, 0] [2, 4, 3]
// CHECK:         %[[PREV:.*]] = tensor.insert_slice %[[HEAD]] into %[[PREV0]][0, 1, 0] [2, 4, 3]
// CHECK:         %[[DA:.*]] = linalg.generic {{.*}} ins(%[[G]], %[[PREV]] :
// CHECK:           arith.mulf
// CHECK:         %[[A0:.*]] = tensor.extract_slice %[[A]][0, 0, 0] [2, 1, 3] [1, 1, 1] : tensor<2x5x3xf32> to tensor<2x3xf32>
// CHECK:         %[[DINIT:.*]] = linalg.generic {{.*}} ins(%[[A0]], %[[G0]] :
// CHECK:         return %[[DA]], %[[G]], %[[DINIT]]
func.func @scan(%a: tensor<2x5x3xf32>, %b: tensor<2x5x3xf32>, %h0: tensor<2x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x3xf32>) {
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<2x3xf32>) along 1 : tensor<2x5x3xf32>, tensor<2x5x3xf32>
  return %h, %last : tensor<2x5x3xf32>, tensor<2x3xf32>
}

// -----

// A real decay of a complex matrix state: the adjoint scan's decays are
// conj(a) (a itself, real), da is the real part of sum_j g conj(h_prev)
// over the broadcast dimension, and dinit is a_0 g_0 as complex.

// CHECK-LABEL: func.func @real_decay_backward
// CHECK:         recur.linear_scan {{.*}} along 0 reverse : tensor<?x4xf32>, tensor<6x4x2xcomplex<f32>>
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           %[[C:.*]] = complex.conj
// CHECK:           %[[M:.*]] = complex.mul %{{.*}}, %[[C]]
// CHECK:           %[[RE:.*]] = complex.re %[[M]]
// CHECK:           arith.addf %{{.*}}, %[[RE]]
// CHECK:         linalg.generic
// CHECK:           complex.create
// CHECK:           complex.mul
func.func @real_decay(%a: tensor<6x4xf32>, %b: tensor<6x4x2xcomplex<f32>>, %h0: tensor<4x2xcomplex<f32>>) -> (tensor<6x4x2xcomplex<f32>>, tensor<4x2xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<4x2xcomplex<f32>>) along 0 : tensor<6x4xf32>, tensor<6x4x2xcomplex<f32>>
  return %h, %last : tensor<6x4x2xcomplex<f32>>, tensor<4x2xcomplex<f32>>
}

// -----

// stop_gradient: nothing reaches its operand.

// CHECK-LABEL: func.func @stopped_backward
// CHECK-SAME:    (%{{.*}}: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>
// CHECK:         %[[ZERO:.*]] = linalg.fill
// CHECK:         return %[[ZERO]]
func.func @stopped(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = recur.stop_gradient %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
