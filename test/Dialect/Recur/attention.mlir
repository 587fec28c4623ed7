// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.window_attention, recur.attention and
// recur.rel_attention.

// Token band without bias or cache: the defaults (block 0, bias_kind none)
// are not printed.
// CHECK-LABEL: func.func @window_attention_plain(
// CHECK-SAME: [[Q:%.+]]: tensor<2x64x16xf32>, [[K:%.+]]: tensor<2x64x16xf32>, [[V:%.+]]: tensor<2x64x8xf32>) -> tensor<2x64x8xf32> {
// CHECK-NEXT: [[O:%.+]] = recur.window_attention [[Q]], [[K]], [[V]] window 4 : tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32>
// CHECK-NEXT: return [[O]] : tensor<2x64x8xf32>
// CHECK-NEXT: }
func.func @window_attention_plain(%q: tensor<2x64x16xf32>, %k: tensor<2x64x16xf32>, %v: tensor<2x64x8xf32>) -> tensor<2x64x8xf32> {
  %o = recur.window_attention %q, %k, %v window 4 {bias_kind = #recur.bias<none>, block = 0 : i64} : tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32>
  return %o : tensor<2x64x8xf32>
}

// A T5 bias table [heads, 32] with a carried K/V cache.
// CHECK-LABEL: func.func @window_attention_t5_cache(
// CHECK-SAME: [[Q:%.+]]: tensor<2x8x1024x64xf32>, [[K:%.+]]: tensor<2x8x1024x64xf32>, [[V:%.+]]: tensor<2x8x1024x64xf32>, [[T5:%.+]]: tensor<8x32xf32>, [[KC:%.+]]: tensor<2x8x512x64xf32>, [[VC:%.+]]: tensor<2x8x512x64xf32>) -> tensor<2x8x1024x64xf32> {
// CHECK-NEXT: [[O:%.+]] = recur.window_attention [[Q]], [[K]], [[V]] bias([[T5]] : tensor<8x32xf32>) cache([[KC]], [[VC]] : tensor<2x8x512x64xf32>, tensor<2x8x512x64xf32>) window 512 {bias_kind = #recur.bias<t5>} : tensor<2x8x1024x64xf32>, tensor<2x8x1024x64xf32>, tensor<2x8x1024x64xf32>
// CHECK-NEXT: return [[O]] : tensor<2x8x1024x64xf32>
// CHECK-NEXT: }
func.func @window_attention_t5_cache(%q: tensor<2x8x1024x64xf32>, %k: tensor<2x8x1024x64xf32>, %v: tensor<2x8x1024x64xf32>, %t5: tensor<8x32xf32>, %kc: tensor<2x8x512x64xf32>, %vc: tensor<2x8x512x64xf32>) -> tensor<2x8x1024x64xf32> {
  %o = recur.window_attention %q, %k, %v bias(%t5 : tensor<8x32xf32>) cache(%kc, %vc : tensor<2x8x512x64xf32>, tensor<2x8x512x64xf32>) window 512 {bias_kind = #recur.bias<t5>} : tensor<2x8x1024x64xf32>, tensor<2x8x1024x64xf32>, tensor<2x8x1024x64xf32>
  return %o : tensor<2x8x1024x64xf32>
}

// T5 with its own bucket count and distance, an explicit scale and the
// query's own position in the band.
// CHECK-LABEL: func.func @window_attention_t5_buckets_scale_self(
// CHECK-SAME: [[Q:%.+]]: tensor<4x32x16xf64>, [[K:%.+]]: tensor<4x32x16xf64>, [[V:%.+]]: tensor<4x32x16xf64>, [[T5:%.+]]: tensor<4x16xf64>) -> tensor<4x32x16xf64> {
// CHECK-NEXT: [[O:%.+]] = recur.window_attention [[Q]], [[K]], [[V]] bias([[T5]] : tensor<4x16xf64>) window 8 {bias_kind = #recur.bias<t5>, include_self, max_distance = 64 : i64, num_buckets = 16 : i64, scale = 2.500000e-01 : f64} : tensor<4x32x16xf64>, tensor<4x32x16xf64>, tensor<4x32x16xf64>
// CHECK-NEXT: return [[O]] : tensor<4x32x16xf64>
// CHECK-NEXT: }
func.func @window_attention_t5_buckets_scale_self(%q: tensor<4x32x16xf64>, %k: tensor<4x32x16xf64>, %v: tensor<4x32x16xf64>, %t5: tensor<4x16xf64>) -> tensor<4x32x16xf64> {
  %o = recur.window_attention %q, %k, %v bias(%t5 : tensor<4x16xf64>) window 8 {bias_kind = #recur.bias<t5>, include_self, max_distance = 64 : i64, num_buckets = 16 : i64, scale = 2.500000e-01 : f64} : tensor<4x32x16xf64>, tensor<4x32x16xf64>, tensor<4x32x16xf64>
  return %o : tensor<4x32x16xf64>
}

// ALiBi slopes [heads] with a block band, dynamic batch and length.
// CHECK-LABEL: func.func @window_attention_alibi_block_dynamic(
// CHECK-SAME: [[Q:%.+]]: tensor<?x8x?x64xf16>, [[K:%.+]]: tensor<?x8x?x64xf16>, [[V:%.+]]: tensor<?x8x?x32xf16>, [[SLOPES:%.+]]: tensor<8xf16>) -> tensor<?x8x?x32xf16> {
// CHECK-NEXT: [[O:%.+]] = recur.window_attention [[Q]], [[K]], [[V]] bias([[SLOPES]] : tensor<8xf16>) window 128 {bias_kind = #recur.bias<alibi>, block = 64 : i64, include_self} : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x32xf16>
// CHECK-NEXT: return [[O]] : tensor<?x8x?x32xf16>
// CHECK-NEXT: }
func.func @window_attention_alibi_block_dynamic(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x32xf16>, %slopes: tensor<8xf16>) -> tensor<?x8x?x32xf16> {
  %o = recur.window_attention %q, %k, %v bias(%slopes : tensor<8xf16>) window 128 {bias_kind = #recur.bias<alibi>, block = 64 : i64, include_self} : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x32xf16>
  return %o : tensor<?x8x?x32xf16>
}

// Rank 2 (no heads) with a cache of dynamic length.
// CHECK-LABEL: func.func @window_attention_rank2_cache(
// CHECK-SAME: [[Q:%.+]]: tensor<16x4xbf16>, [[K:%.+]]: tensor<16x4xbf16>, [[V:%.+]]: tensor<16x2xbf16>, [[KC:%.+]]: tensor<?x4xbf16>, [[VC:%.+]]: tensor<?x2xbf16>) -> tensor<16x2xbf16> {
// CHECK-NEXT: [[O:%.+]] = recur.window_attention [[Q]], [[K]], [[V]] cache([[KC]], [[VC]] : tensor<?x4xbf16>, tensor<?x2xbf16>) window 16 : tensor<16x4xbf16>, tensor<16x4xbf16>, tensor<16x2xbf16>
// CHECK-NEXT: return [[O]] : tensor<16x2xbf16>
// CHECK-NEXT: }
func.func @window_attention_rank2_cache(%q: tensor<16x4xbf16>, %k: tensor<16x4xbf16>, %v: tensor<16x2xbf16>, %kc: tensor<?x4xbf16>, %vc: tensor<?x2xbf16>) -> tensor<16x2xbf16> {
  %o = recur.window_attention %q, %k, %v cache(%kc, %vc : tensor<?x4xbf16>, tensor<?x2xbf16>) window 16 : tensor<16x4xbf16>, tensor<16x4xbf16>, tensor<16x2xbf16>
  return %o : tensor<16x2xbf16>
}

// Every key visible; the mask 'none' is the default and is not printed.
// CHECK-LABEL: func.func @attention_none(
// CHECK-SAME: [[Q:%.+]]: tensor<10x16xf32>, [[K:%.+]]: tensor<12x16xf32>, [[V:%.+]]: tensor<12x8xf32>) -> tensor<10x8xf32> {
// CHECK-NEXT: [[O:%.+]] = recur.attention [[Q]], [[K]], [[V]] : tensor<10x16xf32>, tensor<12x16xf32>, tensor<12x8xf32>
// CHECK-NEXT: return [[O]] : tensor<10x8xf32>
// CHECK-NEXT: }
func.func @attention_none(%q: tensor<10x16xf32>, %k: tensor<12x16xf32>, %v: tensor<12x8xf32>) -> tensor<10x8xf32> {
  %o = recur.attention %q, %k, %v {mask = #recur.mask<none>} : tensor<10x16xf32>, tensor<12x16xf32>, tensor<12x8xf32>
  return %o : tensor<10x8xf32>
}

// Causal, more keys than queries, explicit scale, dynamic sizes.
// CHECK-LABEL: func.func @attention_causal_scale_dynamic(
// CHECK-SAME: [[Q:%.+]]: tensor<?x4x?x64xf64>, [[K:%.+]]: tensor<?x4x?x64xf64>, [[V:%.+]]: tensor<?x4x?x32xf64>) -> tensor<?x4x?x32xf64> {
// CHECK-NEXT: [[O:%.+]] = recur.attention [[Q]], [[K]], [[V]] {mask = #recur.mask<causal>, scale = 1.250000e-01 : f64} : tensor<?x4x?x64xf64>, tensor<?x4x?x64xf64>, tensor<?x4x?x32xf64>
// CHECK-NEXT: return [[O]] : tensor<?x4x?x32xf64>
// CHECK-NEXT: }
func.func @attention_causal_scale_dynamic(%q: tensor<?x4x?x64xf64>, %k: tensor<?x4x?x64xf64>, %v: tensor<?x4x?x32xf64>) -> tensor<?x4x?x32xf64> {
  %o = recur.attention %q, %k, %v {mask = #recur.mask<causal>, scale = 1.250000e-01 : f64} : tensor<?x4x?x64xf64>, tensor<?x4x?x64xf64>, tensor<?x4x?x32xf64>
  return %o : tensor<?x4x?x32xf64>
}

// Causal over a longer key sequence (queries are the last positions).
// CHECK-LABEL: func.func @attention_causal_longer_keys(
// CHECK-SAME: [[Q:%.+]]: tensor<2x16x8xf32>, [[K:%.+]]: tensor<2x48x8xf32>, [[V:%.+]]: tensor<2x48x8xf32>) -> tensor<2x16x8xf32> {
// CHECK-NEXT: [[O:%.+]] = recur.attention [[Q]], [[K]], [[V]] {mask = #recur.mask<causal>} : tensor<2x16x8xf32>, tensor<2x48x8xf32>, tensor<2x48x8xf32>
// CHECK-NEXT: return [[O]] : tensor<2x16x8xf32>
// CHECK-NEXT: }
func.func @attention_causal_longer_keys(%q: tensor<2x16x8xf32>, %k: tensor<2x48x8xf32>, %v: tensor<2x48x8xf32>) -> tensor<2x16x8xf32> {
  %o = recur.attention %q, %k, %v {mask = #recur.mask<causal>} : tensor<2x16x8xf32>, tensor<2x48x8xf32>, tensor<2x48x8xf32>
  return %o : tensor<2x16x8xf32>
}

// MemBART's memory mask with key padding.
// CHECK-LABEL: func.func @attention_memory_key_padding(
// CHECK-SAME: [[Q:%.+]]: tensor<2x96x64xf32>, [[K:%.+]]: tensor<2x96x64xf32>, [[V:%.+]]: tensor<2x96x64xf32>, [[PAD:%.+]]: tensor<2x96xi1>) -> tensor<2x96x64xf32> {
// CHECK-NEXT: [[O:%.+]] = recur.attention [[Q]], [[K]], [[V]] key_padding([[PAD]] : tensor<2x96xi1>) {mask = #recur.mask<memory>, memory_slots = 32 : i64} : tensor<2x96x64xf32>, tensor<2x96x64xf32>, tensor<2x96x64xf32>
// CHECK-NEXT: return [[O]] : tensor<2x96x64xf32>
// CHECK-NEXT: }
func.func @attention_memory_key_padding(%q: tensor<2x96x64xf32>, %k: tensor<2x96x64xf32>, %v: tensor<2x96x64xf32>, %pad: tensor<2x96xi1>) -> tensor<2x96x64xf32> {
  %o = recur.attention %q, %k, %v key_padding(%pad : tensor<2x96xi1>) {mask = #recur.mask<memory>, memory_slots = 32 : i64} : tensor<2x96x64xf32>, tensor<2x96x64xf32>, tensor<2x96x64xf32>
  return %o : tensor<2x96x64xf32>
}

// Key padding alone, with dynamic key length.
// CHECK-LABEL: func.func @attention_key_padding_dynamic(
// CHECK-SAME: [[Q:%.+]]: tensor<2x8x5x16xf16>, [[K:%.+]]: tensor<2x8x?x16xf16>, [[V:%.+]]: tensor<2x8x?x4xf16>, [[PAD:%.+]]: tensor<2x8x?xi1>) -> tensor<2x8x5x4xf16> {
// CHECK-NEXT: [[O:%.+]] = recur.attention [[Q]], [[K]], [[V]] key_padding([[PAD]] : tensor<2x8x?xi1>) : tensor<2x8x5x16xf16>, tensor<2x8x?x16xf16>, tensor<2x8x?x4xf16>
// CHECK-NEXT: return [[O]] : tensor<2x8x5x4xf16>
// CHECK-NEXT: }
func.func @attention_key_padding_dynamic(%q: tensor<2x8x5x16xf16>, %k: tensor<2x8x?x16xf16>, %v: tensor<2x8x?x4xf16>, %pad: tensor<2x8x?xi1>) -> tensor<2x8x5x4xf16> {
  %o = recur.attention %q, %k, %v key_padding(%pad : tensor<2x8x?xi1>) : tensor<2x8x5x16xf16>, tensor<2x8x?x16xf16>, tensor<2x8x?x4xf16>
  return %o : tensor<2x8x5x4xf16>
}

// Transformer-XL: a 128-position segment over 256 memory positions.
// CHECK-LABEL: func.func @rel_attention(
// CHECK-SAME: [[Q:%.+]]: tensor<2x8x128x64xf32>, [[K:%.+]]: tensor<2x8x384x64xf32>, [[V:%.+]]: tensor<2x8x384x64xf32>, [[R:%.+]]: tensor<8x384x64xf32>, [[U:%.+]]: tensor<8x64xf32>, [[PB:%.+]]: tensor<8x64xf32>) -> tensor<2x8x128x64xf32> {
// CHECK-NEXT: [[O:%.+]] = recur.rel_attention [[Q]], [[K]], [[V]], [[R]], [[U]], [[PB]] : tensor<2x8x128x64xf32>, tensor<2x8x384x64xf32>, tensor<2x8x384x64xf32>, tensor<8x384x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
// CHECK-NEXT: return [[O]] : tensor<2x8x128x64xf32>
// CHECK-NEXT: }
func.func @rel_attention(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x384x64xf32>, %v: tensor<2x8x384x64xf32>, %r: tensor<8x384x64xf32>, %u: tensor<8x64xf32>, %pb: tensor<8x64xf32>) -> tensor<2x8x128x64xf32> {
  %o = recur.rel_attention %q, %k, %v, %r, %u, %pb : tensor<2x8x128x64xf32>, tensor<2x8x384x64xf32>, tensor<2x8x384x64xf32>, tensor<8x384x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
  return %o : tensor<2x8x128x64xf32>
}

// Rank 3 (no batch), a different value width, an explicit scale and a
// dynamic number of keys.
// CHECK-LABEL: func.func @rel_attention_scale_dynamic(
// CHECK-SAME: [[Q:%.+]]: tensor<4x16x32xf64>, [[K:%.+]]: tensor<4x?x32xf64>, [[V:%.+]]: tensor<4x?x8xf64>, [[R:%.+]]: tensor<4x?x32xf64>, [[U:%.+]]: tensor<4x32xf64>, [[PB:%.+]]: tensor<4x32xf64>) -> tensor<4x16x8xf64> {
// CHECK-NEXT: [[O:%.+]] = recur.rel_attention [[Q]], [[K]], [[V]], [[R]], [[U]], [[PB]] {scale = 5.000000e-01 : f64} : tensor<4x16x32xf64>, tensor<4x?x32xf64>, tensor<4x?x8xf64>, tensor<4x?x32xf64>, tensor<4x32xf64>, tensor<4x32xf64>
// CHECK-NEXT: return [[O]] : tensor<4x16x8xf64>
// CHECK-NEXT: }
func.func @rel_attention_scale_dynamic(%q: tensor<4x16x32xf64>, %k: tensor<4x?x32xf64>, %v: tensor<4x?x8xf64>, %r: tensor<4x?x32xf64>, %u: tensor<4x32xf64>, %pb: tensor<4x32xf64>) -> tensor<4x16x8xf64> {
  %o = recur.rel_attention %q, %k, %v, %r, %u, %pb {scale = 5.000000e-01 : f64} : tensor<4x16x32xf64>, tensor<4x?x32xf64>, tensor<4x?x8xf64>, tensor<4x?x32xf64>, tensor<4x32xf64>, tensor<4x32xf64>
  return %o : tensor<4x16x8xf64>
}

// recur.window_attention_grad: dq, dk, dv, then dbias with a bias and
// dk_cache, dv_cache with a cache.
// CHECK-LABEL: func.func @window_attention_grad_plain(
// CHECK-SAME: [[Q:%.+]]: tensor<2x64x16xf32>, [[K:%.+]]: tensor<2x64x16xf32>, [[V:%.+]]: tensor<2x64x8xf32>, [[DY:%.+]]: tensor<2x64x8xf32>)
// CHECK-NEXT: [[G:%.+]]:3 = recur.window_attention_grad [[Q]], [[K]], [[V]], [[DY]] window 4 {include_self} : tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32> -> tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32>
// CHECK-NEXT: return [[G]]#0, [[G]]#1, [[G]]#2
func.func @window_attention_grad_plain(%q: tensor<2x64x16xf32>, %k: tensor<2x64x16xf32>, %v: tensor<2x64x8xf32>, %dy: tensor<2x64x8xf32>) -> (tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32>) {
  %dq, %dk, %dv = recur.window_attention_grad %q, %k, %v, %dy window 4 {include_self} : tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32> -> tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32>
  return %dq, %dk, %dv : tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x8xf32>
}

// CHECK-LABEL: func.func @window_attention_grad_t5_cache(
// CHECK-SAME: [[Q:%.+]]: tensor<2x4x32x8xf32>, [[K:%.+]]: tensor<2x4x32x8xf32>, [[V:%.+]]: tensor<2x4x32x8xf32>, [[DY:%.+]]: tensor<2x4x32x8xf32>, [[T5:%.+]]: tensor<4x16xf32>, [[KC:%.+]]: tensor<2x4x16x8xf32>, [[VC:%.+]]: tensor<2x4x16x8xf32>)
// CHECK-NEXT: [[G:%.+]]:6 = recur.window_attention_grad [[Q]], [[K]], [[V]], [[DY]] bias([[T5]] : tensor<4x16xf32>) cache([[KC]], [[VC]] : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) window 16 {bias_kind = #recur.bias<t5>, block = 16 : i64, max_distance = 64 : i64, num_buckets = 16 : i64, scale = 1.000000e+00 : f64} : tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32> -> tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<4x16xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
func.func @window_attention_grad_t5_cache(%q: tensor<2x4x32x8xf32>, %k: tensor<2x4x32x8xf32>, %v: tensor<2x4x32x8xf32>, %dy: tensor<2x4x32x8xf32>, %t5: tensor<4x16xf32>, %kc: tensor<2x4x16x8xf32>, %vc: tensor<2x4x16x8xf32>) -> tensor<4x16xf32> {
  %g:6 = recur.window_attention_grad %q, %k, %v, %dy bias(%t5 : tensor<4x16xf32>) cache(%kc, %vc : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) window 16 {bias_kind = #recur.bias<t5>, block = 16 : i64, num_buckets = 16 : i64, max_distance = 64 : i64, scale = 1.0 : f64} : tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32> -> tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<4x16xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %g#3 : tensor<4x16xf32>
}
