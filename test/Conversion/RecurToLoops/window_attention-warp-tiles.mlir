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
