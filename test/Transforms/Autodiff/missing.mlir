// RUN: recur-opt %s --recur-derive-backward --verify-diagnostics --split-input-file
// RUN: recur-opt %s --recur-derive-backward=allow-missing --split-input-file 2>&1 | FileCheck %s --check-prefix=ALLOW

// An op with no adjoint yet is an error naming it; with allow-missing the
// layer gets a remark and no backward function, and the others still do.

func.func @routed(%probs: tensor<2x8x4xf32>) -> tensor<2x8x2xf32> {
  // expected-error @+1 {{'recur.route_topk' has no adjoint: the layer cannot be differentiated yet}}
  %gates, %idx = recur.route_topk %probs top 2 : tensor<2x8x4xf32>
  return %gates : tensor<2x8x2xf32>
}

// ALLOW: remark: no backward for layer 'routed': 'recur.route_topk' has no adjoint
// ALLOW-NOT: func.func @routed_backward
// ALLOW: func.func @plain_backward
// -----

func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
