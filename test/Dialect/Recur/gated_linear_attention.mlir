// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.gated_linear_attention.

// Real decays (GLA/Mamba style) with the default algorithm: the state is
// [batch, heads, dk, dv] of the decays' element type.
// CHECK-LABEL: func.func @gla_real_decay(
// CHECK-SAME: [[Q:%.+]]: tensor<4x8x256x64xf32>, [[K:%.+]]: tensor<4x8x256x64xf32>, [[V:%.+]]: tensor<4x8x256x32xf32>, [[A:%.+]]: tensor<4x8x256x64xf32>) -> (tensor<4x8x256x32xf32>, tensor<4x8x64x32xf32>) {
// CHECK-NEXT: [[Y:%.+]], [[STATE:%.+]] = recur.gated_linear_attention [[Q]], [[K]], [[V]], [[A]] : tensor<4x8x256x64xf32>, tensor<4x8x256x64xf32>, tensor<4x8x256x32xf32>, tensor<4x8x256x64xf32>
// CHECK-NEXT: return [[Y]], [[STATE]] : tensor<4x8x256x32xf32>, tensor<4x8x64x32xf32>
// CHECK-NEXT: }
func.func @gla_real_decay(%q: tensor<4x8x256x64xf32>, %k: tensor<4x8x256x64xf32>, %v: tensor<4x8x256x32xf32>, %a: tensor<4x8x256x64xf32>) -> (tensor<4x8x256x32xf32>, tensor<4x8x64x32xf32>) {
  %y, %state = recur.gated_linear_attention %q, %k, %v, %a : tensor<4x8x256x64xf32>, tensor<4x8x256x64xf32>, tensor<4x8x256x32xf32>, tensor<4x8x256x64xf32>
  return %y, %state : tensor<4x8x256x32xf32>, tensor<4x8x64x32xf32>
}

// 'auto' is the default and is not printed.
// CHECK-LABEL: func.func @gla_auto(
// CHECK-SAME: [[Q:%.+]]: tensor<2x16x8xf64>, [[K:%.+]]: tensor<2x16x8xf64>, [[V:%.+]]: tensor<2x16x8xf64>, [[A:%.+]]: tensor<2x16x8xf64>) -> (tensor<2x16x8xf64>, tensor<2x8x8xf64>) {
// CHECK-NEXT: [[Y:%.+]], [[STATE:%.+]] = recur.gated_linear_attention [[Q]], [[K]], [[V]], [[A]] : tensor<2x16x8xf64>, tensor<2x16x8xf64>, tensor<2x16x8xf64>, tensor<2x16x8xf64>
// CHECK-NEXT: return [[Y]], [[STATE]] : tensor<2x16x8xf64>, tensor<2x8x8xf64>
// CHECK-NEXT: }
func.func @gla_auto(%q: tensor<2x16x8xf64>, %k: tensor<2x16x8xf64>, %v: tensor<2x16x8xf64>, %a: tensor<2x16x8xf64>) -> (tensor<2x16x8xf64>, tensor<2x8x8xf64>) {
  %y, %state = recur.gated_linear_attention %q, %k, %v, %a {algorithm = #recur.algorithm<auto>} : tensor<2x16x8xf64>, tensor<2x16x8xf64>, tensor<2x16x8xf64>, tensor<2x16x8xf64>
  return %y, %state : tensor<2x16x8xf64>, tensor<2x8x8xf64>
}

// GateLoop: complex decays make a complex state, carried in through 'init';
// chunked evaluation with an explicit chunk length.
// CHECK-LABEL: func.func @gla_complex_init_chunked(
// CHECK-SAME: [[Q:%.+]]: tensor<4x8x4096x64xf32>, [[K:%.+]]: tensor<4x8x4096x64xf32>, [[V:%.+]]: tensor<4x8x4096x64xf32>, [[A:%.+]]: tensor<4x8x4096x64xcomplex<f32>>, [[S0:%.+]]: tensor<4x8x64x64xcomplex<f32>>) -> (tensor<4x8x4096x64xf32>, tensor<4x8x64x64xcomplex<f32>>) {
// CHECK-NEXT: [[Y:%.+]], [[STATE:%.+]] = recur.gated_linear_attention [[Q]], [[K]], [[V]], [[A]] init([[S0]] : tensor<4x8x64x64xcomplex<f32>>) {algorithm = #recur.algorithm<chunked>, chunk_size = 64 : i64} : tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xcomplex<f32>>
// CHECK-NEXT: return [[Y]], [[STATE]] : tensor<4x8x4096x64xf32>, tensor<4x8x64x64xcomplex<f32>>
// CHECK-NEXT: }
func.func @gla_complex_init_chunked(%q: tensor<4x8x4096x64xf32>, %k: tensor<4x8x4096x64xf32>, %v: tensor<4x8x4096x64xf32>, %a: tensor<4x8x4096x64xcomplex<f32>>, %s0: tensor<4x8x64x64xcomplex<f32>>) -> (tensor<4x8x4096x64xf32>, tensor<4x8x64x64xcomplex<f32>>) {
  %y, %state = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<4x8x64x64xcomplex<f32>>) {algorithm = #recur.algorithm<chunked>, chunk_size = 64 : i64} : tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xcomplex<f32>>
  return %y, %state : tensor<4x8x4096x64xf32>, tensor<4x8x64x64xcomplex<f32>>
}

// Chunked with the chunk length left to the backend.
// CHECK-LABEL: func.func @gla_chunked_default_chunk(
// CHECK-SAME: [[Q:%.+]]: tensor<1x128x16xbf16>, [[K:%.+]]: tensor<1x128x16xbf16>, [[V:%.+]]: tensor<1x128x16xbf16>, [[A:%.+]]: tensor<1x128x16xbf16>) -> (tensor<1x128x16xbf16>, tensor<1x16x16xbf16>) {
// CHECK-NEXT: [[Y:%.+]], [[STATE:%.+]] = recur.gated_linear_attention [[Q]], [[K]], [[V]], [[A]] {algorithm = #recur.algorithm<chunked>} : tensor<1x128x16xbf16>, tensor<1x128x16xbf16>, tensor<1x128x16xbf16>, tensor<1x128x16xbf16>
// CHECK-NEXT: return [[Y]], [[STATE]] : tensor<1x128x16xbf16>, tensor<1x16x16xbf16>
// CHECK-NEXT: }
func.func @gla_chunked_default_chunk(%q: tensor<1x128x16xbf16>, %k: tensor<1x128x16xbf16>, %v: tensor<1x128x16xbf16>, %a: tensor<1x128x16xbf16>) -> (tensor<1x128x16xbf16>, tensor<1x16x16xbf16>) {
  %y, %state = recur.gated_linear_attention %q, %k, %v, %a {algorithm = #recur.algorithm<chunked>} : tensor<1x128x16xbf16>, tensor<1x128x16xbf16>, tensor<1x128x16xbf16>, tensor<1x128x16xbf16>
  return %y, %state : tensor<1x128x16xbf16>, tensor<1x16x16xbf16>
}

// The recurrent loop, with a dynamic batch and sequence length.
// CHECK-LABEL: func.func @gla_recurrent_dynamic(
// CHECK-SAME: [[Q:%.+]]: tensor<?x?x16xf32>, [[K:%.+]]: tensor<?x?x16xf32>, [[V:%.+]]: tensor<?x?x8xf32>, [[A:%.+]]: tensor<?x?x16xf32>, [[S0:%.+]]: tensor<?x16x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x16x8xf32>) {
// CHECK-NEXT: [[Y:%.+]], [[STATE:%.+]] = recur.gated_linear_attention [[Q]], [[K]], [[V]], [[A]] init([[S0]] : tensor<?x16x8xf32>) {algorithm = #recur.algorithm<recurrent>} : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>
// CHECK-NEXT: return [[Y]], [[STATE]] : tensor<?x?x8xf32>, tensor<?x16x8xf32>
// CHECK-NEXT: }
func.func @gla_recurrent_dynamic(%q: tensor<?x?x16xf32>, %k: tensor<?x?x16xf32>, %v: tensor<?x?x8xf32>, %a: tensor<?x?x16xf32>, %s0: tensor<?x16x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x16x8xf32>) {
  %y, %state = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<?x16x8xf32>) {algorithm = #recur.algorithm<recurrent>} : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>
  return %y, %state : tensor<?x?x8xf32>, tensor<?x16x8xf32>
}

// The smallest layout, [T, d]: the state is [dk, dv].
// CHECK-LABEL: func.func @gla_rank2(
// CHECK-SAME: [[Q:%.+]]: tensor<32x4xf16>, [[K:%.+]]: tensor<32x4xf16>, [[V:%.+]]: tensor<32x2xf16>, [[A:%.+]]: tensor<32x4xcomplex<f16>>) -> (tensor<32x2xf16>, tensor<4x2xcomplex<f16>>) {
// CHECK-NEXT: [[Y:%.+]], [[STATE:%.+]] = recur.gated_linear_attention [[Q]], [[K]], [[V]], [[A]] : tensor<32x4xf16>, tensor<32x4xf16>, tensor<32x2xf16>, tensor<32x4xcomplex<f16>>
// CHECK-NEXT: return [[Y]], [[STATE]] : tensor<32x2xf16>, tensor<4x2xcomplex<f16>>
// CHECK-NEXT: }
func.func @gla_rank2(%q: tensor<32x4xf16>, %k: tensor<32x4xf16>, %v: tensor<32x2xf16>, %a: tensor<32x4xcomplex<f16>>) -> (tensor<32x2xf16>, tensor<4x2xcomplex<f16>>) {
  %y, %state = recur.gated_linear_attention %q, %k, %v, %a : tensor<32x4xf16>, tensor<32x4xf16>, tensor<32x2xf16>, tensor<32x4xcomplex<f16>>
  return %y, %state : tensor<32x2xf16>, tensor<4x2xcomplex<f16>>
}
