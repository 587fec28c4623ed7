// The block form of linear_scan (scan-blocks, recurc's --cuda-scan-blocks):
// tiles of n k steps of a channel (n threads of a block, k steps each: 8
// of complex<f32>), the tiles of a channel chained by a decoupled
// look-back through atomically written statuses. On the CPU the blocks'
// threads run one after another and, in this pipeline, the tiles in order,
// so each look-back finds the tile before it done (an inclusive prefix);
// with scan-blocks-aggregates-only the tiles publish aggregates alone (but
// for a channel's first), so each look-back composes every aggregate back
// to the channel's first tile, as a tile does on the GPU when the tiles
// before it are still running. Every state is checked against a loop
// written here (the oracle), on complex inputs whose every value is a
// Gaussian integer (a in {1, i, -1, -i, 0}, parts of b in -2..2), so the
// regrouping must give the loop's values exactly; complex states with
// real decays (a in {1, -1, 0}) too. Linear_scan_spread.mlir checks the
// same form in f64.
//
// Without blocks (the oracle against the spread form):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// Blocks of 1 thread (tiles of 8 steps: 129 a channel, the last of 7
// steps), 4 (tiles of 32), 3 (24: not a power of two) and 32 (256: 5
// tiles, the last of 7 steps), with and without inclusive prefixes:
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=1" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=1 scan-blocks-aggregates-only" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=4" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=3 scan-blocks-aggregates-only" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=32 scan-blocks-aggregates-only" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

func.func private @printMemrefI64(tensor<*xi64>)

// a_t for channel c: [1, i, -1, -i, 0, i, 1, -i, -1][(t + c) mod 9] for
// c = 0 (rotations and resets), [1, i, -1, -i, i, 1, -i][(t + c) mod 7]
// for c = 1 (no reset: every state depends on the init); b_t = (((2 t + c)
// mod 5) - 2) + (((t + 3 c) mod 3) - 1) i; r_t = [1, -1, 1, 0, -1][(t + c)
// mod 5] (real decays).
func.func @inputs() -> (tensor<1031x2xcomplex<f32>>,
                        tensor<1031x2xcomplex<f32>>, tensor<1031x2xf32>) {
  %re0 = arith.constant dense<[1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0, 0.0, -1.0]> : tensor<9xf32>
  %im0 = arith.constant dense<[0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, -1.0, 0.0]> : tensor<9xf32>
  %re1 = arith.constant dense<[1.0, 0.0, -1.0, 0.0, 0.0, 1.0, 0.0]> : tensor<7xf32>
  %im1 = arith.constant dense<[0.0, 1.0, 0.0, -1.0, 1.0, 0.0, -1.0]> : tensor<7xf32>
  %rp = arith.constant dense<[1.0, -1.0, 1.0, 0.0, -1.0]> : tensor<5xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %a = tensor.generate {
  ^bb0(%t: index, %c: index):
    %s = arith.addi %t, %c : index
    %i9 = arith.remui %s, %c9 : index
    %i7 = arith.remui %s, %c7 : index
    %r0 = tensor.extract %re0[%i9] : tensor<9xf32>
    %m0 = tensor.extract %im0[%i9] : tensor<9xf32>
    %r1 = tensor.extract %re1[%i7] : tensor<7xf32>
    %m1 = tensor.extract %im1[%i7] : tensor<7xf32>
    %first = arith.cmpi eq, %c, %c0 : index
    %r = arith.select %first, %r0, %r1 : f32
    %m = arith.select %first, %m0, %m1 : f32
    %z = complex.create %r, %m : complex<f32>
    tensor.yield %z : complex<f32>
  } : tensor<1031x2xcomplex<f32>>
  %b = tensor.generate {
  ^bb0(%t: index, %c: index):
    %t2 = arith.muli %t, %c2 : index
    %s = arith.addi %t2, %c : index
    %r = arith.remui %s, %c5 : index
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    %re = arith.subf %rf, %two : f32
    %c3c = arith.muli %c, %c3 : index
    %u = arith.addi %t, %c3c : index
    %v = arith.remui %u, %c3 : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    %im = arith.subf %vf, %one : f32
    %z = complex.create %re, %im : complex<f32>
    tensor.yield %z : complex<f32>
  } : tensor<1031x2xcomplex<f32>>
  %ar = tensor.generate {
  ^bb0(%t: index, %c: index):
    %s = arith.addi %t, %c : index
    %i = arith.remui %s, %c5 : index
    %v = tensor.extract %rp[%i] : tensor<5xf32>
    tensor.yield %v : f32
  } : tensor<1031x2xf32>
  return %a, %b, %ar : tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>, tensor<1031x2xf32>
}

// The oracle: h_t = a_t h_{t-1} + b_t from `init` along dimension 0, step
// by step (from the end with %reverse).
func.func @oracle(%a: tensor<1031x2xcomplex<f32>>,
                  %b: tensor<1031x2xcomplex<f32>>,
                  %init: tensor<2xcomplex<f32>>, %reverse: i1)
    -> tensor<1031x2xcomplex<f32>> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = arith.constant 1031 : index
  %last = arith.constant 1030 : index
  %empty = tensor.empty() : tensor<1031x2xcomplex<f32>>
  %out = scf.for %c = %c0 to %c2 step %c1 iter_args(%acc = %empty)
      -> tensor<1031x2xcomplex<f32>> {
    %h0 = tensor.extract %init[%c] : tensor<2xcomplex<f32>>
    %r:2 = scf.for %s = %c0 to %n step %c1 iter_args(%o = %acc, %h = %h0)
        -> (tensor<1031x2xcomplex<f32>>, complex<f32>) {
      %back = arith.subi %last, %s : index
      %t = arith.select %reverse, %back, %s : index
      %at = tensor.extract %a[%t, %c] : tensor<1031x2xcomplex<f32>>
      %bt = tensor.extract %b[%t, %c] : tensor<1031x2xcomplex<f32>>
      %m = complex.mul %at, %h : complex<f32>
      %hn = complex.add %m, %bt : complex<f32>
      %o2 = tensor.insert %hn into %o[%t, %c] : tensor<1031x2xcomplex<f32>>
      scf.yield %o2, %hn : tensor<1031x2xcomplex<f32>>, complex<f32>
    }
    scf.yield %r#0 : tensor<1031x2xcomplex<f32>>
  }
  return %out : tensor<1031x2xcomplex<f32>>
}

// Prints the number of states of `h` in columns [from, to) that differ
// from the oracle's, then the last states' parts if `last` matches the
// oracle's last state of each of those columns (1) or not (0).
func.func @report(%h: tensor<1031x2xcomplex<f32>>,
                  %want: tensor<1031x2xcomplex<f32>>, %from: index,
                  %to: index, %last: tensor<2xcomplex<f32>>,
                  %lastRow: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1031 : index
  %count = scf.for %t = %c0 to %n step %c1 iter_args(%k = %c0) -> index {
    %inner = scf.for %c = %from to %to step %c1 iter_args(%kc = %k) -> index {
      %x = tensor.extract %h[%t, %c] : tensor<1031x2xcomplex<f32>>
      %y = tensor.extract %want[%t, %c] : tensor<1031x2xcomplex<f32>>
      %ne = complex.neq %x, %y : complex<f32>
      %kn = arith.addi %kc, %c1 : index
      %k2 = arith.select %ne, %kn, %kc : index
      scf.yield %k2 : index
    }
    scf.yield %inner : index
  }
  %lastBad = scf.for %c = %from to %to step %c1 iter_args(%k = %c0) -> index {
    %x = tensor.extract %last[%c] : tensor<2xcomplex<f32>>
    %y = tensor.extract %want[%lastRow, %c] : tensor<1031x2xcomplex<f32>>
    %ne = complex.neq %x, %y : complex<f32>
    %kn = arith.addi %k, %c1 : index
    %k2 = arith.select %ne, %kn, %k : index
    scf.yield %k2 : index
  }
  %ki = arith.index_cast %count : index to i64
  %li = arith.index_cast %lastBad : index to i64
  %kt = tensor.from_elements %ki, %li : tensor<2xi64>
  %ku = tensor.cast %kt : tensor<2xi64> to tensor<*xi64>
  call @printMemrefI64(%ku) : (tensor<*xi64>) -> ()
  return
}

func.func @main() {
  %a, %b, %ar = call @inputs() : () -> (tensor<1031x2xcomplex<f32>>,
      tensor<1031x2xcomplex<f32>>, tensor<1031x2xf32>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c1030 = arith.constant 1030 : index
  %false = arith.constant false
  %true = arith.constant true
  %z = complex.constant [0.0 : f32, 0.0 : f32] : complex<f32>
  %i0 = complex.constant [3.0 : f32, -1.0 : f32] : complex<f32>
  %i1 = complex.constant [-2.0 : f32, 5.0 : f32] : complex<f32>
  %zeros = tensor.from_elements %z, %z : tensor<2xcomplex<f32>>
  %inits = tensor.from_elements %i0, %i1 : tensor<2xcomplex<f32>>

  // Two channels along dimension 0 from (3 - i, -2 + 5i).
  %w1 = call @oracle(%a, %b, %inits, %false)
      : (tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>,
         tensor<2xcomplex<f32>>, i1) -> tensor<1031x2xcomplex<f32>>
  %h1, %l1 = recur.linear_scan %a, %b init(%inits : tensor<2xcomplex<f32>>)
      along 0 : tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>
  // CHECK: data =
  // CHECK-NEXT: [0,  0]
  call @report(%h1, %w1, %c0, %c2, %l1, %c1030)
      : (tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>, index,
         index, tensor<2xcomplex<f32>>, index) -> ()

  // The same in reverse from zero: the last state is h_0.
  %w2 = call @oracle(%a, %b, %zeros, %true)
      : (tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>,
         tensor<2xcomplex<f32>>, i1) -> tensor<1031x2xcomplex<f32>>
  %h2, %l2 = recur.linear_scan %a, %b along 0 reverse
      : tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>
  // CHECK: data =
  // CHECK-NEXT: [0,  0]
  call @report(%h2, %w2, %c0, %c2, %l2, %c0)
      : (tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>, index,
         index, tensor<2xcomplex<f32>>, index) -> ()

  // Real decays of complex states (each decay promoted to a complex one).
  %ac = tensor.generate {
  ^bb0(%t: index, %c: index):
    %r = tensor.extract %ar[%t, %c] : tensor<1031x2xf32>
    %zero = arith.constant 0.0 : f32
    %v = complex.create %r, %zero : complex<f32>
    tensor.yield %v : complex<f32>
  } : tensor<1031x2xcomplex<f32>>
  %w3 = call @oracle(%ac, %b, %inits, %false)
      : (tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>,
         tensor<2xcomplex<f32>>, i1) -> tensor<1031x2xcomplex<f32>>
  %h3, %l3 = recur.linear_scan %ar, %b init(%inits : tensor<2xcomplex<f32>>)
      along 0 : tensor<1031x2xf32>, tensor<1031x2xcomplex<f32>>
  // CHECK: data =
  // CHECK-NEXT: [0,  0]
  call @report(%h3, %w3, %c0, %c2, %l3, %c1030)
      : (tensor<1031x2xcomplex<f32>>, tensor<1031x2xcomplex<f32>>, index,
         index, tensor<2xcomplex<f32>>, index) -> ()
  return
}
