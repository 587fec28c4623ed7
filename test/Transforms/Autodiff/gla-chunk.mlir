// RUN: recur-opt %s --recur-derive-backward --canonicalize | FileCheck %s

// Without a chunk_size the reverse sweep's chunk is the most steps (a power
// of two, 8 to 64) whose states, dk x dv each, hold at most 512 KiB: 32 of
// 64 x 64 f32 (16 KiB each), 16 of 64 x 64 complex<f32>, 8 (the least) of
// 256 x 256 f32, 64 (the most) of 4 x 3, and 64 when dv is not static. A
// chunk_size the op names is kept (gla.mlir).

// CHECK-LABEL: func.func @f32_64_backward
// CHECK: recur.gated_linear_attention_grad {{.*}} chunk 32 :
func.func @f32_64(%q: tensor<2x9x64xf32>, %v: tensor<2x9x64xf32>)
    -> tensor<2x9x64xf32> {
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q
      : tensor<2x9x64xf32>, tensor<2x9x64xf32>, tensor<2x9x64xf32>,
        tensor<2x9x64xf32>
  return %y : tensor<2x9x64xf32>
}

// CHECK-LABEL: func.func @c64_64_backward
// CHECK: recur.gated_linear_attention_grad {{.*}} chunk 16 :
func.func @c64_64(%q: tensor<2x9x64xf32>, %v: tensor<2x9x64xf32>,
                  %a: tensor<2x9x64xcomplex<f32>>) -> tensor<2x9x64xf32> {
  %y, %s = recur.gated_linear_attention %q, %q, %v, %a
      : tensor<2x9x64xf32>, tensor<2x9x64xf32>, tensor<2x9x64xf32>,
        tensor<2x9x64xcomplex<f32>>
  return %y : tensor<2x9x64xf32>
}

// CHECK-LABEL: func.func @f32_256_backward
// CHECK: recur.gated_linear_attention_grad {{.*}} chunk 8 :
func.func @f32_256(%q: tensor<1x9x256xf32>, %v: tensor<1x9x256xf32>)
    -> tensor<1x9x256xf32> {
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q
      : tensor<1x9x256xf32>, tensor<1x9x256xf32>, tensor<1x9x256xf32>,
        tensor<1x9x256xf32>
  return %y : tensor<1x9x256xf32>
}

// CHECK-LABEL: func.func @small_backward
// CHECK: recur.gated_linear_attention_grad {{.*}} chunk 64 :
func.func @small(%q: tensor<2x9x4xf32>, %v: tensor<2x9x3xf32>)
    -> tensor<2x9x3xf32> {
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q
      : tensor<2x9x4xf32>, tensor<2x9x4xf32>, tensor<2x9x3xf32>,
        tensor<2x9x4xf32>
  return %y : tensor<2x9x3xf32>
}

// CHECK-LABEL: func.func @dynamic_backward
// CHECK: recur.gated_linear_attention_grad {{.*}} chunk 64 :
func.func @dynamic(%q: tensor<2x9x64xf32>, %v: tensor<2x9x?xf32>)
    -> tensor<2x9x?xf32> {
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q
      : tensor<2x9x64xf32>, tensor<2x9x64xf32>, tensor<2x9x?xf32>,
        tensor<2x9x64xf32>
  return %y : tensor<2x9x?xf32>
}
