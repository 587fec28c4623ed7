// RUN: recur-opt %s --convert-recur-to-loops="mark-parallel gla-column-threads gla-column-chunk=64 gla-tiles" | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="mark-parallel gla-column-threads gla-tiles" | FileCheck %s --check-prefix=NOCHUNK

// gla-tiles (recurc's --cuda-gla-tiles): where the column form would go in
// chunks (longer than two chunks, now of 16 steps, over fewer than 16384
// columns), a gla of real f32 decays with dk and dv multiples of 16 goes
// in chunks of 16 as a warp's matrix tiles: a loop over (leading index,
// chunk) tagged recur.gpu_block whose loops tagged recur.block_threads are
// its 32 threads: the chunk's transposed key rows and v split into tf32
// halves, then K^T V by tiles (three 16 x 8 by 8 x 16 products a step of
// 8, two steps) into a block buffer, copied out; the carries a thread per
// column (recur.parallel); another block loop for the outputs, S V and
// then (q P) E a slice of 16 key rows at a time, the sums read back
// (vector<16x16xf32>) between slices. Otherwise the column form, without
// tiles. Numerics: test/Integration/RecurToLoops/gla_tiles.mlir.

// CHECK-LABEL: func.func @tiles
// CHECK: %[[T:.*]] = tensor.dim %{{.*}}, %c1
// CHECK: arith.cmpi ugt, %[[T]], %c32
// CHECK: arith.cmpi ult, %{{.*}}, %c16384
// CHECK: scf.if
// CHECK: arith.ceildivui %[[T]], %c16
// CHECK: } {recur.block_threads}
// CHECK: } {recur.block_threads}
// CHECK-COUNT-6: vector.contract {{.*}} : vector<16x8xf32>, vector<8x16xf32> into vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x32xf32>
// CHECK: } {recur.block_threads}
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK: } {recur.parallel}
// CHECK: } {recur.block_threads}
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write
// CHECK: } {recur.block_threads}
// CHECK: vector.transfer_read {{.*}} : tensor<16x32xf32>, vector<16x16xf32>
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write
// CHECK: } {recur.block_threads}
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK: } else {
// CHECK-NOT: vector.contract
// CHECK: return
func.func @tiles(%q: tensor<2x?x16xf32>, %k: tensor<2x?x16xf32>,
                 %v: tensor<2x?x32xf32>, %a: tensor<2x?x16xf32>)
    -> (tensor<2x?x32xf32>, tensor<2x16x32xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>,
        tensor<2x?x16xf32>
  return %y, %s : tensor<2x?x32xf32>, tensor<2x16x32xf32>
}

// dk = 8 (not a multiple of 16), complex decays, f64: the column form.
// CHECK-LABEL: func.func @no_tiles
// CHECK-NOT: vector.contract
// CHECK: return
func.func @no_tiles(%q: tensor<2x?x8xf32>, %v: tensor<2x?x16xf32>,
                    %ac: tensor<2x?x16xcomplex<f32>>, %q2: tensor<2x?x16xf32>,
                    %v2: tensor<2x?x16xf32>, %q3: tensor<2x?x16xf64>,
                    %v3: tensor<2x?x16xf64>)
    -> (tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x16xf64>) {
  %y, %s = recur.gated_linear_attention %q, %q, %v, %q
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x16xf32>,
        tensor<2x?x8xf32>
  %y2, %s2 = recur.gated_linear_attention %q2, %q2, %v2, %ac
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x16xf32>,
        tensor<2x?x16xcomplex<f32>>
  %y3, %s3 = recur.gated_linear_attention %q3, %q3, %v3, %q3
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<2x?x16xf64>, tensor<2x?x16xf64>, tensor<2x?x16xf64>,
        tensor<2x?x16xf64>
  return %y, %y2, %y3 : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x16xf64>
}

// The grad of such a gla (gla-tiles' backward, in chunks of 16 wherever
// the column form's chunks would be taken): the forward's first block
// loop (K^T V) and the carries; another block loop of the same shape for
// what each chunk's outputs send back into its entering state ((q P)^T
// dy); the cotangents of the chunks' states a thread per column; a block
// loop for dv, S^T dy and then (k P) H a slice of 16 key rows at a time;
// and a block loop for dq, dk and da: M^T = v dy^T, R^T = E dy^T and W^T =
// H v^T by tiles (dv = 32: four steps of three products), then a thread
// per key row walking the chunk's 16 steps in a loop, writing dq, dk and
// da at each. Numerics: test/Integration/RecurToLoops/gla_grad_tiles.mlir.
// The grad takes its tiles whatever the column form's chunk (they are
// its own), here with none:
// NOCHUNK-LABEL: func.func @tiles_grad
// NOCHUNK-COUNT-6: vector.contract
// NOCHUNK: } {recur.gpu_block, recur.parallel}
// CHECK-LABEL: func.func @tiles_grad
// CHECK: arith.ceildivui %{{.*}}, %c16
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x32xf32>
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK: } {recur.parallel}
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x32xf32>
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK: } {recur.parallel}
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write
// CHECK: vector.transfer_read {{.*}} : tensor<16x32xf32>, vector<16x16xf32>
// CHECK-COUNT-6: vector.contract
// CHECK-NEXT: vector.transfer_write
// CHECK: } {recur.gpu_block, recur.parallel}
// CHECK-COUNT-12: vector.contract
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-12: vector.contract
// CHECK-NEXT: arith.addi
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-COUNT-12: vector.contract
// CHECK-NEXT: arith.addi
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK: } {recur.block_threads}
// CHECK: scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %{{.*}} iter_args(
// CHECK: tensor.insert {{.*}} : tensor<2x?x16xf32>
// CHECK: tensor.insert {{.*}} : tensor<2x?x16xf32>
// CHECK: tensor.insert {{.*}} : tensor<2x?x16xf32>
// CHECK: } {recur.block_threads}
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {recur.gpu_block, recur.parallel}
// CHECK-NOT: vector.contract
// CHECK: return
func.func @tiles_grad(%q: tensor<2x?x16xf32>, %k: tensor<2x?x16xf32>,
                      %v: tensor<2x?x32xf32>, %a: tensor<2x?x16xf32>,
                      %dy: tensor<2x?x32xf32>, %ds: tensor<2x16x32xf32>)
    -> (tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>,
        tensor<2x?x16xf32>, tensor<2x16x32xf32>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds chunk 64
      : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>,
        tensor<2x?x16xf32>, tensor<2x16x32xf32>
  return %dq, %dk, %dv, %da, %di
      : tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x32xf32>,
        tensor<2x?x16xf32>, tensor<2x16x32xf32>
}

// A grad whose dq, dk and da launch would not fit 48 KiB of shared memory
// (dk = 80, dv = 64: 51264 bytes) keeps the column form's chunks.
// CHECK-LABEL: func.func @no_tiles_grad
// CHECK-NOT: vector.contract
// CHECK: return
func.func @no_tiles_grad(%q: tensor<1x?x80xf32>, %v: tensor<1x?x64xf32>,
                         %ds: tensor<1x80x64xf32>)
    -> (tensor<1x?x80xf32>, tensor<1x?x64xf32>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %q, %v, %q, %v, %ds chunk 64
      : tensor<1x?x80xf32>, tensor<1x?x80xf32>, tensor<1x?x64xf32>,
        tensor<1x?x80xf32>, tensor<1x80x64xf32>
  return %dq, %dv : tensor<1x?x80xf32>, tensor<1x?x64xf32>
}
