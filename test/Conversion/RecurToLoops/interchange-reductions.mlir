// RUN: recur-opt %s --split-input-file --recur-interchange-reductions | FileCheck %s
// RUN: recur-opt %s --split-input-file --recur-interchange-reductions --convert-linalg-to-parallel-loops | FileCheck %s --check-prefix=LOOPS

// A batched matmul y[b, t, n] += x[b, t, k] W[k, n] (the front end's `@`):
// n indexes the last dimension of y and of W, so it moves inside the
// reduction k; the other loops keep their order.

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#w = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#y = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// CHECK-DAG: #[[$X:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$W:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @matmul
// CHECK:         linalg.generic {indexing_maps = [#[[$X]], #[[$W]], #[[$Y]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK:           arith.mulf
// CHECK:           arith.addf

func.func @matmul(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>,
                  %init: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %y = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x3x8xf32>, tensor<8x16xf32>) outs(%init : tensor<2x3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// The same on buffers, lowered to loops: b and t parallel outside, k
// sequential, n innermost.
// CHECK-LABEL: func.func @matmul_buffers
// CHECK:         iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// LOOPS-LABEL: func.func @matmul_buffers
// LOOPS:         scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c3)
// LOOPS:           scf.for %{{.*}} = %c0 to %c8
// LOOPS:             scf.parallel (%{{.*}}) = (%c0) to (%c16)
// LOOPS:               memref.load
func.func @matmul_buffers(%x: memref<2x3x8xf32>, %w: memref<8x16xf32>,
                          %y: memref<2x3x16xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x3x8xf32>, memref<8x16xf32>) outs(%y : memref<2x3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A named matmul is generalized first, then interchanged to (m, k, n).

// CHECK-LABEL: func.func @named_matmul
// CHECK-NOT:     linalg.matmul
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
func.func @named_matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>,
                        %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A matrix-vector product y[m] += A[m, k] x[k]: no input reads m
// contiguously (A walks k), so the dot products stay innermost.

#a = affine_map<(d0, d1) -> (d0, d1)>
#v = affine_map<(d0, d1) -> (d1)>
#o = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @matvec
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction"]}
func.func @matvec(%a: tensor<4x8xf32>, %x: tensor<8xf32>,
                  %init: tensor<4xf32>) -> tensor<4xf32> {
  %y = linalg.generic {indexing_maps = [#a, #v, #o], iterator_types = ["parallel", "reduction"]}
      ins(%a, %x : tensor<4x8xf32>, tensor<8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A row sum y[m] += x[m, k]: the output's last dimension is its only one, and
// no input reads it last, so nothing moves. A full reduction to a scalar has
// no output dimension at all.

// CHECK-LABEL: func.func @row_sum
// CHECK:         iterator_types = ["parallel", "reduction"]
// CHECK-LABEL: func.func @full_sum
// CHECK:         iterator_types = ["reduction", "reduction"]
#r = affine_map<(d0, d1) -> (d0, d1)>
#ro = affine_map<(d0, d1) -> (d0)>
#s = affine_map<(d0, d1) -> ()>
func.func @row_sum(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %y = linalg.generic {indexing_maps = [#r, #ro], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @full_sum(%x: tensor<4x8xf32>, %init: tensor<f32>) -> tensor<f32> {
  %y = linalg.generic {indexing_maps = [#r, #s], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %y : tensor<f32>
}
