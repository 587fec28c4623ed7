// RUN: recur-opt %s --split-input-file --recur-derive-backward --canonicalize | FileCheck %s

// depth_loop: a forward loop stacks the carried value at each depth, a
// reverse loop re-runs each step and differentiates it; the captured
// weight's cotangent is summed over the steps.

// CHECK-LABEL: func.func @depth_backward
// CHECK:         %[[STACK:.*]] = tensor.empty() : tensor<3x2x8x4xf32>
// CHECK:         %[[FWD:.*]]:2 = scf.for {{.*}} iter_args({{.*}} = %arg0, {{.*}} = %[[STACK]])
// CHECK:           tensor.insert_slice
// CHECK:         %[[REV:.*]]:2 = scf.for {{.*}} iter_args({{.*}} = %arg2, {{.*}} = {{.*}}) -> (tensor<2x8x4xf32>, tensor<4xf32>)
// CHECK:           tensor.extract_slice %[[FWD]]#1
// CHECK:           math.tanh
// CHECK:         return %[[REV]]#0, %[[REV]]#1
func.func @depth(%x: tensor<2x8x4xf32>, %w: tensor<4xf32>) -> tensor<2x8x4xf32> {
  %r = recur.depth_loop max_depth 3 init(%x : tensor<2x8x4xf32>) {
  ^bb0(%l: index, %h: tensor<2x8x4xf32>):
    %e = tensor.empty() : tensor<2x8x4xf32>
    %n = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%h, %w : tensor<2x8x4xf32>, tensor<4xf32>) outs(%e : tensor<2x8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %t = math.tanh %m : f32
      linalg.yield %t : f32
    } -> tensor<2x8x4xf32>
    recur.yield %n : tensor<2x8x4xf32>
  }
  return %r : tensor<2x8x4xf32>
}

// -----

// halting: the formulas as generics; a halted token (mass >= threshold)
// passes its cotangent to s_prev only.

// CHECK-LABEL: func.func @halt_backward
// CHECK:         arith.cmpf olt, {{.*}}, %[[THR:.*]] : f32
// CHECK:         arith.select
// CHECK:         return
func.func @halt(%p: tensor<2x8xf32>, %h: tensor<2x8x4xf32>, %m: tensor<2x8xf32>, %acc: tensor<2x8x4xf32>, %s0: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %a, %s, %m1, %acc1 = recur.halting %p, %h, %m, %acc, %s0 {threshold = 0.9 : f64} : tensor<2x8xf32>, tensor<2x8x4xf32>
  return %s : tensor<2x8x4xf32>
}

// -----

// route_topk: the selection is recomputed and the picked probabilities
// found by comparing indices; only they get cotangents.

// CHECK-LABEL: func.func @route_backward
// CHECK:         %{{.*}}, %[[IDX:.*]] = recur.route_topk %arg0 top 2
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %[[IDX]] :
// CHECK:           arith.cmpi eq
// CHECK:         %[[DP:.*]] = linalg.generic {{.*}} ins(%arg0, %[[IDX]], %{{.*}} : {{.*}}) outs(%{{.*}} : tensor<2x8x4xf32>)
// CHECK:         return %[[DP]]
func.func @route(%probs: tensor<2x8x4xf32>) -> tensor<2x8x2xf32> {
  %gates, %idx = recur.route_topk %probs top 2 : tensor<2x8x4xf32>
  return %gates : tensor<2x8x2xf32>
}

// -----

// moe: the selected experts' hidden layers are recomputed with the weights
// read by expert index; the weight cotangents keep the (token, slot) pairs
// routed to each expert.

// CHECK-LABEL: func.func @experts_backward
// CHECK:         %[[Z:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%{{.*}} : tensor<2x8x2x6xf32>)
// CHECK:           tensor.extract %arg3
// CHECK:         %[[U:.*]] = linalg.generic {{.*}} ins(%arg5, %arg1 : {{.*}}) outs(%{{.*}} : tensor<2x8x2x6xf32>)
// CHECK:           tensor.extract %arg4
// CHECK:         %[[DG:.*]] = linalg.generic {{.*}} ins(%[[Z]], %[[U]] : {{.*}}) outs(%{{.*}} : tensor<2x8x2xf32>)
// CHECK:         %[[DX:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x8x4xf32>)
// CHECK:           tensor.extract %arg3
// CHECK:         %[[DW1:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<3x4x6xf32>)
// CHECK:           linalg.index 0
// CHECK:         %[[DW2:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3x6x4xf32>)
// CHECK:         return %[[DX]], %{{.*}}, %[[DG]], %[[DW1]], %[[DW2]]
func.func @experts(%x: tensor<2x8x4xf32>, %idx: tensor<2x8x2xi32>, %g: tensor<2x8x2xf32>, %w1: tensor<3x4x6xf32>, %w2: tensor<3x6x4xf32>) -> tensor<2x8x4xf32> {
  %y = recur.moe %x, %idx, %g, %w1, %w2 {activation = #recur.activation<relu>} : tensor<2x8x4xf32>, tensor<2x8x2xi32>, tensor<2x8x2xf32>, tensor<3x4x6xf32>, tensor<3x6x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// scan: a scan in the opposite order of (c_t, x_t+1, dc_t) whose combine
// runs the operator's reverse pass, then dx through the same pass (the
// first step, c_0 = x_0, passes lambda through).

// CHECK-LABEL: func.func @scan_backward
// CHECK:         %[[C:.*]]:2 = recur.scan(%arg0, %arg1) along 1 {associative}
// CHECK:         %[[L:.*]]:6 = recur.scan(%[[C]]#0, %[[C]]#1, {{.*}}, %arg2) along 1 reverse :
// CHECK-NOT:       associative
// CHECK:           recur.yield
// CHECK:         %[[DX:.*]]:2 = linalg.generic {{.*}} ins({{.*}}, %arg0, %arg1, %[[L]]#4, %[[L]]#5 :
// CHECK:           arith.select
// CHECK:         return %[[DX]]#0, %[[DX]]#1
func.func @scan(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %A, %H = recur.scan (%a, %b) along 1 {associative} : tensor<2x8xf32>, tensor<2x8xf32> {
  ^bb0(%p1: f32, %p2: f32, %q1: f32, %q2: f32):
    %m = arith.mulf %p1, %q1 : f32
    %t = arith.mulf %q1, %p2 : f32
    %s = arith.addf %t, %q2 : f32
    recur.yield %m, %s : f32, f32
  }
  return %H : tensor<2x8xf32>
}
