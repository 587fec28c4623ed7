// gla-tiles (recurc's --cuda-gla-tiles): a gla of real f32 decays in
// chunks of 16 steps as a warp's matrix tiles (vector.contract of 16 x 8
// by 8 x 16 tiles of f32 values split into tf32 halves, three products a
// tile), on the CPU here (the tiles' loops one after another, the blocks'
// threads one after another). Each case runs the same gla twice: in f32,
// which takes the tile form, and in f64, which takes the column form a
// thread a column (checked against the float64 oracle by
// test/Integration/CPU). The inputs are small integers (q, k, v in -2..2,
// the initial state in -1..1) and the decays 1, -1 and 0 (a reset), so
// every product and sum of either form is exact: the f32 results must
// equal the f64 ones. Each case prints the largest difference (0) and the
// sum of the f64 results' magnitudes (so that a form that wrote nothing,
// or zeros, cannot pass). The cases cover 16 x 16 states over three
// leading indices, dk = 48 (key rows 32 to 47 in the threads' second
// round, the rest of it idle), dv = 48, and 64 x 64 (the largest block
// buffers); sequences of 2 chunks and a step, of whole chunks, and of
// chunks and a part; with and without an initial state.
//
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads gla-column-chunk=64 gla-tiles" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// Without the tile form, the f32 gla goes as the f64 one: the same
// results (and the same check lines).
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads gla-column-chunk=64" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

func.func private @printF64(f64)
func.func private @printNewline()


// Inputs of [3, T, 16] (q, k, a) and [3, T, 16] (v); x{}_l3_k16_v16 the
// integer pattern ((l m0 + t m1 + i m2) mod 5) - 2.
func.func @pattern_l3_k16_v16(%t: index, %d: index, %m0: index, %m1: index, %m2: index) -> tensor<3x?x?xf32> {
  %c5 = arith.constant 5 : index
  %c2 = arith.constant 2 : index
  %x = tensor.generate %t, %d {
  ^bb0(%l: index, %s: index, %i: index):
    %a0 = arith.muli %l, %m0 : index
    %a1 = arith.muli %s, %m1 : index
    %a2 = arith.muli %i, %m2 : index
    %b0 = arith.addi %a0, %a1 : index
    %b1 = arith.addi %b0, %a2 : index
    %r = arith.remui %b1, %c5 : index
    %r2 = arith.subi %r, %c2 : index
    %ri = arith.index_cast %r2 : index to i64
    %f = arith.sitofp %ri : i64 to f32
    tensor.yield %f : f32
  } : tensor<3x?x?xf32>
  return %x : tensor<3x?x?xf32>
}

// Decays: 0 where (3 l + 7 t + 5 i) mod 11 is 0 (a reset), -1 where it
// is 1 or 2, 1 otherwise.
func.func @decays_l3_k16_v16(%t: index) -> tensor<3x?x16xf32> {
  %c11 = arith.constant 11 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %minus = arith.constant -1.0 : f32
  %x = tensor.generate %t {
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
  } : tensor<3x?x16xf32>
  return %x : tensor<3x?x16xf32>
}

func.func @widen_l3_k16_v16_k(%x: tensor<3x?x16xf32>) -> tensor<3x?x16xf64> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<3x?x16xf32>
  %e = tensor.empty(%t) : tensor<3x?x16xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<3x?x16xf32>) outs(%e : tensor<3x?x16xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<3x?x16xf64>
  return %w : tensor<3x?x16xf64>
}

// The gla in f32 and in f64 over T steps (with the initial state when
// %withInit), printing max |y32 - y64| + max |S32 - S64|, then sum |y64| +
// sum |S64|.
func.func @run_l3_k16_v16(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cdk = arith.constant 16 : index
  %cdv = arith.constant 16 : index
  %q0 = call @pattern_l3_k16_v16(%t, %cdk, %c1, %c2, %c3) : (index, index, index, index, index) -> tensor<3x?x?xf32>
  %k0 = call @pattern_l3_k16_v16(%t, %cdk, %c2, %c3, %c7) : (index, index, index, index, index) -> tensor<3x?x?xf32>
  %v0 = call @pattern_l3_k16_v16(%t, %cdv, %c3, %c7, %c1) : (index, index, index, index, index) -> tensor<3x?x?xf32>
  %q = tensor.cast %q0 : tensor<3x?x?xf32> to tensor<3x?x16xf32>
  %k = tensor.cast %k0 : tensor<3x?x?xf32> to tensor<3x?x16xf32>
  %v = tensor.cast %v0 : tensor<3x?x?xf32> to tensor<3x?x16xf32>
  %a = call @decays_l3_k16_v16(%t) : (index) -> tensor<3x?x16xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %s0 = tensor.generate {
  ^bb0(%l: index, %i: index, %j: index):
    %b0 = arith.addi %l, %i : index
    %j2 = arith.muli %j, %c2 : index
    %b1 = arith.addi %b0, %j2 : index
    %r = arith.remui %b1, %c3 : index
    %ri = arith.index_cast %r : index to i64
    %f = arith.sitofp %ri : i64 to f32
    %g = arith.subf %f, %one : f32
    %h = arith.select %withInit, %g, %zero : f32
    tensor.yield %h : f32
  } : tensor<3x16x16xf32>
  %y, %last = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<3x16x16xf32>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<3x?x16xf32>, tensor<3x?x16xf32>, tensor<3x?x16xf32>, tensor<3x?x16xf32>
  %q64 = call @widen_l3_k16_v16_k(%q) : (tensor<3x?x16xf32>) -> tensor<3x?x16xf64>
  %k64 = call @widen_l3_k16_v16_k(%k) : (tensor<3x?x16xf32>) -> tensor<3x?x16xf64>
  %v64 = call @widen_l3_k16_v16_k(%v) : (tensor<3x?x16xf32>) -> tensor<3x?x16xf64>
  %a64 = call @widen_l3_k16_v16_k(%a) : (tensor<3x?x16xf32>) -> tensor<3x?x16xf64>
  %e = tensor.empty() : tensor<3x16x16xf64>
  %s064 = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s0 : tensor<3x16x16xf32>) outs(%e : tensor<3x16x16xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<3x16x16xf64>
  %y64, %last64 = recur.gated_linear_attention %q64, %k64, %v64, %a64 init(%s064 : tensor<3x16x16xf64>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<3x?x16xf64>, tensor<3x?x16xf64>, tensor<3x?x16xf64>, tensor<3x?x16xf64>
  %cL = arith.constant 3 : index
  %fz = arith.constant 0.0 : f64
  %yd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %fz, %s0a = %fz) -> (f64, f64) {
    %r1:2 = scf.for %s = %c0 to %t step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %y[%l, %s, %j] : tensor<3x?x16xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %y64[%l, %s, %j] : tensor<3x?x16xf64>
        %d = arith.subf %x, %ref : f64
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
  %sd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %yd#0, %s0a = %yd#1) -> (f64, f64) {
    %r1:2 = scf.for %i = %c0 to %cdk step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %last[%l, %i, %j] : tensor<3x16x16xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %last64[%l, %i, %j] : tensor<3x16x16xf64>
        %d = arith.subf %x, %ref : f64
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
  call @printF64(%sd#0) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sd#1) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}


// Inputs of [2, T, 48] (q, k, a) and [2, T, 32] (v); x{}_l2_k48_v32 the
// integer pattern ((l m0 + t m1 + i m2) mod 5) - 2.
func.func @pattern_l2_k48_v32(%t: index, %d: index, %m0: index, %m1: index, %m2: index) -> tensor<2x?x?xf32> {
  %c5 = arith.constant 5 : index
  %c2 = arith.constant 2 : index
  %x = tensor.generate %t, %d {
  ^bb0(%l: index, %s: index, %i: index):
    %a0 = arith.muli %l, %m0 : index
    %a1 = arith.muli %s, %m1 : index
    %a2 = arith.muli %i, %m2 : index
    %b0 = arith.addi %a0, %a1 : index
    %b1 = arith.addi %b0, %a2 : index
    %r = arith.remui %b1, %c5 : index
    %r2 = arith.subi %r, %c2 : index
    %ri = arith.index_cast %r2 : index to i64
    %f = arith.sitofp %ri : i64 to f32
    tensor.yield %f : f32
  } : tensor<2x?x?xf32>
  return %x : tensor<2x?x?xf32>
}

// Decays: 0 where (3 l + 7 t + 5 i) mod 11 is 0 (a reset), -1 where it
// is 1 or 2, 1 otherwise.
func.func @decays_l2_k48_v32(%t: index) -> tensor<2x?x48xf32> {
  %c11 = arith.constant 11 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %minus = arith.constant -1.0 : f32
  %x = tensor.generate %t {
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
  } : tensor<2x?x48xf32>
  return %x : tensor<2x?x48xf32>
}

func.func @widen_l2_k48_v32_k(%x: tensor<2x?x48xf32>) -> tensor<2x?x48xf64> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<2x?x48xf32>
  %e = tensor.empty(%t) : tensor<2x?x48xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x?x48xf32>) outs(%e : tensor<2x?x48xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<2x?x48xf64>
  return %w : tensor<2x?x48xf64>
}

func.func @widen_l2_k48_v32_v(%x: tensor<2x?x32xf32>) -> tensor<2x?x32xf64> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<2x?x32xf32>
  %e = tensor.empty(%t) : tensor<2x?x32xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x?x32xf32>) outs(%e : tensor<2x?x32xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<2x?x32xf64>
  return %w : tensor<2x?x32xf64>
}

// The gla in f32 and in f64 over T steps (with the initial state when
// %withInit), printing max |y32 - y64| + max |S32 - S64|, then sum |y64| +
// sum |S64|.
func.func @run_l2_k48_v32(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cdk = arith.constant 48 : index
  %cdv = arith.constant 32 : index
  %q0 = call @pattern_l2_k48_v32(%t, %cdk, %c1, %c2, %c3) : (index, index, index, index, index) -> tensor<2x?x?xf32>
  %k0 = call @pattern_l2_k48_v32(%t, %cdk, %c2, %c3, %c7) : (index, index, index, index, index) -> tensor<2x?x?xf32>
  %v0 = call @pattern_l2_k48_v32(%t, %cdv, %c3, %c7, %c1) : (index, index, index, index, index) -> tensor<2x?x?xf32>
  %q = tensor.cast %q0 : tensor<2x?x?xf32> to tensor<2x?x48xf32>
  %k = tensor.cast %k0 : tensor<2x?x?xf32> to tensor<2x?x48xf32>
  %v = tensor.cast %v0 : tensor<2x?x?xf32> to tensor<2x?x32xf32>
  %a = call @decays_l2_k48_v32(%t) : (index) -> tensor<2x?x48xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %s0 = tensor.generate {
  ^bb0(%l: index, %i: index, %j: index):
    %b0 = arith.addi %l, %i : index
    %j2 = arith.muli %j, %c2 : index
    %b1 = arith.addi %b0, %j2 : index
    %r = arith.remui %b1, %c3 : index
    %ri = arith.index_cast %r : index to i64
    %f = arith.sitofp %ri : i64 to f32
    %g = arith.subf %f, %one : f32
    %h = arith.select %withInit, %g, %zero : f32
    tensor.yield %h : f32
  } : tensor<2x48x32xf32>
  %y, %last = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<2x48x32xf32>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<2x?x48xf32>, tensor<2x?x48xf32>, tensor<2x?x32xf32>, tensor<2x?x48xf32>
  %q64 = call @widen_l2_k48_v32_k(%q) : (tensor<2x?x48xf32>) -> tensor<2x?x48xf64>
  %k64 = call @widen_l2_k48_v32_k(%k) : (tensor<2x?x48xf32>) -> tensor<2x?x48xf64>
  %v64 = call @widen_l2_k48_v32_v(%v) : (tensor<2x?x32xf32>) -> tensor<2x?x32xf64>
  %a64 = call @widen_l2_k48_v32_k(%a) : (tensor<2x?x48xf32>) -> tensor<2x?x48xf64>
  %e = tensor.empty() : tensor<2x48x32xf64>
  %s064 = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s0 : tensor<2x48x32xf32>) outs(%e : tensor<2x48x32xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<2x48x32xf64>
  %y64, %last64 = recur.gated_linear_attention %q64, %k64, %v64, %a64 init(%s064 : tensor<2x48x32xf64>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<2x?x48xf64>, tensor<2x?x48xf64>, tensor<2x?x32xf64>, tensor<2x?x48xf64>
  %cL = arith.constant 2 : index
  %fz = arith.constant 0.0 : f64
  %yd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %fz, %s0a = %fz) -> (f64, f64) {
    %r1:2 = scf.for %s = %c0 to %t step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %y[%l, %s, %j] : tensor<2x?x32xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %y64[%l, %s, %j] : tensor<2x?x32xf64>
        %d = arith.subf %x, %ref : f64
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
  %sd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %yd#0, %s0a = %yd#1) -> (f64, f64) {
    %r1:2 = scf.for %i = %c0 to %cdk step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %last[%l, %i, %j] : tensor<2x48x32xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %last64[%l, %i, %j] : tensor<2x48x32xf64>
        %d = arith.subf %x, %ref : f64
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
  call @printF64(%sd#0) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sd#1) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}


// Inputs of [1, T, 32] (q, k, a) and [1, T, 48] (v); x{}_l1_k32_v48 the
// integer pattern ((l m0 + t m1 + i m2) mod 5) - 2.
func.func @pattern_l1_k32_v48(%t: index, %d: index, %m0: index, %m1: index, %m2: index) -> tensor<1x?x?xf32> {
  %c5 = arith.constant 5 : index
  %c2 = arith.constant 2 : index
  %x = tensor.generate %t, %d {
  ^bb0(%l: index, %s: index, %i: index):
    %a0 = arith.muli %l, %m0 : index
    %a1 = arith.muli %s, %m1 : index
    %a2 = arith.muli %i, %m2 : index
    %b0 = arith.addi %a0, %a1 : index
    %b1 = arith.addi %b0, %a2 : index
    %r = arith.remui %b1, %c5 : index
    %r2 = arith.subi %r, %c2 : index
    %ri = arith.index_cast %r2 : index to i64
    %f = arith.sitofp %ri : i64 to f32
    tensor.yield %f : f32
  } : tensor<1x?x?xf32>
  return %x : tensor<1x?x?xf32>
}

// Decays: 0 where (3 l + 7 t + 5 i) mod 11 is 0 (a reset), -1 where it
// is 1 or 2, 1 otherwise.
func.func @decays_l1_k32_v48(%t: index) -> tensor<1x?x32xf32> {
  %c11 = arith.constant 11 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %minus = arith.constant -1.0 : f32
  %x = tensor.generate %t {
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
  } : tensor<1x?x32xf32>
  return %x : tensor<1x?x32xf32>
}

func.func @widen_l1_k32_v48_k(%x: tensor<1x?x32xf32>) -> tensor<1x?x32xf64> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<1x?x32xf32>
  %e = tensor.empty(%t) : tensor<1x?x32xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x?x32xf32>) outs(%e : tensor<1x?x32xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<1x?x32xf64>
  return %w : tensor<1x?x32xf64>
}

func.func @widen_l1_k32_v48_v(%x: tensor<1x?x48xf32>) -> tensor<1x?x48xf64> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<1x?x48xf32>
  %e = tensor.empty(%t) : tensor<1x?x48xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x?x48xf32>) outs(%e : tensor<1x?x48xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<1x?x48xf64>
  return %w : tensor<1x?x48xf64>
}

// The gla in f32 and in f64 over T steps (with the initial state when
// %withInit), printing max |y32 - y64| + max |S32 - S64|, then sum |y64| +
// sum |S64|.
func.func @run_l1_k32_v48(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cdk = arith.constant 32 : index
  %cdv = arith.constant 48 : index
  %q0 = call @pattern_l1_k32_v48(%t, %cdk, %c1, %c2, %c3) : (index, index, index, index, index) -> tensor<1x?x?xf32>
  %k0 = call @pattern_l1_k32_v48(%t, %cdk, %c2, %c3, %c7) : (index, index, index, index, index) -> tensor<1x?x?xf32>
  %v0 = call @pattern_l1_k32_v48(%t, %cdv, %c3, %c7, %c1) : (index, index, index, index, index) -> tensor<1x?x?xf32>
  %q = tensor.cast %q0 : tensor<1x?x?xf32> to tensor<1x?x32xf32>
  %k = tensor.cast %k0 : tensor<1x?x?xf32> to tensor<1x?x32xf32>
  %v = tensor.cast %v0 : tensor<1x?x?xf32> to tensor<1x?x48xf32>
  %a = call @decays_l1_k32_v48(%t) : (index) -> tensor<1x?x32xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %s0 = tensor.generate {
  ^bb0(%l: index, %i: index, %j: index):
    %b0 = arith.addi %l, %i : index
    %j2 = arith.muli %j, %c2 : index
    %b1 = arith.addi %b0, %j2 : index
    %r = arith.remui %b1, %c3 : index
    %ri = arith.index_cast %r : index to i64
    %f = arith.sitofp %ri : i64 to f32
    %g = arith.subf %f, %one : f32
    %h = arith.select %withInit, %g, %zero : f32
    tensor.yield %h : f32
  } : tensor<1x32x48xf32>
  %y, %last = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<1x32x48xf32>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x48xf32>, tensor<1x?x32xf32>
  %q64 = call @widen_l1_k32_v48_k(%q) : (tensor<1x?x32xf32>) -> tensor<1x?x32xf64>
  %k64 = call @widen_l1_k32_v48_k(%k) : (tensor<1x?x32xf32>) -> tensor<1x?x32xf64>
  %v64 = call @widen_l1_k32_v48_v(%v) : (tensor<1x?x48xf32>) -> tensor<1x?x48xf64>
  %a64 = call @widen_l1_k32_v48_k(%a) : (tensor<1x?x32xf32>) -> tensor<1x?x32xf64>
  %e = tensor.empty() : tensor<1x32x48xf64>
  %s064 = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s0 : tensor<1x32x48xf32>) outs(%e : tensor<1x32x48xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<1x32x48xf64>
  %y64, %last64 = recur.gated_linear_attention %q64, %k64, %v64, %a64 init(%s064 : tensor<1x32x48xf64>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<1x?x32xf64>, tensor<1x?x32xf64>, tensor<1x?x48xf64>, tensor<1x?x32xf64>
  %cL = arith.constant 1 : index
  %fz = arith.constant 0.0 : f64
  %yd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %fz, %s0a = %fz) -> (f64, f64) {
    %r1:2 = scf.for %s = %c0 to %t step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %y[%l, %s, %j] : tensor<1x?x48xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %y64[%l, %s, %j] : tensor<1x?x48xf64>
        %d = arith.subf %x, %ref : f64
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
  %sd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %yd#0, %s0a = %yd#1) -> (f64, f64) {
    %r1:2 = scf.for %i = %c0 to %cdk step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %last[%l, %i, %j] : tensor<1x32x48xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %last64[%l, %i, %j] : tensor<1x32x48xf64>
        %d = arith.subf %x, %ref : f64
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
  call @printF64(%sd#0) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sd#1) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}


// Inputs of [1, T, 64] (q, k, a) and [1, T, 64] (v); x{}_l1_k64_v64 the
// integer pattern ((l m0 + t m1 + i m2) mod 5) - 2.
func.func @pattern_l1_k64_v64(%t: index, %d: index, %m0: index, %m1: index, %m2: index) -> tensor<1x?x?xf32> {
  %c5 = arith.constant 5 : index
  %c2 = arith.constant 2 : index
  %x = tensor.generate %t, %d {
  ^bb0(%l: index, %s: index, %i: index):
    %a0 = arith.muli %l, %m0 : index
    %a1 = arith.muli %s, %m1 : index
    %a2 = arith.muli %i, %m2 : index
    %b0 = arith.addi %a0, %a1 : index
    %b1 = arith.addi %b0, %a2 : index
    %r = arith.remui %b1, %c5 : index
    %r2 = arith.subi %r, %c2 : index
    %ri = arith.index_cast %r2 : index to i64
    %f = arith.sitofp %ri : i64 to f32
    tensor.yield %f : f32
  } : tensor<1x?x?xf32>
  return %x : tensor<1x?x?xf32>
}

// Decays: 0 where (3 l + 7 t + 5 i) mod 11 is 0 (a reset), -1 where it
// is 1 or 2, 1 otherwise.
func.func @decays_l1_k64_v64(%t: index) -> tensor<1x?x64xf32> {
  %c11 = arith.constant 11 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %minus = arith.constant -1.0 : f32
  %x = tensor.generate %t {
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
  } : tensor<1x?x64xf32>
  return %x : tensor<1x?x64xf32>
}

func.func @widen_l1_k64_v64_k(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf64> {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<1x?x64xf32>
  %e = tensor.empty(%t) : tensor<1x?x64xf64>
  %w = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x?x64xf32>) outs(%e : tensor<1x?x64xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<1x?x64xf64>
  return %w : tensor<1x?x64xf64>
}

// The gla in f32 and in f64 over T steps (with the initial state when
// %withInit), printing max |y32 - y64| + max |S32 - S64|, then sum |y64| +
// sum |S64|.
func.func @run_l1_k64_v64(%t: index, %withInit: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %cdk = arith.constant 64 : index
  %cdv = arith.constant 64 : index
  %q0 = call @pattern_l1_k64_v64(%t, %cdk, %c1, %c2, %c3) : (index, index, index, index, index) -> tensor<1x?x?xf32>
  %k0 = call @pattern_l1_k64_v64(%t, %cdk, %c2, %c3, %c7) : (index, index, index, index, index) -> tensor<1x?x?xf32>
  %v0 = call @pattern_l1_k64_v64(%t, %cdv, %c3, %c7, %c1) : (index, index, index, index, index) -> tensor<1x?x?xf32>
  %q = tensor.cast %q0 : tensor<1x?x?xf32> to tensor<1x?x64xf32>
  %k = tensor.cast %k0 : tensor<1x?x?xf32> to tensor<1x?x64xf32>
  %v = tensor.cast %v0 : tensor<1x?x?xf32> to tensor<1x?x64xf32>
  %a = call @decays_l1_k64_v64(%t) : (index) -> tensor<1x?x64xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %s0 = tensor.generate {
  ^bb0(%l: index, %i: index, %j: index):
    %b0 = arith.addi %l, %i : index
    %j2 = arith.muli %j, %c2 : index
    %b1 = arith.addi %b0, %j2 : index
    %r = arith.remui %b1, %c3 : index
    %ri = arith.index_cast %r : index to i64
    %f = arith.sitofp %ri : i64 to f32
    %g = arith.subf %f, %one : f32
    %h = arith.select %withInit, %g, %zero : f32
    tensor.yield %h : f32
  } : tensor<1x64x64xf32>
  %y, %last = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<1x64x64xf32>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
  %q64 = call @widen_l1_k64_v64_k(%q) : (tensor<1x?x64xf32>) -> tensor<1x?x64xf64>
  %k64 = call @widen_l1_k64_v64_k(%k) : (tensor<1x?x64xf32>) -> tensor<1x?x64xf64>
  %v64 = call @widen_l1_k64_v64_k(%v) : (tensor<1x?x64xf32>) -> tensor<1x?x64xf64>
  %a64 = call @widen_l1_k64_v64_k(%a) : (tensor<1x?x64xf32>) -> tensor<1x?x64xf64>
  %e = tensor.empty() : tensor<1x64x64xf64>
  %s064 = linalg.generic {
      indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s0 : tensor<1x64x64xf32>) outs(%e : tensor<1x64x64xf64>) {
  ^bb0(%in: f32, %o: f64):
    %f = arith.extf %in : f32 to f64
    linalg.yield %f : f64
  } -> tensor<1x64x64xf64>
  %y64, %last64 = recur.gated_linear_attention %q64, %k64, %v64, %a64 init(%s064 : tensor<1x64x64xf64>)
      {algorithm = #recur.algorithm<recurrent>} : tensor<1x?x64xf64>, tensor<1x?x64xf64>, tensor<1x?x64xf64>, tensor<1x?x64xf64>
  %cL = arith.constant 1 : index
  %fz = arith.constant 0.0 : f64
  %yd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %fz, %s0a = %fz) -> (f64, f64) {
    %r1:2 = scf.for %s = %c0 to %t step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %y[%l, %s, %j] : tensor<1x?x64xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %y64[%l, %s, %j] : tensor<1x?x64xf64>
        %d = arith.subf %x, %ref : f64
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
  %sd:2 = scf.for %l = %c0 to %cL step %c1 iter_args(%m0 = %yd#0, %s0a = %yd#1) -> (f64, f64) {
    %r1:2 = scf.for %i = %c0 to %cdk step %c1 iter_args(%m1 = %m0, %s1 = %s0a) -> (f64, f64) {
      %r2:2 = scf.for %j = %c0 to %cdv step %c1 iter_args(%m2 = %m1, %s2 = %s1) -> (f64, f64) {
        %x32 = tensor.extract %last[%l, %i, %j] : tensor<1x64x64xf32>
        %x = arith.extf %x32 : f32 to f64
        %ref = tensor.extract %last64[%l, %i, %j] : tensor<1x64x64xf64>
        %d = arith.subf %x, %ref : f64
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
  call @printF64(%sd#0) : (f64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%sd#1) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}

func.func @main() {
  %yes = arith.constant true
  %no = arith.constant false
  %t_l3_k16_v16_33_1 = arith.constant 33 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}32173{{$}}
  call @run_l3_k16_v16(%t_l3_k16_v16_33_1, %yes) : (index, i1) -> ()
  %t_l3_k16_v16_33_0 = arith.constant 33 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}31991{{$}}
  call @run_l3_k16_v16(%t_l3_k16_v16_33_0, %no) : (index, i1) -> ()
  %t_l3_k16_v16_48_1 = arith.constant 48 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}45753{{$}}
  call @run_l3_k16_v16(%t_l3_k16_v16_48_1, %yes) : (index, i1) -> ()
  %t_l3_k16_v16_67_1 = arith.constant 67 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}63300{{$}}
  call @run_l3_k16_v16(%t_l3_k16_v16_67_1, %yes) : (index, i1) -> ()
  %t_l2_k48_v32_37_1 = arith.constant 37 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}110962{{$}}
  call @run_l2_k48_v32(%t_l2_k48_v32_37_1, %yes) : (index, i1) -> ()
  %t_l2_k48_v32_37_0 = arith.constant 37 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}110591{{$}}
  call @run_l2_k48_v32(%t_l2_k48_v32_37_0, %no) : (index, i1) -> ()
  %t_l1_k32_v48_50_1 = arith.constant 50 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}104898{{$}}
  call @run_l1_k32_v48(%t_l1_k32_v48_50_1, %yes) : (index, i1) -> ()
  %t_l1_k32_v48_50_0 = arith.constant 50 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}104622{{$}}
  call @run_l1_k32_v48(%t_l1_k32_v48_50_0, %no) : (index, i1) -> ()
  %t_l1_k64_v64_35_1 = arith.constant 35 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}196126{{$}}
  call @run_l1_k64_v64(%t_l1_k64_v64_35_1, %yes) : (index, i1) -> ()
  %t_l1_k64_v64_35_0 = arith.constant 35 : index
  // CHECK: {{^}}0{{$}}
  // CHECK-NEXT: {{^}}195366{{$}}
  call @run_l1_k64_v64(%t_l1_k64_v64_35_0, %no) : (index, i1) -> ()
  return
}
