// The spread form of linear_scan (scan-spread, the CUDA pipeline's for few
// channels): chunks of time, their carries a linear_scan of their own,
// spread again, the deepest one a channel at a time. Every state is checked
// against a loop written here (the oracle), on inputs whose every value is
// an integer (a in {1, -1, 0}, b in -2..2), so the chunked regrouping must
// give the loop's values exactly.
//
// Without spreading (the oracle against the plain lowering):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// One channel spread (8 threads: chunks of ceil(4099 / 8) = 513 steps, 8
// of them; their carries in 2 chunks of 4, then 2 steps one at a time);
// three channels are more than 8 / 8 and go a channel at a time:
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8 scan-spread-chunk=4" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// Everything spread, with chunks of the fewest steps (4: 1025 chunks, their
// carries 257 chunks, those 257 steps one at a time), and with 3 steps an
// iteration of each sweep, loads first (scan-unroll-bytes=24 of f64: whole
// iterations and a step left over in each chunk of 4):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-unroll-bytes=24" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// Chunks of one step, and of 7 (4099 = 585 * 7 + 4: the last chunk
// shorter):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=1" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=7" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// By warps (scan-warps' form, emulated: a warp's 32 lanes side by side in
// each iteration, the same arithmetic as the GPU's lanes exchanging values
// by shuffles). Chunks of max(chunk, ceil(32 T c / N)) steps rounded up to
// the rounds a lane loads ahead (1 below scan-unroll-bytes=128 of f64):
// for one channel, with N = 8 one chunk of 4099 steps (128 whole rounds
// of 32 and 3 steps); with N = 8192 chunks of 32 (129 of them, the last
// of 3 steps), their carries in 5 chunks of 32, then one at a time; with 4
// rounds ahead (scan-unroll-bytes=256) chunks of 128 (33, the last of 3
// steps) and chunks of at least 300 steps as 384 (11, the last of 259
// steps); with 8 rounds ahead chunks of 256 (17, the last of 3 steps):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8 scan-spread-chunk=4 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=1 scan-unroll-bytes=256 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=300 scan-unroll-bytes=256 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=7 scan-unroll-bytes=512 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// By blocks (scan-blocks' form, one pass with a decoupled look-back; 8
// steps a thread of f64): blocks of 4 threads (tiles of 32 steps: 129 a
// channel, the last of 3 steps), of 5 publishing aggregates only (tiles of
// 40: each look-back composes every tile's aggregate back to the
// channel's first), and of 128 (tiles of 1024: 5, the last of 3 steps):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=4" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=5 scan-blocks-aggregates-only" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8192 scan-spread-chunk=4 scan-blocks=128" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

func.func private @printMemrefF64(tensor<*xf64>)
func.func private @printMemrefI64(tensor<*xi64>)

// For channel c, b_t = ((2 t + c) mod 5) - 2 and a_t =
// [1, 1, -1, 1, 0, 1, -1, 1, 1, -1, 1][(t + c) mod 11] for c < 2 (sign
// flips, runs of 1 and resets, a = 0), -1 every third step and 1 otherwise
// for c = 2 (no reset: every state depends on the init).
func.func @inputs() -> (tensor<4099x3xf64>, tensor<4099x3xf64>) {
  %pattern = arith.constant
      dense<[1.0, 1.0, -1.0, 1.0, 0.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0]>
      : tensor<11xf64>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c11 = arith.constant 11 : index
  %a = tensor.generate {
  ^bb0(%t: index, %c: index):
    %s = arith.addi %t, %c : index
    %i = arith.remui %s, %c11 : index
    %v = tensor.extract %pattern[%i] : tensor<11xf64>
    %m3 = arith.remui %t, %c3 : index
    %third = arith.cmpi eq, %m3, %c0 : index
    %plus = arith.constant 1.0 : f64
    %minus = arith.constant -1.0 : f64
    %flip = arith.select %third, %minus, %plus : f64
    %last = arith.cmpi eq, %c, %c2 : index
    %w = arith.select %last, %flip, %v : f64
    tensor.yield %w : f64
  } : tensor<4099x3xf64>
  %b = tensor.generate {
  ^bb0(%t: index, %c: index):
    %t2 = arith.muli %t, %c2 : index
    %s = arith.addi %t2, %c : index
    %r = arith.remui %s, %c5 : index
    %ri = arith.index_cast %r : index to i64
    %f = arith.sitofp %ri : i64 to f64
    %two = arith.constant 2.0 : f64
    %v = arith.subf %f, %two : f64
    tensor.yield %v : f64
  } : tensor<4099x3xf64>
  return %a, %b : tensor<4099x3xf64>, tensor<4099x3xf64>
}

// The oracle: h_t = a_t h_{t-1} + b_t from `init` along dimension 0, step
// by step (from the end with %reverse).
func.func @oracle(%a: tensor<4099x3xf64>, %b: tensor<4099x3xf64>,
                  %init: tensor<3xf64>, %reverse: i1) -> tensor<4099x3xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = arith.constant 4099 : index
  %last = arith.constant 4098 : index
  %empty = tensor.empty() : tensor<4099x3xf64>
  %out = scf.for %c = %c0 to %c3 step %c1 iter_args(%acc = %empty)
      -> tensor<4099x3xf64> {
    %h0 = tensor.extract %init[%c] : tensor<3xf64>
    %r:2 = scf.for %s = %c0 to %n step %c1 iter_args(%o = %acc, %h = %h0)
        -> (tensor<4099x3xf64>, f64) {
      %back = arith.subi %last, %s : index
      %t = arith.select %reverse, %back, %s : index
      %at = tensor.extract %a[%t, %c] : tensor<4099x3xf64>
      %bt = tensor.extract %b[%t, %c] : tensor<4099x3xf64>
      %m = arith.mulf %at, %h : f64
      %hn = arith.addf %m, %bt : f64
      %o2 = tensor.insert %hn into %o[%t, %c] : tensor<4099x3xf64>
      scf.yield %o2, %hn : tensor<4099x3xf64>, f64
    }
    scf.yield %r#0 : tensor<4099x3xf64>
  }
  return %out : tensor<4099x3xf64>
}

// The number of states of `h` in columns [from, to) that differ from the
// oracle's.
func.func @mismatches(%h: tensor<4099x3xf64>, %want: tensor<4099x3xf64>,
                      %from: index, %to: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 4099 : index
  %count = scf.for %t = %c0 to %n step %c1 iter_args(%k = %c0) -> index {
    %inner = scf.for %c = %from to %to step %c1 iter_args(%kc = %k) -> index {
      %x = tensor.extract %h[%t, %c] : tensor<4099x3xf64>
      %y = tensor.extract %want[%t, %c] : tensor<4099x3xf64>
      %ne = arith.cmpf une, %x, %y : f64
      %kn = arith.addi %kc, %c1 : index
      %k2 = arith.select %ne, %kn, %kc : index
      scf.yield %k2 : index
    }
    scf.yield %inner : index
  }
  return %count : index
}

func.func @report(%h: tensor<4099x3xf64>, %want: tensor<4099x3xf64>,
                  %from: index, %to: index, %last: tensor<*xf64>) {
  %k = call @mismatches(%h, %want, %from, %to)
      : (tensor<4099x3xf64>, tensor<4099x3xf64>, index, index) -> index
  %ki = arith.index_cast %k : index to i64
  %kt = tensor.from_elements %ki : tensor<1xi64>
  %ku = tensor.cast %kt : tensor<1xi64> to tensor<*xi64>
  call @printMemrefI64(%ku) : (tensor<*xi64>) -> ()
  call @printMemrefF64(%last) : (tensor<*xf64>) -> ()
  return
}

func.func @main() {
  %a, %b = call @inputs() : () -> (tensor<4099x3xf64>, tensor<4099x3xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %false = arith.constant false
  %true = arith.constant true
  %zeros = arith.constant dense<0.0> : tensor<3xf64>
  %inits = arith.constant dense<[3.0, -5.0, 7.0]> : tensor<3xf64>
  %w1 = call @oracle(%a, %b, %inits, %false)
      : (tensor<4099x3xf64>, tensor<4099x3xf64>, tensor<3xf64>, i1)
      -> tensor<4099x3xf64>
  %w2 = call @oracle(%a, %b, %zeros, %true)
      : (tensor<4099x3xf64>, tensor<4099x3xf64>, tensor<3xf64>, i1)
      -> tensor<4099x3xf64>

  // One channel (c = 0) forward from h_{-1} = 3: every state equals the
  // oracle's; the last one is the state after step 4098.
  %a1 = tensor.extract_slice %a[0, 0] [4099, 1] [1, 1]
      : tensor<4099x3xf64> to tensor<4099xf64>
  %b1 = tensor.extract_slice %b[0, 0] [4099, 1] [1, 1]
      : tensor<4099x3xf64> to tensor<4099xf64>
  %i1 = tensor.extract_slice %inits[0] [1] [1] : tensor<3xf64> to tensor<1xf64>
  %i1s = tensor.collapse_shape %i1 [] : tensor<1xf64> into tensor<f64>
  %h1, %l1 = recur.linear_scan %a1, %b1 init(%i1s : tensor<f64>) along 0
      : tensor<4099xf64>, tensor<4099xf64>
  %h1x = tensor.insert_slice %h1 into %w1[0, 0] [4099, 1] [1, 1]
      : tensor<4099xf64> into tensor<4099x3xf64>
  %l1u = tensor.cast %l1 : tensor<f64> to tensor<*xf64>
  // CHECK: data =
  // CHECK-NEXT: [0]
  // CHECK: data =
  // CHECK-NEXT: [-3]
  call @report(%h1x, %w1, %c0, %c1, %l1u)
      : (tensor<4099x3xf64>, tensor<4099x3xf64>, index, index, tensor<*xf64>)
      -> ()

  // Channel 2 in reverse from zero (no reset): the last state is h_0.
  %a2 = tensor.extract_slice %a[0, 2] [4099, 1] [1, 1]
      : tensor<4099x3xf64> to tensor<4099xf64>
  %b2 = tensor.extract_slice %b[0, 2] [4099, 1] [1, 1]
      : tensor<4099x3xf64> to tensor<4099xf64>
  %h2, %l2 = recur.linear_scan %a2, %b2 along 0 reverse
      : tensor<4099xf64>, tensor<4099xf64>
  %h2x = tensor.insert_slice %h2 into %w2[0, 2] [4099, 1] [1, 1]
      : tensor<4099xf64> into tensor<4099x3xf64>
  %l2u = tensor.cast %l2 : tensor<f64> to tensor<*xf64>
  // CHECK: data =
  // CHECK-NEXT: [0]
  // CHECK: data =
  // CHECK-NEXT: [4]
  call @report(%h2x, %w2, %c2, %c3, %l2u)
      : (tensor<4099x3xf64>, tensor<4099x3xf64>, index, index, tensor<*xf64>)
      -> ()

  // Three channels along dimension 0 from (3, -5, 7).
  %h3, %l3 = recur.linear_scan %a, %b init(%inits : tensor<3xf64>) along 0
      : tensor<4099x3xf64>, tensor<4099x3xf64>
  %l3u = tensor.cast %l3 : tensor<3xf64> to tensor<*xf64>
  // CHECK: data =
  // CHECK-NEXT: [0]
  // CHECK: data =
  // CHECK-NEXT: [-3,  -2,  -5]
  call @report(%h3, %w1, %c0, %c3, %l3u)
      : (tensor<4099x3xf64>, tensor<4099x3xf64>, index, index, tensor<*xf64>)
      -> ()
  return
}
