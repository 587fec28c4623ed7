// RUN: recur-opt %s --recur-derive-backward --verify-diagnostics --split-input-file
// RUN: recur-opt %s --recur-derive-backward=allow-missing --split-input-file 2>&1 | FileCheck %s --check-prefix=ALLOW

// An op with no adjoint (every recur op and the glue the front end emits
// have one; linalg.transpose, which only hand-written IR has, does not) is
// an error naming it; with allow-missing the layer gets a remark and no
// backward function, and the others still do.

func.func @transposed(%x: tensor<2x8xf32>) -> tensor<8x2xf32> {
  %init = tensor.empty() : tensor<8x2xf32>
  // expected-error @+1 {{'linalg.transpose' has no adjoint: the layer cannot be differentiated yet}}
  %t = linalg.transpose ins(%x : tensor<2x8xf32>) outs(%init : tensor<8x2xf32>) permutation = [1, 0]
  return %t : tensor<8x2xf32>
}

// ALLOW: remark: no backward for layer 'transposed': 'linalg.transpose' has no adjoint
// ALLOW-NOT: func.func @transposed_backward
// ALLOW: func.func @plain_backward
// -----

func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
