// RUN: recur-opt %s --recur-derive-backward --verify-diagnostics --split-input-file
// RUN: recur-opt %s --recur-derive-backward=allow-missing --split-input-file 2>&1 | FileCheck %s --check-prefix=ALLOW

// An op with no adjoint yet is an error naming it; with allow-missing the
// layer gets a remark and no backward function, and the others still do.

func.func @gated(%c: tensor<2x8x4xf32>, %z: tensor<2x8x4xf32>, %bg: tensor<4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'recur.gate' has no adjoint: the layer cannot be differentiated yet}}
  %r = recur.gate <fixed> %c, %z, gates(%bg : tensor<4xf32>) : tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// ALLOW: remark: no backward for layer 'gated': 'recur.gate' has no adjoint
// ALLOW-NOT: func.func @gated_backward
// ALLOW: func.func @plain_backward
// -----

func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
