// gla-tiles' backward (recurc's --cuda-gla-tiles): the grad of a gla of
// real f32 decays in chunks of 16 steps, the chunks' products as a warp's
// matrix tiles (vector.contract of 16 x 8 by 8 x 16 tiles of f32 values
// split into tf32 halves, three products a tile) and dq, dk and da a
// thread a key row, on the CPU here (the tiles' loops one after another,
// the blocks' threads one after another). Each case runs the same grad
// twice: in f32, which takes the tile form, and in f64, which takes the
// chunks of the column form (checked against central differences by
// test/Integration/CPU and the GPU suite's grad_ cases). The inputs are
// small integers (q, k, v and dy in -2..2, the initial state and dstate
// in -1..1) and the decays 1, -1 and 0 (a reset), so every product and sum
// of either form is exact: the f32 gradients must equal the f64 ones. Each
// case prints the largest difference over dq, dk, dv, da and dinit (0),
// then the sum of the f64 gradients' magnitudes (so that a form that wrote
// nothing, or zeros, cannot pass). The cases cover 16 x 16 states over
// three leading indices, dk = 48 (key rows 32 to 47 in the threads' second
// round) with dv = 32, and 64 x 64 (the largest block buffers); sequences
// of one step, of a chunk, of chunks and a part, with and without an
// initial state.
//
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads gla-column-chunk=64 gla-tiles" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// Without the tile form, the f32 grad goes as the f64 one: the same
// results (and the same check lines).
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads gla-column-chunk=64" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

func.func private @printF64(f64)
func.func private @printNewline()

// [L, T, D] of ((l m0 + t m1 + i m2) mod (2 h + 1)) - h.
func.func @pattern(%nl: index, %t: index, %d: index, %m0: index, %m1: index, %m2: index, %h: index) -> tensor<?x?x?xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %h2 = arith.muli %h, %c2 : index
  %mod = arith.addi %h2, %c1 : index
  %x = tensor.generate %nl, %t, %d {
  ^bb0(%l: index, %s: index, %i: index):
    %a0 = arith.muli %l, %m0 : index
    %a1 = arith.muli %s, %m1 : index
    %a2 = arith.muli %i, %m2 : index
    %b0 = arith.addi %a0, %a1 : index
    %b1 = arith.addi %b0, %a2 : index
    %r = arith.remui %b1, %mod : index
    %ri = arith.index_cast %r : index to i64
    %hi = arith.index_cast %h : index to i64
    %r2 = arith.subi %ri, %hi : i64
    %f = arith.sitofp %r2 : i64 to f32
    tensor.yield %f : f32
  } : tensor<?x?x?xf32>
  return %x : tensor<?x?x?xf32>
}

// Decays: 0 where (3 l + 7 t + 5 i) mod 11 is 0 (a reset), -1 where it
// is 1 or 2, 1 otherwise.
func.func @decays(%nl: index, %t: index, %d: index) -> tensor<?x?x?xf32> {
  %c11 = arith.constant 11 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %minus = arith.constant -1.0 : f32
  %x = tensor.generate %nl, %t, %d {
  ^bb0(%l: index, %s: index, %i: index):
    %a0 = arith.muli %l, %c3 : index
    %a1 = arith.muli %s, %c7 : index
    %a2 = arith.muli %i, %c5 : index
    %b0 = arith.addi %a0, %a1 : index
    %b1 = arith.addi %b0, %a2 : index
    %r = arith.remui %b1, %c11 : index
    %isZero = arith.cmpi eq, %r, %c0 : index
    %isNeg = arith.cmpi ule, %r, %c2 : index
    %neg = arith.select %isNeg, %minus, %one : f32
    %f = arith.select %isZero, %zero, %neg : f32
    tensor.yield %f : f32
  } : tensor<?x?x?xf32>
  return %x : tensor<?x?x?xf32>
}

func.func @widen(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %d2 = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %e = tensor.empty(%d0, %d1, %d2) : tensor<?x?x?xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<?x?x?xf32>) outs(%e : tensor<?x?x?xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<?x?x?xf64>
  return %w : tensor<?x?x?xf64>
}

// (max(m, max |x - r|), s + sum |r|).
func.func @compare(%x: tensor<?x?x?xf32>, %r: tensor<?x?x?xf64>, %m: f64, %s: f64) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %d2 = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %res:2 = scf.for %a = %c0 to %d0 step %c1 iter_args(%m0 = %m, %s0 = %s) -> (f64, f64) {
    %r1:2 = scf.for %b = %c0 to %d1 step %c1 iter_args(%m1 = %m0, %s1 = %s0) -> (f64, f64) {
      %r2:2 = scf.for %c = %c0 to %d2 step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %x[%a, %b, %c] : tensor<?x?x?xf32>
        %xe = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %r[%a, %b, %c] : tensor<?x?x?xf64>
        %d = arith.subf %xe, %ref : f64
        %ad = math.absf %d : f64
        %m3 = arith.maximumf %m2, %ad : f64
        %ar = math.absf %ref : f64
        %s3 = arith.addf %s2, %ar : f64
        scf.yield %m3, %s3 : f64, f64
      }
      scf.yield %r2#0, %r2#1 : f64, f64
    }
    scf.yield %r1#0, %r1#1 : f64, f64
  }
  return %res#0, %res#1 : f64, f64
}


// The grad in f32 and in f64 over [3, T, 16] keys and [3, T, 16] values
// (with an initial state when %withInit), printing the largest difference,
// then the sum of the f64 gradients' magnitudes.
func.func @run_l3_k16_v16(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cl = arith.constant 3 : index
  %cdk = arith.constant 16 : index
  %cdv = arith.constant 16 : index
  %q0 = call @pattern(%cl, %t, %cdk, %c1, %c2, %c3, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %k0 = call @pattern(%cl, %t, %cdk, %c2, %c3, %c7, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %v0 = call @pattern(%cl, %t, %cdv, %c3, %c7, %c1, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %dy0 = call @pattern(%cl, %t, %cdv, %c5, %c3, %c2, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %a0 = call @decays(%cl, %t, %cdk) : (index, index, index) -> tensor<?x?x?xf32>
  %sp = call @pattern(%cl, %cdk, %cdv, %c1, %c1, %c2, %c1) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %dsp = call @pattern(%cl, %cdk, %cdv, %c2, %c1, %c3, %c1) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %zeros = tensor.generate %cl, %cdk, %cdv {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<?x?x?xf32>
  %s0d = arith.select %withInit, %sp, %zeros : tensor<?x?x?xf32>
  %q = tensor.cast %q0 : tensor<?x?x?xf32> to tensor<3x?x16xf32>
  %k = tensor.cast %k0 : tensor<?x?x?xf32> to tensor<3x?x16xf32>
  %v = tensor.cast %v0 : tensor<?x?x?xf32> to tensor<3x?x16xf32>
  %dy = tensor.cast %dy0 : tensor<?x?x?xf32> to tensor<3x?x16xf32>
  %a = tensor.cast %a0 : tensor<?x?x?xf32> to tensor<3x?x16xf32>
  %s0 = tensor.cast %s0d : tensor<?x?x?xf32> to tensor<3x16x16xf32>
  %ds = tensor.cast %dsp : tensor<?x?x?xf32> to tensor<3x16x16xf32>
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds init(%s0 : tensor<3x16x16xf32>) chunk 64 : tensor<3x?x16xf32>, tensor<3x?x16xf32>, tensor<3x?x16xf32>, tensor<3x?x16xf32>, tensor<3x16x16xf32>
  %q64d = call @widen(%q0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %k64d = call @widen(%k0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %v64d = call @widen(%v0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %dy64d = call @widen(%dy0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %a64d = call @widen(%a0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %s064d = call @widen(%s0d) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %ds64d = call @widen(%dsp) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %q64 = tensor.cast %q64d : tensor<?x?x?xf64> to tensor<3x?x16xf64>
  %k64 = tensor.cast %k64d : tensor<?x?x?xf64> to tensor<3x?x16xf64>
  %v64 = tensor.cast %v64d : tensor<?x?x?xf64> to tensor<3x?x16xf64>
  %dy64 = tensor.cast %dy64d : tensor<?x?x?xf64> to tensor<3x?x16xf64>
  %a64 = tensor.cast %a64d : tensor<?x?x?xf64> to tensor<3x?x16xf64>
  %s064 = tensor.cast %s064d : tensor<?x?x?xf64> to tensor<3x16x16xf64>
  %ds64 = tensor.cast %ds64d : tensor<?x?x?xf64> to tensor<3x16x16xf64>
  %rq, %rk, %rv, %ra, %ri = recur.gated_linear_attention_grad %q64, %k64, %v64, %a64, %dy64, %ds64 init(%s064 : tensor<3x16x16xf64>) chunk 64 : tensor<3x?x16xf64>, tensor<3x?x16xf64>, tensor<3x?x16xf64>, tensor<3x?x16xf64>, tensor<3x16x16xf64>
  %fz = arith.constant 0.0 : f64

  %x0 = tensor.cast %dq : tensor<3x?x16xf32> to tensor<?x?x?xf32>
  %r0 = tensor.cast %rq : tensor<3x?x16xf64> to tensor<?x?x?xf64>
  %mx0, %sx0 = call @compare(%x0, %r0, %fz, %fz) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x1 = tensor.cast %dk : tensor<3x?x16xf32> to tensor<?x?x?xf32>
  %r1 = tensor.cast %rk : tensor<3x?x16xf64> to tensor<?x?x?xf64>
  %mx1, %sx1 = call @compare(%x1, %r1, %mx0, %sx0) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x2 = tensor.cast %dv : tensor<3x?x16xf32> to tensor<?x?x?xf32>
  %r2 = tensor.cast %rv : tensor<3x?x16xf64> to tensor<?x?x?xf64>
  %mx2, %sx2 = call @compare(%x2, %r2, %mx1, %sx1) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x3 = tensor.cast %da : tensor<3x?x16xf32> to tensor<?x?x?xf32>
  %r3 = tensor.cast %ra : tensor<3x?x16xf64> to tensor<?x?x?xf64>
  %mx3, %sx3 = call @compare(%x3, %r3, %mx2, %sx2) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x4 = tensor.cast %di : tensor<3x16x16xf32> to tensor<?x?x?xf32>
  %r4 = tensor.cast %ri : tensor<3x16x16xf64> to tensor<?x?x?xf64>
  %mx4, %sx4 = call @compare(%x4, %r4, %mx3, %sx3) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  call @printF64(%mx4) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sx4) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}


// The grad in f32 and in f64 over [2, T, 48] keys and [2, T, 32] values
// (with an initial state when %withInit), printing the largest difference,
// then the sum of the f64 gradients' magnitudes.
func.func @run_l2_k48_v32(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cl = arith.constant 2 : index
  %cdk = arith.constant 48 : index
  %cdv = arith.constant 32 : index
  %q0 = call @pattern(%cl, %t, %cdk, %c1, %c2, %c3, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %k0 = call @pattern(%cl, %t, %cdk, %c2, %c3, %c7, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %v0 = call @pattern(%cl, %t, %cdv, %c3, %c7, %c1, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %dy0 = call @pattern(%cl, %t, %cdv, %c5, %c3, %c2, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %a0 = call @decays(%cl, %t, %cdk) : (index, index, index) -> tensor<?x?x?xf32>
  %sp = call @pattern(%cl, %cdk, %cdv, %c1, %c1, %c2, %c1) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %dsp = call @pattern(%cl, %cdk, %cdv, %c2, %c1, %c3, %c1) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %zeros = tensor.generate %cl, %cdk, %cdv {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<?x?x?xf32>
  %s0d = arith.select %withInit, %sp, %zeros : tensor<?x?x?xf32>
  %q = tensor.cast %q0 : tensor<?x?x?xf32> to tensor<2x?x48xf32>
  %k = tensor.cast %k0 : tensor<?x?x?xf32> to tensor<2x?x48xf32>
  %v = tensor.cast %v0 : tensor<?x?x?xf32> to tensor<2x?x32xf32>
  %dy = tensor.cast %dy0 : tensor<?x?x?xf32> to tensor<2x?x32xf32>
  %a = tensor.cast %a0 : tensor<?x?x?xf32> to tensor<2x?x48xf32>
  %s0 = tensor.cast %s0d : tensor<?x?x?xf32> to tensor<2x48x32xf32>
  %ds = tensor.cast %dsp : tensor<?x?x?xf32> to tensor<2x48x32xf32>
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds init(%s0 : tensor<2x48x32xf32>) chunk 64 : tensor<2x?x48xf32>, tensor<2x?x48xf32>, tensor<2x?x32xf32>, tensor<2x?x48xf32>, tensor<2x48x32xf32>
  %q64d = call @widen(%q0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %k64d = call @widen(%k0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %v64d = call @widen(%v0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %dy64d = call @widen(%dy0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %a64d = call @widen(%a0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %s064d = call @widen(%s0d) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %ds64d = call @widen(%dsp) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %q64 = tensor.cast %q64d : tensor<?x?x?xf64> to tensor<2x?x48xf64>
  %k64 = tensor.cast %k64d : tensor<?x?x?xf64> to tensor<2x?x48xf64>
  %v64 = tensor.cast %v64d : tensor<?x?x?xf64> to tensor<2x?x32xf64>
  %dy64 = tensor.cast %dy64d : tensor<?x?x?xf64> to tensor<2x?x32xf64>
  %a64 = tensor.cast %a64d : tensor<?x?x?xf64> to tensor<2x?x48xf64>
  %s064 = tensor.cast %s064d : tensor<?x?x?xf64> to tensor<2x48x32xf64>
  %ds64 = tensor.cast %ds64d : tensor<?x?x?xf64> to tensor<2x48x32xf64>
  %rq, %rk, %rv, %ra, %ri = recur.gated_linear_attention_grad %q64, %k64, %v64, %a64, %dy64, %ds64 init(%s064 : tensor<2x48x32xf64>) chunk 64 : tensor<2x?x48xf64>, tensor<2x?x48xf64>, tensor<2x?x32xf64>, tensor<2x?x48xf64>, tensor<2x48x32xf64>
  %fz = arith.constant 0.0 : f64

  %x0 = tensor.cast %dq : tensor<2x?x48xf32> to tensor<?x?x?xf32>
  %r0 = tensor.cast %rq : tensor<2x?x48xf64> to tensor<?x?x?xf64>
  %mx0, %sx0 = call @compare(%x0, %r0, %fz, %fz) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x1 = tensor.cast %dk : tensor<2x?x48xf32> to tensor<?x?x?xf32>
  %r1 = tensor.cast %rk : tensor<2x?x48xf64> to tensor<?x?x?xf64>
  %mx1, %sx1 = call @compare(%x1, %r1, %mx0, %sx0) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x2 = tensor.cast %dv : tensor<2x?x32xf32> to tensor<?x?x?xf32>
  %r2 = tensor.cast %rv : tensor<2x?x32xf64> to tensor<?x?x?xf64>
  %mx2, %sx2 = call @compare(%x2, %r2, %mx1, %sx1) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x3 = tensor.cast %da : tensor<2x?x48xf32> to tensor<?x?x?xf32>
  %r3 = tensor.cast %ra : tensor<2x?x48xf64> to tensor<?x?x?xf64>
  %mx3, %sx3 = call @compare(%x3, %r3, %mx2, %sx2) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x4 = tensor.cast %di : tensor<2x48x32xf32> to tensor<?x?x?xf32>
  %r4 = tensor.cast %ri : tensor<2x48x32xf64> to tensor<?x?x?xf64>
  %mx4, %sx4 = call @compare(%x4, %r4, %mx3, %sx3) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  call @printF64(%mx4) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sx4) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}


// The grad in f32 and in f64 over [1, T, 64] keys and [1, T, 64] values
// (with an initial state when %withInit), printing the largest difference,
// then the sum of the f64 gradients' magnitudes.
func.func @run_l1_k64_v64(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cl = arith.constant 1 : index
  %cdk = arith.constant 64 : index
  %cdv = arith.constant 64 : index
  %q0 = call @pattern(%cl, %t, %cdk, %c1, %c2, %c3, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %k0 = call @pattern(%cl, %t, %cdk, %c2, %c3, %c7, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %v0 = call @pattern(%cl, %t, %cdv, %c3, %c7, %c1, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %dy0 = call @pattern(%cl, %t, %cdv, %c5, %c3, %c2, %c2) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %a0 = call @decays(%cl, %t, %cdk) : (index, index, index) -> tensor<?x?x?xf32>
  %sp = call @pattern(%cl, %cdk, %cdv, %c1, %c1, %c2, %c1) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %dsp = call @pattern(%cl, %cdk, %cdv, %c2, %c1, %c3, %c1) : (index, index, index, index, index, index, index) -> tensor<?x?x?xf32>
  %zeros = tensor.generate %cl, %cdk, %cdv {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<?x?x?xf32>
  %s0d = arith.select %withInit, %sp, %zeros : tensor<?x?x?xf32>
  %q = tensor.cast %q0 : tensor<?x?x?xf32> to tensor<1x?x64xf32>
  %k = tensor.cast %k0 : tensor<?x?x?xf32> to tensor<1x?x64xf32>
  %v = tensor.cast %v0 : tensor<?x?x?xf32> to tensor<1x?x64xf32>
  %dy = tensor.cast %dy0 : tensor<?x?x?xf32> to tensor<1x?x64xf32>
  %a = tensor.cast %a0 : tensor<?x?x?xf32> to tensor<1x?x64xf32>
  %s0 = tensor.cast %s0d : tensor<?x?x?xf32> to tensor<1x64x64xf32>
  %ds = tensor.cast %dsp : tensor<?x?x?xf32> to tensor<1x64x64xf32>
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds init(%s0 : tensor<1x64x64xf32>) chunk 64 : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x64x64xf32>
  %q64d = call @widen(%q0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %k64d = call @widen(%k0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %v64d = call @widen(%v0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %dy64d = call @widen(%dy0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %a64d = call @widen(%a0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %s064d = call @widen(%s0d) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %ds64d = call @widen(%dsp) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf64>
  %q64 = tensor.cast %q64d : tensor<?x?x?xf64> to tensor<1x?x64xf64>
  %k64 = tensor.cast %k64d : tensor<?x?x?xf64> to tensor<1x?x64xf64>
  %v64 = tensor.cast %v64d : tensor<?x?x?xf64> to tensor<1x?x64xf64>
  %dy64 = tensor.cast %dy64d : tensor<?x?x?xf64> to tensor<1x?x64xf64>
  %a64 = tensor.cast %a64d : tensor<?x?x?xf64> to tensor<1x?x64xf64>
  %s064 = tensor.cast %s064d : tensor<?x?x?xf64> to tensor<1x64x64xf64>
  %ds64 = tensor.cast %ds64d : tensor<?x?x?xf64> to tensor<1x64x64xf64>
  %rq, %rk, %rv, %ra, %ri = recur.gated_linear_attention_grad %q64, %k64, %v64, %a64, %dy64, %ds64 init(%s064 : tensor<1x64x64xf64>) chunk 64 : tensor<1x?x64xf64>, tensor<1x?x64xf64>, tensor<1x?x64xf64>, tensor<1x?x64xf64>, tensor<1x64x64xf64>
  %fz = arith.constant 0.0 : f64

  %x0 = tensor.cast %dq : tensor<1x?x64xf32> to tensor<?x?x?xf32>
  %r0 = tensor.cast %rq : tensor<1x?x64xf64> to tensor<?x?x?xf64>
  %mx0, %sx0 = call @compare(%x0, %r0, %fz, %fz) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x1 = tensor.cast %dk : tensor<1x?x64xf32> to tensor<?x?x?xf32>
  %r1 = tensor.cast %rk : tensor<1x?x64xf64> to tensor<?x?x?xf64>
  %mx1, %sx1 = call @compare(%x1, %r1, %mx0, %sx0) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x2 = tensor.cast %dv : tensor<1x?x64xf32> to tensor<?x?x?xf32>
  %r2 = tensor.cast %rv : tensor<1x?x64xf64> to tensor<?x?x?xf64>
  %mx2, %sx2 = call @compare(%x2, %r2, %mx1, %sx1) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x3 = tensor.cast %da : tensor<1x?x64xf32> to tensor<?x?x?xf32>
  %r3 = tensor.cast %ra : tensor<1x?x64xf64> to tensor<?x?x?xf64>
  %mx3, %sx3 = call @compare(%x3, %r3, %mx2, %sx2) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  %x4 = tensor.cast %di : tensor<1x64x64xf32> to tensor<?x?x?xf32>
  %r4 = tensor.cast %ri : tensor<1x64x64xf64> to tensor<?x?x?xf64>
  %mx4, %sx4 = call @compare(%x4, %r4, %mx3, %sx3) : (tensor<?x?x?xf32>, tensor<?x?x?xf64>, f64, f64) -> (f64, f64)

  call @printF64(%mx4) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sx4) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}


func.func @main() {
  %true = arith.constant true
  %false = arith.constant false
  %t1 = arith.constant 1 : index
  %t16 = arith.constant 16 : index
  %t31 = arith.constant 31 : index
  %t33 = arith.constant 33 : index
  %t47 = arith.constant 47 : index
  %t50 = arith.constant 50 : index
  %t64 = arith.constant 64 : index
  %t67 = arith.constant 67 : index
  call @run_l3_k16_v16(%t1, %true) : (index, i1) -> ()
  call @run_l3_k16_v16(%t16, %false) : (index, i1) -> ()
  call @run_l3_k16_v16(%t33, %true) : (index, i1) -> ()
  call @run_l3_k16_v16(%t67, %false) : (index, i1) -> ()
  call @run_l2_k48_v32(%t31, %true) : (index, i1) -> ()
  call @run_l2_k48_v32(%t50, %false) : (index, i1) -> ()
  call @run_l1_k64_v64(%t47, %true) : (index, i1) -> ()
  call @run_l1_k64_v64(%t64, %false) : (index, i1) -> ()
  return
}
// Each case: the largest difference (0), then the sum of the f64
// gradients' magnitudes.
// CHECK: {{^}}0{{$}}
// CHECK-NEXT: {{^}}3079{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}133981{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}307666{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}651321{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}1.09822e+06{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}1.82539e+06{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}2.34602e+06{{$}}
// CHECK-NEXT: {{^}}0{{$}}
// CHECK-NEXT: {{^}}3.25931e+06{{$}}
