// RUN: recur-opt %s --convert-recur-to-loops="mark-parallel window-one-pass window-warp-tiles" | FileCheck %s

// window-warp-tiles (recurc's --cuda-window-warp-tiles): window attention
// of f32 whose channels are static multiples of 16 goes by a warp's matrix
// tiles: a loop over (leading index, tile of 16 queries) tagged
// recur.gpu_block, its loops tagged recur.block_threads the block's 32
// threads: the queries split into tf32 halves, the running sums started,
// then a loop over the tiles of 16 key rows: the keys (transposed) and
// values loaded and split, S = Q K^T by tiles (three 16 x 8 by 8 x 16
// products a step of 8, two steps at d = 16), the online softmax a thread
// a query row (16 threads: 16 exps of the weights, one of the rescale), O
// += P V by tiles (the sums read back: vector<16x16xf32>); then O / l
// written out. Otherwise the one-pass form, without tiles. Numerics: the
// GPU suite's tiles_window_* cases (gpu-forms.test).

// CHECK-LABEL: func.func @tiles
// CHECK: } {recur.block_threads}
// CHECK: } {recur.block_threads}
// CHECK: scf.for
// CHECK: } {recur.block_threads}
// CHECK: } {recur.block_threads}
// CHECK-COUNT-6: vector.contract {{.*}} : vector<16x8xf32>, vector<8x16xf32> into vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-17: math.exp
// CHECK: } {recur.block_threads}
// CHECK: vector.transfer_read {{.*}} : tensor<16x32xf32>, vector<16x16xf32>
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x32xf32>
// CHECK: } {recur.block_threads}
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK-NOT: vector.contract
// CHECK: return
func.func @tiles(%q: tensor<2x?x16xf32>, %k: tensor<2x?x16xf32>,
                 %v: tensor<2x?x32xf32>) -> tensor<2x?x32xf32> {
  %o = recur.window_attention %q, %k, %v window 40
      : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>
  return %o : tensor<2x?x32xf32>
}

// d = 8 (not a multiple of 16), f64: the one-pass form.
// CHECK-LABEL: func.func @no_tiles
// CHECK-NOT: vector.contract
// CHECK-NOT: recur.gpu_block
// CHECK: return
func.func @no_tiles(%q: tensor<2x?x8xf32>, %v: tensor<2x?x16xf32>,
                    %q2: tensor<2x?x16xf64>)
    -> (tensor<2x?x16xf32>, tensor<2x?x16xf64>) {
  %o = recur.window_attention %q, %q, %v window 40
      : tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x16xf32>
  %o2 = recur.window_attention %q2, %q2, %q2 window 40
      : tensor<2x?x16xf64>, tensor<2x?x16xf64>, tensor<2x?x16xf64>
  return %o, %o2 : tensor<2x?x16xf32>, tensor<2x?x16xf64>
}

// The grad by the same tiles, in two launches. Launch 1, a block per
// (leading index, tile of 16 queries), writes dq and each query's m, 1 / l
// and D: a first walk over the key tiles, S = Q K^T (d = 16: two steps of
// three products) and dP = dY V^T (dv = 32: four steps) by tiles, then the
// online softmax a thread a query row (17 exps); a second walk, S and dP
// again, P and dS a thread a query row (16 exps), and dq^T += K^T dS^T by
// tiles (the sums read back). Launch 2, a block per (leading index, tile of
// 16 key rows), writes dk and dv: S and dP by tiles, P and dS an element a
// thread (one exp in the loop), then dv += P^T dY (two tiles of [16, 32],
// the sums read back) and dk += dS^T Q by tiles.
// CHECK-LABEL: func.func @grad_tiles
// CHECK: scf.for {{.*}} -> (tensor<2x?x16xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>)
// CHECK-COUNT-6: vector.contract {{.*}} : vector<16x8xf32>, vector<8x16xf32> into vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-12: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-17: math.exp
// CHECK: } {recur.block_threads}
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-12: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-16: math.exp
// CHECK: vector.transfer_read {{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK: scf.for {{.*}} -> (tensor<2x?x16xf32>, tensor<2x?x32xf32>)
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-12: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: vector.transfer_read {{.*}} : tensor<16x32xf32>, vector<16x16xf32>
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x32xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK-NOT: vector.contract
// CHECK: return
func.func @grad_tiles(%q: tensor<2x?x16xf32>, %k: tensor<2x?x16xf32>,
                      %v: tensor<2x?x32xf32>, %dy: tensor<2x?x32xf32>)
    -> (tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>) {
  %dq, %dk, %dv = recur.window_attention_grad %q, %k, %v, %dy window 40
      : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>
      -> tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>
  return %dq, %dk, %dv : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>
}

// Channels of 80: the forward's block buffers fit 48 KiB (39040 bytes),
// the grad's second launch's would not (57536): the forward by tiles, the
// grad in the one-pass form. d = 8 and f64: the one-pass form.
// CHECK-LABEL: func.func @grad_no_tiles
// CHECK: vector.contract
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK-NOT: vector.contract
// CHECK-NOT: recur.gpu_block
// CHECK: return
func.func @grad_no_tiles(%q: tensor<2x?x80xf32>, %q8: tensor<2x?x8xf32>,
                         %v: tensor<2x?x16xf32>, %q2: tensor<2x?x16xf64>)
    -> (tensor<2x?x80xf32>, tensor<2x?x80xf32>, tensor<2x?x8xf32>,
        tensor<2x?x16xf64>) {
  %o = recur.window_attention %q, %q, %q window 40
      : tensor<2x?x80xf32>, tensor<2x?x80xf32>, tensor<2x?x80xf32>
  %dq, %dk, %dv = recur.window_attention_grad %q, %q, %q, %q window 40
      : tensor<2x?x80xf32>, tensor<2x?x80xf32>, tensor<2x?x80xf32>
      -> tensor<2x?x80xf32>, tensor<2x?x80xf32>, tensor<2x?x80xf32>
  %dq8, %dk8, %dv8 = recur.window_attention_grad %q8, %q8, %v, %v window 40
      : tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x16xf32>
      -> tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x16xf32>
  %dq2, %dk2, %dv2 = recur.window_attention_grad %q2, %q2, %q2, %q2 window 40
      : tensor<2x?x16xf64>, tensor<2x?x16xf64>, tensor<2x?x16xf64>
      -> tensor<2x?x16xf64>, tensor<2x?x16xf64>, tensor<2x?x16xf64>
  return %o, %dq, %dq8, %dq2 : tensor<2x?x80xf32>, tensor<2x?x80xf32>, tensor<2x?x8xf32>, tensor<2x?x16xf64>
}
