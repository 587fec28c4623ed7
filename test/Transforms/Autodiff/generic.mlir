// RUN: recur-opt %s --recur-derive-backward --canonicalize | FileCheck %s

// Adjoints of linalg.generic: the scalar body in reverse mode, one generic
// per input over that input's indices and the loops it does not index.

// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[$INV:.*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 2, d1 mod 2)>

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A reduction `out + a * b` (a matrix-vector product): the matrix's
// cotangent is dy[i] * v[j] on every element (no loop left to sum), the
// vector's sums dy[i] * m[i, j] over i, iterating over v's index first.

// CHECK-LABEL: func.func @matvec_backward
// CHECK-SAME:    (%[[M:[^:]*]]: tensor<3x4xf32>, %[[V:[^:]*]]: tensor<4xf32>, %[[DY:[^:]*]]: tensor<3xf32>
// CHECK:         %[[DM:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[M]], %[[V]], %[[DY]] :
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[D:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[D]], %[[B]]
// CHECK-NEXT:      linalg.yield %[[P]]
// CHECK:         %[[DV:.*]] = linalg.generic {indexing_maps = [#[[T:.*]], #[[$ROW]], #[[$COL]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[M]], %[[V]], %[[DY]] :
// CHECK-NEXT:    ^bb0(%[[A2:.*]]: f32, %{{.*}}: f32, %[[D2:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[P2:.*]] = arith.mulf %[[D2]], %[[A2]]
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[P2]]
// CHECK-NEXT:      linalg.yield %[[S]]
// CHECK:         return %[[DM]], %[[DV]]
func.func @matvec(%m: tensor<3x4xf32>, %v: tensor<4xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d1)>, #row], iterator_types = ["parallel", "reduction"]} ins(%m, %v : tensor<3x4xf32>, tensor<4xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// A max reduction: only the element equal to the max gets the cotangent.

// CHECK-LABEL: func.func @rowmax_backward
// CHECK-SAME:    (%[[M:[^:]*]]: tensor<3x4xf32>, %[[DY:[^:]*]]: tensor<3xf32>
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[M]] :
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[M]], %[[DY]], %[[MAX]] :
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[D:.*]]: f32, %[[R:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[PICKED:.*]] = arith.cmpf oeq, %[[X]], %[[R]]
// CHECK-NEXT:      %[[CT:.*]] = arith.select %[[PICKED]], %[[D]], %{{.*}}
// CHECK-NEXT:      linalg.yield %[[CT]]
func.func @rowmax(%m: tensor<3x4xf32>) -> tensor<3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%m : tensor<3x4xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// An input read through `d1 * 2 + d2` (the front end's heads): the adjoint
// runs over the input's indices and reads the cotangent through the
// inverse, `(i floordiv 2, i mod 2)`; tanh' = 1 - tanh^2.

// CHECK-LABEL: func.func @split_backward
// CHECK:         linalg.generic {indexing_maps = [#[[$ID]], #[[$INV]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK:           %[[T:.*]] = math.tanh
// CHECK:           %[[SQ:.*]] = arith.mulf %[[T]], %[[T]]
// CHECK:           %[[D:.*]] = arith.subf %{{.*}}, %[[SQ]]
// CHECK:           arith.mulf %{{.*}}, %[[D]]
func.func @split(%x: tensor<2x8xf32>) -> tensor<2x4x2xf32> {
  %e = tensor.empty() : tensor<2x4x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1 * 2 + d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4x2xf32>
  return %r : tensor<2x4x2xf32>
}

