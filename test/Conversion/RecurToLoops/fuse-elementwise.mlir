// RUN: recur-opt %s --split-input-file --recur-fuse-elementwise | FileCheck %s

// An elementwise producer fuses into an elementwise consumer that reads each
// of its elements once: one generic, the tanh inside.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @elementwise_chain
// CHECK:         linalg.generic
// CHECK:           math.tanh
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
func.func @elementwise_chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Not into a matmul: its map for the operand drops the column dimension, so
// the fused body would recompute the tanh once per output column. The
// producer stays its own generic, ahead of the matmul.

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @not_into_matmul
// CHECK:         %[[T:.*]] = linalg.generic
// CHECK:           math.tanh
// CHECK:         linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK-NOT:       math.tanh
// CHECK:         return
func.func @not_into_matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>,
                           %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%t, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%acc : tensor<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Nor into a consumer that broadcasts a row statistic along the row.

#row = affine_map<(d0, d1) -> (d0)>
#id3 = affine_map<(d0, d1) -> (d0, d1)>
#vec = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @not_into_broadcast
// CHECK:         linalg.generic
// CHECK:           math.rsqrt
// CHECK:         linalg.generic
// CHECK-NOT:       math.rsqrt
// CHECK:         return
func.func @not_into_broadcast(%v: tensor<4xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e1 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%v : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.rsqrt %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#row, #id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%r, %x : tensor<4xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
